"""streamwrite as a Spark Structured Streaming sink: rate source -> foreachBatch -> table.

Starts a light local SparkSession (DESIGN section 7), streams the rate source as
``(ts, value, symbol)`` rows into a streamwrite table partitioned by day
(``--out``/table, checkpoint in ``--out``/checkpoint) until ``--batches`` non-empty
micro-batches are committed, then reads the table back with streamwrite and with
``spark.read.parquet`` of the committed partition files. Each micro-batch is appended with
its batch id, so a restart from the checkpoint never writes a batch twice; run it again with
the same ``--out`` and the table continues where it stopped.

Needs ``pip install 'streamwrite[spark]'`` and Java 17.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import streamwrite
from streamwrite.spark import foreach_batch_sink, read_table_df
from streamwrite.table.api import read_snapshot

SESSION_CONFIG = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.memory": "1g",
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
}


def light_session() -> Any:
    """A local[2] session with the light settings of DESIGN section 7."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("streamwrite-example")
    for key, value in SESSION_CONFIG.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=5, help="non-empty micro-batches to commit")
    parser.add_argument("--out", type=Path, default=Path("spark-out"))
    parser.add_argument("--rows-per-second", type=int, default=200)
    parser.add_argument("--timeout", type=float, default=300, help="seconds before giving up")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    logging.getLogger("streamwrite").setLevel(logging.INFO)  # one line per micro-batch commit
    table_path, checkpoint = args.out / "table", args.out / "checkpoint"

    spark = light_session()
    sink = foreach_batch_sink(table_path, timestamp="ts", partition_by="day")
    done = threading.Event()
    committed: list[int] = []

    def version() -> int:
        return read_snapshot(table_path).version if (table_path / "_txn").exists() else -1

    def write_batch(df: Any, batch_id: int) -> None:
        before = version()
        sink(df, batch_id)  # exactly once per batch id; an empty batch is a no-op
        if version() != before:
            committed.append(batch_id)
        if len(committed) >= args.batches:
            done.set()

    rows = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", args.rows_per_second)
        .load()
        .selectExpr(
            "timestamp AS ts",
            "value",
            "element_at(array('AAPL', 'MSFT', 'GOOG'), CAST(value % 3 + 1 AS INT)) AS symbol",
        )
    )
    query = (
        rows.writeStream.foreachBatch(write_batch)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="1 second")
        .start()
    )
    started = time.monotonic()
    try:
        while not done.wait(0.5):
            if not query.isActive:
                raise SystemExit(f"The query stopped: {query.exception()}")
            if time.monotonic() - started > args.timeout:
                raise SystemExit(f"No {args.batches} batches within {args.timeout} s.")
    finally:
        query.stop()  # no append is in flight after this returns

    ours = streamwrite.read_table(table_path)
    snapshot = read_snapshot(table_path)
    theirs = read_table_df(spark, table_path)  # spark.read.parquet of the committed files
    spark_rows = theirs.count()
    print(f"table:            {table_path} (version {snapshot.version})")
    print(f"partitions:       {', '.join(f'{n} ({s:,} bytes)' for n, s in snapshot.files)}")
    print(f"committed:        batches {committed}")
    print(f"streamwrite read: {ours.num_rows:,} rows, schema {ours.schema.types}")
    print(f"spark.read:       {spark_rows:,} rows")
    theirs.groupBy("symbol").count().orderBy("symbol").show()
    values = sorted(theirs.select("value").toArrow().column("value").to_pylist())
    assert spark_rows == ours.num_rows and values == sorted(ours.column("value").to_pylist())
    print("read back equal by: streamwrite.read_table, spark.read.parquet")
    spark.stop()


if __name__ == "__main__":
    main()
