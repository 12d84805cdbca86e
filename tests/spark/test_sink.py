"""foreachBatch into a table: what Spark sent is what streamwrite and Spark read back, once.

One local SparkSession for the run (``conftest.py``); the source is a directory of Parquet
files read one file per micro-batch with ``trigger(availableNow=True)``, so the batches are
deterministic.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import streamwrite
from streamwrite.errors import ConfigError, StaleBatchError
from streamwrite.format.txn import TXN_FILE, decode_txn
from streamwrite.spark import default_app_id, foreach_batch_sink, read_table_df
from streamwrite.table.api import read_snapshot
from tests.spark._support import by_value, run_file_stream, ticks, write_source_files

NUM_FILES = 4
ROWS_PER_FILE = 3_000


def _committed_files(table_path: Path) -> list[str]:
    return [str(table_path / name / "data.parquet") for name, _ in read_snapshot(table_path).files]


def test_stream_into_table_reads_back_what_spark_sent(spark: Any, tmp_path: Path) -> None:
    source = write_source_files(tmp_path / "source", NUM_FILES, ROWS_PER_FILE)
    table_path = tmp_path / "table"
    sink = foreach_batch_sink(table_path, timestamp="ts", partition_by="day")
    sent: list[pa.Table] = []
    batch_ids: list[int] = []

    def batch_fn(df: Any, batch_id: int) -> None:
        df = df.cache()
        sent.append(df.toArrow())
        batch_ids.append(batch_id)
        sink(df, batch_id)
        df.unpersist()

    run_file_stream(spark, tmp_path / "source", tmp_path / "checkpoint", batch_fn)

    assert batch_ids == list(range(NUM_FILES))
    ts_type = sent[0].schema.field("ts").type
    assert ts_type.unit == "us" and ts_type.tz is not None  # zoned; the session zone is not UTC
    expected = by_value(pa.concat_tables(sent))
    assert expected.equals(by_value(source))

    ours = streamwrite.read_table(table_path)
    assert str(ours.schema.field("ts").type) == "timestamp[us, tz=UTC]"
    assert by_value(ours).equals(expected)

    spark_read = spark.read.parquet(*_committed_files(table_path)).toArrow()
    assert by_value(spark_read).equals(expected)
    assert by_value(read_table_df(spark, table_path).toArrow()).equals(expected)
    assert by_value(read_table_df(spark, table_path, via="arrow").toArrow()).equals(expected)

    record = decode_txn((table_path / TXN_FILE).read_bytes())
    assert record.version == NUM_FILES  # version 0 is the creation, then one commit per batch
    assert record.applied == {default_app_id(table_path): NUM_FILES - 1}
    days = {str(d) for d in np.unique(source.column("ts").to_numpy().astype("datetime64[D]"))}
    assert set(record.partitions) == {f"ts_day={day}" for day in days}
    assert days == {"2026-11-22", "2026-11-23", "2026-11-24"}


def test_rerunning_a_batch_id_adds_nothing(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="streamwrite.spark")
    table_path = tmp_path / "table"
    sink = foreach_batch_sink(table_path, app_id="job-1", timestamp="ts", partition_by="day")
    rows = ticks(500, 0)
    df = spark.createDataFrame(rows)

    def version() -> int:
        return read_snapshot(table_path).version

    sink(df, 5)
    assert (version(), streamwrite.read_table(table_path).num_rows) == (1, 500)
    sink(df, 5)  # a replay
    with pytest.raises(StaleBatchError, match="below the last committed batch id 5"):
        sink(df, 3)  # a lower id: not a replay (a new checkpoint under the same app id?)
    assert (version(), streamwrite.read_table(table_path).num_rows) == (1, 500)
    assert "skipped=True" in caplog.text
    caplog.set_level(logging.WARNING, logger="streamwrite.table")
    skipping = foreach_batch_sink(table_path, app_id="job-1", on_stale="skip")
    skipping(df, 3)
    assert (version(), streamwrite.read_table(table_path).num_rows) == (1, 500)
    assert "below the last committed batch id 5" in caplog.text
    with pytest.raises(ConfigError, match="on_stale"):
        foreach_batch_sink(table_path, app_id="job-1", on_stale="drop")

    sink(df.limit(0), 6)  # an empty batch is a no-op: nothing committed, nothing recorded
    assert version() == 1
    assert decode_txn((table_path / TXN_FILE).read_bytes()).applied == {"job-1": 5}

    more = spark.createDataFrame(ticks(200, 500, seed=1))
    sink(more, 6)
    other_app = foreach_batch_sink(table_path, app_id="job-2")  # its own batch ids
    other_app(df, 0)
    assert version() == 3
    expected = by_value(pa.concat_tables([rows, ticks(200, 500, seed=1), rows]))
    assert by_value(streamwrite.read_table(table_path)).equals(expected)


class _CrashError(Exception):
    pass


def test_restart_from_checkpoint_skips_the_replayed_batch(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Run 1 dies after committing batch 1, run 2 dies before committing batch 2 (Spark has
    recorded neither batch as done), run 3 finishes: every row lands exactly once."""
    caplog.set_level(logging.INFO, logger="streamwrite.spark")
    source = write_source_files(tmp_path / "source", NUM_FILES, 1_000)
    table_path = tmp_path / "table"
    sink = foreach_batch_sink(table_path, timestamp="ts", partition_by="day")
    calls: list[tuple[int, int]] = []

    def runner(run: int, crash_after: int | None, crash_before: int | None) -> Any:
        def batch_fn(df: Any, batch_id: int) -> None:
            calls.append((run, batch_id))
            if batch_id == crash_before:
                raise _CrashError(f"run {run} dies before batch {batch_id}")
            sink(df, batch_id)
            if batch_id == crash_after:
                raise _CrashError(f"run {run} dies after batch {batch_id}")

        return batch_fn

    checkpoint = tmp_path / "checkpoint"
    for run, crash_after, crash_before in ((1, 1, None), (2, None, 2)):
        with pytest.raises(Exception, match="_CrashError"):
            run_file_stream(
                spark, tmp_path / "source", checkpoint, runner(run, crash_after, crash_before)
            )
    run_file_stream(spark, tmp_path / "source", checkpoint, runner(3, None, None))

    assert calls == [(1, 0), (1, 1), (2, 1), (2, 2), (3, 2), (3, 3)]
    assert "Batch 1 of app" in caplog.text and "skipped=True" in caplog.text
    ours = streamwrite.read_table(table_path)
    assert ours.num_rows == source.num_rows
    assert by_value(ours).equals(by_value(source))
    assert read_snapshot(table_path).version == NUM_FILES
