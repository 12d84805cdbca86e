"""Compaction: merge a partition's sealed segments into one, swap it in through ``_txn``.

Why (DESIGN section 4): every commit leaves the previous footer behind as dead bytes and small
commits make small row groups, which slow every reader. Segments (``layout/txn.py``) already
bound footer growth; compaction turns a run of small-row-group segments into one segment of
``target_row_group_rows`` row groups.

Decision, per partition (:func:`plan_partition`, shown by ``Table.compaction_status()``)::

    eligible   sealed segments (never written again), plus the newest one when the partition
               is idle (no row for idle_seconds, or an explicit compact()) and all its row
               groups are committed
    needs work a segment with dead_bytes / size > dead_ratio, or dead_bytes > dead_bytes
               limit, or a row group below small_fraction * target_row_group_rows, or more
               row groups than max_row_groups
    compact    when the eligible segments hold >= min_small_row_groups small row groups,
               or one of them passes a dead-byte limit or max_row_groups; the run merged is
               every eligible segment from the first that needs work to the last that does,
               and only if merging improves it (two or more segments, two or more small row
               groups, or a limit passed); an explicit compact() ignores the thresholds

Steps of one compaction (each a kill point the crash test covers)::

    plan        under the buffer lock: seal the newest segment if it is eligible
    write       new segment seg-N (a live file) in the partition (_compaction_merge.py), its
                data file named _data.pending (no engine reading the table directory sees
                it): row groups at the target size are copied raw (unencrypted, no
                decoding), runs of small ones are decoded and re-encoded by the table's
                executor (optionally sorted by the designated timestamp); encrypted segments
                are always re-encoded, which re-encrypts them under seg-N's own keys and
                ordinals; committed (fsynced) every COMMIT_BYTES of encoded data and at the end
    publish     rename seg-N/_data.pending to data.parquet (directory fsynced)
    swap        under the commit lock: a new _txn lists seg-N in place of the run and retires
                the run's segments with the time: the switch is atomic for readers of _txn
    retire      rename each retired segment's data.parquet to _data.retired (directory
                fsynced): engines reading the directory no longer see it, pinned snapshots
                still read it (the reader opens data.parquet, then _data.retired)
    sweep       retired segments past grace_seconds that no snapshot of this process pins
                are deleted, then a _txn without them is published
    done

A crash before the swap leaves seg-N unpublished (reopening deletes it); after it, the old
segments are retired (reopening finishes their renames) and swept later. Between ``publish``
and ``retire`` an engine reading the table directory sees both the run and seg-N (the swap
is in flight): read through a snapshot then. Readers of other processes that read a snapshot
taken before the swap must finish within ``grace_seconds``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from streamwrite.compaction.merge import Merger, merge_segment
from streamwrite.errors import ConfigError, CorruptFileError
from streamwrite.format.sidecar.codec import read_sidecar
from streamwrite.format.txn import Segment
from streamwrite.layout.actions import LiveFileName
from streamwrite.reader.file import ParquetFile
from streamwrite.table.recovery import delete_segment, publish_pending, retire_segments

if TYPE_CHECKING:
    from streamwrite.table.api import Table

__all__ = [
    "CompactionPolicy",
    "CompactionResult",
    "STEPS",
    "PartitionStatus",
    "SegmentInfo",
    "compact_partition",
    "compact_table",
    "partition_status",
    "plan_partition",
    "run_compactor",
    "segment_info",
]

StepHook = Callable[[str], None]
"""Called with the name of each compaction step as it starts: ``write``, ``publish``,
``swap``, ``retire``, ``sweep``, ``done`` (the crash test kills the process there)."""
STEPS = ("write", "publish", "swap", "retire", "sweep", "done")


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    """When and how a table compacts (see the module docstring for the rules).

    Attributes:
        dead_ratio: compact a segment whose dead bytes exceed this share of its size.
        dead_bytes: ... or exceed this many bytes.
        min_small_row_groups: compact a partition whose eligible segments hold this many
            small row groups.
        small_fraction: a row group is small below this share of ``target_row_group_rows``.
        target_row_group_rows: rows per merged row group; None: the table's row_group_size.
        max_row_groups: compact a segment holding more row groups (the AAD ordinal limit of
            encrypted files is 32767).
        idle_seconds: a partition's newest segment is eligible after no rows came for it
            this long (background compaction; ``compact()`` takes it at once).
        sort_by_timestamp: merged rows are sorted by the designated timestamp (everything is
            then re-encoded).
        grace_seconds: retired segments stay on disk this long for readers of other
            processes (readers of this process pin them, :meth:`Table.snapshot`).
    """

    dead_ratio: float = 0.5
    dead_bytes: int = 1 << 30
    min_small_row_groups: int = 64
    small_fraction: float = 0.5
    target_row_group_rows: int | None = None
    max_row_groups: int = 30_000
    idle_seconds: float = 60.0
    sort_by_timestamp: bool = False
    grace_seconds: float = 60.0

    def __post_init__(self) -> None:
        checks = (
            ("dead_ratio", 0 < self.dead_ratio <= 1),
            ("dead_bytes", self.dead_bytes >= 1),
            ("min_small_row_groups", self.min_small_row_groups >= 1),
            ("small_fraction", 0 < self.small_fraction <= 1),
            ("target_row_group_rows", (self.target_row_group_rows or 1) >= 1),
            ("max_row_groups", 1 <= self.max_row_groups <= 32767),
            ("idle_seconds", self.idle_seconds >= 0 and math.isfinite(self.idle_seconds)),
            ("grace_seconds", self.grace_seconds >= 0 and math.isfinite(self.grace_seconds)),
        )
        for name, ok in checks:
            if not ok:
                raise ConfigError(f"CompactionPolicy.{name} is out of range: {self!r}.")


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """What compaction needs to know of one segment at its committed size."""

    name: str
    size: int
    row_group_rows: tuple[int, ...]
    dead_bytes: int
    """Bytes of superseded footers (every commit but the last left one behind)."""
    encrypted: bool

    @property
    def num_rows(self) -> int:
        """Rows of the segment."""
        return sum(self.row_group_rows)


@dataclass(frozen=True, slots=True)
class PartitionStatus:
    """The compaction decision for one partition, with its reasons."""

    partition: str
    segments: tuple[SegmentInfo, ...]
    eligible: int
    """The first ``eligible`` segments may be compacted (the rest is being appended to)."""
    compact: bool
    reasons: tuple[str, ...]
    merge: tuple[str, ...]
    """The adjacent segments compaction would merge."""


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """One partition compacted."""

    partition: str
    merged: tuple[str, ...]
    segment: Segment
    num_rows: int
    bytes_before: int
    raw_row_groups: int
    reencoded_row_groups: int
    seconds: float


def segment_info(directory: Path, size: int, decryption: Any = None) -> SegmentInfo:
    """Read a segment's footer (at committed ``size``); its dead bytes are the ``unused_bytes``
    the ``_pm`` footer of that commit records.

    Raises:
        CorruptFileError, EncryptionError: as for reading the segment (or its ``_pm`` does not
            record a commit of ``size`` bytes).
    """
    with ParquetFile(directory, snapshot=size, decryption=decryption) as pf:
        rows = tuple(rg.num_rows or 0 for rg in pf.thrift_metadata.row_groups or [])
        encrypted = pf.encryption_algorithm is not None
    sidecar = read_sidecar((directory / LiveFileName.PM.value).read_bytes())
    footer = next((f for _, f in sidecar.footers if f.parquet_file_size == size), None)
    if footer is None:
        raise CorruptFileError(f"{str(directory)!r} has no commit of {size} bytes in its _pm.", 0)
    return SegmentInfo(directory.name, size, rows, footer.unused_bytes, encrypted)


def _target_rows(table: Table, policy: CompactionPolicy) -> int:
    """Rows per merged row group: the policy's, else the table's ``row_group_size``."""
    return policy.target_row_group_rows or table.options.row_group_size


def _small(rows: int, target: int, policy: CompactionPolicy) -> bool:
    return rows < policy.small_fraction * target


def _needs_work(info: SegmentInfo, policy: CompactionPolicy) -> list[str]:
    reasons = []
    if info.size and info.dead_bytes / info.size > policy.dead_ratio:
        reasons.append(f"{info.name}: dead bytes {info.dead_bytes / info.size:.0%} of the file")
    if info.dead_bytes > policy.dead_bytes:
        reasons.append(f"{info.name}: {info.dead_bytes:,} dead bytes")
    if len(info.row_group_rows) > policy.max_row_groups:
        reasons.append(f"{info.name}: {len(info.row_group_rows)} row groups")
    return reasons


def plan_partition(
    partition: str,
    segments: tuple[SegmentInfo, ...],
    eligible: int,
    target_rows: int,
    policy: CompactionPolicy,
    *,
    force: bool = False,
) -> PartitionStatus:
    """Decide whether and what to compact (rules in the module docstring; no I/O).

    A run is only merged when that improves it: it spans two or more segments, holds two
    or more small row groups (merging leaves at most one, at its end), or passes a
    dead-byte or row-group limit. With ``force`` (an explicit ``compact()``) an improvable
    run is merged whatever the thresholds say.
    """
    candidates = segments[:eligible]
    over_limits = [_needs_work(info, policy) for info in candidates]
    limits = [reason for reasons in over_limits for reason in reasons]
    num_small = [sum(_small(r, target_rows, policy) for r in c.row_group_rows) for c in candidates]
    work = [i for i in range(len(candidates)) if num_small[i] or over_limits[i]]
    run = range(work[0], work[-1] + 1) if work else range(0)
    improves = len(run) >= 2 or sum(num_small[i] for i in run) >= 2 or bool(limits)
    reasons = list(limits)
    if sum(num_small) >= policy.min_small_row_groups:
        reasons.append(
            f"{sum(num_small)} small row groups (< {policy.small_fraction:g} x {target_rows:,} "
            f"rows) in {len(candidates)} eligible segment(s), limit {policy.min_small_row_groups}"
        )
    if force and not reasons and improves:
        reasons.append("compact() was asked for")
    merge = tuple(candidates[i].name for i in run) if reasons and improves else ()
    if not merge:
        reasons = [
            f"nothing to do: {sum(num_small)} small row groups in {len(candidates)} eligible "
            f"segment(s) (limit {policy.min_small_row_groups}), dead bytes under the limits"
        ]
    return PartitionStatus(partition, segments, eligible, bool(merge), tuple(reasons), merge)


async def compact_partition(
    table: Table,
    status: PartitionStatus,
    policy: CompactionPolicy,
    hook: StepHook | None = None,
) -> CompactionResult:
    """Merge ``status.merge`` into a new segment and swap it in (steps: module docstring).

    Raises:
        StreamwriteIOError: writing the new segment or publishing ``_txn`` failed (the
            partial segment is deleted now or on the next open; the old ones stay).
    """
    step = hook or (lambda name: None)
    started = time.perf_counter()
    partition = status.partition
    infos = [info for info in status.segments if info.name in status.merge]
    target_rows = _target_rows(table, policy)
    step("write")
    live = await table.new_segment(partition, pending=True)
    small_rows = policy.small_fraction * target_rows
    attempted = False  # the swap was tried: _txn may list the new segment now
    try:
        async with anyio.create_task_group() as task_group:
            sort = policy.sort_by_timestamp
            physical = not sort and not any(info.encrypted for info in infos)
            merger = Merger(table, live, target_rows, small_rows, sort, physical, task_group)
            for info in infos:
                directory = table.path / partition / info.name
                await merge_segment(
                    merger,
                    directory,
                    info.size,
                    info.row_group_rows,
                    info.encrypted,
                    table.decryption,
                )
            size = await merger.finish(table.timestamp)
        step("publish")
        await anyio.to_thread.run_sync(publish_pending, live.path)
        step("swap")
        assert live.last_commit.parquet_size == size
        merged = Segment(live.path.name, size, live.last_commit.footer_checksum)
        attempted = True
        await table.swap_segments(partition, status.merge, merged)
    finally:
        with anyio.CancelScope(shield=True):  # also when close() cancels the compactor
            await live.close()
            if not attempted:  # never listed in _txn: nobody can read it
                await anyio.to_thread.run_sync(delete_segment, live.path)
    step("retire")
    retired = [f"{partition}/{name}" for name in status.merge]
    await anyio.to_thread.run_sync(retire_segments, table.path, retired)
    step("sweep")
    await table.sweep_retired(policy.grace_seconds)
    step("done")
    return CompactionResult(
        partition,
        status.merge,
        merged,
        sum(info.num_rows for info in infos),
        sum(info.size for info in infos),
        merger.raw,
        merger.reencoded,
        time.perf_counter() - started,
    )


# -- driving it from a table -------------------------------------------------------------


async def _segment_info(table: Table, partition: str, segment: Segment) -> SegmentInfo:
    """A segment's info, cached per committed size (sealed segments never change)."""
    key = (partition, segment.name, segment.size)
    info = table.segment_infos.get(key)
    if info is None:
        directory = table.path / partition / segment.name
        info = await anyio.to_thread.run_sync(
            segment_info, directory, segment.size, table.decryption
        )
        table.segment_infos[key] = info
    return info


