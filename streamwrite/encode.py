"""Arrow -> jobs, for every writer: the one place a table becomes column-chunk jobs.

Every writer (``ParquetWriter``/``write_table``, live files, tables, compaction's Arrow path)
goes through these steps; only where the jobs run (inline or a process pool) and where the
chunks go (a file, a live file's commit) differ::

    data --as_table--> pa.Table of the target schema       SchemaError naming the first
                                                           column that differs
         --check_values--> every value fits its column     before any row group is written
         --row_group_jobs--> EncodeChunkJob per leaf       shred (levels and values of each
                                                           leaf of each field) + chunk_settings
                                                           (+ the leaf's ChunkCrypto)
         --run_job / an executor--> EncodedChunk per leaf    (workers, ring 2)
         --attach_index_parts--> each chunk of an indexed    embedded index parts (spec 001):
                                 column carries its part    distinct values, block min/max
         --FileWriter.add_row_group--> file bytes           (layout, ring 1)

:func:`check_write_options` makes the checks of the write options that need the schema,
before anything is written; :func:`chunk_settings` is a column's encoder settings (compaction
builds its merge jobs from it too).

An :class:`EncodingPlanner`, held by each writer (one per file or segment), decides each
column's encoding once instead of on every chunk. Its rules:

- a column without a decision gets none in its job's settings: the worker analyses the chunk
  (``workers.choose.choose_encodings``) and reports the decision it made, which the planner
  adopts when the chunk comes back (:meth:`EncodingPlanner.observe`);
- a column with a decision gets it: the worker follows it and reports drift (values that
  contradict it, see ``streamwrite.format.chunk.ChunkObservation``); drift drops the decision,
  so the next chunk is analysed afresh. The sampled distinct estimate of a column without a
  dictionary is asked for every ``CARDINALITY_CHECK_EVERY``-th chunk only (the other checks
  come free with the encoding);
- a decision is also dropped after ``resample_every`` chunks followed it (re-sampling on a
  schedule catches what no cheap check sees, such as BYTE_STREAM_SPLIT ceasing to help).

Without a planner every chunk is analysed on its own (no state between row groups).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streamwrite.arrow.column import FieldNode, NodeKind
from streamwrite.arrow.schema import ColumnSpec, ParquetSchema
from streamwrite.arrow.shred import shred
from streamwrite.arrow.values import to_physical
from streamwrite.crypto.encryption import FileEncryptor
from streamwrite.errors import ConfigError, SchemaError
from streamwrite.format.chunk import EncodedChunk, EncodingDecision
from streamwrite.format.enums import FieldRepetitionType, Type
from streamwrite.format.index import (
    ColumnIndexPart,
    DistinctPart,
    IndexColumnSpec,
    TimeIndexPart,
    ValueKind,
)
from streamwrite.options import WriteOptions
from workers.choose import CARDINALITY_CHECK_EVERY
from workers.chunk import ChunkSettings
from workers.encodings import check_encoding
from workers.jobs import EncodeChunkJob, run_job

__all__ = [
    "RESAMPLE_EVERY",
    "EncodingPlanner",
    "as_table",
    "attach_index_parts",
    "check_values",
    "check_write_options",
    "chunk_settings",
    "encode_row_group",
    "index_part",
    "row_group_jobs",
    "schema_difference",
]


def chunk_settings(spec: ColumnSpec, options: WriteOptions) -> ChunkSettings:
    """The encoder settings of one leaf column under ``options``.

    Returns:
        The settings a job of this column carries (picklable).
    """
    return ChunkSettings(
        path_in_schema=spec.path_in_schema,
        physical_type=spec.physical_type,
        type_length=spec.type_length,
        max_definition_level=spec.max_definition_level,
        max_repetition_level=spec.max_repetition_level,
        sort_order=spec.sort_order,
        column=options.column(spec.name),
        data_page_size=options.data_page_size,
        data_page_row_limit=options.data_page_row_limit,
        dictionary_page_size_limit=options.dictionary_page_size_limit,
        data_page_version=options.data_page_version,
        write_page_index=options.write_page_index,
        write_page_checksum=options.write_page_checksum,
        statistics_truncate_length=options.statistics_truncate_length,
        dictionary_typed=pa.types.is_dictionary(spec.field.type),
    )


RESAMPLE_EVERY = 64
"""Chunks a column's encoding decision is followed before the next chunk is analysed again."""


