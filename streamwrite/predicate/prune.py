"""Three-valued pruning of N containers, vectorised over the containers.

Every node yields two bool arrays over the containers: ``can_true[i]`` (container ``i`` might hold
a row where the node is TRUE) and ``can_false[i]`` (... FALSE). A NULL row sets neither. Then::

    Not(a)        = (a.can_false, a.can_true)
    And(a, b)     = (a.can_true & b.can_true, a.can_false | b.can_false)
    Or(a, b)      = (a.can_true | b.can_true, a.can_false & b.can_false)

(over-approximations: "might" stays "might"; strict ``and_``/``or_`` use the same, a superset of
their FALSE rows). A container is kept when ``can_true`` of the root holds. Leaves, with
``nonnull`` (might hold a non-null value), ``nan`` (might hold a NaN: a float column whose
``nan_count`` is unknown or positive), ``regular`` (might hold a non-null non-NaN value) and the
bounds ``[min, max]`` (unknown bound: no constraint)::

    x < v     T: regular & min < v             F: regular & max >= v | nan
    x <= v    T: regular & min <= v            F: regular & max > v  | nan
    x > v     T: regular & max > v             F: regular & min <= v | nan
    x >= v    T: regular & max >= v            F: regular & min < v  | nan
    x == v    T: regular & min <= v <= max     F: nan | regular & not(min == max == v, exact)
    x != v    T: F(x == v)                      F: T(x == v)
    v NaN     ==,<,<=,>,>=: T never, F nonnull; != : T nonnull, F never;  v null: neither
    x IN L    T: regular & some l in [min, max] | nan & NaN in L | nulls & null in L
              F: regular & not(min == max in L, exact) | nan & NaN not in L | nulls & null not in L
    IS NULL   T: nulls (null_count unknown or > 0)   F: nonnull
    isnan(x)  T: nan                                  F: regular
    LIKE p%   T: regular & max >= p & min < succ(p)   F: regular & (min < p | max >= succ(p))

``succ(p)`` is the least byte string above every string starting with ``p`` (last non-0xFF byte
incremented, the rest dropped; none for an empty or all-0xFF prefix); strings compare as UTF-8
bytes. Bloom filters cut ``T`` of ``==`` and ``IN`` (never ``F``), and only for a literal of the
column's type (bound) that is not a float zero (a bloom filter hashes the bits of -0.0 and 0.0
apart); value sets evaluate the leaf on the set's values (an exact answer for the non-null rows)
and cut both bits. ``min == max == v`` proves presence only where both bounds are exact.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from streamwrite.errors import ConfigError
from streamwrite.predicate.bind import coerce_compare, value_type
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
from streamwrite.predicate.parse import _value_set
from streamwrite.predicate.stats import ColumnStats, Containers

__all__ = ["prune", "prune_bits"]

Bits = npt.NDArray[np.bool_]


def prune(expr: Expr, containers: Containers) -> Bits:
    """Which containers might hold a row where ``expr`` is TRUE.

    Args:
        expr: a bound expression (:func:`streamwrite.predicate.bind`); an unbound literal is
            coerced to the type of the column's statistics.
        containers: what is known of each container.

    Returns:
        A bool array of ``containers.num_containers`` entries, False where no row can match.
    """
    return prune_bits(expr, containers)[0]


def prune_bits(
    expr: Expr, containers: Containers, leaves: dict[str, _Leaf] | None = None
) -> tuple[Bits, Bits]:
    """``(can_true, can_false)`` of ``expr`` over ``containers`` (module docstring).

    ``leaves`` caches each column's statistics, read once per call.
    """
    n = containers.num_containers
    leaves = {} if leaves is None else leaves
    if isinstance(expr, Not):
        can_true, can_false = prune_bits(expr.child, containers, leaves)
        return can_false, can_true
    if isinstance(expr, And | Or):
        is_and = isinstance(expr, And)
        can_true = np.full(n, is_and)
        can_false = np.full(n, not is_and)
        for child in expr.children:
            t, f = prune_bits(child, containers, leaves)
            if is_and:
                can_true, can_false = can_true & t, can_false | f
            else:
                can_true, can_false = can_true | t, can_false & f
        return can_true, can_false
    if isinstance(expr, Const):
        return np.full(n, bool(expr.value)), np.full(n, not expr.value)
    stats = containers.columns.get(expr.column)
    if stats is None:
        return np.ones(n, bool), np.ones(n, bool)
    leaf = leaves.get(expr.column)
    if leaf is None:
        _check_lengths(expr.column, stats, n)
        leaf = leaves[expr.column] = _Leaf(stats, n)
    return leaf.bits(expr)


def _check_lengths(column: str, stats: ColumnStats, n: int) -> None:
    for name in (
        "num_values",
        "null_count",
        "min",
        "max",
        "min_exact",
        "max_exact",
        "nan_count",
        "value_sets",
    ):
        value = getattr(stats, name)
        if value is not None and len(value) != n:
            raise ConfigError(
                f"ColumnStats.{name} of column {column!r} has {len(value)} entries for "
                f"{n} containers."
            )


def _array(values: Any) -> pa.Array | None:
    """Statistics given as a ChunkedArray, numpy array or list, as one Arrow array."""
    if values is None or isinstance(values, pa.Array):
        return values
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    return pa.array(values)


def _known(array: pa.Array | None, n: int) -> tuple[npt.NDArray[np.int64], Bits]:
    array = _array(array)
    if array is None:
        return np.zeros(n, np.int64), np.zeros(n, bool)
    values = pc.fill_null(array.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
    return values.astype(np.int64), ~np.asarray(array.is_null().to_numpy(zero_copy_only=False))


def _np(mask: Any) -> Bits:
    """A boolean Arrow result as numpy, null (unknown) read as True ("might")."""
    return np.asarray(pc.fill_null(mask, True).to_numpy(zero_copy_only=False), dtype=bool)


class _Leaf:
    """One column's statistics, read once into the masks of the module docstring."""

    def __init__(self, stats: ColumnStats, n: int) -> None:
        self.stats, self.n = stats, n
        rows = np.ones(n, bool)
        nv_known = np.zeros(n, bool)
        num_values = np.zeros(n, np.int64)
        if stats.num_values is not None:
            num_values = np.asarray(stats.num_values, np.int64)
            nv_known = np.ones(n, bool)
            rows = num_values > 0
        null_count, nc_known = _known(stats.null_count, n)
        self.nulls = rows & (~nc_known | (null_count > 0))
        self.nonnull = rows & ~(nc_known & nv_known & (null_count >= num_values))
        bounds = _array(stats.min if stats.min is not None else stats.max)
        if bounds is None and stats.value_sets is not None:
            bounds = next((v for v in stats.value_sets if v is not None), None)
        self.vtype = value_type(bounds.type) if bounds is not None else None
        self.floating = self.vtype is not None and pa.types.is_floating(self.vtype)
        nan_count, nan_known = _known(stats.nan_count, n)
        if self.vtype is not None and not self.floating:
            self.nan = np.zeros(n, bool)
            self.regular = self.nonnull
        else:
            self.nan = self.nonnull & (~nan_known | (nan_count > 0))
            all_nan = nan_known & nc_known & nv_known & (nan_count >= num_values - null_count)
            self.regular = self.nonnull & ~all_nan
        self.min = self._bound(stats.min)
        self.max = self._bound(stats.max)

    def _bound(self, array: pa.Array | None) -> pa.Array | None:
        array = _array(array)
        if array is None:
            return None
        if pa.types.is_dictionary(array.type):
            array = array.cast(array.type.value_type)
        if pa.types.is_floating(array.type):
            array = pc.if_else(pc.is_nan(array), pa.scalar(None, array.type), array)
        return array

    def _exact(self, which: npt.NDArray[np.bool_] | None) -> Bits:
        return np.ones(self.n, bool) if which is None else np.asarray(which, bool)

    def cmp(self, bound: pa.Array | None, fn: Any, literal: pa.Scalar) -> Bits:
        """``fn(bound, literal)`` per container; unknown bound: True."""
        if bound is None:
            return np.ones(self.n, bool)
        if bound.type != literal.type:
            literal = _cast(literal, bound.type)
            if literal is None:
                return np.ones(self.n, bool)
        return _np(fn(bound, literal))

    def bits(self, expr: Expr) -> tuple[Bits, Bits]:
        if isinstance(expr, IsNull):
            return self.nulls.copy(), self.nonnull.copy()
        if isinstance(expr, IsNan):
            return self.nan.copy(), self.regular.copy()
        if isinstance(expr, Compare):
            return self.compare(expr)
        if isinstance(expr, IsIn):
            return self.is_in(expr)
        if isinstance(expr, StartsWith):
            return self.starts_with(expr)
        raise TypeError(f"not a leaf: {expr!r}")

    def compare(self, expr: Compare) -> tuple[Bits, Bits]:
        value = expr.value
        if self.vtype is not None and not (
            isinstance(value, pa.Scalar) and value.type == self.vtype
        ):
            rewritten = coerce_compare(expr.column, expr.op, value, self.vtype)
            if rewritten != Compare(expr.column, expr.op, value):
                if isinstance(rewritten, Compare) and rewritten.op == expr.op:
                    value = rewritten.value
                else:
                    return prune_bits(rewritten, _single(expr.column, self.stats, self.n))
        kind = _kind(value)
        never = np.zeros(self.n, bool)
        if kind == "null":
            return never, never.copy()
        if kind == "nan":
            return (self.nonnull, never) if expr.op == "!=" else (never, self.nonnull)
        if self.vtype is None:
            return self._unknown_bounds(expr.op)
        literal = value if isinstance(value, pa.Scalar) else pa.scalar(value, self.vtype)
        op, regular, nan = expr.op, self.regular, self.nan
        if op in ("==", "!="):
            overlap = (
                regular
                & self.cmp(self.min, pc.less_equal, literal)
                & self.cmp(self.max, pc.greater_equal, literal)
            )
            overlap &= self._bloom([literal])[:, 0]
            all_equal = self._eq_exact(self.min, literal, self.stats.min_exact) & self._eq_exact(
                self.max, literal, self.stats.max_exact
            )
            differs = nan | (regular & ~all_equal)
            t, f = overlap, differs
            bound = Compare(expr.column, op, literal)
            return self._sets(bound, (t, f) if op == "==" else (f, t))
        fns = {
            "<": (self.min, pc.less, self.max, pc.greater_equal),
            "<=": (self.min, pc.less_equal, self.max, pc.greater),
            ">": (self.max, pc.greater, self.min, pc.less_equal),
            ">=": (self.max, pc.greater_equal, self.min, pc.less),
        }
        t_bound, t_fn, f_bound, f_fn = fns[op]
        t = regular & self.cmp(t_bound, t_fn, literal)
        f = (regular & self.cmp(f_bound, f_fn, literal)) | nan
        return self._sets(Compare(expr.column, op, literal), (t, f))

    def _unknown_bounds(self, op: str) -> tuple[Bits, Bits]:
        return self.nonnull.copy(), self.nonnull.copy()

    def _eq_exact(
        self, bound: pa.Array | None, literal: pa.Scalar, exact: npt.NDArray[np.bool_] | None
    ) -> Bits:
        if bound is None:
            return np.zeros(self.n, bool)
        if bound.type != literal.type:
            literal = _cast(literal, bound.type)
            if literal is None:
                return np.zeros(self.n, bool)
        equal = np.asarray(
            pc.fill_null(pc.equal(bound, literal), False).to_numpy(zero_copy_only=False), bool
        )
        return equal & self._exact(exact)

    def _bloom(self, literals: list[pa.Scalar]) -> Bits:
        ones = np.ones((self.n, len(literals)), bool)
        if self.stats.might_contain is None or not literals:
            return ones
        array = pa.array(literals, literals[0].type)
        result = np.asarray(self.stats.might_contain(array), bool).copy()
        if pa.types.is_floating(array.type):
            # a bloom filter hashes the bits: -0.0 and 0.0 differ there, not in value
            zero = np.asarray(pc.equal(array, 0).to_numpy(zero_copy_only=False), bool)
            result[:, zero] = True
        return result

    def is_in(self, expr: IsIn) -> tuple[Bits, Bits]:
        if self.vtype is None:  # nothing typed is known: only the null and NaN rows
            known_kinds = {_kind(v) for v in expr.values}
            t = (self.nan & ("nan" in known_kinds)) | (self.nulls & ("null" in known_kinds))
            f = (self.nan & ("nan" not in known_kinds)) | (self.nulls & ("null" not in known_kinds))
            return t | self.regular, f | self.regular
        scalars = []
        for v in expr.values:
            if not (isinstance(v, pa.Scalar) and v.type == self.vtype):
                bound = coerce_compare(expr.column, "==", v, self.vtype)
                if not (isinstance(bound, Compare) and bound.op == "=="):
                    continue  # no value of the type equals it
                v = bound.value
            scalars.append(v if isinstance(v, pa.Scalar) else pa.scalar(v))
        kinds = [_kind(s) for s in scalars]
        has_null, has_nan = "null" in kinds, "nan" in kinds
        regular_lits = [s for s, k in zip(scalars, kinds, strict=True) if k == "regular"]
        t = (self.nan & has_nan) | (self.nulls & has_null)
        f = (self.nan & (not has_nan)) | (self.nulls & (not has_null))
        if regular_lits:
            literals = pa.array(regular_lits, regular_lits[0].type)
            n = self.n
            lo_ok = _matrix(self.min, literals, np.less_equal, n)  # (N, L): min <= l
            hi_ok = _matrix(self.max, literals, np.greater_equal, n)
            inside = lo_ok & hi_ok & self._bloom(regular_lits)
            lo_eq = _matrix(self.min, literals, np.equal, n, unknown=False)
            hi_eq = _matrix(self.max, literals, np.equal, n, unknown=False)
            exact = self._exact(self.stats.min_exact) & self._exact(self.stats.max_exact)
            proven = (lo_eq & hi_eq).any(axis=1) & exact
            t |= self.regular & inside.any(axis=1)
            f |= self.regular & ~proven
        else:
            f |= self.regular
        return self._sets(IsIn(expr.column, tuple(scalars)), (t, f))

    def starts_with(self, expr: StartsWith) -> tuple[Bits, Bits]:
        prefix = expr.prefix.encode() if isinstance(expr.prefix, str) else expr.prefix
        successor = _successor(prefix)
        lo, hi = _as_binary(self.min), _as_binary(self.max)
        p = pa.scalar(prefix, pa.binary())
        t = self.regular & self.cmp(hi, pc.greater_equal, p)
        outside = self.cmp(lo, pc.less, p)
        if successor is not None:
            s = pa.scalar(successor, pa.binary())
            t &= self.cmp(lo, pc.less, s)
            outside |= self.cmp(hi, pc.greater_equal, s)
        return self._sets(expr, (t, self.regular & outside))

    def _sets(self, expr: Expr, bits: tuple[Bits, Bits]) -> tuple[Bits, Bits]:
        """Cut ``bits`` with the value sets (exact for the non-null rows; nulls unaffected)."""
        sets = self.stats.value_sets
        if sets is None:
            return bits
        known = np.array([s is not None for s in sets], bool)
        if not known.any():
            return bits
        arrays = [s for s in sets if s is not None]
        lengths = np.array([len(a) for a in arrays], np.int64)
        target = self.vtype or value_type(arrays[0].type)
        values = pa.concat_arrays([_plain(a, target) for a in arrays])
        ids = np.repeat(np.flatnonzero(known), lengths)
        result = _evaluate(expr, values)
        true_rows = np.asarray(pc.fill_null(result, False).to_numpy(zero_copy_only=False), bool)
        false_rows = np.asarray(
            pc.fill_null(pc.invert(result), False).to_numpy(zero_copy_only=False), bool
        )
        set_t = np.bincount(ids, weights=true_rows, minlength=self.n) > 0
        set_f = np.bincount(ids, weights=false_rows, minlength=self.n) > 0
        t, f = bits
        null_t, null_f = _null_rows(expr, self.nulls)
        return (
            np.where(known, (t & set_t) | null_t, t),
            np.where(known, (f & set_f) | null_f, f),
        )