async def partition_status(
    table: Table, partition: str, policy: CompactionPolicy, *, explicit: bool, seal: bool
) -> PartitionStatus:
    """The decision for ``partition`` now (``explicit``: a ``compact()`` call, which takes
    the newest segment without waiting for ``idle_seconds``; ``seal``: seal it if taken)."""
    idle = None if explicit else policy.idle_seconds
    newest = table.record.partitions[partition][-1]
    if idle is not None and _needs_work(await _segment_info(table, partition, newest), policy):
        idle = None  # past a dead-byte or row-group limit: take it without waiting
    segments, eligible = await table.eligible_segments(partition, idle, seal)
    infos = [await _segment_info(table, partition, segment) for segment in segments]
    current = {(partition, segment.name, segment.size) for segment in segments}
    for key in [k for k in table.segment_infos if k[0] == partition and k not in current]:
        del table.segment_infos[key]  # older sizes of the newest segment, retired segments
    target = _target_rows(table, policy)
    return plan_partition(partition, tuple(infos), eligible, target, policy, force=explicit)


async def compact_table(
    table: Table,
    partitions: list[str],
    policy: CompactionPolicy,
    *,
    explicit: bool,
    hook: StepHook | None = None,
) -> list[CompactionResult]:
    """Compact each of ``partitions`` that its status says to, one at a time.

    A partition's newest segment is sealed only when the run to merge reaches it (decided
    once without sealing, then again after sealing, since rows may have come in between).
    """
    results = []
    async with table.compaction_lock:
        for name in partitions:
            status = await partition_status(table, name, policy, explicit=explicit, seal=False)
            if status.merge and status.merge[-1] == status.segments[-1].name:
                status = await partition_status(table, name, policy, explicit=explicit, seal=True)
            if status.compact:
                results.append(await compact_partition(table, status, policy, hook))
    return results


async def run_compactor(table: Table) -> None:
    """Background compaction every ``compaction_interval`` seconds while the table is open;
    errors are kept in ``table.last_compaction_error`` and the next round tries again."""
    interval = table.settings.compaction_interval
    assert interval is not None
    with table.compactor_scope:  # close() cancels it
        while True:
            await anyio.sleep(interval)
            if not table.is_open:
                return
            try:
                await compact_table(
                    table,
                    sorted(table.record.partitions),
                    table.settings.compaction,
                    explicit=False,
                )
            except Exception as exc:
                table.last_compaction_error = exc
                table.metrics.compaction_errors += 1
