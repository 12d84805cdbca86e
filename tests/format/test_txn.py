"""The ``_txn`` codec of format 4 (``streamwrite.format.txn``): two slots updated in place.

A commit writes version ``v`` into slot ``v % 2``; a crash (or a reader racing the write) may
see that slot torn at any byte offset, with the slot's previous bytes (version ``v - 2``) or
garbage after the cut. Every such state decodes to version ``v - 1`` (the other slot) or, once
every byte of the slot's header and payload landed, to ``v``; never to anything else.
"""

from __future__ import annotations

import json
import os
import random
import threading
import zlib
from dataclasses import replace
from pathlib import Path

import pytest

from streamwrite.errors import CorruptFileError
from streamwrite.format.txn import (
    FORMAT_VERSION,
    MIN_SLOT_SIZE,
    SLOT_HEADER_SIZE,
    Retired,
    Segment,
    TxnRecord,
    _body,
    decode_txn,
    encode_txn,
    encode_txn_payload,
    encode_txn_slot,
    read_txn_slots,
    txn_slot_size,
)
from streamwrite.io.txn import read_txn

DAY = "ts_day=2026-11-22"
FULL = os.environ.get("STREAMWRITE_TORN_FULL", "") not in ("", "0")


def _record(version: int, num_segments: int = 3) -> TxnRecord:
    return TxnRecord(
        version=version,
        schema="c2NoZW1h",
        timestamp="ts",
        partition_by="day",
        partitions={
            DAY: tuple(
                Segment(f"seg-{i:06d}", 1000 * (version + i) + 17, 2**63 + i)
                for i in range(num_segments)
            )
        },
        applied={"job": version},
        retired=(Retired(f"{DAY}/seg-999999", 1795000000.5),),
    )


def _two_versions(version: int) -> tuple[bytes, bytes]:
    """The ``_txn`` file holding versions ``version - 1`` and ``version - 2`` (as in-place
    commits leave it), and the same file after version ``version`` was written in place."""
    older, previous, new = _record(version - 2), _record(version - 1, 4), _record(version, 5)
    slot_size = MIN_SLOT_SIZE
    slots = {r.version % 2: encode_txn_slot(r, slot_size) for r in (older, previous)}
    before = slots[0] + slots[1]
    slots[new.version % 2] = encode_txn_slot(new, slot_size)
    return before, slots[0] + slots[1]


def test_slots_round_trip_and_the_newest_intact_slot_wins() -> None:
    record = _record(7)
    data = encode_txn(record)
    assert len(data) == 2 * MIN_SLOT_SIZE and data[MIN_SLOT_SIZE:][:4] == b"SWTX"  # 7 % 2
    assert decode_txn(data) == record and record.format_version == FORMAT_VERSION == 4
    assert read_txn_slots(data) == read_txn_slots(data) and read_txn_slots(data) is not None
    before, after = _two_versions(9)
    assert decode_txn(before).version == 8 and decode_txn(after).version == 9
    assert decode_txn(after) == _record(9, 5)
    slots = read_txn_slots(after)
    assert slots is not None and slots.versions == (8, 9) and slots.newest == 1


def test_a_slot_grows_by_powers_of_two_with_room_to_spare() -> None:
    assert txn_slot_size(0) == MIN_SLOT_SIZE
    assert txn_slot_size(2048 - SLOT_HEADER_SIZE) == 4096
    assert txn_slot_size(2049 - SLOT_HEADER_SIZE) == 8192
    big = _record(3, 300)
    payload = encode_txn_payload(big)
    size = txn_slot_size(len(payload))
    assert size >= 2 * (len(payload) + SLOT_HEADER_SIZE) and size & (size - 1) == 0
    assert decode_txn(encode_txn(big)) == big
    with pytest.raises(ValueError, match="does not fit"):
        encode_txn_slot(big, MIN_SLOT_SIZE)


def _torn_offsets(size: int) -> list[int]:
    if FULL:
        return list(range(size + 1))
    return sorted({*range(0, 80), *random.Random(4).sample(range(size + 1), 400), size})