def _cast(value: Any, target: pa.DataType) -> Any:
    """``value`` (scalar or array) cast exactly to the bounds' type; None if it cannot be
    (then the bounds tell nothing about it)."""
    try:
        return value.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


def _comparable(array: pa.Array) -> tuple[npt.NDArray[Any], Bits]:
    """``array`` as numpy values that compare as Arrow compares them, and its null mask."""
    nulls = np.asarray(array.is_null().to_numpy(zero_copy_only=False), bool)
    kind = array.type
    if pa.types.is_floating(kind) or pa.types.is_integer(kind) or pa.types.is_boolean(kind):
        filled = pc.fill_null(array, pa.scalar(0, kind) if not pa.types.is_boolean(kind) else False)
        return np.asarray(filled.to_numpy(zero_copy_only=False)), nulls
    if pa.types.is_temporal(kind) and kind.bit_width in (32, 64):
        ints = pc.fill_null(array.view(pa.int64() if kind.bit_width == 64 else pa.int32()), 0)
        return np.asarray(ints.to_numpy(zero_copy_only=False)), nulls
    values = np.empty(len(array), object)
    values[:] = array.to_pylist()  # str compares by code point = UTF-8 byte order; bytes bytewise
    return values, nulls


def _matrix(
    bound: pa.Array | None, literals: pa.Array, compare: Any, n: int, unknown: bool = True
) -> npt.NDArray[np.bool_]:
    """``compare(bound[i], literals[j])`` as an (N, L) matrix; an unknown bound: ``unknown``."""
    if bound is None:
        return np.full((n, len(literals)), unknown, bool)
    if literals.type != bound.type:
        cast = _cast(literals, bound.type)
        if cast is None:
            return np.full((n, len(literals)), unknown, bool)
        literals = cast
    values, nulls = _comparable(bound)
    lits, _ = _comparable(literals)
    if values.dtype == object and nulls.any():
        values[nulls] = lits[0]
    result = np.asarray(compare(values[:, None], lits[None, :]), bool)
    result[nulls] = unknown
    return result


