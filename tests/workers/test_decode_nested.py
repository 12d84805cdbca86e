"""Decoding column chunks of nested leaves: repetition and definition levels, records.

Hypothesis builds random level arrays (any repetition and definition levels up to their
maxima, the first entry of the chunk starting a record), values for the entries at the maximum
definition level, cuts them into pages (at record starts, or anywhere for v1 pages as old
writers did), writes the pages with the page builders and the RLE hybrid encoder (plain or
dictionary values, compressed, encrypted) and checks that ``decode_chunk`` and
``decode_pages`` return exactly those levels, values and records. Then the spec's byte
examples and every way a page can contradict its column.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwrite.crypto.decryption import ChunkDecryptor
from streamwrite.errors import ConfigError, CorruptFileError, UnsupportedError
from streamwrite.format import structs as t
from streamwrite.format.aad import ModuleType
from streamwrite.format.enums import CompressionCodec, Encoding, PageType, Type
from streamwrite.format.thrift.codec import serialize
from workers.cipher import Algorithm, ModuleCipher
from workers.compression import compress
from workers.decode import DecodedChunk, decode_chunk
from workers.decode_levels import record_bounds, unpack_bit_packed_levels
from workers.decode_pages import PageSlice, decode_pages
from workers.encoding.dictionary import dictionary_encode, encode_dictionary_indices
from workers.encoding.plain import encode_plain
from workers.encoding.rle_hybrid import encode_levels_v1, encode_rle_hybrid
from workers.encodings import encode_values
from workers.page import BuiltPage, ChunkCrypto, build_data_page_v1, build_dictionary_page
from workers.values import BinaryValues

EXAMPLES = int(os.environ.get("STREAMWRITE_DECODE_NESTED_EXAMPLES", "150"))
LIMIT = 1 << 20
OFFSET = 1000  # where the chunk "starts" in its file (error offsets)
CODECS = (CompressionCodec.UNCOMPRESSED, CompressionCodec.SNAPPY, CompressionCodec.ZSTD)


# --- reference encoders (tests only) ----------------------------------------------------------


def bit_packed_reference(levels: list[int], width: int) -> bytes:
    """Deprecated BIT_PACKED, per value: bits MSB first, values MSB first."""
    bits = "".join(format(level, f"0{width}b") for level in levels) if width else ""
    bits += "0" * (-len(bits) % 8)
    return bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8))


@dataclass(frozen=True)
class Chunk:
    """A chunk's content: levels per entry and the values of the defined entries."""

    def_levels: npt.NDArray[np.uint8]
    rep_levels: npt.NDArray[np.uint8]
    values: npt.NDArray[np.int64] | list[bytes]
    max_def: int
    max_rep: int

    @property
    def defined(self) -> npt.NDArray[np.bool_]:
        return self.def_levels == self.max_def

    def physical(self, lo: int, hi: int) -> Any:
        """Values of entries ``[lo, hi)`` in the workers' in-memory form."""
        first = int(np.count_nonzero(self.defined[:lo]))
        last = first + int(np.count_nonzero(self.defined[lo:hi]))
        part = self.values[first:last]
        if isinstance(part, list):
            offsets = np.zeros(len(part) + 1, dtype=np.int64)
            offsets[1:] = np.cumsum([len(v) for v in part])
            data = np.frombuffer(b"".join(part), dtype=np.uint8)
            return BinaryValues(offsets, data)
        return part


@st.composite
def chunks(draw: st.DrawFn, max_rep_range: tuple[int, int] = (1, 4)) -> Chunk:
    max_rep = draw(st.integers(*max_rep_range))
    max_def = draw(st.integers(max_rep, max_rep + 3))
    num = draw(st.integers(1, 300))
    rep = np.array(draw(st.lists(st.integers(0, max_rep), min_size=num, max_size=num)), np.uint8)
    rep[0] = 0
    # skew toward defined entries so pages carry values
    defs = draw(st.lists(st.integers(0, max_def + 2), min_size=num, max_size=num))
    def_levels = np.minimum(np.array(defs, dtype=np.uint8), max_def)
    count = int(np.count_nonzero(def_levels == max_def))
    values: npt.NDArray[np.int64] | list[bytes]
    if draw(st.booleans()):
        values = np.array(draw(st.lists(st.integers(-5, 5), min_size=count, max_size=count)))
        values = values.astype(np.int64)
    else:
        words = st.binary(max_size=6)
        values = draw(st.lists(words, min_size=count, max_size=count))
    return Chunk(def_levels, rep, values, max_def, max_rep)


