"""What both ILP parsers share: value kinds, token grammars, name rules and batch assembly.

A parsed line is a *record*: table, entities (tags then fields, in line order, duplicates
dropped: the first wins) and the designated timestamp in nanoseconds. Parsers hand records (or
whole groups of same-shaped lines) to :func:`assemble` as :class:`Chunk` objects; it returns one
:class:`IlpBatch` per table, its rows in body order.

Bare field value classes (the first rule that matches; the token must then match its grammar,
else the line is refused)::

    last byte 'i'                      INT      -?[0-9]+ then 'i', int64 range
    length >= 2, last byte n | t | m   TS_N / TS_T / TS_M   -?[0-9]+ then the suffix
    first byte t T f F                 BOOL     t T true True TRUE f F false False FALSE
    otherwise                          FLOAT    FLOAT_PATTERN (NaN, [+-]Infinity, decimals)

Designated timestamp: ``[0-9]+`` with an optional unit suffix ``n`` ``t`` ``m`` (QuestDB),
else the request's precision; converted to nanoseconds, refused beyond int64.

Protocol-2 arrays (``name==`` then the value; all integers little-endian)::

    0x0E  elem u8  ndims u8  ndims x u32 shape  prod(shape) x 8-byte elements, row-major
          elem 10 = float64, 6 = int64; ndims 1..32

An array's value is one row: ``ndims`` nested lists (``list<float64>``, ``list<list<int64>>``
...), row ``i`` of a 2-d array is inner list ``i``; a zero in the shape gives empty lists.
Limits (line errors): at most :data:`MAX_ARRAY_ELEMENTS` elements, and at most as many nested
lists (below the top one) as the value has bytes from its type byte on (a shape like
``(1 << 28, 0)`` would make 2**28 empty lists out of 11 bytes).
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from streamwrite.daemon.errors import BadRequestError

__all__ = [
    "FLOAT_PATTERN",
    "INT_PATTERN",
    "MAX_NAME_SIZE",
    "PRECISION_NS",
    "TS_PATTERN",
    "ARRAY_ELEMENTS",
    "ARRAY_ELEMENT_SIZE",
    "MAX_ARRAY_DIMS",
    "MAX_ARRAY_ELEMENTS",
    "ArrayValue",
    "Chunk",
    "ChunkColumn",
    "IlpBatch",
    "IlpColumn",
    "IlpPart",
    "Kind",
    "array_type",
    "array_value_size",
    "assemble",
    "check_column_name",
    "nested_lists",
    "num_nested_lists",
    "check_table_name",
    "classify_bare",
    "precision_factor",
]

FLOAT_PATTERN = r"^(?:[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|NaN|[+-]?Infinity)$"
"""Grammar of a float field value (no suffix); also the RE2 pattern of the vectorised path."""
INT_PATTERN = r"^-?[0-9]+$"
"""Grammar of the digits of an ``i``, ``t``, ``n`` or ``m`` field value."""
TS_PATTERN = r"^[0-9]+$"
"""Grammar of the digits of the designated timestamp (negative timestamps are refused)."""
MAX_NAME_SIZE = 127
"""QuestDB's ``cairo.max.file.name.length``: the longest table or column name, in bytes."""
INT64_MAX = (1 << 63) - 1

