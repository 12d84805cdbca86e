"""The table machine's decisions (``streamwrite.layout.table``) and its recovery and migration
plans (``streamwrite.layout.table_recovery``), without I/O: time is an argument, a directory
is a listing, every answer is a value or a tuple of actions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from streamwrite.errors import CorruptFileError, StateError
from streamwrite.format.txn import (
    DATA_FILE,
    FORMAT_VERSION,
    MIN_SLOT_SIZE,
    TXN_FILE,
    Retired,
    Segment,
    TxnRecord,
    decode_txn,
    encode_txn,
)
from streamwrite.layout.actions import (
    CommitSegment,
    FsyncDirectory,
    FsyncFile,
    RecoverSegment,
    RemoveTree,
    Rename,
    WriteFile,
    WriteFileAt,
)
from streamwrite.layout.batch_ids import BatchDecision
from streamwrite.layout.table import (
    CommitPolicy,
    TableMachine,
    TableState,
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

APP = "app"

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
    timed.take_unit(None, 12.0)
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
    first = machine.take_unit(None, 0.0)
    assert first.segments == (CommitSegment(DAY, "seg-000004", 1),)
    name = machine.allocate_segment(DAY)
    assert name == "seg-000005"  # numbers only grow
    assert machine.roll_over(DAY, name) == ("seg-000004", False)  # sealed: a commit is queued
    assert machine.sealed_segments(DAY) == {"seg-000004"}
    machine.cut(DAY, 1, 0, name)
    second = machine.take_unit(None, 0.0)
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
    # Regression: written but not published yet, the segment is not settled. Compaction
    # took it here, merged it at the size the published record still had, and the rows of
    # this commit were lost when the merged segment replaced it.
    assert not machine.is_settled(DAY)
    record = machine.finish_commit(second)
    assert not machine.is_settled(DAY)
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
    unit = machine.take_unit({APP: 6}, 0.0)
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
        lambda: machine.take_unit(None, 0.0),
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


def test_publish_txn_writes_one_slot_in_place_with_one_fdatasync() -> None:
    """The previous version in the other slot and room in the slot: one write, one sync."""
    previous = TxnRecord(version=3, schema="s", timestamp="ts", partition_by="day")
    current = encode_txn(previous)
    record = previous.next({DAY: [Segment("seg-000000", 100, 7)]}, {"app": 1})
    actions = publish_txn(record, current)
    assert [type(a) for a in actions] == [WriteFileAt, FsyncFile]
    write, sync = actions
    assert isinstance(write, WriteFileAt) and write.path == TXN_FILE
    assert write.offset == (record.version % 2) * MIN_SLOT_SIZE == 0
    assert sync == FsyncFile(TXN_FILE, data_only=True)
    after = current[: write.offset] + write.data + current[write.offset + len(write.data) :]
    assert len(after) == len(current) and decode_txn(after) == record
    following = record.next({DAY: [Segment("seg-000000", 200, 8)]})
    (write, _) = publish_txn(following, after)
    assert isinstance(write, WriteFileAt) and write.offset == MIN_SLOT_SIZE


def test_publish_txn_rewrites_the_file_when_in_place_is_not_safe() -> None:
    """No _txn, a format-3 JSON one, a record outgrowing its slot, or a _txn whose newest
    version is not the previous one (writing its slot would overwrite the newest): the whole
    file is replaced by rename, with slots large enough."""
    previous = TxnRecord(version=3, schema="s", timestamp="ts", partition_by="day")
    record = previous.next({}, {"app": 1})
    big = previous.next({DAY: [Segment(f"seg-{i:06d}", i, i) for i in range(200)]})
    json_3 = b'{"format": "streamwrite.txn"}'
    for current in (None, json_3, encode_txn(TxnRecord(version=2, schema="s"))):
        assert [type(a) for a in publish_txn(record, current)] == [
            WriteFile,
            FsyncFile,
            Rename,
            FsyncDirectory,
        ]
    write, sync, _, _ = publish_txn(big, encode_txn(previous))
    assert isinstance(write, WriteFile) and len(write.data) > 2 * MIN_SLOT_SIZE
    assert decode_txn(write.data) == big and isinstance(sync, FsyncFile) and sync.data_only


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
        RecoverSegment(f"{DAY}/seg-000002", 50, 2),
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
    assert migrated.version == 5 and migrated.format_version == FORMAT_VERSION
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
