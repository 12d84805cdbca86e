"""Raw copy of row groups (:mod:`streamwrite.layout.raw_copy`) placed by ``FileWriter``.

* Sources written by streamwrite and by pyarrow (dictionary and plain chunks, page v1 and v2,
  several codecs, CRCs, nulls, several pages per chunk, page index, bloom filters): every row
  group is copied, out of order and between freshly encoded row groups. pyarrow reads the
  expected rows, ``verify_file`` finds the file clean, and each copied chunk keeps its page
  bytes, metadata, page index (rebased) and bloom filter; DuckDB reads the copies too.
* Writer quirks: ``dictionary_page_offset=0``, no ``bloom_filter_length``, any ``file_offset``.
* The row groups of an older snapshot of a live file copy from its committed prefix alone.
* Encrypted chunks raise UnsupportedError; damaged or truncated sources CorruptFileError.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.arrow.schema import ColumnSpec, ParquetSchema
from streamwrite.crypto import ExplicitKeys
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.encode import row_group_jobs
from streamwrite.errors import CorruptFileError, UnsupportedError
from streamwrite.format import structs as t
from streamwrite.format.thrift.codec import deserialize
from streamwrite.layout.file_writer import FileWriter
from streamwrite.layout.raw_copy import copy_column_chunk, copy_row_group
from streamwrite.options import make_write_options
from streamwrite.reader.file import ParquetFile
from streamwrite.reader.verify import verify_file
from workers.bloom import SplitBlockBloomFilter, hash_values
from workers.jobs import run_job

T = TypeVar("T")
ROWS = 900
SYMBOLS = np.array([f"sym{i:02d}" for i in range(40)])


def make_table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    valid = rng.random(n) > 0.2
    ids = np.arange(seed * 100_000, seed * 100_000 + n, dtype=np.int64)
    return pa.table(
        {
            "id": pa.array(ids),
            "sym": pa.array(SYMBOLS[rng.integers(0, 40, n)], mask=~valid),
            "price": pa.array(rng.normal(size=n), mask=~valid),
            "note": pa.array(np.char.add("note-", ids.astype(str))),
            "qty": pa.array(rng.integers(0, 50, n).astype(np.int32)),
        }
    )


TABLE = make_table(ROWS, 1)
CODECS = {"id": "zstd", "sym": "snappy", "price": "gzip", "note": "lz4", "qty": "none"}
COMMON: dict[str, Any] = {
    "row_group_size": 300,
    "write_page_index": True,
    "write_page_checksum": True,
}
SW_CASES: dict[str, dict[str, Any]] = {
    "sw-v1": {"data_page_version": "1.0", "compression": CODECS},
    "sw-v2": {"data_page_version": "2.0", "compression": "snappy"},
}
PA_CASES: dict[str, dict[str, Any]] = {
    "pa-dict-v1": {"use_dictionary": True, "data_page_version": "1.0", "compression": CODECS},
    "pa-plain-v2": {"use_dictionary": False, "data_page_version": "2.0", "compression": "zstd"},
}


def write_source(path: Path, case: str) -> bytes:
    if case in SW_CASES:
        streamwrite.write_table(
            TABLE,
            path,
            **COMMON,
            **SW_CASES[case],
            data_page_row_limit=70,
            use_dictionary=["sym", "qty"],
            bloom_filter_options={"id": True, "sym": True},
        )
    else:
        pq.write_table(
            TABLE,
            path,
            **COMMON,
            **PA_CASES[case],
            max_rows_per_page=70,
            bloom_filter_options={"id": {"ndv": ROWS, "fpp": 0.01}, "sym": {"ndv": 40}},
        )
    return path.read_bytes()


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    directory = tmp_path_factory.mktemp("sources")
    return {
        case: write_source(directory / f"{case}.parquet", case) for case in {**SW_CASES, **PA_CASES}
    }


def reader(data: bytes, limit: int | None = None) -> Callable[[int, int], bytes]:
    """``read_at`` over ``data`` that fails the test on a read past ``limit``."""
    end = len(data) if limit is None else limit

    def read_at(offset: int, size: int) -> bytes:
        assert offset >= 0 and offset + size <= end, (offset, size, end)
        return data[offset : offset + size]

    return read_at


def footer(data: bytes) -> tuple[t.FileMetaData, ParquetSchema]:
    with ParquetFile(data) as pf:
        return pf.thrift_metadata, pf.parquet_schema


Piece: TypeAlias = int | pa.Table  # a source row group to copy, or rows to encode afresh


def assemble(
    source: bytes, order: list[Piece], file_size: int | None = None
) -> tuple[bytes, pa.Table]:
    """A new file of ``order``'s row groups, and the rows it should hold."""
    size = len(source) if file_size is None else file_size
    prefix = source[:size]
    metadata, schema = footer(prefix)
    options = make_write_options(
        schema.arrow_schema.names, data_page_row_limit=100, bloom_filter_options={"id": True}
    )
    writer = FileWriter(schema, options)
    out, expected = [writer.start()], []
    source_pf = pq.ParquetFile(pa.BufferReader(prefix))
    for piece in order:
        if isinstance(piece, pa.Table):
            jobs = row_group_jobs(piece, schema, options)
            out.append(writer.add_row_group([run_job(job) for job in jobs], piece.num_rows))
            expected.append(piece)
        else:
            row_group = (metadata.row_groups or [])[piece]
            chunks = copy_row_group(reader(source, size), row_group, file_size=size)
            out.append(writer.add_row_group(chunks, row_group.num_rows or 0))
            expected.append(source_pf.read_row_group(piece))
    out.append(writer.footer())
    return b"".join(out), pa.concat_tables(expected)