PRECISION_NS: dict[str, int] = {
    "n": 1,
    "ns": 1,
    "u": 1_000,
    "us": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
"""Nanoseconds per unit of each ``precision`` query value QuestDB accepts."""
SUFFIX_NS = {ord("n"): 1, ord("t"): 1_000, ord("m"): 1_000_000}
"""Nanoseconds per unit of a designated timestamp's suffix."""

_TABLE_ILLEGAL = frozenset("\n\r?,'\"\\/:)(+*%~\ufeff") | frozenset(map(chr, range(32))) | {"\x7f"}
_COLUMN_ILLEGAL = _TABLE_ILLEGAL | frozenset(".-")
_FLOAT_RE = re.compile(FLOAT_PATTERN.encode())
_INT_RE = re.compile(INT_PATTERN.encode())
_TS_RE = re.compile(TS_PATTERN.encode())
TRUE_TOKENS = (b"t", b"T", b"true", b"True", b"TRUE")
FALSE_TOKENS = (b"f", b"F", b"false", b"False", b"FALSE")


class Kind(enum.IntEnum):
    """The protocol type of a value (what the line says, before any column type applies)."""

    TAG = 1
    FLOAT = 2
    INT = 3
    STRING = 4
    BOOL = 5
    TS_T = 6
    """``123t``: microseconds."""
    TS_N = 7
    """``123n``: nanoseconds."""
    TS_M = 8
    """``123m``: milliseconds."""
    ARRAY = 9
    """A protocol-2 binary array: its Arrow type (element type, dimensions) is the values'."""

    @property
    def protocol_name(self) -> str:
        """Returns QuestDB's name of the protocol type (used in cast error messages)."""
        return _PROTOCOL_NAMES[self]


_PROTOCOL_NAMES = {
    Kind.TAG: "TAG",
    Kind.FLOAT: "FLOAT",
    Kind.INT: "INTEGER",
    Kind.STRING: "STRING",
    Kind.BOOL: "BOOLEAN",
    Kind.TS_T: "TIMESTAMP",
    Kind.TS_N: "TIMESTAMP",
    Kind.TS_M: "TIMESTAMP",
    Kind.ARRAY: "ARRAY",
}
VALUE_TYPES: dict[Kind, pa.DataType] = {
    Kind.TAG: pa.string(),
    Kind.FLOAT: pa.float64(),
    Kind.INT: pa.int64(),
    Kind.STRING: pa.string(),
    Kind.BOOL: pa.bool_(),
    Kind.TS_T: pa.int64(),
    Kind.TS_N: pa.int64(),
    Kind.TS_M: pa.int64(),
}
"""Arrow type of an :class:`IlpPart`'s values (timestamps stay raw integers in their unit);
arrays: :func:`array_type`."""

ARRAY_ELEMENTS: dict[int, tuple[np.dtype[Any], pa.DataType]] = {
    10: (np.dtype("<f8"), pa.float64()),
    6: (np.dtype("<i8"), pa.int64()),
}
"""Array element type byte -> (numpy dtype of the wire bytes, Arrow type); both are 8 bytes."""
ARRAY_ELEMENT_SIZE = 8
MAX_ARRAY_DIMS = 32
"""QuestDB's ``ARRAY_NDIMS_LIMIT``."""
MAX_ARRAY_ELEMENTS = (1 << 31) - 1
"""QuestDB refuses more elements (``ARRAY_TOO_LARGE``); also the reach of int32 list offsets."""


@dataclass(frozen=True)
class ArrayValue:
    """One parsed array: its element type byte, shape and flat row-major elements."""

    elem: int
    shape: tuple[int, ...]
    data: npt.NDArray[Any]


def array_type(elem: int, ndims: int) -> pa.DataType:
    """Returns the Arrow type of an array value: ``ndims`` nested lists of the element type."""
    result = ARRAY_ELEMENTS[elem][1]
    for _ in range(ndims):
        result = pa.list_(result)
    return result


def array_value_size(ndims: int, num_elements: int) -> int:
    """Returns the bytes of an array value from its type byte: type, elem, ndims, shape, data."""
    return 3 + 4 * ndims + ARRAY_ELEMENT_SIZE * num_elements


def num_nested_lists(shape: tuple[int, ...]) -> int:
    """Returns how many lists below the top one an array of ``shape`` makes."""
    return sum(math.prod(shape[:k]) for k in range(1, len(shape)))


def nested_lists(elem: int, shapes: npt.NDArray[np.int64], flat: npt.NDArray[Any]) -> pa.Array:
    """Returns one :func:`array_type` value per row of ``shapes`` (rows x ndims, int64) holding
    ``flat`` (every row's elements, row-major, rows in order), vectorised: the offsets of each
    level repeat that level's dimension once per list of the level above."""
    num_rows, ndims = shapes.shape
    values: pa.Array = pa.array(flat.astype(ARRAY_ELEMENTS[elem][0].newbyteorder("=")))
    counts = [np.ones(num_rows, dtype=np.int64)]  # lists per row at each level
    for k in range(ndims - 1):
        counts.append(counts[-1] * shapes[:, k])
    for k in range(ndims - 1, -1, -1):
        children = np.repeat(shapes[:, k], counts[k])
        offsets = np.zeros(len(children) + 1, dtype=np.int64)
        np.cumsum(children, out=offsets[1:])
        if offsets[-1] > MAX_ARRAY_ELEMENTS:
            raise BadRequestError(
                f"The request holds {int(offsets[-1])} array entries at one level of one column; "
                f"at most {MAX_ARRAY_ELEMENTS} fit: send smaller requests."
            )
        values = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), values)
    return values


def precision_factor(precision: str) -> int:
    """Returns nanoseconds per unit of ``precision``.

    Raises:
        BadRequestError: ``precision`` is not one QuestDB accepts.
    """
    try:
        return PRECISION_NS[precision]
    except KeyError:
        raise BadRequestError(
            f"unsupported precision {precision!r}: use n, ns, u, us, ms, s, m or h."
        ) from None


def classify_bare(token: bytes) -> Kind:
    """Returns the class of a non-empty bare (unquoted, non-binary) field value token."""
    last = token[-1]
    if last == 0x69:  # i
        return Kind.INT
    if len(token) >= 2 and last in (0x6E, 0x74, 0x6D):  # n t m
        return {0x6E: Kind.TS_N, 0x74: Kind.TS_T, 0x6D: Kind.TS_M}[last]
    if token[0] in b"tTfF":
        return Kind.BOOL
    return Kind.FLOAT


