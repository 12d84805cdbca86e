"""The encoding planner: a column's encoding decided once per writer, followed by later chunks,
dropped on drift or on schedule; files stay readable and equal to their input."""

from __future__ import annotations

import dataclasses
import io
import pickle

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.encode import EncodingPlanner, encode_row_group, row_group_jobs
from streamwrite.errors import ConfigError
from streamwrite.format.chunk import EncodedChunk, EncodingDecision
from streamwrite.format.enums import Encoding, PageType
from streamwrite.options import make_write_options
from streamwrite.testing import reference_table
from workers.choose import CARDINALITY_CHECK_EVERY
from workers.chunk import ChunkSettings
from workers.jobs import run_job


def _setup(table: pa.Table, **options: object) -> tuple[object, object]:
    schema = arrow_to_parquet(table.schema)
    return schema, make_write_options(table.schema.names, caller="test", **options)


def _has_dictionary_page(chunk: EncodedChunk) -> bool:
    stats = chunk.meta_data.encoding_stats or []
    return any(s.page_type == PageType.DICTIONARY_PAGE for s in stats)


def test_the_first_chunk_decides_and_later_chunks_follow_without_analysis() -> None:
    table = reference_table(50_000)
    schema, options = _setup(table)
    planner = EncodingPlanner()
    first = encode_row_group(table.slice(0, 10_000), schema, options, planner=planner)
    assert all(c.observed is not None and c.observed.analysed for c in first)
    for name, chunk in zip(table.schema.names, first, strict=True):
        assert chunk.observed is not None
        assert planner.decision((name,)) == chunk.observed.decision
    assert planner.decision(("order_id",)) == EncodingDecision(False, Encoding.PLAIN)
    assert planner.decision(("ts",)) == EncodingDecision(False, Encoding.DELTA_BINARY_PACKED)
    assert planner.decision(("symbol",)) == EncodingDecision(True, Encoding.PLAIN)
    jobs = row_group_jobs(table.slice(10_000, 10_000), schema, options, planner=planner)
    assert [job.settings.decision for job in jobs] == [
        planner.decision((name,)) for name in table.schema.names
    ]
    later = [run_job(job) for job in jobs]
    assert all(c.observed is not None and not c.observed.analysed for c in later)
    # Jobs with decisions still pickle (process pools) and encode the same bytes there.
    again = [run_job(pickle.loads(pickle.dumps(job))) for job in jobs]
    assert [c.data for c in again] == [c.data for c in later]


def test_a_column_that_turns_repetitive_drifts_and_is_decided_again() -> None:
    rng = np.random.default_rng(5)
    unique = pa.table({"s": [f"id-{i:012d}" for i in rng.permutation(10_000)]})
    repetitive = pa.table({"s": [f"v{i % 20}" for i in range(10_000)]})
    schema, options = _setup(unique)
    planner = EncodingPlanner()
    (chunk,) = encode_row_group(unique, schema, options, planner=planner)
    assert planner.decision(("s",)) == EncodingDecision(False, Encoding.PLAIN)
    (chunk,) = encode_row_group(repetitive, schema, options, planner=planner)
    assert chunk.observed is not None and chunk.observed.drift
    assert not _has_dictionary_page(chunk)  # the chunk follows the decision it was given
    assert planner.decision(("s",)) is None and planner.num_drifted == 1
    (chunk,) = encode_row_group(repetitive, schema, options, planner=planner)
    assert chunk.observed is not None and chunk.observed.analysed
    assert _has_dictionary_page(chunk)
    assert planner.decision(("s",)) == EncodingDecision(True, Encoding.PLAIN)


def replace_check(settings: ChunkSettings) -> ChunkSettings:
    return dataclasses.replace(settings, check_cardinality=False)


def test_the_cardinality_of_a_column_without_dictionary_is_checked_every_few_chunks() -> None:
    rng = np.random.default_rng(6)
    unique = pa.table({"s": [f"id-{i:012d}" for i in rng.permutation(10_000)]})
    repetitive = pa.table({"s": [f"v{i % 20}" for i in range(10_000)]})
    schema, options = _setup(unique)
    planner = EncodingPlanner()
    encode_row_group(unique, schema, options, planner=planner)
    checks = []
    for _ in range(2 * CARDINALITY_CHECK_EVERY):
        (job,) = row_group_jobs(unique, schema, options, planner=planner)
        checks.append(job.settings.check_cardinality)
        planner.observe([run_job(job)])
    assert checks == ([True] + [False] * (CARDINALITY_CHECK_EVERY - 1)) * 2
    # An unchecked chunk follows the decision without seeing the repeats; the next check does.
    (job,) = row_group_jobs(repetitive, schema, options, planner=planner)
    assert job.settings.check_cardinality  # 2 * CARDINALITY_CHECK_EVERY chunks followed
    unchecked = run_job(dataclasses.replace(job, settings=replace_check(job.settings)))
    assert unchecked.observed is not None and not unchecked.observed.drift
    checked = run_job(job)
    assert checked.observed is not None and checked.observed.drift
    planner.observe([checked])
    assert planner.decision(("s",)) is None and planner.num_drifted == 1


