"""Executing a :class:`~streamwrite.reader.pruning.ReadPlan`: reading only what it keeps.

Per row group read, every column read (asked for, or needed by the filter) is decoded either
whole or page by page (its dictionary page and the data pages holding a kept row:
:func:`workers.decode_pages.decode_pages`), then cut to the plan's row ranges, so all columns
stay aligned row for row::

    kept rows of column c = decoded rows of c  where  mask[global row of each decoded row]
    mask                  = the plan's row ranges over [0, num_rows)

Then the filter is applied to those rows (``table.filter(to_arrow(expr))``, the truth every
pruned read equals) and the columns only the filter needed are dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from streamwrite.arrow.schema import ColumnSpec
from streamwrite.errors import CorruptFileError
from streamwrite.predicate import to_arrow
from streamwrite.reader.page_index import ChunkPages
from streamwrite.reader.plan import ParquetFile, ReadPlan, RowGroupPlan
from streamwrite.reader.selection import project
from workers.decode import DecodedChunk
from workers.decode_pages import PageSlice, decode_pages

__all__ = ["batches", "filtered_tables", "read_planned_row_group"]


def _page_rows(located: ChunkPages, selected: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
    """The row group row of every row of the pages ``selected``, in order."""
    starts = located.first_rows[selected]
    counts = located.page_rows[selected]
    offsets = np.cumsum(counts) - counts
    return np.repeat(starts - offsets, counts) + np.arange(int(counts.sum()), dtype=np.int64)


def _inside(
    rows: npt.NDArray[np.int64], starts: npt.NDArray[np.int64], stops: npt.NDArray[np.int64]
) -> pa.Array:
    """A bool per row of ``rows`` (sorted): inside one of the ranges ``[starts, stops)``."""
    at = np.searchsorted(starts, rows, side="right") - 1
    inside = (at >= 0) & (rows < stops[np.maximum(at, 0)])
    return pa.array(inside)


def _decode_selected(
    pf: ParquetFile, i: int, spec: ColumnSpec, located: ChunkPages, selected: npt.NDArray[np.intp]
) -> DecodedChunk:
    """Decode the dictionary page and the data pages ``selected`` of one chunk."""
    meta, where = pf._typed_chunk_meta(i, spec)
    cipher = pf._chunk_decryptor(i, spec.index)
    start, _ = pf._chunk_range(i, spec)
    prefix = pf.read_bytes(start, int(located.offsets[0]) - start)
    offsets = located.offsets[selected]
    ends = offsets + located.sizes[selected]
    rows = located.page_rows[selected]
    cuts = np.flatnonzero(offsets[1:] != ends[:-1]) + 1  # runs of adjacent pages: one read each
    slices: list[PageSlice] = []
    for run in np.split(np.arange(selected.shape[0]), cuts):
        if run.shape[0] == 0:
            continue
        base = int(offsets[run[0]])
        data = pf.read_bytes(base, int(ends[run[-1]]) - base)
        for k in run:
            lo, hi = int(offsets[k]) - base, int(ends[k]) - base
            slices.append(PageSlice(data[lo:hi], int(offsets[k]), int(selected[k]), int(rows[k])))
    return decode_pages(
        prefix,
        start,
        slices,
        meta,
        type_length=spec.type_length,
        max_definition_level=spec.max_definition_level,
        verify_checksums=pf.verify_checksums,
        max_decompressed_page_size=pf.max_decompressed_page_size,
        where=where,
        cipher=cipher,
        dictionary_first=meta.dictionary_page_offset == start,
    )


def read_planned_row_group(
    pf: ParquetFile, plan: ReadPlan, rg: RowGroupPlan, apply_filter: bool = True
) -> pa.Table:
    """The rows of row group ``rg`` the plan reads, filtered, with the plan's columns
    (without ``apply_filter``: the rows of its kept ranges with every column read, the
    filter's too, for a caller that filters many row groups at once).

    Raises:
        CorruptFileError, EncryptionError, LimitError...: as ``ParquetFile.read_row_group``.
    """
    nodes = pf._select(plan.read_columns)
    schema = pa.schema([node.field for node in nodes])
    if rg.skipped_by is not None:
        empty = schema.empty_table()
        return _output(pf, plan, empty) if apply_filter else empty
    i = rg.index
    partial = rg.num_rows_read < rg.num_rows
    starts, stops = rg._ranges.starts, rg._ranges.stops
    arrays = []
    for node in nodes:
        spec = None if node.leaf is None else pf._parquet_schema.columns[node.leaf]
        chosen = None if spec is None else rg._pages.get(spec.name)
        if spec is not None and chosen is not None:  # pages are chosen only when rows are cut
            located, selected = chosen
            array = pf._to_arrow(_decode_selected(pf, i, spec, located, selected), spec, i)
            array = array.filter(_inside(_page_rows(located, selected), starts, stops))
        else:
            # a flat column without an OffsetIndex, or a nested field (assembled from whole
            # chunks: records are cut after assembly)
            array = pf._read_field(node, i)
            if partial:
                array = array.filter(_inside(np.arange(len(array)), starts, stops))
        arrays.append(array)
    lengths = {len(array) for array in arrays}
    if len(lengths) > 1:
        raise CorruptFileError(
            f"The columns of row group {i} have different row counts {sorted(lengths)} in the "
            "rows read.",
            pf.footer_offset,
        )
    table = pa.Table.from_arrays(arrays, schema=schema)
    for name, value in plan._constants.items():
        table = table.append_column(name, pa.repeat(value, table.num_rows))
    if not apply_filter:
        return table
    if plan._expr is not None:
        table = table.filter(to_arrow(plan._expr, table.schema))
    return _output(pf, plan, table)


def _output(pf: ParquetFile, plan: ReadPlan, table: pa.Table) -> pa.Table:
    """The plan's columns of ``table``, each struct cut to the children asked for (the read
    may have taken more for the filter)."""
    asked = plan.read_columns[: len(plan.read_columns) - plan._num_filter_columns]
    nodes = pf._select(asked)
    arrays = [project(table.column(node.field.name), node.field.type) for node in nodes]
    return pa.Table.from_arrays(arrays, schema=pa.schema([node.field for node in nodes]))


def filtered_tables(
    pf: ParquetFile, plan: ReadPlan, apply_filter: bool = True
) -> Iterator[pa.Table]:
    """The filtered rows of each row group the plan reads, one table each, in plan order
    (``apply_filter``: see :func:`read_planned_row_group`)."""
    for rg in plan.row_groups:
        if rg.skipped_by is None:
            yield read_planned_row_group(pf, plan, rg, apply_filter)


def batches(tables: Iterable[pa.Table], batch_size: int) -> Iterator[pa.RecordBatch]:
    """Record batches of ``batch_size`` rows (the last may be shorter) from ``tables``,
    holding one table and one batch in memory at a time."""
    pending: list[pa.Table] = []  # slices of at most two tables, < batch_size rows
    pending_rows = 0
    for table in tables:
        offset = 0
        while offset < table.num_rows:
            take = min(batch_size - pending_rows, table.num_rows - offset)
            pending.append(table.slice(offset, take))
            pending_rows += take
            offset += take
            if pending_rows == batch_size:
                yield _one_batch(pending)
                pending, pending_rows = [], 0
    if pending_rows:
        yield _one_batch(pending)


def _one_batch(parts: list[pa.Table]) -> pa.RecordBatch:
    """The rows of ``parts`` as one contiguous record batch."""
    return pa.concat_tables(parts).combine_chunks().to_batches()[0]
