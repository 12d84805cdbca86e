"""Typing parsed ILP batches to an Arrow table, for a new table or into an existing schema.

New columns (QuestDB's defaults, spec 1.8; the kind of a column's first line decides)::

    tag -> dictionary<int32, utf8>   float, binary double -> float64   123i -> int64
    "s" -> utf8   bool -> bool   123t, 123m -> timestamp[us, UTC]   123n -> timestamp[ns, UTC]
    designated timestamp -> ``timestamp_column`` timestamp[timestamp_unit, UTC], NOT NULL, last

Into an existing column (lossless casts, as QuestDB; anything else is a 400 naming the line,
table, column, protocol type and column type)::

    integer -> float64/float32, -> int64/32/16/8 and uint* when in range, -> timestamp (the
    column's unit); float -> float64/float32; tag, string -> utf8/large_utf8/dictionary<*, utf8>;
    bool -> bool; timestamp (t n m) -> any timestamp unit (finer -> coarser rounds toward the past);
    array -> the same nesting of list / large_list over the same element type (float64 for
    DOUBLE[], int64 for LONG[]), nothing else; no scalar goes into an array column

A new array column's type is its first line's (``list<float64>`` for a 1-d DOUBLE array,
``list<list<int64>>`` for a 2-d LONG one ...): a later line with another element type or number
of dimensions is a cast error, as any other kind conflict (``DOUBLE[][]`` to ``DOUBLE[]``).

A field named like ``timestamp_column`` overrides the line's designated timestamp (QuestDB).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from streamwrite.daemon.errors import BadRequestError
from streamwrite.daemon.ilp_types import IlpBatch, IlpPart, Kind
from streamwrite.errors import ConfigError

__all__ = ["to_arrow"]

_TAG_TYPE = pa.dictionary(pa.int32(), pa.utf8())
_NS_PER = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
_KIND_NS = {Kind.TS_T: 1_000, Kind.TS_N: 1, Kind.TS_M: 1_000_000}


def _default_type(kind: Kind) -> pa.DataType:
    return {
        Kind.TAG: _TAG_TYPE,
        Kind.FLOAT: pa.float64(),
        Kind.INT: pa.int64(),
        Kind.STRING: pa.utf8(),
        Kind.BOOL: pa.bool_(),
        Kind.TS_T: pa.timestamp("us", tz="UTC"),
        Kind.TS_M: pa.timestamp("us", tz="UTC"),
        Kind.TS_N: pa.timestamp("ns", tz="UTC"),
    }[kind]


def _type_name(t: pa.DataType) -> str:
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _type_name(t.value_type) + "[]"
    names = {
        pa.float64(): "DOUBLE",
        pa.float32(): "FLOAT",
        pa.int64(): "LONG",
        pa.int32(): "INT",
        pa.int16(): "SHORT",
        pa.int8(): "BYTE",
        pa.bool_(): "BOOLEAN",
        pa.utf8(): "VARCHAR",
        pa.large_utf8(): "VARCHAR",
    }
    if t in names:
        return names[t]
    if pa.types.is_dictionary(t):
        return "SYMBOL"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP" if t.unit != "ns" else "TIMESTAMP_NS"
    return str(t).upper()


def _is_string(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        return bool(pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type))
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _rescale(
    values: npt.NDArray[np.int64], from_ns: int, to_ns: int
) -> npt.NDArray[np.int64] | None:
    """Returns ``values`` converted between units (floor toward the past), None on overflow."""
    if from_ns == to_ns:
        return values
    if from_ns > to_ns:
        factor = from_ns // to_ns
        limit = np.iinfo(np.int64).max // factor
        if len(values) and (np.abs(values).max() > limit):
            return None
        return values * factor
    return values // (to_ns // from_ns)


def _array_fits(values: pa.DataType, target: pa.DataType) -> bool:
    """Whether array values go into ``target``: the same depth of list / large_list over the
    same element type."""
    while pa.types.is_list(values):
        if not (pa.types.is_list(target) or pa.types.is_large_list(target)):
            return False
        values, target = values.value_type, target.value_type
    return bool(values.equals(target))


def _cast_part(
    part: IlpPart, target: pa.DataType, where: str, lines: npt.NDArray[np.int64]
) -> pa.Array:
    """Returns the part's values as ``target`` (storage type for dictionaries: utf8)."""
    kind = part.kind
    first_line = int(lines[part.rows].min())
    values = part.values
    protocol = _type_name(values.type) if kind is Kind.ARRAY else kind.protocol_name

    def refuse(line: int = first_line) -> BadRequestError:
        return BadRequestError(
            f"{where}; cast error from protocol type: {protocol} to column type: "
            f"{_type_name(target)}",
            line=line,
        )

    if kind is Kind.ARRAY or pa.types.is_nested(target):
        if kind is Kind.ARRAY and _array_fits(values.type, target):
            return values if values.type.equals(target) else values.cast(target)
        raise refuse()
    if _is_string(target):
        if kind not in (Kind.TAG, Kind.STRING):
            raise refuse()
        return values
    if kind is Kind.TAG:
        raise refuse()
    if pa.types.is_floating(target):
        if kind in (Kind.FLOAT, Kind.INT):
            return pc.cast(values, target, safe=False)
        raise refuse()
    if pa.types.is_integer(target):
        if kind is not Kind.INT:
            raise refuse()
        info = np.iinfo(target.to_pandas_dtype())
        ints = values.to_numpy(zero_copy_only=False)
        bad = (ints < info.min) | (ints > info.max)
        if bad.any():
            raise refuse(int(lines[part.rows[np.flatnonzero(bad)]].min()))
        return pa.array(ints.astype(info.dtype), target)
    if pa.types.is_boolean(target):
        if kind is Kind.BOOL:
            return values
        raise refuse()
    if pa.types.is_timestamp(target):
        to_ns = _NS_PER[target.unit]
        if kind in _KIND_NS:
            from_ns = _KIND_NS[kind]
        elif kind is Kind.INT:
            from_ns = to_ns
        else:
            raise refuse()
        scaled = _rescale(values.to_numpy(zero_copy_only=False).astype(np.int64), from_ns, to_ns)
        if scaled is None:
            raise refuse()
        return pa.array(scaled, pa.int64()).cast(target)
    raise refuse()