def test_a_dictionary_that_stops_paying_off_is_dropped_in_that_chunk() -> None:
    low = pa.table({"s": [f"v{i % 20}" for i in range(10_000)]})
    high = pa.table({"s": [f"id-{i:012d}" for i in range(10_000)]})
    schema, options = _setup(low)
    planner = EncodingPlanner()
    encode_row_group(low, schema, options, planner=planner)
    assert planner.decision(("s",)) == EncodingDecision(True, Encoding.PLAIN)
    (chunk,) = encode_row_group(high, schema, options, planner=planner)
    assert chunk.observed is not None and chunk.observed.drift
    assert chunk.observed.num_distinct == 10_000
    assert not _has_dictionary_page(chunk)  # judged on its real distinct count
    assert planner.decision(("s",)) is None


def test_a_dictionary_that_overflows_its_page_limit_is_drift() -> None:
    low = pa.table({"s": [f"value-{i % 400:05d}" for i in range(10_000)]})
    schema, options = _setup(low, dictionary_pagesize_limit=2_000)
    planner = EncodingPlanner()
    encode_row_group(low.slice(0, 1_000), schema, options, planner=planner)
    assert planner.decision(("s",)) == EncodingDecision(True, Encoding.PLAIN)
    (chunk,) = encode_row_group(low, schema, options, planner=planner)
    assert chunk.observed is not None and chunk.observed.drift
    assert _has_dictionary_page(chunk)  # the dictionary part is kept, the rest falls back


def test_sorted_integers_that_decrease_drift_from_delta() -> None:
    rising = pa.table({"t": pa.array(np.arange(10_000) * 3, pa.int64())})
    falling = pa.table({"t": pa.array(np.arange(10_000)[::-1] * 3, pa.int64())})
    schema, options = _setup(rising)
    planner = EncodingPlanner()
    encode_row_group(rising, schema, options, planner=planner)
    assert planner.decision(("t",)) == EncodingDecision(False, Encoding.DELTA_BINARY_PACKED)
    (chunk,) = encode_row_group(falling, schema, options, planner=planner)
    assert chunk.observed is not None and chunk.observed.drift
    assert planner.decision(("t",)) is None


def test_decisions_are_re_made_on_schedule() -> None:
    table = reference_table(60_000)
    schema, options = _setup(table)
    planner = EncodingPlanner(resample_every=2)
    analysed = []
    for start in range(0, 60_000, 10_000):
        chunks = encode_row_group(table.slice(start, 10_000), schema, options, planner=planner)
        analysed.append(all(c.observed is not None and c.observed.analysed for c in chunks))
    assert analysed == [True, False, False, True, False, False]
    with pytest.raises(ConfigError, match="resample_every must be at least 1"):
        EncodingPlanner(resample_every=0)


def test_chunks_without_observations_are_ignored() -> None:
    table = reference_table(1_000)
    schema, options = _setup(table)
    planner = EncodingPlanner()
    chunks = encode_row_group(table, schema, options)
    planner.observe([EncodedChunk(c.data, c.meta_data, None, None, None) for c in chunks])
    assert all(planner.decision((name,)) is None for name in table.schema.names)


def test_a_writer_with_drifting_data_writes_files_every_reader_reads_back() -> None:
    # Unique ids, then repeats, then unique again; numbers that stop being sorted.
    parts = []
    for k in range(6):
        ids = [f"id-{k}-{i:08d}" for i in range(5_000)] if k not in (1, 2) else ["same"] * 5_000
        n = np.arange(5_000, dtype=np.int64)
        parts.append(
            pa.table(
                {
                    "s": ids,
                    "n": pa.array(n if k < 3 else n[::-1], pa.int64()),
                    "f": pa.array(np.round(np.random.default_rng(k).normal(size=5_000), k)),
                }
            )
        )
    sink = io.BytesIO()
    with streamwrite.ParquetWriter(sink, parts[0].schema) as writer:
        for part in parts:
            writer.write_table(part)
    data = sink.getvalue()
    expected = pa.concat_tables(parts)
    assert pq.read_table(pa.BufferReader(data), page_checksum_verification=True).equals(expected)
    assert streamwrite.read_table(data).equals(expected)
    md = pq.ParquetFile(pa.BufferReader(data)).metadata
    assert "RLE_DICTIONARY" not in md.row_group(0).column(0).encodings
    assert "RLE_DICTIONARY" not in md.row_group(1).column(0).encodings  # follows, drifts
    assert "RLE_DICTIONARY" in md.row_group(2).column(0).encodings  # decided again
    assert "RLE_DICTIONARY" not in md.row_group(3).column(0).encodings  # dropped at once


def test_the_first_row_group_is_encoded_as_without_a_planner() -> None:
    table = reference_table(10_000)
    schema, options = _setup(table)
    alone = encode_row_group(table, schema, options)
    planned = encode_row_group(table, schema, options, planner=EncodingPlanner())
    assert [c.data for c in planned] == [c.data for c in alone]
    assert [c.meta_data for c in planned] == [c.meta_data for c in alone]
