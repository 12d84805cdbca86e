"""The cold-storage fields of the ``_txn`` record (issue 16): segments tiered to object storage,
the table's cold root, the cold view published to the bucket and its log names."""

from __future__ import annotations

import json
import zlib

import pytest

from streamwrite.errors import CorruptFileError
from streamwrite.format.txn import (
    Segment,
    TxnRecord,
    cold_object_key,
    decode_txn,
    decode_txn_payload,
    encode_txn,
    encode_txn_payload,
    txn_log_name,
    txn_log_version,
)

COLD = "s3://bucket/tables/ticks"


def _record() -> TxnRecord:
    return TxnRecord(
        version=7,
        schema="c2NoZW1h",
        timestamp="ts",
        partition_by="day",
        partitions={
            "ts_day=2026-11-22": (Segment("seg-000000", 1000, 11), Segment("seg-000001", 900, 12)),
            "ts_day=2026-11-23": (Segment("seg-000002", 800),),
        },
        applied={"job": 3},
    )


def test_a_record_without_cold_segments_encodes_as_before() -> None:
    payload = encode_txn_payload(_record())
    assert b'"cold"' not in payload
    assert b'["seg-000000",1000,11]' in payload


def test_tiering_marks_one_segment_and_round_trips() -> None:
    tiered = _record().tiered("ts_day=2026-11-22/seg-000000", 2**64 - 1, COLD)
    assert tiered.version == 8 and tiered.cold == COLD
    first, second = tiered.partitions["ts_day=2026-11-22"]
    assert first.is_cold and first.object_xxh64 == 2**64 - 1 and first.footer_xxh64 == 11
    assert not second.is_cold
    assert decode_txn(encode_txn(tiered)) == tiered
    payload = encode_txn_payload(tiered)
    assert f'"cold":"{COLD}"'.encode() in payload
    assert b'["seg-000000",1000,11,18446744073709551615]' in payload


def test_a_cold_segment_without_footer_checksum_keeps_a_null_third_entry() -> None:
    tiered = _record().tiered("ts_day=2026-11-23/seg-000002", 5, COLD)
    assert b'["seg-000002",800,null,5]' in encode_txn_payload(tiered)
    assert decode_txn_payload(encode_txn_payload(tiered)) == tiered


def test_tiering_refuses_unknown_cold_and_another_root() -> None:
    record = _record()
    with pytest.raises(ValueError, match="not a local segment"):
        record.tiered("ts_day=2026-11-22/seg-000009", 1, COLD)
    tiered = record.tiered("ts_day=2026-11-22/seg-000000", 1, COLD)
    with pytest.raises(ValueError, match="not a local segment"):
        tiered.tiered("ts_day=2026-11-22/seg-000000", 1, COLD)
    with pytest.raises(ValueError, match="cold storage is"):
        tiered.tiered("ts_day=2026-11-22/seg-000001", 1, "s3://other/x")


def test_cold_view_keeps_only_cold_segments_and_drops_local_state() -> None:
    tiered = _record().tiered("ts_day=2026-11-22/seg-000001", 3, COLD)
    view = tiered.cold_view()
    assert view.version == tiered.version
    assert view.partitions == {"ts_day=2026-11-22": (Segment("seg-000001", 900, 12, 3),)}
    assert view.files() == (("ts_day=2026-11-22/seg-000001", 900),)
    assert decode_txn_payload(encode_txn_payload(view)) == view


def test_a_cold_segment_without_a_cold_root_is_corrupt() -> None:
    payload = encode_txn_payload(_record().tiered("ts_day=2026-11-22/seg-000000", 1, COLD))
    body = json.loads(payload)
    del body["cold"], body["crc32"]
    body["crc32"] = zlib.crc32(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())
    forged = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    with pytest.raises(CorruptFileError, match="cold segment but no cold storage"):
        decode_txn_payload(forged)


def test_log_names_sort_as_versions() -> None:
    names = [txn_log_name(v) for v in (9, 10, 123456789)]
    assert names == sorted(names)
    assert names[0] == "_txn_log/00000000000000000009.json"
    assert [txn_log_version(n.rpartition("/")[2]) for n in names] == [9, 10, 123456789]
    assert txn_log_version("9.json") is None and txn_log_version("_last") is None
    assert (
        cold_object_key("ts_day=2026-11-22/seg-000001")
        == "ts_day=2026-11-22/seg-000001/data.parquet"
    )
