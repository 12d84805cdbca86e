"""Read-only views of a table directory, without the writer's lock.

Everything here reads ``_txn`` (one atomic version) and each listed segment at its committed
size, so it runs while a writer appends or compacts, and it never creates a file (not even
``_lock``). What can be known of a table from outside its writer, and what cannot::

    knows          the _txn version, schema, partitioning, each partition's segments with
                   their committed size, rows, row groups and dead bytes, bytes a segment's
                   data.parquet holds past its committed size, the retired segments and their
                   age, the applied batch ids, and whether a process holds the table's _lock
                   (Linux: from /proc/locks, without taking the lock)
    cannot know    Table.snapshot() pins (they live in the writer's process; retired segments
                   are kept grace_seconds for readers of other processes), rows buffered in the
                   writer and not committed, the writer's row_group_size

Partition directory names are the keys of ``_txn``'s ``partitions`` (never built here).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from streamwrite.arrow.schema import decode_arrow_schema
from streamwrite.compaction.policy import (
    CompactionPolicy,
    PartitionStatus,
    SegmentInfo,
    plan_partition,
    segment_info,
)
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.errors import ConfigError, StreamwriteError
from streamwrite.format.txn import TXN_FILE
from streamwrite.inspect.files import Progress, Verification, no_progress, verify_file
from streamwrite.io.txn import read_txn
from streamwrite.layout.actions import LiveFileName
from streamwrite.options import DEFAULT_ROW_GROUP_SIZE
from streamwrite.table.recovery import LOCK_FILE

__all__ = [
    "PINS_NOTE",
    "CompactionStatus",
    "PartitionRecord",
    "PartitionStatus",
    "RetiredSegment",
    "SegmentInfo",
    "SegmentRecord",
    "SegmentState",
    "TableInfo",
    "TableRecord",
    "compaction_status",
    "describe_table",
    "is_table",
    "read_table_record",
    "verify_table",
]

PINS_NOTE = (
    "Table.snapshot() pins live in the writer's process and are not visible here; retired "
    "segments stay on disk grace_seconds for readers of other processes."
)


def is_table(path: str | Path) -> bool:
    """Returns: True when ``path`` is a directory holding ``_txn`` (a table)."""
    return (Path(path) / TXN_FILE).is_file()


@dataclass(frozen=True, slots=True)
class SegmentRecord:
    """One segment ``_txn`` lists, and its ``data.parquet`` on disk now."""

    partition: str
    name: str
    committed_size: int
    """The size ``_txn`` commits: readers read the segment up to here."""
    file_size: int | None
    """The length of its ``data.parquet`` now; None when it is missing."""

    @property
    def path(self) -> str:
        """``partition/segment``, relative to the table directory."""
        return f"{self.partition}/{self.name}"

    @property
    def uncommitted_bytes(self) -> int | None:
        """Bytes past the committed size (negative: the file is short); None when missing."""
        return None if self.file_size is None else self.file_size - self.committed_size


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    """One partition of ``_txn``: its segments in row order."""

    name: str
    segments: tuple[SegmentRecord, ...]


@dataclass(frozen=True, slots=True)
class RetiredSegment:
    """A segment compaction replaced; it stays on disk ``grace_seconds`` for readers."""

    path: str
    """``partition/segment``."""
    retired_at: float
    """When it was retired (seconds since the epoch)."""
    on_disk: bool


@dataclass(frozen=True, slots=True)
class TableRecord:
    """A table's newest ``_txn`` version, with what the filesystem says of it now."""

    path: Path
    version: int
    schema: pa.Schema
    timestamp: str | None
    """The designated timestamp column, or None."""
    partition_by: str | None
    """``"hour"``, ``"day"``, ``"month"`` or None (one partition)."""
    partitions: tuple[PartitionRecord, ...]
    """Sorted by name."""
    retired: tuple[RetiredSegment, ...]
    applied: Mapping[str, int]
    """The highest batch id committed per app id (exactly-once appends)."""
    writer_pids: tuple[int, ...] | None
    """The processes holding the table's ``_lock`` (its writer); None when this system cannot
    tell (no ``/proc/locks``)."""

    @property
    def segments(self) -> tuple[SegmentRecord, ...]:
        """Every segment, partitions in order."""
        return tuple(s for p in self.partitions for s in p.segments)

    def partition(self, name: str) -> PartitionRecord:
        """Returns: the partition called ``name``.

        Raises:
            ConfigError: the table has no such partition.
        """
        for partition in self.partitions:
            if partition.name == name:
                return partition
        raise ConfigError(
            f"The table {str(self.path)!r} has no partition {name!r}; it has "
            f"{[p.name for p in self.partitions]}."
        )