@st.composite
def cuts(draw: st.DrawFn, chunk: Chunk, at_records: bool) -> list[int]:
    """Page boundaries ``[0, ..., n]``: at record starts, or anywhere."""
    n = chunk.rep_levels.shape[0]
    if at_records:
        candidates = [int(i) for i in np.flatnonzero(chunk.rep_levels == 0) if i > 0]
    else:
        candidates = list(range(1, n))
    chosen = draw(st.lists(st.sampled_from(candidates), max_size=6)) if candidates else []
    return [0, *sorted(set(chosen)), n]


@dataclass(frozen=True)
class Layout:
    v2: bool
    codec: CompressionCodec
    dictionary: bool
    bit_packed: bool  # v1 only
    encrypted: bool
    v2_levels_plaintext: bool = False


def _v2_page(
    rep: bytes,
    defs: bytes,
    values: bytes,
    num_values: int,
    num_nulls: int,
    num_rows: int,
    encoding: Encoding,
    codec: CompressionCodec,
    crypto: ChunkCrypto | None,
    ordinal: int,
) -> bytes:
    """A DATA_PAGE_V2 with repetition levels (the layout of ``build_data_page_v2``)."""
    compressed = compress(codec, values, None) if codec != CompressionCodec.UNCOMPRESSED else values
    levels = rep + defs
    if crypto is None:
        body = levels + compressed
    elif crypto.v2_levels_plaintext:
        body = levels + crypto.encrypt(ModuleType.DATA_PAGE, compressed, ordinal)
    else:
        body = crypto.encrypt(ModuleType.DATA_PAGE, levels + compressed, ordinal)
    header = serialize(
        t.PageHeader(
            type=PageType.DATA_PAGE_V2,
            uncompressed_page_size=len(levels) + len(values),
            compressed_page_size=len(body),
            data_page_header_v2=t.DataPageHeaderV2(
                num_values=num_values,
                num_nulls=num_nulls,
                num_rows=num_rows,
                encoding=encoding,
                definition_levels_byte_length=len(defs),
                repetition_levels_byte_length=len(rep),
                is_compressed=codec != CompressionCodec.UNCOMPRESSED,
            ),
        )
    )
    if crypto is not None:
        header = crypto.encrypt(ModuleType.DATA_PAGE_HEADER, header, ordinal)
    return header + body


def _bit_packed_v1_page(
    rep: bytes, defs: bytes, values: bytes, num_values: int, encoding: Encoding
) -> bytes:
    raw = rep + defs + values
    header = serialize(
        t.PageHeader(
            type=PageType.DATA_PAGE,
            uncompressed_page_size=len(raw),
            compressed_page_size=len(raw),
            data_page_header=t.DataPageHeader(
                num_values=num_values,
                encoding=encoding,
                definition_level_encoding=Encoding.BIT_PACKED,
                repetition_level_encoding=Encoding.BIT_PACKED,
            ),
        )
    )
    return header + raw


@dataclass(frozen=True)
class Built:
    data: bytes
    meta: t.ColumnMetaData
    dictionary_size: int  # bytes of the dictionary page (0: none)
    pages: list[tuple[int, int, int, int]]  # (offset in data, size, first record, records)
    cipher: ChunkDecryptor | None


