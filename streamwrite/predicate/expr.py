"""The filter expression model: frozen, hashable dataclasses (the contract of issue 14).

A filter is a tree of these nodes; every reader, index and store of streamwrite prunes with the
same tree and applies the same rows filter (:func:`streamwrite.predicate.to_arrow`)::

    Compare(column, op, value)      op in "==", "!=", "<", "<=", ">", ">="
    IsIn(column, values)            "not in" is Not(IsIn(...))
    IsNull(column)                  nan_is_null=False; is_valid is Not(IsNull(column))
    IsNan(column)
    StartsWith(column, prefix)      LIKE 'prefix%' (str for strings, bytes for binary)
    And(children), Or(children)     kleene=True: Arrow's and_kleene / or_kleene (SQL);
                                    kleene=False: Arrow's and_ / or_ (null if any child is null)
    Not(child)
    Const(value)                    True or False for every row

Three-valued rules (a row's truth is TRUE, FALSE or NULL; a filter keeps TRUE rows only):

- a comparison, ``StartsWith`` or ``IsNan`` of a null value is NULL; ``IsNull`` is never NULL;
- ``IsIn`` is never NULL: a null value is TRUE when the values hold a null, else FALSE (Arrow's
  ``is_in``); NaN is in a set holding NaN; floats compare numerically (``-0.0`` is in ``[0.0]``);
- NaN compares like Arrow compute: ``NaN == x``, ``NaN < x`` ... are FALSE and ``NaN != x`` is
  TRUE, for every ``x`` including NaN;
- ``Not`` swaps TRUE and FALSE and keeps NULL; Kleene ``And`` is FALSE if a child is FALSE, else
  NULL if a child is NULL; Kleene ``Or`` dually.

Before binding (:func:`streamwrite.predicate.bind`) a literal is any Python value or a
``pyarrow.Scalar``; after binding it is a ``pyarrow.Scalar`` of the column's value type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import pyarrow as pa

__all__ = [
    "COMPARE_OPS",
    "And",
    "Compare",
    "Const",
    "Expr",
    "IsIn",
    "IsNan",
    "IsNull",
    "Not",
    "Or",
    "StartsWith",
    "columns",
    "describe",
]

COMPARE_OPS = ("==", "!=", "<", "<=", ">", ">=")
"""The operators of :class:`Compare`."""


@dataclass(frozen=True)
class Compare:
    """``column op value``; ``op`` is one of :data:`COMPARE_OPS`."""

    column: str
    op: str
    value: object


@dataclass(frozen=True)
class IsIn:
    """``column IN values`` (Arrow ``is_in``; a null value matches a null in ``values``)."""

    column: str
    values: tuple[object, ...]


@dataclass(frozen=True)
class IsNull:
    """``column IS NULL`` (a NaN is not null)."""

    column: str


@dataclass(frozen=True)
class IsNan:
    """``isnan(column)``: NULL for a null value."""

    column: str


@dataclass(frozen=True)
class StartsWith:
    """``column LIKE 'prefix%'`` (case-sensitive, byte order)."""

    column: str
    prefix: str | bytes


@dataclass(frozen=True)
class And:
    """Conjunction of ``children`` (Kleene unless ``kleene`` is False)."""

    children: tuple[Expr, ...]
    kleene: bool = True


@dataclass(frozen=True)
class Or:
    """Disjunction of ``children`` (Kleene unless ``kleene`` is False)."""

    children: tuple[Expr, ...]
    kleene: bool = True


@dataclass(frozen=True)
class Not:
    """Negation of ``child`` (NULL stays NULL)."""

    child: Expr


@dataclass(frozen=True)
class Const:
    """``value`` for every row."""

    value: bool


Expr: TypeAlias = Compare | IsIn | IsNull | IsNan | StartsWith | And | Or | Not | Const
"""Any node of the model."""


def columns(expr: Expr) -> frozenset[str]:
    """The columns ``expr`` reads.

    Returns:
        The set of column names of every leaf of ``expr`` (empty for a constant).
    """
    if isinstance(expr, And | Or):
        found: frozenset[str] = frozenset()
        for child in expr.children:
            found |= columns(child)
        return found
    if isinstance(expr, Not):
        return columns(expr.child)
    if isinstance(expr, Const):
        return frozenset()
    return frozenset({expr.column})


def _literal(value: object) -> str:
    if isinstance(value, pa.TimestampScalar) and value.is_valid:
        # as_py() of a nanosecond value needs pandas: format the integer through numpy
        unit = value.type.unit
        text = str(np.datetime64(value.value, unit))
        return f"TIMESTAMP '{text}{'' if value.type.tz is None else ' ' + value.type.tz}'"
    as_py = getattr(value, "as_py", None)
    if callable(as_py) and type(value).__module__.startswith("pyarrow"):
        try:
            value = as_py()
        except (OverflowError, ValueError):  # a timestamp beyond Python's datetime range
            return str(value)
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    return repr(value) if isinstance(value, bytes | float) else str(value)


def _name(column: str) -> str:
    return column if column.isidentifier() else '"' + column.replace('"', '""') + '"'


def describe(expr: Expr) -> str:
    """SQL-ish text of ``expr`` (for ``--explain`` and error messages).

    Returns:
        For example ``(price > 10 AND symbol IN ('A', 'B')) OR NOT (ts IS NULL)``.
    """
    if isinstance(expr, Compare):
        op = "=" if expr.op == "==" else expr.op
        return f"{_name(expr.column)} {op} {_literal(expr.value)}"
    if isinstance(expr, IsIn):
        return f"{_name(expr.column)} IN ({', '.join(_literal(v) for v in expr.values)})"
    if isinstance(expr, IsNull):
        return f"{_name(expr.column)} IS NULL"
    if isinstance(expr, IsNan):
        return f"isnan({_name(expr.column)})"
    if isinstance(expr, StartsWith):
        return f"{_name(expr.column)} LIKE {_literal(expr.prefix)} || '%'"
    if isinstance(expr, Not):
        return f"NOT ({describe(expr.child)})"
    if isinstance(expr, Const):
        return "TRUE" if expr.value else "FALSE"
    word = " AND " if isinstance(expr, And) else " OR "
    if not expr.kleene:
        word = word.rstrip() + "_STRICT "
    if not expr.children:
        return "TRUE" if isinstance(expr, And) else "FALSE"
    return word.join(
        f"({describe(c)})" if isinstance(c, And | Or) else describe(c) for c in expr.children
    )