def _lock_holders(path: Path) -> tuple[int, ...] | None:
    """The ids of the processes holding ``path/_lock``, without taking the lock or creating
    the file: ``()`` when nobody holds it, None when this system cannot tell."""
    try:
        stat = os.stat(path / LOCK_FILE)
    except FileNotFoundError:
        return ()
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    holders = []
    for line in lines:
        fields = line.split()  # "1: FLOCK ADVISORY WRITE 1234 08:01:5678 0 EOF"
        if "->" in fields:
            continue  # a waiter, not a holder
        if len(fields) >= 6 and fields[1] == "FLOCK":
            _, _, inode = fields[5].rpartition(":")
            if inode.isdigit() and int(inode) == stat.st_ino and fields[4].isdigit():
                holders.append(int(fields[4]))
    return tuple(holders)


def _file_size(directory: Path) -> int | None:
    try:
        return (directory / LiveFileName.DATA.value).stat().st_size
    except OSError:
        return None


def read_table_record(path: str | Path) -> TableRecord:
    """Read the table's newest ``_txn`` version and stat each segment it lists.

    Returns:
        The record.

    Raises:
        FileNotFoundError: ``path`` holds no ``_txn``.
        CorruptFileError: ``_txn`` is damaged.
        OSError: ``_txn`` cannot be read.
    """
    directory = Path(path)
    record = read_txn(directory)
    partitions = tuple(
        PartitionRecord(
            name,
            tuple(
                SegmentRecord(name, s.name, s.size, _file_size(directory / name / s.name))
                for s in record.partitions[name]
            ),
        )
        for name in sorted(record.partitions)
    )
    return TableRecord(
        directory,
        record.version,
        decode_arrow_schema(record.schema),
        record.timestamp,
        record.partition_by,
        partitions,
        tuple(
            RetiredSegment(r.path, r.since, directory.joinpath(*r.path.split("/")).is_dir())
            for r in record.retired
        ),
        dict(record.applied),
        _lock_holders(directory),
    )


@dataclass(frozen=True, slots=True)
class SegmentState:
    """A segment of :func:`describe_table`: its record and what its footer says."""

    record: SegmentRecord
    info: SegmentInfo | None
    """Rows, row groups and dead bytes at the committed size; None when unreadable."""
    problem: str | None
    """Why the segment could not be read, or None."""


@dataclass(frozen=True, slots=True)
class TableInfo:
    """:func:`describe_table`'s result: the record and each segment's footer summary."""

    record: TableRecord
    segments: tuple[SegmentState, ...]
    """Every segment, partitions in order (as ``record.segments``)."""

    @property
    def num_rows(self) -> int:
        """Rows of the segments that could be read."""
        return sum(s.info.num_rows for s in self.segments if s.info is not None)


def describe_table(
    path: str | Path,
    decryption: DecryptionConfig | None = None,
    progress: Progress[Any] = no_progress,
) -> TableInfo:
    """Describe the table (what the module docstring says can be known of it). A segment that
    cannot be read is listed with its ``problem``.

    Args:
        path: the table directory.
        decryption: keys of an encrypted table.
        progress: wraps the iteration over segments (a progress display).

    Returns:
        The ``_txn`` record and every segment's rows, row groups and dead bytes.

    Raises:
        FileNotFoundError: ``path`` holds no ``_txn``.
        CorruptFileError: ``_txn`` is damaged.
    """
    record = read_table_record(path)
    segments = []
    for segment in progress(record.segments, len(record.segments), "segments"):
        directory = record.path / segment.partition / segment.name
        try:
            info = segment_info(directory, segment.committed_size, decryption)
        except (StreamwriteError, OSError) as exc:
            segments.append(SegmentState(segment, None, str(exc)))
        else:
            segments.append(SegmentState(segment, info, None))
    return TableInfo(record, tuple(segments))


