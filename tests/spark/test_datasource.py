"""The ``streamwrite`` Python data source: discovery without ``register``, reads equal to
``streamwrite.read_table``, projection (only the projected column chunks are read), and the
plan of input partitions (segment and row-group ranges sized by bytes).
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import streamwrite
import streamwrite.spark
from streamwrite.spark.datasource import open_segment
from streamwrite.spark.tasks import (
    MIN_SPLIT_BYTES,
    SegmentRowGroups,
    pack_tasks,
    plan_tasks,
    split_bytes,
)
from tests.spark.datasource_writer import rows


async def _build(path: Path, num_batches: int, batch_rows: int, **options: Any) -> None:
    settings: dict[str, Any] = {
        "timestamp": "ts",
        "partition_by": "day",
        "segment_row_groups": 4,
        "row_group_size": 200,
        "compaction_interval": None,
    }
    settings.update(options)
    table = await streamwrite.open_table(path, rows(0, 1).schema, **settings)
    try:
        for k in range(num_batches):
            await table.append(rows(k * batch_rows, batch_rows), app_id="build", batch_id=k)
    finally:
        await table.close()


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4,000 rows over three days; 200-row row groups, 4 per segment: 6 segments, 22 row
    groups (a commit of rows of two days cuts a row group short)."""
    path = tmp_path_factory.mktemp("datasource") / "t"
    anyio.run(functools.partial(_build, path, 10, 400))
    return path


def _by_id(table: pa.Table) -> pa.Table:
    """Sorted by ``id``, ``ts`` as UTC microseconds (Spark gives it in the session zone)."""
    if "ts" in table.column_names:
        index = table.schema.get_field_index("ts")
        table = table.set_column(index, "ts", table.column("ts").cast(pa.int64()))
    return table.take(pc.sort_indices(table, [("id", "ascending")]))


def test_discovered_without_register_in_a_fresh_session(spark: Any, table: Path) -> None:
    """A session no ``register`` call touched finds the source through pyspark's lookup of
    top-level ``pyspark_*`` modules (run once per JVM, already run by the shared session)."""
    from pyspark.sql.datasource import DataSource

    probe = type("Probe", (DataSource,), {"name": classmethod(lambda cls: "sw_probe")})
    spark.dataSource.register(probe)  # a session registration: not seen by a new session
    streamwrite.spark.register(spark)
    assert spark.read.format("streamwrite").load(str(table)).count() == 4000
    fresh = spark.newSession()
    with pytest.raises(Exception, match="sw_probe"):
        fresh.read.format("sw_probe").load().schema  # noqa: B018
    df = fresh.read.format("streamwrite").load(str(table))
    assert df.schema.names == ["id", "ts", "price", "symbol"]
    assert _by_id(df.toArrow()).equals(_by_id(streamwrite.read_table(table)))

    import pyspark_streamwrite

    assert pyspark_streamwrite.DefaultSource.name() == "streamwrite"


def test_reads_equal_read_table(spark: Any, table: Path) -> None:
    expected = _by_id(streamwrite.read_table(table))
    for options in ({}, {"parallelism": "5", "partition_bytes": "2000"}):
        reader = spark.read.format("streamwrite")
        for key, value in options.items():
            reader = reader.option(key, value)
        got = reader.load(str(table)).toArrow()
        assert str(got.schema.field("ts").type).startswith("timestamp[us")
        assert _by_id(got).equals(expected), options


def test_read_table_df_uses_the_source(spark: Any, table: Path) -> None:
    expected = _by_id(streamwrite.read_table(table))
    df = streamwrite.spark.read_table_df(spark, table)
    assert df.rdd.getNumPartitions() >= 2  # the source's tasks, not one driver-side table
    assert _by_id(df.toArrow()).equals(expected)
    df = streamwrite.spark.read_table_df(
        spark, table, columns=["id", "price"], filters=[("id", ">=", 3990)]
    )
    assert df.schema.names == ["id", "price"]
    assert _by_id(df.toArrow()).equals(_by_id(expected.select(["id", "price"]).slice(3990)))
    for via in ("files", "arrow"):
        got = streamwrite.spark.read_table_df(spark, table, via=via, columns=["id", "symbol"])
        assert _by_id(got.toArrow()).equals(expected.select(["id", "symbol"])), via
    with pytest.raises(streamwrite.ConfigError, match="via"):
        streamwrite.spark.read_table_df(spark, table, via="jdbc")  # type: ignore[arg-type]