class EncodingPlanner:
    """Decides each column's encoding once per writer and reuses it (rules in the module doc).

    One planner serves one writer (a file, a live file, a table's segment or partition): the
    decisions hold for data like the data seen so far. Calls are not thread-safe; a writer
    makes them one at a time (jobs are built and chunks observed by its coordinator).

    Args:
        resample_every: Chunks a decision is followed before a chunk is analysed again
            (at least 1).

    Raises:
        ConfigError: ``resample_every`` is below 1.
    """

    def __init__(self, resample_every: int = RESAMPLE_EVERY) -> None:
        if resample_every < 1:
            raise ConfigError(f"resample_every must be at least 1, got {resample_every}.")
        self.resample_every = resample_every
        self._decisions: dict[tuple[str, ...], EncodingDecision] = {}
        self._ages: dict[tuple[str, ...], int] = {}
        self._options: WriteOptions | None = None
        self._settings: dict[tuple[str, bool], tuple[EncodingDecision | None, ChunkSettings]] = {}
        self.num_analysed = 0
        """Chunks that came back analysed (no decision given): first chunks, re-samples."""
        self.num_drifted = 0
        """Chunks that reported drift from the decision they were given."""

    def decision(self, path_in_schema: tuple[str, ...]) -> EncodingDecision | None:
        """Returns: the decision the next chunk of this column follows, or None (analyse)."""
        return self._decisions.get(path_in_schema)

    def settings(self, spec: ColumnSpec, options: WriteOptions) -> ChunkSettings:
        """The settings of this column's next job: :func:`chunk_settings` with the current
        decision (cached: a column's settings are rebuilt only when its decision changes).

        Returns:
            The settings.
        """
        if options is not self._options:
            self._options = options
            self._settings.clear()
        key = spec.path_in_schema
        decision = self._decisions.get(key)
        check = self._ages.get(key, 0) % CARDINALITY_CHECK_EVERY == 0  # first, then every n-th
        cached = self._settings.get((spec.name, check))
        if cached is not None and cached[0] == decision:
            return cached[1]
        base = chunk_settings(spec, options) if cached is None else cached[1]
        settings = replace(base, decision=decision, check_cardinality=check)
        self._settings[(spec.name, check)] = (decision, settings)
        return settings

    def observe(self, chunks: Iterable[EncodedChunk]) -> None:
        """Learn from encoded chunks: adopt the decisions of analysed chunks, drop a decision
        on drift or when it has been followed ``resample_every`` times.

        Chunks without an observation (raw copies) are ignored.
        """
        for chunk in chunks:
            seen = chunk.observed
            if seen is None:
                continue
            key = tuple(chunk.meta_data.path_in_schema or ())
            if seen.analysed:
                self.num_analysed += 1
                self._decisions[key] = seen.decision
                self._ages[key] = 0
                continue
            if seen.drift:
                self.num_drifted += 1
                self._forget(key, seen.decision)
                continue
            age = self._ages.get(key, 0) + 1
            self._ages[key] = age
            if age >= self.resample_every:
                self._forget(key, seen.decision)

    def _forget(self, key: tuple[str, ...], followed: EncodingDecision) -> None:
        # Only the decision the chunk followed: a newer one adopted meanwhile stays.
        if self._decisions.get(key) == followed:
            del self._decisions[key]
            self._ages.pop(key, None)


