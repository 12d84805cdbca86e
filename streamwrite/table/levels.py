"""Containers of the table-level pruning: partitions by time range, segments lacking columns.

A partition ``<ts>_<period>=<value>`` holds the rows whose designated timestamp ``t`` (UTC, in
the column's unit) has ``start <= t < start + 1 period``; as a container of the timestamp
column::

    min = start, max = start + 1 period - 1 unit     both inexact (no value proven present)
    null_count = 0                                    every row has a timestamp

A segment written before ``Table.add_columns`` lacks the added columns: as one container,
those columns are all null (``null_count = num_values = rows``, no bounds, no NaN).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa

from streamwrite.layout.partitioning import PARTITION_BY
from streamwrite.predicate import ColumnStats, Containers

__all__ = ["all_null", "partition_containers"]


def partition_containers(
    names: Sequence[str], timestamp: str | None, partition_by: str | None, schema: pa.Schema
) -> Containers | None:
    """Returns: each partition's time range ``[start, end)`` as a container of the designated
    timestamp (``names``: partition directory names; None: the table is not partitioned). A
    name that is not of this partitioning (a format-2 table's bare value...) is unknown."""
    if timestamp is None or partition_by is None or not names:
        return None
    ts_type = schema.field(timestamp).type
    code = PARTITION_BY[partition_by]
    values = [name.partition("=")[2] or "NaT" for name in names]
    try:  # every name at once; one that does not parse: each alone
        periods = np.array(values, dtype=f"datetime64[{code}]")
    except ValueError:
        periods = np.array([_period(value, code) for value in values], f"datetime64[{code}]")
    mask = np.isnat(periods)  # not a name of this table's partitioning: nothing known
    unit = f"datetime64[{ts_type.unit}]"
    starts = np.where(mask, 0, periods.astype(unit).astype(np.int64))
    ends = np.where(mask, 0, (periods + 1).astype(unit).astype(np.int64) - 1)
    stats = ColumnStats(
        num_values=None,
        null_count=pa.array(np.zeros(len(names), dtype=np.int64), mask=mask),
        min=pa.array(starts, mask=mask).cast(ts_type),
        max=pa.array(ends, mask=mask).cast(ts_type),
        min_exact=np.zeros(len(names), dtype=bool),
        max_exact=np.zeros(len(names), dtype=bool),
        nan_count=None,
        value_sets=None,
        might_contain=None,
    )
    return Containers(len(names), {timestamp: stats})


def _period(value: str, code: str) -> str:
    """``value`` if numpy reads it as a ``datetime64[code]``, else ``"NaT"``."""
    try:
        np.array([value], dtype=f"datetime64[{code}]")
    except ValueError:
        return "NaT"
    return value


def all_null(num_rows: int, columns: Mapping[str, pa.DataType]) -> Containers:
    """One container whose ``columns`` are all null (a segment that lacks them)."""
    stats = {
        name: ColumnStats(
            num_values=np.array([num_rows], dtype=np.int64),
            null_count=pa.array([num_rows], pa.int64()),
            min=pa.nulls(1, arrow_type),
            max=pa.nulls(1, arrow_type),
            min_exact=None,
            max_exact=None,
            nan_count=pa.array([0], pa.int64()) if pa.types.is_floating(arrow_type) else None,
            value_sets=None,
            might_contain=None,
        )
        for name, arrow_type in columns.items()
    }
    return Containers(1, stats)
