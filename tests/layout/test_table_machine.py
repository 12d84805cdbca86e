"""The table machine (``streamwrite.layout.table``): its decisions without I/O, and a hypothesis
state machine that runs its actions on a real directory with failures injected between any
two of them.

The stateful test drives a :class:`TableMachine` the way the async shell does (buffer rows per
partition, cut row groups where it says, roll segments over, take units, commit them, publish
``_txn``), and executes every action in a temporary directory through a small executor:
file actions through the shell's own ``run_file_actions``, a :class:`CommitSegment` as a fake
live-file commit of two steps (append the row groups to ``data.parquet``, then replace ``_pm``,
a JSON list of ``[committed size, CRC32 of the data up to it]``), a :class:`RecoverSegment` by
truncating both to the listed size. Each step may be the one that fails (an injected
``OSError``, as a crash would stop there): the machine is then poisoned, and the only way on
is a reopen, which reads ``_txn``, scans the directory, runs :func:`plan_recovery`'s actions
(failures injected there too, then recovery runs again) and :func:`verify_recovery`.

Model: the rows committed per partition, in order. A failed commit's rows are committed exactly
when its ``Rename`` onto ``_txn`` ran (the table's commit point). Invariant: the rows read from
the directory through the published ``_txn`` are the model's, each once; rows buffered but not
committed when a reopen comes are gone.

``STREAMWRITE_TABLE_MACHINE_EXAMPLES`` sets max_examples (default 25).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from streamwrite.errors import CorruptFileError, StateError
from streamwrite.format.txn import DATA_FILE, TXN_FILE, Retired, Segment, TxnRecord, decode_txn
from streamwrite.layout.actions import (
    CommitSegment,
    FsyncDirectory,
    FsyncFile,
    RecoverSegment,
    RemoveTree,
    Rename,
    TableAction,
    WriteFile,
)
from streamwrite.layout.batch_ids import BatchDecision
from streamwrite.layout.table import (
    CommitPolicy,
    TableMachine,
    TableState,
    TableUnit,
    next_segment_numbers,
    publish_txn,
)
from streamwrite.layout.table_recovery import (
    PartitionListing,
    SegmentListing,
    plan_migration,
    plan_recovery,
    verify_recovery,
)
from streamwrite.table.execute import run_file_actions

EXAMPLES = int(os.environ.get("STREAMWRITE_TABLE_MACHINE_EXAMPLES", "25"))
PM = "_pm"
ROW_GROUP_SIZE = 3
ROW_BYTES = 8
PARTITIONS = ("ts_day=2026-11-21", "ts_day=2026-11-22", "ts_day=2026-11-23")
APP = "app"


class InjectedError(OSError):
    """The failure a test injects (a crash at this step)."""


# -- the fake live file: data.parquet holds row groups as JSON lines, _pm the commits ---------


def _pm(directory: Path) -> list[list[int]]:
    return [list(c) for c in json.loads((directory / PM).read_text())]


def _write_pm(directory: Path, commits: list[list[int]]) -> None:
    temporary = directory / f".{PM}.tmp"
    temporary.write_text(json.dumps(commits))
    os.replace(temporary, directory / PM)


def _crc(directory: Path, size: int) -> int:
    return zlib.crc32((directory / DATA_FILE).read_bytes()[:size])


def create_segment(directory: Path) -> None:
    directory.mkdir(parents=True)
    (directory / DATA_FILE).write_bytes(b"")
    _write_pm(directory, [[0, zlib.crc32(b"")]])


def committed_row_groups(directory: Path, size: int) -> list[list[int]]:
    data = (directory / DATA_FILE).read_bytes()[:size]
    return [json.loads(line) for line in data.splitlines()]


def scan(root: Path) -> dict[str, PartitionListing]:
    listing = {}
    for child in sorted(p for p in root.iterdir() if p.is_dir() and p.name[0] not in "._"):
        segments = {}
        for entry in sorted(child.iterdir()):
            data = entry / DATA_FILE
            size = data.stat().st_size if data.exists() else None
            try:
                committed, crc = _pm(entry)[-1]
            except (OSError, ValueError, IndexError):
                committed = crc = None
            segments[entry.name] = SegmentListing(size, False, committed, crc)
        listing[child.name] = PartitionListing(segments)
    return listing


class Executor:
    """Runs table actions in ``root``; ``fail_at`` makes step number ``fail_at`` raise."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fail_at: int | None = None
        self.steps = 0
        self.ran: list[TableAction] = []

    def step(self) -> None:
        if self.fail_at is not None and self.steps == self.fail_at:
            self.fail_at = None
            raise InjectedError("injected failure")
        self.steps += 1

    def run(self, action: TableAction) -> None:
        self.step()
        if isinstance(action, RecoverSegment):
            directory = self.root / action.path
            commits = _pm(directory)
            sizes = [size for size, _ in commits]
            if sizes[-1] < action.size or action.size not in sizes:
                raise CorruptFileError(f"{action.path} is behind _txn", sizes[-1])
            _write_pm(directory, commits[: sizes.index(action.size) + 1])
            os.truncate(directory / DATA_FILE, action.size)
        else:
            run_file_actions(self.root, (action,))
        self.ran.append(action)

    def commit_segment(self, action: CommitSegment, row_groups: list[list[int]]) -> Segment:
        directory = self.root / action.partition / action.segment
        self.step()
        with open(directory / DATA_FILE, "ab") as f:
            f.write(b"".join(json.dumps(rows).encode() + b"\n" for rows in row_groups))
        self.step()
        size = (directory / DATA_FILE).stat().st_size
        crc = _crc(directory, size)
        _write_pm(directory, [*_pm(directory), [size, crc]])
        self.ran.append(action)
        return Segment(action.segment, size, crc)


