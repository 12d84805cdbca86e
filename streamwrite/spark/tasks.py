"""Read tasks of the ``streamwrite`` data source: planned on the driver from one pinned
snapshot, read on the executors (no pyspark here: :mod:`streamwrite.spark.datasource` wraps
each :class:`ReadTask` in an ``InputPartition``).

A task is a run of row groups of **one** segment, at the segment's committed size::

    ReadTask(name="ts_day=2026-11-22/seg-000003", size=15082344, footer_xxh64=0x9f..,
             row_groups=(4, 5, 6), num_bytes=6291456)

Planning (:func:`plan_tasks`), on the driver, from a snapshot pinned once:

1. the segments and row groups to read: all of them; with a filter, those that
   ``TableSnapshot.plan`` keeps (partition time ranges, the skipping store, each footer's
   statistics, bloom filters, embedded index and page index);
2. each kept row group's bytes: the compressed sizes, from the footer, of the column chunks
   the read decodes (the projected columns; every column when none is projected);
3. the split size, Spark's rule for files (``FilePartition.maxSplitBytes``)::

       split_bytes = min(target_bytes, max(MIN_SPLIT_BYTES, ceil(total_bytes / parallelism)))

4. per segment, its kept row groups in order, cut into ``ceil(segment_bytes / split_bytes)``
   runs of about equal bytes (a row group goes to the run its byte midpoint falls in, as
   Spark assigns row groups to file splits); a run still over ``split_bytes`` is cut
   greedily, so a task is within ``split_bytes`` or a single row group. A task never spans
   two segments, so every segment read has at least one task and there are at least
   ``min(num_segments, parallelism)`` tasks; with row groups small enough, about
   ``max(parallelism, total_bytes / target_bytes)``.

Reading (:func:`read_task`), on an executor: the segment is opened at its committed size
(a live segment being appended to reads exactly as the snapshot saw it; a segment that
compaction retired meanwhile is read from ``_data.retired`` during the grace period), only
the task's row groups and only the projected columns are decoded, the filter prunes pages
and rows, and the rows come out as record batches of the Spark Arrow schema.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

import streamwrite
from streamwrite.errors import ConfigError, SchemaError

__all__ = [
    "DEFAULT_TARGET_BYTES",
    "MIN_SPLIT_BYTES",
    "ReadTask",
    "SegmentRowGroups",
    "pack_tasks",
    "plan_tasks",
    "read_task",
    "segment_row_groups",
    "split_bytes",
    "to_spark_batch",
]

DEFAULT_TARGET_BYTES = 128 * 1024 * 1024
"""Most compressed bytes of one task (Spark's ``spark.sql.files.maxPartitionBytes``)."""
MIN_SPLIT_BYTES = 4 * 1024 * 1024
"""The split size never goes below this to reach the parallelism (Spark's
``spark.sql.files.openCostInBytes``): a task costs a Python worker round trip and a footer
read, so tiny tasks only add overhead."""
BATCH_ROWS = 65_536
"""Most rows of one record batch sent to Spark."""

OpenSegment = Callable[[str, int], streamwrite.ParquetFile]
"""Opens segment ``partition/segment`` at its committed size."""


@dataclass(frozen=True, slots=True)
class ReadTask:
    """One input partition: row groups of one segment read at its committed size."""

    name: str
    """``partition/segment``."""
    size: int
    """The segment's committed size (its data file is read only up to it)."""
    footer_xxh64: int | None
    """The XXH64 ``_txn`` recorded for the segment's footer (None: not recorded)."""
    row_groups: tuple[int, ...]
    """The row groups read, ascending."""
    num_bytes: int
    """Compressed bytes of the column chunks read."""


@dataclass(frozen=True, slots=True)
class SegmentRowGroups:
    """A segment to read: its kept row groups and the bytes each one reads."""

    name: str
    size: int
    footer_xxh64: int | None
    row_groups: tuple[int, ...]
    row_group_bytes: tuple[int, ...]


def split_bytes(total_bytes: int, target_bytes: int, parallelism: int) -> int:
    """The most bytes of one task (module docstring, step 3).

    Returns:
        ``min(target_bytes, max(MIN_SPLIT_BYTES, ceil(total_bytes / parallelism)))``.
    """
    per_core = -(-total_bytes // max(parallelism, 1))
    return max(1, min(target_bytes, max(MIN_SPLIT_BYTES, per_core)))


def pack_tasks(
    segments: Sequence[SegmentRowGroups], target_bytes: int, parallelism: int
) -> list[ReadTask]:
    """The tasks reading ``segments`` (module docstring, steps 3 and 4).

    Returns:
        The tasks, segment by segment in the order given, row groups ascending.
    """
    total = sum(sum(s.row_group_bytes) for s in segments)
    limit = split_bytes(total, target_bytes, parallelism)
    tasks: list[ReadTask] = []
    for segment in segments:
        for run in _balanced_runs(segment.row_group_bytes, limit):
            indexes = tuple(segment.row_groups[i] for i in run)
            run_bytes = sum(segment.row_group_bytes[i] for i in run)
            tasks.append(
                ReadTask(segment.name, segment.size, segment.footer_xxh64, indexes, run_bytes)
            )
    return tasks


def _balanced_runs(sizes: Sequence[int], limit: int) -> list[list[int]]:
    """Consecutive runs of the positions of ``sizes``: as few runs as ``limit`` allows,
    of about equal bytes (each position goes to the run its byte midpoint falls in, as
    Spark assigns row groups to file splits); a run still over ``limit`` is then cut
    greedily, so every run is within ``limit`` or a single position."""
    seg_total = sum(sizes)
    num_runs = max(1, -(-seg_total // limit))
    runs: list[list[int]] = [[] for _ in range(num_runs)]
    start = 0
    for position, size in enumerate(sizes):
        midpoint = start + size / 2
        runs[min(num_runs - 1, int(midpoint * num_runs / max(seg_total, 1)))].append(position)
        start += size
    result: list[list[int]] = []
    for run in runs:
        piece: list[int] = []
        piece_bytes = 0
        for position in run:
            if piece and piece_bytes + sizes[position] > limit:
                result.append(piece)
                piece, piece_bytes = [], 0
            piece.append(position)
            piece_bytes += sizes[position]
        if piece:
            result.append(piece)
    return result


def _top_level_names(pf: streamwrite.ParquetFile) -> list[str]:
    """The top-level field of each leaf column, in column order (from the Parquet schema:
    a depth-first list of elements, groups giving their number of children)."""
    elements = pf.thrift_metadata.schema or []
    names: list[str] = []
    stack: list[tuple[str, int]] = []  # (top-level name, children still to visit)
    for element in elements[1:]:  # the root first
        top = stack[0][0] if stack else element.name or ""
        if stack:
            name, left = stack[-1]
            stack[-1] = (name, left - 1)
        children = element.num_children or 0
        if children:
            stack.append((top, children))
        else:
            names.append(top)
        while stack and stack[-1][1] == 0:
            stack.pop()
    return names


def row_group_bytes(pf: streamwrite.ParquetFile, columns: Sequence[str] | None) -> list[int]:
    """Compressed bytes of each row group's chunks of ``columns`` (top-level names; None or
    none of them present: every column)."""
    row_groups = pf.thrift_metadata.row_groups or []
    tops = _top_level_names(pf)
    wanted = set(columns or ())
    keep = [top in wanted for top in tops]
    if not any(keep):
        keep = [True] * len(tops)
    sizes = []
    for row_group in row_groups:
        chunks = row_group.columns or []
        if len(chunks) != len(keep) or any(chunk.meta_data is None for chunk in chunks):
            # encrypted column metadata: the row group's size, as a share of its columns
            whole = row_group.total_compressed_size or row_group.total_byte_size or 0
            sizes.append(max(1, whole * sum(keep) // max(len(keep), 1)))
            continue
        total = 0
        for chunk, wanted_chunk in zip(chunks, keep, strict=True):
            if wanted_chunk and chunk.meta_data is not None:
                total += chunk.meta_data.total_compressed_size or 0
        sizes.append(total)
    return sizes


def segment_row_groups(
    snapshot: streamwrite.TableSnapshot,
    open_segment: OpenSegment,
    columns: Sequence[str] | None,
    filters: pc.Expression | None,
) -> list[SegmentRowGroups]:
    """The segments of ``snapshot`` to read and their kept row groups (module docstring,
    steps 1 and 2); every one for None or a filter the pruning cannot represent (it is then
    applied to the rows only).

    Returns:
        The segments in row order (none of a segment every row group of which is pruned).

    Raises:
        CorruptFileError: a segment is missing or damaged.
    """
    recorded = snapshot.footer_checksums  # empty: unknown
    checksums = {
        name: recorded[i] if i < len(recorded) else None
        for i, (name, _) in enumerate(snapshot.files)
    }
    kept: dict[str, set[int] | None] = {name: None for name, _ in snapshot.files}
    if filters is not None:
        try:
            plan = snapshot.plan(filters)
        except (ConfigError, SchemaError):
            plan = None
        if plan is not None:
            kept = {}
            for segment in plan.segments:
                if segment.skipped_by is not None:
                    continue
                read_plan = segment.read_plan
                kept[segment.name] = (
                    None
                    if read_plan is None  # a filter column it lacks: every row group
                    else {rg.index for rg in read_plan.row_groups if rg.skipped_by is None}
                )
    segments: list[SegmentRowGroups] = []
    for name, size in snapshot.files:
        if name not in kept:
            continue
        with open_segment(name, size) as pf:
            sizes = row_group_bytes(pf, columns)
        wanted = kept[name]
        indexes = [i for i in range(len(sizes)) if wanted is None or i in wanted]
        if indexes:
            segments.append(
                SegmentRowGroups(
                    name,
                    size,
                    checksums.get(name),
                    tuple(indexes),
                    tuple(sizes[i] for i in indexes),
                )
            )
    return segments


def plan_tasks(
    snapshot: streamwrite.TableSnapshot,
    open_segment: OpenSegment,
    *,
    columns: Sequence[str] | None = None,
    filters: pc.Expression | None = None,
    target_bytes: int = DEFAULT_TARGET_BYTES,
    parallelism: int = 1,
) -> list[ReadTask]:
    """The read tasks of ``snapshot`` (the module docstring says how).

    Args:
        snapshot: the pinned snapshot.
        open_segment: opens a segment of it at its committed size.
        columns: the table columns read (None: all).
        filters: prunes segments and row groups (rows are filtered by :func:`read_task`).
        target_bytes: most compressed bytes of one task.
        parallelism: tasks wanted at least (Spark's default parallelism).

    Returns:
        The tasks.

    Raises:
        ConfigError: ``target_bytes`` or ``parallelism`` is not a positive integer.
        CorruptFileError: a segment is missing or damaged.
    """
    for label, value in (("target_bytes", target_bytes), ("parallelism", parallelism)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{label} must be a positive integer, got {value!r}.")
    segments = segment_row_groups(snapshot, open_segment, columns, filters)
    return pack_tasks(segments, target_bytes, parallelism)


def to_spark_batch(
    table: pa.RecordBatch,
    target: pa.Schema,
    natural: pa.Schema,
    constants: dict[str, str] | None = None,
) -> pa.RecordBatch:
    """``table``'s rows as ``target`` (the Arrow form of Spark's schema): each column cast
    (dictionaries decoded; timestamps cut to microseconds where ``target`` has the type
    ``natural`` gives that column, a cast to any other type must not lose data), a column
    ``table`` lacks null, a name in ``constants`` that value in every row.

    Returns:
        One record batch with exactly ``target``.

    Raises:
        SchemaError: a value does not fit ``target`` (a cast that would lose data, a null
            in a non-nullable field).
    """
    num_rows = table.num_rows
    names = table.schema.names
    arrays: list[pa.Array | pa.ChunkedArray] = []
    for field in target:
        if constants and field.name in constants:
            array = pa.array([constants[field.name]] * num_rows, pa.string())
        elif field.name in names:
            array = table.column(field.name)
        else:
            array = pa.nulls(num_rows, field.type)
        if not array.type.equals(field.type):
            index = natural.get_field_index(field.name)
            safe = index < 0 or not natural.field(index).type.equals(field.type)
            try:
                array = pc.cast(array, field.type, safe=safe)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaError(
                    f"The column {field.name!r} ({array.type}) does not convert to the "
                    f"type Spark asked for, {field.type}: {exc}"
                ) from None
        if not field.nullable and array.null_count:
            raise SchemaError(
                f"The column {field.name!r} has nulls, and Spark's schema says it has none."
            )
        arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def read_task(
    pf: streamwrite.ParquetFile,
    task: ReadTask,
    table_schema: pa.Schema,
    target: pa.Schema,
    natural: pa.Schema,
    filters: pc.Expression | None,
    constants: dict[str, str] | None = None,
    batch_rows: int = BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """The rows of ``task``'s row groups of the open segment ``pf`` that match ``filters``,
    as record batches of ``target`` (:func:`to_spark_batch`).

    Args:
        pf: the segment, open at the task's committed size.
        task: what to read.
        table_schema: the table's Arrow schema (a segment written before ``add_columns``
            lacks the newer columns: nulls there, for the output and for the filter).
        target: the Arrow form of Spark's schema: only its table columns are read.
        natural: the Arrow form of the Spark schema of the whole table.
        filters: applied to the rows (its row groups and pages pruned first).
        constants: columns with one value (the Hive partition column).
        batch_rows: most rows of one batch.

    Returns:
        An iterator of record batches.

    Raises:
        CorruptFileError: the segment is damaged; SchemaError: as :func:`to_spark_batch`.
    """
    present_names = set(pf.schema_arrow.names)
    columns = [name for name in target.names if name in present_names]
    tables: Iterator[pa.Table | pa.RecordBatch]
    if filters is None:
        tables = (pf.read_row_group(i, columns) for i in task.row_groups)
    else:
        try:
            tables = pf.iter_batches(batch_rows, columns, list(task.row_groups), filters=filters)
        except (ConfigError, SchemaError):
            # a filter on a column the segment lacks, or one the pruning cannot represent:
            # every row of the row groups, the table's columns (nulls where it lacks them)
            tables = _filter_rows(pf, task, table_schema, filters)
    for table in tables:
        for batch in _slices(table, batch_rows):
            yield to_spark_batch(batch, target, natural, constants)


def _filter_rows(
    pf: streamwrite.ParquetFile,
    task: ReadTask,
    table_schema: pa.Schema,
    filters: pc.Expression,
) -> Iterator[pa.Table]:
    names = set(pf.schema_arrow.names)
    present = [name for name in table_schema.names if name in names]
    for i in task.row_groups:
        table = pf.read_row_group(i, present)
        columns = [
            table.column(field.name)
            if field.name in names
            else pa.chunked_array([pa.nulls(table.num_rows, field.type)])
            for field in table_schema
        ]
        yield pa.Table.from_arrays(columns, schema=table_schema).filter(filters)


def _slices(table: pa.Table | pa.RecordBatch, batch_rows: int) -> Iterator[pa.RecordBatch]:
    if isinstance(table, pa.RecordBatch):
        for offset in range(0, table.num_rows, batch_rows):
            yield table.slice(offset, batch_rows)
        return
    yield from table.to_batches(max_chunksize=batch_rows)
