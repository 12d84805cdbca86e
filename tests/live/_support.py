"""Helpers shared by the live-file failure tests: data, expectations, third-party checks."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pyarrow as pa
import pyarrow.parquet as pq

from streamwrite.testing import reference_table

T = TypeVar("T")

SCHEMA = reference_table(1).schema
DATA_NAME = "data.parquet"
PM_NAME = "_pm"


def run(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Drive one coroutine function from synchronous test code."""
    return anyio.run(fn, *args)


@lru_cache(maxsize=4096)
def batch(start_row: int, stop_row: int) -> pa.Table:
    """The rows ``start_row`` up to ``stop_row`` as one appended batch writes them."""
    return reference_table(stop_row - start_row, start_row=start_row)


def expected_table(boundaries: Sequence[int]) -> pa.Table:
    """The file's rows after commits whose cumulative row counts are ``boundaries``.

    Every commit appends ``reference_table(n, start_row=previous_total)``, so the batch
    boundaries determine every value, and ``order_id`` is unique per row.
    """
    parts = [batch(a, b) for a, b in itertools.pairwise(boundaries) if b > a]
    if not parts:
        return SCHEMA.empty_table()
    return pa.concat_tables(parts)


def assert_rows(table: pa.Table, boundaries: Sequence[int]) -> None:
    """``table`` holds exactly the rows of these commits, each once, in commit order."""
    expected = expected_table(boundaries)
    ids = table.column("order_id").to_pylist()
    assert len(ids) == len(set(ids)), "a row id appears twice"
    assert ids == expected.column("order_id").to_pylist()
    assert table.equals(expected), "row ids match but other values differ"


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
