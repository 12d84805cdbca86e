"""The command line on a table directory, read-only and without the writer's lock.

Everything here reads ``_txn`` (one atomic version) and each listed segment at its committed
size, so it runs while a writer appends or compacts, and it never creates a file (not even
``_lock``). What a command line can know of a table, and what it cannot::

    knows          the _txn version, schema, partitioning, each partition's segments with
                   their committed size, rows, row groups and dead bytes, bytes a segment's
                   data.parquet holds past its committed size, the retired segments and their
                   age, the applied batch ids, and whether a process holds the table's _lock
                   (Linux: from /proc/locks, without taking the lock)
    cannot know    Table.snapshot() pins (they live in the writer's process; retired segments
                   are kept grace_seconds for readers of other processes), rows buffered in the
                   writer and not committed, the writer's row_group_size (--target-rows)

Partition directory names are the keys of ``_txn``'s ``partitions`` (never built here).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

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
from streamwrite.format.txn import TXN_FILE, TxnRecord, decode_txn
from streamwrite.layout.actions import LiveFileName
from streamwrite.table.recovery import LOCK_FILE

__all__ = [
    "PINS_NOTE",
    "Progress",
    "describe_table",
    "is_table",
    "lock_holders",
    "read_record",
    "table_compaction_status",
    "verify_table",
]

_T = TypeVar("_T")
Progress = Callable[[Iterable[_T], int, str], Iterator[_T]]
"""Wraps an iterable of ``total`` items with a progress display named ``desc``."""

PINS_NOTE = (
    "Table.snapshot() pins live in the writer's process and are not visible here; retired "
    "segments stay on disk grace_seconds for readers of other processes."
)


def _no_progress(items: Iterable[_T], total: int, desc: str) -> Iterator[_T]:
    return iter(items)


def is_table(path: Path) -> bool:
    """True for a directory holding ``_txn``."""
    return (path / TXN_FILE).is_file()


def read_record(path: Path) -> TxnRecord:
    """The table's newest ``_txn`` version.

    Raises:
        CorruptFileError: ``_txn`` is damaged.
        StreamwriteIOError: it cannot be read.
    """
    return decode_txn((path / TXN_FILE).read_bytes())


def lock_holders(path: Path) -> list[int] | None:
    """The ids of the processes that hold the table's ``_lock`` (its writer), without taking
    the lock or creating the file: ``[]`` when nobody holds it, None when this system cannot
    tell (no ``/proc/locks``)."""
    try:
        stat = os.stat(path / LOCK_FILE)
    except FileNotFoundError:
        return []
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
    return holders


def _segment_dir(path: Path, name: str) -> Path:
    return path.joinpath(*name.split("/"))


def _file_size(directory: Path) -> int | None:
    try:
        return (directory / LiveFileName.DATA.value).stat().st_size
    except OSError:
        return None


def describe_table(
    path: Path,
    decryption: DecryptionConfig | None = None,
    progress: Progress[Any] = _no_progress,
) -> dict[str, Any]:
    """A JSON-ready description of the table (what the module docstring says a command line
    can know). A segment that cannot be read is listed with its ``problem``.

    Raises:
        CorruptFileError: ``_txn`` is damaged.
    """
    record = read_record(path)
    holders = lock_holders(path)
    now = time.time()
    partitions = []
    files = list(record.files())
    by_partition: dict[str, list[dict[str, Any]]] = {name: [] for name in sorted(record.partitions)}
    for name, size in progress(files, len(files), "segments"):
        partition, _, segment = name.rpartition("/")
        directory = _segment_dir(path, name)
        on_disk = _file_size(directory)
        entry: dict[str, Any] = {
            "name": segment,
            "committed_size": size,
            "file_size": on_disk,
            "uncommitted_bytes": None if on_disk is None else on_disk - size,
        }
        try:
            info = segment_info(directory, size, decryption)
            entry |= {
                "num_rows": info.num_rows,
                "num_row_groups": len(info.row_group_rows),
                "dead_bytes": info.dead_bytes,
                "encrypted": info.encrypted,
            }
        except (StreamwriteError, OSError) as exc:
            entry["problem"] = str(exc)
        by_partition[partition].append(entry)
    for name, segments in by_partition.items():
        partitions.append(
            {
                "name": name,
                "num_segments": len(segments),
                "num_rows": sum(s.get("num_rows", 0) for s in segments),
                "committed_size": sum(s["committed_size"] for s in segments),
                "dead_bytes": sum(s.get("dead_bytes", 0) for s in segments),
                "segments": segments,
            }
        )
    schema = decode_arrow_schema(record.schema)
    return {
        "table": str(path),
        "txn_version": record.version,
        "schema": [{"name": f.name, "arrow_type": str(f.type)} for f in schema],
        "timestamp": record.timestamp,
        "partition_by": record.partition_by,
        "num_rows": sum(p["num_rows"] for p in partitions),
        "writer_pids": holders,
        "partitions": partitions,
        "retired": [
            {
                "path": r.path,
                "retired_seconds_ago": round(now - r.since, 3),
                "on_disk": _segment_dir(path, r.path).is_dir(),
            }
            for r in record.retired
        ],
        "applied": dict(record.applied),
        "pins": PINS_NOTE,
    }


def verify_table(
    path: Path,
    verify: Callable[[Path, int], tuple[int, int, list[str]]],
    progress: Progress[Any] = _no_progress,
) -> tuple[int, int, list[str], list[str]]:
    """Verify every segment ``_txn`` lists at its committed size with ``verify(directory,
    size) -> (row groups, pages, problems)``.

    Returns:
        ``(row groups, pages, problems, notes)``: bytes past a segment's committed size are a
        problem when no process holds the table (a crash left them: third-party readers of the
        bare ``data.parquet`` fail on them), a note while a writer does (it may be appending).

    Raises:
        CorruptFileError: ``_txn`` is damaged.
    """
    record = read_record(path)
    holders = lock_holders(path)
    problems: list[str] = []
    notes: list[str] = []
    num_row_groups = num_pages = 0
    files = list(record.files())
    for name, size in progress(files, len(files), "segments"):
        directory = _segment_dir(path, name)
        on_disk = _file_size(directory)
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
                    f"Run: streamwrite recover {path} --apply"
                )
        row_groups, pages, found = verify(directory, size)
        num_row_groups += row_groups
        num_pages += pages
        problems += [f"{name}: {p}" for p in found]
    return num_row_groups, num_pages, problems, notes


def table_compaction_status(
    path: Path,
    policy: CompactionPolicy,
    target_rows: int,
    decryption: DecryptionConfig | None = None,
    partition: str | None = None,
    progress: Progress[Any] = _no_progress,
) -> tuple[list[PartitionStatus], list[str]]:
    """The compaction decision per partition, from ``_txn`` and the segments alone.

    With no writer, it is what ``streamwrite compact`` would do now (every segment eligible,
    as ``Table.compact()``). While a process holds the table, it is its background
    compactor's decision: a partition's newest segment counts only once no commit touched it
    for ``policy.idle_seconds`` (its ``data.parquet`` modification time).

    Returns:
        The statuses (``plan_partition``'s) and notes on what the decision assumed.

    Raises:
        ConfigError: ``partition`` is not a partition of the table.
        CorruptFileError: ``_txn`` is damaged; a segment cannot be read.
    """
    record = read_record(path)
    if partition is not None and partition not in record.partitions:
        raise ConfigError(
            f"The table {str(path)!r} has no partition {partition!r}; it has "
            f"{sorted(record.partitions)}."
        )
    holders = lock_holders(path)
    writer = holders is None or bool(holders)
    notes = [f"_txn version {record.version}; rows per merged row group {target_rows:,}."]
    if holders:
        notes.append(
            f"A writer (pid {', '.join(map(str, holders))}) holds the table: this is its "
            "background compactor's decision (newest segments count once idle)."
        )
    elif holders == []:
        notes.append("No process holds the table: this is what `streamwrite compact` does now.")
    elif holders is None:
        notes.append("Whether a writer holds the table is unknown here (no /proc/locks).")
    names = [partition] if partition else sorted(record.partitions)
    statuses = []
    for name in progress(names, len(names), "partitions"):
        segments = record.partitions[name]
        infos: list[SegmentInfo] = [
            segment_info(path / name / s.name, s.size, decryption) for s in segments
        ]
        eligible = len(segments)
        if writer and segments:
            data = path / name / segments[-1].name / LiveFileName.DATA.value
            quiet = time.time() - data.stat().st_mtime
            if quiet < policy.idle_seconds:
                eligible -= 1
        statuses.append(
            plan_partition(name, tuple(infos), eligible, target_rows, policy, force=not writer)
        )
    return statuses, notes