def read_rows(root: Path, record: TxnRecord) -> dict[str, list[int]]:
    rows: dict[str, list[int]] = {}
    for partition, segments in record.partitions.items():
        for segment in segments:
            for group in committed_row_groups(root / partition / segment.name, segment.size):
                rows.setdefault(partition, []).extend(group)
    return rows


# -- the state machine ----------------------------------------------------------------------


class TableMachineTest(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="sw-table-machine-"))
        self.executor = Executor(self.root)
        self.now = 0.0
        self.next_row = 0
        self.committed: dict[str, list[int]] = {}
        self.applied: int | None = None  # the last batch id committed for APP
        self.next_batch = 0
        self.pending: dict[str, list[int]] = {}  # rows buffered, not cut
        self.encoded: dict[str, list[tuple[str, list[int]]]] = {}  # (segment, rows), in order
        self.closed: set[tuple[str, str]] = set()  # segments whose live file the shell closed
        self.recover_at: int | None = None
        """Where recovery fails after a commit fails (drawn with the commit's failure)."""
        self.queue: list[
            tuple[TableUnit, dict[str, list[tuple[str, list[int]]]], dict[str, list[int]]]
        ] = []
        self.policy = CommitPolicy(commit_rows=7, commit_interval=5.0, segment_row_groups=2)
        self.machine: TableMachine

    @initialize()
    def create(self) -> None:
        record = TxnRecord(schema="s", timestamp="ts", partition_by="day")
        for action in publish_txn(record):
            run_file_actions(self.root, (action,))
        self.machine = TableMachine(record, self.policy, self.now)

    # -- buffering and cutting, as the shell does -------------------------------------------

    def _segment_for_next(self, partition: str) -> str:
        machine = self.machine
        to_open = machine.newest_to_open(partition)
        if to_open is not None:
            listed = machine.record.partitions[partition][-1]
            directory = self.root / partition / to_open
            machine.opened(partition, to_open, len(committed_row_groups(directory, listed.size)))
        if machine.next_row_group(partition) is None:
            name = machine.allocate_segment(partition)
            create_segment(self.root / partition / name)
            old, close_now = machine.roll_over(partition, name)
            event("a segment rolled over" if old is not None else "a segment was created")
            if old is not None and close_now:
                self.closed.add((partition, old))  # the shell closes its live file now
            elif old is not None:
                assert old in machine.sealed_segments(partition)
        newest = machine.newest(partition)
        assert newest is not None
        return newest

    def _cut(self, partition: str, *, partial: bool) -> None:
        while size := self.machine.row_group_rows(partition, ROW_GROUP_SIZE, partial=partial):
            segment = self._segment_for_next(partition)
            rows = self.pending[partition]
            piece, rest = rows[:size], rows[size:]
            self.pending[partition] = rest
            self.machine.cut(partition, len(piece), len(rest) * ROW_BYTES, segment)
            self.encoded.setdefault(partition, []).append((segment, piece))

    def _buffer(self, counts: list[int]) -> None:
        total = 0
        for partition, count in zip(PARTITIONS, counts, strict=True):
            if not count:
                continue
            rows = list(range(self.next_row, self.next_row + count))
            self.next_row += count
            total += count
            self.pending.setdefault(partition, []).extend(rows)
            self.machine.buffer(partition, count, count * ROW_BYTES, self.now)
            self._cut(partition, partial=False)
        self.machine.accept(total, total * ROW_BYTES)

    # -- committing ------------------------------------------------------------------------

    def _take(self, app_id: str | None, batch_id: int | None) -> None:
        """Take what is buffered as a unit and queue it (the shell's committer queue)."""
        for partition in list(self.pending):
            self._cut(partition, partial=True)
        unit = self.machine.take_unit(app_id, batch_id, self.now)
        encoded, self.encoded = self.encoded, {}
        rows = {p: [r for _, group in parts for r in group] for p, parts in encoded.items()}
        assert unit.num_rows == sum(map(len, rows.values()))
        assert all(not rows for rows in self.pending.values())
        self.queue.append((unit, encoded, rows))

    def _commit_next(self, fail_at: int | None) -> bool:
        """Commit the first queued unit; False when it failed (the machine is poisoned)."""
        machine = self.machine
        unit, encoded, rows = self.queue.pop(0)
        if not unit.segments:
            return True
        num_steps = 2 * len(unit.segments) + len(publish_txn(machine.record))
        self.executor.fail_at = (
            None if fail_at is None else self.executor.steps + fail_at % num_steps
        )
        self.executor.ran = []
        try:
            for action in machine.begin_commit(unit):
                groups = encoded[action.partition][: action.num_row_groups]
                del encoded[action.partition][: action.num_row_groups]
                assert {segment for segment, _ in groups} == {action.segment}
                assert (action.partition, action.segment) not in self.closed
                segment = self.executor.commit_segment(action, [rows for _, rows in groups])
                machine.segment_committed(action, segment)
            record = machine.finish_commit(unit)
            assert record.version == machine.record.version + 1
            for action in publish_txn(record):
                self.executor.run(action)
            for key in machine.published(record):
                waiting = [
                    (p, s)
                    for _, later, _ in self.queue
                    for p, parts in later.items()
                    for s, _ in parts
                ]
                assert key not in waiting and key not in self.closed
                self.closed.add(key)  # the shell closes its live file now
        except InjectedError as exc:
            machine.fail(exc)
            with pytest.raises(StateError):
                machine.check()
            with pytest.raises(StateError):
                machine.take_unit(None, None, self.now)
            if any(isinstance(a, Rename) and a.target == TXN_FILE for a in self.executor.ran):
                event("a commit failed after its commit point")
                self._adopt(unit, rows)
            else:
                event("a commit failed before its commit point")
            self.queue = []
            self._reopen(self.recover_at)  # the crash: restart and recover
            return False
        finally:
            self.executor.fail_at = None
        self._adopt(unit, rows)
        return True

    def _adopt(self, unit: TableUnit, rows: dict[str, list[int]]) -> None:
        for partition, committed in rows.items():
            self.committed.setdefault(partition, []).extend(committed)
        if unit.batch_id is not None:
            self.applied = unit.batch_id

    def _commit_all(self, fail_at: int | None) -> None:
        while self.queue and self._commit_next(fail_at):
            pass

    def _commit_unit(self, app_id: str | None, batch_id: int | None, fail_at: int | None) -> None:
        self._take(app_id, batch_id)
        self._commit_all(fail_at)

    @rule(
        counts=st.lists(st.integers(0, 5), min_size=3, max_size=3),
        fail_at=st.none() | st.integers(0, 14),
        recover_at=st.none() | st.integers(0, 8),
    )
    def append(self, counts: list[int], fail_at: int | None, recover_at: int | None) -> None:
        self.recover_at = recover_at
        self._buffer(counts)
        if self.machine.commit_due(self.now):
            self._commit_unit(None, None, fail_at)

    @rule(counts=st.lists(st.integers(0, 5), min_size=3, max_size=3))
    def append_queued(self, counts: list[int]) -> None:
        """A commit is due but the committer is busy: the unit waits in its queue."""
        self._buffer(counts)
        if self.machine.commit_due(self.now):
            self._take(None, None)

    @precondition(lambda self: bool(self.queue))
    @rule(fail_at=st.none() | st.integers(0, 14), recover_at=st.none() | st.integers(0, 8))
    def commit_queued(self, fail_at: int | None, recover_at: int | None) -> None:
        self.recover_at = recover_at
        self._commit_next(fail_at)

    @rule(
        counts=st.lists(st.integers(0, 5), min_size=3, max_size=3),
        fail_at=st.none() | st.integers(0, 14),
        recover_at=st.none() | st.integers(0, 8),
    )
    def append_batch(self, counts: list[int], fail_at: int | None, recover_at: int | None) -> None:
        self.recover_at = recover_at
        batch_id = self.next_batch
        assert self.machine.decide_batch(APP, batch_id) is BatchDecision.NEW
        self.next_batch += 1
        self._buffer(counts)
        self._commit_unit(APP, batch_id, fail_at)

    @precondition(lambda self: self.applied is not None)
    @rule(back=st.integers(0, 3))
    def replay_batch(self, back: int) -> None:
        assert self.applied is not None
        batch_id = max(0, self.applied - back)
        expected = BatchDecision.REPLAY if batch_id == self.applied else BatchDecision.STALE
        assert self.machine.decide_batch(APP, batch_id) is expected

    @rule(
        seconds=st.sampled_from([0.5, 2.0, 6.0]),
        fail_at=st.none() | st.integers(0, 14),
        recover_at=st.none() | st.integers(0, 8),
    )
    def clock(self, seconds: float, fail_at: int | None, recover_at: int | None) -> None:
        self.recover_at = recover_at
        self.now += seconds
        if self.machine.commit_due(self.now):
            assert self.machine.buffered_rows
            self._commit_unit(None, None, fail_at)

    @rule(fail_at=st.none() | st.integers(0, 14), recover_at=st.none() | st.integers(0, 8))
    def flush(self, fail_at: int | None, recover_at: int | None) -> None:
        self.recover_at = recover_at
        if self.machine.buffered_rows:
            self._take(None, None)
        self._commit_all(fail_at)

    # -- reopening -------------------------------------------------------------------------

    def _recover(self) -> TxnRecord:
        record = decode_txn((self.root / TXN_FILE).read_bytes())
        actions = plan_recovery(record, scan(self.root), str(self.root))
        for action in actions:
            event(f"recovery: {type(action).__name__}")
        for action in actions:
            self.executor.run(action)
        verify_recovery(record, scan(self.root), str(self.root))
        return record

    @rule(fail_at=st.none() | st.integers(0, 8))
    def reopen(self, fail_at: int | None) -> None:
        """A crash (buffered rows are lost), then recovery; a failure inside recovery stops
        it, and the next recovery finishes the job."""
        self._reopen(fail_at)

    def _reopen(self, fail_at: int | None) -> None:
        self.machine.close()
        self.pending, self.encoded, self.closed, self.queue = {}, {}, set(), []
        self.executor.fail_at = None if fail_at is None else self.executor.steps + fail_at
        try:
            record = self._recover()
        except InjectedError:
            event("recovery failed and ran again")
            record = self._recover()
        self.executor.fail_at = None
        assert plan_recovery(record, scan(self.root)) == ()  # recovered: nothing left to do
        # Exactly the published segments are left (an engine listing the directory reads them).
        on_disk_segments = {
            (p.name, e.name) for p in self.root.iterdir() if p.is_dir() for e in p.iterdir()
        }
        listed = {(p, s.name) for p, segments in record.partitions.items() for s in segments}
        assert on_disk_segments == listed
        on_disk = {p: tuple(e.name for e in (self.root / p).iterdir()) for p in record.partitions}
        self.machine = TableMachine(
            record, self.policy, self.now, next_segment_numbers(record, on_disk)
        )
        assert record.applied.get(APP) == self.applied

    @invariant()
    def committed_rows_are_there_once(self) -> None:
        assert self.machine.state is TableState.OPEN  # a failure is followed by a reopen
        record = decode_txn((self.root / TXN_FILE).read_bytes())
        assert read_rows(self.root, record) == self.committed
        for partition, segments in record.partitions.items():
            for segment in segments:
                directory = self.root / partition / segment.name
                groups = committed_row_groups(directory, segment.size)
                assert len(groups) <= self.policy.segment_row_groups

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


