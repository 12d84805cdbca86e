"""The Flight endpoint's wire formats, sans I/O: Flight SQL protobuf, ``app_metadata``, tickets.

Protobuf (proto3 wire format, decoded by hand: the daemon does not depend on ``protobuf``).
A message is a sequence of fields, each a varint key ``field_number << 3 | wire_type`` and a
value: wire type 0 a varint, 1 eight bytes, 2 a varint length and that many bytes, 5 four bytes.
The messages read and written here (apache/arrow: ``format/FlightSql.proto``, ``Flight.proto``;
``google/protobuf/any.proto``)::

    message Any { string type_url = 1; bytes value = 2; }       // a CMD descriptor's command
    message CommandStatementIngest {
      message TableDefinitionOptions {
        TableNotExistOption if_not_exist = 1;   // 0 UNSPECIFIED, 1 CREATE, 2 FAIL
        TableExistsOption if_exists = 2;        // 0 UNSPECIFIED, 1 FAIL, 2 APPEND, 3 REPLACE
      }
      TableDefinitionOptions table_definition_options = 1;
      string table = 2; optional string schema = 3; optional string catalog = 4;
      bool temporary = 5; optional bytes transaction_id = 6;
      map<string, string> options = 1000;       // entries: { string key = 1; string value = 2; }
    }
    message DoPutUpdateResult { int64 record_count = 1; }     // the ingest's one PutResult
    message CloseSessionResult { Status status = 1; }          // 1 CLOSED

ADBC ``adbc_ingest`` modes arrive as (if_not_exist, if_exists): append (FAIL, APPEND),
create (CREATE, FAIL), create_append (CREATE, APPEND), replace (CREATE, REPLACE).

Plain Flight DoPut: each batch's ``app_metadata`` is empty or JSON
``{"app_id": "<non-empty string>", "batch_id": <int >= 0>}`` (both or neither); each batch is
acknowledged with PutResult ``app_metadata`` JSON
``{"batch_id": <int|null>, "rows": <int>, "table_version": <int>, "skipped": <bool>}``.

DoGet ticket: JSON ``{"table": "<name>", "columns": ["a", "b"], "filter": {"since": S,
"until": U}}``; ``columns`` and ``filter`` (and each bound) optional; a bound is an integer of
nanoseconds since the Unix epoch or an ISO 8601 string (no offset means UTC); ``since`` is
inclusive and ``until`` exclusive, on the table's designated timestamp.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from streamwrite.daemon.errors import BadRequestError

__all__ = [
    "INGEST_TYPE_URL",
    "SQL_TYPE_URL_PREFIX",
    "BatchIds",
    "IngestCommand",
    "Ticket",
    "decode_any",
    "decode_ingest",
    "encode_ack",
    "encode_any",
    "encode_close_session_result",
    "encode_put_update_result",
    "encode_ticket",
    "parse_batch_ids",
    "parse_ticket",
    "timestamp_ns",
]

SQL_TYPE_URL_PREFIX = "type.googleapis.com/arrow.flight.protocol.sql."
INGEST_TYPE_URL = SQL_TYPE_URL_PREFIX + "CommandStatementIngest"
NOT_EXIST_CREATE, NOT_EXIST_FAIL = 1, 2
EXISTS_FAIL, EXISTS_APPEND, EXISTS_REPLACE = 1, 2, 3
_MAX_VARINT_SIZE = 10
_UINT64 = 1 << 64


class _ProtoError(Exception):
    """A malformed protobuf message (turned into BadRequestError by the callers)."""


def _read_varint(data: bytes, offset: int) -> tuple[int, int]:
    """The varint at ``offset`` and the offset after it."""
    value = 0
    for i in range(_MAX_VARINT_SIZE):
        if offset + i >= len(data):
            raise _ProtoError("a varint runs past the end of the message")
        byte = data[offset + i]
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            return value % _UINT64, offset + i + 1
    raise _ProtoError("a varint is longer than 10 bytes")


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """The (field number, value) pairs of a message: an int for wire types 0/1/5, else bytes."""
    out: list[tuple[int, int | bytes]] = []
    offset = 0
    while offset < len(data):
        key, offset = _read_varint(data, offset)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise _ProtoError("field number 0")
        value: int | bytes
        if wire_type == 0:
            value, offset = _read_varint(data, offset)
        elif wire_type in (1, 5):
            size = 8 if wire_type == 1 else 4
            if offset + size > len(data):
                raise _ProtoError(f"field {number} runs past the end of the message")
            value = int.from_bytes(data[offset : offset + size], "little")
            offset += size
        elif wire_type == 2:
            size, offset = _read_varint(data, offset)
            if offset + size > len(data):
                raise _ProtoError(f"field {number} runs past the end of the message")
            value = data[offset : offset + size]
            offset += size
        else:
            raise _ProtoError(f"field {number} has unsupported wire type {wire_type}")
        out.append((number, value))
    return out


def _varint(value: int) -> bytes:
    value %= _UINT64  # negative int64 values are ten-byte two's complement varints
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _length_delimited(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _text(value: int | bytes, what: str) -> str:
    if not isinstance(value, bytes):
        raise _ProtoError(f"{what} is not length-delimited")
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise _ProtoError(f"{what} is not UTF-8") from None


def decode_any(data: bytes) -> tuple[str, bytes]:
    """A ``google.protobuf.Any``'s ``(type_url, value)``.

    Raises:
        BadRequestError: ``data`` is not a well-formed Any.
    """
    type_url, value = "", b""
    try:
        for number, item in _fields(data):
            if number == 1:
                type_url = _text(item, "Any.type_url")
            elif number == 2:
                if not isinstance(item, bytes):
                    raise _ProtoError("Any.value is not length-delimited")
                value = item
    except _ProtoError as exc:
        raise BadRequestError(f"The Flight command is not a protobuf Any: {exc}.") from None
    if not type_url:
        raise BadRequestError("The Flight command is not a protobuf Any: it has no type_url.")
    return type_url, value


def encode_any(type_url: str, value: bytes) -> bytes:
    """A serialized ``google.protobuf.Any``."""
    return _length_delimited(1, type_url.encode()) + _length_delimited(2, value)


@dataclass(frozen=True)
class IngestCommand:
    """A decoded ``CommandStatementIngest`` (the fields the daemon acts on)."""

    table: str
    if_not_exist: int = 0
    if_exists: int = 0
    schema: str | None = None
    catalog: str | None = None
    temporary: bool = False
    transaction_id: bytes | None = None
    options: dict[str, str] = field(default_factory=dict)


def decode_ingest(data: bytes) -> IngestCommand:
    """Decode a serialized ``CommandStatementIngest`` (unknown fields are skipped).

    Raises:
        BadRequestError: the message is malformed.
    """
    table = ""
    if_not_exist = if_exists = 0
    schema = catalog = None
    temporary = False
    transaction_id = None
    options: dict[str, str] = {}
    try:
        for number, value in _fields(data):
            if number == 1:
                if not isinstance(value, bytes):
                    raise _ProtoError("table_definition_options is not a message")
                for sub, option in _fields(value):
                    if sub in (1, 2) and not isinstance(option, int):
                        raise _ProtoError("a table definition option is not a varint")
                    if sub == 1:
                        if_not_exist = int(option)
                    elif sub == 2:
                        if_exists = int(option)
            elif number == 2:
                table = _text(value, "table")
            elif number == 3:
                schema = _text(value, "schema")
            elif number == 4:
                catalog = _text(value, "catalog")
            elif number == 5:
                temporary = bool(value)
            elif number == 6:
                if not isinstance(value, bytes):
                    raise _ProtoError("transaction_id is not length-delimited")
                transaction_id = value
            elif number == 1000:
                if not isinstance(value, bytes):
                    raise _ProtoError("an options entry is not a message")
                entry = dict(_fields(value))
                options[_text(entry.get(1, b""), "an option key")] = _text(
                    entry.get(2, b""), "an option value"
                )
    except _ProtoError as exc:
        raise BadRequestError(f"Malformed CommandStatementIngest: {exc}.") from None
    return IngestCommand(
        table, if_not_exist, if_exists, schema, catalog, temporary, transaction_id, options
    )


def encode_put_update_result(record_count: int) -> bytes:
    """A serialized ``DoPutUpdateResult{record_count}`` (-1: unknown)."""
    return _varint(1 << 3 | 0) + _varint(record_count) if record_count else b""


def encode_close_session_result() -> bytes:
    """A serialized ``CloseSessionResult{status: CLOSED}``."""
    return b"\x08\x01"


@dataclass(frozen=True)
class BatchIds:
    """A DoPut batch's exactly-once identity (both None: the batch has none)."""

    app_id: str | None = None
    batch_id: int | None = None