@pytest.mark.parametrize("after_cut", ["old bytes", "garbage", "zeros"])
def test_a_slot_torn_at_every_byte_offset_reads_as_the_previous_version(after_cut: str) -> None:
    """Version 9 written over version 7 in slot 1, cut at every byte offset of the slot."""
    before, after = _two_versions(9)
    slot = MIN_SLOT_SIZE  # slot 1 starts here
    payload_end = SLOT_HEADER_SIZE + len(encode_txn_payload(_record(9, 5)))
    rng = random.Random(after_cut)
    for cut in range(MIN_SLOT_SIZE + 1):  # every offset: decoding is cheap
        rest = {
            "old bytes": before[slot + cut :],
            "garbage": rng.randbytes(MIN_SLOT_SIZE - cut),
            "zeros": bytes(MIN_SLOT_SIZE - cut),
        }[after_cut]
        torn = after[: slot + cut] + rest
        # Whole once the header and payload landed (past the cut, or equal by chance).
        whole = torn[slot : slot + payload_end] == after[slot : slot + payload_end]
        assert whole or cut < payload_end
        assert decode_txn(torn) == (_record(9, 5) if whole else _record(8, 4)), cut


def test_both_slots_damaged_is_corrupt() -> None:
    _, after = _two_versions(9)
    bad = bytearray(after)
    bad[40] ^= 1
    bad[MIN_SLOT_SIZE + 40] ^= 1
    with pytest.raises(CorruptFileError, match="no slot is intact"):
        decode_txn(bytes(bad))
    with pytest.raises(CorruptFileError, match="neither a JSON record nor two slots"):
        decode_txn(after[:100])
    one = bytearray(after)
    one[MIN_SLOT_SIZE + 40] ^= 1  # the newest slot damaged: the previous version
    assert decode_txn(bytes(one)).version == 8


def test_an_intact_slot_of_an_unknown_format_is_refused() -> None:
    record = _record(2)
    slot = bytearray(encode_txn_slot(record, MIN_SLOT_SIZE))
    slot[4:8] = (5).to_bytes(4, "little")
    payload_size = int.from_bytes(slot[12:16], "little")
    crc = zlib.crc32(bytes(slot[32 : 32 + payload_size]), zlib.crc32(bytes(slot[:24])))
    slot[24:28] = crc.to_bytes(4, "little")
    with pytest.raises(CorruptFileError, match="format version 5"):
        decode_txn(bytes(slot) + bytes(MIN_SLOT_SIZE))


def test_format_3_json_is_still_read() -> None:
    record = replace(_record(4), format_version=3)
    body = _body(record)
    body["crc32"] = zlib.crc32(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())
    data = json.dumps(body, sort_keys=True, indent=1).encode() + b"\n"
    assert decode_txn(data) == record
    assert read_txn_slots(data) is None
    body["format_version"] = 4  # format 4 lives in slots only
    with pytest.raises(CorruptFileError, match="format_version 4"):
        decode_txn(json.dumps(body).encode())
    with pytest.raises(ValueError, match="migrate"):
        encode_txn(record)


def test_a_reader_racing_in_place_writes_sees_whole_versions(tmp_path: Path) -> None:
    """A thread writes versions 2..N in place (``pwrite`` of one slot) while this thread reads
    the file whole and decodes it (:func:`streamwrite.io.txn.read_txn`, what every reader
    calls): every read is some whole version, never older than one the writer finished before
    the read began."""
    path = tmp_path / "_txn"
    path.write_bytes(encode_txn(_record(1, 2), MIN_SLOT_SIZE))
    num_versions = 400 if not FULL else 5000
    done = threading.Event()
    finished = [1]

    def writer() -> None:
        fd = os.open(path, os.O_WRONLY)
        try:
            for version in range(2, num_versions + 1):
                record = _record(version, 1 + version % 7)
                os.pwrite(fd, encode_txn_slot(record, MIN_SLOT_SIZE), version % 2 * MIN_SLOT_SIZE)
                finished[0] = version
        finally:
            os.close(fd)
            done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    reads = 0
    while not done.is_set() or reads < 10:
        floor = finished[0]
        record = read_txn(tmp_path)  # what every reader calls
        assert record.version >= floor
        assert record == _record(record.version, 1 + record.version % 7)
        reads += 1
    thread.join()
    assert decode_txn(path.read_bytes()).version == num_versions