def build(chunk: Chunk, bounds: list[int], layout: Layout) -> Built:
    """The chunk's bytes: ``[dictionary page] data page*`` cut at ``bounds``."""
    physical = Type.INT64 if isinstance(chunk.values, np.ndarray) else Type.BYTE_ARRAY
    crypto = decryptor = None
    if layout.encrypted:
        cipher = ModuleCipher(bytes(range(16)), b"file-aad-for-decode", Algorithm.AES_GCM_V1)
        crypto = ChunkCrypto(cipher, 3, 5, v2_levels_plaintext=layout.v2_levels_plaintext)
        decryptor = ChunkDecryptor(cipher, 3, 5, "Column 'x' of row group 3")
    out = bytearray()
    dictionary = indices = None
    if layout.dictionary:
        dictionary, indices = dictionary_encode(chunk.physical(0, len(chunk.def_levels)), physical)
        page = build_dictionary_page(
            values=encode_plain(dictionary, physical),
            num_values=len(dictionary),
            codec=layout.codec,
            compression_level=None,
            write_crc=True,
            crypto=crypto,
        )
        out += page.data
    dictionary_size = len(out)
    rep_width, def_width = chunk.max_rep.bit_length(), chunk.max_def.bit_length()
    pages = []
    record = 0
    for ordinal, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        reps, defs = chunk.rep_levels[lo:hi], chunk.def_levels[lo:hi]
        first = int(np.count_nonzero(chunk.defined[:lo]))
        count = int(np.count_nonzero(chunk.defined[lo:hi]))
        if indices is not None and dictionary is not None:
            encoding = Encoding.RLE_DICTIONARY
            values = encode_dictionary_indices(indices[first : first + count], len(dictionary))
        else:
            encoding = Encoding.PLAIN
            values = encode_values(chunk.physical(lo, hi), physical, Encoding.PLAIN)
        records = int(np.count_nonzero(reps == 0))
        data: bytes
        if layout.v2:
            data = _v2_page(
                encode_rle_hybrid(reps, rep_width),
                encode_rle_hybrid(defs, def_width),
                values,
                hi - lo,
                hi - lo - count,
                records,
                encoding,
                layout.codec,
                crypto,
                ordinal,
            )
        elif layout.bit_packed:
            data = _bit_packed_v1_page(
                bit_packed_reference(reps.tolist(), rep_width),
                bit_packed_reference(defs.tolist(), def_width),
                values,
                hi - lo,
                encoding,
            )
        else:
            built: BuiltPage = build_data_page_v1(
                levels=encode_levels_v1(reps, rep_width) + encode_levels_v1(defs, def_width),
                values=values,
                num_values=hi - lo,
                encoding=encoding,
                codec=layout.codec,
                compression_level=None,
                write_crc=True,
                crypto=crypto,
                page_ordinal=ordinal,
            )
            data = built.data
        pages.append((len(out), len(data), record, records))
        record += records
        out += data
    meta = t.ColumnMetaData(
        type=physical,
        path_in_schema=["x", "list", "element"],
        codec=CompressionCodec.UNCOMPRESSED if layout.bit_packed else layout.codec,
        num_values=len(chunk.def_levels),
    )
    return Built(bytes(out), meta, dictionary_size, pages, decryptor)


def decode(built: Built, chunk: Chunk, **kwargs: Any) -> DecodedChunk:
    return decode_chunk(
        built.data,
        OFFSET,
        built.meta,
        type_length=None,
        max_definition_level=chunk.max_def,
        max_repetition_level=chunk.max_rep,
        verify_checksums=True,
        max_decompressed_page_size=LIMIT,
        cipher=built.cipher,
        dictionary_first=built.dictionary_size > 0,
        **kwargs,
    )


def as_list(values: Any) -> list[Any]:
    if isinstance(values, BinaryValues):
        return [bytes(values.data[a:b]) for a, b in itertools.pairwise(values.offsets)]
    return list(np.asarray(values).tolist())


