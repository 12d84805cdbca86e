"""The Flight wire formats against byte vectors derived by hand from the .proto files.

Source: apache/arrow ``format/FlightSql.proto`` (``CommandStatementIngest`` fields 1-6 and
1000, ``TableDefinitionOptions`` fields 1-2, ``DoPutUpdateResult`` field 1) and
``google/protobuf/any.proto`` (``type_url`` = 1, ``value`` = 2); the encoding is the proto3
wire format (key = field_number << 3 | wire_type; 0 varint, 2 length-delimited).
"""

from __future__ import annotations

import pytest

from streamwrite.daemon.errors import BadRequestError
from streamwrite.daemon.flight_wire import (
    INGEST_TYPE_URL,
    BatchIds,
    IngestCommand,
    Ticket,
    decode_any,
    decode_ingest,
    encode_ack,
    encode_any,
    encode_put_update_result,
    encode_ticket,
    parse_batch_ids,
    parse_ticket,
    timestamp_ns,
)

# table_definition_options {if_not_exist: FAIL(2), if_exists: APPEND(2)} = 0a 04 08 02 10 02
# table "trades"                                                      = 12 06 "trades"
APPEND_TRADES = bytes.fromhex("0a04080210021206") + b"trades"
# create_append: {CREATE(1), APPEND(2)}; catalog (4) "c"; temporary (5) true;
# transaction_id (6) b"\x01"; options (1000 -> key varint c2 3e) {"k": "v"} = 0a 01 6b 12 01 76
FULL = (
    bytes.fromhex("0a0408011002")
    + b"\x12\x01t"
    + b"\x1a\x01s"
    + b"\x22\x01c"
    + b"\x28\x01"
    + b"\x32\x01\x01"
    + bytes.fromhex("c23e060a016b120176")
)


def test_decode_ingest_append_vector() -> None:
    assert decode_ingest(APPEND_TRADES) == IngestCommand("trades", 2, 2)


def test_decode_ingest_every_field_vector() -> None:
    assert decode_ingest(FULL) == IngestCommand(
        "t",
        1,
        2,
        schema="s",
        catalog="c",
        temporary=True,
        transaction_id=b"\x01",
        options={"k": "v"},
    )


def test_decode_ingest_skips_unknown_fields() -> None:
    # field 7 varint 5 (key 0x38), field 8 fixed64 (key 0x41), field 9 fixed32 (key 0x4d)
    unknown = b"\x38\x05" + b"\x41" + bytes(8) + b"\x4d" + bytes(4)
    assert decode_ingest(unknown + APPEND_TRADES) == IngestCommand("trades", 2, 2)


def test_any_round_trip_and_vector() -> None:
    blob = encode_any(INGEST_TYPE_URL, APPEND_TRADES)
    url = INGEST_TYPE_URL.encode()
    assert blob == b"\x0a" + bytes([len(url)]) + url + b"\x12" + bytes([len(APPEND_TRADES)]) + (
        APPEND_TRADES
    )
    assert decode_any(blob) == (INGEST_TYPE_URL, APPEND_TRADES)


@pytest.mark.parametrize(
    "blob",
    [
        APPEND_TRADES[:-1],  # a length running past the end
        b"\x0a\xff",  # a varint running past the end
        b"\x0a" + b"\xff" * 11,  # a varint over 10 bytes
        b"\x0b\x00",  # wire type 3 (start group)
        b"\x00\x00",  # field number 0
        b"\x12\x02\xff\xfe",  # table not UTF-8
        b"\x10\x01",  # table as a varint
    ],
)
def test_decode_ingest_malformed(blob: bytes) -> None:
    with pytest.raises(BadRequestError, match="Malformed CommandStatementIngest"):
        decode_ingest(blob)


@pytest.mark.parametrize("blob", [b"", b"\x12\x00", b"\x0a\x05ab"])
def test_decode_any_malformed(blob: bytes) -> None:
    with pytest.raises(BadRequestError, match="not a protobuf Any"):
        decode_any(blob)


@pytest.mark.parametrize(
    ("count", "blob"),
    [
        (3, b"\x08\x03"),
        (300, b"\x08\xac\x02"),
        (-1, b"\x08" + b"\xff" * 9 + b"\x01"),  # int64 -1: ten-byte two's complement varint
        (0, b""),  # proto3 omits a default value
    ],
)
def test_put_update_result_vectors(count: int, blob: bytes) -> None:
    assert encode_put_update_result(count) == blob


def test_batch_ids() -> None:
    assert parse_batch_ids(None) == BatchIds()
    assert parse_batch_ids(b"") == BatchIds()
    assert parse_batch_ids(b"{}") == BatchIds()
    assert parse_batch_ids(b'{"app_id": "a", "batch_id": 7}') == BatchIds("a", 7)


@pytest.mark.parametrize(
    "blob",
    [
        b"not json",
        b"\xff",
        b"[1]",
        b'{"app_id": "a"}',
        b'{"batch_id": 1}',
        b'{"app_id": "", "batch_id": 1}',
        b'{"app_id": "a", "batch_id": -1}',
        b'{"app_id": "a", "batch_id": 1.5}',
        b'{"app_id": "a", "batch_id": true}',
        b'{"app_id": "a", "batch_id": 1, "x": 2}',
    ],
)
def test_batch_ids_refused(blob: bytes) -> None:
    with pytest.raises(BadRequestError, match="app_metadata"):
        parse_batch_ids(blob)


def test_ack() -> None:
    assert encode_ack(4, 10, 12, False) == (
        b'{"batch_id":4,"rows":10,"table_version":12,"skipped":false}'
    )


def test_timestamp_ns() -> None:
    assert timestamp_ns(5, "x") == 5
    assert timestamp_ns("-5", "x") == -5
    assert timestamp_ns("1970-01-01T00:00:01Z", "x") == 1_000_000_000
    assert timestamp_ns("1970-01-01T00:00:01.000002", "x") == 1_000_002_000
    assert timestamp_ns("1970-01-01T01:00:00+01:00", "x") == 0
    assert timestamp_ns("2024-03-01", "x") == 1_709_251_200 * 1_000_000_000
    for bad in ("yesterday", 1.5, True, None, [1]):
        with pytest.raises(BadRequestError, match="ISO 8601"):
            timestamp_ns(bad, "x")


def test_ticket_round_trip() -> None:
    raw = encode_ticket("t", ["a", "b"], since="1970-01-01T00:00:00.000001Z", until=2000)
    assert parse_ticket(raw) == Ticket("t", ("a", "b"), 1000, 2000)
    assert parse_ticket(encode_ticket("t")) == Ticket("t")


@pytest.mark.parametrize(
    "raw",
    [
        b"nope",
        b'"t"',
        b'{"table": 1}',
        b'{"table": "t", "columns": "a"}',
        b'{"table": "t", "columns": ["a", "a"]}',
        b'{"table": "t", "filter": {"from": 1}}',
        b'{"table": "t", "filter": {"since": "later"}}',
        b'{"table": "t", "where": 1}',
    ],
)
def test_ticket_refused(raw: bytes) -> None:
    with pytest.raises(BadRequestError, match="ticket"):
        parse_ticket(raw)
