"""Routing rows to time partitions by the designated timestamp (vectorised, no I/O).

Partition names (directory names; they sort in time order)::

    hour   2026-11-22T13
    day    2026-11-22
    month  2026-11
    None   all             (one partition for the whole table)

Timestamps are read in their own unit, as UTC (a time zone on the type only changes how they
are displayed). Rows of one batch may fall in several partitions and in old ones (late rows):
each group of rows goes to its partition, in order of first appearance.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from streamwrite.errors import ConfigError, SchemaError

__all__ = ["PARTITION_BY", "UNPARTITIONED", "check_timestamp_field", "split_by_partition"]

UNPARTITIONED = "all"
PARTITION_BY = {"hour": "h", "day": "D", "month": "M"}
_NAME_LENGTH = {"h": 13, "D": 10, "M": 7}


def check_timestamp_field(
    schema: pa.Schema, timestamp: str | None, partition_by: str | None
) -> None:
    """Raise ConfigError unless the options name a usable designated timestamp."""
    if partition_by is not None and partition_by not in PARTITION_BY:
        raise ConfigError(
            f"partition_by must be one of {sorted(PARTITION_BY)} or None, got {partition_by!r}."
        )
    if partition_by is not None and timestamp is None:
        raise ConfigError("partition_by needs a designated timestamp column (timestamp=...).")
    if timestamp is None:
        return
    if timestamp not in schema.names:
        raise ConfigError(
            f"The designated timestamp {timestamp!r} is not a column of {schema.names}."
        )
    if not pa.types.is_timestamp(schema.field(timestamp).type):
        raise ConfigError(
            f"The designated timestamp {timestamp!r} has type {schema.field(timestamp).type}, "
            "not a timestamp."
        )


def _partition_ids(values: npt.NDArray[np.int64], unit: str, code: str) -> npt.NDArray[np.int64]:
    stamps = values.astype(f"datetime64[{unit}]")
    return stamps.astype(f"datetime64[{code}]").astype(np.int64)


def split_by_partition(
    table: pa.Table, timestamp: str | None, partition_by: str | None
) -> list[tuple[str, pa.Table]]:
    """Split ``table`` into per-partition tables, in order of each partition's first row.

    Returns:
        ``(partition name, rows)`` pairs; row order within a partition is kept.

    Raises:
        SchemaError: the designated timestamp has nulls.
    """
    if partition_by is None or table.num_rows == 0:
        return [(UNPARTITIONED, table)] if table.num_rows else []
    column = table.column(timestamp).combine_chunks()
    if column.null_count:
        raise SchemaError(
            f"The designated timestamp {timestamp!r} holds {column.null_count} nulls; "
            "every row needs a timestamp to find its partition."
        )
    code = PARTITION_BY[partition_by]
    unit = column.type.unit
    values = np.asarray(column.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)
    ids = _partition_ids(values, unit, code)
    if ids.shape[0] and ids.min() == ids.max():
        return [(_name(int(ids[0]), code), table)]
    unique, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    # Rows sorted by partition (stable keeps their order), then cut at partition boundaries.
    row_order = np.argsort(inverse, kind="stable")
    counts = np.bincount(inverse, minlength=unique.shape[0])
    bounds = np.concatenate([[0], np.cumsum(counts)])
    sorted_rows = table.take(pa.array(row_order))
    return [
        (_name(int(unique[k]), code), sorted_rows.slice(int(bounds[k]), int(counts[k])))
        for k in order
    ]


def _name(partition_id: int, code: str) -> str:
    stamp = np.array([partition_id], dtype=np.int64).view(f"datetime64[{code}]")
    return str(stamp[0])[: _NAME_LENGTH[code]]
