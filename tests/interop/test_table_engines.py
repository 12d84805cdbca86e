"""Third-party engines read a table directory as it is, with exactly the committed rows.

For tables partitioned by day, hour and month and an unpartitioned one, built by appends over
several partitions and segments (``segment_row_groups=2``), every form of
``tests/interop/read_table_dir.py`` (``pq.read_table(table)``, ``ds.dataset(table)`` with and
without ``partitioning="hive"``, DuckDB and polars ``**/*.parquet`` globs, DuckDB's
``*/*/data.parquet``) must return the rows
``streamwrite.read_table(table)`` returns (sorted by ``order_id``), plus at most the partition
column (``ts_day`` ...) holding each row's partition: after the appends, right after
``compact()`` (retired segments still on disk within the grace period), while compaction has
written its merged segment but not yet published it, and after reopening a table whose
compaction was interrupted between its ``_txn`` swap and the retiring of the old segments.
The engines run in a subprocess. Spark's form is in ``tests/spark/test_table_dir.py``.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import streamwrite
from streamwrite.compaction.policy import CompactionPolicy
from streamwrite.format.txn import TXN_FILE, UNPARTITIONED_COLUMN, decode_txn
from streamwrite.table.api import open_table
from streamwrite.testing import reference_table

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("read_table_dir.py")
HOUR_NS = 3600 * 10**9
START_NS = 1_795_305_600 * 10**9  # 2026-11-22T00:00:00Z
SPAN_NS = {"hour": 3 * HOUR_NS, "day": 3 * 24 * HOUR_NS, "month": 60 * 24 * HOUR_NS, None: 0}
FORMAT = {"hour": "%Y-%m-%dT%H", "day": "%Y-%m-%d", "month": "%Y-%m"}
LONG_GRACE = CompactionPolicy(grace_seconds=3600, min_small_row_groups=2, target_row_group_rows=200)
OPTIONS: dict[str, Any] = {
    "segment_row_groups": 2,
    "row_group_size": 50,
    "compaction": LONG_GRACE,
    "compaction_interval": None,
}
NUM_BATCHES = 6
BATCH_ROWS = 230
FORMS_WITH_PARTITION_COLUMN = {
    "pq.read_table(table)",
    "ds.dataset(table, partitioning='hive')",
    "duckdb read_parquet('table/**/*.parquet')",
    "duckdb read_parquet('table/*/*/data.parquet')",
    "pl.read_parquet('table/**/*.parquet', hive_partitioning=True)",
}


def _run(fn: Any, *args: Any) -> Any:
    return anyio.run(functools.partial(fn, *args))


def batch(k: int, partition_by: str | None) -> pa.Table:
    """Rows whose timestamps spread over three partitions (late rows included)."""
    rows = reference_table(BATCH_ROWS, seed=k, start_row=k * BATCH_ROWS)
    rng = np.random.default_rng(k)
    ts = START_NS + rng.integers(0, max(1, SPAN_NS[partition_by]), BATCH_ROWS)
    return rows.set_column(0, "ts", pa.array(ts, pa.timestamp("ns")))


async def build(directory: Path, partition_by: str | None) -> None:
    timestamp = "ts" if partition_by else None
    schema = batch(0, partition_by).schema
    table = await open_table(
        directory, schema, timestamp=timestamp, partition_by=partition_by, **OPTIONS
    )
    try:
        for k in range(NUM_BATCHES):
            await table.append(batch(k, partition_by), app_id="build", batch_id=k)
    finally:
        await table.close()


async def compact(directory: Path, hook: Any = None) -> list[Any]:
    table = await open_table(directory, **OPTIONS)
    try:
        return await table.compact(hook=hook)
    finally:
        await table.close()


def partition_column(partition_by: str | None) -> str:
    return UNPARTITIONED_COLUMN if partition_by is None else f"ts_{partition_by}"


def engine_reads(directory: Path, partition_by: str | None) -> dict[str, dict[str, Any]]:
    """Every form's result on ``directory`` (a subprocess), keyed by form."""
    expected = streamwrite.read_table(directory)
    column = partition_column(partition_by)
    args = [str(directory), str(directory.parent / f"{directory.name}.arrow"), "order_id"]
    if partition_by is None:  # the one partition directory sw_partition=all
        values = pa.array(["all"] * expected.num_rows, pa.string())
    else:
        values = pc.strftime(expected.column("ts"), format=FORMAT[partition_by])
    expected = expected.append_column(column, values)
    args.append(column)
    with pa.OSFile(args[1], "wb") as sink, pa.ipc.new_file(sink, expected.schema) as writer:
        writer.write_table(expected)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    return {line["form"]: line for line in lines}