def _damage_column(path: Path, column: str) -> None:
    """Flip the last byte of every chunk of ``column`` (inside its last page: its CRC no
    longer matches) in every segment's data file."""
    snapshot = streamwrite.read_snapshot(path)
    for name, size in snapshot.files:
        with streamwrite.ParquetFile(path / name, snapshot=size) as pf:
            index = pf.schema_arrow.names.index(column)
            ends = []
            for i in range(pf.num_row_groups):
                chunk = pf.metadata.row_group(i).column(index)
                start = chunk.dictionary_page_offset or chunk.data_page_offset
                ends.append(start + chunk.total_compressed_size - 1)
        with open(path / name / "data.parquet", "r+b") as f:
            for end in ends:
                f.seek(end)
                byte = f.read(1)
                f.seek(end)
                f.write(bytes([byte[0] ^ 0xFF]))


def test_projection_reads_only_the_projected_columns(
    spark: Any, table: Path, tmp_path: Path
) -> None:
    """The ``symbol`` chunks of a copy are damaged: reads of other columns (a user schema,
    the ``columns`` option) never touch them and succeed; a read of every column fails."""
    copy = tmp_path / "t"
    shutil.copytree(table, copy)
    _damage_column(copy, "symbol")
    with pytest.raises(streamwrite.StreamwriteError):
        streamwrite.read_table(copy)
    expected = _by_id(streamwrite.read_table(copy, columns=["id", "price"]))
    assert _by_id(streamwrite.read_table(table, columns=["id", "price"])).equals(expected)
    by_schema = spark.read.format("streamwrite").schema("price DOUBLE, id BIGINT")
    got = by_schema.load(str(copy)).toArrow()
    assert got.column_names == ["price", "id"]
    assert _by_id(got).equals(expected.select(["price", "id"]))
    by_option = spark.read.format("streamwrite").option("columns", "id,price").load(str(copy))
    assert by_option.schema.names == ["id", "price"]
    assert _by_id(by_option.toArrow()).equals(expected)
    with pytest.raises(Exception, match=r"(?i)checksum|crc"):
        spark.read.format("streamwrite").load(str(copy)).toArrow()


def test_projection_errors(spark: Any, table: Path) -> None:
    with pytest.raises(Exception, match="nope"):
        spark.read.format("streamwrite").option("columns", "id,nope").load(str(table)).schema  # noqa: B018
    with pytest.raises(Exception, match="nope"):
        spark.read.format("streamwrite").schema("nope BIGINT").load(str(table)).collect()
    with pytest.raises(Exception, match="parallelism"):
        spark.read.format("streamwrite").option("parallelism", "0").load(str(table)).collect()


def _check_plan(
    snapshot: streamwrite.TableSnapshot,
    tasks: Sequence[Any],
    limit: int,
    expected_row_groups: dict[str, list[int]],
) -> None:
    """Each task is a run of one segment's row groups within ``limit`` bytes (or one row
    group); together they read each segment's ``expected_row_groups`` once, in order."""
    sizes = dict(snapshot.files)
    seen: dict[str, list[int]] = {}
    for task in tasks:
        assert task.size == sizes[task.name]  # the committed size pinned at planning
        assert list(task.row_groups) == sorted(task.row_groups)
        assert task.num_bytes <= limit or len(task.row_groups) == 1, task
        seen.setdefault(task.name, []).extend(task.row_groups)
    assert seen == {name: rgs for name, rgs in expected_row_groups.items() if rgs}
    order = [task.name for task in tasks]
    assert order == sorted(order)  # segments in row order, each one's tasks together


