"""Named pruning cases: value sets, bloom filters, inexact bounds, all-null and unknown
statistics, prefixes, instants, decimals, small integers, page fragments."""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from streamwrite.errors import ConfigError
from streamwrite.predicate import (
    ColumnStats,
    Containers,
    Not,
    RowRanges,
    StartsWith,
    bind,
    prune,
    prune_fragments,
)


def keep(filters: object, stats: ColumnStats, vtype: pa.DataType) -> list[bool]:
    n = len(stats.num_values) if stats.num_values is not None else len(stats.min)
    expr = bind(filters, pa.schema([("x", vtype)]))
    return [bool(k) for k in prune(expr, Containers(n, {"x": stats}))]


def test_value_sets_let_not_equal_and_not_in_prune() -> None:
    stats = ColumnStats(
        num_values=np.array([2, 2]),
        null_count=pa.array([0, 0]),
        min=pa.array(["a", "a"]),
        max=pa.array(["b", "c"]),
        value_sets=[pa.array(["a", "b"]), pa.array(["a", "c"])],
    )
    assert keep([("x", "not in", ["a", "b"])], stats, pa.string()) == [False, True]
    assert keep([("x", "in", ["b"])], stats, pa.string()) == [True, False]
    assert keep([("x", "!=", "a")], stats, pa.string()) == [True, True]
    single = ColumnStats(
        num_values=np.array([3]), null_count=pa.array([1]), value_sets=[pa.array(["a"])]
    )
    assert keep([("x", "!=", "a")], single, pa.string()) == [False]  # null != a is NULL
    assert keep([("x", "not in", ["a"])], single, pa.string()) == [True]  # null not in: TRUE


def test_bloom_cuts_equality_only() -> None:
    calls: list[list[int]] = []

    def might_contain(literals: pa.Array) -> npt.NDArray[np.bool_]:
        calls.append(literals.to_pylist())
        return np.array([[v == 6 for v in literals.to_pylist()]], bool)

    stats = ColumnStats(
        num_values=np.array([4]),
        null_count=pa.array([0]),
        min=pa.array([0]),
        max=pa.array([10]),
        might_contain=might_contain,
    )
    assert keep([("x", "==", 5)], stats, pa.int64()) == [False]
    assert keep([("x", "in", [5, 6])], stats, pa.int64()) == [True]
    assert keep([("x", "in", [4, 5])], stats, pa.int64()) == [False]
    assert keep([("x", "!=", 5)], stats, pa.int64()) == [True]
    assert keep([("x", "not in", [5])], stats, pa.int64()) == [True]
    assert calls and all(isinstance(v, int) for c in calls for v in c)


def test_bloom_is_not_trusted_for_float_zero() -> None:
    """A bloom filter hashes -0.0 and 0.0 differently; they are equal values (found by the
    float property test: `x == 0.0` pruned a chunk of -0.0 before this rule)."""
    stats = ColumnStats(
        num_values=np.array([1]),
        null_count=pa.array([0]),
        min=pa.array([-0.0]),
        max=pa.array([-0.0]),
        might_contain=lambda lits: np.zeros((1, len(lits)), bool),
    )
    assert keep([("x", "==", 0.0)], stats, pa.float64()) == [True]
    assert keep([("x", "in", [0.0, 7.0])], stats, pa.float64()) == [True]
    assert keep([("x", "==", 7.0)], stats, pa.float64()) == [False]


def test_inexact_bounds_never_prove_presence() -> None:
    def stats(exact: bool) -> ColumnStats:
        return ColumnStats(
            num_values=np.array([2]),
            null_count=pa.array([0]),
            min=pa.array(["ab"]),
            max=pa.array(["ab"]),
            min_exact=np.array([exact]),
            max_exact=np.array([exact]),
        )

    assert keep([("x", "!=", "ab")], stats(True), pa.string()) == [False]
    assert keep([("x", "!=", "ab")], stats(False), pa.string()) == [True]
    assert keep([("x", "not in", ["ab", "c"])], stats(False), pa.string()) == [True]
    assert keep([("x", "not in", ["ab", "c"])], stats(True), pa.string()) == [False]


def test_all_null_and_unknown_null_counts() -> None:
    all_null = ColumnStats(
        num_values=np.array([3]),
        null_count=pa.array([3]),
        min=pa.array([None], pa.int64()),
        max=pa.array([None], pa.int64()),
    )
    assert keep([("x", "==", 1)], all_null, pa.int64()) == [False]
    assert keep(~(pc.field("x") == 1), all_null, pa.int64()) == [False]
    assert keep(pc.field("x").is_null(), all_null, pa.int64()) == [True]
    assert keep(pc.field("x").is_valid(), all_null, pa.int64()) == [False]
    assert keep([("x", "not in", [1])], all_null, pa.int64()) == [True]  # is_in(null) is FALSE
    assert keep([("x", "not in", [1, None])], all_null, pa.int64()) == [False]
    unknown = ColumnStats(num_values=np.array([3]), min=pa.array([1]), max=pa.array([1]))
    assert keep(pc.field("x").is_null(), unknown, pa.int64()) == [True]
    assert keep([("x", "==", 2)], unknown, pa.int64()) == [False]
    nothing = ColumnStats()
    assert keep([("x", "==", 2)], ColumnStats(num_values=np.array([1])), pa.int64()) == [True]
    assert nothing.min is None