TableMachineTest.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_table_machine_with_failures = TableMachineTest.TestCase


# -- the decisions, without I/O --------------------------------------------------------------

DAY = "ts_day=2026-11-22"


def test_a_commit_is_due_by_rows_bytes_or_interval_with_time_an_argument() -> None:
    machine = TableMachine(TxnRecord(), CommitPolicy(commit_rows=10, commit_bytes=100), 0.0)
    machine.buffer(DAY, 9, 50, 0.0)
    machine.accept(9, 50)
    assert not machine.commit_due(1e9)  # no interval: time alone never makes a commit due
    machine.accept(1, 10)
    assert machine.commit_due(0.0)
    by_bytes = TableMachine(TxnRecord(), CommitPolicy(commit_bytes=100), 0.0)
    by_bytes.accept(1, 99)
    assert not by_bytes.commit_due(0.0)
    by_bytes.accept(1, 1)
    assert by_bytes.commit_due(0.0)
    timed = TableMachine(TxnRecord(), CommitPolicy(commit_interval=2.0), 10.0)
    assert not timed.commit_due(100.0)  # nothing buffered
    timed.accept(1, 8)
    assert not timed.commit_due(11.9)
    assert timed.commit_due(12.0)
    timed.take_unit(None, None, 12.0)
    timed.accept(1, 8)
    assert not timed.commit_due(13.0) and timed.commit_due(14.0)  # counted from the last take


