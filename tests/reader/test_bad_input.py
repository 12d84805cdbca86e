"""Bad input: parquet-testing ``bad_data``, truncation, byte-flip fuzzing, decompression bombs.

Whatever the bytes, the reader either reads them or raises a StreamwriteError subclass: never
another exception type, never a hang, never an allocation beyond its configured limits.
Set STREAMWRITE_FUZZ_EXAMPLES (default 150) for a longer fuzzing run (nightly).
"""

from __future__ import annotations

import io
import os
import tracemalloc
from pathlib import Path

import pyarrow as pa
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamwrite
from streamwrite.errors import ChecksumError, CorruptFileError, LimitError, StreamwriteError
from streamwrite.format import structs as t
from streamwrite.format.enums import (
    CompressionCodec,
    Encoding,
    FieldRepetitionType,
    PageType,
    Type,
)
from streamwrite.format.thrift.codec import deserialize, serialize
from tests.reader.test_conformance import BAD_DATA, PyarrowReference, compare, parquet_files

FUZZ_EXAMPLES = int(os.environ.get("STREAMWRITE_FUZZ_EXAMPLES", "150"))
BAD_FILES = parquet_files(BAD_DATA)


def read_or_error(data: bytes, **kwargs: object) -> pa.Table | StreamwriteError:
    """Our read of ``data``; a StreamwriteError is returned, anything else propagates."""
    try:
        return streamwrite.read_table(data, **kwargs)  # type: ignore[arg-type]
    except StreamwriteError as exc:
        return exc


# ---------------------------------------------------------------------------------------------
# parquet-testing bad_data


@pytest.fixture(scope="module")
def bad_reference(tmp_path_factory: pytest.TempPathFactory) -> PyarrowReference:
    return PyarrowReference(BAD_FILES, tmp_path_factory.mktemp("pyarrow-bad"))


@pytest.mark.timeout(30)
@pytest.mark.parametrize("path", BAD_FILES, ids=lambda p: p.name)
def test_bad_data_file(path: Path, bad_reference: PyarrowReference) -> None:
    expected = bad_reference.result(path)
    result = read_or_error(path.read_bytes())
    if isinstance(expected, str):
        assert isinstance(result, StreamwriteError), f"pyarrow fails ({expected}), we read it"
    else:
        # ARROW-GH-43605 (a dictionary page with a wrong num_values that readers must tolerate)
        # is valid enough for pyarrow: we must read the same values.
        assert isinstance(result, pa.Table), result
        assert compare(expected, result) == []


# ---------------------------------------------------------------------------------------------
# A small file with every feature, v1 and v2 pages


def _table() -> pa.Table:
    n = 300
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "sym": pa.array([None if i % 9 == 0 else f"s{i % 5}" for i in range(n)]),
            "px": pa.array([None if i % 4 == 0 else i / 3 for i in range(n)]),
            "flag": pa.array([i % 2 == 0 for i in range(n)]),
            "q": pa.array([i % 17 for i in range(n)], pa.int32()),
        }
    )


def _write(version: str, compression: str = "zstd") -> bytes:
    buf = io.BytesIO()
    streamwrite.write_table(
        _table(),
        buf,
        compression=compression,
        data_page_version=version,
        data_page_row_limit=100,
        bloom_filter_options={"sym": {"ndv": 10, "fpp": 0.01}},
        column_encoding={"q": "DELTA_BINARY_PACKED"},
        use_dictionary=["sym"],
    )
    return buf.getvalue()


FILES = {"v1": _write("1.0"), "v2": _write("2.0")}


def _page_bodies(data: bytes) -> list[tuple[int, int]]:
    """(absolute offset, size) of every page body in the file."""
    bodies = []
    with streamwrite.ParquetFile(data) as pf:
        for i in range(pf.num_row_groups):
            for spec in pf._parquet_schema.columns:
                for page in pf._decode_column_chunk(i, spec).pages:
                    header, end = deserialize(t.PageHeader, memoryview(data), page.offset)
                    assert header.compressed_page_size is not None
                    bodies.append((end, header.compressed_page_size))
    return bodies


