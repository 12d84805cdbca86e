"""PageHeader bytes written field by field are byte-identical to the generic Thrift codec's."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwrite.errors import FormatError
from streamwrite.format import structs as t
from streamwrite.format.enums import Encoding, PageType
from streamwrite.format.thrift.codec import deserialize, serialize
from workers.page import (
    data_page_v1_header_bytes,
    data_page_v2_header_bytes,
    dictionary_page_header_bytes,
)

i32 = st.integers(-(2**31), 2**31 - 1) | st.sampled_from([0, 1, 63, 64, 127, 128, 2**31 - 1])
sizes = st.integers(0, 2**31 - 1) | st.sampled_from([0, 1, 63, 64, 8191, 8192])
crcs = st.none() | i32
encodings = st.sampled_from(list(Encoding))


@settings(max_examples=300, deadline=None)
@given(sizes, sizes, crcs, sizes, encodings)
def test_data_page_v1_header_matches_serialize(
    uncompressed: int, compressed: int, crc: int | None, num_values: int, encoding: Encoding
) -> None:
    header = t.PageHeader(
        type=PageType.DATA_PAGE,
        uncompressed_page_size=uncompressed,
        compressed_page_size=compressed,
        crc=crc,
        data_page_header=t.DataPageHeader(
            num_values=num_values,
            encoding=encoding,
            definition_level_encoding=Encoding.RLE,
            repetition_level_encoding=Encoding.RLE,
        ),
    )
    got = data_page_v1_header_bytes(uncompressed, compressed, crc, num_values, encoding)
    assert got == serialize(header)
    assert deserialize(t.PageHeader, got) == (header, len(got))


@settings(max_examples=300, deadline=None)
@given(sizes, sizes, crcs, sizes, sizes, sizes, encodings, sizes, sizes, st.none() | st.booleans())
def test_data_page_v2_header_matches_serialize(
    uncompressed: int,
    compressed: int,
    crc: int | None,
    num_values: int,
    num_nulls: int,
    num_rows: int,
    encoding: Encoding,
    def_size: int,
    rep_size: int,
    is_compressed: bool | None,
) -> None:
    section = t.DataPageHeaderV2(
        num_values=num_values,
        num_nulls=num_nulls,
        num_rows=num_rows,
        encoding=encoding,
        definition_levels_byte_length=def_size,
        repetition_levels_byte_length=rep_size,
        is_compressed=is_compressed,
    )
    header = t.PageHeader(
        type=PageType.DATA_PAGE_V2,
        uncompressed_page_size=uncompressed,
        compressed_page_size=compressed,
        crc=crc,
        data_page_header_v2=section,
    )
    got = data_page_v2_header_bytes(uncompressed, compressed, crc, section)
    assert got == serialize(header)


@settings(max_examples=300, deadline=None)
@given(sizes, sizes, crcs, sizes)
def test_dictionary_page_header_matches_serialize(
    uncompressed: int, compressed: int, crc: int | None, num_values: int
) -> None:
    header = t.PageHeader(
        type=PageType.DICTIONARY_PAGE,
        uncompressed_page_size=uncompressed,
        compressed_page_size=compressed,
        crc=crc,
        dictionary_page_header=t.DictionaryPageHeader(
            num_values=num_values, encoding=Encoding.PLAIN, is_sorted=False
        ),
    )
    got = dictionary_page_header_bytes(uncompressed, compressed, crc, num_values)
    assert got == serialize(header)


def test_v2_statistics_and_values_beyond_i32_take_the_generic_codec() -> None:
    stats = t.Statistics(null_count=1, min_value=b"a", max_value=b"z")
    section = t.DataPageHeaderV2(
        num_values=3,
        num_nulls=1,
        num_rows=3,
        encoding=Encoding.PLAIN,
        definition_levels_byte_length=2,
        repetition_levels_byte_length=0,
        is_compressed=True,
        statistics=stats,
    )
    header = t.PageHeader(
        type=PageType.DATA_PAGE_V2,
        uncompressed_page_size=10,
        compressed_page_size=8,
        crc=-7,
        data_page_header_v2=section,
    )
    assert data_page_v2_header_bytes(10, 8, -7, section) == serialize(header)
    with pytest.raises(FormatError):
        data_page_v1_header_bytes(2**31, 1, None, 1, Encoding.PLAIN)
    with pytest.raises(FormatError):
        dictionary_page_header_bytes(1, 1, None, 2**31)
