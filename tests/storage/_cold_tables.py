"""Tables with cold segments for the cold-read tests: real tables written with ``open_table``,
then segments tiered by hand through the format API (the steps of the tiering protocol:
upload bytes ``[0, size)``, publish ``record.tiered(...)`` in ``_txn``, put the cold view's log
object with a conditional put, delete the local copy)."""

from __future__ import annotations

import functools
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from streamwrite.format.txn import (
    TxnRecord,
    cold_object_key,
    encode_txn_payload,
    txn_log_name,
)
from streamwrite.io.remote import ObjectStore, open_store
from streamwrite.io.txn import read_txn
from streamwrite.options import CompactionPolicy
from streamwrite.table.api import open_table
from streamwrite.table.state import write_txn
from streamwrite.testing import reference_table

DAY_NS = 86_400 * 10**9
OPTIONS: dict[str, Any] = {
    "timestamp": "ts",
    "partition_by": "day",
    "compaction_interval": None,
}


def tick_rows(num_rows: int, start_row: int = 0, num_days: int = 2) -> pa.Table:
    """``reference_table`` rows ``start_row..`` spread over ``num_days`` day partitions
    (day = row % days), ``order_id`` unique."""
    table = reference_table(num_rows, start_row=start_row)
    day = (start_row + np.arange(num_rows)) % num_days
    ts = pc.cast(table["ts"], pa.int64()).to_numpy() + day * DAY_NS
    return table.set_column(0, "ts", pa.array(ts, pa.timestamp("ns")))


def write_table(path: Path, batches: Iterable[pa.Table], **options: Any) -> TxnRecord:
    """Append ``batches`` (one commit each) to a new table at ``path``; returns its record."""
    batches = list(batches)

    async def go() -> TxnRecord:
        async with await open_table(path, batches[0].schema, **{**OPTIONS, **options}) as table:
            for i, batch in enumerate(batches):
                await table.append(batch, app_id="w", batch_id=i)
            return table.record

    return anyio.run(functools.partial(go))


NO_COMPACTION = CompactionPolicy(min_small_row_groups=10**6, grace_seconds=0.0)
"""Compaction never merges (every settled segment may move); retired copies go at once."""


def tier_table(
    path: Path, url: str, storage_options: Mapping[str, Any] | None, **options: Any
) -> list[str]:
    """Reopen the table at ``path`` with cold storage ``url`` and ``table.tier()`` every
    segment due at once (``cold_after=0``), then sweep the local copies; returns the paths
    moved."""

    async def go() -> list[str]:
        async with await open_table(
            path,
            **{
                **OPTIONS,
                "compaction": NO_COMPACTION,
                "commit_interval": None,
                **options,
                "cold_storage": url,
                "storage_options": storage_options,
                "cold_after": 0.0,
            },
        ) as table:
            moved = await table.tier()
            await table.sweep_retired()
            return moved

    return anyio.run(functools.partial(go))


def tier_by_hand(
    path: Path,
    url: str,
    storage_options: Mapping[str, Any] | None,
    names: Iterable[str] | None = None,
    *,
    delete_local: bool = True,
) -> TxnRecord:
    """Tier segments ``names`` (``partition/segment``; default every segment) of the closed
    table at ``path`` to the cold root ``url``, one ``_txn`` version each, as the tiering
    does; returns the last record."""
    store = open_store(url, storage_options)
    record = read_txn(path)
    wanted = [name for name, _ in record.files()] if names is None else list(names)
    sizes = dict(record.files())
    for name in wanted:
        size = sizes[name]
        data = (path / name / "data.parquet").read_bytes()[:size]
        store.put_file(cold_object_key(name), path / name / "data.parquet", size)
        record = record.tiered(name, xxhash.xxh64_intdigest(data), store.url)
        write_txn(path, record)
        assert store.put_if_absent(
            txn_log_name(record.version), encode_txn_payload(record.cold_view())
        )
        if delete_local:
            shutil.rmtree(path / name)
    return record


def bucket_objects(store: ObjectStore) -> dict[str, bytes]:
    """Every object under the store's root, by key."""
    return {key: store.read_all(key) for key in store.list("")}


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root``: relative path -> (size, mtime_ns)."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
