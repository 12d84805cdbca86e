"""The recovery and migration plans of a table (DESIGN sections 3 and 4), without I/O.

The shell scans the table directory (:class:`PartitionListing` per partition directory, a
:class:`SegmentListing` per segment directory), asks for the plan, runs its actions in order,
scans again and verifies::

    plan_recovery(record, listing)     CorruptFileError before any action for damage (a listed
                                       partition or segment gone, a clean segment whose footer
                                       XXH64 is not the one _txn recorded); else, in order:
        retired segment, data.parquet still there   Rename to _data.retired, FsyncDirectory
        partition directory _txn does not list      RemoveTree, FsyncDirectory(.)
        segment directory neither listed nor retired RemoveTree, FsyncDirectory(partition)
        (a cold segment, listed with its object XXH64, needs no local copy: it is skipped)
        listed segment not clean at its listed size  RecoverSegment (exactly to its _txn
                                                     version: footer checked against the
                                                     recorded XXH64, _pm kept or rebuilt)
    verify_recovery(record, listing)   every listed segment clean at its listed size
    plan_migration(record, names, ...) format 2 -> 3: Rename partition directories still under
                                       their old name, FsyncDirectory(.), publish _txn

A segment is clean when ``data.parquet`` ends at its listed size and the newest commit of its
``_pm`` names that size. Inside a table the ``_pm`` header is no commit point (a segment's data
and ``_pm`` are synced in one round before ``_txn``, in no order), so a crash may leave a
listed segment with a ``_pm`` whose header names an unsynced version: such a segment is not
clean and is recovered to its ``_txn`` version, rebuilding its ``_pm``. Every plan may stop
after any action (a crash): planning again from a new scan finishes the job, since each action
moves the directory toward the plan's end state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from streamwrite.errors import CorruptFileError
from streamwrite.format.txn import DATA_FILE, RETIRED_DATA_FILE, Segment, TxnRecord
from streamwrite.layout.actions import (
    FsyncDirectory,
    RecoverSegment,
    RemoveTree,
    Rename,
    TableAction,
)
from streamwrite.layout.table import publish_txn

__all__ = [
    "PartitionListing",
    "SegmentListing",
    "plan_migration",
    "plan_recovery",
    "verify_recovery",
]


def plan_migration(
    record: TxnRecord, names: Mapping[str, str], existing: frozenset[str], table: str = "."
) -> tuple[TxnRecord, tuple[TableAction, ...]]:
    """The migration of a format-2 table to format 3 (``streamwrite.table.recovery`` states
    its crash rules): rename each partition directory (``names``: old -> new) still under its
    old name, fsync the table directory, publish the renamed record (the commit point).

    Args:
        record: the format-2 record.
        names: each partition's new name.
        existing: the directory names in the table directory now.
        table: names the table directory in error messages.

    Returns:
        The record to publish and the actions (the last of them publish it).

    Raises:
        CorruptFileError: a partition is there under both names (before any action).
    """
    actions: list[TableAction] = []
    for old, new in sorted(names.items()):
        if old == new:
            continue
        if old in existing and new in existing:
            raise CorruptFileError(
                f"The partition {old!r} of {table!r} is there under both its old name and "
                f"its new one {new!r}; move the segments of one into the other by hand.",
                0,
            )
        if old in existing:
            actions.append(Rename(old, new))
    migrated = record.renamed(names)
    return migrated, (*actions, FsyncDirectory("."), *publish_txn(migrated))


@dataclass(frozen=True, slots=True)
class SegmentListing:
    """What the shell found in a segment directory."""

    data_size: int | None
    """Size of ``data.parquet`` (None: absent)."""
    retired_data: bool = False
    """``_data.retired`` is there."""
    committed_size: int | None = None
    """The parquet size the newest commit of its ``_pm`` names (None: no intact ``_pm``)."""
    footer_xxh64: int | None = None
    """The footer XXH64 that commit records."""


@dataclass(frozen=True, slots=True)
class PartitionListing:
    """A partition directory: its segment directories (names ``seg-N``) by name."""

    segments: Mapping[str, SegmentListing]


def _missing_partitions(
    record: TxnRecord, listing: Mapping[str, PartitionListing], table: str
) -> None:
    missing = [
        name
        for name, segments in record.partitions.items()
        if name not in listing and any(not segment.is_cold for segment in segments)
    ]  # a partition of cold segments only may have no local directory
    if missing:
        raise CorruptFileError(
            f"Partition(s) {sorted(missing)} listed in _txn are missing from {table!r}.", 0
        )


def _checksum(path: str, segment: Segment, found: SegmentListing) -> None:
    if segment.footer_xxh64 is None:  # committed before streamwrite recorded it
        return
    if found.footer_xxh64 != segment.footer_xxh64:
        shown = "none" if found.footer_xxh64 is None else f"{found.footer_xxh64:#018x}"
        raise CorruptFileError(
            f"The segment {path!r} at its committed size {segment.size}: the table's _txn "
            f"recorded Parquet footer XXH64 {segment.footer_xxh64:#018x}, its _pm records "
            f"{shown}. The footer or _pm was damaged or replaced; nothing was changed.",
            0,
        )


def _is_clean(segment: Segment, found: SegmentListing | None) -> bool:
    """Its ``_pm``'s newest commit is the listed size and ``data.parquet`` ends there."""
    return (
        found is not None
        and found.data_size == segment.size
        and found.committed_size == segment.size
    )


