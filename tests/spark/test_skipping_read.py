"""Spark reads a table pruned by a filter: ``streamwrite.spark.read`` (sealed segments by
Spark's Parquet reader, each partition's newest segment at its committed size through Arrow)
and the ``streamwrite`` Python data source (``pushFilters``: every filter returned, segments
read at their committed sizes). Results are checked against the unfiltered read filtered
(by ``pyarrow.compute`` for ``read``, by Spark for the data source), also while the newest
segments hold bytes past their commit (an append in flight).
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import streamwrite
import streamwrite.spark
from streamwrite.predicate import parse_filters, to_arrow
from streamwrite.spark.datasource import FILTER_PUSHDOWN_CONF
from streamwrite.spark.reading import filter_expression

DAY_US = 86_400 * 10**6
START_US = 1_795_305_600 * 10**6  # 2026-11-22T00:00:00Z
SYMBOLS = ["AAPL", "MSFT", "GOOG", "AMZN", "AA"]


def rows(num_rows: int, first: int) -> pa.Table:
    """Three UTC days in time order; ``value`` is a unique row key; ``price`` has NaN, -0.0,
    0.0 and nulls."""
    rng = np.random.default_rng(first)
    ts = START_US + np.sort(rng.integers(0, 3 * DAY_US, num_rows))
    prices = rng.choice([1.0, 2.5, -0.0, 0.0, np.nan, 100.0, -3.0], num_rows)
    return pa.table(
        {
            "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "value": pa.array(np.arange(first, first + num_rows), pa.int64()),
            "symbol": pa.array([SYMBOLS[k] for k in rng.integers(0, len(SYMBOLS), num_rows)]),
            "price": pa.array(prices, mask=rng.random(num_rows) < 0.1),
        }
    )


async def _build(path: Path, partition_by: str | None, num_batches: int) -> None:
    timestamp = "ts" if partition_by else None
    table = await streamwrite.open_table(
        path,
        rows(1, 0).schema,
        timestamp=timestamp,
        partition_by=partition_by,
        segment_row_groups=2,
        row_group_size=100,
        compaction_interval=None,
    )
    try:
        for k in range(num_batches):
            await table.append(rows(300, k * 300), app_id="build", batch_id=k)
    finally:
        await table.close()


@pytest.fixture(scope="module")
def day_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("skip") / "day"
    anyio.run(functools.partial(_build, path, "day", 6))
    return path


def _tear_newest(path: Path) -> list[Path]:
    """Append junk past each partition's newest segment's committed size: what Spark sees in
    the middle of an append (row group bytes, no footer yet). Returns the files touched."""
    snapshot = streamwrite.read_snapshot(path)
    newest: dict[str, str] = {}
    for name, _ in snapshot.files:
        newest[name.rsplit("/", 1)[0]] = name
    touched = []
    for name in newest.values():
        data = path / name / "data.parquet"
        with open(data, "ab") as f:
            f.write(b"\x15\x00" * 5000)  # half a page header, many times: no footer
        touched.append(data)
    return touched


def _values(table: pa.Table) -> list[int]:
    return sorted(table.column("value").to_pylist())


FILTERS: list[Any] = [
    [("symbol", "==", "AAPL")],
    [("value", ">=", 1200), ("value", "<", 1350)],
    [[("symbol", "in", ["AA", "GOOG"])], [("price", ">", 50.0)]],
    pc.field("price") != 2.5,  # NaN rows are kept: NaN != 2.5 is true
    ~(pc.field("price") < 10.0),  # NaN rows are kept
    pc.field("price").isin([0.0]),  # 0.0 and -0.0 (the predicate core's rule)
    pc.starts_with(pc.field("symbol"), pattern="AA") & pc.field("price").is_null(),
    pc.field("ts") >= pa.scalar(START_US + DAY_US + 3_600 * 10**6, pa.timestamp("us", "UTC")),
    [("symbol", "not in", ["AAPL", "MSFT"])],
    # DNF on floats: Spark's Column is corrected to Arrow's NaN and -0.0 rules
    [("price", "in", [0.0, float("nan")])],
    [("price", "not in", [-0.0, 1.0])],  # keeps NaN and null rows, as pyarrow does
    [("price", "!=", float("nan"))],
    [("price", ">=", 2.5)],  # NaN rows are not kept (Spark alone would keep them)
    [[("price", "<", float("nan"))], [("price", "==", -0.0), ("symbol", "=", "AA")]],
]


@pytest.mark.parametrize("index", range(len(FILTERS)))
def test_read_equals_the_filtered_snapshot(spark: Any, day_table: Path, index: int) -> None:
    filters = FILTERS[index]
    truth = to_arrow(parse_filters(filters))  # what read_table(filters=) applies
    expected = _values(streamwrite.read_table(day_table).filter(truth))
    assert _values(streamwrite.read_table(day_table, filters=filters)) == expected
    df = streamwrite.spark.read(spark, day_table, filters=filters)
    got = df.toArrow()
    assert _values(got) == expected
    assert "ts_day" in got.column_names  # as spark.read.parquet(table) gives it


def test_read_columns_and_sealed_files_natively(spark: Any, day_table: Path) -> None:
    snapshot = streamwrite.read_snapshot(day_table)
    df = streamwrite.spark.read(spark, day_table, columns=["value", "ts_day"])
    got = df.toArrow()
    assert got.column_names == ["value", "ts_day"]
    assert _values(got) == list(range(1800))
    newest = {name.rsplit("/", 1)[0]: name for name, _ in snapshot.files}
    sealed = {name for name, _ in snapshot.files} - set(newest.values())
    files = {"/".join(Path(f.removeprefix("file:")).parts[-3:-1]) for f in df.inputFiles()}
    assert sealed and files == sealed  # Spark read the sealed ones; the newest came as Arrow


def test_read_errors(spark: Any, day_table: Path) -> None:
    with pytest.raises(streamwrite.SchemaError, match="nope"):
        streamwrite.spark.read(spark, day_table, filters=[("nope", "==", 1)])
    with pytest.raises(streamwrite.SchemaError, match="nope"):
        streamwrite.spark.read(spark, day_table, columns=["nope"])
    with pytest.raises(streamwrite.ConfigError, match="DNF"):
        streamwrite.spark.read(spark, day_table, filters="symbol = 'AAPL'")


@pytest.fixture()
def pushdown(spark: Any) -> Iterator[bool]:
    before = spark.conf.get(FILTER_PUSHDOWN_CONF, "false")
    spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
    try:
        yield streamwrite.spark.register(spark)
    finally:
        spark.conf.set(FILTER_PUSHDOWN_CONF, before)


SPARK_FILTERS = [
    "symbol = 'AAPL'",
    "value >= 1200 and value < 1350",
    "symbol like 'AA%' and price > 50",
    "price <> 2.5",
    "not (price < 10)",
    "price in (0.0, 100.0)",
    "price = 'NaN'",
    "price >= 'NaN' or price < 0",
    "not (symbol in ('AAPL', 'MSFT'))",
    "price is null and value < 900",
    "not (price <=> 1.0)",
    "ts >= timestamp'2026-11-23 10:00:00' and ts < timestamp'2026-11-23 11:00:00'",
]


def _spark_values(df: Any) -> list[int]:
    return sorted(row["value"] for row in df.select("value").collect())


@pytest.mark.parametrize("condition", SPARK_FILTERS)
def test_data_source_equals_spark_filtering(
    spark: Any, day_table: Path, pushdown: bool, condition: str
) -> None:
    assert pushdown
    df = spark.read.format("streamwrite").load(str(day_table))
    expected = spark.createDataFrame(streamwrite.read_table(day_table)).filter(condition)
    assert _spark_values(df.filter(condition)) == _spark_values(expected)


def test_data_source_without_pushdown_conf(spark: Any, day_table: Path) -> None:
    assert spark.conf.get(FILTER_PUSHDOWN_CONF, "false") == "false"
    assert streamwrite.spark.register(spark) is False
    df = spark.read.format("streamwrite").load(str(day_table))
    assert df.schema.names == ["ts", "value", "symbol", "price"]
    snapshot = streamwrite.read_snapshot(day_table)
    filtered = df.filter("symbol = 'AAPL'")
    assert filtered.rdd.getNumPartitions() == len(snapshot.files)  # one task per segment
    expected = streamwrite.read_table(day_table).filter(pc.field("symbol") == "AAPL")
    assert _spark_values(filtered) == _values(expected)


def test_appends_in_flight(spark: Any, tmp_path: Path) -> None:
    """Bytes past the newest segments' commits: both readers still give the snapshot."""
    path = tmp_path / "t"
    anyio.run(functools.partial(_build, path, "day", 4))
    expected = _values(streamwrite.read_table(path))
    _tear_newest(path)
    assert _values(streamwrite.spark.read(spark, path).toArrow()) == expected
    spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
    try:
        streamwrite.spark.register(spark)
        df = spark.read.format("streamwrite").load(str(path)).filter("value >= 0")
        assert _spark_values(df) == expected
    finally:
        spark.conf.set(FILTER_PUSHDOWN_CONF, "false")
        streamwrite.spark.register(spark)


