"""Spark reads a table directory as it is: ``spark.read.parquet(table)`` returns exactly the
committed rows plus the partition column, after appends and right after a compaction (retired
segments still on disk within the grace period).

Spark's partition discovery reads the Hive-style partition directories (``ts_day=2026-11-22``,
typed as a date) and goes through the ``seg-N`` directories under them; it skips ``_txn``,
``_pm``, ``_data.retired`` and ``_data.pending`` (names starting with ``_``). An unpartitioned
table has the one partition directory ``sw_partition=all`` (without one Spark would list only
the files directly in the path it is given), so Spark adds ``sw_partition``. With
``recursiveFileLookup`` Spark reads every table without the partition column.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import streamwrite
from streamwrite.compaction.policy import CompactionPolicy
from streamwrite.format.txn import TXN_FILE, UNPARTITIONED_COLUMN, decode_txn
from streamwrite.table.api import open_table
from tests.spark._support import ticks

OPTIONS: dict[str, Any] = {
    "segment_row_groups": 2,
    "row_group_size": 100,
    "compaction": CompactionPolicy(
        grace_seconds=3600, min_small_row_groups=2, target_row_group_rows=1000
    ),
    "compaction_interval": None,
}


async def build(path: Path, partition_by: str | None) -> None:
    timestamp = "ts" if partition_by else None
    table = await open_table(
        path, ticks(1, 0).schema, timestamp=timestamp, partition_by=partition_by, **OPTIONS
    )
    try:
        for k in range(5):
            await table.append(ticks(300, k * 300, seed=k), app_id="build", batch_id=k)
    finally:
        await table.close()


async def compact(path: Path) -> None:
    table = await open_table(path, **OPTIONS)
    try:
        assert await table.compact()
    finally:
        await table.close()


def plain(table: pa.Table) -> pa.Table:
    """Sorted by ``value``, ``ts`` as UTC microseconds (Spark returns it in the session zone)."""
    table = table.set_column(
        table.schema.get_field_index("ts"), "ts", table.column("ts").cast(pa.int64())
    )
    return table.take(pc.sort_indices(table, [("value", "ascending")]))


def spark_rows(df: Any, partition_column: str | None) -> pa.Table:
    """Spark's rows without the partition column, after checking it holds each row's day
    (``all`` for an unpartitioned table's ``sw_partition``)."""
    rows = df.toArrow()
    if partition_column == UNPARTITIONED_COLUMN:
        assert set(rows.column(partition_column).to_pylist()) == {"all"}
        rows = rows.drop_columns([partition_column])
    elif partition_column is not None:
        utc = rows.column("ts").cast(pa.timestamp("us", tz="UTC"))
        days = pc.strftime(utc, format="%Y-%m-%d")
        assert rows.column(partition_column).cast(pa.string()).equals(days)
        rows = rows.drop_columns([partition_column])
    return plain(rows)


@pytest.mark.parametrize("partition_by", ["day", None])
def test_spark_reads_the_table_directory(spark: Any, tmp_path: Path, partition_by: Any) -> None:
    path = tmp_path / "t"
    anyio.run(functools.partial(build, path, partition_by))
    for when in ("after appends", "right after compaction"):
        if when != "after appends":
            anyio.run(compact, path)
            assert decode_txn((path / TXN_FILE).read_bytes()).retired  # still on disk
        expected = plain(streamwrite.read_table(path))
        assert expected.num_rows == 1500
        recursive = spark.read.option("recursiveFileLookup", "true").parquet(str(path))
        assert spark_rows(recursive, None).equals(expected), when
        df = spark.read.parquet(str(path))
        if partition_by is None:
            assert spark_rows(df, UNPARTITIONED_COLUMN).equals(expected), when
        else:
            assert df.schema["ts_day"].dataType.typeName() == "date"
            assert spark_rows(df, "ts_day").equals(expected), when