def test_row_group_rows_follow_row_group_size_and_row_group_bytes() -> None:
    machine = TableMachine(TxnRecord(), CommitPolicy(row_group_bytes=100), 0.0)
    assert machine.row_group_rows(DAY, 4, partial=True) is None  # nothing buffered
    machine.buffer(DAY, 3, 30, 0.0)
    assert machine.row_group_rows(DAY, 4, partial=False) is None
    assert machine.row_group_rows(DAY, 4, partial=True) == 4
    machine.buffer(DAY, 17, 170, 0.0)  # 20 rows, 200 bytes: 10 bytes a row
    assert machine.row_group_rows(DAY, 64, partial=False) == 10
    machine.cut(DAY, 10, 100, "seg-000000")
    assert machine.pending(DAY) == (10, 100)
    assert machine.row_group_rows(DAY, 64, partial=False) == 10
    machine.cut(DAY, 10, 0, "seg-000000")
    assert machine.pending(DAY) == (0, 0)


def test_segments_roll_over_and_sealed_ones_close_when_their_last_commit_is_published() -> None:
    record = TxnRecord(
        schema="s",
        timestamp="ts",
        partition_by="day",
        partitions={DAY: (Segment("seg-000004", 100),)},
        retired=(),
    )
    machine = TableMachine(record, CommitPolicy(segment_row_groups=2), 0.0)
    assert machine.next_row_group(DAY) is None  # nothing open yet
    assert machine.newest_to_open(DAY) == "seg-000004"
    machine.opened(DAY, "seg-000004", 1)
    assert machine.newest_to_open(DAY) is None
    assert machine.next_row_group(DAY) == 1  # its ordinal (one row group is committed)
    machine.cut(DAY, 1, 0, "seg-000004")
    assert machine.next_row_group(DAY) is None  # full
    assert not machine.is_settled(DAY)
    first = machine.take_unit(None, None, 0.0)
    assert first.segments == (CommitSegment(DAY, "seg-000004", 1),)
    name = machine.allocate_segment(DAY)
    assert name == "seg-000005"  # numbers only grow
    assert machine.roll_over(DAY, name) == ("seg-000004", False)  # sealed: a commit is queued
    assert machine.sealed_segments(DAY) == {"seg-000004"}
    machine.cut(DAY, 1, 0, name)
    second = machine.take_unit(None, None, 0.0)
    assert machine.begin_commit(first) == first.segments
    machine.segment_committed(first.segments[0], Segment("seg-000004", 200, 7))
    record = machine.finish_commit(first)
    assert record.version == 1 and record.partitions[DAY] == (Segment("seg-000004", 200, 7),)
    assert machine.published(record) == [(DAY, "seg-000004")]
    assert machine.sealed_segments(DAY) == set()
    with pytest.raises(StateError, match="order"):
        machine.begin_commit(first)  # units commit once, in the order taken
    machine.begin_commit(second)
    machine.segment_committed(second.segments[0], Segment(name, 50))
    record = machine.finish_commit(second)
    assert [s.name for s in record.partitions[DAY]] == ["seg-000004", name]
    assert machine.published(record) == []
    assert machine.is_settled(DAY)
    assert machine.roll_over(DAY, machine.allocate_segment(DAY)) == (name, True)  # close now


