"""Spark writes on the executors (``streamwrite.spark.write``, the sink's ``mode="executors"``):
every row exactly once under task retries, duplicate attempts, driver replays and a driver
killed between staging and publish; staging cleaned; the table readable by streamwrite,
pyarrow and DuckDB after each.

The source is a directory of Parquet files (one Spark task each) whose rows fall over three
days, so every task writes segments into several day partitions. ``value`` is a unique row key.
The session retries a failed task once (``conftest.MASTER``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import streamwrite
from streamwrite.errors import StaleBatchError
from streamwrite.format.txn import TXN_FILE, decode_txn
from streamwrite.spark import foreach_batch_sink, table_schema_for, write
from streamwrite.spark.writing import _arrow_schema, stage_rows
from streamwrite.table.staged import STAGING_DIR
from tests.spark._support import by_value, run_file_stream, ticks, write_source_files

NUM_FILES = 4
ROWS_PER_FILE = 2_500
ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("_executor_write_child.py")
OPTIONS: dict[str, Any] = {"timestamp": "ts", "partition_by": "day"}


def _record(path: Path) -> Any:
    return decode_txn((path / TXN_FILE).read_bytes())


def _engines(path: Path) -> dict[str, list[int]]:
    """pyarrow's and DuckDB's ``[rows, sum(value), distinct values]`` (in a subprocess)."""
    out = subprocess.run(
        [sys.executable, str(CHILD), "read", str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=300,
    )
    found: dict[str, list[int]] = json.loads(out.stdout)
    return found


def assert_exactly_once(path: Path, expected: pa.Table) -> None:
    """``path`` holds exactly ``expected``'s rows, for streamwrite, pyarrow and DuckDB, and no
    staging is left."""
    assert by_value(streamwrite.read_table(path)).equals(by_value(expected))
    assert not (path / STAGING_DIR).exists()
    values = expected.column("value")
    want = [len(values), pc.sum(values).as_py(), len(values)]
    assert _engines(path) == {"pyarrow": want, "duckdb": want}


def _segments(path: Path) -> dict[str, int]:
    return {p: len(s) for p, s in _record(path).partitions.items()}


def test_write_publishes_every_task_once_and_skips_a_replay(spark: Any, tmp_path: Path) -> None:
    source = write_source_files(tmp_path / "source", NUM_FILES, ROWS_PER_FILE)
    df = spark.read.parquet(str(tmp_path / "source"))
    path = tmp_path / "table"

    result = write(df, path, app_id="job", batch_id=0, **OPTIONS)

    assert (result.num_rows, result.skipped) == (source.num_rows, False)
    record = _record(path)
    assert (record.version, record.applied) == (result.version, {"job": 0})
    # one task's rows land in several day partitions: each partition has a segment per task
    assert sorted(record.partitions) == [
        "ts_day=2026-11-22",
        "ts_day=2026-11-23",
        "ts_day=2026-11-24",
    ]
    assert result.num_segments == sum(_segments(path).values()) > len(record.partitions)
    assert all(n > 1 for n in _segments(path).values())
    assert str(streamwrite.read_table(path).schema.field("ts").type) == "timestamp[us, tz=UTC]"
    assert_exactly_once(path, source)

    replay = write(df, path, app_id="job", batch_id=0)
    assert (replay.num_rows, replay.skipped, replay.version) == (0, True, result.version)
    assert _record(path).version == result.version
    assert_exactly_once(path, source)

    more = ticks(1_000, source.num_rows, seed=9)
    second = write(spark.createDataFrame(more), path, app_id="job", batch_id=1)
    assert second.num_rows == more.num_rows
    with pytest.raises(StaleBatchError, match="below the last committed batch id 1"):
        write(df, path, app_id="job", batch_id=0)
    skipped = write(df, path, app_id="job", batch_id=0, on_stale="skip")
    assert skipped.skipped
    assert_exactly_once(path, pa.concat_tables([source, more]))


def test_a_task_failing_once_after_it_staged_files_is_retried_once(
    spark: Any, tmp_path: Path
) -> None:
    """Task 0's first attempt stages (and commits) some row groups, then fails: Spark retries
    it; the failed attempt's files are never published and are deleted."""
    source = write_source_files(tmp_path / "source", NUM_FILES, ROWS_PER_FILE)
    path = tmp_path / "table"
    staging = str(path / STAGING_DIR)
    seen = tmp_path / "attempt0.json"

    def fail_first_attempt(batches: Any) -> Any:
        from pyspark import TaskContext

        context = TaskContext.get()
        failing = context.partitionId() == 0 and context.attemptNumber() == 0
        for k, batch in enumerate(batches):
            yield batch
            if failing and k == 2:
                # wait until this attempt has committed staged bytes downstream, then fail
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    sizes = {
                        str(Path(root).relative_to(staging)): os.path.getsize(
                            os.path.join(root, "data.parquet")
                        )
                        for root, _, files in os.walk(staging)
                        if "data.parquet" in files
                    }
                    if any(size > 1_000 for size in sizes.values()):
                        break
                    time.sleep(0.05)
                seen.write_text(json.dumps(sizes))
                raise RuntimeError("injected failure of the first attempt")

    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "200")
    try:
        df = spark.read.parquet(str(tmp_path / "source"))
        df = df.mapInArrow(fail_first_attempt, df.schema)
        result = write(
            df, path, app_id="retry", batch_id=7, row_group_size=300, stage_commit_size=1, **OPTIONS
        )
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")

    failed = json.loads(seen.read_text())
    assert any(size > 1_000 for size in failed.values()), failed  # it had staged rows
    assert result.num_rows == source.num_rows
    assert _record(path).applied == {"retry": 7}
    assert_exactly_once(path, source)
    for attempt in failed:
        assert not (path / STAGING_DIR / attempt).exists()


