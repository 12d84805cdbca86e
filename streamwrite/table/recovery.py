"""Opening a table directory: the writer lock, migration, recovery of segments, deletion of
old ones, and the renames that publish and retire a segment's data file.

Migration of a format-2 table (partition directories named by value, ``2026-11-22``) to the
Hive-style names of format 3 (``ts_day=2026-11-22``) and the slotted ``_txn`` of format 4, by
the writer (it holds the lock)::

    for each partition of _txn: rename <value>/ to <column>=<value>/ (skipped if done)
    fsync the table directory
    publish _txn version 4 naming the new directories (the migration's commit point: a new
    slotted file through temporary file, fdatasync, rename, directory fsync)

A format-3 table (the same directories, a JSON ``_txn`` replaced by rename) only gets the
last step.

A crash before the publish leaves the format-2 ``_txn`` with some directories renamed: the next
open renames the rest and publishes. Readers of a format-2 table read it as it is (its
directory names are its partition names); only while a migration runs may one find a
partition directory renamed under it (a CorruptFileError naming the segment).

Recovery, given the newest ``_txn`` (``format/txn.py`` states the rules; the plan is
:func:`streamwrite.layout.table_recovery.plan_recovery`, run off the event loop)::

    partition dir not in _txn                 never published: delete it
    segment dir listed                        clean (data.parquet and its _pm's newest
                                              commit both at the listed size): keep
                                              otherwise: bring it to exactly the _txn version
                                              (live.file.recover_at): data.parquet must reach
                                              the listed size with the footer XXH64 _txn
                                              recorded (else CorruptFileError, nothing
                                              changed); _pm kept if it holds that version
                                              intact, else rebuilt from the footer chain;
                                              both cut back to that version
    segment dir retired                       keep until the grace period passes (sweep);
                                              its data.parquet (a crash right after the
                                              swap) is renamed to _data.retired
    segment dir neither listed nor retired    never published (creation or compaction
                                              crashed before its _txn): delete it

A table commit syncs its segments' data and ``_pm`` in one round, in no order the disk
promises, and only then writes ``_txn`` (:mod:`streamwrite.layout.appender`): after a power
loss a segment's ``_pm`` may name a commit whose blocks or data never reached the disk, so it
is never trusted beyond ``_txn``. No segment stays open: each is checked through its ``_pm``
and the size of its ``data.parquet``, and recovered only when either disagrees with ``_txn``:
after an open, every listed ``data.parquet`` ends at its committed footer, as engines reading
the table directory need. The table opens a
partition's newest segment when it first appends to it.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa

from streamwrite.arrow.partitioning import check_timestamp_field
from streamwrite.arrow.schema import decode_arrow_schema
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.errors import ConfigError, CorruptFileError, StreamwriteIOError
from streamwrite.format.txn import (
    DATA_FILE,
    FORMAT_VERSION,
    TxnRecord,
)
from streamwrite.io.segments import delete_segment
from streamwrite.layout.actions import RecoverSegment, TableAction
from streamwrite.layout.partitioning import partition_name
from streamwrite.layout.table import next_segment_numbers, publish_txn
from streamwrite.layout.table_recovery import plan_migration, plan_recovery, verify_recovery
from streamwrite.live.file import LiveFile, recover_at
from streamwrite.table.evolution import (
    leaf_names,
    schema_history,
    segment_column_names,
    segment_encryption,
)
from streamwrite.table.execute import run_file_actions, scan_table
from streamwrite.table.staged import clean_staging

__all__ = [
    "LOCK_FILE",
    "TableLock",
    "migrate_layout",
    "recover_segments",
    "run_recovery_actions",
    "segment_numbers",
    "sweep_retired",
]

LOCK_FILE = "_lock"
LOCK_POLL_SECONDS = 0.05


class TableLock:
    """``flock`` on ``<table>/_lock``: one writer per table (readers never lock)."""

    def __init__(self, directory: Path, timeout_seconds: float = 0.0) -> None:
        self._fd: int | None = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + timeout_seconds
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError as exc:
                if time.monotonic() < deadline:
                    time.sleep(LOCK_POLL_SECONDS)
                    continue
                os.close(self._fd)
                self._fd = None
                raise StreamwriteIOError(
                    f"The table {str(directory)!r} is open for writing elsewhere (its "
                    f"{LOCK_FILE} is locked; waited {timeout_seconds:g} s); one writer per table."
                ) from exc

    def release(self) -> None:
        """Unlock (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)  # closing releases the flock
            self._fd = None


def migrate_layout(path: Path, record: TxnRecord) -> TxnRecord:
    """Migrate a format-2 table to the Hive-style partition directories of format 3 and a
    format-2 or 3 table to the slotted ``_txn`` of format 4 (steps and crash rules in the
    module docstring); a format-4 record is returned as it is.

    Returns:
        The newest record (published, if it migrated).

    Raises:
        ConfigError: the schema has a column named like the partition column (the table
            cannot be migrated; it stays readable, in format 2).
        CorruptFileError: a partition is there under both names.
        StreamwriteIOError: a rename or the publish failed (the next open goes on).
    """
    if record.format_version == FORMAT_VERSION:
        return record
    if record.format_version == 3:  # same layout: only _txn changes (slots, rewritten)
        migrated = record.renamed({})
        run_file_actions(path, publish_txn(migrated))
        return migrated
    try:
        check_timestamp_field(
            decode_arrow_schema(record.schema), record.timestamp, record.partition_by
        )
    except ConfigError as exc:
        raise ConfigError(
            f"The table {str(path)!r} (format {record.format_version}) cannot be migrated to the "
            f"Hive-style partition directories of format {FORMAT_VERSION}: {exc} Read it with "
            "streamwrite.read_table and write its rows to a new table."
        ) from exc
    names = {
        old: partition_name(record.timestamp, record.partition_by, old) for old in record.partitions
    }
    existing = frozenset(entry.name for entry in path.iterdir())
    migrated, actions = plan_migration(record, names, existing, str(path))
    run_file_actions(path, actions)
    return migrated


