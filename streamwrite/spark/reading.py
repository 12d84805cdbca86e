"""``streamwrite.spark.read``: a table's newest snapshot as a Spark DataFrame, pruned by a
filter, read by Spark's own Parquet reader wherever that is safe (pyspark >= 4.0).

::

    df = streamwrite.spark.read(spark, "ticks", filters=[("symbol", "==", "AAPL")])

What is read, and how:

* the segments of the newest ``_txn`` snapshot that the filter does not rule out
  (``TableSnapshot.plan``: partition time ranges, the skipping store, each segment's
  footer);
* **sealed** segments (every segment of a partition but its newest: sealed segments are
  never written again, ``format/txn.py``) by Spark's Parquet reader:
  ``spark.read.option("basePath", table).parquet(*files)``, distributed, with Spark's own
  row-group and page pruning inside each file, and the Hive partition column (``ts_day``) as
  ``spark.read.parquet(table)`` gives it;
* each partition's **newest** segment by the ``streamwrite`` Python data source
  (:mod:`streamwrite.spark.datasource`, registered by this call) at its committed size, in
  Python worker tasks of row-group ranges. Spark reads a Parquet file from its end when a task runs,
  so a live segment that a writer appends to meanwhile would be read past (or in the middle
  of) its commit (DESIGN section 6, "Readers and the append window"); these are the only
  files that can grow (a snapshot never lists a newer segment of a partition before the
  older one is complete).

Exactness: pruning only decides what need not be read; then the filter is applied to every
row with ``streamwrite.read_table(filters=)``'s semantics (``pyarrow.compute``: ``NaN``
compares false, ``not in`` keeps nulls as pyarrow's filters do, a listed zero matches both
zeros): DNF filters as a Spark Column that corrects Spark's differences
(:mod:`streamwrite.spark.dnf`) on Spark's rows, by the data source on the newest segments. A
``pyarrow.compute.Expression`` has no Spark Column, so with one every surviving segment is
read by the data source (still pruned and exact, not by Spark's Parquet reader). So the
DataFrame holds exactly the rows of the snapshot that match, plus the Hive partition column
(``ts_day``, or ``sw_partition``), typed as Spark's discovery types it.

A compaction that retires a sealed segment before the lazy DataFrame runs makes Spark fail
with file-not-found (never wrong rows): read again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

import streamwrite
from streamwrite.errors import ConfigError
from streamwrite.spark.datasource import (
    FILTER_OPTION,
    NAME,
    PARTITION_OPTION,
    SEGMENTS_OPTION,
    encode_filter,
    register,
)
from streamwrite.spark.dnf import dnf_to_column

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["check_columns", "filter_expression", "read", "split_sealed", "surviving_segments"]

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def filter_expression(filters: Any) -> pc.Expression | None:
    """``filters`` as one ``pyarrow.compute.Expression``: pyarrow's DNF (``[("x", "<", 3)]``
    or a list of such lists, as ``pyarrow.parquet.read_table`` takes), an Expression, or None.

    Raises:
        ConfigError: anything else, or a malformed DNF.
    """
    if filters is None or isinstance(filters, pc.Expression):
        return filters
    if isinstance(filters, list | tuple):
        import pyarrow.parquet as pq

        try:
            expression: pc.Expression = pq.filters_to_expression(list(filters))
        except (TypeError, ValueError, pa.ArrowException) as exc:
            raise ConfigError(f"The filters {filters!r} are not pyarrow's DNF: {exc}") from exc
        return expression
    raise ConfigError(
        f"filters must be pyarrow's DNF tuples or a pyarrow.compute.Expression, got {filters!r}."
    )


def surviving_segments(
    snapshot: streamwrite.TableSnapshot, filters: pc.Expression | None
) -> list[tuple[str, int]]:
    """The ``(partition/segment, committed size)`` of the segments of ``snapshot`` that may
    hold a row matching ``filters`` (``TableSnapshot.plan``: partition time ranges, the
    skipping store, each footer), all of them for None or for a filter the pruning cannot
    represent (it is still applied to the rows)."""
    files = [(name, size) for name, size in snapshot.files]
    if filters is None:
        return files
    try:
        plan = snapshot.plan(filters)
    except ConfigError:
        return files
    return [(s.name, s.committed_size) for s in plan.segments if s.skipped_by is None]


def split_sealed(
    files: Sequence[tuple[str, int]], surviving: Sequence[tuple[str, int]]
) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """The ``surviving`` segments split into sealed ones and each partition's newest, by the
    snapshot's ``files`` (``partition/segment``, partitions in order, segments in order).

    Returns:
        ``(sealed, newest)``.
    """
    newest: dict[str, str] = {}
    for name, _ in files:
        newest[name.rsplit("/", 1)[0]] = name
    live = set(newest.values())
    sealed = [item for item in surviving if item[0] not in live]
    return sealed, [item for item in surviving if item[0] in live]


def _partition_value(name: str) -> tuple[str, str]:
    """``ts_day=2026-11-22/seg-000003`` -> ``("ts_day", "2026-11-22")``."""
    column, _, value = name.split("/", 1)[0].partition("=")
    return column, value


def _through_source(
    spark: SparkSession,
    snapshot: streamwrite.TableSnapshot,
    segments: list[tuple[str, int]],
    expression: pc.Expression | None,
) -> DataFrame:
    """``segments`` of ``snapshot`` read by the ``streamwrite`` data source (each at its
    committed size, in a Python worker per segment), ``expression`` applied to the rows, the
    Hive partition column added as a string."""
    register(spark)
    pinned = {"version": snapshot.version, "segments": [list(item) for item in segments]}
    reader = (
        spark.read.format(NAME)
        .option(SEGMENTS_OPTION, json.dumps(pinned))
        .option(PARTITION_OPTION, "true")
    )
    if expression is not None:
        reader = reader.option(FILTER_OPTION, encode_filter(expression))
    frame: DataFrame = reader.load(str(snapshot.path))
    return frame


def read(
    spark: SparkSession,
    path: str | Path,
    filters: Any = None,
    columns: Sequence[str] | None = None,
) -> DataFrame:
    """The rows of a table's newest committed snapshot that match ``filters``, as a DataFrame
    (sealed segments read by Spark's Parquet reader, live ones at their committed size: see
    the module's text).

    Args:
        spark: the session.
        path: the table directory.
        filters: pyarrow's DNF or a ``pyarrow.compute.Expression`` (None: every row).
        columns: the columns to keep (table columns, or the partition column such as
            ``ts_day``), in that order; None: all, the partition column last.

    Returns:
        The DataFrame (lazy: Spark reads the sealed segments when it runs).

    Raises:
        UnsupportedError: pyspark (>= 4.0) is not installed.
        ConfigError: ``filters`` is not a filter.
        SchemaError: ``columns`` or ``filters`` names a column the table does not have.
        CorruptFileError: the table's ``_txn`` is damaged (or missing: FileNotFoundError).
    """
    try:
        from pyspark.sql import DataFrame as _DataFrame  # noqa: F401 (checks the import)
    except ImportError as exc:
        raise streamwrite.UnsupportedError(
            "streamwrite.spark.read needs pyspark >= 4.0 (pip install 'streamwrite[spark]')."
        ) from exc
    expression = filter_expression(filters)
    table = Path(path)
    snapshot = streamwrite.read_snapshot(table)
    schema = snapshot.schema or pa.schema([])
    check_columns(str(table), schema, expression, columns)
    surviving = surviving_segments(snapshot, expression)
    sealed: list[tuple[str, int]] = []
    live = surviving  # an Expression has no Spark Column: Arrow applies it to every segment
    if not isinstance(filters, pc.Expression):
        sealed, live = split_sealed(snapshot.files, surviving)
    native = None
    if sealed:
        files = [str(table / name / "data.parquet") for name, _ in sealed]
        native = spark.read.option("basePath", str(table)).parquet(*files)
        if filters is not None:
            native = native.filter(dnf_to_column(filters, schema))
    frame = native
    if live:
        arrow = _through_source(spark, snapshot, live, expression)
        column = _partition_value(live[0][0])[0]
        if native is not None:
            arrow = arrow.withColumn(column, arrow[column].cast(native.schema[column].dataType))
            frame = native.unionByName(arrow)
        else:
            kind = "date" if _DATE.fullmatch(_partition_value(live[0][0])[1]) else "string"
            frame = arrow.withColumn(column, arrow[column].cast(kind))
    if frame is None:  # nothing survives: no rows, the table's columns
        frame = _through_source(spark, snapshot, [], None)
    if columns is not None:
        frame = frame.select(*columns)
    return frame


def check_columns(
    table: str,
    schema: pa.Schema,
    expression: pc.Expression | None,
    columns: Any,
    *,
    partition_columns: bool = True,
) -> None:
    """Check that ``expression`` binds to ``schema`` and that ``columns`` are its columns
    (or, with ``partition_columns``, a Hive partition column such as ``ts_day``).

    Raises:
        SchemaError: a column the table does not have.
        ConfigError: a filter that does not apply to the table's columns.
    """
    names = set(schema.names)
    wanted = list(columns or [])
    if expression is not None:
        try:
            schema.empty_table().filter(expression)  # binds it: columns and types checked
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            if "No match for FieldRef" in str(exc):
                raise streamwrite.SchemaError(
                    f"The filter {expression} names a column the table {table!r} does "
                    f"not have (its columns: {schema.names})."
                ) from None
            raise ConfigError(
                f"The filter {expression} does not apply to the table {table!r} "
                f"(schema {schema.names}): {exc}"
            ) from None
    for name in wanted:
        if name in names or (
            partition_columns and ("=" in name or _is_partition_column(name, schema))
        ):
            continue
        raise streamwrite.SchemaError(
            f"The table {table!r} has no column {name!r} (its columns: {schema.names})."
        )


def _is_partition_column(name: str, schema: pa.Schema) -> bool:
    return name == "sw_partition" or any(
        name == f"{field}_{unit}" for field in schema.names for unit in ("hour", "day", "month")
    )