def parse_batch_ids(app_metadata: bytes | None) -> BatchIds:
    """The ``{"app_id", "batch_id"}`` of a DoPut batch's ``app_metadata`` (empty: none).

    Raises:
        BadRequestError: not JSON, not an object, unknown keys, one id without the other,
            an empty ``app_id`` or a ``batch_id`` that is not an integer >= 0.
    """
    if not app_metadata:
        return BatchIds()
    try:
        doc = json.loads(app_metadata)
    except (UnicodeDecodeError, ValueError):
        raise BadRequestError(
            'The batch app_metadata is not JSON; send {"app_id": "...", "batch_id": N} or none.'
        ) from None
    if not isinstance(doc, dict) or set(doc) - {"app_id", "batch_id"}:
        raise BadRequestError(
            'The batch app_metadata must be a JSON object with only "app_id" and "batch_id", '
            f"got {_abbrev(doc)}."
        )
    app_id, batch_id = doc.get("app_id"), doc.get("batch_id")
    if app_id is None and batch_id is None:
        return BatchIds()
    if not isinstance(app_id, str) or not app_id:
        raise BadRequestError(
            f'The batch app_metadata "app_id" must be a non-empty string, got {_abbrev(app_id)}.'
        )
    if isinstance(batch_id, bool) or not isinstance(batch_id, int) or batch_id < 0:
        raise BadRequestError(
            f'The batch app_metadata "batch_id" must be an integer >= 0, got {_abbrev(batch_id)}.'
        )
    return BatchIds(app_id, batch_id)