@pytest.mark.parametrize("version", sorted(FILES))
def test_fixture_file_reads(version: str) -> None:
    assert streamwrite.read_table(FILES[version]).equals(_table())
    assert len(_page_bodies(FILES[version])) >= 15


@pytest.mark.timeout(60)
@pytest.mark.parametrize("version", sorted(FILES))
def test_truncated_at_every_length(version: str) -> None:
    data = FILES[version]
    for size in range(len(data)):
        result = read_or_error(data[:size])
        assert isinstance(result, StreamwriteError), size


@pytest.mark.timeout(60)
@pytest.mark.parametrize("version", sorted(FILES))
def test_data_cut_short_under_intact_footer(version: str) -> None:
    """The data region cut at every length, the original footer appended: offsets now lie."""
    data = FILES[version]
    footer_size = int.from_bytes(data[-8:-4], "little") + 8
    tail = data[-footer_size:]
    metadata, _ = deserialize(t.FileMetaData, memoryview(tail)[:-8])
    chunks_end = max(
        (c.meta_data.dictionary_page_offset or c.meta_data.data_page_offset or 0)
        + (c.meta_data.total_compressed_size or 0)
        for rg in metadata.row_groups or []
        for c in rg.columns or []
        if c.meta_data is not None
    )
    for size in range(4, chunks_end):  # bloom filters and page indexes follow: not read
        result = read_or_error(data[:size] + tail)
        assert isinstance(result, StreamwriteError), size
        if isinstance(result, CorruptFileError):
            assert result.offset is not None


@pytest.mark.timeout(120)
@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=2000,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(
    version=st.sampled_from(sorted(FILES)),
    flips=st.lists(
        st.tuples(st.floats(0, 1, exclude_max=True), st.integers(1, 255)), min_size=1, max_size=4
    ),
    checksums=st.booleans(),
)
def test_byte_flips(version: str, flips: list[tuple[float, int]], checksums: bool) -> None:
    data = bytearray(FILES[version])
    for where, mask in flips:
        data[int(where * len(data))] ^= mask
    result = read_or_error(bytes(data), verify_checksums=checksums)
    if isinstance(result, CorruptFileError):
        assert result.offset is not None


