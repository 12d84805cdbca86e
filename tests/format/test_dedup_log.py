"""The dedup log codec (``streamwrite.format.dedup``) and the ``_txn`` record's ``dedup`` key."""

from __future__ import annotations

import json
import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamwrite.errors import CorruptFileError
from streamwrite.format.dedup import (
    DEDUP_HEADER,
    DedupRecord,
    decode_dedup_log,
    dedup_log_name,
    encode_dedup_records,
    is_dedup_log_name,
)
from streamwrite.format.txn import (
    DedupLog,
    Segment,
    TxnRecord,
    decode_txn,
    encode_txn,
    encode_txn_payload,
)

keys_strategy = st.lists(st.binary(min_size=8, max_size=64), min_size=1, max_size=20, unique=True)


def test_a_record_has_the_documented_layout() -> None:
    keys = [b"A" * 16, b"B" * 16]
    data = encode_dedup_records(7, 1795000000.25, keys)
    head = struct.pack("<QdIB", 7, 1795000000.25, 2, 16) + b"A" * 16 + b"B" * 16
    assert data == head + struct.pack("<I", zlib.crc32(head))
    assert DEDUP_HEADER == b"SWDD\x01\x00\x00\x00"


@given(st.lists(st.tuples(st.floats(0, 2e9), keys_strategy), max_size=8))
def test_records_round_trip(commits: list[tuple[float, list[bytes]]]) -> None:
    data = DEDUP_HEADER + b"".join(
        encode_dedup_records(version, seconds, keys)
        for version, (seconds, keys) in enumerate(commits)
    )
    records = decode_dedup_log(data, "log")
    for version, (seconds, keys) in enumerate(commits):
        mine = [r for r in records if r.version == version]
        assert {r.unix_seconds for r in mine} == {seconds}
        assert sorted(k for r in mine for k in r.split()) == sorted(keys)
        assert all(len({len(k) for k in r.split()}) == 1 for r in mine), "one key size a record"
    assert sum(r.encoded_size for r in records) == len(data) - len(DEDUP_HEADER)


one_size_keys = st.integers(8, 64).flatmap(
    lambda n: st.lists(st.binary(min_size=n, max_size=n), min_size=1, max_size=10, unique=True)
)


@given(one_size_keys, st.data())
def test_every_cut_or_flipped_byte_of_a_committed_record_is_corrupt(
    keys: list[bytes], data: st.DataObject
) -> None:
    log = DEDUP_HEADER + encode_dedup_records(1, 1.0, keys)
    cut = data.draw(st.integers(0, len(log) - 1).filter(lambda n: n != len(DEDUP_HEADER)))
    assert decode_dedup_log(log[: len(DEDUP_HEADER)], "log") == []  # the header alone: empty
    with pytest.raises(CorruptFileError):
        decode_dedup_log(log[:cut], "log")
    flip = data.draw(st.integers(0, len(log) - 1))
    damaged = bytearray(log)
    damaged[flip] ^= 0x5A
    try:
        records = decode_dedup_log(bytes(damaged), "log")
    except CorruptFileError:
        return
    pytest.fail(f"flipping byte {flip} still decoded: {records}")


def test_versions_going_backwards_are_corrupt() -> None:
    log = (
        DEDUP_HEADER
        + encode_dedup_records(5, 1.0, [bytes(8)])
        + encode_dedup_records(4, 1.0, [bytes(8)])
    )
    with pytest.raises(CorruptFileError, match="version 4 after"):
        decode_dedup_log(log, "log")


def test_key_sizes_outside_8_to_64_are_refused() -> None:
    for size in (7, 65):
        with pytest.raises(ValueError):
            encode_dedup_records(1, 1.0, [bytes(size)])
    assert encode_dedup_records(1, 1.0, []) == b""
    assert DedupRecord(1, 1.0, 8, bytes(16)).split() == [bytes(8), bytes(8)]


def test_log_names() -> None:
    assert dedup_log_name(17) == "_dedup.17" and is_dedup_log_name("_dedup.17")
    for name in ("_dedup", "_dedup.x", "../_dedup.1", "_dedup.1/x", "dedup.1"):
        assert not is_dedup_log_name(name)


def _record(dedup: DedupLog | None) -> TxnRecord:
    return TxnRecord(
        version=3,
        schema="c2NoZW1h",
        partitions={"sw_partition=all": (Segment("seg-000000", 100, 5),)},
        dedup=dedup,
    )


def test_the_txn_dedup_entry_round_trips_and_is_absent_without_one() -> None:
    with_log = _record(DedupLog("_dedup.2", 4321))
    assert decode_txn(encode_txn(with_log)) == with_log
    assert json.loads(encode_txn_payload(with_log))["dedup"] == ["_dedup.2", 4321]
    without = _record(None)
    assert decode_txn(encode_txn(without)) == without
    assert "dedup" not in json.loads(encode_txn_payload(without))
    # the following versions keep the entry
    assert with_log.next({}).dedup == with_log.dedup


@pytest.mark.parametrize("entry", [["../x", 1], ["_dedup.1", -1], ["_dedup.1", True], ["_dedup.1"]])
def test_a_bad_txn_dedup_entry_is_corrupt(entry: list[object]) -> None:
    def with_entry(value: object) -> bytes:
        # a format-3 JSON _txn holds the same record (the codec's checks are shared)
        body = json.loads(encode_txn_payload(_record(None)))
        body.pop("crc32")
        body["format_version"] = 3
        body["dedup"] = value
        body["crc32"] = zlib.crc32(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()

    assert decode_txn(with_entry(["_dedup.1", 10])).dedup == DedupLog("_dedup.1", 10)
    with pytest.raises(CorruptFileError, match="_txn record is invalid"):
        decode_txn(with_entry(entry))
