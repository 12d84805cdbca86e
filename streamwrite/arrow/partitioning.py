"""Routing Arrow rows to time partitions by the designated timestamp (vectorised numpy).

Partition names, their rules and the checks of the options are pure
(:mod:`streamwrite.layout.partitioning`); this module reads the Arrow side: the type of the
timestamp column, and each row's partition.

Timestamps are read in their own unit, as UTC (a time zone on the type only changes how they
are displayed). Rows of one batch may fall in several partitions and in old ones (late rows):
each group of rows goes to its partition, in order of first appearance::

    ids       = timestamp values as datetime64[unit] -> datetime64[period] -> int64
    partition = partition_name(timestamp, partition_by, ISO text of the id, cut to the period)
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from streamwrite.errors import SchemaError
from streamwrite.layout.partitioning import (
    PARTITION_BY,
    PARTITION_NAME_LENGTH,
    UNPARTITIONED,
    check_partitioning,
    partition_name,
)

__all__ = ["check_timestamp_field", "split_by_partition"]


def check_timestamp_field(
    schema: pa.Schema, timestamp: str | None, partition_by: str | None
) -> None:
    """Raise ConfigError unless the options name a usable designated timestamp of ``schema``.

    Raises:
        ConfigError: As :func:`streamwrite.layout.partitioning.check_partitioning`.
    """
    timestamp_type = None
    if timestamp is not None and timestamp in schema.names:
        arrow_type = schema.field(timestamp).type
        if not pa.types.is_timestamp(arrow_type):
            timestamp_type = str(arrow_type)
    check_partitioning(schema.names, timestamp, partition_by, timestamp_type)


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
    assert timestamp is not None  # check_timestamp_field: partition_by needs one
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
        return [(_partition(timestamp, partition_by, int(ids[0]), code), table)]
    unique, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    # Rows sorted by partition (stable keeps their order), then cut at partition boundaries.
    row_order = np.argsort(inverse, kind="stable")
    counts = np.bincount(inverse, minlength=unique.shape[0])
    bounds = np.concatenate([[0], np.cumsum(counts)])
    sorted_rows = table.take(pa.array(row_order))
    return [
        (
            _partition(timestamp, partition_by, int(unique[k]), code),
            sorted_rows.slice(int(bounds[k]), int(counts[k])),
        )
        for k in order
    ]


def _partition(timestamp: str, partition_by: str, partition_id: int, code: str) -> str:
    stamp = np.array([partition_id], dtype=np.int64).view(f"datetime64[{code}]")
    return partition_name(timestamp, partition_by, str(stamp[0])[: PARTITION_NAME_LENGTH[code]])
