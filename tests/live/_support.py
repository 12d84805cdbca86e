"""Helpers shared by the live-file failure tests: data, expectations, third-party checks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pyarrow as pa
import pyarrow.parquet as pq

from streamwrite.testing import reference_table
from streamwrite.testing.data import assert_commit_rows as assert_rows
from streamwrite.testing.data import commit_rows as batch
from streamwrite.testing.data import expected_commit_rows as expected_table

__all__ = [
    "DATA_NAME",
    "PM_NAME",
    "SCHEMA",
    "SMALL_SCHEMA",
    "assert_rows",
    "batch",
    "expected_table",
    "pyarrow_read_prefix",
    "run",
    "small_rows",
]

T = TypeVar("T")

SCHEMA = reference_table(1).schema
DATA_NAME = "data.parquet"
PM_NAME = "_pm"


def run(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Drive one coroutine function from synchronous test code."""
    return anyio.run(fn, *args)


def pyarrow_read_prefix(directory: Path, parquet_size: int) -> pa.Table:
    """pyarrow's reading of the committed prefix ``[0, parquet_size)`` of data.parquet."""
    with open(directory / DATA_NAME, "rb") as f:
        data = f.read(parquet_size)
    assert len(data) == parquet_size
    return pq.read_table(pa.BufferReader(data), page_checksum_verification=True)


# Small rows for the integrity tests: strings, nullable columns, several types.
SMALL_SCHEMA = pa.schema(
    [
        pa.field("ts", pa.timestamp("us"), nullable=False),
        pa.field("symbol", pa.string(), nullable=False),
        pa.field("price", pa.float64()),
        pa.field("qty", pa.int32()),
        pa.field("venue", pa.string()),
        pa.field("side", pa.bool_(), nullable=False),
    ]
)
_HOUR_US = 3_600_000_000
_START_US = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z


def small_rows(start: int, num_rows: int) -> pa.Table:
    """``num_rows`` rows from row ``start`` on: nulls in price, qty and venue; 7 hours apart."""
    n = range(start, start + num_rows)
    return pa.table(
        {
            "ts": pa.array([_START_US + i * 7 * _HOUR_US for i in n], pa.timestamp("us")),
            "symbol": [f"SYM{i % 3}" for i in n],
            "price": [None if i % 4 == 0 else 100.0 + i / 8 for i in n],
            "qty": [None if i % 5 == 0 else i * 3 for i in n],
            "venue": [None if i % 3 == 0 else ("XNAS", "ARCX")[i % 2] for i in n],
            "side": [i % 2 == 0 for i in n],
        },
        schema=SMALL_SCHEMA,
    )
