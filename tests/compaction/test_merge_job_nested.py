"""MergeChunkJob on nested leaves: row ranges are records; the decoded values with their
definition AND repetition levels of several source chunks are concatenated and re-encoded
exactly as those records would encode from Arrow (the encoder helper's reference shredder),
inline and through pickling as the pool sends jobs."""

from __future__ import annotations

import io
import pickle
import struct
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.encode import chunk_settings
from streamwrite.format import structs as t
from streamwrite.format.thrift.codec import deserialize
from streamwrite.options import make_write_options
from tests.workers._nested_files import build_schema, encode_leaves, write_nested_file
from workers.jobs import MergeChunkJob, SourceChunk, run_job


def _nested_table(num_rows: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 5, num_rows)
    ints = [
        None if rng.random() < 0.1 else [None if rng.random() < 0.2 else int(v) for v in range(n)]
        for n in lengths
    ]
    words = [
        None
        if rng.random() < 0.1
        else [[f"w{rng.integers(0, 30)}" for _ in range(rng.integers(0, 3))] for _ in range(n)]
        for n in lengths
    ]
    structs = [
        None
        if rng.random() < 0.1
        else {"a": int(rng.integers(0, 100)), "b": None if i % 7 else "x"}
        for i in range(num_rows)
    ]
    maps = [
        None if rng.random() < 0.1 else [(f"k{j}", None if j == 1 else j) for j in range(n)]
        for n in lengths
    ]
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("ints", pa.list_(pa.int32())),
            pa.field("words", pa.large_list(pa.list_(pa.string()))),
            pa.field("s", pa.struct([pa.field("a", pa.int64()), pa.field("b", pa.string())])),
            pa.field("m", pa.map_(pa.string(), pa.int64())),
        ]
    )
    return pa.table([pa.array(np.arange(num_rows)), ints, words, structs, maps], schema=schema)


def _footer(data: bytes) -> t.FileMetaData:
    (size,) = struct.unpack("<I", data[-8:-4])
    meta, _ = deserialize(t.FileMetaData, data[-8 - size : -8])
    return meta


def _sources(data: bytes, meta: t.FileMetaData, column: int, ranges: list[tuple[int, int, int]]):  # type: ignore[no-untyped-def]
    sources = []
    for index, start, stop in ranges:
        group = (meta.row_groups or [])[index]
        chunk = (group.columns or [])[column]
        cmd = chunk.meta_data
        assert cmd is not None
        first = cmd.data_page_offset
        if cmd.dictionary_page_offset is not None and cmd.dictionary_page_offset > 0:
            first = min(first, cmd.dictionary_page_offset)
        sources.append(
            SourceChunk(
                data[first : first + cmd.total_compressed_size],
                first,
                cmd,
                group.num_rows,
                start,
                stop,
                cmd.dictionary_page_offset is not None and cmd.dictionary_page_offset > 0,
                f"column {column} of row group {index}",
            )
        )
    return tuple(sources)


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("writer", ["streamwrite", "pyarrow"])
def test_record_ranges_encode_as_their_arrow_records(version: str, writer: str) -> None:
    data = _nested_table(1500)
    options = make_write_options(
        [c.path_in_schema for c in arrow_to_parquet(data.schema).columns],
        data_page_version=version,
        data_page_size=1024,
    )
    if writer == "pyarrow":
        sink = io.BytesIO()
        pq.write_table(
            data, sink, row_group_size=500, data_page_version=version, data_page_size=1024
        )
        file_bytes = sink.getvalue()
    else:
        file_bytes = write_nested_file(data, options, 500)
    meta = _footer(file_bytes)
    ranges = [(0, 123, 500), (1, 0, 500), (2, 0, 377)]  # records 123..1377
    expected_rows = data.slice(123, 1254)
    nested = build_schema(data.schema)
    expected = encode_leaves(nested, expected_rows, options)
    schema = arrow_to_parquet(data.schema)
    assert [c.name for c in schema.columns] == [c.name for c in nested.columns]
    for column, spec in enumerate(schema.columns):
        settings = replace(
            chunk_settings(spec, options),
            path_in_schema=spec.path_in_schema,
            max_repetition_level=spec.max_repetition_level,
        )
        job = MergeChunkJob(settings, _sources(file_bytes, meta, column, ranges), True, 1 << 26)
        got = run_job(pickle.loads(pickle.dumps(job)))
        assert got.meta_data.num_values == expected[column].meta_data.num_values, spec.name
        assert got.data == expected[column].data, spec.name
        assert got.meta_data == expected[column].meta_data, spec.name
        assert got.offset_index == expected[column].offset_index, spec.name
        assert got.column_index == expected[column].column_index, spec.name