def test_sealing_for_compaction_starts_a_new_segment() -> None:
    record = TxnRecord(partitions={DAY: (Segment("seg-000000", 100),)})
    machine = TableMachine(record, CommitPolicy(), 0.0)
    assert machine.has_newest(DAY) and machine.quiet_seconds(DAY, 5.0) == 5.0
    assert machine.seal_newest(DAY) is None  # not open: nothing to close
    assert not machine.has_newest(DAY)
    assert machine.newest_to_open(DAY) is None and machine.next_row_group(DAY) is None
    machine.buffer(DAY, 1, 8, 7.0)
    assert machine.quiet_seconds(DAY, 9.0) == 2.0


def test_batch_ids_are_decided_against_the_published_record() -> None:
    machine = TableMachine(TxnRecord(applied={APP: 5}), CommitPolicy(), 0.0)
    assert machine.decide_batch(APP, 6) is BatchDecision.NEW
    assert machine.decide_batch(APP, 5) is BatchDecision.REPLAY
    assert machine.decide_batch(APP, 4) is BatchDecision.STALE
    assert machine.decide_batch("other", 0) is BatchDecision.NEW
    machine.buffer(DAY, 1, 8, 0.0)
    machine.cut(DAY, 1, 0, "seg-000000")
    machine.accept(1, 8)
    unit = machine.take_unit(APP, 6, 0.0)
    machine.begin_commit(unit)
    machine.segment_committed(unit.segments[0], Segment("seg-000000", 10))
    record = machine.finish_commit(unit)
    assert machine.decide_batch(APP, 6) is BatchDecision.NEW  # not published yet
    machine.published(record)
    assert record.applied == {APP: 6} and machine.decide_batch(APP, 6) is BatchDecision.REPLAY


