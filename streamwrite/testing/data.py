"""Data generators shared by tests, examples and benchmarks.

Commit ``i`` of a test appends ``commit_rows(total_i, total_(i+1))``; the cumulative totals
("boundaries") then determine every row, so :func:`assert_commit_rows` can check a read against
the commits it should hold.

:func:`reference_table` is the project's reference time-series table (fixed seed)::

    ts        timestamp[ns]  strictly increasing
    symbol    string         500 distinct values, Zipf distributed
    price     double         random walk
    qty       int64          1..1000
    side      bool
    venue     string         8 distinct values
    order_id  string         unique 16-hex-digit ids
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import pyarrow as pa

__all__ = ["assert_commit_rows", "commit_rows", "expected_commit_rows", "reference_table"]

NUM_SYMBOLS = 500
VENUES = ["XNAS", "XNYS", "ARCX", "BATS", "IEXG", "EDGX", "MEMX", "LTSE"]
START_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z


def reference_table(num_rows: int, seed: int = 42, start_row: int = 0) -> pa.Table:
    """``num_rows`` rows of the reference table; ``start_row`` continues a previous call's ids.

    Returns:
        A table with the schema in the module docstring.
    """
    rng = np.random.default_rng(seed + start_row)
    gaps = rng.integers(1, 2_000_000, size=num_rows, dtype=np.int64)
    ts = START_NS + start_row * 1_000_000 + np.cumsum(gaps)
    ranks = (rng.zipf(1.3, size=num_rows) - 1) % NUM_SYMBOLS
    symbols = pa.array([f"SYM{i:03d}" for i in range(NUM_SYMBOLS)])
    price = 100.0 + np.cumsum(rng.normal(0.0, 0.01, size=num_rows)).round(4)
    qty = rng.integers(1, 1001, size=num_rows, dtype=np.int64)
    side = rng.random(num_rows) < 0.5
    venue_idx = rng.integers(0, len(VENUES), size=num_rows)
    ids = np.arange(start_row, start_row + num_rows, dtype=np.uint64) * np.uint64(
        0x9E3779B97F4A7C15
    )
    shifts = np.arange(60, -4, -4, dtype=np.uint64)
    nibbles = ((ids[:, None] >> shifts[None, :]) & np.uint64(15)).astype(np.uint8)
    hex_bytes = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)[nibbles].reshape(-1)
    offsets = np.arange(0, 16 * (num_rows + 1), 16, dtype=np.int32)
    order_id = pa.StringArray.from_buffers(
        num_rows, pa.py_buffer(offsets.tobytes()), pa.py_buffer(hex_bytes.tobytes())
    )
    return pa.table(
        {
            "ts": pa.array(ts, pa.timestamp("ns")),
            "symbol": symbols.take(pa.array(ranks)),
            "price": pa.array(price, pa.float64()),
            "qty": pa.array(qty, pa.int64()),
            "side": pa.array(side, pa.bool_()),
            "venue": pa.array(VENUES, pa.string()).take(pa.array(venue_idx)),
            "order_id": order_id,
        }
    )


@lru_cache(maxsize=4096)
def commit_rows(start_row: int, stop_row: int) -> pa.Table:
    """The rows ``start_row`` up to ``stop_row`` of the reference table, as one commit appends
    them (``reference_table(stop_row - start_row, start_row=start_row)``, cached).

    Returns:
        A table of ``stop_row - start_row`` rows.
    """
    return reference_table(stop_row - start_row, start_row=start_row)


def expected_commit_rows(boundaries: Sequence[int]) -> pa.Table:
    """The rows of commits whose cumulative row counts are ``boundaries`` (``[0, 5, 12]``: two
    commits, of 5 and 7 rows).

    Returns:
        The concatenated :func:`commit_rows` (an empty reference table for no rows).
    """
    parts = [commit_rows(a, b) for a, b in itertools.pairwise(boundaries) if b > a]
    if not parts:
        return reference_table(0)
    return pa.concat_tables(parts)


def assert_commit_rows(table: pa.Table, boundaries: Sequence[int]) -> None:
    """Check that ``table`` holds exactly the rows of these commits, each once, in commit order.

    Raises:
        AssertionError: a row is missing, repeated, out of order or has other values.
    """
    expected = expected_commit_rows(boundaries)
    ids = table.column("order_id").to_pylist()
    if len(ids) != len(set(ids)):
        raise AssertionError("a row id appears twice")
    want = expected.column("order_id").to_pylist()
    if ids != want:
        raise AssertionError(
            f"the table holds {len(ids)} rows, not the {len(want)} rows of the commits "
            f"with cumulative row counts {list(boundaries)} in commit order"
        )
    if not table.equals(expected):
        raise AssertionError("row ids match but other values differ")
