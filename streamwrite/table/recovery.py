"""Opening a table directory: the writer lock, migration, recovery of segments, deletion of
old ones, and the renames that publish and retire a segment's data file.

Migration of a format-2 table (partition directories named by value, ``2026-11-22``) to the
Hive-style names of format 3 (``ts_day=2026-11-22``), by the writer (it holds the lock)::

    for each partition of _txn: rename <value>/ to <column>=<value>/ (skipped if done)
    fsync the table directory
    publish _txn version 3 naming the new directories (the migration's commit point)

A crash before the publish leaves the format-2 ``_txn`` with some directories renamed: the next
open renames the rest and publishes. Readers of a format-2 table read it as it is (its
directory names are its partition names); only while a migration runs may one find a
partition directory renamed under it (a CorruptFileError naming the segment).

Recovery, given the newest ``_txn`` (``layout/txn.py`` states the rules)::

    partition dir not in _txn                 never published: delete it
    segment dir listed                        committed size == listed: keep (a torn tail
                                              past it is truncated)
                                              ahead of _txn: roll back to the listed size
                                              behind, or missing: CorruptFileError
    segment dir retired                       keep until the grace period passes (sweep);
                                              its data.parquet (a crash right after the
                                              swap) is renamed to _data.retired
    segment dir neither listed nor retired    never published (creation or compaction
                                              crashed before its _txn): delete it

No segment stays open: each is checked through its ``_pm`` (the last footer names the
committed parquet size) and the size of its ``data.parquet``, and opened, which recovers it,
only when either disagrees with ``_txn``: after an open, every listed ``data.parquet`` ends at
its committed footer, as engines reading the table directory need. The table opens a
partition's newest segment when it first appends to it.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa

from streamwrite.arrow.partitioning import check_timestamp_field
from streamwrite.arrow.schema import decode_arrow_schema
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.errors import ConfigError, CorruptFileError, StreamwriteError, StreamwriteIOError
from streamwrite.format.sidecar.codec import SidecarFooter, read_version
from streamwrite.format.txn import (
    DATA_FILE,
    FORMAT_VERSION,
    Segment,
    TxnRecord,
    segment_number,
)
from streamwrite.io.local import fsync_directory
from streamwrite.io.segments import delete_segment, retire_segments
from streamwrite.layout.actions import LiveFileName
from streamwrite.layout.partitioning import partition_name
from streamwrite.live.file import LiveFile

__all__ = [
    "LOCK_FILE",
    "TableLock",
    "migrate_layout",
    "recover_segments",
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
    """Migrate a format-2 table to the Hive-style partition directories of format 3 (steps
    and crash rules in the module docstring); a format-3 record is returned as it is.

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
    for old, new in sorted(names.items()):
        if old == new:
            continue
        source, target = path / old, path / new
        if source.exists() and target.exists():
            raise CorruptFileError(
                f"The partition {old!r} of {str(path)!r} is there under both its old name and "
                f"its new one {new!r}; move the segments of one into the other by hand.",
                0,
            )
        if source.exists():
            try:
                os.rename(source, target)
            except OSError as exc:
                raise StreamwriteIOError(
                    f"Renaming the partition {str(source)!r} to {new!r} failed: {exc}."
                ) from exc
    fsync_directory(path)
    from streamwrite.table.state import write_txn  # it imports compaction, which imports us

    migrated = record.renamed(names)
    write_txn(path, migrated)
    return migrated


def _clean_footer(directory: Path, listed: int) -> SidecarFooter | None:
    """The newest ``_pm`` footer of the segment (one read of ``_pm``) if the segment is
    clean: ``_pm`` is intact, its newest commit is the listed size, and ``data.parquet`` ends
    there (no torn tail: an append killed after writing its footer to ``data.parquet`` leaves
    one that engines reading the file from its end would take for the newest commit). None
    otherwise: the segment needs recovery."""
    try:
        if (directory / DATA_FILE).stat().st_size != listed:
            return None
        _, _, footer = read_version((directory / LiveFileName.PM.value).read_bytes())
    except (OSError, StreamwriteError):
        return None
    return footer if footer.parquet_file_size == listed else None