def schema_difference(data: pa.Schema, expected: pa.Schema, owner: str) -> str:
    """A message naming the first column where ``data`` differs from ``expected``, and how.

    The first line is one sentence (``"Column 'qty' (index 2) has type int32 in the data but
    int64 in the table."``); both full schemas follow it.

    Args:
        data: The schema of the data given.
        expected: The schema the data must have.
        owner: What holds ``expected``, as it reads after "in" (``"the table"``).

    Returns:
        The message.
    """
    data_names = data.names
    first = ""
    for index, field in enumerate(expected):
        given = data.field(index) if index < len(data_names) else None
        if given is not None and given.name == field.name:
            if not given.type.equals(field.type):
                first = (
                    f"Column {field.name!r} (index {index}) has type {given.type} in the data "
                    f"but {field.type} in {owner}."
                )
            elif given.nullable != field.nullable:
                how = ("nullable", "required (not nullable)")
                first = (
                    f"Column {field.name!r} (index {index}) is {how[not given.nullable]} in "
                    f"the data but {how[not field.nullable]} in {owner}."
                )
            if first:
                break
            continue
        if field.name not in data_names:
            first = f"The data has no column {field.name!r} (index {index} in {owner})."
        elif given is not None and given.name not in expected.names:
            first = (
                f"The data has a column {given.name!r} (index {index}) that {owner} does not have."
            )
        else:
            first = (
                f"Column {field.name!r} is at index {data_names.index(field.name)} in the "
                f"data but at index {index} in {owner}."
            )
        break
    else:
        if len(data_names) > len(expected.names):
            extra = len(expected.names)
            first = (
                f"The data has a column {data_names[extra]!r} (index {extra}) that {owner} "
                "does not have."
            )
        else:
            first = f"The data's schema differs from the schema of {owner}."
    holder = owner[:1].upper() + owner[1:]
    return f"{first}\nThe data:\n{_indent(data)}\n{holder}:\n{_indent(expected)}"


def _indent(schema: pa.Schema) -> str:
    return "\n".join(f"    {line}" for line in str(schema).splitlines())


def as_table(
    data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch], schema: pa.Schema, owner: str
) -> pa.Table:
    """``data`` (a table, a batch or batches) as one table of ``schema``.

    Returns:
        The data as a table (metadata as given).

    Raises:
        SchemaError: The data's schema differs (metadata aside); the message names the first
            column that differs and how, and ``owner`` (``"the table"``) names the target.
    """
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    elif not isinstance(data, pa.Table):
        batches = list(data)
        for batch in batches:
            if not batch.schema.equals(schema, check_metadata=False):
                raise SchemaError(schema_difference(batch.schema, schema, owner))
        data = pa.Table.from_batches(batches, schema=schema)
    if not data.schema.equals(schema, check_metadata=False):
        raise SchemaError(schema_difference(data.schema, schema, owner))
    return data


def _checks_values(arrow_type: pa.DataType) -> bool:
    """Whether converting a column of ``arrow_type`` checks its values (and may refuse one)."""
    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    if isinstance(arrow_type, pa.BaseExtensionType):
        arrow_type = arrow_type.storage_type
    if pa.types.is_time32(arrow_type) or pa.types.is_timestamp(arrow_type):
        return bool(arrow_type.unit == "s")
    return bool(pa.types.is_decimal(arrow_type) or pa.types.is_date64(arrow_type))


def check_values(table: pa.Table, schema: ParquetSchema) -> None:
    """Refuse ``table`` if any of its values cannot be written, before a row group is written.

    Row groups are converted and encoded one at a time (so memory stays at one row group's
    worth); this pass makes sure a bad value in a later row group refuses the whole table
    instead of failing half way. It is vectorised and one column at a time: a REQUIRED column
    by its ``null_count``; the columns whose conversion checks values (decimals against their
    precision, ``date64`` and ``time32[s]`` against INT32, ``timestamp[s]`` against int64
    milliseconds) by converting the whole column once; every other conversion cannot fail on
    a value. (Should a later row group fail anyway, the writer fails and publishes nothing.)
    A nested field is shredded whole (:func:`~streamwrite.arrow.shred.shred`) when one of its
    REQUIRED levels holds a null anywhere or one of its leaves checks values; otherwise it
    cannot fail.

    Raises:
        SchemaError: As :func:`streamwrite.arrow.schema.to_physical` and
            :func:`~streamwrite.arrow.shred.shred`, for the first column holding a bad value.
    """
    for index, node in enumerate(schema.fields):
        column = table.column(index)
        if node.kind is NodeKind.LEAF:
            spec = schema.columns[node.leaf_start]
            required = spec.repetition == FieldRepetitionType.REQUIRED
            if (required and column.null_count) or _checks_values(spec.field.type):
                to_physical(column, spec)
        elif any(_may_refuse(chunk, node) for chunk in column.chunks):
            shred(column, node, schema.columns)


