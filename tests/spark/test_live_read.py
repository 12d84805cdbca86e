"""Spark reads a table while the Python API appends to it, through committed snapshots.

Spark reads a Parquet file from its end, so ``spark.read.parquet`` on a bare live
``data.parquet`` can land in an append (DESIGN section 6, "Readers and the append window").
Each read here goes through a pinned snapshot (``read_snapshot``), two ways:

* prefix copies: each partition's committed prefix of ``data.parquet`` (a complete Parquet file
  by the live-file protocol) is copied to a scratch file and Spark's own Parquet reader reads
  those;
* ``read_table_df(via="arrow")``: streamwrite reads the snapshot, Spark gets the Arrow table.

Every read must hold exactly the rows of one committed version: its row count among the
committed totals and its values those of the batches committed up to it.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

import anyio

from streamwrite.spark import read_table_df
from streamwrite.table.api import TableSnapshot, open_table, read_snapshot
from tests.spark._support import ticks

ROWS_PER_BATCH = 2_000
MIN_READS = 6  # reads of each kind that must overlap the appends
MAX_BATCHES = 2_000  # the writer stops once the reads are done, long before this
PAUSE_SECONDS = 0.02  # between commits, so that many commits overlap each Spark read


def _copy_committed_prefixes(snapshot: TableSnapshot, scratch: Path) -> list[str]:
    """Copy each partition's committed prefix to ``scratch``; returns the copies' paths."""
    paths = []
    for name, size in snapshot.files:
        target = scratch / f"{name.replace('/', '_')}.parquet"
        with open(snapshot.path / name / "data.parquet", "rb") as src, open(target, "wb") as dst:
            shutil.copyfileobj(_Limited(src, size), dst)
        paths.append(str(target))
    return paths


class _Limited:
    """A file object that ends after ``size`` bytes."""

    def __init__(self, f: Any, size: int) -> None:
        self.f, self.left = f, size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data: bytes = self.f.read(n)
        self.left -= len(data)
        return data


def test_spark_reads_only_committed_snapshots_during_appends(spark: Any, tmp_path: Path) -> None:
    table_path = tmp_path / "table"
    committed = threading.Event()
    stop = threading.Event()
    totals = [0]
    errors: list[BaseException] = []

    async def append_all() -> None:
        table = await open_table(table_path, ticks(1, 0).schema, timestamp="ts", partition_by="day")
        try:
            for k in range(MAX_BATCHES):
                if stop.is_set():
                    break
                batch = ticks(ROWS_PER_BATCH, k * ROWS_PER_BATCH, seed=k)
                commit = await table.append(batch, app_id="writer", batch_id=k)
                assert commit is not None and not commit.skipped
                totals.append(totals[-1] + batch.num_rows)
                committed.set()
                await anyio.sleep(PAUSE_SECONDS)  # pacing, not a wait: many commits per read
        finally:
            await table.close()

    def writer() -> None:
        try:
            anyio.run(append_all)
        except BaseException as exc:
            errors.append(exc)
            committed.set()

    thread = threading.Thread(target=writer)
    thread.start()
    reads: list[tuple[str, list[int]]] = []
    try:
        assert committed.wait(60)
        scratch = tmp_path / "scratch"
        while (
            thread.is_alive()
            and min(sum(kind == k for kind, _ in reads) for k in ("prefix", "arrow")) < MIN_READS
        ):
            snapshot = read_snapshot(table_path)
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir()
            files = _copy_committed_prefixes(snapshot, scratch)
            df = spark.read.parquet(*files).select("value")
            reads.append(("prefix", df.toArrow().column("value").to_pylist()))
            df = read_table_df(spark, table_path, via="arrow").select("value")
            reads.append(("arrow", df.toArrow().column("value").to_pylist()))
    finally:
        stop.set()
        thread.join(120)
    assert not errors, errors
    assert not thread.is_alive()

    committed_totals = set(totals)
    counts = [len(values) for _, values in reads]
    assert len(reads) >= 2 * MIN_READS
    assert len(set(counts)) >= 2, f"every read saw the same version: {counts}"
    for kind, values in reads:
        assert len(values) in committed_totals, (kind, len(values), totals)
        # batch k holds values [k * ROWS_PER_BATCH, (k + 1) * ROWS_PER_BATCH): a committed
        # version of n rows holds exactly the values 0..n-1
        assert sorted(values) == list(range(len(values))), kind
    assert stop.is_set() and len(totals) - 1 < MAX_BATCHES  # the reads overlapped the appends
    final = read_table_df(spark, table_path).toArrow()  # bare files: no append in flight now
    assert sorted(final.column("value").to_pylist()) == list(range(totals[-1]))
