"""The table machine (``streamwrite.layout.table``) in a hypothesis state machine that runs
its actions on a real directory with failures injected between any two of them (its decisions
without I/O: ``test_table_decisions.py``).

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
when its ``_txn`` slot was written in place, or its ``Rename`` onto ``_txn`` ran (the table's
commit point; ``publish_txn`` is given the ``_txn`` bytes there, as the shell does).
Invariant: the rows read from the directory through the published ``_txn`` are the model's,
each once; rows buffered but not committed when a reopen comes are gone.

``STREAMWRITE_TABLE_MACHINE_EXAMPLES`` sets max_examples (default 25).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from streamwrite.errors import CorruptFileError, StateError
from streamwrite.format.txn import DATA_FILE, TXN_FILE, Segment, TxnRecord, decode_txn
from streamwrite.layout.actions import (
    CommitSegment,
    RecoverSegment,
    Rename,
    TableAction,
    WriteFileAt,
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


def _publishes(action: TableAction) -> bool:
    """The table's commit point: the rename onto ``_txn``, or its slot written in place."""
    return (isinstance(action, Rename) and action.target == TXN_FILE) or (
        isinstance(action, WriteFileAt) and action.path == TXN_FILE
    )


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
        applied = {app_id: batch_id} if app_id is not None and batch_id is not None else None
        unit = self.machine.take_unit(applied, self.now)
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
        current = (self.root / TXN_FILE).read_bytes()
        num_steps = 2 * len(unit.segments) + len(publish_txn(machine.record, current))
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
            for action in publish_txn(record, (self.root / TXN_FILE).read_bytes()):
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
                machine.take_unit(None, self.now)
            if any(_publishes(a) for a in self.executor.ran):
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
        if unit.applied:
            (self.applied,) = unit.applied.values()

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
