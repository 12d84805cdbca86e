"""Helpers of the predicate tests: statistics of real data, computed as a Parquet writer does."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from streamwrite.predicate import ColumnStats, Containers, Expr, prune, to_arrow


def _plain(array: pa.Array) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = array.cast(array.type.value_type)
    return array


def writer_stats(
    chunks: list[pa.Array],
    *,
    truncate: int | None = None,
    with_null_count: bool = True,
    with_nan_count: bool = True,
    value_sets: bool = False,
) -> ColumnStats:
    """The statistics a Parquet writer records for ``chunks`` (one container each).

    NaN is left out of min/max (an all-NaN or all-null chunk has none); string/binary bounds are
    truncated to ``truncate`` bytes: the min cut (a lower bound), the max cut and its last byte
    incremented (an upper bound), both flagged inexact.
    """
    plain = [_plain(c) for c in chunks]
    vtype = plain[0].type
    mins: list[object] = []
    maxs: list[object] = []
    min_exact, max_exact = [], []
    for chunk in plain:
        values = chunk
        if pa.types.is_floating(vtype):
            values = pc.filter(chunk, pc.invert(pc.fill_null(pc.is_nan(chunk), True)))
        values = values.drop_null()
        if len(values) == 0:
            mins.append(None)
            maxs.append(None)
            min_exact.append(True)
            max_exact.append(True)
            continue
        low, high = pc.min_max(values).values()
        low_py, high_py = low.as_py(), high.as_py()
        low_exact = high_exact = True
        if truncate is not None and isinstance(low_py, str | bytes):
            raw_low = low_py.encode() if isinstance(low_py, str) else low_py
            raw_high = high_py.encode() if isinstance(high_py, str) else high_py
            if len(raw_low) > truncate:
                raw_low, low_exact = raw_low[:truncate], False
            if len(raw_high) > truncate:
                cut = raw_high[:truncate].rstrip(b"\xff")
                if cut:
                    raw_high, high_exact = cut[:-1] + bytes([cut[-1] + 1]), False
            # stats of a string column stay valid UTF-8 only when the cut is; else go binary
            low_py, high_py = raw_low, raw_high
        mins.append(low_py)
        maxs.append(high_py)
        min_exact.append(low_exact)
        max_exact.append(high_exact)
    bound_type = vtype
    if truncate is not None and (pa.types.is_string(vtype) or pa.types.is_large_string(vtype)):
        bound_type = pa.binary()
    num_values = np.array([len(c) for c in plain], np.int64)
    nulls = pa.array([c.null_count for c in plain], pa.int64()) if with_null_count else None
    nans = None
    if pa.types.is_floating(vtype) and with_nan_count:
        nans = pa.array(
            [int(pc.sum(pc.fill_null(pc.is_nan(c), False)).as_py() or 0) for c in plain],
            pa.int64(),
        )
    return ColumnStats(
        num_values=num_values,
        null_count=nulls,
        min=pa.array(mins, bound_type),
        max=pa.array(maxs, bound_type),
        min_exact=np.array(min_exact),
        max_exact=np.array(max_exact),
        nan_count=nans,
        value_sets=[pc.unique(c.drop_null()) for c in plain] if value_sets else None,
    )


def parquet_containers(path: str) -> Containers:
    """Row-group containers from the footer statistics pyarrow wrote to ``path``."""
    meta = pq.ParquetFile(path).metadata
    schema = pq.read_schema(path)
    columns = {}
    for j, name in enumerate(schema.names):
        vtype = schema.field(name).type
        num_values, nulls, mins, maxs = [], [], [], []
        for i in range(meta.num_row_groups):
            chunk = meta.row_group(i).column(j)
            stats = chunk.statistics
            num_values.append(meta.row_group(i).num_rows)
            has = stats is not None and stats.has_min_max
            mins.append(stats.min if has else None)
            maxs.append(stats.max if has else None)
            nulls.append(stats.null_count if stats is not None and stats.has_null_count else None)
        columns[name] = ColumnStats(
            num_values=np.array(num_values, np.int64),
            null_count=pa.array(nulls, pa.int64()),
            min=pa.array(mins, vtype),
            max=pa.array(maxs, vtype),
        )
    return Containers(meta.num_row_groups, columns)


def pruned_read(table_chunks: list[pa.Table], expr: Expr, containers: Containers) -> pa.Table:
    """The kept containers' rows filtered with ``to_arrow(expr)``."""
    keep = prune(expr, containers)
    kept = [t for t, k in zip(table_chunks, keep, strict=True) if k]
    schema = table_chunks[0].schema
    return pa.concat_tables(kept).filter(to_arrow(expr)) if kept else schema.empty_table()