def _check_footer_checksum(directory: Path, segment: Segment, footer: SidecarFooter) -> None:
    """Check that the segment's ``_pm`` footer for its listed size records the footer XXH64
    that ``_txn`` recorded when the table committed it (a ``_pm`` rebuilt from a damaged
    footer chain, or replaced, records another one).

    Raises:
        CorruptFileError: the two differ.
    """
    if segment.footer_xxh64 is None:  # committed before streamwrite recorded it
        return
    recorded = footer.parquet_footer_checksum
    if recorded != segment.footer_xxh64:
        shown = "none" if recorded is None else f"{recorded:#018x}"
        raise CorruptFileError(
            f"The segment {str(directory)!r} at its committed size {segment.size}: the table's "
            f"_txn recorded Parquet footer XXH64 {segment.footer_xxh64:#018x}, its _pm records "
            f"{shown}. The footer or _pm was damaged or replaced; nothing was changed.",
            0,
        )


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


async def recover_segments(
    path: Path,
    record: TxnRecord,
    schema: pa.Schema,
    write_options: dict[str, Any],
    encryption: FileEncryption | None,
) -> TxnRecord:
    """Migrate a format-2 table, then apply the recovery rules of the module docstring.
    Segments whose ``_pm`` names their listed size are left closed; the others are opened
    (recovered), rolled back, closed.

    Returns:
        The newest record (a migration publishes one).
    """
    record = await anyio.to_thread.run_sync(migrate_layout, path, record)
    retired = {r.path for r in record.retired}
    await anyio.to_thread.run_sync(retire_segments, path, sorted(retired))
    for child in sorted(p for p in path.iterdir() if p.is_dir() and p.name[0] not in "._"):
        segments = record.partitions.get(child.name)
        if segments is None:  # only unpublished segments
            delete_segment(child)
            continue
        listed = {segment.name for segment in segments}
        for entry in sorted(child.iterdir()):
            unpublished = entry.name not in listed and f"{child.name}/{entry.name}" not in retired
            if entry.is_dir() and segment_number(entry.name) is not None and unpublished:
                delete_segment(entry)
        for segment in segments:
            directory = child / segment.name
            footer = _clean_footer(directory, segment.size)
            if footer is None:
                live = await _open_at(directory, segment.size, schema, write_options, encryption)
                await live.close()  # recovered: the listed size is now the newest commit
                footer = _clean_footer(directory, segment.size)
                if footer is None:
                    raise CorruptFileError(
                        f"The segment {str(directory)!r} does not end at its listed size "
                        f"{segment.size} after recovery.",
                        0,
                    )
            _check_footer_checksum(directory, segment, footer)
    missing = [name for name in record.partitions if not (path / name).is_dir()]
    if missing:
        raise CorruptFileError(
            f"Partition(s) {sorted(missing)} listed in _txn are missing from {str(path)!r}.", 0
        )
    if record.partitions:  # one segment opened now: encryption settings that do not fit fail here
        newest = max(record.partitions)
        segment = record.partitions[newest][-1]
        live = await _open_at(
            path / newest / segment.name, segment.size, schema, write_options, encryption
        )
        await live.close()
    return record


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
    numbers: dict[str, int] = {}

    def see(partition: str, name: str) -> None:
        number = segment_number(name)
        if number is not None:
            numbers[partition] = max(numbers.get(partition, 0), number + 1)

    for partition, segments in record.partitions.items():
        for segment in segments:
            see(partition, segment.name)
    for retired in record.retired:
        see(*retired.path.split("/", 1))
    for partition in record.partitions:
        if (path / partition).is_dir():
            for entry in (path / partition).iterdir():
                see(partition, entry.name)
    return numbers
