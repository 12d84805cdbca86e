"""The tiering decisions of ``streamwrite.layout.tiering``, driven without I/O."""

from __future__ import annotations

from dataclasses import replace

import pytest

from streamwrite.errors import CorruptFileError, StateError
from streamwrite.format.txn import (
    Retired,
    Segment,
    TxnRecord,
    decode_txn_payload,
    encode_txn_payload,
    txn_log_name,
)
from streamwrite.layout.tiering import (
    PartitionFacts,
    check_log,
    check_object,
    check_owner,
    due_segments,
    expired_logs,
    log_object,
    owner_marker,
    plan_cold_recovery,
    read_owner,
    retired_record,
    segment_object_path,
    tiered_record,
)

COLD = "s3://bucket/ticks"
DAY1 = "ts_day=2026-11-22"
DAY2 = "ts_day=2026-11-23"


def _record() -> TxnRecord:
    return TxnRecord(
        version=5,
        schema="c2NoZW1h",
        timestamp="ts",
        partition_by="day",
        partitions={
            DAY1: (
                Segment("seg-000000", 100, 1),
                Segment("seg-000001", 200, 2),
                Segment("seg-000002", 300, 3),
            ),
            DAY2: (Segment("seg-000000", 50, 4),),
        },
    )


def _ages(value: float) -> dict[str, float]:
    return {f"seg-{i:06d}": value for i in range(3)}


def test_due_takes_eligible_old_segments_in_order() -> None:
    record = _record()
    facts = [PartitionFacts(DAY1, 2, (), _ages(100.0)), PartitionFacts(DAY2, 0, (), _ages(100.0))]
    assert due_segments(record, facts, 10.0) == (f"{DAY1}/seg-000000", f"{DAY1}/seg-000001")


def test_due_stops_at_young_merging_or_busy_segments() -> None:
    record = _record()
    young = {"seg-000000": 100.0, "seg-000001": 1.0, "seg-000002": 100.0}
    assert due_segments(record, [PartitionFacts(DAY1, 3, (), young)], 10.0) == (
        f"{DAY1}/seg-000000",
    )
    merging = PartitionFacts(DAY1, 3, ("seg-000000", "seg-000001"), _ages(100.0))
    assert due_segments(record, [merging], 10.0) == ()
    assert due_segments(record, [PartitionFacts(DAY1, 0, (), _ages(100.0))], 10.0) == ()
    assert due_segments(record, [PartitionFacts(DAY1, 3, (), None)], 10.0) == ()


def test_due_skips_the_cold_prefix_and_never_breaks_it() -> None:
    record = tiered_record(_record(), f"{DAY1}/seg-000000", 100, 77, COLD, 1.0)
    facts = [PartitionFacts(DAY1, 3, (), _ages(100.0))]
    assert due_segments(record, facts, 10.0) == (
        f"{DAY1}/seg-000001",
        f"{DAY1}/seg-000002",
    )
    # a record with a cold segment after a local one (not made by tiering): no move breaks it
    odd = tiered_record(_record(), f"{DAY1}/seg-000001", 200, 77, COLD, 1.0)
    assert due_segments(odd, facts, 10.0) == ()


def test_tiered_record_lists_cold_and_retires_in_one_version() -> None:
    record = _record()
    tiered = tiered_record(record, f"{DAY1}/seg-000001", 200, 0xABC, COLD, 9.5)
    assert tiered.version == record.version + 1
    assert tiered.cold == COLD
    assert tiered.partitions[DAY1][1] == Segment("seg-000001", 200, 2, 0xABC)
    assert tiered.retired == (Retired(f"{DAY1}/seg-000001", 9.5),)
    assert decode_txn_payload(encode_txn_payload(tiered)) == tiered


@pytest.mark.parametrize(
    ("path", "size"),
    [(f"{DAY1}/seg-000001", 201), (f"{DAY1}/seg-000009", 200), (f"{DAY2}/seg-000000", 51)],
)
def test_tiered_record_refuses_a_changed_segment(path: str, size: int) -> None:
    with pytest.raises(StateError, match="changed while it was moved"):
        tiered_record(_record(), path, size, 1, COLD, 0.0)


def test_tiered_record_refuses_another_cold_root_and_a_cold_segment() -> None:
    tiered = tiered_record(_record(), f"{DAY1}/seg-000000", 100, 1, COLD, 0.0)
    with pytest.raises(StateError, match="cold storage is"):
        tiered_record(tiered, f"{DAY1}/seg-000001", 200, 1, "s3://other/x", 0.0)
    with pytest.raises(StateError, match="changed while"):
        tiered_record(tiered, f"{DAY1}/seg-000000", 100, 1, COLD, 0.0)


def test_check_object() -> None:
    check_object("u", 10, 5, 10, 5)
    with pytest.raises(CorruptFileError, match="missing"):
        check_object("u", 10, 5, None, None)
    with pytest.raises(CorruptFileError, match="has 9 bytes"):
        check_object("u", 10, 5, 9, None)
    with pytest.raises(CorruptFileError, match="XXH64"):
        check_object("u", 10, 5, 10, 6)


