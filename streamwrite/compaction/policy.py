"""Compaction: merge a partition's sealed segments into one, swap it in through ``_txn``.

Why (DESIGN section 4): every commit leaves the previous footer behind as dead bytes and small
commits make small row groups, which slow every reader. Segments (``format/txn.py``) already
bound footer growth; compaction turns a run of small-row-group segments into one segment of
``target_row_group_rows`` row groups. The async shell over :mod:`streamwrite.layout.compaction`,
which holds the decisions (which segments, the way of each row group); this module reads the
segments' footers, runs the steps and works on a :class:`~streamwrite.compaction.host.
CompactionHost` (the table).

Steps of one compaction (each a kill point the crash test covers)::

    plan        under the buffer lock: seal the newest segment if it is eligible
    write       new segment seg-N (a live file) in the partition (compaction/merge.py), its
                data file named _data.pending (no engine reading the table directory sees
                it): row groups at the target size are copied raw (unencrypted, no
                decoding), runs of small ones are decoded and re-encoded by the table's
                executor (optionally sorted by the designated timestamp); encrypted segments
                are always re-encoded, which re-encrypts them under seg-N's own keys and
                ordinals; committed (fsynced) every COMMIT_BYTES of encoded data and at the end
    publish     rename seg-N/_data.pending to data.parquet (directory fsynced; io/segments.py)
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

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

from streamwrite.compaction.host import CompactionHost
from streamwrite.compaction.merge import Merger, merge_segment
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.errors import CorruptFileError
from streamwrite.format.sidecar.codec import read_sidecar
from streamwrite.format.txn import Segment
from streamwrite.io.segments import delete_segment, publish_pending, retire_segments
from streamwrite.layout.actions import LiveFileName
from streamwrite.layout.compaction import (
    MergePlan,
    PartitionStatus,
    SegmentInfo,
    idle_wait,
    needs_seal,
    plan_partition,
    small_rows,
    target_rows,
)
from streamwrite.options import CompactionPolicy
from streamwrite.reader.file import ParquetFile

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


def segment_info(
    directory: Path, size: int, decryption: DecryptionConfig | None = None
) -> SegmentInfo:
    """Read a segment's footer (at committed ``size``); its dead bytes are the ``unused_bytes``
    the ``_pm`` footer of that commit records.

    Raises:
        CorruptFileError, EncryptionError: as for reading the segment (or its ``_pm`` does not
            record a commit of ``size`` bytes).
    """
    info, pf = _open_segment(directory, size, decryption)
    pf.close()
    return info


def _open_segment(
    directory: Path, size: int, decryption: DecryptionConfig | None
) -> tuple[SegmentInfo, ParquetFile]:
    """:func:`segment_info`, and the segment opened at ``size`` (its footer parsed: a merge
    that follows reads it without parsing the footer again; the caller closes it)."""
    pf = ParquetFile(directory, snapshot=size, decryption=decryption)
    try:
        rows = tuple(rg.num_rows or 0 for rg in pf.thrift_metadata.row_groups or [])
        encrypted = pf.encryption_algorithm is not None
        sidecar = read_sidecar((directory / LiveFileName.PM.value).read_bytes())
        footer = next((f for _, f in sidecar.footers if f.parquet_file_size == size), None)
        if footer is None:
            raise CorruptFileError(
                f"{str(directory)!r} has no commit of {size} bytes in its _pm.", 0
            )
    except BaseException:
        pf.close()
        raise
    names = tuple(pf.schema_arrow.names)
    return SegmentInfo(directory.name, size, rows, footer.unused_bytes, encrypted, names), pf


OpenSegments = dict[tuple[str, str, int], ParquetFile]
"""Segments whose footer a compaction round parsed for their info, kept open for its merge
(keyed as :data:`~streamwrite.compaction.host.SegmentInfoCache`); the round closes them."""


async def compact_partition(
    host: CompactionHost,
    status: PartitionStatus,
    policy: CompactionPolicy,
    hook: StepHook | None = None,
    opened: OpenSegments | None = None,
) -> CompactionResult:
    """Merge ``status.merge`` into a new segment and swap it in (steps: module docstring).
    Segments in ``opened`` (read for their infos at the size merged) are read without
    parsing their footers again; the caller closes them.

    Returns:
        What was merged into what, and how.

    Raises:
        StreamwriteIOError: writing the new segment or publishing ``_txn`` failed (the
            partial segment is deleted now or on the next open; the old ones stay).
    """
    step = hook or (lambda name: None)
    started = time.perf_counter()
    partition = status.partition
    infos = [info for info in status.segments if info.name in status.merge]
    target = target_rows(policy, host.options.row_group_size)
    step("write")
    live = await host.new_segment(partition, pending=True)
    attempted = False  # the swap was tried: _txn may list the new segment now
    try:
        async with anyio.create_task_group() as task_group:
            plan = MergePlan(
                target,
                small_rows(policy, target),
                sort=policy.sort_by_timestamp,
                timestamp=host.record.timestamp,
                encrypted=any(info.encrypted for info in infos),
                widen=any(info.column_names != tuple(live.schema.names) for info in infos),
            )
            merger = Merger(host, live, plan, task_group)
            for info in infos:
                directory = host.path / partition / info.name
                await merge_segment(
                    merger,
                    directory,
                    info.size,
                    info.row_group_rows,
                    info.encrypted,
                    host.decryption,
                    (opened or {}).get((partition, info.name, info.size)),
                )
            size = await merger.finish()
        step("publish")
        await anyio.to_thread.run_sync(publish_pending, live.path)
        step("swap")
        assert live.last_commit.parquet_size == size
        merged = Segment(live.path.name, size, live.last_commit.footer_checksum)
        attempted = True
        await host.swap_segments(partition, status.merge, merged)
    finally:
        with anyio.CancelScope(shield=True):  # also when close() cancels the compactor
            await live.close()
            if not attempted:  # never listed in _txn: nobody can read it
                await anyio.to_thread.run_sync(delete_segment, live.path)
    step("retire")
    retired = [f"{partition}/{name}" for name in status.merge]
    await anyio.to_thread.run_sync(retire_segments, host.path, retired)
    step("sweep")
    await host.sweep_retired(policy.grace_seconds)
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


async def _segment_info(
    host: CompactionHost, partition: str, segment: Segment, opened: OpenSegments | None = None
) -> SegmentInfo:
    """A segment's info, cached per committed size (sealed segments never change); a segment
    read for it stays open in ``opened`` (if given) for the merge."""
    key = (partition, segment.name, segment.size)
    cached = host.segment_infos.get(key)
    if cached is not None:
        return cached
    directory = host.path / partition / segment.name
    if opened is None:
        info = await anyio.to_thread.run_sync(
            segment_info, directory, segment.size, host.decryption
        )
    else:
        info, pf = await anyio.to_thread.run_sync(
            _open_segment, directory, segment.size, host.decryption
        )
        previous = opened.pop(key, None)
        if previous is not None:
            previous.close()
        opened[key] = pf
    host.segment_infos[key] = info
    return info


async def partition_status(
    host: CompactionHost,
    partition: str,
    policy: CompactionPolicy,
    *,
    explicit: bool,
    seal: bool,
    opened: OpenSegments | None = None,
) -> PartitionStatus:
    """The decision for ``partition`` now (``explicit``: a ``compact()`` call, which takes
    the newest segment without waiting for ``idle_seconds``; ``seal``: seal it if taken;
    ``opened``: keep the segments read for their infos open there).

    Returns:
        The decision (:func:`streamwrite.layout.compaction.plan_partition`).
    """
    idle = None
    target = target_rows(policy, host.options.row_group_size)
    if host.record.partitions[partition][-1].is_cold:  # all in cold storage: never compacted
        return plan_partition(partition, (), 0, target, policy, force=explicit)
    if not explicit:
        newest = host.record.partitions[partition][-1]
        idle = idle_wait(policy, await _segment_info(host, partition, newest, opened))
    segments, eligible = await host.eligible_segments(partition, idle, seal)
    infos = [await _segment_info(host, partition, segment, opened) for segment in segments]
    current = {(partition, segment.name, segment.size) for segment in segments}
    for key in [k for k in host.segment_infos if k[0] == partition and k not in current]:
        del host.segment_infos[key]  # older sizes of the newest segment, retired segments
    return plan_partition(partition, tuple(infos), eligible, target, policy, force=explicit)


async def compact_table(
    host: CompactionHost,
    partitions: list[str],
    policy: CompactionPolicy,
    *,
    explicit: bool,
    hook: StepHook | None = None,
) -> list[CompactionResult]:
    """Compact each of ``partitions`` that its status says to, one at a time.

    A partition's newest segment is sealed only when the run to merge reaches it (decided
    once without sealing, then again after sealing, since rows may have come in between).

    Returns:
        What was compacted.
    """
    results = []
    async with host.compaction_lock:
        for name in partitions:
            opened: OpenSegments = {}
            try:
                status = await partition_status(
                    host, name, policy, explicit=explicit, seal=False, opened=opened
                )
                if needs_seal(status):
                    status = await partition_status(
                        host, name, policy, explicit=explicit, seal=True, opened=opened
                    )
                if status.compact:
                    results.append(await compact_partition(host, status, policy, hook, opened))
            finally:
                for pf in opened.values():
                    pf.close()
    return results


async def run_compactor(host: CompactionHost) -> None:
    """Background compaction every ``compaction_interval`` seconds while the table is open;
    errors are kept in ``host.last_compaction_error`` and the next round tries again."""
    interval = host.settings.compaction_interval
    assert interval is not None
    with host.compactor_scope:  # close() cancels it
        while True:
            await anyio.sleep(interval)
            if not host.is_open:
                return
            try:
                await compact_table(
                    host,
                    sorted(host.record.partitions),
                    host.settings.compaction,
                    explicit=False,
                )
            except Exception as exc:
                host.last_compaction_error = exc
                host.metrics.compaction_errors += 1