def assert_decoded(decoded: DecodedChunk, chunk: Chunk, lo: int, hi: int) -> None:
    """``decoded`` holds exactly entries ``[lo, hi)`` of ``chunk``."""
    assert decoded.def_levels is not None and decoded.rep_levels is not None
    assert decoded.def_levels.dtype == np.uint8 and decoded.rep_levels.dtype == np.uint8
    assert decoded.def_levels.tolist() == chunk.def_levels[lo:hi].tolist()
    assert decoded.rep_levels.tolist() == chunk.rep_levels[lo:hi].tolist()
    assert as_list(decoded.values) == as_list(chunk.physical(lo, hi))
    assert decoded.num_rows == int(np.count_nonzero(chunk.rep_levels[lo:hi] == 0))
    assert decoded.num_levels == hi - lo


layouts = st.builds(
    Layout,
    v2=st.booleans(),
    codec=st.sampled_from(CODECS),
    dictionary=st.booleans(),
    bit_packed=st.booleans(),
    encrypted=st.booleans(),
    v2_levels_plaintext=st.booleans(),
).map(
    lambda layout: Layout(
        layout.v2,
        CompressionCodec.UNCOMPRESSED if layout.bit_packed and not layout.v2 else layout.codec,
        layout.dictionary,
        layout.bit_packed and not layout.v2,
        layout.encrypted and not (layout.bit_packed and not layout.v2),
        layout.v2_levels_plaintext and layout.v2,
    )
)


# --- round trips ------------------------------------------------------------------------------


@given(st.data(), chunks(), layouts)
@settings(max_examples=EXAMPLES, deadline=None)
def test_chunk_round_trips(data: st.DataObject, chunk: Chunk, layout: Layout) -> None:
    at_records = layout.v2 or data.draw(st.booleans())
    bounds = data.draw(cuts(chunk, at_records))
    built = build(chunk, bounds, layout)
    decoded = decode(built, chunk)
    n = len(chunk.def_levels)
    assert_decoded(decoded, chunk, 0, n)
    data_pages = [p for p in decoded.pages if p.page_type != PageType.DICTIONARY_PAGE]
    assert [p.num_values for p in data_pages] == [hi - lo for lo, hi in itertools.pairwise(bounds)]
    assert [p.num_rows for p in data_pages] == [records for *_, records in built.pages]
    assert [p.num_nulls for p in data_pages] == [
        int(np.count_nonzero(chunk.def_levels[lo:hi] != chunk.max_def))
        for lo, hi in itertools.pairwise(bounds)
    ]
    assert [p.offset - OFFSET for p in data_pages] == [offset for offset, *_ in built.pages]


@given(st.data(), chunks(), layouts)
@settings(max_examples=EXAMPLES, deadline=None)
def test_records_spanning_pages_are_counted_over_the_chunk(
    data: st.DataObject, chunk: Chunk, layout: Layout
) -> None:
    """Old writers cut records across pages (v1, and V2 before Arrow 12): the chunk still
    decodes to its levels, and its records are the entries with repetition level 0."""
    bounds = data.draw(cuts(chunk, False))
    decoded = decode(build(chunk, bounds, layout), chunk)
    assert_decoded(decoded, chunk, 0, len(chunk.def_levels))


@given(st.data(), chunks(), layouts)
@settings(max_examples=EXAMPLES, deadline=None)
def test_keep_dictionary_returns_indices(data: st.DataObject, chunk: Chunk, layout: Layout) -> None:
    layout = Layout(layout.v2, layout.codec, True, layout.bit_packed, layout.encrypted)
    bounds = data.draw(cuts(chunk, True))
    built = build(chunk, bounds, layout)
    decoded = decode(built, chunk, keep_dictionary=True)
    assert decoded.dictionary is not None
    physical = chunk.physical(0, len(chunk.def_levels))
    got = as_list(decoded.dictionary)
    assert [got[i] for i in decoded.values.tolist()] == as_list(physical)
    assert decoded.rep_levels is not None
    assert decoded.rep_levels.tolist() == chunk.rep_levels.tolist()


