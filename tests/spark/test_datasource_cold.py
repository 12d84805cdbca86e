"""The ``streamwrite`` data source reads tables whose segments live in object storage: a local
table with cold segments (the executors fetch them by byte ranges from a real S3-compatible
server over HTTP: moto's server mode on localhost) and a table URL (``s3://bucket/t``: the
newest version the table published to the bucket). Storage options reach the executors as the
``storage_options`` JSON option.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import streamwrite
import streamwrite.spark
from streamwrite.options import CompactionPolicy
from streamwrite.spark.datasource import open_segment, pin_snapshot
from streamwrite.spark.tasks import plan_tasks
from streamwrite.testing.s3 import S3Server
from tests.spark.datasource_writer import rows

NO_MERGE = CompactionPolicy(min_small_row_groups=10**6, grace_seconds=0.0)
"""Compaction never merges (every sealed segment may move); local copies go at once."""


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with S3Server() as server:
        yield server


async def _build_and_tier(path: Path, url: str, storage_options: dict[str, Any]) -> list[str]:
    async with await streamwrite.open_table(
        path,
        rows(0, 1).schema,
        timestamp="ts",
        partition_by="day",
        segment_row_groups=3,
        row_group_size=200,
        compaction=NO_MERGE,
        compaction_interval=None,
        commit_interval=None,
        cold_storage=url,
        storage_options=storage_options,
        cold_after=0.0,
    ) as table:
        for k in range(8):
            await table.append(rows(k * 500, 500), app_id="build", batch_id=k)
        moved = await table.tier()
        await table.sweep_retired()
        for k in range(8, 10):  # after the move: local segments beside the cold ones
            await table.append(rows(k * 500, 500), app_id="build", batch_id=k)
        return moved


@pytest.fixture(scope="module")
def cold_table(
    s3: S3Server, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, str, dict[str, Any]]:
    """4,000 rows over three days moved to ``s3://spark-cold/t`` (the version published
    there), then 1,000 more rows in local segments."""
    s3.create_bucket("spark-cold")
    path = tmp_path_factory.mktemp("cold") / "t"
    url = "s3://spark-cold/t"
    moved = anyio.run(functools.partial(_build_and_tier, path, url, s3.storage_options))
    assert moved
    return path, url, s3.storage_options


def _by_id(table: pa.Table) -> pa.Table:
    """Sorted by ``id``, ``ts`` (if read) as UTC microseconds."""
    index = table.schema.get_field_index("ts")
    if index >= 0:
        table = table.set_column(index, "ts", table.column("ts").cast(pa.int64()))
    return table.take(pc.sort_indices(table, [("id", "ascending")]))


def _load(spark: Any, location: str, storage_options: dict[str, Any], **options: str) -> Any:
    reader = spark.read.format("streamwrite").option("storage_options", json.dumps(storage_options))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(location)


def test_local_table_with_cold_segments(
    spark: Any, cold_table: tuple[Path, str, dict[str, Any]]
) -> None:
    path, _, storage_options = cold_table
    snapshot = streamwrite.read_snapshot(path, storage_options=storage_options)
    record = snapshot.record
    assert record is not None
    cold = [
        f"{partition}/{segment.name}"
        for partition, segments in record.partitions.items()
        for segment in segments
        if segment.is_cold
    ]
    assert cold and len(cold) < len(snapshot.files)  # the newer segments are local
    assert not any((path / name).exists() for name in cold)  # read from the bucket only
    expected = _by_id(streamwrite.read_table(path, storage_options=storage_options))
    assert expected.num_rows == 5000
    got = _load(spark, str(path), storage_options, partition_bytes="4000").toArrow()
    assert _by_id(got).equals(expected)
    projected = _load(spark, str(path), storage_options, columns="id,price").toArrow()
    assert _by_id(projected).equals(expected.select(["id", "price"]))

    # the plan: cold segments by row-group ranges too
    opened = functools.partial(open_segment, snapshot)
    tasks = plan_tasks(snapshot, opened, target_bytes=600, parallelism=2)
    assert {task.name for task in tasks} >= set(cold)
    assert len(tasks) > len(snapshot.files)


def test_table_url(spark: Any, cold_table: tuple[Path, str, dict[str, Any]]) -> None:
    """A reader that sees only the bucket: the newest published version, cold segments."""
    _, url, storage_options = cold_table
    snapshot = pin_snapshot(url, storage_options)
    expected = _by_id(streamwrite.read_table(url, storage_options=storage_options))
    assert expected.num_rows == 4000  # the version published to the bucket
    df = _load(spark, url, storage_options, parallelism="3", partition_bytes="3000")
    assert df.rdd.getNumPartitions() >= len(snapshot.files)
    assert _by_id(df.toArrow()).equals(expected)
    filtered = streamwrite.spark.read_table_df(
        spark,
        url,
        columns=["id", "symbol"],
        filters=[("id", "<", 700)],
        storage_options=storage_options,
    )
    wanted = expected.filter(pc.field("id") < 700).select(["id", "symbol"])
    assert wanted.num_rows == 700
    assert _by_id(filtered.toArrow()).equals(wanted)


def test_url_without_storage_options_fails_typed(
    spark: Any, cold_table: tuple[Path, str, dict[str, Any]]
) -> None:
    _, url, _ = cold_table
    with pytest.raises(Exception, match="spark-cold"):
        spark.read.format("streamwrite").load(url).schema  # noqa: B018
