"""The I/O steps the pure state machines ask the shell to perform, in order.

A state machine returns a tuple of actions; the shell executes them one by one and reports
back whether they all succeeded. Crash tests can stop between any two of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["Action", "Fsync", "LiveFileName", "Truncate", "WriteAt"]


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
    """Make everything written to ``file`` durable."""

    file: LiveFileName


@dataclass(frozen=True, slots=True)
class Truncate:
    """Cut ``file`` to ``size`` bytes."""

    file: LiveFileName
    size: int


Action = WriteAt | Fsync | Truncate
