"""The ``streamwrite`` Python data source for Spark (pyspark >= 4.0; filter pushdown >= 4.1).

::

    df = spark.read.format("streamwrite").load("ticks")   # the table's newest snapshot
    df.filter("symbol = 'AAPL' and ts >= '2026-11-22 10:00'").show()

No registration call is needed: pyspark imports every top-level ``pyspark_*`` module when a
session first uses a Python data source and registers its ``DefaultSource``; streamwrite
installs ``pyspark_streamwrite`` (:class:`StreamwriteDataSource` without pushdown, planning
for ``os.cpu_count()`` cores). :func:`register` registers it in one session with the
session's default parallelism, and with filter pushdown when the session's conf allows it.

Planning (on the driver, in one Python worker): the reader **pins one snapshot** (the table's
newest ``_txn`` version, read once) and plans input partitions by segment and row-group range,
sized by the bytes they read (:mod:`streamwrite.spark.tasks`: at least
``min(num_segments, parallelism)`` of them, a task never spans two segments). Each partition
carries the segment's name, committed size, footer checksum and row groups, so the executors
read exactly that snapshot: a live segment being appended to is read up to its committed size,
a segment that compaction retires meanwhile is read from ``_data.retired`` (kept for the
table's grace period; after it the read fails, never returns other rows).

Projection: Spark's Python data source API has no column pruning hook, so the columns read are
those of the schema Spark asks for: a user schema (``spark.read.format("streamwrite")
.schema("ts TIMESTAMP, value BIGINT")``) or the ``columns`` option (``"ts,value"`` or a JSON
list) narrow the read to those column chunks.

Options (all strings):

============================ =============================================================
``columns``                  the table columns to read, in order (default all)
``filter``                   a ``pyarrow.compute.Expression`` applied to the rows
                             (:func:`encode_filter`; exact, Arrow's semantics)
``parallelism``              tasks wanted at least (default: :func:`register`'s session
                             default parallelism, else ``os.cpu_count()``)
``partition_bytes``          most compressed bytes one task reads (default 128 MiB)
``storage_options``          JSON object: fsspec options for a table URL / cold segments
``pushdown``                 ``"true"``: the reader takes Spark's pushed filters (needs
                             ``spark.sql.python.filterPushdown.enabled=true``)
``partition_column``         ``"true"``: add the Hive partition column (``ts_day``) as a string
``segments``                 JSON ``{"version": V, "segments": [[name, size], ...]}``: read
                             these segments of a snapshot the caller pinned
============================ =============================================================

Filter pushdown needs ``spark.sql.python.filterPushdown.enabled=true`` (pyspark >= 4.1,
default false). Spark refuses to plan a reader that implements ``pushFilters`` while the conf
is off (``DATA_SOURCE_PUSHDOWN_DISABLED``) and does not tell the reader the conf, so the
reader has ``pushFilters`` only when :func:`register` saw the conf on (set it before calling
:func:`register`, or call it again after changing it) or the ``pushdown`` option says so.
Spark pushes the top-level AND conjuncts; ``pushFilters`` translates them
(:mod:`streamwrite.spark.pushdown`) and **returns every one of them**: our pruning is inexact,
and Spark re-checks only the filters a source returns. Without pushdown every segment is read
and Spark filters.

Timestamps reach Spark at microsecond precision (Spark's), dictionary columns as their values.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

import streamwrite
from streamwrite.errors import ConfigError, SchemaError, UnsupportedError
from streamwrite.spark.pushdown import spark_filters_to_arrow
from streamwrite.spark.tasks import DEFAULT_TARGET_BYTES, ReadTask, plan_tasks, read_task

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "COLUMNS_OPTION",
    "FILTER_OPTION",
    "FILTER_PUSHDOWN_CONF",
    "NAME",
    "PARALLELISM_OPTION",
    "PARTITION_BYTES_OPTION",
    "PARTITION_OPTION",
    "PUSHDOWN_OPTION",
    "SEGMENTS_OPTION",
    "STORAGE_OPTIONS_OPTION",
    "StreamwriteDataSource",
    "decode_filter",
    "encode_filter",
    "open_segment",
    "pin_snapshot",
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
COLUMNS_OPTION = "columns"
"""Option: the table columns to read, comma-separated or a JSON list (default all)."""
PARALLELISM_OPTION = "parallelism"
"""Option: tasks wanted at least (a positive integer)."""
PARTITION_BYTES_OPTION = "partition_bytes"
"""Option: most compressed bytes one task reads (a positive integer)."""
STORAGE_OPTIONS_OPTION = "storage_options"
"""Option: a JSON object of fsspec storage options (credentials, endpoint)."""
PUSHDOWN_OPTION = "pushdown"
"""Option ``"true"``: the reader takes Spark's pushed filters."""


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