def test_prefix_ranges_in_byte_order() -> None:
    stats = ColumnStats(
        num_values=np.array([1, 1, 1, 1]),
        null_count=pa.array([0, 0, 0, 0]),
        min=pa.array(["ab", "a\U0010ffff", "b", "abz"]),
        max=pa.array(["ab\U0010ffffz", "a\U0010ffff\U0010ffff", "c", "ac"]),
        max_exact=np.array([True, True, True, False]),  # "ac": "abz..." cut and rounded up
    )
    assert keep(pc.starts_with(pc.field("x"), "ab"), stats, pa.string()) == [
        True,
        False,
        False,
        True,
    ]
    assert keep(Not(StartsWith("x", "ab")), stats, pa.string()) == [False, True, True, True]
    assert keep(pc.starts_with(pc.field("x"), "a\U0010ffff"), stats, pa.string()) == [
        False,
        True,
        False,
        False,
    ]


def test_timestamps_decimals_and_small_ints() -> None:
    ts = pa.timestamp("ms", "UTC")
    stats = ColumnStats(
        num_values=np.array([1, 1]),
        null_count=pa.array([0, 0]),
        min=pa.array([0, 3_600_000], ts),
        max=pa.array([0, 3_600_000], ts),
    )
    tokyo = dt.timezone(dt.timedelta(hours=9))
    one_am_utc = dt.datetime(1970, 1, 1, 10, tzinfo=tokyo)
    assert keep([("x", "==", one_am_utc)], stats, ts) == [False, True]
    assert keep([("x", "<", one_am_utc)], stats, ts) == [True, False]
    dec = pa.decimal128(9, 2)
    d = ColumnStats(
        num_values=np.array([2]),
        null_count=pa.array([0]),
        min=pa.array([decimal.Decimal("1.00")], dec),
        max=pa.array([decimal.Decimal("2.00")], dec),
    )
    assert keep([("x", "==", decimal.Decimal("1.005"))], d, dec) == [False]
    assert keep([("x", ">", 1.999)], d, dec) == [True]
    assert keep([("x", ">", 2.001)], d, dec) == [False]
    small = ColumnStats(
        num_values=np.array([2, 2]),
        null_count=pa.array([0, 2]),
        min=pa.array([-5, None], pa.int8()),
        max=pa.array([5, None], pa.int8()),
    )
    assert keep([("x", "<", 1000)], small, pa.int8()) == [True, False]
    assert keep([("x", ">", 1000)], small, pa.int8()) == [False, False]
    assert keep([("x", "!=", 1000)], small, pa.int8()) == [True, False]


def test_page_fragments_keep_columns_aligned() -> None:
    # a: pages [0, 4) [4, 10); b: pages [0, 6) [6, 10)
    a = ColumnStats(
        num_values=np.array([4, 6]),
        null_count=pa.array([0, 0]),
        min=pa.array([0, 10]),
        max=pa.array([3, 19]),
    )
    b = ColumnStats(
        num_values=np.array([6, 4]),
        null_count=pa.array([0, 0]),
        min=pa.array(["a", "m"]),
        max=pa.array(["f", "z"]),
    )
    pages = {"a": (np.array([0, 4]), a), "b": (np.array([0, 6]), b)}
    schema = pa.schema([("a", pa.int64()), ("b", pa.string())])
    ranges = prune_fragments(bind([("a", ">=", 10), ("b", "<", "g")], schema), pages, 10)
    assert ranges == RowRanges.from_ranges([4], [6])
    assert prune_fragments(bind([("a", "<", 0)], schema), pages, 10).num_rows == 0
    everything = prune_fragments(bind([("a", ">=", 0)], schema), {}, 10)
    assert everything.slices() == [slice(0, 10)]


def test_statistics_of_the_wrong_length_are_named() -> None:
    stats = ColumnStats(num_values=np.array([1, 2]), min=pa.array([1]), max=pa.array([1, 2]))
    with pytest.raises(ConfigError, match=r"ColumnStats.min of column 'x' has 1 entries for 2"):
        keep([("x", "==", 1)], stats, pa.int64())


def test_bounds_of_a_narrower_type_bound_the_literal() -> None:
    """Statistics typed int8 for an int16-bound filter: the literal is re-coerced to them."""
    stats = ColumnStats(
        num_values=np.array([1]),
        null_count=pa.array([0]),
        min=pa.array([1], pa.int8()),
        max=pa.array([1], pa.int8()),
    )
    schema = pa.schema([("x", pa.int16())])
    containers = Containers(1, {"x": stats})
    assert prune(bind([("x", "==", 300)], schema), containers).tolist() == [False]
    assert prune(bind([("x", "in", [300, 1])], schema), containers).tolist() == [True]
    assert prune(bind([("x", "!=", 300)], schema), containers).tolist() == [True]
    assert prune(bind([("x", "<", 300)], schema), containers).tolist() == [True]