async def _open_at(
    directory: Path,
    listed: int,
    schema: pa.Schema,
    write_options: dict[str, Any],
    encryption: FileEncryption | None,
) -> LiveFile:
    """Open a listed segment and bring it back to its ``_txn`` size."""
    if not (directory / DATA_FILE).exists():
        raise CorruptFileError(f"The segment {str(directory)!r} listed in _txn is missing.", 0)
    live = await LiveFile.open(directory, schema, encryption=encryption, **write_options)
    try:
        current = live.last_commit.parquet_size
        if current > listed:
            await live.rollback(listed)
        elif current < listed:
            raise CorruptFileError(
                f"Segment {str(directory)!r} has {current} committed bytes, the table's _txn "
                f"records {listed}.",
                current,
            )
    except BaseException:
        await live.close()
        raise
    return live


async def run_recovery_actions(
    path: Path,
    actions: Sequence[TableAction],
    schema: pa.Schema,
    write_options: dict[str, Any],
    encryption: FileEncryption | None,
) -> None:
    """Run the actions of a recovery plan in order: file actions in a worker thread (runs of
    them in one call), :class:`RecoverSegment` with
    :func:`streamwrite.live.file.recover_at` (the segment brought to exactly its ``_txn``
    version, ``_pm`` rebuilt if the crash left it without that version)."""
    batch: list[TableAction] = []
    for action in (*actions, None):
        if action is not None and not isinstance(action, RecoverSegment):
            batch.append(action)
            continue
        if batch:
            await anyio.to_thread.run_sync(run_file_actions, path, tuple(batch))
            batch = []
        if action is not None:  # exactly the _txn version: _pm kept or rebuilt, tails cut
            await anyio.to_thread.run_sync(
                partial(
                    recover_at,
                    path / action.path,
                    action.size,
                    action.footer_xxh64,
                    encryption=encryption,
                )
            )


async def recover_segments(
    path: Path,
    record: TxnRecord,
    schema: pa.Schema,
    write_options: dict[str, Any],
    encryption: FileEncryption | None,
) -> TxnRecord:
    """Migrate a format-2 table, then bring the directory back to ``record``: the plan of
    :func:`streamwrite.layout.table_recovery.plan_recovery` (rules in the module docstring), run off
    the event loop. Segments whose ``_pm`` names their listed size are left closed; the others
    are opened (recovered), rolled back, closed.

    Returns:
        The newest record (a migration publishes one).

    Raises:
        CorruptFileError: a listed partition or segment is missing, behind ``_txn``, or its
            footer XXH64 is not the one ``_txn`` recorded.
    """
    record = await anyio.to_thread.run_sync(migrate_layout, path, record)
    await anyio.to_thread.run_sync(clean_staging, path)  # no batch is in flight: lock held
    listing = await anyio.to_thread.run_sync(scan_table, path, record)
    actions = plan_recovery(record, listing, str(path))
    await run_recovery_actions(path, actions, schema, write_options, encryption)
    if any(isinstance(action, RecoverSegment) for action in actions):
        listing = await anyio.to_thread.run_sync(scan_table, path, record)
        verify_recovery(record, listing, str(path))
    local = [p for p in sorted(record.partitions) if not record.partitions[p][-1].is_cold]
    if local:  # one segment opened now: encryption settings that do not fit fail here
        newest = local[-1]
        segment = record.partitions[newest][-1]
        directory = path / newest / segment.name
        own, own_encryption = schema, encryption
        if record.schemas and (directory / DATA_FILE).exists():  # its schema may be older
            own, own_encryption = await _segment_settings(directory, record, encryption)
        live = await _open_at(directory, segment.size, own, write_options, own_encryption)
        await live.close()
    return record


async def _segment_settings(
    directory: Path, record: TxnRecord, encryption: FileEncryption | None
) -> tuple[pa.Schema, FileEncryption | None]:
    """The schema of the table's history a segment was written with, and its encryption
    settings (:mod:`streamwrite.table.evolution`).

    Raises:
        CorruptFileError: the segment's columns are those of no schema of the history.
    """
    names = await anyio.to_thread.run_sync(segment_column_names, directory)
    history = schema_history(record)
    own = next((s for s in history if leaf_names(s) == names), None)
    if own is None:
        raise CorruptFileError(
            f"The segment {str(directory)!r} has the columns {list(names)}, which no schema "
            f"of the table's history has (the current one: {list(leaf_names(history[-1]))}).",
            0,
        )
    return own, segment_encryption(encryption, history, own)


def sweep_retired(
    path: Path,
    record: TxnRecord,
    grace_seconds: float,
    is_pinned: Callable[[str], bool],
    now: float | None = None,
) -> list[str]:
    """Delete retired segments past their grace period that no snapshot of this process pins.

    Returns:
        The ``partition/segment`` paths deleted (the caller publishes a ``_txn`` without them).
    """
    now = time.time() if now is None else now
    deleted = []
    for retired in record.retired:
        if now - retired.since >= grace_seconds and not is_pinned(retired.path):
            delete_segment(path / retired.path)
            deleted.append(retired.path)
    return deleted


def segment_numbers(path: Path, record: TxnRecord) -> dict[str, int]:
    """The next unused segment number of each partition (over ``_txn`` and the disk)."""
    on_disk = {
        partition: tuple(entry.name for entry in (path / partition).iterdir())
        for partition in record.partitions
        if (path / partition).is_dir()
    }
    return next_segment_numbers(record, on_disk)