def test_a_duplicate_attempt_is_never_published(spark: Any, tmp_path: Path) -> None:
    """Every task staged twice (two successful attempts, as a speculative duplicate does);
    the driver adopts one report per task: the other attempt's files are never published."""
    source = write_source_files(tmp_path / "source", NUM_FILES, ROWS_PER_FILE)
    df = spark.read.parquet(str(tmp_path / "source"))
    path = tmp_path / "table"

    async def main() -> None:
        table = await streamwrite.open_table(path, table_schema_for(_arrow_schema(df)), **OPTIONS)
        try:
            staged = table.stage("dup", 0)
            first = stage_rows(df, staged)
            second = stage_rows(df, staged)
            assert {s.path for s in first}.isdisjoint(s.path for s in second)
            assert all((path / s.path / "data.parquet").exists() for s in first + second)
            commit = await table.adopt_staged(first, app_id="dup", batch_id=0)
            assert commit.num_rows == source.num_rows
            assert all(not (path / s.path).exists() for s in second)
            again = await table.adopt_staged(second, app_id="dup", batch_id=0)
            assert again.skipped  # the losing attempt's report, however late: never published
        finally:
            await table.close()

    anyio.run(main)
    assert_exactly_once(path, source)


def _wait_for(proc: subprocess.Popen[str], line: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        got = proc.stdout.readline()
        if not got:
            raise AssertionError(f"The child exited before printing {line!r}.")
        if got.strip() == line:
            return
    raise AssertionError(f"The child did not print {line!r} within {timeout} s.")


def test_a_driver_killed_between_staging_and_publish_then_replayed(
    spark: Any, tmp_path: Path
) -> None:
    """A driver process (its own Spark) is SIGKILLed after staging a batch (table A) and after
    moving the staged segments into the table but before the ``_txn`` publish (table B).
    Replaying the batch id with ``write`` publishes every row exactly once."""
    source = write_source_files(tmp_path / "source", NUM_FILES, ROWS_PER_FILE)
    staged_path, moved_path = tmp_path / "staged", tmp_path / "moved"
    args = ["crash", str(tmp_path / "source"), str(staged_path), str(moved_path)]
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
    )
    try:
        _wait_for(proc, "staged")
        _wait_for(proc, "moved")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()

    assert list((staged_path / STAGING_DIR).rglob("data.parquet"))  # staged, not published
    assert _record(staged_path).partitions == {}
    moved = [p for p in moved_path.glob("ts_day=*/seg-*") if (p / "data.parquet").exists()]
    assert moved and _record(moved_path).partitions == {}  # moved in, never listed

    df = spark.read.parquet(str(tmp_path / "source"))
    for path in (staged_path, moved_path):
        result = write(df, path, app_id="crash", batch_id=0)
        assert (result.num_rows, result.skipped) == (source.num_rows, False)
        assert_exactly_once(path, source)
        assert write(df, path, app_id="crash", batch_id=0).skipped


def test_the_sink_in_executors_mode_streams_exactly_once(spark: Any, tmp_path: Path) -> None:
    source = write_source_files(tmp_path / "source", NUM_FILES, ROWS_PER_FILE)
    path = tmp_path / "table"
    sink = foreach_batch_sink(path, mode="executors", app_id="stream", **OPTIONS)
    run_file_stream(spark, tmp_path / "source", tmp_path / "checkpoint", sink)

    assert _record(path).applied == {"stream": NUM_FILES - 1}
    assert_exactly_once(path, source)
    version = _record(path).version
    sink(spark.read.parquet(str(tmp_path / "source")), NUM_FILES - 1)  # Spark's replay
    assert _record(path).version == version
    assert_exactly_once(path, source)