def chunk_start(meta: t.ColumnMetaData) -> int:
    return meta.dictionary_page_offset or meta.data_page_offset or 0


def layout_free(meta: t.ColumnMetaData) -> t.ColumnMetaData:
    """The metadata with the fields a placement sets cleared."""
    return replace(
        meta,
        data_page_offset=None,
        dictionary_page_offset=None,
        bloom_filter_offset=None,
        bloom_filter_length=None,
    )


def index(cls: type[T], data: bytes, offset: int | None, length: int | None) -> T:
    assert offset is not None and length is not None
    return deserialize(cls, data[offset : offset + length])[0]


def locations(data: bytes, column: t.ColumnChunk, start: int) -> list[tuple[int, int, int]]:
    """The OffsetIndex of ``column``: (offset from ``start``, size, first row) per page."""
    found = index(t.OffsetIndex, data, column.offset_index_offset, column.offset_index_length)
    return [
        ((p.offset or 0) - start, p.compressed_page_size or 0, p.first_row_index or 0)
        for p in found.page_locations or []
    ]


def check_copy(new: bytes, expected: pa.Table, source: bytes, copied: dict[int, int]) -> None:
    """``new`` holds ``expected``, is clean, and row group ``i`` copies source row group
    ``copied[i]`` chunk by chunk."""
    actual = pq.read_table(pa.BufferReader(new), page_checksum_verification=True)
    assert actual.equals(expected)
    report = verify_file(new)
    assert report.ok, report.problems
    src_meta, _ = footer(source)
    new_meta, schema = footer(new)
    arrow_meta = pq.ParquetFile(pa.BufferReader(new)).metadata
    with ParquetFile(new) as new_pf:
        for i, j in copied.items():
            src_rg, new_rg = (src_meta.row_groups or [])[j], (new_meta.row_groups or [])[i]
            assert new_rg.num_rows == src_rg.num_rows
            pairs = zip(src_rg.columns or [], new_rg.columns or [], strict=True)
            for col, (src, dst) in enumerate(pairs):
                arrow_col = arrow_meta.row_group(i).column(col)
                assert arrow_col.has_offset_index == (src.offset_index_offset is not None)
                assert arrow_col.has_column_index == (src.column_index_offset is not None)
                check_chunk(new, dst, source, src)
                if (dst.meta_data or t.ColumnMetaData()).bloom_filter_offset is not None:
                    check_bloom(new_pf, i, schema.columns[col])


def check_chunk(new: bytes, dst: t.ColumnChunk, source: bytes, src: t.ColumnChunk) -> None:
    """Same pages, metadata (but offsets), page index (rebased) and bloom filter bytes."""
    s, d = src.meta_data, dst.meta_data
    assert s is not None and d is not None
    s0, d0, size = chunk_start(s), chunk_start(d), s.total_compressed_size or 0
    assert new[d0 : d0 + size] == source[s0 : s0 + size]
    assert (d.data_page_offset or 0) - d0 == (s.data_page_offset or 0) - s0
    assert (d.dictionary_page_offset is None) == (s.dictionary_page_offset is None)
    assert layout_free(d) == layout_free(s)
    if src.offset_index_offset is not None:
        assert len(locations(new, dst, d0)) > 1  # several pages per chunk
        assert locations(new, dst, d0) == locations(source, src, s0)
    if src.column_index_offset is not None:
        src_ci = index(t.ColumnIndex, source, src.column_index_offset, src.column_index_length)
        assert index(t.ColumnIndex, new, dst.column_index_offset, dst.column_index_length) == src_ci
    assert (d.bloom_filter_offset is None) == (s.bloom_filter_offset is None)
    if d.bloom_filter_offset is not None and d.bloom_filter_length is not None:
        copied = new[d.bloom_filter_offset : d.bloom_filter_offset + d.bloom_filter_length]
        assert copied == source[s.bloom_filter_offset : (s.bloom_filter_offset or 0) + len(copied)]


