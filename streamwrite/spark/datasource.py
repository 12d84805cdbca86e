"""The ``streamwrite`` Python data source for Spark (pyspark >= 4.0; filter pushdown >= 4.1).

::

    streamwrite.spark.register(spark)                     # once per session
    df = spark.read.format("streamwrite").load("ticks")   # the table's newest snapshot
    df.filter("symbol = 'AAPL' and ts >= '2026-11-22 10:00'").show()

Planning (on the driver, in one Python worker): the reader pins the table's newest ``_txn``
snapshot; Spark pushes the top-level AND conjuncts of the query's filter to
``pushFilters``, which translates them (:mod:`streamwrite.spark.pushdown`) and **returns every
one of them**: our pruning is inexact, and Spark re-checks only the filters a source returns.
``partitions()`` is one input partition per segment of the snapshot that the filter does not
rule out. ``read`` (a Python worker per task) reads its segment at its committed size with
streamwrite's reader, so a live segment being appended to is read exactly as the snapshot saw
it, applies the translated filter to the rows and yields Arrow record batches. The rows are
the table's columns (no Hive partition column: ``ts_day`` is derived from ``ts``).

Filter pushdown needs ``spark.sql.python.filterPushdown.enabled=true`` (pyspark >= 4.1,
default false). Spark refuses to plan a reader that implements ``pushFilters`` while the
conf is off (``DATA_SOURCE_PUSHDOWN_DISABLED``), and the planning worker does not tell the
reader the conf, so :func:`register` reads the conf and registers the source whose reader
has ``pushFilters`` only when it is on: set the conf before calling :func:`register` (or call
it again after changing the conf). Without pushdown every segment is read and Spark filters.

Timestamps reach Spark at microsecond precision (Spark's), dictionary columns as their
values.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

import streamwrite
from streamwrite.errors import ConfigError, UnsupportedError
from streamwrite.spark.pushdown import spark_filters_to_arrow

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "FILTER_OPTION",
    "FILTER_PUSHDOWN_CONF",
    "NAME",
    "PARTITION_OPTION",
    "SEGMENTS_OPTION",
    "decode_filter",
    "encode_filter",
    "register",
]

NAME = "streamwrite"
"""The format name: ``spark.read.format("streamwrite")``."""
FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
FILTER_OPTION = "filter"
"""Option: a ``pyarrow.compute.Expression`` applied to the rows (:func:`encode_filter`)."""
SEGMENTS_OPTION = "segments"
"""Option: JSON ``{"version": V, "segments": [[partition/segment, size], ...]}``: read these
segments of ``_txn`` version V (a snapshot the caller pinned) instead of the newest."""
PARTITION_OPTION = "partition_column"
"""Option ``"true"``: add the Hive partition column (``ts_day``) as a string."""


def encode_filter(expression: pc.Expression) -> str:
    """``expression`` as an option value: base64 of its Arrow IPC form (not a pickle)."""
    buffer = expression.__reduce__()[1][0]
    return base64.b64encode(memoryview(buffer)).decode("ascii")


def decode_filter(text: str | None) -> pc.Expression | None:
    """The expression of :func:`encode_filter` (None for None or empty)."""
    if not text:
        return None
    expression: pc.Expression = pc.Expression._deserialize(pa.py_buffer(base64.b64decode(text)))
    return expression


try:  # pyspark is an optional dependency (the spark extra)
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
except ImportError as exc:  # pragma: no cover - exercised without pyspark
    raise UnsupportedError(
        "streamwrite.spark.read and register need pyspark >= 4.0 (Python data sources): "
        "pip install 'streamwrite[spark]'."
    ) from exc


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


def read_segment(
    path: Path,
    version: int,
    segment: tuple[str, int],
    schema: pa.Schema,
    filters: pc.Expression | None,
) -> pa.Table:
    """One segment of a table at its committed size, with the table's ``schema`` (columns a
    segment lacks are null), filtered by ``filters`` (its row groups and pages pruned).

    Returns:
        The rows.
    """
    single = streamwrite.TableSnapshot(
        path, version, streamwrite.SegmentFiles((segment,)), schema=schema
    )
    if filters is None:
        return single.read()
    try:
        return single.read(filters=filters)
    except ConfigError:  # a filter the pruning cannot represent: every row, then the filter
        return single.read().filter(filters)


def spark_arrow_schema(schema: pa.Schema) -> pa.Schema:
    """The Arrow schema of the rows Spark gets for a table of ``schema``."""
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    return to_arrow_schema(from_arrow_schema(schema), timezone="UTC")


def to_spark_rows(table: pa.Table, target: pa.Schema) -> pa.Table:
    """``table`` cast to ``target`` (dictionaries decoded, timestamps cut to microseconds)."""
    columns = [pc.cast(table.column(field.name), field.type, safe=False) for field in target]
    return pa.Table.from_arrays(columns, schema=target)


class _Segment(InputPartition):
    """One task: a segment (``partition/segment``) at its committed size."""

    def __init__(self, name: str, size: int) -> None:
        super().__init__((name, size))
        self.name, self.size = name, size


class _Reader(DataSourceReader):
    """Reads the snapshot pinned when Spark plans the query (no filter pushdown)."""

    def __init__(self, path: str, options: Mapping[str, str]) -> None:
        self.path = path
        snapshot = streamwrite.read_snapshot(Path(path))
        self.version = snapshot.version
        self.files = tuple(snapshot.files)
        self.table_schema: pa.Schema = snapshot.schema or pa.schema([])
        self.segments: tuple[tuple[str, int], ...] | None = None
        if options.get(SEGMENTS_OPTION):  # a snapshot pinned by the caller
            pinned = json.loads(options[SEGMENTS_OPTION])
            self.version = int(pinned["version"])
            self.segments = tuple((str(name), int(size)) for name, size in pinned["segments"])
        self.row_filter = decode_filter(options.get(FILTER_OPTION))
        self.partition_column = options.get(PARTITION_OPTION, "false").lower() == "true"
        self.filters: pc.Expression | None = self.row_filter

    def _snapshot(self) -> streamwrite.TableSnapshot:
        return streamwrite.TableSnapshot(
            Path(self.path),
            self.version,
            streamwrite.SegmentFiles(self.files),
            schema=self.table_schema,
        )

    def partitions(self) -> Sequence[_Segment]:
        if self.segments is not None:
            return [_Segment(name, size) for name, size in self.segments]
        surviving = surviving_segments(self._snapshot(), self.filters)
        return [_Segment(name, size) for name, size in surviving]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _Segment)
        table = read_segment(
            Path(self.path),
            self.version,
            (partition.name, partition.size),
            self.table_schema,
            self.filters,
        )
        table = to_spark_rows(table, spark_arrow_schema(self.table_schema))
        if self.partition_column:
            column, _, value = partition.name.split("/", 1)[0].partition("=")
            table = table.append_column(column, pa.array([value] * table.num_rows, pa.string()))
        yield from table.to_batches()


class _PushdownReader(_Reader):
    """The reader with ``pushFilters`` (only when Spark's filter pushdown conf is on)."""

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:
        """Keep what our pruning can use; return every filter (Spark checks each row)."""
        pushed = spark_filters_to_arrow(filters, self.table_schema)
        if pushed is not None:
            self.filters = pushed if self.row_filter is None else self.row_filter & pushed
        yield from filters


class _Source(DataSource):
    """``spark.read.format("streamwrite").load(table_path)`` (no filter pushdown)."""

    reader_class: type[_Reader] = _Reader

    @classmethod
    def name(cls) -> str:
        return NAME

    def _path(self) -> str:
        path = self.options.get("path")
        if not path:
            raise streamwrite.ConfigError(
                'spark.read.format("streamwrite").load(PATH) needs the table directory PATH.'
            )
        return str(path)

    def schema(self) -> Any:
        from pyspark.sql.pandas.types import from_arrow_schema
        from pyspark.sql.types import StringType

        snapshot = streamwrite.read_snapshot(Path(self._path()))
        schema = from_arrow_schema(snapshot.schema or pa.schema([]))
        column = self.options.get(PARTITION_OPTION, "false").lower() == "true"
        if column and snapshot.files:
            schema = schema.add(snapshot.files[0][0].split("=", 1)[0], StringType())
        return schema

    def reader(self, schema: Any) -> _Reader:
        return self.reader_class(self._path(), self.options)


class _PushdownSource(_Source):
    """The source whose reader takes pushed filters."""

    reader_class = _PushdownReader


def register(spark: SparkSession, *, pushdown: bool | None = None) -> bool:
    """Register the ``streamwrite`` data source in ``spark``.

    Args:
        spark: the session.
        pushdown: use Spark's filter pushdown (None: when the session's
            ``spark.sql.python.filterPushdown.enabled`` is true). True while the conf is off
            makes planning fail with ``DATA_SOURCE_PUSHDOWN_DISABLED``.

    Returns:
        Whether the registered reader takes pushed filters.

    Raises:
    Raises (when the name is first used):
        UnsupportedError: pyspark is not installed, or older than 4.0 (no Python data
            sources).
    """
    if pushdown is None:
        value = spark.conf.get(FILTER_PUSHDOWN_CONF, "false")
        pushdown = str(value).strip().lower() == "true"
    source = _PushdownSource if pushdown else _Source
    spark.dataSource.register(source)
    return pushdown