@given(st.data(), chunks(), layouts)
@settings(max_examples=EXAMPLES, deadline=None)
def test_selected_pages_hold_whole_records(
    data: st.DataObject, chunk: Chunk, layout: Layout
) -> None:
    """Page-index reads: each selected page starts a record; the pages decode to exactly their
    entries, and their rows are the records the OffsetIndex gives them."""
    bounds = data.draw(cuts(chunk, True))
    built = build(chunk, bounds, layout)
    num_pages = len(built.pages)
    chosen = sorted(set(data.draw(st.lists(st.integers(0, num_pages - 1), max_size=num_pages))))
    slices = [
        PageSlice(built.data[offset : offset + size], OFFSET + offset, k, records)
        for k, (offset, size, _, records) in enumerate(built.pages)
        if k in chosen
    ]
    decoded = decode_pages(
        built.data[: built.dictionary_size],
        OFFSET,
        slices,
        built.meta,
        type_length=None,
        max_definition_level=chunk.max_def,
        max_repetition_level=chunk.max_rep,
        verify_checksums=True,
        max_decompressed_page_size=LIMIT,
        where="Column 'x.list.element' of row group 3",
        cipher=built.cipher,
        dictionary_first=built.dictionary_size > 0,
    )
    entries = np.concatenate(
        [np.arange(bounds[k], bounds[k + 1]) for k in chosen] or [np.zeros(0, np.int64)]
    ).astype(np.int64)
    assert decoded.def_levels is not None and decoded.rep_levels is not None
    assert decoded.def_levels.tolist() == chunk.def_levels[entries].tolist()
    assert decoded.rep_levels.tolist() == chunk.rep_levels[entries].tolist()
    want: list[Any] = []
    for k in chosen:
        want += as_list(chunk.physical(bounds[k], bounds[k + 1]))
    assert as_list(decoded.values) == want
    assert decoded.num_rows == sum(built.pages[k][3] for k in chosen)


@given(st.data(), chunks(max_rep_range=(0, 3)))
@settings(max_examples=EXAMPLES, deadline=None)
def test_record_bounds_equal_the_reference(data: st.DataObject, chunk: Chunk) -> None:
    """``record_bounds`` against a per-entry walk: records ``[start, stop)`` are the entries
    from the start-th entry with repetition level 0 to the stop-th (or the end)."""
    n = len(chunk.def_levels)
    flat = chunk.max_rep == 0
    rep = None if flat else chunk.rep_levels
    num_records = n if flat else int(np.count_nonzero(chunk.rep_levels == 0))
    start = data.draw(st.integers(0, num_records))
    stop = data.draw(st.integers(start, num_records))
    record_of = []
    record = -1
    for i in range(n):
        record += 1 if flat or chunk.rep_levels[i] == 0 else 0
        record_of.append(record)
    entries = [i for i in range(n) if start <= record_of[i] < stop]
    level_start = n if start == num_records else record_of.index(start)
    got = record_bounds(rep, chunk.def_levels, chunk.max_def, n, start, stop)
    value_start = sum(1 for i in range(level_start) if chunk.def_levels[i] == chunk.max_def)
    values = sum(1 for i in entries if chunk.def_levels[i] == chunk.max_def)
    assert got == (level_start, level_start + len(entries), value_start, value_start + values)
    assert record_bounds(rep, None, chunk.max_def, n, start, stop)[2:] == got[:2]
    with pytest.raises(ConfigError, match="not within"):
        record_bounds(rep, chunk.def_levels, chunk.max_def, n, start, num_records + 1)


# --- the spec's bytes ---------------------------------------------------------------------------


def test_bit_packed_levels_follow_the_spec_example() -> None:
    """parquet-format Encodings.md, BIT_PACKED: 0..7 in 3 bits is 00000101 00111001 01110111."""
    data = bytes([0b00000101, 0b00111001, 0b01110111])
    assert bit_packed_reference(list(range(8)), 3) == data
    levels, used = unpack_bit_packed_levels(data, 3, 8)
    assert levels.tolist() == list(range(8)) and used == 3


