"""Batches of the dedup crash test: each a deterministic function of its 16-byte dedup key."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pyarrow as pa

DAY_NS = 86_400 * 10**9
START_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z
KEY_SIZE = 16

SCHEMA = pa.schema(
    [
        ("ts", pa.timestamp("ns")),
        ("key", pa.string()),
        ("row", pa.int64()),
        ("value", pa.float64()),
    ]
)


def key_rows(key: bytes) -> int:
    """Rows of the request whose dedup key is ``key`` (5..84)."""
    return 5 + key[0] % 80


@lru_cache(maxsize=4096)
def key_batch(key: bytes) -> pa.Table:
    """The request body of ``key``: rows 0..n-1, over one or two of three days (so a commit
    touches one to three partitions)."""
    n = key_rows(key)
    row = np.arange(n, dtype=np.int64)
    first_day = key[1] % 3
    ts = START_NS + first_day * DAY_NS + row * ((1 + key[2] % 2) * DAY_NS // n)
    rng = np.random.default_rng(list(key))
    return pa.table(
        {
            "ts": pa.array(ts, pa.timestamp("ns")),
            "key": pa.array([key.hex()] * n, pa.string()),
            "row": pa.array(row),
            "value": pa.array(rng.normal(size=n).round(6)),
        },
        schema=SCHEMA,
    )
