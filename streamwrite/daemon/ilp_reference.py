"""The per-line ILP parser: the reference the vectorised path is tested against, and its fallback.

Line splitting (one left-to-right scan over the body, the same rules in both parsers)::

    '\\' x           an escape pair: x (any byte) never ends a line nor starts a marker
    '=' '=' 0x10     a protocol-2 binary double: these 3 bytes and the next 8 are payload
    '=' '=' 0x0E     a protocol-2 array: these 3 bytes and the rest of the value are payload
                     (:func:`array_extent`: elem, ndims, shape, prod(shape) x 8 bytes; only
                     the 2 header bytes when elem or ndims is invalid; to the end of the
                     body when the value claims more bytes than the body has)
    CR LF | LF | CR  one line end (lines are numbered from 1; empty lines count)

Quoted strings are not tracked while splitting: a raw CR or LF inside a string ends the line
and the unterminated string refuses it (QuestDB refuses a raw LF too; clients escape both).

Line grammar (``\\`` escapes ``, = space \\ " CR LF`` in names and tag values and ``" \\ CR LF``
in strings; any other backslash is literal)::

    line    = table *("," key "=" tagval) " " field *("," field) [" " timestamp]
    field   = key "=" (bare | '"' string '"' | "=" type payload)
    comment = "#" ...        (skipped, as an empty line)

Binary types: 16 = float64 little-endian (8 bytes); 14 = array (:mod:`.ilp_types`), whose
line errors carry QuestDB's error code names (``ARRAY_INVALID_TYPE``,
``ARRAY_TOO_MANY_DIMENSIONS``, ``ARRAY_TOO_LARGE``); every other type is refused.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from streamwrite.daemon.errors import BadRequestError
from streamwrite.daemon.ilp_types import (
    ARRAY_ELEMENT_SIZE,
    ARRAY_ELEMENTS,
    MAX_ARRAY_DIMS,
    MAX_ARRAY_ELEMENTS,
    VALUE_TYPES,
    ArrayValue,
    Chunk,
    ChunkColumn,
    IlpBatch,
    Kind,
    array_value_size,
    assemble,
    check_column_name,
    check_table_name,
    classify_bare,
    convert_bare,
    convert_timestamp,
    nested_lists,
    num_nested_lists,
    precision_factor,
)

__all__ = [
    "NAME_ESCAPES",
    "array_extent",
    "LineRecord",
    "parse_body_reference",
    "parse_line",
    "records_to_chunks",
    "split_lines",
    "unescape_name",
]

BACKSLASH, EQUALS, COMMA, SPACE, QUOTE, LF, CR = 0x5C, 0x3D, 0x2C, 0x20, 0x22, 0x0A, 0x0D
BINARY_DOUBLE, BINARY_ARRAY = 16, 14
NAME_ESCAPES = frozenset(b',= \\"\r\n')
STRING_ESCAPES = frozenset(b'"\\\r\n')
ARRAY_HEADER_SIZE = 5
"""'==' 0x0E elem ndims: the bytes of an array value before its shape."""


def array_extent(body: bytes, i: int) -> int | None:
    """Returns how many bytes from ``i`` (the first '=' of '==' 0x0E) the array value covers.

    None when its header (elem, ndims, shape) is not all in ``body`` yet; the 5 header bytes
    when elem or ndims is invalid (the line is refused; its length is unknown).
    """
    size = len(body)
    if i + ARRAY_HEADER_SIZE > size:
        return None
    elem, ndims = body[i + 3], body[i + 4]
    if elem not in ARRAY_ELEMENTS or not 1 <= ndims <= MAX_ARRAY_DIMS:
        return ARRAY_HEADER_SIZE
    head_size = ARRAY_HEADER_SIZE + 4 * ndims
    if i + head_size > size:
        return None
    shape = struct.unpack_from(f"<{ndims}I", body, i + ARRAY_HEADER_SIZE)
    num_elements: int = math.prod(shape)
    return head_size + ARRAY_ELEMENT_SIZE * num_elements


def split_lines(body: bytes, final: bool) -> tuple[list[tuple[int, bytes]], int]:
    """Returns ``([(line_number, line_bytes), ...], consumed_size)`` for the complete lines.

    With ``final`` the bytes after the last line end form one more line. Line numbers count
    every line end before the line, plus one.
    """
    lines: list[tuple[int, bytes]] = []
    i = start = 0
    size = len(body)
    number = 1
    while i < size:
        b = body[i]
        if b == BACKSLASH:
            i += 2
        elif (
            b == EQUALS and i + 2 < size and body[i + 1] == EQUALS and body[i + 2] == BINARY_DOUBLE
        ):
            i += 11
        elif b == EQUALS and i + 2 < size and body[i + 1] == EQUALS and body[i + 2] == BINARY_ARRAY:
            extent = array_extent(body, i)
            if extent is None or i + extent > size:  # the value runs to the end of the body
                if not final:
                    return lines, start
                i = size
            else:
                i += extent
        elif b in (LF, CR):
            lines.append((number, body[start:i]))
            number += 1
            i += 2 if b == CR and i + 1 < size and body[i + 1] == LF else 1
            start = i
        else:
            i += 1
    if final and start < size:
        lines.append((number, body[start:]))
        start = size
    return lines, start


@dataclass
class LineRecord:
    """One parsed line: entities are ``(name, kind, value)`` in line order, duplicates dropped."""

    line: int
    table: str
    entities: list[tuple[str, Kind, object]]
    timestamp_ns: int | None


def _decode(raw: bytes, what: str, line: int) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError:
        raise BadRequestError(f"{what} {raw!r} is not valid UTF-8.", line=line) from None


def _read_escaped(line: bytes, i: int, stops: bytes) -> tuple[bytes, int]:
    """Returns the unescaped bytes from ``i`` to the first unescaped ``stops`` byte, and where."""
    out = bytearray()
    size = len(line)
    while i < size:
        b = line[i]
        if b == BACKSLASH and i + 1 < size:
            if line[i + 1] in NAME_ESCAPES:
                out.append(line[i + 1])
                i += 2
                continue
        elif b in stops:
            break
        out.append(b)
        i += 1
    return bytes(out), i


def unescape_name(raw: bytes) -> bytes:
    """Returns a name or tag value token with its escapes resolved (as parse_line reads it)."""
    return _read_escaped(raw, 0, b"")[0]


def _invalid(name: str, raw: bytes, line: int) -> BadRequestError:
    value = raw.decode(errors="replace")
    return BadRequestError(
        f"Could not parse entire line, field value is invalid. Field: {name}; value: {value}",
        line=line,
    )


def _read_array(line: bytes, i: int, name: str, number: int) -> tuple[ArrayValue, int]:
    """Returns the array value at ``line[i]`` (its '=' before 0x0E) and where it ends."""
    size = len(line)
    if i + 4 > size:
        raise _invalid(name, line[i:], number)
    elem, ndims = line[i + 2], line[i + 3]
    if elem not in ARRAY_ELEMENTS:
        raise BadRequestError(
            f"ARRAY_INVALID_TYPE: field {name!r} has array element type {elem}; 10 (float64) "
            "and 6 (int64) are accepted.",
            line=number,
        )
    if not 1 <= ndims <= MAX_ARRAY_DIMS:
        raise BadRequestError(
            f"ARRAY_TOO_MANY_DIMENSIONS: field {name!r} has an array of {ndims} dimensions; "
            f"1 to {MAX_ARRAY_DIMS} are accepted.",
            line=number,
        )
    data_start = i + 4 + 4 * ndims
    if data_start > size:
        raise _invalid(name, line[i:], number)
    shape = struct.unpack_from(f"<{ndims}I", line, i + 4)
    num_elements = math.prod(shape)
    if num_elements > MAX_ARRAY_ELEMENTS:
        raise BadRequestError(
            f"ARRAY_TOO_LARGE: field {name!r} has an array of shape {list(shape)}, "
            f"{num_elements} elements; at most {MAX_ARRAY_ELEMENTS} are accepted.",
            line=number,
        )
    value_size = array_value_size(ndims, num_elements)
    num_lists = num_nested_lists(shape)
    if num_lists > value_size:
        raise BadRequestError(
            f"ARRAY_TOO_LARGE: field {name!r} has an array of shape {list(shape)}, which makes "
            f"{num_lists} nested lists out of a value of {value_size} bytes; at most one per byte "
            "is accepted.",
            line=number,
        )
    end = data_start + ARRAY_ELEMENT_SIZE * num_elements
    if end > size:
        raise BadRequestError(
            f"Could not parse entire line, field value is invalid. Field: {name}; the array of "
            f"shape {list(shape)} needs {end - data_start} bytes of elements and the line has "
            f"{size - data_start}.",
            line=number,
        )
    if end < size and line[end] not in (COMMA, SPACE):
        raise _invalid(name, line[i : end + 1], number)
    data = np.frombuffer(line, ARRAY_ELEMENTS[elem][0], num_elements, offset=data_start)
    return ArrayValue(elem, shape, data), end


def _read_field_value(line: bytes, i: int, name: str, number: int) -> tuple[Kind, object, int]:
    size = len(line)
    if i >= size or line[i] in (COMMA, SPACE):
        raise BadRequestError(
            f"Could not parse entire line. Field value is missing: {name}", line=number
        )
    first = line[i]
    if first == QUOTE:
        out = bytearray()
        j = i + 1
        while j < size:
            b = line[j]
            if b == BACKSLASH and j + 1 < size and line[j + 1] in STRING_ESCAPES:
                out.append(line[j + 1])
                j += 2
                continue
            if b == QUOTE or b in (LF, CR):
                break
            out.append(b)
            j += 1
        if j >= size or line[j] != QUOTE or (j + 1 < size and line[j + 1] not in (COMMA, SPACE)):
            raise _invalid(name, line[i : j + 1], number)
        return (
            Kind.STRING,
            _decode(bytes(out), f"the string value of field {name!r}", number),
            j + 1,
        )
    if first == EQUALS:
        kind_byte = line[i + 1] if i + 1 < size else -1
        if kind_byte == BINARY_ARRAY:
            array, end = _read_array(line, i, name, number)
            return Kind.ARRAY, array, end
        if kind_byte != BINARY_DOUBLE:
            raise BadRequestError(
                f"unsupported binary value type {kind_byte} in field {name!r}: only 16 "
                "(float64) and 14 (array) are accepted.",
                line=number,
            )
        end = i + 10
        if end > size or (end < size and line[end] not in (COMMA, SPACE)):
            raise _invalid(name, line[i:end], number)
        return Kind.FLOAT, struct.unpack("<d", line[i + 2 : end])[0], end
    j = i
    while j < size and line[j] not in (COMMA, SPACE):
        j += 1
    token = line[i:j]
    kind = classify_bare(token)
    value = convert_bare(token, kind)
    if value is None:
        raise _invalid(name, token, number)
    return kind, value, j


def parse_line(line: bytes, number: int, factor_ns: int) -> LineRecord | None:
    """Returns the record of one line (None for an empty or comment line).

    Raises:
        BadRequestError: the line is malformed (``line`` = ``number``).
    """
    if not line or line[0] == 0x23:  # '#'
        return None
    size = len(line)
    raw_table, i = _read_escaped(line, 0, b", =")
    table = _decode(raw_table, "table name", number)
    check_table_name(table, number)
    if i < size and line[i] == EQUALS:
        raise BadRequestError(
            f"invalid table name: {line[: i + 1]!r} ('=' must be escaped).", line=number
        )
    entities: list[tuple[str, Kind, object]] = []
    seen: set[str] = set()

    def add(name: str, kind: Kind, value: object) -> None:
        if name not in seen:
            seen.add(name)
            entities.append((name, kind, value))

    while i < size and line[i] == COMMA:
        raw_key, i = _read_escaped(line, i + 1, b", =")
        key = _decode(raw_key, "tag name", number)
        if i >= size or line[i] != EQUALS or not raw_key:
            raise BadRequestError(
                f"Could not parse entire line. Symbol value is missing: {key}", line=number
            )
        raw_value, i = _read_escaped(line, i + 1, b", =")
        if not raw_value or (i < size and line[i] == EQUALS):
            raise BadRequestError(
                f"Could not parse entire line. Symbol value is missing: {key}", line=number
            )
        check_column_name(table, key, number)
        add(key, Kind.TAG, _decode(raw_value, f"the value of tag {key!r}", number))
    if i >= size or i + 1 >= size:
        raise BadRequestError("No fields were provided", line=number)
    i += 1  # the space
    while True:
        raw_key, i = _read_escaped(line, i, b", =")
        key = _decode(raw_key, "field name", number)
        if i >= size or line[i] != EQUALS or not raw_key:
            raise BadRequestError(
                f"Could not parse entire line. Field value is missing: {key}", line=number
            )
        check_column_name(table, key, number)
        kind, value, i = _read_field_value(line, i + 1, key, number)
        add(key, kind, value)
        if i >= size:
            return LineRecord(number, table, entities, None)
        if line[i] == SPACE:
            break
        i += 1  # the comma
    token = line[i + 1 :]
    timestamp_ns = convert_timestamp(token, factor_ns)
    if timestamp_ns is None:
        shown = token.decode(errors="replace")
        raise BadRequestError(f"Could not parse timestamp: {shown}", line=number)
    return LineRecord(number, table, entities, timestamp_ns)


def records_to_chunks(records: list[LineRecord], now_ns: int) -> list[Chunk]:
    """Returns one chunk per table holding ``records`` (a per-value loop: the slow path only)."""
    by_table: dict[str, list[LineRecord]] = {}
    for record in records:
        by_table.setdefault(record.table, []).append(record)
    chunks = []
    for table, recs in by_table.items():
        # Arrays of one column split by element type and dimensions (each part has one type).
        cols: dict[tuple[str, Kind, int, int], tuple[int, list[int], list[object]]] = {}
        for row, record in enumerate(recs):
            for position, (name, kind, value) in enumerate(record.entities):
                key = (name, kind, 0, 0)
                if isinstance(value, ArrayValue):
                    key = (name, kind, value.elem, len(value.shape))
                entry = cols.setdefault(key, (position, [], []))
                entry[1].append(row)
                entry[2].append(value)
        columns = [
            ChunkColumn(
                name,
                position,
                kind,
                np.asarray(rows, dtype=np.int64),
                _arrays(elem, values)
                if kind is Kind.ARRAY
                else pa.array(values, VALUE_TYPES[kind]),
            )
            for (name, kind, elem, _), (position, rows, values) in cols.items()
        ]
        lines = np.array([r.line for r in recs], dtype=np.int64)
        stamps = np.array(
            [now_ns if r.timestamp_ns is None else r.timestamp_ns for r in recs], dtype=np.int64
        )
        chunks.append(Chunk(table, lines, stamps, columns))
    return chunks


def _arrays(elem: int, values: list[object]) -> pa.Array:
    """Returns the arrays ``values`` (ArrayValue, one element type and ndims) as list values."""
    arrays = [v for v in values if isinstance(v, ArrayValue)]
    shapes = np.array([a.shape for a in arrays], dtype=np.int64)
    return nested_lists(elem, shapes, np.concatenate([a.data for a in arrays]))


def iter_records(lines: list[tuple[int, bytes]], factor_ns: int) -> Iterator[LineRecord]:
    """Yields the record of each non-empty, non-comment line (raises on the first bad one)."""
    for number, raw in lines:
        record = parse_line(raw, number, factor_ns)
        if record is not None:
            yield record


def parse_body_reference(body: bytes, *, precision: str = "n", now_ns: int) -> list[IlpBatch]:
    """Returns the batches of a whole body, parsed line by line in pure Python.

    Raises:
        BadRequestError: the first malformed line, or an unsupported precision.
    """
    factor_ns = precision_factor(precision)
    lines, _ = split_lines(body, final=True)
    return assemble(records_to_chunks(list(iter_records(lines, factor_ns)), now_ns))
