"""The decisions of a table (DESIGN sections 3 and 4), without I/O: a state machine.

The async shell (:mod:`streamwrite.table`) holds the Arrow rows, the encoded row groups and the
open live files; this machine holds the counts and names and decides. Time is an argument
(``now``, monotonic seconds), never read here. Rules::

    states        OPEN --fail()--> POISONED            every later step raises StateError
                  OPEN | POISONED --close()--> CLOSED

    buffering     buffer(partition, rows, bytes, now)  rows wait in their partition
                  row_group_rows(partition, ...)       the next row group's rows: row_group_size,
                                                       fewer when row_group_bytes are buffered;
                                                       None while fewer rows wait (unless partial)
                  cut(partition, rows, rest_bytes)     a row group left the buffer (encoded)

    segments      next_row_group(partition)            ordinal in the newest segment, or None:
                                                       roll over (none open, or it holds
                                                       segment_row_groups row groups)
                  roll_over(partition, name)           the new segment (numbers only grow,
                                                       allocate_segment) replaces the newest;
                                                       the old one is closed now if all its
                                                       row groups are committed, else sealed
                                                       until the commit that completes it

                  seal_newest(partition)               compaction takes the newest segment:
                                                       the next row group starts a new one
                                                       (is_settled, sealed_segments and
                                                       quiet_seconds say when it may)
                  seal_all()                           a schema change: every partition's
                                                       newest segment is sealed, so the next
                                                       row group of each starts a new segment
                                                       (written with the new schema)

    commit due    rows >= commit_rows, or bytes >= commit_bytes, or rows waiting and
                  now - last commit >= commit_interval

    units         take_unit(...) -> TableUnit          what is buffered, numbered 0, 1, 2, ...
                  begin_commit(unit)                   units commit in the order taken
                    -> CommitSegment actions           sorted partitions, segments in order
                  segment_committed(action, segment)   one live-file commit done
                  finish_commit(unit) -> TxnRecord     _txn version + 1 (applied batch id)
                  publish_txn(record, current)         WriteFileAt(_txn slot), FsyncFile(data_only):
                                                       one fdatasync; or (new table, migration,
                                                       record outgrows its slot) WriteFile,
                                                       FsyncFile, Rename, FsyncDirectory
                  published(record)                    the commit point; sealed segments done

    batch ids     decide_batch(app_id, batch_id)       NEW | REPLAY | STALE against the
                                                       published _txn (layout/batch_ids.py)

    recovery      plan_recovery, verify_recovery, plan_migration: the plans that bring a
                  table directory back to its _txn (:mod:`streamwrite.layout.table_recovery`)

A failed action (the shell's write, fsync, rename, live-file commit) is reported with
:meth:`TableMachine.fail`: nothing more is committed; reopening recovers to the published
``_txn`` (``format/txn.py`` states the rules).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from streamwrite.errors import StateError
from streamwrite.format.txn import (
    SLOT_HEADER_SIZE,
    TXN_FILE,
    Segment,
    TxnRecord,
    encode_txn,
    encode_txn_payload,
    encode_txn_slot,
    read_txn_slots,
    segment_name,
    segment_number,
    txn_slot_size,
)
from streamwrite.layout.actions import (
    CommitSegment,
    FsyncDirectory,
    FsyncFile,
    Rename,
    TableAction,
    WriteFile,
    WriteFileAt,
)
from streamwrite.layout.batch_ids import BatchDecision, decide_batch

__all__ = [
    "CommitPolicy",
    "TableMachine",
    "TableState",
    "TableUnit",
    "next_segment_numbers",
    "publish_txn",
]


class TableState(Enum):
    """Where the table machine is (module docstring)."""

    OPEN = "open"
    POISONED = "poisoned"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class CommitPolicy:
    """When a table commits and how it lays out row groups and segments."""

    commit_rows: int | None = None
    commit_bytes: int | None = None
    commit_interval: float | None = None
    """Seconds."""
    row_group_bytes: int | None = None
    segment_row_groups: int = 128


@dataclass(frozen=True, slots=True)
class TableUnit:
    """One table commit's worth of row groups: ``segments`` in commit order."""

    seq: int
    num_rows: int
    segments: tuple[CommitSegment, ...]
    applied: Mapping[str, int] = field(default_factory=dict)
    """The batch ids the unit commits, app id -> batch id (a group commit carries the
    batches of several callers; each app id's highest)."""


@dataclass
class _Partition:
    pending_rows: int = 0
    pending_bytes: int = 0
    encoded: list[str] = field(default_factory=list)
    """The segment of each row group encoded since the last unit was taken."""
    newest: str | None = None
    """The newest segment, open for appending (None: not opened yet, or sealed)."""
    last_rows_at: float | None = None


