"""Planning a filtered read of a ParquetFile: what need not be read, at each level, and why.

``ParquetFile.plan(filters, columns)`` runs the levels in this order, each on what the previous
kept (three-valued: anything unknown means "might match", :mod:`streamwrite.predicate`)::

    statistics       footer Statistics of every row group (decrypted column metadata too),
                     one vectorised prune over all row groups
    embedded_index   the file's embedded index (``streamwrite.reader.embedded``): per row
                     group value sets / time bounds, when the file has one
    bloom_filter     the SBBF filters of ==/IN columns, read only for the row groups left
    page_index       ColumnIndex + OffsetIndex of the filter's columns, and the embedded time
                     index, -> row ranges (page fragments of all columns, kept aligned); a row
                     group whose ranges are empty is skipped

then, for every column read (the columns asked for and the filter's), the pages holding a kept
row: the whole chunk when every row is kept or the chunk has no OffsetIndex, else its
dictionary page and those data pages. The plan is what the read does: ``bytes_read`` is the page
bytes it reads plus the index bytes planning read (bloom filters, page indexes, embedded index).
The filter itself is always applied to the rows read (``to_arrow``): pruning only decides what
need not be read.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from streamwrite.arrow.schema import ColumnSpec
from streamwrite.format.enums import PageType
from streamwrite.predicate import ColumnStats, Containers, Expr, bind, prune
from streamwrite.predicate import columns as filter_columns
from streamwrite.predicate.ranges import RowRanges, prune_fragments
from streamwrite.reader.bloom_probe import BloomProbe
from streamwrite.reader.page_index import ChunkPages, read_column_index, read_offset_index
from streamwrite.reader.plan import ParquetFile, ReadPlan, RowGroupPlan, SkipReason
from streamwrite.reader.statistics import chunk_column_stats, page_column_stats

__all__ = ["plan_read"]

_DATA_PAGES = (PageType.DATA_PAGE, PageType.DATA_PAGE_V2)


def _chunk_num_pages(pf: ParquetFile, i: int, spec: ColumnSpec, pages: ChunkPages | None) -> int:
    if pages is not None:
        return pages.num_pages
    stats = pf._column_metadata(i, spec.index).encoding_stats
    if stats:
        return sum(s.count or 0 for s in stats if s.page_type in _DATA_PAGES)
    return 1


def _one_page_with_full_statistics(pf: ParquetFile, i: int, spec: ColumnSpec) -> bool:
    """The chunk's ``encoding_stats`` list one data page, and its statistics have a min, a
    max and a null count (what a one-page ColumnIndex could add)."""
    meta = pf._column_metadata(i, spec.index)
    stats, pages = meta.statistics, meta.encoding_stats
    if not pages or sum(p.count or 0 for p in pages if p.page_type in _DATA_PAGES) != 1:
        return False
    return (
        stats is not None
        and stats.null_count is not None
        and stats.min_value is not None
        and stats.max_value is not None
    )


def _take(stats: ColumnStats, keep: npt.NDArray[np.intp]) -> ColumnStats:
    """``stats`` of the containers ``keep`` only."""
    indices = pa.array(keep, pa.int64())

    def arrow(a: Any) -> Any:
        return None if a is None else a.take(indices)

    def numpy(a: Any) -> Any:
        return None if a is None else np.asarray(a)[keep]

    return replace(
        stats,
        num_values=numpy(stats.num_values),
        null_count=arrow(stats.null_count),
        min=arrow(stats.min),
        max=arrow(stats.max),
        min_exact=numpy(stats.min_exact),
        max_exact=numpy(stats.max_exact),
        nan_count=arrow(stats.nan_count),
        value_sets=None if stats.value_sets is None else [stats.value_sets[k] for k in keep],
        might_contain=None,
    )


class _Planner:
    def __init__(
        self,
        pf: ParquetFile,
        expr: Expr | None,
        specs: list[ColumnSpec],
        row_groups: list[int],
        constants: Mapping[str, pa.Scalar],
    ) -> None:
        self.constants = constants
        self.pf = pf
        self.expr = expr
        self.specs = specs
        self.rgs = np.asarray(row_groups, dtype=np.intp)
        thrift_rgs = pf.thrift_metadata.row_groups or []
        self.num_rows = np.array([thrift_rgs[i].num_rows or 0 for i in row_groups], np.int64)
        self.skipped: list[SkipReason | None] = [None] * len(row_groups)
        self.index_bytes = 0
        # A leaf under a list or map is never a filter column (a filter names one value per
        # row): only flat columns and struct leaves prune.
        self.filter_specs = (
            []
            if expr is None
            else [
                s for s in specs if s.name in filter_columns(expr) and s.max_repetition_level == 0
            ]
        )
        self.embedded: Any = None

    def alive(self) -> npt.NDArray[np.intp]:
        return np.array([k for k, r in enumerate(self.skipped) if r is None], dtype=np.intp)

    def cut(
        self, keep: npt.NDArray[np.bool_], positions: Iterable[int], reason: SkipReason
    ) -> None:
        for k, kept in zip(positions, keep, strict=True):
            if not kept:
                self.skipped[k] = reason

    def footer_containers(self) -> Containers:
        pf = self.pf
        stats = {
            spec.name: chunk_column_stats(
                pf.thrift_metadata,
                spec,
                [pf._typed_chunk_meta(int(i), spec)[0] for i in self.rgs],
                self.num_rows,
            )
            for spec in self.filter_specs
        }
        for name, value in self.constants.items():
            stats[name] = _constant_stats(value, self.num_rows)
        return Containers(len(self.rgs), stats)

    def row_group_levels(self) -> Containers | None:
        if self.expr is None or len(self.rgs) == 0:
            return None
        footer = self.footer_containers()
        self.cut(prune(self.expr, footer), range(len(self.rgs)), "statistics")
        self.embedded = _embedded_index(self.pf)
        if self.embedded is not None:
            alive = self.alive()
            containers = self.embedded.containers()
            sub = Containers(
                len(alive),
                {name: _take(s, self.rgs[alive]) for name, s in containers.columns.items()},
            )
            self.cut(prune(self.expr, sub), alive, "embedded_index")
        alive = self.alive()
        probes = {
            spec.name: BloomProbe(self.pf, spec, [int(i) for i in self.rgs[alive]])
            for spec in self.filter_specs
        }
        probes = {name: p for name, p in probes.items() if p.has_filters()}
        if probes and len(alive):
            sub = Containers(
                len(alive),
                {
                    name: replace(
                        _take(footer.columns[name], alive),
                        might_contain=probes.get(name),
                    )
                    for name in footer.columns
                },
            )
            self.cut(prune(self.expr, sub), alive, "bloom_filter")
            self.index_bytes += sum(p.bytes_read for p in probes.values())
        return footer

    def row_ranges(self, k: int) -> tuple[RowRanges, dict[str, ChunkPages]]:
        """The rows of row group ``self.rgs[k]`` to read, and the OffsetIndexes read."""
        i = int(self.rgs[k])
        num_rows = int(self.num_rows[k])
        everything = RowRanges.all(num_rows)
        offset_indexes: dict[str, ChunkPages] = {}
        if self.expr is None:
            return everything, offset_indexes
        pages: dict[str, tuple[npt.NDArray[np.int64], ColumnStats]] = {}
        if all(_one_page_with_full_statistics(self.pf, i, spec) for spec in self.filter_specs):
            # One page per filter column and footer statistics with bounds and a null count:
            # its page index says no more than they did (the row group is kept).
            return self._embedded_ranges(i, everything, num_rows), offset_indexes
        for spec in self.filter_specs:
            where = f"Column {spec.name!r} of row group {i}"
            chunk = self.pf._chunk(i, spec.index)
            if chunk.column_index_offset is None or chunk.offset_index_offset is None:
                continue
            located = read_offset_index(
                self.pf, i, spec.index, num_rows, self.pf._chunk_range(i, spec), where
            )
            found = read_column_index(self.pf, i, spec.index, where)
            if located is None or found is None:
                continue
            self.index_bytes += (chunk.offset_index_length or 0) + (chunk.column_index_length or 0)
            offset_indexes[spec.name] = located
            index, offset = found
            stats = page_column_stats(
                self.pf.thrift_metadata,
                spec,
                index,
                located.first_rows,
                num_rows,
                where,
                offset,
            )
            pages[spec.name] = (located.first_rows, stats)
        ranges = everything
        if pages:
            for name, value in self.constants.items():
                first = np.zeros(1, np.int64)
                pages[name] = (first, _constant_stats(value, np.array([num_rows], np.int64)))
            ranges = prune_fragments(self.expr, pages, num_rows)
        return self._embedded_ranges(i, ranges, num_rows), offset_indexes

    def _embedded_ranges(self, i: int, ranges: RowRanges, num_rows: int) -> RowRanges:
        """``ranges`` of row group ``i`` narrowed by the embedded time index."""
        assert self.expr is not None
        if self.embedded is not None:
            for spec in self.filter_specs:
                fragments = self.embedded.fragments(spec.name, i)
                if fragments is not None:
                    ranges = ranges.intersect(
                        prune_fragments(self.expr, {spec.name: fragments}, num_rows)
                    )
        return ranges

    def row_group_plan(self, k: int) -> RowGroupPlan:
        pf, i = self.pf, int(self.rgs[k])
        num_rows = int(self.num_rows[k])
        reason = self.skipped[k]
        ranges, offset_indexes = (RowRanges.empty(), {}) if reason else self.row_ranges(k)
        if reason is None and ranges.num_rows == 0 and num_rows > 0:
            reason = "page_index"
        num_pages = pages_read = bytes_read = 0
        chosen: dict[str, tuple[ChunkPages, npt.NDArray[np.intp]]] = {}
        partial = ranges.num_rows < num_rows
        for spec in self.specs:
            # A nested field is assembled from whole chunks of all its leaves, then cut to
            # the kept records: its leaves' pages need not start at the same rows.
            located = None if spec.is_nested else offset_indexes.get(spec.name)
            if reason is None and partial and located is None and not spec.is_nested:
                where = f"Column {spec.name!r} of row group {i}"
                located = read_offset_index(
                    pf, i, spec.index, num_rows, pf._chunk_range(i, spec), where
                )
                self.index_bytes += pf._chunk(i, spec.index).offset_index_length or 0
            count = _chunk_num_pages(pf, i, spec, located)
            num_pages += count
            if reason is not None or pf._column_metadata(i, spec.index).num_values == 0:
                continue
            if partial and located is not None:
                selected = located.pages_of(ranges.starts, ranges.stops)
                chosen[spec.name] = (located, selected)
                start, _ = pf._chunk_range(i, spec)
                pages_read += int(selected.shape[0])
                bytes_read += int(located.offsets[0]) - start + int(located.sizes[selected].sum())
            else:
                pages_read += count
                bytes_read += pf._chunk_range(i, spec)[1]
        return RowGroupPlan(
            i,
            num_rows,
            reason,
            num_pages,
            pages_read,
            bytes_read,
            RowRanges.empty() if reason else ranges,
            chosen,
        )


def _embedded_index(pf: ParquetFile) -> Any:
    """The file's embedded index (``streamwrite.reader.embedded``), or None.

    ``streamwrite.reader.embedded.read_embedded_index(pf) -> EmbeddedIndex | None``, with
    ``containers() -> Containers`` (one container per row group of the file) and
    ``fragments(column, row_group) -> (first_rows, ColumnStats) | None``. Imported when called:
    that module imports :mod:`streamwrite.reader.file`, which imports this one.
    """
    try:
        embedded = importlib.import_module("streamwrite.reader.embedded")
    except ModuleNotFoundError:
        return None
    return embedded.read_embedded_index(pf)


def plan_read(
    pf: ParquetFile,
    filters: object,
    columns: Sequence[str] | None = None,
    row_groups: Sequence[int] | None = None,
    constants: Mapping[str, pa.Scalar] | None = None,
) -> ReadPlan:
    """Plan a filtered read (module docstring).

    Args:
        pf: The file.
        filters: Anything :func:`streamwrite.predicate.parse_filters` takes, or None.
        columns: The columns to return (default all).
        row_groups: The row groups to consider, in this order (default all).
        constants: Columns that are not in the file but have one value for all of its rows
            (a directory's Hive partition values), which the filter may use.

    Returns:
        The plan.

    Raises:
        SchemaError: ``columns`` or the filter names a column the file does not have.
        ConfigError: The filter cannot be represented, or a literal does not compare with its
            column.
        CorruptFileError, EncryptionError: A damaged or undecryptable statistic, bloom filter
            or page index.
    """
    selected = pf._select(columns)
    out = pf._columns(columns)
    constants = dict(constants or {})
    schema = pf.schema_arrow
    for name, value in constants.items():
        schema = schema.append(pa.field(name, value.type))
    expr = None if filters is None else bind(filters, schema)
    extra: list[ColumnSpec] = []
    extra_names: list[str] = []
    if expr is not None:
        names = {spec.name for spec in out} | set(constants)
        names |= {node.field.name for node in selected}
        extra_names = sorted(filter_columns(expr) - names, key=_order(pf))
        extra = pf._columns(extra_names)
    indexes = list(range(pf.num_row_groups) if row_groups is None else row_groups)
    used = {} if expr is None else {k: v for k, v in constants.items() if k in filter_columns(expr)}
    planner = _Planner(pf, expr, out + extra, indexes, used)
    planner.row_group_levels()
    plans = tuple(planner.row_group_plan(k) for k in range(len(indexes)))
    asked = [node.field.name for node in selected] if columns is None else list(columns)
    return ReadPlan(
        tuple(node.field.name for node in selected),
        tuple(asked + extra_names),
        plans,
        planner.index_bytes,
        expr,
        used,
        len(extra_names),
    )


def _constant_stats(value: pa.Scalar, num_rows: npt.NDArray[np.int64]) -> ColumnStats:
    """One value in every row of each container."""
    n = num_rows.shape[0]
    if not value.is_valid:
        return ColumnStats(num_values=num_rows, null_count=pa.array(num_rows, pa.int64()))
    bound = pa.array([value.as_py()] * n, value.type)
    nan = None
    if pa.types.is_floating(value.type):
        nan = pa.array(num_rows * bool(value.as_py() != value.as_py()), pa.int64())
    return ColumnStats(
        num_values=num_rows,
        null_count=pa.array(np.zeros(n, np.int64)),
        min=bound,
        max=bound,
        nan_count=nan,
    )


def _order(pf: ParquetFile) -> Any:
    position = {spec.name: n for n, spec in enumerate(pf._parquet_schema.columns)}
    return lambda name: position.get(name, len(position))
