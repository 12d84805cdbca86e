"""pyarrow's DNF filters (``[("x", "<", 3)]``, or a list of such lists) as a Spark Column
that keeps exactly the rows ``pyarrow.compute`` keeps (``pyarrow.parquet.filters_to_expression``
of the same filters), so that Spark applies our filter with our semantics.

DNF has no negation, so a row is kept when some conjunction has every comparison true (a
null counts as false). Where Spark's comparison differs from Arrow's, the Column corrects it:

* float columns: Arrow's ``NaN > v`` and ``NaN >= v`` are false, Spark's true (NaN is its
  largest value): ``x > v and not isnan(x)``; a comparison with a NaN literal is true only for
  ``!=`` (every non-null value);
* ``in``: a listed zero matches ``0.0`` and ``-0.0`` (the predicate core lists both, as
  ``=`` does, and so does Spark's ``IN``); a listed NaN matches NaN (``is_in``; Spark too);
* ``not in`` is ``not is_in``, true for a null value (pyarrow's filters keep such rows; SQL's
  ``NOT IN`` does not): ``not in(...) or x is null``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from streamwrite.errors import ConfigError

__all__ = ["dnf_terms", "dnf_to_column"]

_OPS = frozenset({"=", "==", "!=", "<", "<=", ">", ">=", "in", "not in"})


def dnf_terms(filters: Sequence[Any]) -> list[list[tuple[str, str, Any]]]:
    """``filters`` as a list of conjunctions of ``(column, op, value)``.

    Raises:
        ConfigError: not pyarrow's DNF.
    """
    if not filters:
        raise ConfigError("The filters are an empty list: give at least one (column, op, value).")
    groups = [filters] if isinstance(filters[0], tuple) else list(filters)
    result = []
    for group in groups:
        terms = []
        for term in group:
            if not (isinstance(term, tuple | list) and len(term) == 3 and term[1] in _OPS):
                raise ConfigError(
                    f"{term!r} is not a (column, op, value) filter with op one of {sorted(_OPS)}."
                )
            terms.append((str(term[0]), str(term[1]), term[2]))
        result.append(terms)
    return result


def _plain(value: Any) -> Any:
    return value.as_py() if isinstance(value, pa.Scalar) else value


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _term(column: str, op: str, value: Any, column_type: pa.DataType) -> Any:
    from pyspark.sql import functions as F  # noqa: N812

    field = F.col(f"`{column}`")
    floating = pa.types.is_floating(column_type)
    if op in ("in", "not in"):
        values = [_plain(v) for v in value]
        member = _member(field, values, floating)
        return (~member | field.isNull()) if op == "not in" else member
    value = _plain(value)
    if floating and _is_nan(value):
        return field.isNotNull() if op == "!=" else F.lit(False)
    result = {
        "=": field == value,
        "==": field == value,
        "!=": field != value,
        "<": field < value,
        "<=": field <= value,
        ">": field > value,
        ">=": field >= value,
    }[op]
    if floating and op in (">", ">="):
        result = result & ~F.isnan(field)
    return result


def _member(field: Any, values: list[Any], floating: bool) -> Any:
    from pyspark.sql import functions as F  # noqa: N812

    plain = [v for v in values if v is not None and not (floating and _is_nan(v))]
    parts = [field.isin(plain)] if plain else []
    if floating and any(_is_nan(v) for v in values):
        parts.append(F.isnan(field))
    if not parts:
        return F.lit(False)
    result = parts[0]
    for part in parts[1:]:
        result = result | part
    return result


def dnf_to_column(filters: Sequence[Any], schema: pa.Schema) -> Any:
    """The Spark Column of pyarrow's DNF ``filters`` over a table of ``schema``.

    Returns:
        A boolean ``pyspark.sql.Column`` (null counts as false in ``DataFrame.filter``).

    Raises:
        ConfigError: not pyarrow's DNF, or a column ``schema`` does not have.
    """
    disjunction = None
    for group in dnf_terms(filters):
        conjunction = None
        for column, op, value in group:
            if schema.get_field_index(column) < 0:
                raise ConfigError(f"The filter names {column!r}, not a column of {schema.names}.")
            column_type = schema.field(column).type
            if pa.types.is_dictionary(column_type):
                column_type = column_type.value_type
            term = _term(column, op, value, column_type)
            conjunction = term if conjunction is None else conjunction & term
        disjunction = conjunction if disjunction is None else disjunction | conjunction
    return disjunction