def _kind(value: object) -> str:
    """``"null"``, ``"nan"`` or ``"regular"`` for a literal (scalar or Python value)."""
    if isinstance(value, pa.Scalar):
        if not value.is_valid:
            return "null"
        if not pa.types.is_floating(value.type):
            return "regular"
        value = value.as_py()
    if value is None:
        return "null"
    return "nan" if isinstance(value, float) and math.isnan(value) else "regular"


def _single(column: str, stats: ColumnStats, n: int) -> Containers:
    return Containers(n, {column: stats})


def _plain(array: pa.Array, target: pa.DataType) -> pa.Array:
    if pa.types.is_dictionary(array.type):
        array = array.cast(array.type.value_type)
    return array if array.type == target else array.cast(target)


def _as_binary(array: pa.Array | None) -> pa.Array | None:
    if array is None:
        return None
    if pa.types.is_string(array.type):
        return array.cast(pa.binary())
    if pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type):
        return array.cast(pa.large_binary()).cast(pa.binary())
    return array


def _successor(prefix: bytes) -> bytes | None:
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


def _null_rows(expr: Expr, nulls: Bits) -> tuple[Bits, Bits]:
    """What null rows contribute to a leaf: only IsIn (TRUE with a null value, else FALSE)."""
    none = np.zeros(len(nulls), bool)
    if isinstance(expr, IsIn):
        has_null = any(
            not (v.is_valid if isinstance(v, pa.Scalar) else v is not None) for v in expr.values
        )
        return (nulls, none) if has_null else (none, nulls)
    return none, none


def _evaluate(expr: Expr, values: pa.Array) -> pa.Array:
    """The leaf on ``values`` (non-null), as :func:`to_arrow` computes it on rows."""
    if isinstance(expr, Compare):
        fns = {
            "==": pc.equal,
            "!=": pc.not_equal,
            "<": pc.less,
            "<=": pc.less_equal,
            ">": pc.greater,
            ">=": pc.greater_equal,
        }
        return fns[expr.op](values, expr.value)
    if isinstance(expr, IsIn):
        if not expr.values:
            return pa.array(np.zeros(len(values), bool))
        return pc.is_in(values, value_set=_value_set(expr.values).cast(values.type))
    if isinstance(expr, IsNan):
        return pc.is_nan(values)
    if isinstance(expr, StartsWith):
        prefix = expr.prefix.encode() if isinstance(expr.prefix, str) else expr.prefix
        sliced = pc.binary_slice(_as_binary(values), 0, len(prefix))
        return pc.equal(sliced, pa.scalar(prefix, sliced.type))
    raise TypeError(f"not a value leaf: {expr!r}")