def pin_snapshot(
    path: str, storage_options: Mapping[str, Any] | None = None
) -> streamwrite.TableSnapshot:
    """The newest committed snapshot of the table at ``path`` (a directory, or a table URL
    such as ``s3://bucket/prefix``: its newest published ``_txn_log`` version), read once:
    everything the source plans and reads is this version.

    Returns:
        The snapshot (no pin: the grace period keeps what compaction retires).

    Raises:
        CorruptFileError: the table has no readable ``_txn`` (or log object).
        StreamwriteIOError: the URL has no published log, or cannot be reached.
        ConfigError: a URL no fsspec filesystem serves.
    """
    return streamwrite.read_snapshot(path, storage_options=storage_options or None)


def open_segment(snapshot: streamwrite.TableSnapshot, name: str, size: int) -> Any:
    """Segment ``name`` of ``snapshot`` at its committed ``size``, wherever it is
    (``TableSnapshot.open_segment``): a local live file (its ``_pm`` checked; its data file
    is ``data.parquet``, or ``_data.retired`` once compaction retired it), or a cold segment
    read by byte ranges from the object store (its size and footer checksum checked).

    Returns:
        The open ``streamwrite.ParquetFile`` (close it).

    Raises:
        CorruptFileError: the segment is missing or damaged.
        StreamwriteIOError: the cold storage cannot be reached.
    """
    return snapshot.open_segment(name, size)


def spark_arrow_schema(schema: pa.Schema) -> pa.Schema:
    """The Arrow schema of the rows Spark gets for a table of ``schema``."""
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    return to_arrow_schema(from_arrow_schema(schema), timezone="UTC")


def _flag(options: Mapping[str, str], key: str) -> bool:
    return str(options.get(key, "false")).strip().lower() == "true"


def _positive(options: Mapping[str, str], key: str, default: int) -> int:
    text = options.get(key)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"The option {key!r} must be a positive integer, got {text!r}.")
    return value


def _storage_options(options: Mapping[str, str]) -> dict[str, Any]:
    text = options.get(STORAGE_OPTIONS_OPTION)
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"The option {STORAGE_OPTIONS_OPTION!r} is not JSON: {exc}.") from None
    if not isinstance(value, dict):
        raise ConfigError(f"The option {STORAGE_OPTIONS_OPTION!r} must be a JSON object.")
    return value


def _columns_option(options: Mapping[str, str], schema: pa.Schema, path: str) -> list[str] | None:
    text = (options.get(COLUMNS_OPTION) or "").strip()
    if not text:
        return None
    if text.startswith("["):
        try:
            names = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"The option {COLUMNS_OPTION!r} is not JSON: {exc}.") from None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ConfigError(f"The option {COLUMNS_OPTION!r} must be a list of names.")
    else:
        names = [name.strip() for name in text.split(",")]
    unknown = [name for name in names if schema.get_field_index(name) < 0]
    if unknown:
        raise SchemaError(
            f"The table {path!r} has no column {unknown[0]!r} (its columns: {schema.names})."
        )
    return list(names)


def _partition_column(snapshot: streamwrite.TableSnapshot) -> str | None:
    """The Hive partition column of the table's segment names (``ts_day``)."""
    if not snapshot.files:
        return None
    return snapshot.files[0][0].split("/", 1)[0].partition("=")[0]


class _Task(InputPartition):
    """One Spark task: a :class:`~streamwrite.spark.tasks.ReadTask`."""

    def __init__(self, task: ReadTask) -> None:
        super().__init__(task)
        self.task = task