def encode_ack(batch_id: int | None, num_rows: int, table_version: int, skipped: bool) -> bytes:
    """A DoPut batch's PutResult ``app_metadata``: ``{batch_id, rows, table_version, skipped}``."""
    return json.dumps(
        {
            "batch_id": batch_id,
            "rows": num_rows,
            "table_version": table_version,
            "skipped": skipped,
        },
        separators=(",", ":"),
    ).encode()


@dataclass(frozen=True)
class Ticket:
    """A decoded DoGet ticket: table, projection and time range (ns since the epoch)."""

    table: str
    columns: tuple[str, ...] | None = None
    since_ns: int | None = None
    until_ns: int | None = None


_ISO_NUMERIC = re.compile(r"^-?\d+$")


def timestamp_ns(value: object, where: str) -> int:
    """A time bound as nanoseconds since the epoch: an int, or an ISO 8601 string (UTC if naive).

    Raises:
        BadRequestError: anything else.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        if _ISO_NUMERIC.match(value):
            return int(value)
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            moment = None
        if moment is not None:
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
            return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + (
                delta.microseconds * 1000
            )
    raise BadRequestError(
        f"The ticket's {where} must be nanoseconds since the epoch or an ISO 8601 time, "
        f"got {_abbrev(value)}."
    )


def parse_ticket(ticket: bytes) -> Ticket:
    """Decode a DoGet ticket (see the module docstring); the table name is not checked here.

    Raises:
        BadRequestError: not JSON, unknown keys, or a value of the wrong type.
    """
    try:
        doc = json.loads(ticket)
    except (UnicodeDecodeError, ValueError):
        raise BadRequestError(
            'The ticket is not JSON; send {"table": "...", "columns": [...], '
            '"filter": {"since": ..., "until": ...}}.'
        ) from None
    if not isinstance(doc, dict) or set(doc) - {"table", "columns", "filter"}:
        raise BadRequestError(
            'The ticket must be a JSON object with "table" and optionally "columns" and '
            f'"filter", got {_abbrev(doc)}.'
        )
    table = doc.get("table")
    if not isinstance(table, str):
        raise BadRequestError(f'The ticket\'s "table" must be a string, got {_abbrev(table)}.')
    columns = doc.get("columns")
    if columns is not None and (
        not isinstance(columns, list) or not all(isinstance(c, str) for c in columns)
    ):
        raise BadRequestError(
            f'The ticket\'s "columns" must be a list of column names, got {_abbrev(columns)}.'
        )
    if columns is not None and len(set(columns)) != len(columns):
        raise BadRequestError(f'The ticket\'s "columns" name a column twice: {_abbrev(columns)}.')
    bounds = doc.get("filter") or {}
    if not isinstance(bounds, dict) or set(bounds) - {"since", "until"}:
        raise BadRequestError(
            f'The ticket\'s "filter" must be an object with "since" and/or "until", '
            f"got {_abbrev(bounds)}."
        )
    since = bounds.get("since")
    until = bounds.get("until")
    return Ticket(
        table,
        None if columns is None else tuple(columns),
        None if since is None else timestamp_ns(since, 'filter "since"'),
        None if until is None else timestamp_ns(until, 'filter "until"'),
    )


def encode_ticket(
    table: str,
    columns: list[str] | None = None,
    since: int | str | None = None,
    until: int | str | None = None,
) -> bytes:
    """A DoGet ticket (the inverse of :func:`parse_ticket`)."""
    doc: dict[str, object] = {"table": table}
    if columns is not None:
        doc["columns"] = list(columns)
    bounds = {k: v for k, v in (("since", since), ("until", until)) if v is not None}
    if bounds:
        doc["filter"] = bounds
    return json.dumps(doc, separators=(",", ":")).encode()


def _abbrev(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
