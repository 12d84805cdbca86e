"""Property tests: pruning never drops a container holding a matching row, and does prune.

Random columns of every supported type (NaN, -0.0, nulls, all-null containers, long strings
whose bounds truncate, naive and zoned timestamps of every unit, decimals, small and unsigned
integers, dates, bools, dictionaries) are cut into random containers; statistics are computed as
a Parquet writer does (NaN out of min/max, truncated string bounds inexact, null and NaN counts
sometimes missing, value sets and bloom filters sometimes present); a random filter is bound and
every container holding a row where ``to_arrow(expr)`` is TRUE must be kept.
Examples: ``STREAMWRITE_PRUNE_EXAMPLES`` (default 200).
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import hypothesis.strategies as st
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, given, settings

from streamwrite.predicate import (
    ColumnStats,
    Containers,
    Not,
    RowRanges,
    bind,
    prune,
    prune_fragments,
    to_arrow,
)

from ._strategies import FAMILIES, chunks, column_types, filters, make_array
from ._support import writer_stats

EXAMPLES = int(os.environ.get("STREAMWRITE_PRUNE_EXAMPLES", "200"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _bloom(arrays: list[pa.Array], noise: list[bool]) -> Any:
    """A bloom filter of each container: exact membership, plus false positives."""
    sets = []
    for a in arrays:
        plain = a.cast(a.type.value_type) if pa.types.is_dictionary(a.type) else a
        sets.append(pc.unique(plain.drop_null()))

    def might_contain(literals: pa.Array) -> npt.NDArray[np.bool_]:
        rows = []
        for values, extra in zip(sets, noise, strict=True):
            hit = pc.is_in(literals, value_set=values.cast(literals.type))
            rows.append(np.asarray(hit.to_numpy(zero_copy_only=False), bool) | extra)
        return np.array(rows, bool).reshape(len(sets), len(literals))

    return might_contain


@st.composite
def cases(
    draw: st.DrawFn, types: st.SearchStrategy[pa.DataType] = column_types
) -> tuple[list[pa.Table], Containers]:
    t = draw(types)
    parts = draw(chunks(t))
    sizes = [len(p) for p in parts]
    keys = [
        draw(st.lists(st.one_of(st.none(), st.integers(-3, 3)), min_size=n, max_size=n))
        for n in sizes
    ]
    tables, start = [], 0
    for values, key in zip(parts, keys, strict=True):
        tables.append(
            pa.table(
                {
                    "x": make_array(values, t),
                    "k": pa.array(key, pa.int64()),
                    "row": pa.array(range(start, start + len(values)), pa.int64()),
                }
            )
        )
        start += len(values)
    columns = {}
    for name in ("x", "k"):
        arrays = [tb.column(name).combine_chunks() for tb in tables]
        text = pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
        stats = writer_stats(
            arrays,
            truncate=draw(st.sampled_from([None, 1, 2, 3])) if text and name == "x" else None,
            with_null_count=draw(st.booleans()),
            with_nan_count=draw(st.booleans()),
            value_sets=draw(st.booleans()),
        )
        if draw(st.booleans()):
            noise = [draw(st.booleans()) for _ in arrays]
            stats = ColumnStats(**{**stats.__dict__, "might_contain": _bloom(arrays, noise)})
        if draw(st.booleans()) or name == "x":
            columns[name] = stats
    return tables, Containers(len(tables), columns)


def _never_drops(data: st.DataObject, types: st.SearchStrategy[pa.DataType]) -> None:
    tables, containers = data.draw(cases(types))
    full = pa.concat_tables(tables)
    drawn = data.draw(filters(full.select(["x", "k"])))
    for expr in (drawn, Not(drawn)):  # both polarities: a NOT above exercises can_false
        bound = bind(expr, full.schema)
        truth = to_arrow(bound)
        keep = prune(bound, containers)
        keep_unbound = prune(expr, containers)
        for i, table in enumerate(tables):
            if table.filter(truth).num_rows:
                assert keep[i], (i, bound, table.to_pylist(), containers.columns["x"])
                assert keep_unbound[i], (i, expr, table.to_pylist())


@SETTINGS
@given(st.data())
def test_prune_never_drops_a_matching_container(data: st.DataObject) -> None:
    _never_drops(data, column_types)


@SETTINGS
@given(st.data())
def test_prune_never_drops_floats_with_nan_and_zeros(data: st.DataObject) -> None:
    _never_drops(data, st.sampled_from(FAMILIES[0]))


@SETTINGS
@given(st.data())
def test_prune_never_drops_truncated_strings(data: st.DataObject) -> None:
    _never_drops(data, st.sampled_from([*FAMILIES[2], *FAMILIES[-1]]))


@SETTINGS
@given(st.data())
def test_prune_fragments_never_drops_a_matching_row(data: st.DataObject) -> None:
    tables, _ = data.draw(cases())
    full = pa.concat_tables(tables).combine_chunks()
    num_rows = full.num_rows
    pages = {}
    for name in ("x", "k"):
        cuts = data.draw(st.sets(st.integers(1, max(1, num_rows - 1)), max_size=4))
        first_rows = np.array(sorted({0, *(c for c in cuts if c < num_rows)}), np.int64)
        bounds = [*first_rows.tolist(), num_rows]
        arrays = [
            full.column(name).slice(a, b - a).combine_chunks()
            for a, b in itertools.pairwise(bounds)
        ]
        stats = writer_stats(
            arrays,
            with_null_count=data.draw(st.booleans()),
            with_nan_count=data.draw(st.booleans()),
            value_sets=data.draw(st.booleans()),
        )
        if data.draw(st.booleans()):
            noise = [data.draw(st.booleans()) for _ in arrays]
            stats = ColumnStats(**{**stats.__dict__, "might_contain": _bloom(arrays, noise)})
        pages[name] = (first_rows, stats)
    drawn = bind(data.draw(filters(full.select(["x", "k"]))), full.schema)
    expr = Not(drawn) if data.draw(st.booleans()) else drawn
    ranges = prune_fragments(expr, pages, num_rows)
    matching = full.filter(to_arrow(expr)).column("row").to_pylist()
    mask = ranges.mask(num_rows)
    assert all(mask[r] for r in matching), (expr, ranges, matching)
    # the kept rows, sliced per column, line up: every matching row is read back
    kept = pa.concat_tables(
        [full.slice(s.start, s.stop - s.start) for s in ranges.slices()]
        or [full.schema.empty_table()]
    )
    assert kept.filter(to_arrow(expr)).column("row").to_pylist() == matching


@SETTINGS
@given(st.data())
def test_equality_outside_the_bounds_prunes(data: st.DataObject) -> None:
    t = data.draw(st.sampled_from([pa.int8(), pa.int64(), pa.float64(), pa.string()]))
    parts = data.draw(chunks(t))
    arrays = [make_array(p, t) for p in parts]
    stats = writer_stats(arrays)
    schema = pa.schema([("x", t)])
    for array in arrays:
        for value in array.drop_null().to_pylist():
            expr = bind([("x", "==", value)], schema)
            keep = prune(expr, Containers(len(arrays), {"x": stats}))
            for i, other in enumerate(arrays):
                lo, hi = stats.min[i].as_py(), stats.max[i].as_py()
                if value in other.to_pylist():
                    assert keep[i]
                elif lo is not None and value == value and (value < lo or value > hi):
                    assert not keep[i], (value, lo, hi)  # outside [min, max]: pruned
                elif lo is None and other.null_count == len(other):
                    assert not keep[i]  # all null: no comparison can match


def test_row_ranges_algebra() -> None:
    a = RowRanges.from_ranges([0, 10, 5], [3, 12, 8])
    b = RowRanges.from_ranges([2, 7], [6, 11])
    assert a.slices() == [slice(0, 3), slice(5, 8), slice(10, 12)]
    assert a.intersect(b).slices() == [slice(2, 3), slice(5, 6), slice(7, 8), slice(10, 11)]
    assert a.union(b).slices() == [slice(0, 12)]
    assert a.num_rows == 8
    assert RowRanges.from_ranges([0, 3], [3, 5]).slices() == [slice(0, 5)]
    assert RowRanges.all(0).num_rows == 0
    assert RowRanges.empty().union(a) == a


@SETTINGS
@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=6),
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=6),
)
def test_row_ranges_match_sets(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> None:
    def ranges(pairs: list[tuple[int, int]]) -> RowRanges:
        return RowRanges.from_ranges([p[0] for p in pairs], [p[1] for p in pairs])

    def rows(pairs: list[tuple[int, int]]) -> set[int]:
        return {r for lo, hi in pairs for r in range(lo, hi)}

    ra, rb = ranges(a), ranges(b)
    assert set(np.flatnonzero(ra.mask(41))) == rows(a)
    assert set(np.flatnonzero(ra.intersect(rb).mask(41))) == rows(a) & rows(b)
    assert set(np.flatnonzero(ra.union(rb).mask(41))) == rows(a) | rows(b)
    assert ra.num_rows == len(rows(a))
    assert np.all(ra.starts[1:] > ra.stops[:-1])
