"""Compaction merges dictionary-encoded source chunks without hashing their values again:
``gather_dictionary`` equals ``BinaryValues.take``, ``merge_dictionaries`` equals
``dictionary_encode`` of the concatenated values, and a MergeChunkJob over sources written by
pyarrow and by streamwrite (dictionary, PLAIN after a dictionary overflow, mixed) encodes
exactly as the same rows do from Arrow."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streamwrite
from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.encode import chunk_settings, row_group_jobs
from streamwrite.format.enums import Type
from streamwrite.options import make_write_options
from streamwrite.reader.file import ParquetFile
from workers.encoding.dictionary import dictionary_encode
from workers.jobs import MergeChunkJob, run_job
from workers.value_ops import gather_dictionary, merge_dictionaries
from workers.values import BinaryValues

EXAMPLES = int(os.environ.get("STREAMWRITE_MERGE_DICT_EXAMPLES", "150"))

words = st.lists(st.binary(max_size=12), min_size=1, max_size=20)


@given(words, st.lists(st.integers(0, 10_000), max_size=200), st.integers(0, 3))
@settings(max_examples=EXAMPLES, deadline=None)
def test_gather_dictionary_equals_take(entries: list[bytes], picks: list[int], skip: int) -> None:
    dictionary = BinaryValues.from_pylist([b"pad"] * skip + entries)[skip:]  # offsets[0] > 0
    indices = np.array([p % len(entries) for p in picks], dtype=np.int32)
    got = gather_dictionary(dictionary, indices)
    want = dictionary.take(indices)
    assert got.to_pylist() == want.to_pylist() == [entries[i] for i in indices]
    assert np.array_equal(got.offsets, want.offsets)


def test_gather_dictionary_of_fixed_and_spread_lengths() -> None:
    rng = np.random.default_rng(7)
    for entries in (
        [f"SYM{i:03d}".encode() for i in range(500)],  # one length: a matrix gather
        [b"", b"a", b"bcd", b"xyzzy"],  # close lengths, one empty: padded gather
        [b"x" * 1000, b"y"],  # far apart: the per-byte take
    ):
        dictionary = BinaryValues.from_pylist(entries)
        indices = rng.integers(0, len(entries), 5000).astype(np.int32)
        assert gather_dictionary(dictionary, indices).to_pylist() == [entries[i] for i in indices]
    numbers = np.array([5, -3, 9], dtype=np.int64)
    assert gather_dictionary(numbers, np.array([2, 0, 0, 1])).tolist() == [9, 5, 5, -3]


chunks = st.lists(
    st.tuples(
        st.lists(st.binary(max_size=4), min_size=1, max_size=8, unique=True),
        st.lists(st.integers(0, 100), max_size=30),
    ),
    min_size=1,
    max_size=5,
)


@given(chunks)
@settings(max_examples=EXAMPLES, deadline=None)
def test_merge_dictionaries_equals_dictionary_encode(parts: list[Any]) -> None:
    """Any source dictionaries (any order, unused entries, shared entries) merge into the
    dictionary and indices ``dictionary_encode`` gives the concatenated values."""
    sources = []
    values: list[bytes] = []
    for entries, picks in parts:
        indices = np.array([p % len(entries) for p in picks], dtype=np.int32)
        sources.append((BinaryValues.from_pylist(entries), indices))
        values += [entries[i] for i in indices]
    distinct, indices = merge_dictionaries(sources, Type.BYTE_ARRAY, None)
    want_distinct, want_indices = dictionary_encode(
        BinaryValues.from_pylist(values), Type.BYTE_ARRAY
    )
    assert distinct.to_pylist() == want_distinct.to_pylist()
    assert indices.dtype == want_indices.dtype
    assert indices.tolist() == want_indices.tolist()


def test_merge_dictionaries_of_integers() -> None:
    parts = [
        (np.array([7, 3, 9], dtype=np.int64), np.array([1, 1, 0], dtype=np.int32)),  # 9 unused
        (np.array([9, 7], dtype=np.int64), np.array([0, 1, 0], dtype=np.int32)),
    ]
    distinct, indices = merge_dictionaries(parts, Type.INT64, None)
    assert distinct.tolist() == [3, 7, 9]
    assert indices.tolist() == [0, 0, 1, 2, 1, 2]


def _sources(path: Path, spec: Any, ranges: list[tuple[int, int, int]]) -> tuple[Any, ...]:
    with ParquetFile(path) as pf:
        return tuple(pf._source_chunk(i, spec, start, stop) for i, start, stop in ranges)


def _table(num_rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    symbols = [f"S{i}" * (1 + i % 3) for i in range(300)]
    return pa.table(
        {
            "symbol": pa.array(
                [symbols[i] for i in rng.integers(0, 300, num_rows)],
                mask=rng.random(num_rows) < 0.1,
            ),
            "qty": pa.array(rng.integers(0, 40, num_rows), pa.int64()),
            "code": pa.array(rng.integers(-9, 9, num_rows).astype(np.int32)),
            "word": pa.array([f"w{v}" for v in rng.integers(0, 4000, num_rows)]),
            # 200 entries of 30 bytes: a 2 KiB dictionary page limit overflows mid-chunk
            "long": pa.array([f"{v:030d}" for v in rng.integers(0, 200, num_rows)]),
        }
    )


@pytest.mark.parametrize("writer", ["streamwrite", "pyarrow", "overflow"])
def test_merge_of_dictionary_sources_encodes_as_arrow_rows(tmp_path: Path, writer: str) -> None:
    """Row ranges of dictionary-encoded chunks (and, with ``overflow``, chunks whose
    dictionary filled up and continued PLAIN: the values path) merge byte-exact."""
    data = _table(6000, seed=11)
    path = tmp_path / "src.parquet"
    if writer == "pyarrow":
        pq.write_table(data, path, row_group_size=2000, compression="zstd")
    else:
        limit = {"dictionary_pagesize_limit": 2048} if writer == "overflow" else {}
        streamwrite.write_table(data, path, row_group_size=2000, **limit)
    if writer == "overflow":  # the sources' "long" chunks are dictionary pages, then PLAIN
        with ParquetFile(path) as pf:
            stats = pf.thrift_metadata.row_groups[0].columns[4].meta_data.encoding_stats
            assert {(s.page_type, s.encoding) for s in stats or []} >= {(0, 0), (0, 8)}
    ranges = [(0, 300, 2000), (1, 0, 2000), (2, 0, 1500)]
    expected_rows = data.slice(300, 5200)
    write_options = make_write_options(data.schema.names)
    schema = arrow_to_parquet(data.schema)
    expected = [run_job(job) for job in row_group_jobs(expected_rows, schema, write_options)]
    for column, spec in enumerate(schema.columns):
        job = MergeChunkJob(
            chunk_settings(spec, write_options), _sources(path, spec, ranges), True, 1 << 28
        )
        got = run_job(job)
        assert got.data == expected[column].data, spec.name
        assert got.meta_data == expected[column].meta_data, spec.name
        assert got.column_index == expected[column].column_index, spec.name
        assert got.offset_index == expected[column].offset_index, spec.name
        assert got.bloom_filter == expected[column].bloom_filter, spec.name
    buf = io.BytesIO()
    streamwrite.write_table(expected_rows, buf)
    assert pq.read_table(pa.BufferReader(buf.getvalue())).equals(expected_rows)
