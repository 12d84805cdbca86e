"""Row ranges, and page-level pruning that keeps columns aligned.

A :class:`RowRanges` is a sorted list of disjoint, non-adjacent half-open ranges
``[starts[i], stops[i])`` of row indexes (int64 arrays; adjacent ranges are merged).

Page pruning (parquet-java GH-3747: per-column row selections must stay aligned)::

    boundaries = {0, num_rows} | first_row_index of every page of every filtered column
    fragments  = [b[k], b[k+1])          each lies inside exactly one page of every column
    stats(fragment, column) = stats of the page holding it; counts become per-fragment:
        null_count = 0 if the page has none, = rows if the page is all null, else unknown
        nan_count  likewise; num_values = the fragment's rows
    result     = the rows of the fragments :func:`prune` keeps

Bounds, exactness, value sets and bloom filters of a page hold for every part of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from streamwrite.errors import ConfigError
from streamwrite.predicate.expr import Expr
from streamwrite.predicate.prune import prune
from streamwrite.predicate.stats import ColumnStats, Containers

__all__ = ["RowRanges", "prune_fragments"]

Ints = npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class RowRanges:
    """Sorted disjoint ``[start, stop)`` row ranges (module docstring)."""

    starts: Ints
    stops: Ints

    @classmethod
    def from_ranges(cls, starts: npt.ArrayLike, stops: npt.ArrayLike) -> RowRanges:
        """Ranges from any ``[start, stop)`` pairs (unsorted, overlapping or empty ones too).

        Returns:
            The normalised RowRanges covering exactly the union of the pairs.

        Raises:
            ConfigError: the two arrays differ in length.
        """
        lo = np.asarray(starts, np.int64).ravel()
        hi = np.asarray(stops, np.int64).ravel()
        if lo.shape != hi.shape:
            raise ConfigError(f"RowRanges got {lo.size} starts and {hi.size} stops.")
        keep = hi > lo
        return _coverage([(lo[keep], hi[keep])], 1)

    @classmethod
    def all(cls, num_rows: int) -> RowRanges:
        """``[0, num_rows)`` (empty when ``num_rows`` is 0)."""
        return cls.from_ranges([0], [num_rows])

    @classmethod
    def empty(cls) -> RowRanges:
        """No rows."""
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64))

    def intersect(self, other: RowRanges) -> RowRanges:
        """The rows in both."""
        return _coverage([(self.starts, self.stops), (other.starts, other.stops)], 2)

    def union(self, other: RowRanges) -> RowRanges:
        """The rows in either."""
        return _coverage([(self.starts, self.stops), (other.starts, other.stops)], 1)

    @property
    def num_rows(self) -> int:
        """The number of rows covered."""
        return int((self.stops - self.starts).sum())

    def slices(self) -> list[slice]:
        """The ranges as Python slices (``table.slice(s.start, s.stop - s.start)`` each)."""
        return [slice(int(a), int(b)) for a, b in zip(self.starts, self.stops, strict=True)]

    def mask(self, num_rows: int) -> npt.NDArray[np.bool_]:
        """A bool per row of ``[0, num_rows)``, True inside the ranges."""
        delta = np.zeros(num_rows + 1, np.int64)
        np.add.at(delta, np.minimum(self.starts, num_rows), 1)
        np.add.at(delta, np.minimum(self.stops, num_rows), -1)
        return np.cumsum(delta[:-1]) > 0

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RowRanges):
            return NotImplemented
        return np.array_equal(self.starts, other.starts) and np.array_equal(self.stops, other.stops)

    def __hash__(self) -> int:
        return hash((self.starts.tobytes(), self.stops.tobytes()))

    def __repr__(self) -> str:
        pairs = ", ".join(f"[{a}, {b})" for a, b in zip(self.starts, self.stops, strict=True))
        return f"RowRanges({pairs})"


def _coverage(sets: list[tuple[Ints, Ints]], needed: int) -> RowRanges:
    """The ranges covered by at least ``needed`` of ``sets`` (each sorted and disjoint)."""
    points = np.concatenate([p for lo, hi in sets for p in (lo, hi)])
    deltas = np.concatenate(
        [d for lo, hi in sets for d in (np.ones(lo.size, np.int64), -np.ones(hi.size, np.int64))]
    )
    if points.size == 0:
        return RowRanges.empty()
    positions, inverse = np.unique(points, return_inverse=True)
    per_position = np.zeros(positions.size, np.int64)
    np.add.at(per_position, inverse, deltas)
    covered = np.cumsum(per_position)[:-1] >= needed  # region [positions[k], positions[k+1])
    before = np.concatenate([[False], covered[:-1]])
    after = np.concatenate([covered[1:], [False]])
    starts = positions[:-1][covered & ~before]
    stops = positions[1:][covered & ~after]
    return RowRanges(starts.astype(np.int64), stops.astype(np.int64))


def prune_fragments(
    expr: Expr, pages: Mapping[str, tuple[npt.ArrayLike, ColumnStats]], num_rows: int
) -> RowRanges:
    """The rows of the page fragments that might hold a row where ``expr`` is TRUE.

    Args:
        expr: a bound expression.
        pages: per column, ``(first_row_index of each page, stats of the pages)``; a column
            absent is unknown.
        num_rows: the rows of the row group.

    Returns:
        The rows to read: every column sliced to them stays aligned.

    Raises:
        ConfigError: a column's first page does not start at row 0, or its first row indexes
            are not increasing.
    """
    firsts = {}
    for column, (first_rows, _) in pages.items():
        rows = np.asarray(first_rows, np.int64)
        if rows.size == 0 or rows[0] != 0 or np.any(np.diff(rows) <= 0):
            raise ConfigError(
                f"The pages of column {column!r} start at rows {rows.tolist()[:8]}: the first "
                "must be 0 and each must be above the previous."
            )
        firsts[column] = rows
    if num_rows <= 0:
        return RowRanges.empty()
    bounds = np.unique(np.concatenate([[0, num_rows], *firsts.values()]))
    bounds = bounds[(bounds >= 0) & (bounds <= num_rows)]
    starts, stops = bounds[:-1], bounds[1:]
    lengths = stops - starts
    columns = {
        column: _fragment_stats(firsts[column], stats, starts, lengths, num_rows)
        for column, (_, stats) in pages.items()
    }
    keep = prune(expr, Containers(starts.size, columns))
    return RowRanges.from_ranges(starts[keep], stops[keep])


def _fragment_stats(
    first_rows: Ints, stats: ColumnStats, starts: Ints, lengths: Ints, num_rows: int
) -> ColumnStats:
    page = np.searchsorted(first_rows, starts, side="right") - 1
    page_rows = np.diff(np.append(first_rows, max(num_rows, int(first_rows[-1]))))
    page_values = page_rows if stats.num_values is None else np.asarray(stats.num_values)
    take = pa.array(page, pa.int64())
    null_count = _part_count(stats.null_count, page_values, page, lengths)
    nan_count = None
    if stats.nan_count is not None:
        nulls = (
            None if stats.null_count is None else stats.null_count.to_numpy(zero_copy_only=False)
        )
        nan_room = page_values if nulls is None else page_values - np.nan_to_num(nulls, nan=-1)
        nan_count = _part_count(stats.nan_count, nan_room, page, lengths)
    might = stats.might_contain

    def might_contain(literals: pa.Array) -> npt.NDArray[np.bool_]:
        assert might is not None
        return np.asarray(might(literals), bool)[page]

    return ColumnStats(
        num_values=lengths.astype(np.int64),
        null_count=null_count,
        min=None if stats.min is None else stats.min.take(take),
        max=None if stats.max is None else stats.max.take(take),
        min_exact=None if stats.min_exact is None else np.asarray(stats.min_exact)[page],
        max_exact=None if stats.max_exact is None else np.asarray(stats.max_exact)[page],
        nan_count=nan_count,
        value_sets=None if stats.value_sets is None else [stats.value_sets[p] for p in page],
        might_contain=None if might is None else might_contain,
    )


def _part_count(
    counts: pa.Array | None, room: npt.ArrayLike, page: Ints, lengths: Ints
) -> pa.Array | None:
    """A page's count of something, per fragment: 0 if none, all if full, else unknown."""
    if counts is None:
        return None
    values = counts.cast(pa.float64()).to_numpy(zero_copy_only=False)[page]
    full = np.asarray(room, np.float64)[page]
    result = np.where(values == 0, 0.0, np.where(values >= full, lengths, np.nan))
    return pa.array(result, pa.float64(), from_pandas=True).cast(pa.int64())