def test_a_failure_poisons_and_close_closes() -> None:
    machine = TableMachine(TxnRecord(), CommitPolicy(), 0.0)
    machine.check()
    error = OSError("fsync failed")
    machine.fail(error)
    assert machine.state is TableState.POISONED and machine.error is error
    for step in (
        machine.check,
        lambda: machine.take_unit(None, None, 0.0),
        lambda: machine.buffer(DAY, 1, 1, 0.0),
    ):
        with pytest.raises(StateError, match="fsync failed"):
            step()
    machine.close()
    with pytest.raises(StateError, match="closed"):
        machine.check()


def test_publish_txn_writes_a_temporary_file_then_renames_it() -> None:
    record = TxnRecord(version=3, schema="s")
    actions = publish_txn(record)
    assert [type(a) for a in actions] == [WriteFile, FsyncFile, Rename, FsyncDirectory]
    write, _, rename, _ = actions
    assert isinstance(write, WriteFile) and decode_txn(write.data) == record
    assert rename == Rename(write.path, TXN_FILE) and write.path.startswith(".")


def _listing(**segments: SegmentListing) -> dict[str, PartitionListing]:
    return {DAY: PartitionListing(segments)}


def test_plan_recovery() -> None:
    listed = (Segment("seg-000000", 100, 1), Segment("seg-000002", 50, 2))
    record = TxnRecord(
        partitions={DAY: listed},
        retired=(Retired(f"{DAY}/seg-000001", 0.0),),
    )
    clean = {"seg-000000": SegmentListing(100, False, 100, 1)}
    assert (
        plan_recovery(record, _listing(**clean, **{"seg-000002": SegmentListing(50, False, 50, 2)}))
        == ()
    )
    listing = {
        **_listing(
            **clean,
            **{
                "seg-000001": SegmentListing(70, False, 70, 9),  # retired, data not renamed
                "seg-000002": SegmentListing(90, False, 90, 5),  # ahead of _txn
                "seg-000003": SegmentListing(10, False, 10, 3),  # never published
            },
        ),
        "ts_day=2026-11-23": PartitionListing({}),  # never published
    }
    assert plan_recovery(record, listing) == (
        Rename(f"{DAY}/seg-000001/{DATA_FILE}", f"{DAY}/seg-000001/_data.retired"),
        FsyncDirectory(f"{DAY}/seg-000001"),
        RemoveTree("ts_day=2026-11-23"),
        FsyncDirectory("."),
        RemoveTree(f"{DAY}/seg-000003"),
        FsyncDirectory(DAY),
        RecoverSegment(f"{DAY}/seg-000002", 50),
    )
    with pytest.raises(CorruptFileError, match="does not end at its listed size 50"):
        verify_recovery(record, listing, "t")