def convert_bare(token: bytes, kind: Kind) -> object | None:
    """Returns the value of a bare token of class ``kind``, or None when it is invalid."""
    if kind is Kind.FLOAT:
        return float(token) if _FLOAT_RE.match(token) else None
    if kind is Kind.BOOL:
        if token in TRUE_TOKENS:
            return True
        return False if token in FALSE_TOKENS else None
    digits = token[:-1]
    if not _INT_RE.match(digits):
        return None
    value = int(digits)
    return value if -INT64_MAX - 1 <= value <= INT64_MAX else None


def convert_timestamp(token: bytes, factor_ns: int) -> int | None:
    """Returns a designated timestamp token in ns (``factor_ns`` per unit if unsuffixed) or None."""
    if token and token[-1] in SUFFIX_NS:
        factor_ns = SUFFIX_NS[token[-1]]
        token = token[:-1]
    if not _TS_RE.match(token):
        return None
    value = int(token) * factor_ns
    return value if value <= INT64_MAX else None


def check_table_name(name: str, line: int) -> None:
    """Raises BadRequestError naming ``line`` if ``name`` breaks QuestDB's table name rules."""
    size = len(name.encode())
    if (
        size == 0
        or size > MAX_NAME_SIZE
        or name.startswith(".")
        or name.endswith(".")
        or not _TABLE_ILLEGAL.isdisjoint(name)
    ):
        raise BadRequestError(
            f"invalid table name: {name!r} (1..{MAX_NAME_SIZE} bytes; no leading or trailing '.', "
            "no control characters or any of ? , ' \" \\ / : ) ( + * % ~).",
            line=line,
        )


def check_column_name(table: str, name: str, line: int) -> None:
    """Raises BadRequestError naming ``line`` if ``name`` breaks QuestDB's column name rules."""
    size = len(name.encode())
    if size == 0 or size > MAX_NAME_SIZE or not _COLUMN_ILLEGAL.isdisjoint(name):
        raise BadRequestError(f"table: {table}; invalid column name: {name}", line=line)


@dataclass
class IlpPart:
    """Values of one column and one protocol kind: ``values[j]`` is for batch row ``rows[j]``."""

    kind: Kind
    rows: npt.NDArray[np.int64]
    values: pa.Array


@dataclass
class IlpColumn:
    """Every value of one column name in a batch (parts never share a row)."""

    name: str
    first_line: int
    """The first line (1-based) that has this column: fixes the kind a new column gets."""
    first_position: int
    """Its entity position in that line (tags then fields): with ``first_line``, column order."""
    parts: list[IlpPart] = field(default_factory=list)


@dataclass
class IlpBatch:
    """The rows of one table parsed from one ``feed`` (rows in body order)."""

    table: str
    num_rows: int
    line_numbers: npt.NDArray[np.int64]
    """1-based body line of each row (for error messages)."""
    timestamp_ns: npt.NDArray[np.int64]
    """The designated timestamp of each row in ns (the server time when the line had none)."""
    columns: dict[str, IlpColumn]


@dataclass
class ChunkColumn:
    """One column of a :class:`Chunk`: ``values[j]`` is for chunk row ``rows[j]`` (None: all)."""

    name: str
    position: int
    kind: Kind
    rows: npt.NDArray[np.int64] | None
    values: pa.Array


@dataclass
class Chunk:
    """Rows of one table from one parser path, in any order (assembly sorts by line)."""

    table: str
    line_numbers: npt.NDArray[np.int64]
    timestamp_ns: npt.NDArray[np.int64]
    columns: list[ChunkColumn]


def assemble(chunks: list[Chunk]) -> list[IlpBatch]:
    """Returns one batch per table (in order of each table's first line), rows in line order."""
    by_table: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        if len(chunk.line_numbers):
            by_table.setdefault(chunk.table, []).append(chunk)
    batches = []
    for table, parts in by_table.items():
        lines = np.concatenate([c.line_numbers for c in parts])
        order = np.argsort(lines, kind="stable")
        row_of = np.empty(len(lines), dtype=np.int64)
        row_of[order] = np.arange(len(lines), dtype=np.int64)
        timestamps = np.concatenate([c.timestamp_ns for c in parts])[order]
        columns: dict[str, IlpColumn] = {}
        offset = 0
        for chunk in parts:
            chunk_rows = row_of[offset : offset + len(chunk.line_numbers)]
            for col in chunk.columns:
                rows = chunk_rows if col.rows is None else chunk_rows[col.rows]
                if not len(rows):
                    continue
                first = int(lines[order[int(rows.min())]])
                known = columns.get(col.name)
                if known is None:
                    known = columns[col.name] = IlpColumn(col.name, first, col.position)
                elif (first, col.position) < (known.first_line, known.first_position):
                    known.first_line, known.first_position = first, col.position
                known.parts.append(IlpPart(col.kind, rows, col.values))
            offset += len(chunk.line_numbers)
        ordered = dict(
            sorted(columns.items(), key=lambda item: (item[1].first_line, item[1].first_position))
        )
        batches.append(IlpBatch(table, len(lines), lines[order], timestamps, ordered))
    batches.sort(key=lambda b: int(b.line_numbers[0]))
    return batches
