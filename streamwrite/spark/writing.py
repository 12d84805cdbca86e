"""Spark writes on the executors: each task encodes its rows into staged segments, the driver
publishes them in one table commit, exactly once.

::

    import streamwrite.spark

    result = streamwrite.spark.write(df, "ticks", app_id="nightly", batch_id=20261122,
                                     timestamp="ts", partition_by="day")
    sink = streamwrite.spark.foreach_batch_sink("ticks", mode="executors",
                                                timestamp="ts", partition_by="day")

Per call (one batch ``(app_id, batch_id)``), on the driver::

    open_table(path)                        create it (schema= or the DataFrame's, normalised
                                            as the sink does) or reopen it: recovery deletes
                                            staging a crash left; the writer lock is held
                                            until the end (no other writer, no compaction)
    (app_id, batch_id) applied already      skipped at once: no Spark job (a replay); a lower
                                            id is StaleBatchError unless on_stale="skip"
    staged = table.stage(app_id, batch_id)  picklable: schema, partitioning, write options,
                                            encryption, the batch's staging directory
    df.mapInArrow(stage).collect()          every task attempt conforms its rows to the table
                                            schema and writes one staged segment per
                                            partition it touches into its own directory
                                            (_staging/<batch>/<stage.partition.attempt-tid-rand>/
                                            <partition>/), committed and fsynced, then yields
                                            one row per staged segment
    table.adopt_staged(rows)                verify, rename into <partition>/seg-N, ONE _txn
                                            version with applied[app_id] = batch_id, delete
                                            the batch's staging (failed and losing attempts)

Exactly once: Spark's ``collect`` returns the output of exactly one successful attempt per
task; a failed attempt (retried), a speculative or duplicate attempt that lost, and the run
of a driver that died before the publish leave files that no report names: they are never
published, and are deleted (after the publish, or when the next writer opens the table). A
replayed batch id is skipped against ``_txn`` before any job runs, and again at the publish.
The driver also refuses two reports from different attempts of one task.

Executors must see the table directory at the same path as the driver (local mode, or a
shared file system such as NFS): a staged segment the driver cannot find fails the batch
with CorruptFileError and publishes nothing. Encryption settings travel to the executors
pickled (a :class:`~streamwrite.FileEncryption` whose KMS client pickles).

Speed: the tasks encode in their Python worker (no process pool: Spark already runs one
worker per core), ``row_group_size`` rows per row group (the table's write option, default
1,048,576), batches from the JVM gathered into pieces of up to that many rows before they are
conformed and split by partition. A staged segment is committed once at the end of its task
(or each ``stage_commit_size`` encoded bytes), so a task holds about that much encoded data.

Segments of a partition are not merged across tasks: each task adds one segment per partition
it touches, and compaction (``streamwrite compact``) merges them later. Staged segments are not
entered in the table's skipping store (readers prune them by their footers;
:func:`streamwrite.build_index` adds them); embedded indexes are written as usual.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pyarrow as pa

from streamwrite import StagedBatch, StagedSegment, open_table
from streamwrite.errors import ConfigError, StateError
from streamwrite.inspect import is_table
from streamwrite.spark.sink import (
    SINK_LOCK_TIMEOUT_SECONDS,
    _require_pyspark,
    conform,
    table_schema_for,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from streamwrite import Table

__all__ = ["STAGED_ROWS_DDL", "WriteResult", "stage_rows", "write"]

STAGE_COMMIT_SIZE = 64 * 1024 * 1024
"""Default encoded bytes a staged segment holds in a task before committing them."""
STAGED_ROWS_DDL = (
    "partition STRING, path STRING, size BIGINT, footer_xxh64 STRING, num_rows BIGINT, "
    "task BIGINT, attempt STRING"
)
"""The row each task yields per staged segment (the XXH64 as decimal text: Spark has no
unsigned 64-bit type)."""
_STAGED_ROWS_SCHEMA = pa.schema(
    [
        ("partition", pa.string()),
        ("path", pa.string()),
        ("size", pa.int64()),
        ("footer_xxh64", pa.string()),
        ("num_rows", pa.int64()),
        ("task", pa.int64()),
        ("attempt", pa.string()),
    ]
)


@dataclass(frozen=True)
class WriteResult:
    """What :func:`write` did: ``num_rows`` written, ``num_segments`` published, the table
    ``version`` after it, and ``skipped`` for a batch id committed before (nothing written)."""

    num_rows: int
    num_segments: int
    version: int
    skipped: bool = False


def _pieces(
    batches: Iterable[pa.RecordBatch], schema: pa.Schema, piece_rows: int
) -> Iterator[pa.Table]:
    """The batches from the JVM gathered into tables of at least ``piece_rows`` rows (the
    last fewer), each conformed to ``schema`` (:func:`~streamwrite.spark.conform`)."""
    gathered: list[pa.RecordBatch] = []
    num_rows = 0
    for batch in batches:
        if not batch.num_rows:
            continue
        gathered.append(batch)
        num_rows += batch.num_rows
        if num_rows >= piece_rows:
            yield conform(pa.Table.from_batches(gathered), schema)
            gathered, num_rows = [], 0
    if gathered:
        yield conform(pa.Table.from_batches(gathered), schema)


def _stage_task(
    staged: StagedBatch,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of one batch: stage this task's rows, yield their rows."""
    piece_rows = int(staged.write_options.get("row_group_size") or 1024 * 1024)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        context = TaskContext.get()
        task = context.partitionId() if context is not None else 0
        if context is None:
            attempt = f"driver-{uuid.uuid4().hex}"
        else:  # unique within the application; the random part across restarts of the driver
            attempt = (
                f"{context.stageId()}.{task}.{context.attemptNumber()}-"
                f"{context.taskAttemptId()}-{uuid.uuid4().hex[:12]}"
            )
        segments = staged.write(_pieces(batches, staged.schema, piece_rows), attempt)
        yield pa.RecordBatch.from_pylist(
            [
                {
                    "partition": s.partition,
                    "path": s.path,
                    "size": s.size,
                    "footer_xxh64": None if s.footer_xxh64 is None else str(s.footer_xxh64),
                    "num_rows": s.num_rows,
                    "task": task,
                    "attempt": attempt,
                }
                for s in segments
            ],
            schema=_STAGED_ROWS_SCHEMA,
        )

    return run