def test_plan_recovery_refuses_damage_before_any_action() -> None:
    record = TxnRecord(partitions={DAY: (Segment("seg-000000", 100, 1),)})
    with pytest.raises(CorruptFileError, match=r"missing from 't'"):
        plan_recovery(record, {}, "t")
    with pytest.raises(CorruptFileError, match=f"'t/{DAY}/seg-000000' listed in _txn is missing"):
        plan_recovery(record, _listing(**{"seg-000000": SegmentListing(None)}), "t")
    with pytest.raises(CorruptFileError, match="XXH64 0x0000000000000001, its _pm records 0x"):
        plan_recovery(record, _listing(**{"seg-000000": SegmentListing(100, False, 100, 2)}))
    verify_recovery(record, _listing(**{"seg-000000": SegmentListing(100, False, 100, 1)}))


def test_next_segment_numbers_cover_record_retired_and_disk() -> None:
    record = TxnRecord(
        partitions={DAY: (Segment("seg-000003", 1),)},
        retired=(Retired("ts_day=2026-11-21/seg-000007", 0.0),),
    )
    assert next_segment_numbers(record) == {DAY: 4, "ts_day=2026-11-21": 8}
    on_disk = {DAY: ("seg-000009", "_junk", "seg-x")}
    assert next_segment_numbers(record, on_disk) == {DAY: 10, "ts_day=2026-11-21": 8}


def test_plan_migration_renames_what_is_left_then_publishes() -> None:
    record = TxnRecord(
        version=4,
        timestamp="ts",
        partition_by="day",
        partitions={"2026-11-21": (), "2026-11-22": ()},
        format_version=2,
    )
    names = {"2026-11-21": "ts_day=2026-11-21", "2026-11-22": "ts_day=2026-11-22"}
    existing = frozenset({"2026-11-21", "ts_day=2026-11-22", "_txn"})  # one done before a crash
    migrated, actions = plan_migration(record, names, existing)
    assert migrated.version == 5 and migrated.format_version == 3
    assert set(migrated.partitions) == set(names.values())
    assert actions == (
        Rename("2026-11-21", "ts_day=2026-11-21"),
        FsyncDirectory("."),
        *publish_txn(migrated),
    )
    with pytest.raises(CorruptFileError, match="under both its old name and its new one"):
        plan_migration(record, names, existing | {"2026-11-22"}, "t")


@pytest.mark.parametrize(
    "module", ["streamwrite.layout.table", "streamwrite.layout.table_recovery"]
)
def test_the_table_machine_loads_nothing_heavy(module: str) -> None:
    code = (
        f"import {module}, sys; "
        "heavy = {'pyarrow', 'numpy', 'anyio', 'cryptography', 'fsspec', 'workers'} & "
        "set(sys.modules); print(sorted(heavy)); sys.exit(1 if heavy else 0)"
    )
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