class _Reader(DataSourceReader):
    """Reads the snapshot pinned when Spark plans the query (no filter pushdown)."""

    def __init__(
        self, path: str, options: Mapping[str, str], schema: Any, default_parallelism: int
    ) -> None:
        from pyspark.sql.pandas.types import to_arrow_schema

        self.path = path
        snapshot = pin_snapshot(path, _storage_options(options))
        table_schema: pa.Schema = snapshot.schema or pa.schema([])
        if options.get(SEGMENTS_OPTION):  # a snapshot pinned by the caller
            pinned = json.loads(options[SEGMENTS_OPTION])
            segments = tuple((str(name), int(size)) for name, size in pinned["segments"])
            snapshot = streamwrite.TableSnapshot(
                snapshot.path,
                int(pinned["version"]),
                streamwrite.SegmentFiles(segments),
                schema=table_schema,
                storage_options=snapshot.storage_options,
            )
        self.snapshot = snapshot
        self.table_schema = table_schema
        self.target: pa.Schema = to_arrow_schema(schema, timezone="UTC")
        self.natural = spark_arrow_schema(table_schema)
        self.partition_column = _partition_column(snapshot)
        unknown = [
            name
            for name in self.target.names
            if table_schema.get_field_index(name) < 0 and name != self.partition_column
        ]
        if unknown:
            raise SchemaError(
                f"The table {path!r} has no column {unknown[0]!r} (its columns: "
                f"{table_schema.names})."
            )
        self.columns = [name for name in self.target.names if name in table_schema.names]
        self.row_filter = decode_filter(options.get(FILTER_OPTION))
        self.filters: pc.Expression | None = self.row_filter
        self.parallelism = _positive(options, PARALLELISM_OPTION, default_parallelism)
        self.target_bytes = _positive(options, PARTITION_BYTES_OPTION, DEFAULT_TARGET_BYTES)

    def _open(self, name: str, size: int) -> Any:
        return open_segment(self.snapshot, name, size)

    def partitions(self) -> list[InputPartition]:
        tasks = plan_tasks(
            self.snapshot,
            self._open,
            columns=self.columns,
            filters=self.filters,
            target_bytes=self.target_bytes,
            parallelism=self.parallelism,
        )
        return [_Task(task) for task in tasks]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, _Task):  # no task planned: Spark's one empty partition
            return
        task = partition.task
        constants = None
        if self.partition_column in self.target.names:
            assert self.partition_column is not None
            value = task.name.split("/", 1)[0].partition("=")[2]
            constants = {self.partition_column: value}
        with self._open(task.name, task.size) as pf:
            yield from read_task(
                pf,
                task,
                self.table_schema,
                self.target,
                self.natural,
                self.filters,
                constants,
            )


class _PushdownReader(_Reader):
    """The reader with ``pushFilters`` (only when Spark's filter pushdown conf is on)."""

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:
        """Keep what our pruning can use; return every filter (Spark checks each row)."""
        pushed = spark_filters_to_arrow(filters, self.table_schema)
        if pushed is not None:
            self.filters = pushed if self.row_filter is None else self.row_filter & pushed
        yield from filters


class StreamwriteDataSource(DataSource):
    """``spark.read.format("streamwrite").load(table_path)``: the module docstring says what
    it reads and its options (pyspark's discovery registers this class, from
    ``pyspark_streamwrite``)."""

    default_parallelism: ClassVar[int | None] = None
    """Tasks wanted at least when the ``parallelism`` option is not given (None:
    ``os.cpu_count()`` where Spark plans the read)."""
    pushdown: ClassVar[bool] = False
    """Whether the reader takes Spark's pushed filters (also the ``pushdown`` option)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def _path(self) -> str:
        path = self.options.get("path")
        if not path:
            raise ConfigError(
                'spark.read.format("streamwrite").load(PATH) needs the table directory PATH.'
            )
        return str(path)

    def schema(self) -> Any:
        from pyspark.sql.pandas.types import from_arrow_schema
        from pyspark.sql.types import StringType

        path = self._path()
        snapshot = pin_snapshot(path, _storage_options(self.options))
        table_schema = snapshot.schema or pa.schema([])
        columns = _columns_option(self.options, table_schema, path)
        if columns is not None:
            table_schema = pa.schema([table_schema.field(name) for name in columns])
        schema = from_arrow_schema(table_schema)
        column = _partition_column(snapshot)
        if _flag(self.options, PARTITION_OPTION) and column is not None:
            schema = schema.add(column, StringType())
        return schema

    def reader(self, schema: Any) -> _Reader:
        pushdown = self.pushdown or _flag(self.options, PUSHDOWN_OPTION)
        reader_class = _PushdownReader if pushdown else _Reader
        parallelism = self.default_parallelism or os.cpu_count() or 1
        return reader_class(self._path(), self.options, schema, parallelism)


def register(spark: SparkSession, *, pushdown: bool | None = None) -> bool:
    """Register the ``streamwrite`` data source in ``spark``, planning for the session's
    default parallelism (the discovered source plans for ``os.cpu_count()``).

    Args:
        spark: the session.
        pushdown: use Spark's filter pushdown (None: when the session's
            ``spark.sql.python.filterPushdown.enabled`` is true). True while the conf is off
            makes planning fail with ``DATA_SOURCE_PUSHDOWN_DISABLED``.

    Returns:
        Whether the registered reader takes pushed filters.

    Raises:
        UnsupportedError: pyspark is not installed, or older than 4.0 (no Python data
            sources; raised on import).
    """
    if pushdown is None:
        value = spark.conf.get(FILTER_PUSHDOWN_CONF, "false")
        pushdown = str(value).strip().lower() == "true"
    try:
        parallelism: int | None = int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext: plan for the planner's cores
        parallelism = None
    source = type(
        "_SessionSource",
        (StreamwriteDataSource,),
        {"default_parallelism": parallelism, "pushdown": pushdown, "__module__": __name__},
    )
    spark.dataSource.register(source)
    return pushdown