def test_unpartitioned_table(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "flat"
    anyio.run(functools.partial(_build, path, None, 3))
    got = streamwrite.spark.read(spark, path, filters=[("value", "<", 500)]).toArrow()
    assert _values(got) == list(range(500))
    assert set(got.column("sw_partition").to_pylist()) == {"all"}


def test_pruning_is_visible(spark: Any, day_table: Path, pushdown: bool) -> None:
    """A one-hour range: other days' segments are neither listed to Spark nor planned as
    tasks, and the rows are those of the unpruned read filtered."""
    snapshot = streamwrite.read_snapshot(day_table)
    start = datetime.datetime(2026, 11, 23, 10, tzinfo=datetime.UTC)
    end = start + datetime.timedelta(hours=1)
    dnf = [("ts", ">=", start), ("ts", "<", end)]
    expected = _values(streamwrite.read_table(day_table).filter(filter_expression(dnf)))
    assert _values(streamwrite.read_table(day_table, filters=dnf)) == expected
    assert expected
    df = streamwrite.spark.read(spark, day_table, filters=dnf)
    assert _values(df.toArrow()) == expected
    listed = {"/".join(Path(f.removeprefix("file:")).parts[-3:-1]) for f in df.inputFiles()}
    assert listed and all(name.startswith("ts_day=2026-11-23/") for name in listed)
    source = spark.read.format("streamwrite").load(str(day_table))
    condition = "ts >= timestamp'2026-11-23 15:30:00' and ts < timestamp'2026-11-23 16:30:00'"
    pruned = source.filter(condition)  # the session zone is Asia/Kolkata (+05:30)
    day = [name for name, _ in snapshot.files if name.startswith("ts_day=2026-11-23/")]
    assert 0 < pruned.rdd.getNumPartitions() <= len(day) < len(snapshot.files)
    assert _spark_values(pruned) == expected