def check_bloom(pf: ParquetFile, i: int, spec: ColumnSpec) -> None:
    """The bloom filter of column ``spec`` in row group ``i`` holds every value of the chunk."""
    meta = pf.column_metadata(i, spec.index)
    assert meta.bloom_filter_offset is not None and meta.bloom_filter_length is not None
    data = bytes(pf.read_bytes(meta.bloom_filter_offset, meta.bloom_filter_length))
    header, end = deserialize(t.BloomFilterHeader, data)
    assert end + (header.numBytes or 0) == len(data)
    bloom = SplitBlockBloomFilter.from_bitset(data[end:])
    values = pf.decode_column_chunk(i, spec).values
    assert len(values) > 0
    assert bool(np.all(bloom.check_hashes(hash_values(values, spec.physical_type))))


@pytest.mark.parametrize("case", [*SW_CASES, *PA_CASES])
def test_row_groups_copy_out_of_order_between_fresh_ones(
    case: str, sources: dict[str, bytes]
) -> None:
    source = sources[case]
    metadata, _ = footer(source)
    assert len(metadata.row_groups or []) == 3
    new, expected = assemble(source, [2, make_table(250, 7), 0, 1, make_table(120, 8), 2])
    check_copy(new, expected, source, {0: 2, 2: 0, 3: 1, 5: 2})


def test_writer_quirks_copy_as_the_plain_chunk(sources: dict[str, bytes]) -> None:
    """dictionary_page_offset=0 means unset; a bloom filter without bloom_filter_length is
    sized from its header, one with a longer length is cut to header and bitset;
    file_offset is never used; index_page_offset is dropped."""
    source = sources["sw-v1"]
    metadata, schema = footer(source)
    row_group = (metadata.row_groups or [])[1]
    columns = {spec.name: n for n, spec in enumerate(schema.columns)}
    quirky = copy.deepcopy(row_group)
    chunks = quirky.columns or []
    for column in chunks:
        column.file_offset = len(source) * 3
        assert column.meta_data is not None
        column.meta_data.index_page_offset = len(source) * 3
    note, ident = chunks[columns["note"]].meta_data, chunks[columns["id"]].meta_data
    sym = chunks[columns["sym"]].meta_data
    assert note is not None and ident is not None and sym is not None
    assert note.dictionary_page_offset is None and ident.bloom_filter_length is not None
    note.dictionary_page_offset = 0
    ident.bloom_filter_length = None
    sym.bloom_filter_length = (sym.bloom_filter_length or 0) + 16
    plain = copy_row_group(reader(source), row_group, file_size=len(source))
    assert copy_row_group(reader(source), quirky, file_size=len(source)) == plain
    assert plain[columns["note"]].meta_data.dictionary_page_offset is None
    assert plain[columns["sym"]].meta_data.dictionary_page_offset == 0
    assert plain[columns["id"]].bloom_filter is not None
    for chunk in plain:  # as the encoder leaves them: FileWriter places the bloom filter
        assert chunk.meta_data.bloom_filter_offset is None
        assert chunk.meta_data.bloom_filter_length is None
        assert chunk.meta_data.index_page_offset is None


def test_older_live_snapshot_copies_from_its_committed_prefix(tmp_path: Path) -> None:
    live = tmp_path / "live"

    async def build() -> list[streamwrite.Commit]:
        options: dict[str, Any] = {"bloom_filter_options": {"id": True}, "data_page_row_limit": 60}
        async with await streamwrite.LiveFile.open(live, TABLE.schema, **options) as lf:
            for seed in range(3):
                await lf.append(make_table(200, 10 + seed))
            return lf.snapshots()

    snapshots = anyio.run(build)
    older = snapshots[-2]  # two commits of three (the first snapshot is the empty file)
    data = (live / "data.parquet").read_bytes()
    assert older.num_row_groups == 2 and older.parquet_size < len(data)
    order: list[Piece] = [1, make_table(50, 20), 0]
    new, expected = assemble(data, order, file_size=older.parquet_size)
    assert expected.num_rows == 450
    check_copy(new, expected, data[: older.parquet_size], {0: 1, 2: 0})


def test_encrypted_chunk_is_unsupported(tmp_path: Path) -> None:
    keys = ExplicitKeys({"kf": os.urandom(16), "kc": os.urandom(16)}, "kf", {"id": "kc"})
    path = tmp_path / "encrypted.parquet"
    encryption = FileEncryption(keys, plaintext_footer=True)  # the footer reads without keys
    streamwrite.write_table(TABLE, path, encryption=encryption, row_group_size=300)
    data = path.read_bytes()
    metadata, _ = footer(data)
    row_group = (metadata.row_groups or [])[0]
    assert (row_group.columns or [])[0].crypto_metadata is not None
    with pytest.raises(UnsupportedError, match="encrypted"):
        copy_row_group(reader(data), row_group, file_size=len(data))