def _may_refuse(array: pa.Array, node: FieldNode) -> bool:
    """Whether shredding ``array`` may raise: a REQUIRED node's array holds a null (it may be
    under a null parent: only shredding tells), or a leaf's conversion checks values."""
    if not node.nullable and array.null_count:
        return True
    if node.kind is NodeKind.LEAF:
        return _checks_values(node.field.type)
    if isinstance(array, pa.ExtensionArray):
        array = array.storage
    if node.kind is NodeKind.STRUCT:
        return any(_may_refuse(array.field(i), c) for i, c in enumerate(node.children))
    if node.kind is NodeKind.LIST:
        return _may_refuse(array.values, node.children[0])
    entries = array.values  # MAP: struct<key, value>
    return any(_may_refuse(entries.field(i), c) for i, c in enumerate(node.children))


def check_write_options(schema: ParquetSchema, options: WriteOptions) -> None:
    """The checks of ``options`` that need the file's schema, made before anything is written.

    Raises:
        ConfigError: A column's explicit encoding cannot encode its physical type, or a Bloom
            filter is asked for a BOOLEAN column.
    """
    for spec in schema.columns:
        column = options.column(spec.name)
        if column.encoding is not None:
            check_encoding(column.encoding, spec.physical_type, spec.name)
        if column.bloom_filter is not None and spec.physical_type == Type.BOOLEAN:
            raise ConfigError(
                f"bloom_filter_options asks for a Bloom filter on column {spec.name!r}, which "
                "is BOOLEAN: Parquet Bloom filters do not cover BOOLEAN columns."
            )
    by_name = {spec.name: spec for spec in schema.columns}
    for index_spec in options.embedded_index:
        indexed = by_name.get(index_spec.name)
        if indexed is None or indexed.is_nested:
            raise ConfigError(
                f"embedded_index names column {index_spec.name!r}, which is not a flat "
                "top-level column: spec 001's embedded indexes cover flat columns only."
            )
        value_type = _value_type(indexed.field.type)
        if index_spec.distinct and _value_kind(value_type) is None:
            raise ConfigError(
                f"embedded_index asks for a distinct index on column {index_spec.name!r} of "
                f"type {value_type}: distinct takes integer, date, time, timestamp, string and "
                "binary columns (floats and decimals have several spellings of one value)."
            )
        if index_spec.datafusion and not pa.types.is_string(value_type):
            raise ConfigError(
                f"embedded_index asks for datafusion_distinct on column {index_spec.name!r} of "
                f"type {value_type}: spec 001's blob holds UTF-8 strings (type string)."
            )
        if index_spec.time_index and _value_kind(value_type) is not ValueKind.INT64:
            raise ConfigError(
                f"embedded_index asks for a time_index on column {index_spec.name!r} of type "
                f"{value_type}: time_index takes timestamp, date, time, duration and integer "
                "columns."
            )


def _value_type(arrow_type: pa.DataType) -> pa.DataType:
    if pa.types.is_dictionary(arrow_type):
        return arrow_type.value_type
    return arrow_type


def _value_kind(arrow_type: pa.DataType) -> ValueKind | None:
    """How a column's values are stored in a DISTINCT entry (None: not indexable)."""
    types = pa.types
    if types.is_integer(arrow_type) or (
        types.is_temporal(arrow_type) and not types.is_interval(arrow_type)
    ):
        return ValueKind.INT64
    if (
        types.is_string(arrow_type)
        or types.is_large_string(arrow_type)
        or types.is_binary(arrow_type)
        or types.is_large_binary(arrow_type)
        or types.is_fixed_size_binary(arrow_type)
    ):
        return ValueKind.BYTES
    return None


