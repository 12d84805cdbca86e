"""The ``"skipping"`` key of the ``_txn`` record (format/txn.py): additive and opaque."""

from __future__ import annotations

import json
import zlib

import pytest

from streamwrite.errors import CorruptFileError
from streamwrite.format.txn import (
    Segment,
    TxnRecord,
    decode_txn,
    encode_txn,
    encode_txn_payload,
)

_SKIPPING = {"config": {"symbol": [["valuelist", {}]]}, "store": {"generation": 3, "files": []}}


def _record(skipping: dict[str, object] | None) -> TxnRecord:
    return TxnRecord(
        version=5,
        schema="c2NoZW1h",
        partitions={"sw_partition=all": (Segment("seg-000000", 100, 5), Segment("seg-000001", 7))},
        skipping=skipping,
    )


def test_the_skipping_entry_round_trips_and_follows_every_next_version() -> None:
    record = _record(_SKIPPING)
    assert decode_txn(encode_txn(record)) == record
    assert json.loads(encode_txn_payload(record))["skipping"] == _SKIPPING
    assert record.next({}).skipping == _SKIPPING
    assert (
        record.compacted("sw_partition=all", ["seg-000000"], Segment("seg-000002", 9), 1.0).skipping
        == _SKIPPING
    )
    assert record.without_retired([]).skipping == _SKIPPING


def test_a_record_without_skipping_encodes_exactly_as_before() -> None:
    record = _record(None)
    payload = encode_txn_payload(record)
    assert b"skipping" not in payload
    # The bytes a writer without the feature made (the body built by hand, as before it).
    body = json.loads(payload)
    crc = body.pop("crc32")
    assert zlib.crc32(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()) == crc
    assert decode_txn(encode_txn(record)).skipping is None


@pytest.mark.parametrize("entry", [[1, 2], "x", 3])
def test_a_skipping_entry_that_is_no_object_is_corrupt(entry: object) -> None:
    body = json.loads(encode_txn_payload(_record(None)))
    body.pop("crc32")
    body["format_version"] = 3
    body["skipping"] = entry
    body["crc32"] = zlib.crc32(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())
    with pytest.raises(CorruptFileError, match="skipping entry"):
        decode_txn(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())