def test_partition_plan(spark: Any, table: Path) -> None:
    snapshot = streamwrite.read_snapshot(table)
    opened = functools.partial(open_segment, snapshot)
    num_segments = len(snapshot.files)
    every = {}
    for name, size in snapshot.files:
        with opened(name, size) as pf:
            every[name] = list(range(pf.num_row_groups))
    assert num_segments == 6 and sum(map(len, every.values())) == 22

    for parallelism in (1, 2, 3, 16):
        tasks = plan_tasks(snapshot, opened, parallelism=parallelism)
        # small segments: the split size floor (MIN_SPLIT_BYTES) keeps a segment whole
        assert len(tasks) == num_segments >= min(num_segments, parallelism)
        _check_plan(snapshot, tasks, MIN_SPLIT_BYTES, every)

    total = sum(task.num_bytes for task in plan_tasks(snapshot, opened))
    for target in (total // 40, total // 10, total // 3):
        tasks = plan_tasks(snapshot, opened, target_bytes=target, parallelism=2)
        _check_plan(snapshot, tasks, target, every)
        assert len(tasks) >= max(num_segments, min(22, total // target))
        df = (
            spark.read.format("streamwrite")
            .option("partition_bytes", str(target))
            .option("parallelism", "2")
            .load(str(table))
        )
        assert df.rdd.getNumPartitions() == len(tasks)
        assert df.count() == 4000

    projected = plan_tasks(snapshot, opened, columns=["id"], target_bytes=total // 10)
    full = plan_tasks(snapshot, opened, target_bytes=total // 10)
    assert sum(t.num_bytes for t in projected) < sum(t.num_bytes for t in full) / 2
    assert len(projected) < len(full)  # sized by the bytes the projection reads

    # a filter: pruned segments and row groups get no task
    late = pc.field("id") >= 3700
    tasks = plan_tasks(snapshot, opened, filters=late, target_bytes=1)
    kept = {
        segment.name: [rg.index for rg in segment.read_plan.row_groups if rg.skipped_by is None]
        for segment in snapshot.plan(late).segments
        if segment.skipped_by is None
    }
    assert 0 < len(kept) < num_segments
    _check_plan(snapshot, tasks, 1, kept)
    assert sum(len(t.row_groups) for t in tasks) == 2  # ids 3600..3999: two row groups


def test_split_size_and_packing() -> None:
    """Spark's split rule, and parallelism reached by cutting big segments."""
    assert split_bytes(100 << 20, 128 << 20, 2) == 50 << 20
    assert split_bytes(100 << 20, 16 << 20, 2) == 16 << 20
    assert split_bytes(1 << 20, 128 << 20, 4) == MIN_SPLIT_BYTES
    one_segment = [SegmentRowGroups("p=a/seg-000000", 1, None, tuple(range(64)), (1 << 20,) * 64)]
    for parallelism in (1, 2, 3, 8):
        tasks = pack_tasks(one_segment, 128 << 20, parallelism)
        assert len(tasks) >= min(parallelism, 64 // 4)  # 4 MiB floor: at most 16 tasks
        limit = split_bytes(64 << 20, 128 << 20, parallelism)
        assert all(t.num_bytes <= limit for t in tasks)
        assert [i for t in tasks for i in t.row_groups] == list(range(64))
    uneven = [SegmentRowGroups("p=a/seg-000000", 1, None, (0, 1, 2), (40 << 20, 1, 40 << 20))]
    tasks = pack_tasks(uneven, 10 << 20, 1)
    assert [t.row_groups for t in tasks] == [(0,), (1,), (2,)]  # big ones alone


def test_empty_and_pruned_to_nothing(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "empty"
    anyio.run(functools.partial(_build, path, 0, 0))
    df = spark.read.format("streamwrite").load(str(path))
    assert df.schema.names == ["id", "ts", "price", "symbol"]
    assert df.count() == 0


def test_discovered_source_takes_pushdown_by_option(spark: Any, table: Path) -> None:
    """The discovered source has no ``pushFilters`` (it works with the conf off); the
    ``pushdown`` option turns it on where the conf is on: pruned tasks, same rows."""
    from streamwrite.spark.datasource import FILTER_PUSHDOWN_CONF

    fresh = spark.newSession()
    num_segments = len(streamwrite.read_snapshot(table).files)
    plain = fresh.read.format("streamwrite").load(str(table)).filter("id >= 3700")
    assert plain.rdd.getNumPartitions() == num_segments
    assert sorted(r["id"] for r in plain.select("id").collect()) == list(range(3700, 4000))
    fresh.conf.set(FILTER_PUSHDOWN_CONF, "true")
    reader = fresh.read.format("streamwrite").option("pushdown", "true")
    pushed = reader.load(str(table)).filter("id >= 3700")
    assert pushed.rdd.getNumPartitions() == 1  # ids 3600..3999: one segment's two row groups
    assert sorted(r["id"] for r in pushed.select("id").collect()) == list(range(3700, 4000))