def publish_txn(record: TxnRecord, current: bytes | None = None) -> tuple[TableAction, ...]:
    """The actions that publish ``record``, given ``current``, the bytes of ``_txn`` now (None:
    no ``_txn``, or not read). The table's commit point is the last write or the rename.

    In place, one sync (``current`` is a format-4 file whose newest intact slot holds version
    ``record.version - 1`` in the other slot, and the record fits a slot)::

        WriteFileAt(_txn, slot (record.version % 2) * slot_size, slot)
        FsyncFile(_txn, data_only=True)                                  fdatasync

    Otherwise (a new table, a format 2 or 3 ``_txn``, a record outgrowing its slot, a
    ``_txn`` whose previous version is not where it should be) the whole file is rewritten
    with new slots (:func:`streamwrite.format.txn.encode_txn`)::

        WriteFile(.{_txn}.{version}.tmp), FsyncFile(data_only=True), Rename over _txn,
        FsyncDirectory(.)

    Raises:
        CorruptFileError: ``current`` holds an intact slot of an unknown format version.
    """
    payload = encode_txn_payload(record)
    slots = None if current is None else read_txn_slots(current)
    if slots is not None:
        previous = (record.version - 1) % 2
        if (
            slots.versions[previous] == record.version - 1
            and slots.newest == previous
            and SLOT_HEADER_SIZE + len(payload) <= slots.slot_size
        ):
            slot = encode_txn_slot(record, slots.slot_size, payload)
            return (
                WriteFileAt(TXN_FILE, (record.version % 2) * slots.slot_size, slot),
                FsyncFile(TXN_FILE, data_only=True),
            )
    temporary = f".{TXN_FILE}.{record.version}.tmp"
    return (
        WriteFile(temporary, encode_txn(record, txn_slot_size(len(payload)))),
        FsyncFile(temporary, data_only=True),
        Rename(temporary, TXN_FILE),
        FsyncDirectory("."),
    )


def next_segment_numbers(
    record: TxnRecord, on_disk: Mapping[str, tuple[str, ...]] | None = None
) -> dict[str, int]:
    """The next unused segment number of each partition, over ``record`` (listed and retired)
    and ``on_disk`` (partition -> the entry names of its directory)."""
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
    for partition, names in (on_disk or {}).items():
        for name in names:
            see(partition, name)
    return numbers


