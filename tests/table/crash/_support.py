"""Batches of the table crash test: each is a deterministic function of its batch id."""

from __future__ import annotations

import os
from functools import lru_cache

import numpy as np
import pyarrow as pa

APP_ID = "crash"
SEGMENT_ROW_GROUPS = 3
"""Tiny segments, so that kills also land while a partition starts a new segment."""
DAY_NS = 86_400 * 10**9
START_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z
NUM_DAYS = 6
"""Batches start on one of these days (cycling), so old partitions keep receiving rows."""

NESTED = os.environ.get("STREAMWRITE_CRASH_NESTED") == "1"
"""Batches also carry nested columns (a list of structs of lists, a map): set for the parent
and its children by ``test_nested_crash``."""
_NESTED_FIELDS = [
    pa.field(
        "items",
        pa.list_(pa.struct([pa.field("k", pa.string()), pa.field("v", pa.list_(pa.int64()))])),
    ),
    pa.field("attrs", pa.map_(pa.string(), pa.float64())),
]

SCHEMA = pa.schema(
    [
        ("ts", pa.timestamp("ns")),
        ("batch_id", pa.int64()),
        ("row", pa.int64()),
        ("value", pa.float64()),
        ("tag", pa.string()),
        *(_NESTED_FIELDS if NESTED else []),
    ]
)


def batch_rows(batch_id: int) -> int:
    """Rows in batch ``batch_id`` (200..999)."""
    return 200 + (batch_id * 389) % 800


@lru_cache(maxsize=512)
def make_batch(batch_id: int) -> pa.Table:
    """Batch ``batch_id``: ``batch_rows(batch_id)`` rows with ``row`` 0..n-1, timestamps spread
    evenly over 2 or 3 days from day ``batch_id % NUM_DAYS`` (so one commit touches 2-4
    partitions)."""
    n = batch_rows(batch_id)
    span = (2 + batch_id % 2) * DAY_NS
    row = np.arange(n, dtype=np.int64)
    ts = START_NS + (batch_id % NUM_DAYS) * DAY_NS + 3_600 * 10**9 + row * (span // n)
    rng = np.random.default_rng(batch_id)
    columns = {
        "ts": pa.array(ts, pa.timestamp("ns")),
        "batch_id": pa.array(np.full(n, batch_id, dtype=np.int64)),
        "row": pa.array(row),
        "value": pa.array(rng.normal(size=n).round(6)),
        "tag": pa.array([f"b{batch_id}-r{i}" for i in range(n)], pa.string()),
    }
    if NESTED:
        columns["items"] = pa.array(
            [
                None
                if i % 7 == 0
                else [{"k": f"k{j}", "v": None if j == 1 else [i] * j} for j in range(i % 4)]
                for i in range(n)
            ],
            _NESTED_FIELDS[0].type,
        )
        columns["attrs"] = pa.array(
            [[("a", float(i)), ("b", None)] if i % 3 else None for i in range(n)],
            _NESTED_FIELDS[1].type,
        )
    return pa.table(columns, schema=SCHEMA)