@given(
    st.integers(1, 8).flatmap(lambda w: st.tuples(st.just(w), st.lists(st.integers(0, 2**w - 1))))
)
@settings(max_examples=EXAMPLES, deadline=None)
def test_bit_packed_levels_equal_the_reference(case: tuple[int, list[int]]) -> None:
    width, levels = case
    data = bit_packed_reference(levels, width) + b"\xff"  # what follows is not read
    got, used = unpack_bit_packed_levels(data, width, len(levels))
    assert got.tolist() == levels and used == len(data) - 1


def test_dremel_document_levels() -> None:
    """The Dremel paper's ``Name.Language.Code`` column (repeated Name, repeated Language,
    required Code: max rep 2, max def 2) of its documents r1 and r2: values en-us, en, NULL,
    en-gb, NULL with r = 0 2 1 1 0 and d = 2 2 1 2 1; as one v1 page and as two v2 pages."""
    rep = np.array([0, 2, 1, 1, 0], np.uint8)
    defs = np.array([2, 2, 1, 2, 1], np.uint8)
    values = [b"en-us", b"en", b"en-gb"]
    chunk = Chunk(defs, rep, values, 2, 2)
    for layout, bounds in (
        (Layout(False, CompressionCodec.UNCOMPRESSED, False, False, False), [0, 5]),
        (Layout(True, CompressionCodec.SNAPPY, True, False, False), [0, 4, 5]),
    ):
        decoded = decode(build(chunk, bounds, layout), chunk)
        assert_decoded(decoded, chunk, 0, 5)
        assert decoded.num_rows == 2


# --- pages that contradict their column ---------------------------------------------------------


def _simple(rep: list[int], defs: list[int], max_rep: int = 1, max_def: int = 2) -> Chunk:
    count = sum(d == max_def for d in defs)
    return Chunk(
        np.array(defs, np.uint8), np.array(rep, np.uint8), np.arange(count), max_def, max_rep
    )


@pytest.mark.parametrize("v2", [False, True])
def test_repetition_level_above_the_maximum_is_corrupt(v2: bool) -> None:
    chunk = _simple([0, 1, 3, 0], [2, 2, 2, 2], max_rep=3)  # 2 bits: built with max 3, read with 2
    layout = Layout(v2, CompressionCodec.UNCOMPRESSED, False, False, False)
    built = build(chunk, [0, 4], layout)
    with pytest.raises(CorruptFileError, match=r"Column 'x.list.element'.*repetition level 3") as e:
        decode(built, Chunk(chunk.def_levels, chunk.rep_levels, chunk.values, 2, 2))
    assert e.value.offset == OFFSET


@pytest.mark.parametrize("v2", [False, True])
def test_definition_level_above_the_maximum_is_corrupt(v2: bool) -> None:
    chunk = _simple([0, 1, 0], [3, 1, 3], max_def=3)
    built = build(chunk, [0, 3], Layout(v2, CompressionCodec.UNCOMPRESSED, False, False, False))
    with pytest.raises(CorruptFileError, match="definition level 3 exceeds"):
        decode(built, Chunk(chunk.def_levels, chunk.rep_levels, chunk.values, 2, 1))


@pytest.mark.parametrize("v2", [False, True])
def test_chunk_starting_inside_a_record_is_corrupt(v2: bool) -> None:
    chunk = _simple([1, 0, 1], [2, 2, 2])
    built = build(chunk, [0, 3], Layout(v2, CompressionCodec.UNCOMPRESSED, False, False, False))
    with pytest.raises(CorruptFileError, match="does not start a record") as e:
        decode(built, chunk)
    assert e.value.offset == OFFSET


def test_empty_first_page_then_a_page_inside_a_record_is_corrupt() -> None:
    chunk = _simple([1, 0], [2, 2])
    built = build(
        chunk, [0, 0, 2], Layout(True, CompressionCodec.UNCOMPRESSED, False, False, False)
    )
    with pytest.raises(CorruptFileError, match="does not start a record"):
        decode(built, chunk)


