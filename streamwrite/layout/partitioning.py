"""Time partitions of a table: their names and the checks of the partitioning options (pure).

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

Routing rows to partitions (numpy over the Arrow timestamp column) is the shell's part:
:mod:`streamwrite.arrow.partitioning`, which names partitions with :func:`partition_name`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from streamwrite.errors import ConfigError
from streamwrite.format.txn import UNPARTITIONED, UNPARTITIONED_COLUMN

__all__ = [
    "PARTITION_BY",
    "PARTITION_NAME_LENGTH",
    "UNPARTITIONED",
    "check_partitioning",
    "partition_column",
    "partition_name",
]

PARTITION_BY = {"hour": "h", "day": "D", "month": "M"}
"""``partition_by`` values and the numpy datetime64 unit of each period."""
PARTITION_NAME_LENGTH = {"h": 13, "D": 10, "M": 7}
"""Characters of an ISO 8601 time kept in a partition value, per period unit
(``2026-11-22T13``, ``2026-11-22``, ``2026-11``)."""
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


def check_partitioning(
    column_names: Sequence[str],
    timestamp: str | None,
    partition_by: str | None,
    timestamp_type: str | None = None,
) -> None:
    """Raise ConfigError unless the options name a usable designated timestamp.

    Args:
        column_names: The table's column names.
        timestamp: The designated timestamp column, or None.
        partition_by: ``"hour"``, ``"day"``, ``"month"`` or None.
        timestamp_type: The type of the ``timestamp`` column as the user knows it
            (``"int64"``) when it is not a timestamp type; None when it is one.

    Raises:
        ConfigError: ``partition_by`` is unknown or has no timestamp; the timestamp is not a
            column, not a timestamp, or (partitioned) not a plain directory name; a column
            has the name of the partition column engines add.
    """
    if partition_by is not None and partition_by not in PARTITION_BY:
        raise ConfigError(
            f"partition_by must be one of {sorted(PARTITION_BY)} or None, got {partition_by!r}."
        )
    if partition_by is not None and timestamp is None:
        raise ConfigError("partition_by needs a designated timestamp column (timestamp=...).")
    if timestamp is None:
        _check_no_clash(column_names, UNPARTITIONED_COLUMN, "keep the table unpartitioned")
        return
    if timestamp not in column_names:
        raise ConfigError(
            f"The designated timestamp {timestamp!r} is not a column of {list(column_names)}."
        )
    if timestamp_type is not None:
        raise ConfigError(
            f"The designated timestamp {timestamp!r} has type {timestamp_type}, not a timestamp."
        )
    if partition_by is None:
        _check_no_clash(column_names, UNPARTITIONED_COLUMN, "keep the table unpartitioned")
        return
    if not _DIRECTORY_SAFE.fullmatch(timestamp):
        raise ConfigError(
            f"The designated timestamp {timestamp!r} names the partition directories "
            f"({partition_name(timestamp, partition_by, '...')}); a partitioned table needs a "
            "timestamp column name of letters, digits, '_' and '-' that does not start with "
            "'_' or '-'. Rename the column."
        )
    _check_no_clash(
        column_names, partition_column(timestamp, partition_by), "partition by another period"
    )


def _check_no_clash(column_names: Sequence[str], column: str, alternative: str) -> None:
    clash = [name for name in column_names if name.lower() == column.lower()]
    if clash:
        raise ConfigError(
            f"The column {clash[0]!r} has the name of the partition column {column!r} that "
            f"engines (Spark, DuckDB, pyarrow) add from the partition directories "
            f"({column}=...); rename the column, or {alternative}."
        )
