"""The I/O steps the pure state machines ask the shell to perform, in order.

A state machine returns a tuple of actions; the shell executes them one by one and reports
back whether they all succeeded. Crash tests can stop between any two of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = [
    "Action",
    "CommitSegment",
    "Fsync",
    "FsyncDirectory",
    "FsyncFile",
    "LiveFileName",
    "RecoverSegment",
    "RemoveTree",
    "Rename",
    "TableAction",
    "Truncate",
    "WriteAt",
    "WriteFile",
    "WriteFileAt",
]


class LiveFileName(Enum):
    """The files of a live-file directory (``DATA``'s name is the default: the shell may open
    the data file under another, see :class:`streamwrite.io.local.LiveFileIO`)."""

    DATA = "data.parquet"
    PM = "_pm"


@dataclass(frozen=True, slots=True)
class WriteAt:
    """Write ``data`` at absolute ``offset`` of ``file``."""

    file: LiveFileName
    offset: int
    data: bytes


@dataclass(frozen=True, slots=True)
class Fsync:
    """Make everything written to ``file`` durable (the shell runs ``fdatasync``: the data and
    the size, which is all a live file needs)."""

    file: LiveFileName


@dataclass(frozen=True, slots=True)
class Truncate:
    """Cut ``file`` to ``size`` bytes."""

    file: LiveFileName
    size: int


Action = WriteAt | Fsync | Truncate


# -- table actions (layout/table.py): paths are relative to the table directory, "/"-separated,
# "." for the table directory itself.


@dataclass(frozen=True, slots=True)
class WriteFile:
    """Create (or replace) the file at ``path`` holding exactly ``data``."""

    path: str
    data: bytes


@dataclass(frozen=True, slots=True)
class WriteFileAt:
    """Write ``data`` at absolute ``offset`` of the existing file at ``path`` (in place)."""

    path: str
    offset: int
    data: bytes


@dataclass(frozen=True, slots=True)
class FsyncFile:
    """Make the contents of the file at ``path`` durable; ``data_only``: its data and the
    metadata needed to read it back (``fdatasync``), not its times."""

    path: str
    data_only: bool = False


@dataclass(frozen=True, slots=True)
class Rename:
    """Rename ``source`` to ``target`` (same directory: atomic, replacing ``target``)."""

    source: str
    target: str


@dataclass(frozen=True, slots=True)
class FsyncDirectory:
    """Make the entries of directory ``path`` durable (after a rename, creation or removal)."""

    path: str


@dataclass(frozen=True, slots=True)
class RemoveTree:
    """Remove directory ``path`` and everything below it (nothing if it is gone)."""

    path: str


@dataclass(frozen=True, slots=True)
class CommitSegment:
    """Commit the next ``num_row_groups`` encoded row groups of ``partition`` to its segment
    ``segment`` (a live-file commit, itself a list of :data:`Action`); the shell reports the
    committed size back."""

    partition: str
    segment: str
    num_row_groups: int


@dataclass(frozen=True, slots=True)
class RecoverSegment:
    """Bring the live file of segment ``path`` (``partition/segment``) to exactly its ``_txn``
    version: ``data.parquet`` of ``size`` bytes whose Parquet tail has XXH64 ``footer_xxh64``
    (None: not recorded), ``_pm`` holding that version (rebuilt from the footer chain if it
    does not); a ``data.parquet`` shorter than ``size`` or without that footer there is a
    CorruptFileError (:func:`streamwrite.layout.recovery.plan_recovery_at`)."""

    path: str
    size: int
    footer_xxh64: int | None = None


TableAction = (
    WriteFile
    | WriteFileAt
    | FsyncFile
    | Rename
    | FsyncDirectory
    | RemoveTree
    | CommitSegment
    | RecoverSegment
)
"""The steps the table machine asks of the shell."""