def test_selected_page_inside_a_record_is_corrupt() -> None:
    chunk = _simple([0, 1, 1, 0], [2, 2, 2, 2])
    built = build(
        chunk, [0, 2, 4], Layout(False, CompressionCodec.UNCOMPRESSED, False, False, False)
    )
    offset, size, _, records = built.pages[1]
    page = PageSlice(built.data[offset : offset + size], OFFSET + offset, 1, records)
    with pytest.raises(CorruptFileError, match="page 1 starts with repetition level 1") as e:
        decode_pages(
            b"",
            OFFSET,
            [page],
            built.meta,
            type_length=None,
            max_definition_level=2,
            max_repetition_level=1,
            verify_checksums=True,
            max_decompressed_page_size=LIMIT,
            where="Column 'x.list.element' of row group 0",
        )
    assert e.value.offset == OFFSET + offset


def test_selected_page_with_other_records_than_the_offset_index_is_corrupt() -> None:
    chunk = _simple([0, 1, 0, 0], [2, 2, 2, 2])
    built = build(chunk, [0, 4], Layout(False, CompressionCodec.UNCOMPRESSED, False, False, False))
    offset, size, _, records = built.pages[0]
    assert records == 3
    page = PageSlice(built.data[offset : offset + size], OFFSET + offset, 0, 4)  # 4 levels
    with pytest.raises(CorruptFileError, match=r"holds 3 rows .* OffsetIndex says 4 rows"):
        decode_pages(
            b"",
            OFFSET,
            [page],
            built.meta,
            type_length=None,
            max_definition_level=2,
            max_repetition_level=1,
            verify_checksums=True,
            max_decompressed_page_size=LIMIT,
            where="Column 'x.list.element' of row group 0",
        )


def test_page_claiming_more_levels_than_the_chunk_is_corrupt() -> None:
    chunk = _simple([0, 1, 0, 0], [2, 2, 2, 2])
    built = build(chunk, [0, 4], Layout(False, CompressionCodec.UNCOMPRESSED, False, False, False))
    meta = t.ColumnMetaData(
        type=built.meta.type, path_in_schema=["x"], codec=built.meta.codec, num_values=3
    )
    with pytest.raises(CorruptFileError, match="page holds 4 values but the chunk has 3 left"):
        decode_chunk(
            built.data,
            OFFSET,
            meta,
            type_length=None,
            max_definition_level=2,
            max_repetition_level=1,
            verify_checksums=True,
            max_decompressed_page_size=LIMIT,
        )


def test_truncated_repetition_levels_are_corrupt() -> None:
    chunk = _simple([0, 1, 2, 0, 1, 2, 0, 2, 1, 0], [2] * 10, max_rep=2)
    built = build(chunk, [0, 10], Layout(True, CompressionCodec.UNCOMPRESSED, False, False, False))
    data = built.data[:-1]  # the page's body runs past the chunk
    with pytest.raises(CorruptFileError, match="runs past the column chunk"):
        decode(Built(data, built.meta, 0, built.pages, None), chunk)


def test_level_deeper_than_uint8_is_unsupported() -> None:
    chunk = _simple([0], [2])
    built = build(chunk, [0, 1], Layout(False, CompressionCodec.UNCOMPRESSED, False, False, False))
    with pytest.raises(UnsupportedError, match="maximum repetition level 300"):
        decode(built, Chunk(chunk.def_levels, chunk.rep_levels, chunk.values, 2, 300))


def test_flat_column_has_no_repetition_levels() -> None:
    """A V2 page of a flat column may still store repetition levels (a run of zeros): they are
    skipped, and ``rep_levels`` stays None."""
    chunk = _simple([0, 0, 0], [1, 0, 1], max_rep=1, max_def=1)
    built = build(chunk, [0, 3], Layout(True, CompressionCodec.UNCOMPRESSED, False, False, False))
    decoded = decode_chunk(
        built.data,
        OFFSET,
        built.meta,
        type_length=None,
        max_definition_level=1,
        verify_checksums=True,
        max_decompressed_page_size=LIMIT,
    )
    assert decoded.rep_levels is None and decoded.num_rows == 3 and decoded.num_levels == 3
    assert decoded.def_levels is not None and decoded.def_levels.tolist() == [1, 0, 1]