def plan_recovery(
    record: TxnRecord, listing: Mapping[str, PartitionListing], table: str = "."
) -> tuple[TableAction, ...]:
    """The actions that bring a table directory back to ``record`` (``listing``: its
    partition directories, those not starting with ``.`` or ``_``), in order:

    1. retired segments whose data file is still ``data.parquet``: rename it to
       ``_data.retired``, fsync the segment directory;
    2. partition directories ``record`` does not list: remove them (never published);
    3. segment directories of listed partitions neither listed nor retired: remove them;
    4. listed segments not clean (``data.parquet`` longer than the listed size, or ``_pm``
       not naming it): :class:`RecoverSegment` (roll back to the listed size).

    ``table`` names the table directory in error messages.

    Returns:
        The actions (empty for a clean table).

    Raises:
        CorruptFileError: before any action, when a listed partition or segment is missing,
            or a clean segment's footer XXH64 is not the one ``_txn`` recorded.
    """
    _missing_partitions(record, listing, table)
    retired = {r.path for r in record.retired}
    actions: list[TableAction] = []
    for path in sorted(retired):
        partition, _, name = path.partition("/")
        found = listing.get(partition, PartitionListing({})).segments.get(name)
        if found is not None and found.data_size is not None:
            actions += [
                Rename(f"{path}/{DATA_FILE}", f"{path}/{RETIRED_DATA_FILE}"),
                FsyncDirectory(path),
            ]
    for partition in sorted(listing):
        if partition not in record.partitions:
            actions += [RemoveTree(partition), FsyncDirectory(".")]
    recover: list[TableAction] = []
    for partition, segments in sorted(record.partitions.items()):
        found_segments = listing.get(partition, PartitionListing({})).segments
        listed = {segment.name for segment in segments}
        for name in sorted(found_segments):
            if name not in listed and f"{partition}/{name}" not in retired:
                actions += [RemoveTree(f"{partition}/{name}"), FsyncDirectory(partition)]
        for segment in segments:
            if segment.is_cold:  # in cold storage; a local copy is retired (swept later)
                continue
            path = f"{partition}/{segment.name}"
            found = found_segments.get(segment.name)
            if found is None or found.data_size is None:
                raise CorruptFileError(
                    f"The segment {f'{table}/{path}'!r} listed in _txn is missing (it has no "
                    f"{DATA_FILE}).",
                    0,
                )
            if _is_clean(segment, found):
                _checksum(f"{table}/{path}", segment, found)
            else:
                recover.append(RecoverSegment(path, segment.size, segment.footer_xxh64))
    return (*actions, *recover)


def verify_recovery(
    record: TxnRecord, listing: Mapping[str, PartitionListing], table: str = "."
) -> None:
    """Check a table directory after the actions of :func:`plan_recovery` ran (``table``
    names it in error messages).

    Raises:
        CorruptFileError: a listed partition or segment is missing, not clean at its listed
            size, or its footer XXH64 is not the one ``_txn`` recorded.
    """
    _missing_partitions(record, listing, table)
    for partition, segments in sorted(record.partitions.items()):
        for segment in segments:
            if segment.is_cold:
                continue
            path = f"{table}/{partition}/{segment.name}"
            found = listing[partition].segments.get(segment.name)
            if found is None or not _is_clean(segment, found):
                raise CorruptFileError(
                    f"The segment {path!r} does not end at its listed size {segment.size} "
                    "after recovery.",
                    0,
                )
            _checksum(path, segment, found)