def test_log_object_is_the_cold_view() -> None:
    tiered = tiered_record(_record(), f"{DAY1}/seg-000000", 100, 1, COLD, 0.0)
    key, data = log_object(tiered)
    assert key == txn_log_name(tiered.version)
    view = decode_txn_payload(data)
    assert view.partitions == {DAY1: (Segment("seg-000000", 100, 1, 1),)}
    assert view.retired == ()
    check_log("u", data, data)
    with pytest.raises(StateError, match="another table or writer"):
        check_log("u", data + b" ", data)


def test_segment_object_path() -> None:
    assert segment_object_path(f"{DAY1}/seg-000001/data.parquet") == f"{DAY1}/seg-000001"
    for key in (
        f"{DAY1}/seg-000001/_pm",
        "_txn_log/00000000000000000001.json",
        "_x/seg-000001/data.parquet",
        f"{DAY1}/notaseg/data.parquet",
        "data.parquet",
        f"a/{DAY1}/seg-000001/data.parquet",
    ):
        assert segment_object_path(key) is None


def test_recovery_deletes_unpublished_objects_and_puts_a_missing_log() -> None:
    tiered = tiered_record(_record(), f"{DAY1}/seg-000000", 100, 1, COLD, 0.0)
    keys = [
        f"{DAY1}/seg-000000/data.parquet",  # published
        f"{DAY1}/seg-000001/data.parquet",  # uploaded, never published
        "notes.txt",  # not ours: left alone
        f"{DAY1}/seg-000000/.data.parquet.1234.tmp",  # an upload to a local root cut short
        "_private/seg-000000/data.parquet",  # not a partition: left alone
    ]
    plan = plan_cold_recovery(tiered, keys, None, [f"{DAY1}/seg-000000", f"{DAY1}/seg-000001"])
    assert plan.delete_keys == (
        f"{DAY1}/seg-000001/data.parquet",
        f"{DAY1}/seg-000000/.data.parquet.1234.tmp",
    )
    assert plan.put_log
    assert plan.retire == ()  # seg-000000 lingers but is retired already


def test_recovery_with_the_current_log_does_nothing() -> None:
    tiered = tiered_record(_record(), f"{DAY1}/seg-000000", 100, 1, COLD, 0.0)
    key, data = log_object(tiered)
    plan = plan_cold_recovery(tiered, [key, f"{DAY1}/seg-000000/data.parquet"], data)
    assert plan.delete_keys == () and not plan.put_log
    # later versions that did not change the cold view need no new log
    later = tiered.next({DAY2: (Segment("seg-000000", 60, 9),)}, {"app": 1})
    assert not plan_cold_recovery(later, [key], data).put_log
    # a later version that moved another segment does
    moved = tiered_record(later, f"{DAY1}/seg-000001", 200, 2, COLD, 0.0)
    assert plan_cold_recovery(moved, [key], data).put_log


def test_recovery_refuses_a_log_of_another_writer() -> None:
    tiered = tiered_record(_record(), f"{DAY1}/seg-000000", 100, 1, COLD, 0.0)
    key, data = log_object(tiered)
    with pytest.raises(StateError, match="newer than"):
        plan_cold_recovery(tiered, [txn_log_name(tiered.version + 1)], data)
    with pytest.raises(StateError, match="other contents"):
        plan_cold_recovery(tiered, [key], data.replace(b"ts", b"tt"))


def test_recovery_retires_a_lingering_unretired_cold_segment() -> None:
    tiered = tiered_record(_record(), f"{DAY1}/seg-000000", 100, 1, COLD, 0.0)
    unretired = replace(tiered, retired=())
    plan = plan_cold_recovery(unretired, [], None, [f"{DAY1}/seg-000000"])
    assert plan.retire == (f"{DAY1}/seg-000000",)
    again = retired_record(unretired, plan.retire, 3.0)
    assert again.retired == (Retired(f"{DAY1}/seg-000000", 3.0),)
    assert again.version == unretired.version + 1
    assert retired_record(again, plan.retire, 4.0).retired == again.retired


def test_expired_logs_keeps_the_newest_and_waits_the_grace_period() -> None:
    keys, known = expired_logs([3, 5, 8], {}, 100.0, 10.0)
    assert keys == () and known == {3: 100.0, 5: 100.0}
    keys, known = expired_logs([3, 5, 8], known, 109.0, 10.0)
    assert keys == ()
    keys, known = expired_logs([3, 5, 8], known, 110.0, 10.0)
    assert keys == (txn_log_name(3), txn_log_name(5)) and known == {}
    keys, known = expired_logs([8], {}, 200.0, 0.0)
    assert keys == () and known == {}
    assert expired_logs([], {1: 0.0}, 5.0, 0.0) == ((), {})


def test_owner_markers() -> None:
    marker = owner_marker(COLD, "abc")
    assert read_owner(marker) == (COLD, "abc")
    check_owner(COLD, marker, "abc")
    with pytest.raises(StateError, match="belongs to another table"):
        check_owner(COLD, marker, "xyz")
    with pytest.raises(StateError, match="belongs to another table"):
        check_owner(COLD, b"not json", "abc")
    assert read_owner(b'{"owner": 1, "url": "u"}') is None
