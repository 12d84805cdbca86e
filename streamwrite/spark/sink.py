"""Spark Structured Streaming sink: ``foreachBatch`` into a streamwrite table, exactly once.

::

    from streamwrite.spark import foreach_batch_sink, read_table_df

    sink = foreach_batch_sink("ticks", timestamp="ts", partition_by="day")
    query = (spark.readStream.format("rate").load()
             .selectExpr("timestamp AS ts", "value", "'a' AS symbol")
             .writeStream.foreachBatch(sink)
             .option("checkpointLocation", "ticks-checkpoint").start())
    read_table_df(spark, "ticks").count()

Spark's ``foreachBatch`` is at-least-once: after a failure Spark runs the last micro-batch
again with the same batch id. The sink appends every micro-batch with ``(app_id, batch_id)``,
and the table records the highest batch id committed per app id in ``_txn``, in the same atomic
step as the data; a batch id at or below it writes nothing. That is Delta Lake's
``txnAppId``/``txnVersion`` pattern, enforced (DESIGN section 7).

Per micro-batch the sink:

1. converts the DataFrame with ``DataFrame.toArrow()`` (pyspark >= 4; no pandas round trip;
   the batch is collected on the driver, as with any ``foreachBatch`` that writes locally);
2. does nothing for an empty batch (no table commit, no batch id recorded: replaying an empty
   batch is empty again, so nothing is lost);
3. casts the batch to the table schema by column name (see *Schema* below);
4. runs ``open_table`` / ``append(app_id=..., batch_id=...)`` / ``close`` in one
   ``anyio.run``. Spark calls the function on a driver thread with no event loop, one batch
   at a time; opening the table per batch costs a ``_txn`` read and one recovery pass, and in
   exchange no file stays open between batches (foreachBatch has no hook for query end) and a
   failed commit never leaves a poisoned table behind: the next call reopens and rolls back;
5. logs the commit (logger ``streamwrite.spark``): rows, table version, skipped.

Executors mode. ``foreach_batch_sink(..., mode="executors")`` writes each micro-batch with
:func:`streamwrite.spark.write` instead of steps 1-4: every Spark task encodes its rows into
staged segments in the table directory (which the executors must share), and the driver
publishes them in one ``_txn`` version with the batch id; nothing is collected to the driver.
The same exactly-once rules apply (a replay is skipped before any Spark job runs); a new table
takes its schema from the DataFrame's (normalised as below), even for an empty first batch.

Compaction. The sink holds the table only for the length of one batch, so it never
compacts; run ``streamwrite compact TABLE`` (e.g. from cron) or :meth:`Table.compact`
beside the query. A batch that finds the table locked by compaction waits for the lock
(``SINK_LOCK_TIMEOUT_SECONDS``, or ``lock_timeout=`` among the table options).

Schema. A table that exists keeps its schema: batch columns are matched by name (order may
differ; missing or extra columns are a :class:`SchemaError`) and cast where the types differ
(Spark timestamps arrive zoned, ``timestamp[us, tz=...]``; classic pyspark 4 labels them UTC
whatever the session time zone; a cast that would lose data raises). A new table takes the
``schema=`` option if given, else the first non-empty batch's Arrow schema, normalised so that
it does not depend on session settings: timestamps with a time zone become ``tz="UTC"`` (the
same instants; a zone only changes display), large string/binary/list become string/binary/list,
field metadata is dropped and every field is nullable (as Spark's own Parquet writer does; another
query's batches may differ in nullability). TimestampNTZ stays ``timestamp[us]``.

Nested columns. Spark arrays, structs and maps arrive from ``toArrow()`` as Arrow
``list<element: ...>``, ``struct<...>`` and ``map<key, value>`` (entries ``key``/``value``),
at any depth, with Spark's ``containsNull``/``valueContainsNull``/nullability as Arrow field
nullability. The rules above apply at every level: a struct field, list element and map value
become nullable (a map key stays required: Arrow and Parquet require it), timestamps inside them
UTC, large types narrowed; names (``element``, ``key``, ``value``) stay as Spark gives them, so
Spark reads the table's files back with the same schema. The table stores them as Parquet's
three-level LIST and MAP groups; leaf columns are named by their dotted path (``m.key_value.key``,
``aa.list.element.list.element``) in ``column_encoding``, ``bloom_filter_options`` and the
encryption column keys.

App id. ``app_id`` defaults to ``"spark-"`` and 16 hex digits of the SHA-256 of the table's
absolute path: stable across restarts of one query, with no setup. It assumes one query (one
checkpoint) per table. Pass ``app_id`` explicitly when several queries write one table, or when
a query starts over with a new checkpoint (its batch ids restart at 0). A replay of the last
committed batch id is skipped quietly (that is Spark's replay after a failure); a batch id
*below* it is not a replay, and the sink raises :class:`~streamwrite.errors.StaleBatchError`
(Spark fails the query) instead of dropping the batch, unless ``on_stale="skip"`` asks to
skip such batches with a warning.

Reading with Spark. :func:`read_table_df` reads a committed table snapshot. Spark reads a
Parquet file from its end, so given a live file's path it sees whatever footer is last when the
task runs: that is the snapshot only while no append is in flight (DESIGN section 6, "Readers
and the append window"). ``via="arrow"`` reads the snapshot with streamwrite on the driver and
hands Spark the Arrow table: exact under concurrent appends, bounded by driver memory. A Spark
Python Data Source planning one input partition per row group of a pinned snapshot is the full
solution and is not built yet.

pyspark is an optional dependency (``pip install streamwrite[spark]``); this module imports it
only inside functions, and ``import streamwrite`` never imports it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
import pyarrow as pa

from streamwrite import open_table
from streamwrite.errors import ConfigError, SchemaError, UnsupportedError
from streamwrite.inspect import is_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from streamwrite import TableCommit

__all__ = [
    "ForeachBatchSink",
    "conform",
    "default_app_id",
    "foreach_batch_sink",
    "read_table_df",
    "table_schema_for",
]

logger = logging.getLogger(__name__)

_INSTALL_HINT = "install the extra: pip install 'streamwrite[spark]' (pyspark>=4.0)"


def _require_pyspark() -> None:
    """Raise UnsupportedError unless pyspark (>= 4, with ``DataFrame.toArrow``) imports."""
    try:
        sql = importlib.import_module("pyspark.sql")
    except ImportError as exc:
        raise UnsupportedError(
            f"streamwrite.spark needs pyspark, which is missing; {_INSTALL_HINT}."
        ) from exc
    if not hasattr(sql.DataFrame, "toArrow"):
        version = getattr(importlib.import_module("pyspark"), "__version__", "unknown")
        raise UnsupportedError(
            f"streamwrite.spark needs DataFrame.toArrow (pyspark >= 4.0), found pyspark "
            f"{version}; {_INSTALL_HINT}."
        )


def default_app_id(path: str | Path) -> str:
    """The app id a sink uses when none is given.

    Returns:
        ``"spark-"`` and 16 hex digits of the SHA-256 of the absolute (resolved) table path.
    """
    digest = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()
    return f"spark-{digest[:16]}"


def _nullable_field(field: pa.Field, *, nullable: bool = True) -> pa.Field:
    """``field`` with its type normalised, without metadata, nullable unless told otherwise."""
    return pa.field(field.name, _normalise_type(field.type), nullable=nullable)


def _normalise_type(dtype: pa.DataType) -> pa.DataType:
    """``dtype`` as a new table stores it (module doc, *Schema*), at every nesting level."""
    if pa.types.is_timestamp(dtype) and dtype.tz is not None:
        return pa.timestamp(dtype.unit, tz="UTC")
    if pa.types.is_large_string(dtype):
        return pa.string()
    if pa.types.is_large_binary(dtype):
        return pa.binary()
    if pa.types.is_map(dtype):
        # keys are never null (Arrow and Parquet require it); values are, as Spark's writer does
        key = _nullable_field(dtype.key_field, nullable=False)
        return pa.map_(key, _nullable_field(dtype.item_field), keys_sorted=dtype.keys_sorted)
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return pa.list_(_nullable_field(dtype.value_field))
    if pa.types.is_fixed_size_list(dtype):
        return pa.list_(_nullable_field(dtype.value_field), dtype.list_size)
    if pa.types.is_struct(dtype):
        return pa.struct([_nullable_field(dtype.field(i)) for i in range(dtype.num_fields)])
    return dtype


def table_schema_for(batch_schema: pa.Schema) -> pa.Schema:
    """The schema a new table gets from a micro-batch's Arrow schema (see the module doc).

    Returns:
        Every field nullable at every nesting level (map keys excepted), without metadata;
        zoned timestamps in UTC; large strings, binaries and lists narrowed.
    """
    return pa.schema([_nullable_field(f) for f in batch_schema])


def conform(batch: pa.Table, schema: pa.Schema) -> pa.Table:
    """Match ``batch`` to ``schema`` by column name, casting where the types differ.

    Returns:
        A table with exactly ``schema``.

    Raises:
        SchemaError: missing or extra columns, a cast that fails or would lose data, or nulls
            in a field the schema declares non-nullable.
    """
    names, wanted = set(batch.column_names), set(schema.names)
    if names != wanted or len(names) != batch.num_columns:
        raise SchemaError(
            f"The micro-batch has columns {batch.column_names}, the table has {schema.names}."
        )
    columns = []
    for target in schema:
        column = batch.column(target.name)
        if not column.type.equals(target.type):
            try:
                column = column.cast(target.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaError(
                    f"Column {target.name!r} of the micro-batch has type {column.type}, which "
                    f"does not cast to the table's {target.type}: {exc}."
                ) from exc
        if not target.nullable and column.null_count:
            raise SchemaError(
                f"Column {target.name!r} of the micro-batch holds {column.null_count} nulls; "
                "the table declares it non-nullable."
            )
        where = _null_in_required(_one_chunk(column), target.name)
        if where is not None:
            raise SchemaError(
                f"Column {target.name!r} of the micro-batch holds nulls at {where!r}; the "
                "table declares that field non-nullable."
            )
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)


def _one_chunk(column: pa.ChunkedArray) -> pa.Array:
    if column.num_chunks == 1:
        return column.chunk(0)
    return column.combine_chunks() if column.num_chunks else pa.array([], column.type)


def _null_in_required(array: pa.Array, where: str) -> str | None:
    """The path of the first nested field that ``array``'s type declares non-nullable but that
    holds a null under a valid parent (casts do not check list elements or map values), or
    None. Vectorised: one flatten per nesting level."""
    dtype = array.type
    if pa.types.is_struct(dtype):
        valid = array.is_valid()
        for child_field, child in zip(dtype, array.flatten(), strict=True):
            child = child.filter(valid)  # a null struct's children are ignored
            path = f"{where}.{child_field.name}"
            if not child_field.nullable and child.null_count:
                return path
            found = _null_in_required(child, path)
            if found is not None:
                return found
        return None
    if pa.types.is_map(dtype):
        entries = pa.ListArray.from_arrays(
            array.offsets, array.values, mask=array.is_null() if array.null_count else None
        ).flatten()
        return _null_in_required(entries, where)
    if not (
        pa.types.is_list(dtype)
        or pa.types.is_large_list(dtype)
        or pa.types.is_fixed_size_list(dtype)
    ):
        return None
    elements = array.flatten()  # the elements of the valid slots
    path = f"{where}.{dtype.value_field.name}"
    if not dtype.value_field.nullable and elements.null_count:
        return path
    return _null_in_required(elements, path)


ON_STALE = ("error", "skip")
"""The ``on_stale`` values ``Table.append`` takes (checked when the sink is built, before the
first batch reaches the table)."""

SINK_MODES = ("driver", "executors")
"""Where a sink writes a micro-batch: collected to the driver, or on the executors."""

SINK_LOCK_TIMEOUT_SECONDS = 600.0
"""How long a micro-batch waits for the table's writer lock (held by ``streamwrite compact``
or another writer) before failing; ``lock_timeout=`` in the table options overrides it."""


async def _append_batch(
    path: Path,
    batch: pa.Table,
    app_id: str,
    batch_id: int,
    schema: pa.Schema | None,
    table_options: dict[str, Any],
    on_stale: str,
) -> TableCommit:
    """Open (or create) the table, append ``batch`` as ``(app_id, batch_id)``, close it.

    Returns:
        The table commit (``skipped=True`` when the batch id was committed before).
    """
    exists = is_table(path)
    create_schema = None if exists else (schema or table_schema_for(batch.schema))
    options = {"lock_timeout": SINK_LOCK_TIMEOUT_SECONDS, **table_options}
    table = await open_table(path, create_schema, **options)
    try:
        commit = await table.append(
            conform(batch, table.schema), app_id=app_id, batch_id=batch_id, on_stale=on_stale
        )
    finally:
        await table.close()
    assert commit is not None  # an append with a batch id always commits (or skips)
    return commit


@dataclass(frozen=True)
class ForeachBatchSink:
    """The function for ``DataStreamWriter.foreachBatch`` (build it with
    :func:`foreach_batch_sink`). Picklable, holds no open resources."""

    path: Path
    app_id: str
    schema: pa.Schema | None = None
    table_options: dict[str, Any] = field(default_factory=dict)
    on_stale: str = "error"
    mode: str = "driver"
    """``"driver"``: the batch is collected and written on the driver; ``"executors"``: each
    task writes its rows (:func:`streamwrite.spark.write`)."""

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        """Append one micro-batch exactly once.

        Raises:
            UnsupportedError: the DataFrame has no ``toArrow`` (pyspark < 4).
            SchemaError: the batch does not fit the table schema.
            StaleBatchError: ``batch_id`` is below the last one committed for the app id
                (and ``on_stale`` is ``"error"``): nothing is written.
            StreamwriteIOError: the commit failed (Spark fails the query; on restart it
                replays the batch, which is then written or skipped).
        """
        if self.mode == "executors":
            from streamwrite.spark.writing import write

            result = write(
                df,
                self.path,
                app_id=self.app_id,
                batch_id=int(batch_id),
                schema=self.schema,
                on_stale=self.on_stale,
                **self.table_options,
            )
            logger.info(
                "Batch %d of app %r into %s on the executors: %d rows, %d segments, table "
                "version %d, skipped=%s.",
                batch_id,
                self.app_id,
                self.path,
                result.num_rows,
                result.num_segments,
                result.version,
                result.skipped,
            )
            return
        to_arrow = getattr(df, "toArrow", None)
        if to_arrow is None:
            raise UnsupportedError(
                f"The micro-batch {type(df).__name__} has no toArrow(); {_INSTALL_HINT}."
            )
        batch: pa.Table = to_arrow()
        if batch.num_rows == 0:
            logger.info("Batch %d of app %r is empty: nothing to write.", batch_id, self.app_id)
            return
        commit = anyio.run(
            functools.partial(
                _append_batch,
                self.path,
                batch,
                self.app_id,
                int(batch_id),
                self.schema,
                self.table_options,
                self.on_stale,
            )
        )
        logger.info(
            "Batch %d of app %r into %s: %d rows, table version %d, skipped=%s.",
            batch_id,
            self.app_id,
            self.path,
            0 if commit.skipped else batch.num_rows,
            commit.version,
            commit.skipped,
        )


def foreach_batch_sink(
    path: str | Path,
    *,
    app_id: str | None = None,
    schema: pa.Schema | None = None,
    on_stale: str = "error",
    mode: str = "driver",
    **table_options: Any,
) -> ForeachBatchSink:
    """The function to pass to ``DataStreamWriter.foreachBatch``.

    Args:
        path: the table directory (created on the first non-empty batch).
        app_id: the id batch ids are recorded under; default :func:`default_app_id` of
            ``path`` (one query per table; see the module doc).
        schema: the schema of a new table; default from the first batch.
        on_stale: ``"error"`` (default): a batch id below the last one committed for
            ``app_id`` raises :class:`~streamwrite.errors.StaleBatchError`; ``"skip"``: it is
            skipped with a warning. A replay of the last batch id is always a quiet skip.
        mode: ``"driver"`` (default): each micro-batch is collected to the driver
            (``toArrow``) and appended there. ``"executors"``: each task encodes its rows
            into staged segments and the driver publishes them in one commit
            (:func:`streamwrite.spark.write`; the executors must share the table directory).
        table_options: passed to :func:`streamwrite.open_table` (``timestamp``,
            ``partition_by``, write options such as ``compression``).

    Returns:
        A callable ``sink(df, batch_id) -> None``.

    Raises:
        UnsupportedError: pyspark (>= 4.0) is not installed.
        ConfigError: an empty ``app_id``, ``on_stale`` not ``"error"`` or ``"skip"``, or
            ``mode`` not ``"driver"`` or ``"executors"``.
    """
    _require_pyspark()
    if app_id is not None and not app_id:
        raise ConfigError("app_id must be a non-empty string, got ''.")
    if on_stale not in ON_STALE:
        raise ConfigError(f"on_stale must be one of {list(ON_STALE)}, got {on_stale!r}.")
    if mode not in SINK_MODES:
        raise ConfigError(f"mode must be one of {list(SINK_MODES)}, got {mode!r}.")
    directory = Path(path)
    return ForeachBatchSink(
        directory,
        app_id or default_app_id(directory),
        schema,
        dict(table_options),
        on_stale,
        mode,
    )


def read_table_df(
    spark: SparkSession,
    path: str | Path,
    *,
    columns: list[str] | None = None,
    filters: Any = None,
    storage_options: dict[str, Any] | None = None,
    via: Literal["source", "files", "arrow"] = "source",
) -> DataFrame:
    """A Spark DataFrame of the table's newest committed snapshot.

    Args:
        spark: the session.
        path: the table directory, or a table URL (``s3://bucket/prefix``: the newest
            version the table published there).
        columns: the columns to read, in that order (None: all).
        filters: only the rows matching them: pyarrow's DNF (``[("x", "<", 3)]``) or a
            ``pyarrow.compute.Expression``, with ``streamwrite.read_table(filters=)``'s
            semantics (pruned, then applied to the rows).
        storage_options: fsspec options (credentials, endpoint) for a table URL or its cold
            segments, passed to the executors.
        via: ``"source"``: the ``streamwrite`` data source
            (``spark.read.format("streamwrite")``) pins one snapshot and the executors read
            its row groups at their committed sizes (exact during appends and compaction;
            distributed). ``"files"``: Spark reads each segment's ``data.parquet`` itself
            (exact only while no append is in flight, because Spark reads the footer at the
            end of the file when the task runs; a compaction that retires a segment before
            the lazy DataFrame runs makes the read fail with file-not-found, never wrong rows;
            ``filters`` must be DNF). ``"arrow"``: streamwrite reads the snapshot on the
            driver and Spark gets the Arrow table (exact; driver memory bound).

    Returns:
        The DataFrame (lazy for ``"source"`` and ``"files"``).

    Raises:
        UnsupportedError: pyspark (>= 4.0) is not installed.
        ConfigError: an unknown ``via``; ``filters`` that are not a filter (or an Expression
            with ``via="files"``).
        SchemaError: ``columns`` or ``filters`` names a column the table does not have.
        CorruptFileError: the table's ``_txn`` is damaged (or missing: FileNotFoundError).
        StateError: ``via="files"`` on a table with segments in cold storage.
    """
    _require_pyspark()
    import json

    from streamwrite.spark import datasource
    from streamwrite.spark.dnf import dnf_to_column
    from streamwrite.spark.reading import check_columns, filter_expression

    if via not in ("source", "files", "arrow"):
        raise ConfigError(f"via must be 'source', 'files' or 'arrow', got {via!r}.")
    expression = filter_expression(filters)
    snapshot = datasource.pin_snapshot(str(path), storage_options)
    schema = snapshot.schema or pa.schema([])
    check_columns(str(path), schema, expression, columns, partition_columns=False)
    if via == "source":
        # registered in this session now: the discovered source has no pushdown, and an
        # earlier registration may have pushdown for a conf that is off since
        datasource.register(spark)
        reader = spark.read.format(datasource.NAME)
        try:
            parallelism = int(spark.sparkContext.defaultParallelism)
        except Exception:  # Spark Connect: the planner's cores
            parallelism = 0
        if parallelism > 0:
            reader = reader.option(datasource.PARALLELISM_OPTION, str(parallelism))
        if columns is not None:
            reader = reader.option(datasource.COLUMNS_OPTION, json.dumps(list(columns)))
        if expression is not None:
            reader = reader.option(datasource.FILTER_OPTION, datasource.encode_filter(expression))
        if storage_options:
            reader = reader.option(
                datasource.STORAGE_OPTIONS_OPTION, json.dumps(dict(storage_options))
            )
        frame: DataFrame = reader.load(str(path))
        return frame
    if via == "arrow" or not snapshot.files:
        return spark.createDataFrame(snapshot.read(columns, filters=filters))
    if filters is not None and not isinstance(filters, list | tuple):
        raise ConfigError(
            "via='files' takes filters as pyarrow's DNF (Spark applies them as a Column); "
            "use via='source' for a pyarrow.compute.Expression."
        )
    files = [str(data_path) for data_path in snapshot.data_files()]
    frame = spark.read.parquet(*files)
    if filters is not None:
        frame = frame.filter(dnf_to_column(filters, schema))
    if columns is not None:
        frame = frame.select(*columns)
    return frame
