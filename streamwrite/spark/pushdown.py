"""Spark's pushed filters (``pyspark.sql.datasource.Filter``) to one ``pyarrow.compute``
filter in Spark's semantics, for the ``streamwrite`` Python data source.

Spark hands a data source the top-level AND conjuncts it can express (``EqualTo``,
``EqualNullSafe``, ``GreaterThan``, ``GreaterThanOrEqual``, ``LessThan``, ``LessThanOrEqual``,
``In``, ``IsNull``, ``IsNotNull``, ``Not``, ``StringStartsWith``, ``StringEndsWith``,
``StringContains``); the source returns those Spark must still evaluate. Our pruning is
inexact (a segment that survives may hold rows that do not match), so the source returns
**every** filter and Spark checks each row again. What the translation must guarantee is
that it never rejects a row Spark's filter accepts; it is exact where that is cheap.

Where Spark and Arrow differ, the translation follows Spark:

* NaN: Spark orders NaN above every number and ``NaN = NaN`` is true; Arrow's comparisons
  with NaN are false. So on a float column ``x > v`` is ``x > v or is_nan(x)`` (and ``>=``);
  against a NaN literal ``x = NaN`` is ``is_nan(x)``, ``x > NaN`` is false, ``x >= NaN`` is
  ``is_nan(x)``, ``x < NaN`` is ``not is_nan(x)``, ``x <= NaN`` is true (null stays null).
* ``EqualNullSafe(x, v)`` (``<=>``) is ``x = v and x is not null`` (never null), and
  ``x is null`` for ``v`` null.
* ``In`` is ``is_in``, which is false (not null) for a null ``x``: under ``Not`` that keeps
  rows Spark rejects, which is allowed (Spark rejects them again). ``is_in`` tells ``-0.0``
  from ``0.0`` (Spark does not): a listed zero lists both; a listed NaN is ``is_nan(x)``.

Under ``Not`` a translation must also be false wherever Spark's filter is false, so each one
is exact wherever Spark's result is not null (a null may become true or false).

A filter on a struct field (Spark's attribute ``("s", "a")``) becomes ``pc.field("s", "a")``,
null where the struct is null as in Spark. A filter that cannot be translated (on a whole
struct, list or map, or inside a list or map, ``StringEndsWith`` and ``StringContains``, a
value that does not fit the column's type) is left out of ours: it prunes nothing, and Spark
still applies it.
"""

from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["spark_filters_to_arrow", "translate_filter"]


def _column_type(schema: pa.Schema, attribute: tuple[str, ...]) -> pa.DataType | None:
    """The type of the column or struct field ``attribute`` names (None: no such primitive)."""
    if not attribute or schema.get_field_index(attribute[0]) < 0:
        return None
    column_type: pa.DataType = schema.field(attribute[0]).type
    for name in attribute[1:]:  # a struct field: ('s', 'a') is s.a
        if not pa.types.is_struct(column_type) or column_type.get_field_index(name) < 0:
            return None
        column_type = column_type.field(name).type
    if pa.types.is_nested(column_type):
        return None  # a whole struct, list or map: no comparison to push
    if pa.types.is_dictionary(column_type):
        column_type = column_type.value_type
    return column_type