def verify_table(
    path: str | Path,
    decryption: DecryptionConfig | None = None,
    progress: Progress[Any] = no_progress,
) -> Verification:
    """Verify every segment ``_txn`` lists, at its committed size (as :func:`verify_file`).

    Bytes past a segment's committed size are a problem when no process holds the table (a
    crash left them: third-party readers of the bare ``data.parquet`` fail on them), a note
    while a writer does (it may be appending).

    Returns:
        The row groups and pages checked, the problems (each naming its segment) and notes.

    Raises:
        FileNotFoundError: ``path`` holds no ``_txn``.
        CorruptFileError: ``_txn`` is damaged.
    """
    record = read_table_record(path)
    holders = record.writer_pids
    problems: list[str] = []
    notes: list[str] = []
    num_row_groups = num_pages = 0
    for segment in progress(record.segments, len(record.segments), "segments"):
        name, size, on_disk = segment.path, segment.committed_size, segment.file_size
        if on_disk is None:
            problems.append(f"{name}: the segment _txn lists is missing.")
            continue
        if on_disk < size:
            problems.append(
                f"{name}: data.parquet has {on_disk} bytes, _txn says {size} are committed."
            )
            continue
        if on_disk > size:
            tail = (
                f"{name}: data.parquet holds {on_disk - size} bytes past its committed size {size}"
            )
            if holders:
                notes.append(f"{tail} (the writer, pid {holders[0]}, may be appending).")
            else:
                problems.append(
                    f"{tail}, left by a crash: readers that open the bare file fail on them. "
                    f"Run: streamwrite recover {record.path} --apply"
                )
        directory = record.path / segment.partition / segment.name
        found = verify_file(directory, decryption=decryption, snapshot=size)
        num_row_groups += found.num_row_groups
        num_pages += found.num_pages
        problems += [f"{name}: {p}" for p in found.problems]
    return Verification(num_row_groups, num_pages, tuple(problems), tuple(notes))


@dataclass(frozen=True, slots=True)
class CompactionStatus:
    """:func:`compaction_status`'s result."""

    partitions: tuple[PartitionStatus, ...]
    """The decision per partition, with its reasons."""
    notes: tuple[str, ...]
    """What the decision assumed (the ``_txn`` version, whether a writer holds the table)."""
    target_row_group_rows: int
    """Rows per merged row group the decision used."""


def compaction_status(
    path: str | Path,
    policy: CompactionPolicy | None = None,
    *,
    decryption: DecryptionConfig | None = None,
    partition: str | None = None,
    progress: Progress[Any] = no_progress,
) -> CompactionStatus:
    """The compaction decision per partition, from ``_txn`` and the segments alone (no lock).

    With no writer, it is what :meth:`Table.compact` would do now (every segment eligible).
    While a process holds the table, it is its background compactor's decision: a
    partition's newest segment counts only once no commit touched it for
    ``policy.idle_seconds`` (its ``data.parquet`` modification time).

    Args:
        path: the table directory.
        policy: the rules (default :class:`CompactionPolicy`'s); rows per merged row group
            are its ``target_row_group_rows``, else the default ``row_group_size`` (the
            writer's own is not recorded in the table).
        decryption: keys of an encrypted table.
        partition: only this partition.
        progress: wraps the iteration over partitions (a progress display).

    Returns:
        The decisions, and notes on what they assumed.

    Raises:
        ConfigError: ``partition`` is not a partition of the table.
        FileNotFoundError: ``path`` holds no ``_txn``.
        CorruptFileError: ``_txn`` is damaged; a segment cannot be read.
    """
    policy = policy or CompactionPolicy()
    target_rows = policy.target_row_group_rows or DEFAULT_ROW_GROUP_SIZE
    record = read_table_record(path)
    chosen = [record.partition(partition)] if partition is not None else record.partitions
    holders = record.writer_pids
    writer = holders is None or bool(holders)
    notes = [f"_txn version {record.version}; rows per merged row group {target_rows:,}."]
    if holders:
        notes.append(
            f"A writer (pid {', '.join(map(str, holders))}) holds the table: this is its "
            "background compactor's decision (newest segments count once idle)."
        )
    elif holders == ():
        notes.append("No process holds the table: this is what `streamwrite compact` does now.")
    else:
        notes.append("Whether a writer holds the table is unknown here (no /proc/locks).")
    statuses = []
    for part in progress(chosen, len(chosen), "partitions"):
        segments = part.segments
        infos = tuple(
            segment_info(record.path / part.name / s.name, s.committed_size, decryption)
            for s in segments
        )
        eligible = len(segments)
        if writer and segments:
            data = record.path / part.name / segments[-1].name / LiveFileName.DATA.value
            if time.time() - data.stat().st_mtime < policy.idle_seconds:
                eligible -= 1
        statuses.append(
            plan_partition(part.name, infos, eligible, target_rows, policy, force=not writer)
        )
    return CompactionStatus(tuple(statuses), tuple(notes), target_rows)


for _export in __all__:  # documented and pickled as streamwrite.inspect.NAME (anyio's style)
    if getattr(globals()[_export], "__module__", None) == __name__:
        globals()[_export].__module__ = "streamwrite.inspect"
