"""Shared pieces of the tiering tests: a small table's rows, and reading a table whose
segments may be cold by hand (local files and objects, each cut at its committed size)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from streamwrite.format.txn import TXN_FILE, TxnRecord, cold_object_key, decode_txn
from streamwrite.io.remote import ObjectStore
from streamwrite.options import CompactionPolicy
from streamwrite.table.paths import segment_data_path

DAY_NS = 86_400 * 10**9
START_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z
SCHEMA = pa.schema([("ts", pa.timestamp("ns")), ("id", pa.int64()), ("value", pa.float64())])
NO_COMPACTION = CompactionPolicy(min_small_row_groups=10**6, grace_seconds=0.0)
"""Compaction never wants to merge (so every settled segment may move); retired copies are
swept at once."""
TABLE_OPTIONS: dict[str, Any] = {
    "timestamp": "ts",
    "partition_by": "day",
    "segment_row_groups": 1,
    "row_group_size": 50,
    "commit_interval": None,
    "compaction": NO_COMPACTION,
    "compaction_interval": None,
    "cold_after": 0.0,
}


def make_batch(start: int, num_rows: int, num_days: int = 2) -> pa.Table:
    """Rows ``id`` = start .. start + num_rows - 1, spread over ``num_days`` days."""
    ids = pa.array(range(start, start + num_rows), pa.int64())
    ts = pa.array(
        [START_NS + (i % num_days) * DAY_NS + i for i in range(start, start + num_rows)],
        pa.timestamp("ns"),
    )
    values = pa.array([i * 0.5 for i in range(start, start + num_rows)], pa.float64())
    return pa.table([ts, ids, values], schema=SCHEMA)


def read_record(directory: Path) -> TxnRecord:
    return decode_txn((directory / TXN_FILE).read_bytes())


def segment_bytes(directory: Path, store: ObjectStore, partition: str, segment: Any) -> bytes:
    """A segment's committed bytes, from its object if cold, else from its local file."""
    path = f"{partition}/{segment.name}"
    if segment.is_cold:
        data = store.read_all(cold_object_key(path))
        assert len(data) == segment.size, (path, len(data), segment.size)
        return data
    return segment_data_path(directory / path).read_bytes()[: segment.size]


def read_rows(directory: Path, store: ObjectStore) -> pa.Table:
    """Every committed row of the table at ``directory`` (sorted by id), reading each cold
    segment from the store: what the table holds, wherever it lives."""
    record = read_record(directory)
    pieces = [
        pq.read_table(io.BytesIO(segment_bytes(directory, store, partition, segment)))
        for partition in sorted(record.partitions)
        for segment in record.partitions[partition]
    ]
    if not pieces:
        return SCHEMA.empty_table()
    rows = pa.concat_tables([p.select(SCHEMA.names).cast(SCHEMA) for p in pieces])
    return rows.sort_by("id")