def _literal(value: Any, column_type: pa.DataType) -> pa.Scalar | None:
    """``value`` (a Python value from Spark) as a scalar comparable with the column, or
    None when it cannot be one."""
    if value is None:
        return None
    try:
        if pa.types.is_timestamp(column_type) and isinstance(value, datetime.datetime):
            if column_type.tz is not None:  # an instant: compare in UTC
                if value.tzinfo is None:  # Spark sends instants as local wall clock
                    value = value.astimezone()
                return pa.scalar(value.astimezone(datetime.UTC), pa.timestamp("us", tz="UTC"))
            return pa.scalar(value.replace(tzinfo=None), pa.timestamp("us"))
        if pa.types.is_date(column_type) and isinstance(value, datetime.date):
            return pa.scalar(value, pa.date32())
        if pa.types.is_decimal(column_type) and isinstance(value, decimal.Decimal | int):
            return pa.scalar(decimal.Decimal(value))
        if isinstance(value, bool) != pa.types.is_boolean(column_type):
            return None
        if pa.types.is_floating(column_type) and isinstance(value, int | float):
            return pa.scalar(float(value), pa.float64())
        if pa.types.is_integer(column_type) and isinstance(value, int):
            return pa.scalar(value, pa.int64())
        if (pa.types.is_string(column_type) or pa.types.is_large_string(column_type)) and (
            isinstance(value, str)
        ):
            return pa.scalar(value, pa.string())
        if (pa.types.is_binary(column_type) or pa.types.is_large_binary(column_type)) and (
            isinstance(value, bytes | bytearray)
        ):
            return pa.scalar(bytes(value), pa.binary())
        if pa.types.is_boolean(column_type):
            return pa.scalar(bool(value), pa.bool_())
    except (pa.ArrowException, ValueError, OverflowError, TypeError):
        return None
    return None


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _compare(field: pc.Expression, op: str, value: Any, column_type: pa.DataType) -> Any:
    """``field op value`` in Spark's semantics (NaN largest and equal to itself)."""
    floating = pa.types.is_floating(column_type)
    if floating and _is_nan(value):
        nan = pc.is_nan(field)
        return {
            "==": nan,
            ">": nan & ~nan,  # false, null for null
            ">=": nan,
            "<": ~nan,
            "<=": nan | ~nan,  # true, null for null
        }[op]
    literal = _literal(value, column_type)
    if literal is None:
        return None
    scalar = pc.scalar(literal)
    result = {
        "==": field == scalar,
        ">": field > scalar,
        ">=": field >= scalar,
        "<": field < scalar,
        "<=": field <= scalar,
    }[op]
    if floating and op in (">", ">="):
        result = result | pc.is_nan(field)
    return result


_COMPARISONS = {
    "EqualTo": "==",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
}


def translate_filter(spark_filter: Any, schema: pa.Schema) -> pc.Expression | None:
    """One Spark filter as a ``pyarrow.compute`` expression over ``schema`` (the table's).

    Returns:
        The expression, true for every row Spark's filter is true for; None when it cannot
        be translated (it then prunes nothing).
    """
    kind = type(spark_filter).__name__
    if kind == "Not":
        child = translate_filter(spark_filter.child, schema)
        return None if child is None else ~child
    attribute = tuple(getattr(spark_filter, "attribute", ()))
    column_type = _column_type(schema, attribute)
    if column_type is None:
        return None
    field = pc.field(*attribute)
    if kind in _COMPARISONS:
        result: pc.Expression | None = _compare(
            field, _COMPARISONS[kind], spark_filter.value, column_type
        )
        return result
    if kind == "EqualNullSafe":
        if spark_filter.value is None:
            return field.is_null()
        equal = _compare(field, "==", spark_filter.value, column_type)
        return None if equal is None else equal & field.is_valid()
    if kind == "IsNull":
        return field.is_null()
    if kind == "IsNotNull":
        return field.is_valid()
    if kind == "In":
        return _is_in(field, tuple(spark_filter.value), column_type)
    text = pa.types.is_string(column_type) or pa.types.is_large_string(column_type)
    if kind == "StringStartsWith" and isinstance(spark_filter.value, str) and text:
        return pc.starts_with(field, pattern=spark_filter.value)
    return None


def _is_in(
    field: pc.Expression, values: tuple[Any, ...], column_type: pa.DataType
) -> pc.Expression | None:
    parts: list[pc.Expression] = []
    literals = []
    for value in values:
        if value is None:
            continue  # x in (.., null) is never true for a value not otherwise listed
        if pa.types.is_floating(column_type) and _is_nan(value):
            parts.append(pc.is_nan(field))
            continue
        literal = _literal(value, column_type)
        if literal is None:
            return None
        literals.append(literal)
        if pa.types.is_floating(column_type) and literal.as_py() == 0.0:
            literals.append(pa.scalar(-literal.as_py(), pa.float64()))  # is_in tells -0.0 apart
    if literals:
        kinds = {literal.type for literal in literals}
        if len(kinds) > 1:
            return None
        array = pa.array([literal.as_py() for literal in literals], literals[0].type)
        parts.append(field.isin(array))
    if not parts:
        return field.is_valid() & ~field.is_valid()  # nothing listed: false (null for null)
    result = parts[0]
    for part in parts[1:]:
        result = result | part
    return result


def spark_filters_to_arrow(spark_filters: Sequence[Any], schema: pa.Schema) -> pc.Expression | None:
    """The AND of the translatable filters, or None when none is.

    Returns:
        An expression true for every row all of Spark's filters are true for.
    """
    parts = [
        part
        for part in (translate_filter(item, schema) for item in spark_filters)
        if part is not None
    ]
    if not parts:
        return None
    result = parts[0]
    for part in parts[1:]:
        result = result & part
    return result
