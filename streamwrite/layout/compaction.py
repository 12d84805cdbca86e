"""Compaction decisions, sans-I/O: which segments to merge, and the way of each row group.

Rules of the decision for one partition (:func:`plan_partition`, shown by
``Table.compaction_status()``)::

    eligible   (the table answers) sealed segments, plus the newest one when the partition
               is idle (no row for idle_seconds, or an explicit compact()) and all its row
               groups are committed; a newest segment past a dead-byte or row-group limit
               is taken without waiting for idle_seconds (idle_wait)
    small      a row group below small_fraction * target rows (the policy's
               target_row_group_rows, else the table's row_group_size)
    needs work a segment with dead_bytes / size > dead_ratio, or dead_bytes > the dead_bytes
               limit, or more row groups than max_row_groups (over_limits), or a small row
               group
    compact    when the eligible segments hold >= min_small_row_groups small row groups,
               or one of them passes a limit; the run merged is every eligible segment from
               the first that needs work to the last that does, and only if merging
               improves it (merge_improves: two or more segments, two or more small row
               groups, or a limit passed); an explicit compact() ignores the thresholds
    seal       the newest segment is sealed only when the run reaches it (needs_seal)

Rules of one merge (:class:`MergePlan`), row groups offered in order, each one way
(:class:`Way`)::

    RAW_COPY   full (>= small rows), unencrypted, of the merged segment's schema, no sort,
               and the rows held back (if any) are not small: the held-back rows become one
               row group, then the source's column chunks are copied as bytes into the next
    PHYSICAL   otherwise, no sort and no encrypted segment and no segment of an older schema
               in the run: the column chunks are read compressed and a worker decodes and
               re-encodes them
    ARROW      otherwise (encrypted segments, sort_by_timestamp, or a segment written before
               the table's schema gained columns): decoded into Arrow (decrypted), widened to
               the merged segment's schema (nulls in the added columns), re-encoded and
               re-encrypted under the new segment's keys and ordinals

    held back  a row group not copied raw is held back; every target rows held become one
               row group; a full one arriving behind held-back rows is encoded with them as
               one row group (absorbed), so one small commit does not force every row group
               after it through the encoder
    sort       everything is held back to the end, sorted by the timestamp, then cut into
               row groups of target rows
    finish     the rest held back becomes row groups of at most target rows

So a merge leaves at most one small row group, its last one. The machine only counts rows:
it returns actions (:data:`MergeAction`) that the async shell (``streamwrite.compaction``)
executes in order on the rows it read; a raw copy the shell finds impossible (a chunk stored
in another file...) is offered as the decoded way instead (:attr:`MergePlan.fallback`).
This module imports only errors, format, options and layout: no I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from streamwrite.errors import ConfigError, StateError
from streamwrite.options import CompactionPolicy

__all__ = [
    "CopyRaw",
    "EncodeHeld",
    "HoldRows",
    "MergeAction",
    "MergePlan",
    "PartitionStatus",
    "SegmentInfo",
    "SortHeld",
    "Way",
    "idle_wait",
    "merge_improves",
    "needs_seal",
    "over_limits",
    "plan_partition",
    "small_rows",
    "target_rows",
]


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """What compaction needs to know of one segment at its committed size."""

    name: str
    size: int
    row_group_rows: tuple[int, ...]
    dead_bytes: int
    """Bytes of superseded footers (every commit but the last left one behind)."""
    encrypted: bool
    column_names: tuple[str, ...] = ()
    """The segment's columns (a segment written before ``Table.add_columns`` lacks the
    added ones; empty: unknown)."""

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


def target_rows(policy: CompactionPolicy, row_group_size: int) -> int:
    """Rows per merged row group: the policy's, else the table's ``row_group_size``."""
    return policy.target_row_group_rows or row_group_size


def small_rows(policy: CompactionPolicy, target: int) -> float:
    """Row groups with fewer rows than this are small."""
    return policy.small_fraction * target


def over_limits(info: SegmentInfo, policy: CompactionPolicy) -> list[str]:
    """The dead-byte and row-group limits ``info`` passes, as reasons (empty: none)."""
    reasons = []
    if info.size and info.dead_bytes / info.size > policy.dead_ratio:
        reasons.append(f"{info.name}: dead bytes {info.dead_bytes / info.size:.0%} of the file")
    if info.dead_bytes > policy.dead_bytes:
        reasons.append(f"{info.name}: {info.dead_bytes:,} dead bytes")
    if len(info.row_group_rows) > policy.max_row_groups:
        reasons.append(f"{info.name}: {len(info.row_group_rows)} row groups")
    return reasons


def idle_wait(policy: CompactionPolicy, newest: SegmentInfo) -> float | None:
    """Seconds a partition must be idle before background compaction takes its newest
    segment: the policy's ``idle_seconds``, or None (take it now) when that segment passes
    a limit. (An explicit ``compact()`` never waits.)"""
    return None if over_limits(newest, policy) else policy.idle_seconds


def merge_improves(run: list[SegmentInfo], num_small: int, limits: list[str]) -> bool:
    """Whether merging ``run`` (holding ``num_small`` small row groups) improves it: it spans
    two or more segments, holds two or more small row groups (merging leaves at most one,
    at its end), or passes a limit (``limits``)."""
    return len(run) >= 2 or num_small >= 2 or bool(limits)


def plan_partition(
    partition: str,
    segments: tuple[SegmentInfo, ...],
    eligible: int,
    target: int,
    policy: CompactionPolicy,
    *,
    force: bool = False,
) -> PartitionStatus:
    """Decide whether and what to compact (rules in the module docstring).

    Args:
        partition: the partition's name (reported as is).
        segments: every segment of the partition, in order.
        eligible: how many leading ``segments`` compaction may take.
        target: rows per merged row group (:func:`target_rows`).
        policy: the thresholds.
        force: an explicit ``compact()``: an improvable run is merged whatever the
            thresholds say.

    Returns:
        The decision, with its reasons (one "nothing to do" reason when nothing merges).
    """
    candidates = segments[:eligible]
    limits_of = [over_limits(info, policy) for info in candidates]
    limits = [reason for reasons in limits_of for reason in reasons]
    small = small_rows(policy, target)
    num_small = [sum(rows < small for rows in c.row_group_rows) for c in candidates]
    work = [i for i in range(len(candidates)) if num_small[i] or limits_of[i]]
    run = range(work[0], work[-1] + 1) if work else range(0)
    improves = merge_improves([candidates[i] for i in run], sum(num_small[i] for i in run), limits)
    reasons = list(limits)
    if sum(num_small) >= policy.min_small_row_groups:
        reasons.append(
            f"{sum(num_small)} small row groups (< {policy.small_fraction:g} x {target:,} "
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


def needs_seal(status: PartitionStatus) -> bool:
    """Whether the run to merge reaches the partition's newest segment (which must then be
    sealed, and the decision taken again: rows may have come in between)."""
    return bool(status.merge) and status.merge[-1] == status.segments[-1].name


# -- one merge: the way of each row group ------------------------------------------------


class Way(Enum):
    """How a source row group reaches the merged segment."""

    RAW_COPY = "raw copy"
    """Its column chunks are copied as bytes (no decoding)."""
    PHYSICAL = "physical"
    """Its column chunks are read compressed; a worker decodes and re-encodes them."""
    ARROW = "arrow"
    """Decoded (and decrypted) into Arrow, re-encoded (and re-encrypted)."""


@dataclass(frozen=True, slots=True)
class HoldRows:
    """Hold back the rows of the row group just offered (decoded the way it was offered)."""

    num_rows: int


@dataclass(frozen=True, slots=True)
class CopyRaw:
    """Copy the row group just offered raw, as row group ``ordinal`` of the new segment."""

    num_rows: int
    ordinal: int


@dataclass(frozen=True, slots=True)
class EncodeHeld:
    """Encode the first ``num_rows`` held-back rows as row group ``ordinal`` of the new
    segment (its ordinal goes into the AADs of an encrypted segment)."""

    num_rows: int
    ordinal: int


@dataclass(frozen=True, slots=True)
class SortHeld:
    """Sort every held-back row by ``column`` (ascending)."""

    column: str


MergeAction = HoldRows | CopyRaw | EncodeHeld | SortHeld
"""What the shell does next, in order."""


class MergePlan:
    """The row groups of a merged segment, decided one source row group at a time (rules in
    the module docstring).

    Use: for each source row group, in order, ask :meth:`way`; read it that way (falling
    back to :meth:`fallback` when a raw copy turns out impossible); :meth:`offer` it and
    execute the actions returned; at the end execute :meth:`finish`'s.
    """

    def __init__(
        self,
        target: int,
        small: float,
        *,
        sort: bool = False,
        timestamp: str | None = None,
        encrypted: bool = False,
        widen: bool = False,
    ) -> None:
        """
        Args:
            target: rows per merged row group (>= 1).
            small: row groups below this many rows are small (> 0).
            sort: hold every row to the end and sort it by ``timestamp`` (if not None).
            timestamp: the designated timestamp column.
            encrypted: some segment of the run is encrypted (none is read physically).
            widen: some segment of the run has an older schema than the merged one (none
                is read physically; its row groups are widened, never copied raw).

        Raises:
            ConfigError: ``target`` below 1 or ``small`` not positive.
        """
        if target < 1 or not small > 0:
            raise ConfigError(
                f"A merge needs target >= 1 rows and a positive small threshold, got "
                f"target={target!r}, small={small!r}."
            )
        self.target = target
        self.small = small
        self.sort = sort
        self.timestamp = timestamp
        self.fallback = Way.ARROW if sort or encrypted or widen else Way.PHYSICAL
        """The way of every row group that is not copied raw."""
        self.held_rows = 0
        """Rows held back, not yet given to an :class:`EncodeHeld`."""
        self.num_row_groups = 0
        """Row groups of the new segment decided so far (the next one's ordinal)."""
        self.num_raw = 0
        self.num_reencoded = 0
        self.finished = False

    def way(self, num_rows: int, *, encrypted: bool, widened: bool = False) -> Way:
        """The way to read the next source row group (``num_rows`` rows; ``encrypted``: its
        segment is; ``widened``: its segment has an older schema than the merged one)."""
        full = num_rows >= self.small
        held_ok = self.held_rows == 0 or self.held_rows >= self.small
        if full and not encrypted and not widened and not self.sort and held_ok:
            return Way.RAW_COPY
        return self.fallback

    def offer(self, num_rows: int, way: Way) -> list[MergeAction]:
        """Take the next source row group, read ``way``.

        Returns:
            The actions to execute, in order.

        Raises:
            StateError: the plan is finished, ``way`` is ``RAW_COPY`` where :meth:`way`
                would not allow it (an unencrypted full row group can always be offered
                as ``fallback``), or ``num_rows`` is negative.
        """
        self._check(num_rows)
        if way is Way.RAW_COPY:
            if self.way(num_rows, encrypted=False) is not Way.RAW_COPY:
                raise StateError(
                    f"A row group of {num_rows} rows cannot be copied raw now ({self.held_rows} "
                    f"rows held back, small below {self.small:g}, sort={self.sort})."
                )
            actions: list[MergeAction] = self._flush_held()
            actions.append(CopyRaw(num_rows, self._next_ordinal()))
            self.num_raw += 1
            return actions
        if way is not self.fallback:
            raise StateError(
                f"This merge decodes row groups as {self.fallback.value}, not {way.value}."
            )
        actions = [HoldRows(num_rows)]
        self.held_rows += num_rows
        if self.sort:
            return actions
        if num_rows >= self.small:  # a full one behind held-back rows: absorbed
            actions.append(self._encode(self.held_rows))
        while self.held_rows >= self.target:
            actions.append(self._encode(self.target))
        return actions

    def finish(self) -> list[MergeAction]:
        """The rest: sort what is held back (if asked), then cut it into row groups.

        Returns:
            The actions to execute, in order.

        Raises:
            StateError: already finished.
        """
        self._check(0)
        self.finished = True
        actions: list[MergeAction] = []
        if self.sort and self.timestamp is not None and self.held_rows:
            actions.append(SortHeld(self.timestamp))
        while self.held_rows:
            actions.append(self._encode(min(self.target, self.held_rows)))
        return actions

    def _check(self, num_rows: int) -> None:
        if self.finished:
            raise StateError("The merge plan is finished; it takes no more row groups.")
        if num_rows < 0:
            raise StateError(f"A row group cannot hold {num_rows} rows.")

    def _flush_held(self) -> list[MergeAction]:
        return [self._encode(self.held_rows)] if self.held_rows else []

    def _next_ordinal(self) -> int:
        self.num_row_groups += 1
        return self.num_row_groups - 1

    def _encode(self, num_rows: int) -> EncodeHeld:
        self.held_rows -= num_rows
        self.num_reencoded += 1
        return EncodeHeld(num_rows, self._next_ordinal())