def _decoded(column: pa.ChunkedArray) -> pa.ChunkedArray:
    if pa.types.is_dictionary(column.type):
        return column.cast(column.type.value_type)
    return column


def _as_int64(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The values' storage as int64 (nulls as 0); uint64 keeps its bit pattern."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    width = values.type.bit_width
    if width == 64:
        values = values.view(pa.int64())
    elif not pa.types.is_unsigned_integer(values.type):
        values = values.view(pa.int8() if width == 8 else pa.int16() if width == 16 else pa.int32())
    return np.asarray(values.cast(pa.int64()).fill_null(0))


def _distinct_part(column: pa.ChunkedArray, cap: int) -> DistinctPart:
    kind = _value_kind(_value_type(column.type))
    assert kind is not None
    if pa.types.is_dictionary(column.type):
        # the dictionary entries the indices use, then unique among them
        used = [
            chunk.dictionary.take(pc.unique(chunk.indices).drop_null()) for chunk in column.chunks
        ]
        unique = pc.unique(pa.chunked_array(used, type=column.type.value_type))
    else:
        unique = pc.unique(column)
    unique = unique.drop_null()
    if len(unique) > cap:
        return DistinctPart(kind, (), over_cap=True)
    if kind is ValueKind.INT64:
        return DistinctPart(kind, tuple(_as_int64(unique).tolist()))
    large = pa.types.is_large_string(unique.type) or pa.types.is_large_binary(unique.type)
    binary = pa.large_binary() if large else pa.binary()
    return DistinctPart(kind, tuple(unique.cast(binary).to_pylist()))


_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min


def _time_part(column: pa.ChunkedArray, block_rows: int) -> TimeIndexPart:
    column = _decoded(column)
    num_rows = len(column)
    num_blocks = -(-num_rows // block_rows)
    padded = num_blocks * block_rows
    values = _as_int64(column)
    if column.null_count:
        valid = np.zeros(padded, dtype=bool)
        valid[:num_rows] = np.asarray(pc.is_valid(column))
        lows = np.full(padded, _INT64_MAX, dtype=np.int64)
        highs = np.full(padded, _INT64_MIN, dtype=np.int64)
        lows[:num_rows] = np.where(valid[:num_rows], values, _INT64_MAX)
        highs[:num_rows] = np.where(valid[:num_rows], values, _INT64_MIN)
        null_counts = block_rows - valid.reshape(num_blocks, block_rows).sum(axis=1)
        null_counts[-1] -= padded - num_rows
        mins = lows.reshape(num_blocks, block_rows).min(axis=1)
        maxs = highs.reshape(num_blocks, block_rows).max(axis=1)
        all_null = null_counts == block_rows
        all_null[-1] = null_counts[-1] == num_rows - (num_blocks - 1) * block_rows
        mins[all_null] = 0
        maxs[all_null] = 0
    else:
        whole = (num_rows // block_rows) * block_rows
        blocks = values[:whole].reshape(-1, block_rows)
        mins = np.empty(num_blocks, dtype=np.int64)
        maxs = np.empty(num_blocks, dtype=np.int64)
        mins[: len(blocks)] = blocks.min(axis=1)
        maxs[: len(blocks)] = blocks.max(axis=1)
        if whole < num_rows:
            mins[-1] = values[whole:].min()
            maxs[-1] = values[whole:].max()
        null_counts = np.zeros(num_blocks, dtype=np.uint32)
    return TimeIndexPart(
        block_rows,
        num_rows,
        mins.astype("<i8").tobytes(),
        maxs.astype("<i8").tobytes(),
        null_counts.astype("<u4").tobytes(),
    )


def index_part(column: pa.ChunkedArray, spec: IndexColumnSpec) -> ColumnIndexPart:
    """One column chunk's part of the embedded index, from its Arrow values (vectorised:
    ``pyarrow.compute.unique``, numpy block min/max).

    Returns:
        The part (its DISTINCT values as ints or bytes, its blocks' min/max/null counts).
    """
    return ColumnIndexPart(
        distinct=_distinct_part(column, spec.max_distinct) if spec.distinct else None,
        time_index=(
            _time_part(column, spec.block_rows) if spec.time_index and len(column) else None
        ),
    )


def attach_index_parts(
    chunks: list[EncodedChunk], table: pa.Table, options: WriteOptions
) -> list[EncodedChunk]:
    """The chunks of one row group (``table``'s rows, one per leaf column in schema order),
    each chunk of a column with an embedded index carrying its :func:`index_part`.

    Embedded indexes cover flat top-level columns (:func:`check_write_options`): the indexed
    column is the table's column of that name, its chunk the one whose ``path_in_schema`` is
    that name alone.

    Returns:
        ``chunks`` itself when no column is indexed, else a new list.
    """
    if not options.embedded_index:
        return chunks
    chunks = list(chunks)
    paths = [tuple(chunk.meta_data.path_in_schema or ()) for chunk in chunks]
    for spec in options.embedded_index:
        leaf = paths.index((spec.name,))
        part = index_part(table.column(spec.name), spec)
        chunks[leaf] = replace(chunks[leaf], index_part=part)
    return chunks


def row_group_jobs(
    table: pa.Table,
    schema: ParquetSchema,
    options: WriteOptions,
    encryptor: FileEncryptor | None = None,
    row_group_ordinal: int = 0,
    planner: EncodingPlanner | None = None,
) -> list[EncodeChunkJob]:
    """One encoding job per leaf column of ``table`` (one row group), in schema order: each
    field's column is shredded (:func:`~streamwrite.arrow.shred.shred`; a flat column is
    :func:`~streamwrite.arrow.values.to_physical`) into its leaves' levels and values.

    Args:
        table: The row group's rows.
        schema: The file's schema.
        options: The write options.
        encryptor: The file's encryption state, when the file is encrypted.
        row_group_ordinal: The ordinal the row group will have in the file (used in the
            module AADs of encrypted columns).
        planner: The writer's encoding planner: its decisions go into the jobs' settings
            (hand the encoded chunks to :meth:`EncodingPlanner.observe`). None analyses
            every chunk.

    Returns:
        The jobs, ready for :func:`workers.jobs.run_job` or an executor.

    Raises:
        LimitError: An encrypted file's ``row_group_ordinal`` exceeds 32767.
        SchemaError: A value cannot be written (as :func:`check_values`).
    """
    if encryptor is not None:
        encryptor.check_row_group_ordinal(row_group_ordinal)
    jobs = []
    for index, node in enumerate(schema.fields):
        leaves = shred(table.column(index), node, schema.columns)
        for leaf, data in zip(node.leaves, leaves, strict=True):
            spec = schema.columns[leaf]
            jobs.append(
                EncodeChunkJob(
                    settings=(
                        chunk_settings(spec, options)
                        if planner is None
                        else planner.settings(spec, options)
                    ),
                    values=data.values,
                    def_levels=data.def_levels,
                    num_rows=data.num_rows,
                    crypto=(
                        None
                        if encryptor is None
                        else encryptor.chunk_crypto(row_group_ordinal, leaf)
                    ),
                    rep_levels=data.rep_levels,
                )
            )
    return jobs


def encode_row_group(
    table: pa.Table,
    schema: ParquetSchema,
    options: WriteOptions,
    run: Callable[[EncodeChunkJob], EncodedChunk] = run_job,
    encryptor: FileEncryptor | None = None,
    row_group_ordinal: int = 0,
    planner: EncodingPlanner | None = None,
) -> list[EncodedChunk]:
    """Encode every leaf column of ``table`` (one row group) into column chunks, in schema
    order.

    ``encryptor``, ``row_group_ordinal`` and ``planner`` as in :func:`row_group_jobs`; the
    planner observes the chunks before they are returned.

    Returns:
        One encoded chunk per leaf column.

    Raises:
        LimitError: An encrypted file's ``row_group_ordinal`` exceeds 32767.
    """
    jobs = row_group_jobs(table, schema, options, encryptor, row_group_ordinal, planner)
    chunks = [run(job) for job in jobs]
    if planner is not None:
        planner.observe(chunks)
    return attach_index_parts(chunks, table, options)
