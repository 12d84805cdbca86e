"""Routing rows to time partitions by the designated timestamp (vectorised, no I/O).

Partition names are directory names in the Hive convention ``<column>=<value>``, which Spark's
partition discovery, DuckDB's ``hive_partitioning``, pyarrow's ``partitioning="hive"`` (the
default of ``pq.read_table``) and polars' ``hive_partitioning`` all understand; the column is
``<timestamp>_<partition_by>`` (they sort in time order)::

    hour   ts_hour=2026-11-22T13
    day    ts_day=2026-11-22
    month  ts_month=2026-11
    None   sw_partition=all   (one partition for the whole table)

An unpartitioned table has a partition directory too: Spark lists only the files directly in
the path it reads unless its partition discovery finds ``<column>=<value>`` directories, and a
segment must be a directory (``data.parquet`` + ``_pm``), so without one
``spark.read.parquet(table)`` finds no file. Engines that add partition columns add
``sw_partition`` (always ``"all"``) to such a table's rows.

Engines that add the partition column infer its type from the values: DuckDB and Spark read
``ts_day`` as a DATE, the others as text. A schema that already has a column of that name
(compared case-insensitively, as Spark does; ``sw_partition`` for an unpartitioned table) is
refused, and the timestamp column of a
partitioned table must have a name that is a plain directory name (letters, digits, ``_`` and
``-``, not starting with ``_`` or ``-``: pyarrow skips directories starting with ``_``).

Timestamps are read in their own unit, as UTC (a time zone on the type only changes how they
are displayed). Rows of one batch may fall in several partitions and in old ones (late rows):
each group of rows goes to its partition, in order of first appearance.
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from streamwrite.errors import ConfigError, SchemaError
from streamwrite.format.txn import UNPARTITIONED, UNPARTITIONED_COLUMN

__all__ = [
    "PARTITION_BY",
    "UNPARTITIONED",
    "check_timestamp_field",
    "partition_column",
    "partition_name",
    "split_by_partition",
]

PARTITION_BY = {"hour": "h", "day": "D", "month": "M"}
_NAME_LENGTH = {"h": 13, "D": 10, "M": 7}
_DIRECTORY_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


def partition_column(timestamp: str, partition_by: str) -> str:
    """The partition column engines see: ``<timestamp>_<partition_by>`` (``ts_day``)."""
    return f"{timestamp}_{partition_by}"


def partition_name(timestamp: str | None, partition_by: str | None, value: str) -> str:
    """The name (and directory name) of the partition holding ``value`` (``2026-11-22``):
    ``ts_day=2026-11-22``, or ``sw_partition=all`` for an unpartitioned table."""
    if partition_by is None or timestamp is None:
        return UNPARTITIONED
    return f"{partition_column(timestamp, partition_by)}={value}"


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
        _check_no_clash(schema, UNPARTITIONED_COLUMN, "keep the table unpartitioned")
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
    if partition_by is None:
        _check_no_clash(schema, UNPARTITIONED_COLUMN, "keep the table unpartitioned")
        return
    if not _DIRECTORY_SAFE.fullmatch(timestamp):
        raise ConfigError(
            f"The designated timestamp {timestamp!r} names the partition directories "
            f"({partition_name(timestamp, partition_by, '...')}); a partitioned table needs a "
            "timestamp column name of letters, digits, '_' and '-' that does not start with "
            "'_' or '-'. Rename the column."
        )
    _check_no_clash(
        schema, partition_column(timestamp, partition_by), "partition by another period"
    )


def _check_no_clash(schema: pa.Schema, column: str, alternative: str) -> None:
    clash = [name for name in schema.names if name.lower() == column.lower()]
    if clash:
        raise ConfigError(
            f"The column {clash[0]!r} has the name of the partition column {column!r} that "
            f"engines (Spark, DuckDB, pyarrow) add from the partition directories "
            f"({column}=...); rename the column, or {alternative}."
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
    return partition_name(timestamp, partition_by, str(stamp[0])[: _NAME_LENGTH[code]])