class TableMachine:
    """The decisions of one open table (module docstring)."""

    def __init__(
        self,
        record: TxnRecord,
        policy: CommitPolicy,
        now: float,
        next_segments: Mapping[str, int] | None = None,
    ) -> None:
        self.record = record
        """The newest published ``_txn`` record."""
        self.policy = policy
        self.state = TableState.OPEN
        self.error: BaseException | None = None
        """What poisoned the machine."""
        self.opened_at = now
        self.last_commit_at = now
        self.buffered_rows = 0
        self.buffered_bytes = 0
        self._partitions: dict[str, _Partition] = {}
        self._given: dict[tuple[str, str], int] = {}
        """Row groups given to each open segment: committed or encoded for it."""
        self._committed: dict[tuple[str, str], int] = {}
        self._sealed: set[tuple[str, str]] = set()
        """Segments replaced as newest with row groups still to commit."""
        self._retired_newest: set[str] = set()
        """Partitions whose listed newest segment was sealed for compaction."""
        self._next_segment = dict(next_segments or next_segment_numbers(record))
        self._next_take = 0
        self._next_commit = 0
        self._written: dict[str, list[Segment]] = {}
        self._written_actions: list[CommitSegment] = []
        """The segment commits of the unit being committed, counted at its publish."""

    # -- state ----------------------------------------------------------------------------

    def check(self) -> None:
        """Raises: StateError when the machine is poisoned or closed."""
        if self.state is TableState.CLOSED:
            raise StateError("The table is closed.")
        if self.state is TableState.POISONED:
            raise StateError(f"The table failed a commit ({self.error}).") from self.error

    def fail(self, error: BaseException) -> None:
        """An action failed: poison the machine (nothing more is committed)."""
        if self.state is TableState.OPEN:
            self.state = TableState.POISONED
            self.error = error

    def close(self) -> None:
        """No more steps."""
        self.state = TableState.CLOSED

    def _partition(self, partition: str) -> _Partition:
        return self._partitions.setdefault(partition, _Partition())

    # -- batch ids and buffering ----------------------------------------------------------

    def decide_batch(self, app_id: str, batch_id: int) -> BatchDecision:
        """The exactly-once decision for ``(app_id, batch_id)`` against the published record."""
        return decide_batch(self.record.applied.get(app_id), batch_id)

    def buffer(self, partition: str, num_rows: int, num_bytes: int, now: float) -> None:
        """Rows of ``partition`` wait for a row group."""
        self.check()
        part = self._partition(partition)
        part.pending_rows += num_rows
        part.pending_bytes += num_bytes
        part.last_rows_at = now

    def accept(self, num_rows: int, num_bytes: int) -> None:
        """An append of ``num_rows`` rows (``num_bytes`` in memory) was buffered whole."""
        self.buffered_rows += num_rows
        self.buffered_bytes += num_bytes

    def pending(self, partition: str) -> tuple[int, int]:
        """Rows and bytes of ``partition`` not cut into a row group yet."""
        part = self._partitions.get(partition)
        return (0, 0) if part is None else (part.pending_rows, part.pending_bytes)

    def row_group_rows(self, partition: str, row_group_size: int, *, partial: bool) -> int | None:
        """Rows of the partition's next row group (``row_group_size``, fewer when
        ``row_group_bytes`` are buffered); None when no row group is due (fewer rows wait and
        not ``partial``, or none)."""
        rows, num_bytes = self.pending(partition)
        if not rows:
            return None
        size = row_group_size
        limit = self.policy.row_group_bytes
        if limit is not None and num_bytes >= limit:
            per_row = num_bytes / max(1, rows)
            size = min(size, max(1, int(limit / per_row)))
        if rows < size and not partial:
            return None
        return size

    def cut(self, partition: str, num_rows: int, rest_bytes: int, segment: str) -> None:
        """A row group of ``num_rows`` rows was encoded for ``segment`` (at the ordinal
        :meth:`next_row_group` gave); ``rest_bytes`` stay buffered."""
        part = self._partition(partition)
        part.pending_rows -= min(num_rows, part.pending_rows)
        part.pending_bytes = rest_bytes if part.pending_rows else 0
        part.encoded.append(segment)
        self._given[(partition, segment)] = self._given.get((partition, segment), 0) + 1

    def commit_due(self, now: float) -> bool:
        """True when the policy wants what is buffered committed."""
        policy = self.policy
        if policy.commit_rows is not None and self.buffered_rows >= policy.commit_rows:
            return True
        if policy.commit_bytes is not None and self.buffered_bytes >= policy.commit_bytes:
            return True
        return (
            policy.commit_interval is not None
            and self.buffered_rows > 0
            and now - self.last_commit_at >= policy.commit_interval
        )

    # -- segments -------------------------------------------------------------------------

    def allocate_segment(self, partition: str) -> str:
        """The name of a new segment of ``partition`` (numbers only grow, never reused)."""
        number = self._next_segment.get(partition, 0)
        self._next_segment[partition] = number + 1
        return segment_name(number)

    def newest_to_open(self, partition: str) -> str | None:
        """The listed newest segment the shell should open for appending (then
        :meth:`opened`), or None: one is open, the partition has none, or it was sealed."""
        part = self._partitions.get(partition)
        if part is not None and part.newest is not None:
            return None
        segments = self.record.partitions.get(partition)
        if not segments or partition in self._retired_newest:
            return None
        return segments[-1].name

    def opened(self, partition: str, segment: str, num_row_groups: int) -> None:
        """The shell opened ``segment`` as the partition's newest; it holds ``num_row_groups``
        committed row groups."""
        self._partition(partition).newest = segment
        self._given[(partition, segment)] = num_row_groups
        self._committed[(partition, segment)] = num_row_groups

    def newest(self, partition: str) -> str | None:
        """The partition's open newest segment."""
        part = self._partitions.get(partition)
        return None if part is None else part.newest

    def next_row_group(self, partition: str) -> int | None:
        """The ordinal of the partition's next row group in its open newest segment, or None
        when a new segment must come first (:meth:`roll_over`)."""
        newest = self.newest(partition)
        if newest is None:
            return None
        given = self._given[(partition, newest)]
        return given if given < self.policy.segment_row_groups else None

    def roll_over(self, partition: str, segment: str) -> tuple[str | None, bool]:
        """``segment`` (new, from :meth:`allocate_segment`) becomes the partition's newest.

        Returns:
            The segment it replaces (None if none was open), and whether to close that one
            now (every row group it was given is committed); otherwise it is sealed and
            :meth:`published` names it once the commit that completes it is published.
        """
        self.check()
        part = self._partition(partition)
        self._retired_newest.discard(partition)
        old = part.newest
        close_now = False
        if old is not None:
            key = (partition, old)
            if self._committed[key] == self._given[key]:
                close_now = True
                del self._committed[key], self._given[key]
            else:
                self._sealed.add(key)
        part.newest = segment
        self._given[(partition, segment)] = 0
        self._committed[(partition, segment)] = 0
        return old, close_now

    def sealed_segments(self, partition: str) -> set[str]:
        """Segments of ``partition`` sealed with row groups still to commit."""
        return {name for p, name in self._sealed if p == partition}

    def is_settled(self, partition: str) -> bool:
        """Every row group given to the partition's newest segment is committed and no row of
        it waits (compaction may take that segment)."""
        part = self._partitions.get(partition)
        if part is None:
            return True
        if part.pending_rows or part.encoded:
            return False
        if part.newest is None:
            return True
        key = (partition, part.newest)
        return self._given[key] == self._committed[key]

    def quiet_seconds(self, partition: str, now: float) -> float:
        """Seconds since rows last came for ``partition`` (or since the table opened)."""
        part = self._partitions.get(partition)
        since = self.opened_at if part is None or part.last_rows_at is None else part.last_rows_at
        return now - since

    def has_newest(self, partition: str) -> bool:
        """True when the partition's listed newest segment may still be appended to."""
        return partition not in self._retired_newest

    def seal_newest(self, partition: str) -> str | None:
        """Compaction takes the partition's newest segment: its next row group starts a new
        one. Returns the open newest segment to close (None if none is open)."""
        part = self._partition(partition)
        old = part.newest
        if old is not None:
            self._given.pop((partition, old), None)
            self._committed.pop((partition, old), None)
        part.newest = None
        self._retired_newest.add(partition)
        return old

    def seal_all(self) -> list[tuple[str, str, bool]]:
        """A schema change (``Table.add_columns``): seal every partition's newest segment,
        open or only listed, so that each partition's next row group starts a new segment.

        Returns:
            The open newest segments, ``(partition, segment, close_now)``: close it now
            (every row group it was given is committed), else it is sealed until
            :meth:`published` names it.
        """
        self.check()
        sealed = []
        for name, part in sorted(self._partitions.items()):
            old = part.newest
            if old is None:
                continue
            key = (name, old)
            close_now = self._committed[key] == self._given[key]
            if close_now:
                del self._committed[key], self._given[key]
            else:
                self._sealed.add(key)
            part.newest = None
            sealed.append((name, old, close_now))
        self._retired_newest.update(self.record.partitions)
        self._retired_newest.update(self._partitions)
        return sealed

    # -- units and commits ----------------------------------------------------------------

    def take_unit(self, applied: Mapping[str, int] | None, now: float) -> TableUnit:
        """What is buffered (every row in a row group by now) as the next unit, in order,
        committing the batch ids ``applied`` (app id -> batch id)."""
        self.check()
        actions: list[CommitSegment] = []
        for name in sorted(self._partitions):
            part = self._partitions[name]
            for segment in part.encoded:
                if actions and (actions[-1].partition, actions[-1].segment) == (name, segment):
                    last = actions[-1]
                    actions[-1] = CommitSegment(name, segment, last.num_row_groups + 1)
                else:
                    actions.append(CommitSegment(name, segment, 1))
            part.encoded = []
            part.pending_rows = part.pending_bytes = 0
        unit = TableUnit(self._next_take, self.buffered_rows, tuple(actions), dict(applied or {}))
        self._next_take += 1
        self.buffered_rows = self.buffered_bytes = 0
        self.last_commit_at = now
        return unit

    def begin_commit(self, unit: TableUnit) -> tuple[CommitSegment, ...]:
        """The live-file commits of ``unit`` (report each with :meth:`segment_committed`).

        Raises:
            StateError: poisoned or closed, or ``unit`` was taken before one already committed
                (an empty unit, a barrier, may be left out).
        """
        self.check()
        if unit.seq < self._next_commit:
            raise StateError(
                f"Table units commit in the order they were taken: unit {unit.seq} came after "
                f"unit {self._next_commit - 1}."
            )
        self._next_commit = unit.seq + 1
        self._written = {}
        self._written_actions = []
        return unit.segments

    def segment_committed(self, action: CommitSegment, segment: Segment) -> None:
        """The live-file commit of ``action`` is done, at ``segment``'s size. Its row groups
        count as committed once the ``_txn`` naming that size is published (until then
        compaction must not take the segment: the published record has its old size)."""
        self._written.setdefault(action.partition, []).append(segment)
        self._written_actions.append(action)

    def finish_commit(self, unit: TableUnit) -> TxnRecord:
        """The ``_txn`` record of ``unit`` (publish it with :func:`publish_txn`, then
        :meth:`published`)."""
        self.check()
        return self.record.next(self._written, unit.applied)

    def published(self, record: TxnRecord) -> list[tuple[str, str]]:
        """``record`` is the newest published ``_txn``.

        Returns:
            The sealed ``(partition, segment)`` whose row groups are all committed now: the
            shell closes them.
        """
        self.record = record
        for action in self._written_actions:
            key = (action.partition, action.segment)
            if key in self._committed:
                self._committed[key] += action.num_row_groups
        self._written_actions = []
        done = sorted(key for key in self._sealed if self._committed[key] == self._given[key])
        for key in done:
            self._sealed.discard(key)
            del self._committed[key], self._given[key]
        return done
