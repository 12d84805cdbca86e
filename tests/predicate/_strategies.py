"""Hypothesis strategies of the predicate tests: typed columns, containers, literals, filters."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import zoneinfo
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pyarrow as pa

from streamwrite.predicate import (
    And,
    Compare,
    Const,
    Expr,
    IsIn,
    IsNan,
    IsNull,
    Not,
    Or,
    StartsWith,
)

NAN = float("nan")
TIMESTAMP_TYPES = [
    pa.timestamp(unit, tz) for unit in ("s", "ms", "us", "ns") for tz in (None, "UTC", "Asia/Tokyo")
]
INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32(), pa.uint64()]
FAMILIES = [
    [pa.float64(), pa.float32()],
    INT_TYPES,
    [pa.string(), pa.large_string(), pa.binary()],
    TIMESTAMP_TYPES,
    [pa.decimal128(9, 2)],
    [pa.date32()],
    [pa.bool_()],
    [pa.dictionary(pa.int32(), pa.string())],
]
TYPES = [t for family in FAMILIES for t in family]
column_types = st.sampled_from(FAMILIES).flatmap(st.sampled_from)
"""A column type: each family (floats, ints, strings, timestamps, ...) equally likely."""

_FLOATS = st.sampled_from([0.0, -0.0, 1.0, -1.5, 2.5, 3.0, 1e10, math.inf, -math.inf, NAN, 0.1])
_TEXT = st.sampled_from(["", "a", "ab", "abc", "abd", "b", "\u00e9", "\U0010ffff", "a\U0010ffff"])
_LONG_TEXT = st.builds(lambda s, n: s * n, _TEXT, st.integers(1, 12))
_EPOCH = dt.datetime(2024, 3, 10, tzinfo=dt.UTC)
_NS_PER_UNIT = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def _int_range(t: pa.DataType) -> tuple[int, int]:
    info = np.iinfo(t.to_pandas_dtype())
    return int(info.min), int(info.max)


def python_values(t: pa.DataType) -> st.SearchStrategy[Any]:
    """Column values of type ``t`` (as Python objects; timestamps as int64 units)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_floating(t):
        return st.one_of(_FLOATS, st.floats(-5, 5, width=32))
    if pa.types.is_integer(t):
        lo, hi = _int_range(t)
        return st.one_of(st.integers(max(lo, -4), min(hi, 8)), st.sampled_from([lo, hi]))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return st.one_of(_TEXT, _LONG_TEXT)
    if pa.types.is_binary(t):
        return st.one_of(_TEXT.map(str.encode), st.sampled_from([b"\xff", b"a\xff", b"\xff\xff"]))
    if pa.types.is_timestamp(t):
        return st.integers(-3, 3).map(lambda k: k * 3_600 * 10**9 // _NS_PER_UNIT[t.unit])
    if pa.types.is_decimal(t):
        return st.integers(-300, 300).map(lambda k: decimal.Decimal(k).scaleb(-2))
    if pa.types.is_date(t):
        return st.integers(-2, 2).map(lambda k: dt.date(2024, 3, 10) + dt.timedelta(days=k))
    if pa.types.is_boolean(t):
        return st.booleans()
    raise AssertionError(t)


def make_array(values: list[Any], t: pa.DataType) -> pa.Array:
    """``values`` (None = null) as an Arrow array of ``t``."""
    if pa.types.is_timestamp(t):
        return pa.array(values, pa.int64()).cast(t)
    if pa.types.is_dictionary(t):
        return pa.array(values, t.value_type).dictionary_encode()
    return pa.array(values, t)


@st.composite
def chunks(draw: st.DrawFn, t: pa.DataType) -> list[list[Any]]:
    """Values cut into containers: some all null, some empty of non-nulls, NaN-only ones."""
    value = python_values(t)
    num_chunks = draw(st.integers(1, 5))
    result = []
    for _ in range(num_chunks):
        kind = draw(st.sampled_from(["mixed", "mixed", "mixed", "null", "same"]))
        size = draw(st.integers(1, 6))
        if kind == "null":
            result.append([None] * size)
        elif kind == "same":
            result.append([draw(value)] * size)
        else:
            result.append(draw(st.lists(st.one_of(st.none(), value), min_size=1, max_size=size)))
    return result


def literal(draw: st.DrawFn, t: pa.DataType, data_values: list[Any]) -> Any:
    """A literal for a ``t`` column: often one of the data's, sometimes out of range or typed."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    present = [v for v in data_values if v is not None]
    base = draw(st.sampled_from(present)) if present and draw(st.booleans()) else None
    if base is None:
        base = draw(python_values(t))
    if pa.types.is_timestamp(t):
        instant = _EPOCH + dt.timedelta(microseconds=base * _NS_PER_UNIT[t.unit] // 1000)
        shift = draw(st.sampled_from([0, 0, 1, -1, 999]))
        instant += dt.timedelta(microseconds=shift)
        if t.tz is None:
            return (
                instant.replace(tzinfo=None)
                if draw(st.booleans())
                else pa.scalar(instant.replace(tzinfo=None), pa.timestamp("ns"))
            )
        zone = draw(st.sampled_from([dt.UTC, zoneinfo.ZoneInfo("America/New_York")]))
        return draw(
            st.sampled_from(
                [instant.astimezone(zone), pa.scalar(instant, pa.timestamp("ns", "UTC"))]
            )
        )
    if pa.types.is_integer(t):
        lo, hi = _int_range(t)
        return draw(st.sampled_from([base, base, base + 0.5, float(base), lo - 1, hi + 1, NAN]))
    if pa.types.is_decimal(t):
        return draw(
            st.sampled_from([base, base, base + decimal.Decimal("0.005"), float(base), 10**9])
        )
    if pa.types.is_floating(t):
        return draw(st.sampled_from([base, base, 0.1, NAN, -0.0, 1e300]))
    return base


@st.composite
def filters(draw: st.DrawFn, table: pa.Table, depth: int = 2) -> Expr:
    """A random filter over ``table``'s columns (unbound literals)."""
    names = table.column_names
    name = draw(st.sampled_from([*names, "x", "x"] if "x" in names else names))
    t = table.schema.field(name).type
    values = (
        table.column(name).to_pylist()
        if not pa.types.is_timestamp(t)
        else (table.column(name).cast(pa.int64()).to_pylist())
    )
    vt = t.value_type if pa.types.is_dictionary(t) else t
    kinds = ["cmp", "cmp", "cmp", "in", "null", "const"]
    if pa.types.is_floating(vt):
        kinds.append("nan")
    if pa.types.is_string(vt) or pa.types.is_large_string(vt) or pa.types.is_binary(vt):
        kinds += ["prefix", "prefix"]
    if depth > 0:
        kinds += ["and", "or", "not", "not"]
    kind = draw(st.sampled_from(kinds))
    if kind == "cmp":
        op = draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]))
        if pa.types.is_boolean(vt):
            return Compare(name, op, draw(st.booleans()))
        return Compare(name, op, literal(draw, t, values))
    if kind == "in":
        size = draw(st.integers(0, 4))
        if pa.types.is_boolean(vt):
            lits = [draw(st.booleans()) for _ in range(size)]
        else:
            lits = [literal(draw, t, values) for _ in range(size)]
        if draw(st.booleans()):
            lits.append(None)
        return IsIn(name, tuple(lits))
    if kind == "null":
        return IsNull(name)
    if kind == "nan":
        return IsNan(name)
    if kind == "const":
        return Const(draw(st.booleans()))
    if kind == "prefix":
        present = [v for v in values if v]
        if present and draw(st.booleans()):
            text = draw(st.sampled_from(present))
            prefix = text[: draw(st.integers(1, max(1, min(len(text), 4))))]
        else:
            prefix = draw(st.sampled_from(["", "a", "ab", "abd", "b", "\u00e9", "\U0010ffff"]))
        if isinstance(prefix, str) and pa.types.is_binary(vt):
            prefix = prefix.encode()
        return StartsWith(name, prefix)
    if kind == "not":
        return Not(draw(filters(table, depth - 1)))
    children = tuple(draw(filters(table, depth - 1)) for _ in range(draw(st.integers(1, 3))))
    kleene = draw(st.sampled_from([True, True, False]))
    return And(children, kleene) if kind == "and" else Or(children, kleene)


def is_timestamp_literal_zoned(value: Any) -> bool:
    """True for an aware datetime or a zoned timestamp scalar."""
    if isinstance(value, pa.TimestampScalar):
        return value.type.tz is not None
    return isinstance(value, dt.datetime) and value.tzinfo is not None


def true_rows(table: pa.Table, expr: Any) -> list[int]:
    """The ``row`` ids of ``table`` rows where the Arrow expression ``expr`` is TRUE."""
    return table.filter(expr).column("row").to_pylist()