def assert_exact(directory: Path, partition_by: str | None, where: str) -> None:
    results = engine_reads(directory, partition_by)
    assert len(results) == 7, f"{where}: a reader crashed: {sorted(results)}"
    failed = {form: r["problems"] for form, r in results.items() if r["problems"]}
    assert not failed, f"{where}: {failed}"
    # The engines understand the layout: the column is there.
    added = {form for form, r in results.items() if r["partition_column"]}
    assert added == FORMS_WITH_PARTITION_COLUMN, f"{where}: {added}"


@dataclass(frozen=True)
class Built:
    appended: Path
    compacted: Path


@pytest.fixture(scope="module", params=["day", "hour", "month", None])
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    partition_by = request.param
    root = tmp_path_factory.mktemp(f"engines-{partition_by}")
    _run(build, root / "appended", partition_by)
    shutil.copytree(root / "appended", root / "compacted")
    results = _run(compact, root / "compacted")
    assert results, "nothing was compacted"
    return partition_by, Built(root / "appended", root / "compacted")


def test_the_table_has_what_the_test_means(built: Any) -> None:
    partition_by, tables = built
    record = decode_txn((tables.appended / TXN_FILE).read_bytes())
    assert len(record.partitions) == (1 if partition_by is None else 3)
    assert all(len(segments) >= 3 for segments in record.partitions.values())
    compacted = decode_txn((tables.compacted / TXN_FILE).read_bytes())
    assert compacted.retired, "compaction retired nothing"
    for retired in compacted.retired:  # still on disk: within the grace period
        assert (tables.compacted / retired.path).is_dir()
    assert streamwrite.read_table(tables.compacted).num_rows == NUM_BATCHES * BATCH_ROWS


def test_engines_read_the_table_after_appends(built: Any) -> None:
    partition_by, tables = built
    assert_exact(tables.appended, partition_by, "after appends")


def test_engines_read_the_table_right_after_compaction(built: Any) -> None:
    partition_by, tables = built
    assert_exact(tables.compacted, partition_by, "after compact()")


def test_engines_do_not_see_a_merged_segment_before_it_is_published(tmp_path: Path) -> None:
    directory = tmp_path / "t"
    _run(build, directory, "day")
    checked: list[str] = []

    def hook(step: str) -> None:
        if step == "publish":  # the merged segment is written and committed, not published
            record = decode_txn((directory / TXN_FILE).read_bytes())
            known = {name for name, _ in record.files()} | {r.path for r in record.retired}
            merged = [
                p for p in directory.glob("*/seg-*") if f"{p.parent.name}/{p.name}" not in known
            ]
            assert len(merged) == 1 and sorted(q.name for q in merged[0].iterdir()) == [
                "_data.pending",
                "_pm",
            ]
            assert_exact(directory, "day", "before the merged segment is published")
            checked.append(step)

    assert _run(compact, directory, hook)
    assert checked


def test_reopening_finishes_a_retire_the_crash_interrupted(tmp_path: Path) -> None:
    """A crash between the ``_txn`` swap and the retiring of the old segments (simulated:
    their data files are put back as they were at the swap) is finished on open."""
    directory = tmp_path / "t"
    _run(build, directory, "day")
    _run(compact, directory)
    record = decode_txn((directory / TXN_FILE).read_bytes())
    for retired in record.retired:
        segment = directory / retired.path
        (segment / "_data.retired").rename(segment / "data.parquet")
    assert not reads_exactly(directory), "the unfinished retire does not show"
    _run(compact, directory)  # opens (recovers) and finds nothing more to do
    assert_exact(directory, "day", "after reopening")
    after = decode_txn((directory / TXN_FILE).read_bytes())
    assert after.retired == record.retired, "reopening within the grace period swept"


def reads_exactly(directory: Path) -> bool:
    """True when every form reads the (day-partitioned) table exactly."""
    try:
        assert_exact(directory, "day", "half-retired")
    except AssertionError:
        return False
    return True
