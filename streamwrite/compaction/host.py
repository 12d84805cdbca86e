"""What compaction needs of the table it compacts: :class:`CompactionHost`, a protocol.

Compaction sits below tables in the import order (DESIGN section 2), so it never names
``streamwrite.table.Table``; the table satisfies this protocol structurally and passes itself
(mypy checks it there). What each member is for::

    path, record              where the segments are; the partitions and their segments now,
                              the designated timestamp (sort_by_timestamp)
    options, parquet_schema   encoding the merged row groups (row_group_size: default target)
    executor, decryption      where re-encoding runs; reading encrypted segments
    settings                  the background compactor's policy and interval
    is_open, compactor_scope  the background compactor stops when the table closes
    compaction_lock           one compaction at a time (close() waits for it)
    segment_infos             a cache of what sealed segments hold (keyed by committed size)
    metrics, last_compaction_error
                              the background compactor's errors (it keeps running)
    eligible_segments         which leading segments may be taken, sealing the newest
    new_segment               the merged segment (its data file _data.pending)
    swap_segments             the commit point: _txn lists the merged segment, retires the run
    sweep_retired             delete retired segments past their grace period
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import anyio

from streamwrite.arrow.schema import ParquetSchema
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.format.txn import Segment, TxnRecord
from streamwrite.layout.compaction import SegmentInfo
from streamwrite.live.file import LiveFile
from streamwrite.options import CompactionPolicy, WriteOptions
from streamwrite.pool.executor import Executor

__all__ = ["CompactionHost", "CompactionMetrics", "CompactionSettings", "SegmentInfoCache"]

SegmentInfoCache = dict[tuple[str, str, int], SegmentInfo]
"""(partition, segment, committed size) -> what the segment holds at that size."""


class CompactionSettings(Protocol):
    """The table settings the background compactor reads."""

    @property
    def compaction(self) -> CompactionPolicy:
        """The table's policy."""
        ...

    @property
    def compaction_interval(self) -> float | None:
        """Seconds between background rounds (None: no background compaction)."""
        ...


class CompactionMetrics(Protocol):
    """The table counter the background compactor updates."""

    compaction_errors: int


class CompactionHost(Protocol):
    """An open table, as compaction uses it (see the module docstring)."""

    last_compaction_error: Exception | None
    """The last error of the background compactor."""

    @property
    def path(self) -> Path:
        """The table directory."""
        ...

    @property
    def record(self) -> TxnRecord:
        """The newest committed ``_txn`` record."""
        ...

    @property
    def options(self) -> WriteOptions:
        """The table's write options."""
        ...

    @property
    def parquet_schema(self) -> ParquetSchema:
        """The table's Parquet schema."""
        ...

    @property
    def executor(self) -> Executor:
        """Where encoding jobs run."""
        ...

    @property
    def decryption(self) -> DecryptionConfig | None:
        """Reads the table's segments (None: unencrypted)."""
        ...

    @property
    def settings(self) -> CompactionSettings:
        """The table's settings."""
        ...

    @property
    def metrics(self) -> CompactionMetrics:
        """The table's counters."""
        ...

    @property
    def is_open(self) -> bool:
        """Not closed, and no commit failed."""
        ...

    @property
    def compaction_lock(self) -> anyio.Lock:
        """Held by a compaction round."""
        ...

    @property
    def compactor_scope(self) -> anyio.CancelScope:
        """The background compactor runs in it; closing the table cancels it."""
        ...

    @property
    def segment_infos(self) -> SegmentInfoCache:
        """Compaction's cache of segment infos."""
        ...

    async def eligible_segments(
        self, partition: str, idle_seconds: float | None, seal: bool
    ) -> tuple[tuple[Segment, ...], int]:
        """Returns: the partition's segments now, and how many leading ones compaction may
        take (the newest when idle ``idle_seconds``, None: now; sealed if ``seal``)."""
        ...

    async def new_segment(self, partition: str, *, pending: bool) -> LiveFile:
        """Returns: a new, unpublished segment of ``partition`` (``pending``: its data file
        is ``_data.pending``)."""
        ...

    async def swap_segments(
        self, partition: str, replaced: tuple[str, ...], merged: Segment
    ) -> None:
        """Publish a ``_txn`` listing ``merged`` in place of ``replaced`` (retired)."""
        ...

    async def sweep_retired(self, grace_seconds: float) -> list[str]:
        """Returns: the retired ``partition/segment`` paths deleted (past ``grace_seconds``,
        unpinned)."""
        ...