def stage_rows(df: DataFrame, staged: StagedBatch) -> list[StagedSegment]:
    """Run the Spark job that stages ``df``'s rows for ``staged`` (blocking) and collect the
    reports: exactly one successful attempt's per task.

    Returns:
        The staged segments to adopt.

    Raises:
        StateError: two attempts of one task reported (never done by Spark's collect).
    """
    rows = df.mapInArrow(_stage_task(staged), STAGED_ROWS_DDL).collect()
    attempts: dict[int, str] = {}
    segments = []
    for row in rows:
        if attempts.setdefault(row["task"], row["attempt"]) != row["attempt"]:
            raise StateError(
                f"Task {row['task']} of the staging job reported two attempts "
                f"({attempts[row['task']]!r} and {row['attempt']!r}); nothing was published."
            )
        xxh64 = row["footer_xxh64"]
        segments.append(
            StagedSegment(
                row["partition"],
                row["path"],
                int(row["size"]),
                None if xxh64 is None else int(xxh64),
                int(row["num_rows"]),
            )
        )
    return segments


def _arrow_schema(df: DataFrame) -> pa.Schema:
    """The Arrow schema of ``df`` as ``toArrow`` gives it (zoned timestamps in UTC; no job
    runs, unless this pyspark lacks the converter: then ``df.limit(0).toArrow()``)."""
    try:
        from pyspark.sql.pandas.types import to_arrow_schema

        return to_arrow_schema(df.schema, timezone="UTC")
    except (ImportError, TypeError):
        schema: pa.Schema = df.limit(0).toArrow().schema
        return schema


async def _write(
    df: DataFrame,
    path: Path,
    app_id: str,
    batch_id: int,
    schema: pa.Schema | None,
    on_stale: str,
    stage_commit_size: int,
    table_options: dict[str, Any],
) -> WriteResult:
    create_schema = None if is_table(path) else (schema or table_schema_for(_arrow_schema(df)))
    options = {
        "lock_timeout": SINK_LOCK_TIMEOUT_SECONDS,
        "compaction_interval": None,
        **table_options,
    }
    table: Table = await open_table(path, create_schema, **options)
    try:
        staged = table.stage(app_id, batch_id, commit_size=stage_commit_size)
        if table.record.is_applied(app_id, batch_id):  # a replay (or stale): no job
            commit = await table.adopt_staged(
                [], app_id=app_id, batch_id=batch_id, on_stale=on_stale
            )
            return WriteResult(0, 0, commit.version, commit.skipped)
        segments = await anyio.to_thread.run_sync(stage_rows, df, staged)
        commit = await table.adopt_staged(
            segments, app_id=app_id, batch_id=batch_id, on_stale=on_stale
        )
    finally:
        await table.close()
    if commit.skipped:
        return WriteResult(0, 0, commit.version, True)
    return WriteResult(commit.num_rows, len(segments), commit.version)


def write(
    df: DataFrame,
    path: str | Path,
    *,
    app_id: str,
    batch_id: int,
    schema: pa.Schema | None = None,
    on_stale: str = "error",
    stage_commit_size: int = STAGE_COMMIT_SIZE,
    **table_options: Any,
) -> WriteResult:
    """Write ``df`` into the table at ``path`` on the executors, as batch ``(app_id,
    batch_id)``, exactly once (module docstring).

    Args:
        df: the rows (columns matched to the table's by name, cast as the sink does).
        path: the table directory, seen by every executor at this path.
        app_id: the id the batch id is recorded under.
        batch_id: the batch id (0 or more); a batch id committed before is skipped.
        schema: the schema of a new table; default the DataFrame's, normalised
            (:func:`~streamwrite.spark.table_schema_for`).
        on_stale: ``"error"``: a batch id below the last one committed for ``app_id`` raises
            :class:`~streamwrite.StaleBatchError`; ``"skip"``: skipped with a warning.
        stage_commit_size: encoded bytes a staged segment holds in a task before committing
            them (default 64 MiB; below it one commit per segment).
        table_options: passed to :func:`streamwrite.open_table` (``timestamp``,
            ``partition_by``, ``encryption``, write options such as ``compression`` and
            ``row_group_size``).

    Returns:
        Rows written, segments published, the table version after it, and ``skipped``. An
        empty DataFrame publishes nothing (no version, no batch id: its replay is empty too).

    Raises:
        UnsupportedError: pyspark (>= 4.0) is not installed.
        ConfigError: bad ids or options.
        SchemaError: the rows do not fit the table schema (a task fails; nothing published).
        StaleBatchError: ``batch_id`` is below the last one committed for ``app_id``.
        CorruptFileError: a staged segment is missing (executors that do not share the table
            directory) or not what its task reported: nothing is published.
        StreamwriteIOError: another writer holds the table past ``lock_timeout``, or the
            publish failed.
    """
    _require_pyspark()
    if not isinstance(app_id, str) or not app_id:
        raise ConfigError(f"app_id must be a non-empty string, got {app_id!r}.")
    return anyio.run(
        functools.partial(
            _write,
            df,
            Path(path),
            app_id,
            batch_id,
            schema,
            on_stale,
            stage_commit_size,
            dict(table_options),
        )
    )
