"""Rows with nested columns for the live-file, table, compaction and encryption tests:
every nested kind (list, large_list, fixed_size_list, struct, map, nesting of them), nullable
and required levels, empty lists, null lists, lists of nulls, null struct fields, maps with
null values; a designated timestamp for partitioning."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

HOUR_US = 3_600_000_000
START_US = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z

NESTED_SCHEMA = pa.schema(
    [
        pa.field("ts", pa.timestamp("us"), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("vals", pa.list_(pa.float64())),
        pa.field("tags", pa.large_list(pa.field("item", pa.string(), nullable=False))),
        pa.field("pair", pa.list_(pa.int32(), 2)),
        pa.field(
            "s",
            pa.struct(
                [
                    pa.field("a", pa.int64()),
                    pa.field("b", pa.string()),
                    pa.field("inner", pa.struct([pa.field("x", pa.float64(), nullable=False)])),
                ]
            ),
        ),
        pa.field("m", pa.map_(pa.string(), pa.int64())),
        pa.field("deep", pa.list_(pa.struct([pa.field("k", pa.list_(pa.string()))]))),
    ]
)


def nested_rows(start: int, num_rows: int, schema: pa.Schema = NESTED_SCHEMA) -> pa.Table:
    """Rows ``start .. start + num_rows`` (deterministic per row index; 1 hour apart)."""
    n = np.arange(start, start + num_rows)
    lengths = (n * 7 + n // 3) % 5
    columns = {
        "ts": pa.array(START_US + n * HOUR_US, pa.timestamp("us")),
        "id": pa.array(n),
        "vals": [
            None if i % 11 == 0 else [None if (i + j) % 4 == 0 else i + j / 8 for j in range(k)]
            for i, k in zip(n, lengths, strict=True)
        ],
        "tags": [[f"t{(i + j) % 9}" for j in range(k)] for i, k in zip(n, lengths, strict=True)],
        "pair": [None if i % 6 == 0 else [int(i), None if i % 3 else -int(i)] for i in n],
        "s": [
            None
            if i % 13 == 0
            else {
                "a": None if i % 5 == 0 else int(i % 97),
                "b": None if i % 7 == 0 else f"b{i % 17}",
                "inner": None if i % 4 == 0 else {"x": i / 3},
            }
            for i in n
        ],
        "m": [
            None if i % 9 == 0 else [(f"k{j}", None if j == 1 else int(i * j)) for j in range(k)]
            for i, k in zip(n, lengths, strict=True)
        ],
        "deep": [
            None
            if i % 10 == 0
            else [
                None if j == 2 else {"k": None if j == 1 else [f"d{i % 5}"] * j} for j in range(k)
            ]
            for i, k in zip(n, lengths, strict=True)
        ],
    }
    arrays = [pa.array(columns[f.name], f.type) for f in NESTED_SCHEMA]
    table = pa.Table.from_arrays(arrays, schema=NESTED_SCHEMA)
    return table.select(schema.names).cast(schema) if schema is not NESTED_SCHEMA else table
