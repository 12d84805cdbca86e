"""Batches of the pipelined and group commit crash test: each a function of (app, batch id)."""

from __future__ import annotations

import zlib
from functools import lru_cache

import numpy as np
import pyarrow as pa

PIPELINED_APP = "pipe"
GROUP_APPS = tuple(f"g{i}" for i in range(8))
DAY_NS = 86_400 * 10**9
START_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z

SCHEMA = pa.schema(
    [
        ("ts", pa.timestamp("ns")),
        ("app", pa.string()),
        ("batch_id", pa.int64()),
        ("row", pa.int64()),
        ("value", pa.float64()),
    ]
)


def batch_rows(app: str, batch_id: int) -> int:
    """Rows in batch ``batch_id`` of ``app`` (20..299)."""
    return 20 + (zlib.crc32(app.encode()) + batch_id * 389) % 280


@lru_cache(maxsize=1024)
def app_batch(app: str, batch_id: int) -> pa.Table:
    """Batch ``batch_id`` of ``app``: rows 0..n-1 spread over one or two days (so a commit
    touches one to three partitions)."""
    n = batch_rows(app, batch_id)
    row = np.arange(n, dtype=np.int64)
    first_day = (batch_id + zlib.crc32(app.encode())) % 3
    ts = START_NS + first_day * DAY_NS + row * ((1 + batch_id % 2) * DAY_NS // n)
    rng = np.random.default_rng([zlib.crc32(app.encode()), batch_id])
    return pa.table(
        {
            "ts": pa.array(ts, pa.timestamp("ns")),
            "app": pa.array([app] * n, pa.string()),
            "batch_id": pa.array(np.full(n, batch_id, dtype=np.int64)),
            "row": pa.array(row),
            "value": pa.array(rng.normal(size=n).round(6)),
        },
        schema=SCHEMA,
    )
