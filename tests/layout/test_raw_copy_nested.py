"""Raw copy of nested column chunks: row groups of nested files (written by pyarrow and by
streamwrite's encoder) copied out of order between freshly encoded nested row groups; pyarrow
reads the result (page checksums verified) equal to the rows, and each copied chunk keeps its
pages, metadata (levels' SizeStatistics included) and page index, offsets rebased."""

from __future__ import annotations

import io
import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.format import structs as t
from streamwrite.format.thrift.codec import deserialize
from streamwrite.layout.file_writer import FileWriter
from streamwrite.layout.raw_copy import copy_row_group
from streamwrite.options import make_write_options
from tests.workers._nested_files import build_schema, encode_leaves, write_nested_file

ROWS_PER_GROUP = 400


def nested_table(num_rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 6, num_rows)
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("vals", pa.list_(pa.float64())),
            pa.field("tags", pa.large_list(pa.field("item", pa.string(), nullable=False))),
            pa.field("fixed", pa.list_(pa.int32(), 2)),
            pa.field("s", pa.struct([pa.field("a", pa.int64()), pa.field("b", pa.string())])),
            pa.field("m", pa.map_(pa.string(), pa.list_(pa.int16()))),
        ]
    )
    columns: list[Any] = [
        np.arange(seed * 10_000, seed * 10_000 + num_rows),
        [None if n == 5 else [float(i) if i % 3 else None for i in range(n)] for n in lengths],
        [[f"t{(i * 7) % 11}" for i in range(n)] for n in lengths],
        [None if n == 0 else [int(n), None] for n in lengths],
        [None if n == 1 else {"a": int(n) * 3, "b": None if n == 2 else f"b{n}"} for n in lengths],
        [
            None if n == 4 else [(f"k{i}", None if i == 2 else [i] * i) for i in range(n)]
            for n in lengths
        ],
    ]
    return pa.table(columns, schema=schema)


def _footer(data: bytes) -> t.FileMetaData:
    (size,) = struct.unpack("<I", data[-8:-4])
    meta, _ = deserialize(t.FileMetaData, data[-8 - size : -8])
    return meta


def _source(writer: str, table: pa.Table, version: str) -> bytes:
    if writer == "pyarrow":
        sink = io.BytesIO()
        pq.write_table(
            table,
            sink,
            row_group_size=ROWS_PER_GROUP,
            data_page_version=version,
            data_page_size=512,
            write_page_index=True,
            write_page_checksum=True,
            store_schema=True,
        )
        return sink.getvalue()
    options = make_write_options(
        [c.path_in_schema for c in arrow_to_parquet(table.schema).columns],
        data_page_version=version,
        data_page_size=512,
    )
    return write_nested_file(table, options, ROWS_PER_GROUP)


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("writer", ["pyarrow", "streamwrite"])
def test_nested_row_groups_copy_raw(writer: str, version: str) -> None:
    source_table = nested_table(3 * ROWS_PER_GROUP, seed=1)
    source = _source(writer, source_table, version)
    metadata = _footer(source)
    fresh = nested_table(250, seed=2)
    schema = build_schema(source_table.schema)
    options = make_write_options(
        [c.path_in_schema for c in arrow_to_parquet(source_table.schema).columns]
    )
    file_writer = FileWriter(schema, options)  # type: ignore[arg-type]
    out = [file_writer.start()]
    expected = []

    def read_at(offset: int, size: int) -> bytes:
        return source[offset : offset + size]

    for piece in [2, "fresh", 0, 1]:
        if piece == "fresh":
            out.append(file_writer.add_row_group(encode_leaves(schema, fresh, options), 250))
            expected.append(fresh)
            continue
        assert isinstance(piece, int)
        row_group = (metadata.row_groups or [])[piece]
        chunks = copy_row_group(read_at, row_group, file_size=len(source))
        out.append(file_writer.add_row_group(chunks, row_group.num_rows or 0))
        expected.append(source_table.slice(piece * ROWS_PER_GROUP, ROWS_PER_GROUP))
    out.append(file_writer.footer())
    data = b"".join(out)
    got = pq.read_table(pa.BufferReader(data), page_checksum_verification=True)
    assert got.equals(pa.concat_tables(expected))
    # every copied chunk keeps its pages, levels and page index; only offsets move
    ours = _footer(data)
    reader = pq.ParquetFile(pa.BufferReader(data), page_checksum_verification=True)
    several_pages = 0
    theirs = pq.ParquetFile(pa.BufferReader(source))
    for position, piece in ((0, 2), (2, 0), (3, 1)):
        copied = (ours.row_groups or [])[position]
        original = (metadata.row_groups or [])[piece]
        for a, b in zip(copied.columns or [], original.columns or [], strict=True):
            assert a.meta_data is not None and b.meta_data is not None
            assert a.meta_data.num_values == b.meta_data.num_values
            assert a.meta_data.statistics == b.meta_data.statistics
            assert a.meta_data.size_statistics == b.meta_data.size_statistics
            start_a = a.meta_data.dictionary_page_offset or a.meta_data.data_page_offset
            start_b = b.meta_data.dictionary_page_offset or b.meta_data.data_page_offset
            size = b.meta_data.total_compressed_size
            assert data[start_a : start_a + size] == source[start_b : start_b + size]
            assert a.offset_index_offset is not None and b.offset_index_offset is not None
            ours_index = _offset_index(data, a)
            theirs_index = _offset_index(source, b)
            shift = start_a - start_b
            several_pages += len(theirs_index.page_locations or []) > 1
            assert [
                (p.offset - shift, p.compressed_page_size, p.first_row_index)
                for p in ours_index.page_locations or []
            ] == [
                (p.offset, p.compressed_page_size, p.first_row_index)
                for p in theirs_index.page_locations or []
            ]
            assert ours_index.unencoded_byte_array_data_bytes == (
                theirs_index.unencoded_byte_array_data_bytes
            )
        # the row group reads alone as the source's (OffsetIndex first_row_index in records)
        assert reader.read_row_group(position).equals(theirs.read_row_group(piece))
    assert several_pages  # records spread over pages: first_row_index counts records


def _offset_index(data: bytes, column: t.ColumnChunk) -> t.OffsetIndex:
    assert column.offset_index_offset is not None and column.offset_index_length is not None
    start = column.offset_index_offset
    index, _ = deserialize(t.OffsetIndex, data[start : start + column.offset_index_length])
    return index