def _damage(row_group: t.RowGroup, size: int, how: str) -> int:
    """Damage ``row_group`` (a copy) as ``how`` says; returns the file size to claim."""
    column = (row_group.columns or [])[1]  # "sym": dictionary, page index, bloom filter
    meta = column.meta_data
    assert meta is not None and meta.dictionary_page_offset and meta.bloom_filter_length
    if how == "truncated":
        return chunk_start(meta) + (meta.total_compressed_size or 0) - 1
    if how == "pages-past-end":
        meta.dictionary_page_offset, meta.data_page_offset = None, size + 10
    elif how == "dictionary-after-data":
        meta.dictionary_page_offset = (meta.data_page_offset or 0) + 1
    elif how == "size-short-of-data-page":
        meta.total_compressed_size = (meta.data_page_offset or 0) - meta.dictionary_page_offset
    elif how == "size-short-of-last-page":
        meta.total_compressed_size = (meta.total_compressed_size or 0) - 1
    elif how == "offset-index-past-end":
        column.offset_index_offset = size - 2
    elif how == "column-index-undecodable":
        column.column_index_length = 1
    elif how == "bloom-header-undecodable":
        meta.bloom_filter_length = 3
    elif how == "bloom-bitset-past-end":
        meta.bloom_filter_length = None
        column.column_index_offset = column.offset_index_offset = None  # they lie further on
        return (meta.bloom_filter_offset or 0) + 40
    return size


DAMAGE = {
    "truncated": "pages of .* outside the data",
    "pages-past-end": "pages of .* outside the data",
    "dictionary-after-data": "dictionary page at byte offset .* after its first data page",
    "size-short-of-data-page": "does not reach its first data page",
    "size-short-of-last-page": "OffsetIndex of .* page 4 .* outside the chunk's bytes",
    "offset-index-past-end": "OffsetIndex of .* outside the data",
    "column-index-undecodable": "ColumnIndex of .* does not decode",
    "bloom-header-undecodable": "bloom filter of .* does not decode",
    "bloom-bitset-past-end": "bloom filter of .* outside the data",
}


@pytest.mark.parametrize("how", DAMAGE)
def test_damaged_source_is_corrupt(how: str, sources: dict[str, bytes]) -> None:
    source = sources["sw-v2"]
    metadata, _ = footer(source)
    row_group = copy.deepcopy((metadata.row_groups or [])[2])
    size = _damage(row_group, len(source), how)
    column = (row_group.columns or [])[1]
    with pytest.raises(CorruptFileError, match=DAMAGE[how]) as info:
        copy_column_chunk(reader(source, size), column, file_size=size)
    assert info.value.offset is not None


def test_short_read_and_missing_metadata_are_corrupt(sources: dict[str, bytes]) -> None:
    source = sources["pa-dict-v1"]
    metadata, _ = footer(source)
    row_group = (metadata.row_groups or [])[0]
    with pytest.raises(CorruptFileError, match="returned"):
        copy_row_group(lambda o, n: source[o : o + n - 1], row_group, file_size=len(source))
    column = copy.deepcopy((row_group.columns or [])[0])
    assert column.meta_data is not None
    column.meta_data.data_page_offset = None
    with pytest.raises(CorruptFileError, match="data_page_offset"):
        copy_column_chunk(reader(source), column, file_size=len(source))
    column.meta_data = None
    with pytest.raises(CorruptFileError, match="ColumnMetaData"):
        copy_column_chunk(reader(source), column, file_size=len(source))
    external = replace((row_group.columns or [])[0], file_path="other.parquet")
    with pytest.raises(UnsupportedError, match="other file"):
        copy_column_chunk(reader(source), external, file_size=len(source))


def test_duckdb_reads_copied_files(sources: dict[str, bytes], tmp_path: Path) -> None:
    for case in ("sw-v2", "pa-dict-v1", "pa-plain-v2"):
        new, expected = assemble(sources[case], [1, make_table(200, 30), 0, 2])
        (tmp_path / f"{case}.parquet").write_bytes(new)
        with pa.ipc.new_file(tmp_path / f"{case}.arrow", expected.schema) as ipc:
            ipc.write_table(expected)
    script = Path(__file__).parents[1] / "interop" / "read_check.py"
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path), "duckdb"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(results) == 3, proc.stderr
    assert all(not r["problems"] for r in results), results