@pytest.mark.timeout(60)
@settings(max_examples=max(FUZZ_EXAMPLES // 3, 20), deadline=2000, derandomize=True)
@given(
    version=st.sampled_from(sorted(FILES)),
    page=st.integers(0, 10_000),
    where=st.floats(0, 1, exclude_max=True),
    mask=st.integers(1, 255),
)
def test_flip_in_page_body_is_a_checksum_error(
    version: str, page: int, where: float, mask: int
) -> None:
    data = bytearray(FILES[version])
    bodies = _page_bodies(bytes(data))
    offset, size = bodies[page % len(bodies)]
    data[offset + int(where * size)] ^= mask
    with pytest.raises(ChecksumError) as info:
        streamwrite.read_table(bytes(data))
    assert info.value.offset is not None and info.value.offset < offset
    assert "row group" in str(info.value)


# ---------------------------------------------------------------------------------------------
# Decompression and run-length bombs


def _one_page_file(
    header: t.PageHeader,
    body: bytes,
    codec: CompressionCodec,
    num_values: int,
    physical_type: Type = Type.INT64,
    repetition: FieldRepetitionType = FieldRepetitionType.REQUIRED,
) -> bytes:
    """A file of one column chunk holding one page, built from the Thrift structs."""
    page = serialize(header) + body
    meta = t.ColumnMetaData(
        type=physical_type,
        encodings=[Encoding.PLAIN, Encoding.RLE],
        path_in_schema=["x"],
        codec=codec,
        num_values=num_values,
        total_uncompressed_size=len(page),
        total_compressed_size=len(page),
        data_page_offset=4,
    )
    metadata = t.FileMetaData(
        version=2,
        schema=[
            t.SchemaElement(name="schema", num_children=1),
            t.SchemaElement(name="x", type=physical_type, repetition_type=repetition),
        ],
        num_rows=num_values,
        row_groups=[
            t.RowGroup(
                columns=[t.ColumnChunk(file_offset=4, meta_data=meta)],
                total_byte_size=len(page),
                num_rows=num_values,
            )
        ],
    )
    footer = serialize(metadata)
    return b"PAR1" + page + footer + len(footer).to_bytes(4, "little") + b"PAR1"


def _v1_header(uncompressed: int, compressed: int, num_values: int) -> t.PageHeader:
    return t.PageHeader(
        type=PageType.DATA_PAGE,
        uncompressed_page_size=uncompressed,
        compressed_page_size=compressed,
        data_page_header=t.DataPageHeader(
            num_values=num_values,
            encoding=Encoding.PLAIN,
            definition_level_encoding=Encoding.RLE,
            repetition_level_encoding=Encoding.RLE,
        ),
    )


def _peak_of(data: bytes, **kwargs: object) -> tuple[object, int]:
    tracemalloc.start()
    try:
        result = read_or_error(data, **kwargs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


BOMB = zstandard.ZstdCompressor(level=19).compress(bytes(64 * 1024 * 1024))  # 64 MiB of zeros


def test_fixture_file_builder_is_valid() -> None:
    body = (7).to_bytes(8, "little") * 3
    data = _one_page_file(
        _v1_header(len(body), len(body), 3), body, CompressionCodec.UNCOMPRESSED, 3
    )
    assert streamwrite.read_table(data)["x"].to_pylist() == [7, 7, 7]


@pytest.mark.timeout(30)
def test_page_claiming_a_huge_size_is_a_limit_error() -> None:
    for claimed in (2**31 - 1, 300 * 1024 * 1024):
        data = _one_page_file(
            _v1_header(claimed, len(BOMB), 1000), BOMB, CompressionCodec.ZSTD, 1000
        )
        result, peak = _peak_of(data)
        assert isinstance(result, LimitError), (claimed, result)
        assert "row group 0" in str(result)
        assert peak < 8 * 1024 * 1024


@pytest.mark.timeout(30)
def test_configurable_limit() -> None:
    size = 64 * 1024 * 1024
    data = _one_page_file(
        _v1_header(size, len(BOMB), size // 8), BOMB, CompressionCodec.ZSTD, size // 8
    )
    result, peak = _peak_of(data, max_decompressed_page_size=1024 * 1024)
    assert isinstance(result, LimitError)
    assert peak < 8 * 1024 * 1024
    with pytest.raises(streamwrite.ConfigError):
        streamwrite.read_table(data, max_decompressed_page_size=0)


@pytest.mark.timeout(30)
def test_header_understating_the_size_does_not_inflate() -> None:
    """The page claims 1 KiB but its zstd data inflates to 64 MiB: bounded, then an error."""
    data = _one_page_file(_v1_header(1024, len(BOMB), 128), BOMB, CompressionCodec.ZSTD, 128)
    result, peak = _peak_of(data)
    assert isinstance(result, CorruptFileError), result
    assert peak < 8 * 1024 * 1024


@pytest.mark.timeout(30)
def test_run_length_bomb_is_a_limit_error() -> None:
    """An OPTIONAL column whose 6-byte page claims 2**30 all-null rows."""
    rows = 2**30
    levels = bytes([0x80, 0x80, 0x80, 0x80, 0x08, 0x00])  # RLE run: 2**30 times level 0
    body = len(levels).to_bytes(4, "little") + levels
    data = _one_page_file(
        _v1_header(len(body), len(body), rows),
        body,
        CompressionCodec.UNCOMPRESSED,
        rows,
        repetition=FieldRepetitionType.OPTIONAL,
    )
    result, peak = _peak_of(data)
    assert isinstance(result, LimitError), result
    assert peak < 8 * 1024 * 1024
