"""Migration of a format-3 table (a JSON ``_txn`` replaced by rename at every commit) to format 4
(two slots updated in place): readers read both; the writer migrates on open through the atomic
path (temporary file, fdatasync, rename, directory fsync); a crash before the rename leaves the
format-3 ``_txn`` (and a temporary file the next migration replaces)."""

from __future__ import annotations

import json
import zlib
from dataclasses import replace
from pathlib import Path

import anyio
import pyarrow as pa

import streamwrite
from streamwrite.format.txn import TXN_FILE, TxnRecord, _body, decode_txn, read_txn_slots
from streamwrite.table.api import open_table, read_snapshot

SCHEMA = pa.schema([("ts", pa.timestamp("us")), ("v", pa.int64())])
OPTIONS = {"compaction_interval": None}


def _rows(start: int, stop: int) -> pa.Table:
    return pa.table(
        {"ts": pa.array(range(start, stop), pa.timestamp("us")), "v": range(start, stop)},
        schema=SCHEMA,
    )


def _format_3(record: TxnRecord) -> bytes:
    """``_txn`` exactly as format 3 wrote it."""
    body = _body(replace(record, format_version=3))
    body["crc32"] = zlib.crc32(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())
    return json.dumps(body, sort_keys=True, indent=1).encode() + b"\n"


async def _build(root: Path) -> TxnRecord:
    async with await open_table(root, SCHEMA, timestamp="ts", partition_by="day", **OPTIONS) as t:
        for k in range(3):
            await t.append(_rows(10 * k, 10 * (k + 1)), app_id="a", batch_id=k)
    record = decode_txn((root / TXN_FILE).read_bytes())
    (root / TXN_FILE).write_bytes(_format_3(record))
    return record


def test_a_format_3_table_is_read_then_migrated_by_its_writer(tmp_path: Path) -> None:
    root = tmp_path / "t"
    record = anyio.run(_build, root)
    old = decode_txn((root / TXN_FILE).read_bytes())
    assert old.format_version == 3 and replace(old, format_version=4) == record
    assert read_snapshot(root).version == record.version
    assert streamwrite.read_table(root).sort_by("v").equals(_rows(0, 30))
    # A migration that crashed before its rename left its temporary file behind.
    (root / f".{TXN_FILE}.{record.version + 1}.tmp").write_bytes(b"torn")

    async def reopen_and_append() -> None:
        async with await open_table(root, **OPTIONS) as table:
            assert table.record.format_version == 4
            assert table.version == record.version + 1  # the migration is a version
            await table.append(_rows(30, 40), app_id="a", batch_id=3)
            await table.append(_rows(40, 50), app_id="a", batch_id=4)

    inode = (root / TXN_FILE).stat().st_ino
    anyio.run(reopen_and_append)
    data = (root / TXN_FILE).read_bytes()
    slots = read_txn_slots(data)
    assert slots is not None and slots.versions[slots.newest or 0] == record.version + 3
    assert (root / TXN_FILE).stat().st_ino != inode  # rewritten once, by the migration
    assert decode_txn(data).applied == {"a": 4}
    assert streamwrite.read_table(root).sort_by("v").equals(_rows(0, 50))
    assert not list(root.glob(".*.tmp"))


def test_commits_after_the_migration_write_in_place(tmp_path: Path) -> None:
    root = tmp_path / "t"
    anyio.run(_build, root)

    async def appends(inodes: list[int]) -> None:
        async with await open_table(root, **OPTIONS) as table:
            for k in range(3, 8):
                await table.append(_rows(10 * k, 10 * (k + 1)), app_id="a", batch_id=k)
                inodes.append((root / TXN_FILE).stat().st_ino)

    inodes: list[int] = []
    anyio.run(appends, inodes)
    assert len(set(inodes)) == 1  # one file, its slots written in place
    assert streamwrite.read_table(root).sort_by("v").equals(_rows(0, 80))