def _scatter(
    arrays: list[pa.Array], rows: list[npt.NDArray[np.int64]], num_rows: int, target: pa.DataType
) -> pa.Array:
    storage = pa.utf8() if pa.types.is_dictionary(target) else target
    if not arrays:
        return pa.nulls(num_rows, target)
    values = pa.concat_arrays([a.cast(storage) for a in arrays])
    all_rows = np.concatenate(rows)
    index = np.full(num_rows, -1, dtype=np.int64)
    index[all_rows] = np.arange(len(all_rows), dtype=np.int64)
    taken = values.take(pa.array(index, mask=index < 0))
    if pa.types.is_dictionary(target):
        encoded = pc.dictionary_encode(taken)
        return encoded.cast(target) if encoded.type != target else encoded
    return taken


def to_arrow(
    batches: list[IlpBatch],
    schema: pa.Schema | None,
    *,
    timestamp_column: str = "timestamp",
    timestamp_unit: str = "us",
) -> tuple[pa.Table, list[pa.Field]]:
    """Returns the rows of ``batches`` (one table) as an Arrow table, and the fields it adds.

    With ``schema`` None the table's schema is inferred (first-seen column order, the designated
    timestamp last, NOT NULL) and the second value is empty; else the result has ``schema``'s
    columns in order, then new nullable columns, which the second value lists.

    Raises:
        BadRequestError: a value cannot go into its column's type (names the line, table,
            column and both types), or a NOT NULL column of ``schema`` is missing.
        ConfigError: batches of several tables, or a bad ``timestamp_unit``.
    """
    if timestamp_unit not in _NS_PER:
        raise ConfigError(f"timestamp_unit must be one of s, ms, us, ns, not {timestamp_unit!r}.")
    tables = {b.table for b in batches}
    if len(tables) > 1:
        raise ConfigError(f"to_arrow takes the batches of one table, not of {sorted(tables)}.")
    table = tables.pop() if tables else ""
    offsets = np.cumsum([0] + [b.num_rows for b in batches])
    num_rows = int(offsets[-1])
    lines = np.concatenate([b.line_numbers for b in batches] or [np.zeros(0, np.int64)])
    stamps_ns = np.concatenate([b.timestamp_ns for b in batches] or [np.zeros(0, np.int64)])
    # Gather each column's parts with global rows, in first-seen order.
    order: dict[str, tuple[int, int]] = {}
    parts: dict[str, list[IlpPart]] = {}
    for batch, offset in zip(batches, offsets[:-1].tolist(), strict=True):
        for name, col in batch.columns.items():
            key = (col.first_line, col.first_position)
            order[name] = min(order.get(name, key), key)
            parts.setdefault(name, []).extend(
                IlpPart(p.kind, p.rows + offset, p.values) for p in col.parts
            )
    names = sorted(order, key=lambda n: order[n])
    existing = {f.name: f for f in schema} if schema is not None else {}
    ts_field = existing.get(timestamp_column)
    if ts_field is not None and not pa.types.is_timestamp(ts_field.type):
        raise ConfigError(f"column {timestamp_column!r} of table {table!r} is not a timestamp.")
    ts_type = ts_field.type if ts_field is not None else pa.timestamp(timestamp_unit, tz="UTC")

    def build(name: str, target: pa.DataType) -> pa.Array:
        where = f"table: {table}, column: {name}"
        # In line order: the error names the first line that does not fit.
        col_parts = sorted(parts.get(name, []), key=lambda p: int(lines[p.rows].min()))
        arrays = [_cast_part(p, target, where, lines) for p in col_parts]
        return _scatter(arrays, [p.rows for p in col_parts], num_rows, target)

    def first_type(name: str) -> pa.DataType:
        first = min(parts[name], key=lambda p: int(lines[p.rows].min()))
        return first.values.type if first.kind is Kind.ARRAY else _default_type(first.kind)

    designated_ns = _rescale(stamps_ns, 1, _NS_PER[ts_type.unit])
    designated = pa.array(designated_ns, pa.int64()).cast(ts_type)
    if timestamp_column in parts:
        override = build(timestamp_column, ts_type)
        designated = pc.if_else(override.is_valid(), override, designated)
    columns: dict[str, pa.Array] = {}
    fields: list[pa.Field] = []
    new_fields: list[pa.Field] = []
    if schema is not None:
        for f in schema:
            if f.name == timestamp_column:
                columns[f.name] = designated
            elif f.name in parts:
                columns[f.name] = build(f.name, f.type)
            elif not f.nullable and num_rows:
                raise BadRequestError(
                    f"table: {table}, column: {f.name} is NOT NULL and missing from the request.",
                    line=int(lines.min()),
                )
            else:
                columns[f.name] = pa.nulls(num_rows, f.type)
            fields.append(f)
    for name in names:
        if name in existing or name == timestamp_column:
            continue
        target = first_type(name)
        columns[name] = build(name, target)
        field = pa.field(name, target, nullable=True)
        fields.append(field)
        if schema is not None:
            new_fields.append(field)
    if timestamp_column not in columns:
        columns[timestamp_column] = designated
        field = pa.field(timestamp_column, ts_type, nullable=schema is not None)
        fields.append(field)
        if schema is not None:
            new_fields.append(field)
    result = pa.table([columns[f.name] for f in fields], schema=pa.schema(fields))
    return result, new_fields
