"""Source data and stream plumbing shared by the Spark tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from streamwrite.spark import conform, table_schema_for

DAY_US = 86_400 * 10**6
START_US = 1_795_305_600 * 10**6  # 2026-11-22T00:00:00Z
SOURCE_DDL = "ts TIMESTAMP, value BIGINT, symbol STRING"
SYMBOLS = ["AAPL", "MSFT", "GOOG", "AMZN"]


def ticks(num_rows: int, first_value: int, seed: int = 0) -> pa.Table:
    """Rows over three UTC days; ``value`` counts up from ``first_value`` (a unique row key)."""
    rng = np.random.default_rng(seed)
    ts = START_US + rng.integers(0, 3 * DAY_US, num_rows)
    return pa.table(
        {
            "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "value": pa.array(np.arange(first_value, first_value + num_rows), pa.int64()),
            "symbol": pa.array([SYMBOLS[i % len(SYMBOLS)] for i in range(num_rows)]),
        }
    )


def write_source_files(directory: Path, num_files: int, rows_per_file: int) -> pa.Table:
    """One Parquet file per future micro-batch (maxFilesPerTrigger=1). Returns all rows."""
    directory.mkdir(parents=True, exist_ok=True)
    parts = []
    for k in range(num_files):
        part = ticks(rows_per_file, k * rows_per_file, seed=k)
        pq.write_table(part, directory / f"part-{k:03d}.parquet")
        parts.append(part)
    return pa.concat_tables(parts)


def by_value(table: pa.Table) -> pa.Table:
    """``table`` in the sink's table schema, sorted by ``value``."""
    table = conform(table, table_schema_for(table.schema)).combine_chunks()
    return table.take(pc.sort_indices(table, [("value", "ascending")]))


def run_file_stream(
    spark: Any,
    source: Path,
    checkpoint: Path,
    batch_fn: Callable[[Any, int], None],
    timeout: float = 120,
) -> None:
    """Stream ``source`` one file per micro-batch with ``trigger(availableNow=True)``.

    Raises whatever the query failed with (StreamingQueryException).
    """
    stream = (
        spark.readStream.schema(SOURCE_DDL).option("maxFilesPerTrigger", 1).parquet(str(source))
    )
    query = (
        stream.writeStream.foreachBatch(batch_fn)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        finished = query.awaitTermination(timeout)
    finally:
        if query.isActive:
            query.stop()
    assert finished, f"The streaming query did not finish within {timeout} s."
