"""Binding an expression to a schema: columns checked, literals made ``pyarrow.Scalar`` values of
the column's value type (a dictionary column's value type), by value.

Rules (each keeps the three-valued truth of the comparison exactly; a null row stays NULL):

- integers, floats, decimals, timestamps: the literal is converted exactly when the type holds
  it (``int8 == 3``; ``decimal(9,2) == 1.5``; a float literal meets a decimal by its shortest
  repr, ``0.1`` is ``0.10``; a zoned or naive literal meets a zoned column as a UTC instant, a
  naive literal a naive column as wall-clock; an ISO string meets a timestamp or date column).
  Otherwise, with ``lo``/``hi`` the nearest values of the type below/above the literal::

      x == v -> never  (x > TYPE_MAX)          x != v -> always (x <= TYPE_MAX [OR isnan(x)])
      x < v, x <= v -> x <= lo (never if none)  x > v, x >= v -> x >= hi (never if none)

  so ``int8 < 1000`` is TRUE for every non-null row and ``int8 == 1000`` never is. A NaN literal
  against an integer or decimal column compares like Arrow's cast to double: ``!=`` always,
  every other operator never.
- ``IsIn`` drops values the type cannot hold (they equal no row) and keeps null and NaN.
- a zoned literal against a naive (wall-clock) column is a ConfigError: the instant has no
  wall-clock value without a zone, and guessing one is how engines return wrong rows.
- strings meet string columns, bytes binary columns (``str`` is encoded as UTF-8), bools bool.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

import numpy as np
import pyarrow as pa

from streamwrite.errors import ConfigError
from streamwrite.predicate.expr import (
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
from streamwrite.predicate.fields import filter_field
from streamwrite.predicate.parse import parse_filters

__all__ = ["bind", "coerce_compare", "value_type"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_NS_PER_UNIT = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


class _InexactError(Exception):
    """The literal lies strictly between ``lo`` and ``hi`` (None: no such value of the type)."""

    def __init__(self, lo: object, hi: object) -> None:
        super().__init__(lo, hi)
        self.lo, self.hi = lo, hi


def value_type(arrow_type: pa.DataType) -> pa.DataType:
    """The type a column's values compare as (a dictionary's value type, else the type)."""
    return arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type


def bind(expr: object, schema: pa.Schema) -> Expr:
    """``expr`` (anything :func:`parse_filters` takes) checked against ``schema``, literals coerced.

    Returns:
        The bound :data:`Expr`: every literal a ``pyarrow.Scalar`` of its column's value type, a
        comparison no value of the type can satisfy rewritten as the module docstring says.

    A column is a top-level column or a struct field by its dotted path (``s.a``; rules in
    :mod:`streamwrite.predicate.fields`).

    Raises:
        SchemaError: a column is not in ``schema`` (the message lists the schema's columns).
        ConfigError: a literal cannot be compared with its column (a zoned literal against a
            naive timestamp, a string against a number, ...), a column inside a list or map
            or a term other than is_null on a struct, list or map, or the filter is not
            supported.
    """
    return _bind(parse_filters(expr), schema)


def _bind(expr: Expr, schema: pa.Schema) -> Expr:
    if isinstance(expr, And):
        return And(tuple(_bind(c, schema) for c in expr.children), expr.kleene)
    if isinstance(expr, Or):
        pair = expr.children
        if (
            len(pair) == 2
            and isinstance(pair[0], IsNull)
            and pair[1] == IsNan(pair[0].column)
            and not pa.types.is_floating(
                value_type(filter_field(schema, pair[0].column, "is_null").type)
            )
        ):
            return IsNull(pair[0].column)  # is_null(nan_is_null=True) of a non-float column
        return Or(tuple(_bind(c, schema) for c in pair), expr.kleene)
    if isinstance(expr, Not):
        return Not(_bind(expr.child, schema))
    if isinstance(expr, Const):
        return expr
    term = {
        IsNull: "is_null",
        IsNan: "is_nan",
        IsIn: "IN",
        StartsWith: "starts_with",
    }.get(type(expr), "a comparison")
    vtype = value_type(filter_field(schema, expr.column, term).type)
    if isinstance(expr, Compare):
        return coerce_compare(expr.column, expr.op, expr.value, vtype)
    if isinstance(expr, IsIn):
        values = []
        for v in expr.values:
            try:
                values.append(_exact(v, vtype, expr.column))
            except _InexactError:
                continue
        return IsIn(expr.column, tuple(dict.fromkeys(values, None)))
    if isinstance(expr, StartsWith):
        return StartsWith(expr.column, _prefix(expr.prefix, vtype, expr.column))
    if isinstance(expr, IsNan) and not (
        pa.types.is_floating(vtype) or pa.types.is_integer(vtype) or pa.types.is_decimal(vtype)
    ):
        raise ConfigError(f"isnan({expr.column}) needs a numeric column, not {vtype}.")
    return expr


def _type_max(vtype: pa.DataType) -> pa.Scalar:
    if pa.types.is_floating(vtype):
        return pa.scalar(np.inf, pa.float64()).cast(vtype)
    if pa.types.is_integer(vtype):
        return pa.scalar(int(np.iinfo(vtype.to_pandas_dtype()).max), vtype)
    if pa.types.is_decimal(vtype):
        top = decimal.Decimal(10) ** (vtype.precision - vtype.scale) - decimal.Decimal(1).scaleb(
            -vtype.scale
        )
        return pa.scalar(top, vtype)
    if pa.types.is_timestamp(vtype) or pa.types.is_duration(vtype):
        return pa.scalar(2**63 - 1, pa.int64()).cast(vtype)
    if pa.types.is_date32(vtype):
        return pa.scalar(2**31 - 1, pa.int32()).cast(vtype)
    if pa.types.is_date64(vtype):
        return pa.scalar(2**63 - 1, pa.int64()).cast(vtype)
    raise ConfigError(f"No maximum is known for type {vtype}.")


def _never(column: str, vtype: pa.DataType) -> Expr:
    return Compare(column, ">", _type_max(vtype))


def _always(column: str, vtype: pa.DataType) -> Expr:
    below = Compare(column, "<=", _type_max(vtype))
    return Or((below, IsNan(column))) if pa.types.is_floating(vtype) else below


def coerce_compare(column: str, op: str, value: object, vtype: pa.DataType) -> Expr:
    """``column op value`` with ``value`` made a scalar of ``vtype`` (module docstring rules).

    Returns:
        A :class:`Compare` with a ``pyarrow.Scalar`` literal of ``vtype``, or the rewrite of a
        literal the type cannot hold.

    Raises:
        ConfigError: ``value`` cannot be compared with a ``vtype`` column.
    """
    if _is_nan(value) and not pa.types.is_floating(vtype):
        if not (pa.types.is_integer(vtype) or pa.types.is_decimal(vtype)):
            raise ConfigError(f"NaN cannot be compared with column {column!r} of type {vtype}.")
        return _always(column, vtype) if op == "!=" else _never(column, vtype)
    try:
        return Compare(column, op, _exact(value, vtype, column))
    except _InexactError as gap:
        if op == "==":
            return _never(column, vtype)
        if op == "!=":
            return _always(column, vtype)
        if op in ("<", "<="):
            return _never(column, vtype) if gap.lo is None else Compare(column, "<=", gap.lo)
        return _never(column, vtype) if gap.hi is None else Compare(column, ">=", gap.hi)


def _is_nan(value: object) -> bool:
    if isinstance(value, pa.Scalar):
        if not (value.is_valid and pa.types.is_floating(value.type)):
            return False
        value = value.as_py()
    return isinstance(value, float) and math.isnan(value)


def _bad(value: object, vtype: pa.DataType, column: str, why: str = "") -> ConfigError:
    return ConfigError(
        f"The filter literal {value!r} cannot be compared with column {column!r} of type "
        f"{vtype}{': ' + why if why else ''}."
    )


def _exact(value: object, vtype: pa.DataType, column: str) -> pa.Scalar:
    """``value`` as a scalar of ``vtype``, exactly; raises _InexactError with the neighbours."""
    if isinstance(value, pa.Scalar):
        scalar: Any = value
        if not scalar.is_valid:
            return pa.scalar(None, vtype)
        if scalar.type == vtype:
            return scalar
        if pa.types.is_timestamp(scalar.type) and pa.types.is_timestamp(vtype):
            return _timestamp(scalar, vtype, column)
        if pa.types.is_dictionary(scalar.type):
            scalar = scalar.value
        value = scalar.as_py()
    if value is None:
        return pa.scalar(None, vtype)
    if isinstance(value, np.generic):
        value = value.item()
    if pa.types.is_integer(vtype):
        return _integer(value, vtype, column)
    if pa.types.is_floating(vtype):
        return _floating(value, vtype, column)
    if pa.types.is_decimal(vtype):
        return _decimal(value, vtype, column)
    if pa.types.is_timestamp(vtype):
        return _timestamp(value, vtype, column)
    if pa.types.is_date(vtype):
        if isinstance(value, str):
            value = _iso(value, dt.date.fromisoformat, vtype, column)
        if isinstance(value, dt.datetime) or not isinstance(value, dt.date):
            raise _bad(value, vtype, column, "a date column takes a datetime.date literal")
        return pa.scalar(value, vtype)
    if pa.types.is_string(vtype) or pa.types.is_large_string(vtype):
        if isinstance(value, bytes):
            try:
                value = value.decode()
            except UnicodeDecodeError as exc:
                raise _bad(value, vtype, column, "bytes that are not UTF-8") from exc
        if not isinstance(value, str):
            raise _bad(value, vtype, column)
        return pa.scalar(value, vtype)
    if pa.types.is_binary(vtype) or pa.types.is_large_binary(vtype):
        if isinstance(value, str):
            value = value.encode()
        if not isinstance(value, bytes):
            raise _bad(value, vtype, column)
        return pa.scalar(value, vtype)
    if pa.types.is_boolean(vtype):
        if not isinstance(value, bool):
            raise _bad(value, vtype, column)
        return pa.scalar(value, vtype)
    try:
        scalar = pa.scalar(value, vtype)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
        raise _bad(value, vtype, column) from exc
    if scalar.as_py() != value:
        raise _bad(value, vtype, column, "it is not exactly representable")
    return scalar


def _number(value: object, vtype: pa.DataType, column: str) -> int | float | decimal.Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | decimal.Decimal):
        raise _bad(value, vtype, column, "a number is needed")
    return value


def _integer(value: object, vtype: pa.DataType, column: str) -> pa.Scalar:
    number = _number(value, vtype, column)
    info = np.iinfo(vtype.to_pandas_dtype())
    low, high = int(info.min), int(info.max)
    if isinstance(number, float) and math.isnan(number):
        raise _InexactError(None, None)  # equals no integer (IsIn drops it)
    if isinstance(number, float) and math.isinf(number):
        raise _InexactError(
            pa.scalar(high, vtype) if number > 0 else None,
            pa.scalar(low, vtype) if number < 0 else None,
        )
    floor, ceil = math.floor(number), math.ceil(number)
    if floor == ceil and low <= floor <= high:
        return pa.scalar(floor, vtype)
    lo = None if floor < low else pa.scalar(min(floor, high), vtype)
    hi = None if ceil > high else pa.scalar(max(ceil, low), vtype)
    raise _InexactError(lo, hi)


def _floating(value: object, vtype: pa.DataType, column: str) -> pa.Scalar:
    number = _number(value, vtype, column)
    dtype: Any = {16: np.float16, 32: np.float32, 64: np.float64}[vtype.bit_width]
    with np.errstate(over="ignore"):
        rounded = dtype(float(number))
    as_float = float(rounded)
    exact = (
        as_float == number
        if not isinstance(number, decimal.Decimal)
        else (math.isfinite(as_float) and decimal.Decimal(as_float) == number)
    )
    if exact or math.isnan(as_float):
        return pa.scalar(rounded, vtype)
    above = (
        as_float > number
        if not isinstance(number, decimal.Decimal)
        else (decimal.Decimal(as_float) > number if math.isfinite(as_float) else as_float > 0)
    )
    other = np.nextafter(rounded, dtype(-np.inf) if above else dtype(np.inf))
    lo, hi = (other, rounded) if above else (rounded, other)
    raise _InexactError(pa.scalar(lo, vtype), pa.scalar(hi, vtype))


def _decimal(value: object, vtype: pa.DataType, column: str) -> pa.Scalar:
    number = _number(value, vtype, column)
    if isinstance(number, float):
        if math.isnan(number):
            raise _InexactError(None, None)
        if not math.isfinite(number):
            raise _InexactError(
                _type_max(vtype) if number > 0 else None,
                None if number > 0 else _neg(_type_max(vtype)),
            )
        number = decimal.Decimal(repr(number))
    exact = decimal.Decimal(number)
    quantum = decimal.Decimal(1).scaleb(-vtype.scale)
    context = decimal.Context(prec=200)
    floor = exact.quantize(quantum, rounding=decimal.ROUND_FLOOR, context=context)
    ceil = exact.quantize(quantum, rounding=decimal.ROUND_CEILING, context=context)
    top = decimal.Decimal(_type_max(vtype).as_py())
    if floor == ceil == exact and -top <= exact <= top:
        return pa.scalar(exact, vtype)
    lo = None if floor < -top else pa.scalar(min(floor, top), vtype)
    hi = None if ceil > top else pa.scalar(max(ceil, -top), vtype)
    raise _InexactError(lo, hi)


def _neg(scalar: pa.Scalar) -> pa.Scalar:
    return pa.scalar(-scalar.as_py(), scalar.type)


def _iso(text: str, parse: Any, vtype: pa.DataType, column: str) -> Any:
    try:
        return parse(text)
    except ValueError as exc:
        raise _bad(text, vtype, column, "not an ISO 8601 value") from exc


def _timestamp(value: object, vtype: pa.DataType, column: str) -> pa.Scalar:
    """A UTC instant (zoned column) or wall-clock value (naive column) at the column's unit."""
    if isinstance(value, str):
        value = _iso(value, dt.datetime.fromisoformat, vtype, column)
    if isinstance(value, pa.TimestampScalar):
        zoned, nanos = value.type.tz is not None, int(value.value) * _NS_PER_UNIT[value.type.unit]
    elif isinstance(value, dt.datetime):
        zoned = value.tzinfo is not None and value.utcoffset() is not None
        base = value if zoned else value.replace(tzinfo=dt.UTC)
        delta = base - _EPOCH
        micros = (delta.days * 86_400 + delta.seconds) * 10**6 + delta.microseconds
        nanos = micros * 1000 + int(getattr(value, "nanosecond", 0))
    elif isinstance(value, dt.date):
        zoned, nanos = False, (value - dt.date(1970, 1, 1)).days * 86_400 * 10**9
    else:
        raise _bad(value, vtype, column, "a timestamp column takes a datetime literal")
    if zoned and vtype.tz is None:
        raise _bad(
            value,
            vtype,
            column,
            "a zoned literal is an instant, the column holds wall-clock times without a zone; "
            "compare with a naive datetime (the wall-clock value) instead",
        )
    factor = _NS_PER_UNIT[vtype.unit]
    floor, ceil = nanos // factor, -(-nanos // factor)
    low, high = -(2**63), 2**63 - 1

    def make(units: int) -> pa.Scalar:
        return pa.scalar(units, pa.int64()).cast(vtype)

    if floor == ceil and low <= floor <= high:
        return make(floor)
    lo = None if floor < low else make(min(floor, high))
    hi = None if ceil > high else make(max(ceil, low))
    raise _InexactError(lo, hi)


def _prefix(prefix: object, vtype: pa.DataType, column: str) -> str | bytes:
    if pa.types.is_string(vtype) or pa.types.is_large_string(vtype):
        if isinstance(prefix, bytes):
            try:
                return prefix.decode()
            except UnicodeDecodeError as exc:
                raise _bad(prefix, vtype, column, "a prefix that is not UTF-8") from exc
        if isinstance(prefix, str):
            return prefix
    if pa.types.is_binary(vtype) or pa.types.is_large_binary(vtype):
        if isinstance(prefix, str):
            return prefix.encode()
        if isinstance(prefix, bytes):
            return prefix
    raise _bad(prefix, vtype, column, "starts_with needs a string or binary column")
