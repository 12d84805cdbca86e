"""foreachBatch of arrays, structs and maps into a table: what Spark sent is what streamwrite and
Spark read back, exactly once.

The source is a directory of Parquet files (one per micro-batch, ``maxFilesPerTrigger=1``,
``trigger(availableNow=True)``) whose rows hold ``array<double>``, ``array<string>``,
``struct<a: bigint, b: string>``, ``map<string, string>``, ``array<array<int>>``,
``array<struct<x: int, y: string>>`` and ``map<string, array<bigint>>`` columns with nulls at
every level (null arrays, empty arrays, null elements, null structs and fields, null and empty
maps, null map values, null inner arrays), next to the flat ``ts``, ``value`` and ``symbol``
of the flat sink tests. The shared session (``conftest.py``) runs in Asia/Kolkata.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.format.txn import TXN_FILE, decode_txn
from streamwrite.spark import default_app_id, foreach_batch_sink, read_table_df
from streamwrite.table.api import read_snapshot
from tests.interop.nested_compare import same_nested_tables
from tests.interop.nested_matrix import nested_table
from tests.spark._support import by_value, ticks

NUM_FILES = 3
ROWS_PER_FILE = 800
NESTED_DDL = (
    "ts TIMESTAMP, value BIGINT, symbol STRING, ad ARRAY<DOUBLE>, ast ARRAY<STRING>, "
    "st STRUCT<a: BIGINT, b: STRING>, m MAP<STRING, STRING>, aa ARRAY<ARRAY<INT>>, "
    "lst ARRAY<STRUCT<x: INT, y: STRING>>, mli MAP<STRING, ARRAY<BIGINT>>"
)
# source column <- column of tests/interop/nested_matrix.py's table
FROM_MATRIX = {"ad": "lf", "ast": "ls", "st": "s", "m": "m", "aa": "nn", "lst": "lst", "mli": "mli"}
NESTED_COLUMNS = list(FROM_MATRIX)


def nested_ticks(num_rows: int, first_value: int, seed: int) -> pa.Table:
    """``ticks`` plus the nested columns (no NaN: Spark rows are compared as values)."""
    nested = nested_table(True, num_rows=num_rows, seed=seed, special_floats=False)
    table = ticks(num_rows, first_value, seed)
    for name, source in FROM_MATRIX.items():
        table = table.append_column(name, nested.column(source))
    return table


def write_nested_source(directory: Path) -> pa.Table:
    directory.mkdir(parents=True)
    parts = []
    for k in range(NUM_FILES):
        part = nested_ticks(ROWS_PER_FILE, k * ROWS_PER_FILE, seed=k)
        pq.write_table(part, directory / f"part-{k:03d}.parquet")
        parts.append(part)
    return pa.concat_tables(parts)


def run_nested_stream(
    spark: Any, source: Path, checkpoint: Path, batch_fn: Callable[[Any, int], None]
) -> None:
    """``tests/spark/_support.run_file_stream`` with the nested schema."""
    stream = (
        spark.readStream.schema(NESTED_DDL).option("maxFilesPerTrigger", 1).parquet(str(source))
    )
    query = (
        stream.writeStream.foreachBatch(batch_fn)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        finished = query.awaitTermination(180)
    finally:
        if query.isActive:
            query.stop()
    assert finished, "The streaming query did not finish within 180 s."


def _committed_files(table_path: Path) -> list[str]:
    return [str(table_path / name / "data.parquet") for name, _ in read_snapshot(table_path).files]


def test_nested_stream_into_table_reads_back_what_spark_sent(spark: Any, tmp_path: Path) -> None:
    source = write_nested_source(tmp_path / "source")
    table_path = tmp_path / "table"
    sink = foreach_batch_sink(table_path, timestamp="ts", partition_by="day")
    sent: list[pa.Table] = []

    def batch_fn(df: Any, batch_id: int) -> None:
        df = df.cache()
        sent.append(df.toArrow())
        sink(df, batch_id)
        df.unpersist()

    run_nested_stream(spark, tmp_path / "source", tmp_path / "checkpoint", batch_fn)

    assert len(sent) == NUM_FILES
    spark_types = sent[0].schema
    assert spark_types.field("ad").type.value_field.name == "element"  # Spark's own names
    assert pa.types.is_map(spark_types.field("mli").type)
    expected = by_value(pa.concat_tables(sent))
    # Spark sent the source rows (its element names and nullability, the same values)
    assert same_nested_tables(by_value(source), expected) == []
    # null at each level reached the sink
    ad = expected.column("ad").combine_chunks()
    assert ad.null_count and ad.flatten().null_count and 0 in ad.value_lengths().to_pylist()
    assert expected.column("st").combine_chunks().flatten()[1].null_count
    assert expected.column("m").combine_chunks().items.null_count
    assert expected.column("aa").combine_chunks().flatten().null_count

    ours = streamwrite.read_table(table_path)
    assert ours.schema.equals(expected.schema)
    assert by_value(ours).equals(expected)

    spark_read = spark.read.parquet(*_committed_files(table_path)).toArrow()
    assert by_value(spark_read).equals(expected)
    assert by_value(read_table_df(spark, table_path).toArrow()).equals(expected)
    assert by_value(read_table_df(spark, table_path, via="arrow").toArrow()).equals(expected)
    through = streamwrite.spark.read(spark, table_path).drop("ts_day").toArrow()
    assert by_value(through).equals(expected)

    record = decode_txn((table_path / TXN_FILE).read_bytes())
    assert record.version == NUM_FILES
    assert record.applied == {default_app_id(table_path): NUM_FILES - 1}


class _CrashError(Exception):
    pass


def test_nested_restart_from_checkpoint_writes_every_row_once(spark: Any, tmp_path: Path) -> None:
    """Run 1 dies after committing batch 1, run 2 dies before committing batch 2, run 3
    finishes: the replayed batch 1 is skipped, every nested row lands once."""
    source = write_nested_source(tmp_path / "source")
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
            run_nested_stream(
                spark, tmp_path / "source", checkpoint, runner(run, crash_after, crash_before)
            )
    run_nested_stream(spark, tmp_path / "source", checkpoint, runner(3, None, None))

    assert calls == [(1, 0), (1, 1), (2, 1), (2, 2), (3, 2)]
    ours = streamwrite.read_table(table_path)
    assert ours.num_rows == source.num_rows
    assert same_nested_tables(by_value(source), by_value(ours)) == []
    assert read_snapshot(table_path).version == NUM_FILES


def test_readme_nested_rate_stream(spark: Any, tmp_path: Path) -> None:
    """The README's nested example: a rate source with array, struct and map columns, leaf
    options by dotted path, read back by streamwrite equal to what Spark reads."""
    events = str(tmp_path / "events")
    checkpoint = str(tmp_path / "events-checkpoint")
    # --- README snippet (nested columns) ---
    sink = foreach_batch_sink(
        events,
        timestamp="ts",
        partition_by="day",
        bloom_filter_options={"user.name": True, "attrs.key_value.key": True},
    )
    query = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 200)
        .load()
        .selectExpr(
            "timestamp AS ts",
            "array(value, value * 2, IF(value % 3 = 0, NULL, value)) AS pair",
            "named_struct('id', value, 'name', IF(value % 5 = 0, NULL, CAST(value AS STRING)))"
            " AS user",
            "map('k', CAST(value AS STRING), 'parity', IF(value % 2 = 0, 'even', NULL)) AS attrs",
        )
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", checkpoint)
        .start()
    )
    # --- end of snippet ---
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(query.recentProgress) < 3:
            time.sleep(0.5)
        query.processAllAvailable()
    finally:
        query.stop()
    ours = streamwrite.read_table(events)
    assert ours.num_rows > 0
    assert str(ours.schema.field("pair").type) == "list<element: int64>"
    assert pa.types.is_map(ours.schema.field("attrs").type)
    theirs = spark.read.parquet(*_committed_files(Path(events))).toArrow()
    ours = by_user_id(ours)
    assert same_nested_tables(by_user_id(theirs), ours) == []
    assert ours.column("user").combine_chunks().flatten()[1].null_count  # null names arrived


def by_user_id(table: pa.Table) -> pa.Table:
    """``table`` sorted by the rate source's row key (``user.id`` is its ``value``)."""
    user_id = table.column("user").combine_chunks().flatten()[0]
    table = table.append_column("_key", user_id)
    return table.take(pc.sort_indices(table, [("_key", "ascending")])).drop_columns(["_key"])
