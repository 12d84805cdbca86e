"""Writing a merged segment: the row groups of old segments, in order, into a new one.

The async shell over :class:`streamwrite.layout.compaction.MergePlan`, which decides the way
of each source row group (raw copy, physical, Arrow) and when held-back rows become a row
group; this module reads the row groups that way and executes the plan's actions::

    RAW_COPY    the source's column chunks are read as bytes (layout/raw_copy.py); an
                UnsupportedError (a chunk stored in another file...) falls back to decoding;
                the chunks carry the row group's embedded index parts from the source's
                blob (a part the source lacks is computed from the decoded column)
    PHYSICAL    its column chunks are read as compressed bytes and held back; every held
                row group becomes one MergeChunkJob per column that the executor's workers
                decode and re-encode (no Arrow on the way; the dictionaries of dictionary-
                encoded BYTE_ARRAY sources are merged, no value hashed again:
                workers/value_ops.py); compaction's jobs run at background priority; the
                columns with an embedded index are also decoded to Arrow here, held with
                the rows, and the merged row group's parts computed from them
    ARROW       decoded here (decrypted) into Arrow, held back, sorted if asked, re-encoded
                by row_group_jobs (re-encrypted under the new segment's keys and ordinals),
                embedded index parts computed from the rows (encode.attach_index_parts)

Schemas: the merged segment is written with the table's schema when it is created, and
encoded with that segment's own Parquet schema and options (an ``add_columns`` during the
merge does not change them). A source segment of an older schema (``Table.add_columns``)
cannot be copied raw or read physically into it: when the run holds one, every row group not
copied raw goes the ARROW way, and each of that segment's row groups is widened to the new
segment's schema (nulls in the added columns) before it is held back.

Up to ``MAX_ENCODING`` merged row groups are encoded at once while the next ones are read, and
the ready ones are committed (in order, in the background) every ``COMMIT_BYTES``. A segment
already opened to read its info this round (``compaction/policy.py``) is read without parsing
its footer again.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.compute as pc
from anyio.abc import TaskGroup

from streamwrite.arrow.evolution import widen_table
from streamwrite.arrow.schema import ParquetSchema, arrow_to_parquet
from streamwrite.compaction.host import CompactionHost
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.encode import attach_index_parts, chunk_settings, index_part, row_group_jobs
from streamwrite.errors import UnsupportedError
from streamwrite.format.chunk import EncodedChunk
from streamwrite.layout.compaction import (
    CopyRaw,
    EncodeHeld,
    HoldRows,
    MergeAction,
    MergePlan,
    SortHeld,
    Way,
)
from streamwrite.layout.embedded_index import IndexBuilder, read_index_payload
from streamwrite.layout.raw_copy import copy_row_group
from streamwrite.live.file import EncodedRowGroup, LiveFile
from streamwrite.options import WriteOptions
from streamwrite.pool.gate import BACKGROUND
from streamwrite.reader.file import ParquetFile
from workers.jobs import Job, MergeChunkJob, SourceChunk

__all__ = ["COMMIT_BYTES", "MAX_ENCODING", "Merger", "merge_segment"]

MAX_ENCODING = 2
"""Row groups of the merged segment encoded at once (by the table's executor) while the
next ones are read."""
COMMIT_BYTES = 64 << 20
"""Encoded bytes held before the segment compaction writes commits them (bounds memory). A
commit leaves its footer behind as dead bytes; at this size they stay a small share of the
segment, so a merged segment does not qualify for compaction again by its own footers."""


@dataclass(frozen=True, slots=True)
class _Rows:
    """Rows ``[row_start, row_stop)`` of a source row group whose column chunks were read
    (unencrypted sources: a worker decodes them, no Arrow on the way)."""

    sources: tuple[SourceChunk, ...]
    """One per column, each covering the whole row group."""
    row_start: int
    row_stop: int
    verify_checksums: bool
    max_decompressed_page_size: int
    index_rows: pa.Table | None = None
    """The columns with an embedded index, decoded (rows ``[row_start, row_stop)``)."""

    @property
    def num_rows(self) -> int:
        return self.row_stop - self.row_start

    def slice(self, offset: int, length: int | None = None) -> _Rows:
        stop = self.row_stop if length is None else self.row_start + offset + length
        index_rows = None if self.index_rows is None else self.index_rows.slice(offset, length)
        return replace(
            self, row_start=self.row_start + offset, row_stop=stop, index_rows=index_rows
        )


def _merge_jobs(
    parquet_schema: ParquetSchema, options: WriteOptions, pieces: list[_Rows]
) -> list[Job]:
    """One job per column: decode the pieces' chunks and encode their rows as one chunk."""
    verify = all(piece.verify_checksums for piece in pieces)
    max_page = min(piece.max_decompressed_page_size for piece in pieces)
    return [
        MergeChunkJob(
            chunk_settings(spec, options),  # a nested leaf's: its path and repetition level
            tuple(
                replace(piece.sources[column], row_start=piece.row_start, row_stop=piece.row_stop)
                for piece in pieces
            ),
            verify,
            max_page,
        )
        for column, spec in enumerate(parquet_schema.columns)
    ]


def _job_size(job: Job) -> int:
    if isinstance(job, MergeChunkJob):
        return sum(len(source.data) for source in job.sources)
    return 0


async def _run_largest_first(host: CompactionHost, jobs: list[Job]) -> list[EncodedChunk]:
    """Run ``jobs`` biggest first (the pool's workers finish closer together), behind the
    appends' jobs (:mod:`streamwrite.pool.gate`); results in job order."""
    order = sorted(range(len(jobs)), key=lambda i: -_job_size(jobs[i]))
    results = await host.executor.run_all([jobs[i] for i in order], BACKGROUND)
    chunks: list[EncodedChunk | None] = [None] * len(jobs)
    for position, index in enumerate(order):
        chunks[index] = results[position]
    return [chunk for chunk in chunks if chunk is not None]


def _index_columns(
    pf: ParquetFile, index: int, options: WriteOptions, names: list[str] | None = None
) -> pa.Table | None:
    """Row group ``index``'s columns with an embedded index (or ``names``), decoded; None
    when there are none."""
    names = [spec.name for spec in options.embedded_index] if names is None else names
    return pf.read_row_group(index, names) if names else None


def _read_sources(pf: ParquetFile, index: int, options: WriteOptions) -> _Rows:
    """Read the column chunks of row group ``index`` (compressed; decoded by a worker), and
    decode its columns with an embedded index."""
    sources = tuple(pf._source_chunk(index, spec) for spec in pf._parquet_schema.columns)
    rows = sources[0].num_rows
    return _Rows(
        sources,
        0,
        rows,
        pf.verify_checksums,
        pf.max_decompressed_page_size,
        _index_columns(pf, index, options),
    )


def _attach_held_parts(
    chunks: list[EncodedChunk], pieces: list[_Rows], options: WriteOptions
) -> list[EncodedChunk]:
    """The merged chunks of held ``pieces``, with parts from their decoded index columns."""
    if not options.embedded_index:
        return chunks
    tables = [piece.index_rows for piece in pieces]
    if any(table is None for table in tables):
        return chunks
    rows = pa.concat_tables([table for table in tables if table is not None])
    names = [column.meta_data.path_in_schema or [] for column in chunks]
    chunks = list(chunks)
    for spec in options.embedded_index:
        ordinal = next(i for i, path in enumerate(names) if path == [spec.name])
        part = index_part(rows.column(spec.name), spec)
        chunks[ordinal] = replace(chunks[ordinal], index_part=part)
    return chunks


class _Slot:
    """One row group of the new segment, in order: raw (ready at once) or being encoded."""

    def __init__(self, row_group: EncodedRowGroup | None = None) -> None:
        self.row_group = row_group
        self.done = anyio.Event()
        self.error: Exception | None = None
        if row_group is not None:
            self.done.set()

    async def result(self) -> EncodedRowGroup:
        await self.done.wait()
        if self.error is not None:
            raise self.error
        assert self.row_group is not None
        return self.row_group


class Merger:
    """Feeds a new segment, in row order, executing a :class:`MergePlan`'s actions: raw
    row groups as they come, held-back rows encoded by the executor.

    Up to ``MAX_ENCODING`` row groups are encoded by the executor while the next ones are
    read; slots keep their order, and whatever is ready is committed every ``COMMIT_BYTES``.
    """

    def __init__(
        self, host: CompactionHost, live: LiveFile, plan: MergePlan, task_group: TaskGroup
    ) -> None:
        self._host = host
        self._live = live
        self.schema = live.schema
        """The merged segment's Arrow schema (source rows of an older one are widened)."""
        self._parquet_schema = arrow_to_parquet(live.schema)
        self._options = live.options
        self.options = live.options
        """The merged segment's write options."""
        self.plan = plan
        self._task_group = task_group
        self._pending: list[Any] = []
        """Held-back rows: ``_Rows`` (physical) or Arrow tables."""
        self._slots: list[_Slot] = []
        self._ready = 0
        """The leading slots known to be done, and their encoded bytes."""
        self._ready_bytes = 0
        self._committed = anyio.Event()
        """Set when the last commit started so far is done (commits run in the background)."""
        self._committed.set()
        self._encoding = anyio.Semaphore(MAX_ENCODING)

    @property
    def raw(self) -> int:
        """Row groups copied raw so far."""
        return self.plan.num_raw

    @property
    def reencoded(self) -> int:
        """Row groups re-encoded so far."""
        return self.plan.num_reencoded

    async def execute(
        self, actions: list[MergeAction], data: EncodedRowGroup | pa.Table | _Rows | None = None
    ) -> None:
        """Execute the plan's ``actions`` in order; ``data`` is the source row group they
        were returned for, read the way it was offered (None for :meth:`MergePlan.finish`)."""
        for action in actions:
            if isinstance(action, HoldRows):
                self._pending.append(data)
            elif isinstance(action, CopyRaw):
                assert isinstance(data, tuple)
                self._slots.append(_Slot(data))
                await self._commit_ready()
            elif isinstance(action, EncodeHeld):
                await self._encode_held(action)
            elif isinstance(action, SortHeld):
                rows = pa.concat_tables(self._pending)
                order = pc.sort_indices(rows, [(action.column, "ascending")])
                self._pending = [rows.take(order)]

    async def _encode_held(self, action: EncodeHeld) -> None:
        taken: list[Any] = []
        rest: list[Any] = []
        needed = action.num_rows
        for piece in self._pending:
            if needed >= piece.num_rows:
                taken.append(piece)
            elif needed > 0:
                taken.append(piece.slice(0, needed))
                rest.append(piece.slice(needed))
            else:
                rest.append(piece)
            needed -= piece.num_rows
        self._pending = rest
        host = self._host
        jobs: list[Job]
        attach: Any
        if taken and isinstance(taken[0], _Rows):
            jobs = _merge_jobs(self._parquet_schema, self._options, taken)
            attach = functools.partial(_attach_held_parts, pieces=taken, options=self._options)
        else:
            piece = pa.concat_tables(taken)
            attach = functools.partial(attach_index_parts, table=piece, options=self._options)
            jobs = list(
                row_group_jobs(
                    piece,
                    self._parquet_schema,
                    self._options,
                    self._live._encryptor,
                    action.ordinal,
                )
            )
        slot = _Slot()
        self._slots.append(slot)
        await self._encoding.acquire()  # at most MAX_ENCODING in flight

        async def encode() -> None:
            try:
                chunks = attach(await _run_largest_first(host, jobs))
                slot.row_group = (chunks, action.num_rows)
            except Exception as exc:  # raised to the merger; cancellation propagates
                slot.error = exc
            finally:
                self._encoding.release()
                slot.done.set()

        self._task_group.start_soon(encode)
        await self._commit_ready()

    async def _commit_ready(self, final: bool = False) -> None:
        """Commit the leading ready row groups once they hold ``COMMIT_BYTES`` (all of
        them, waiting for those in flight, if ``final``)."""
        while self._ready < len(self._slots) and (final or self._slots[self._ready].done.is_set()):
            row_group = await self._slots[self._ready].result()
            self._ready_bytes += sum(len(chunk.data) for chunk in row_group[0])
            self._ready += 1
        if self._ready and (self._ready_bytes >= COMMIT_BYTES or final):
            row_groups = [await slot.result() for slot in self._slots[: self._ready]]
            del self._slots[: self._ready]
            self._ready = self._ready_bytes = 0
            previous, done = self._committed, anyio.Event()
            self._committed = done

            async def commit() -> None:
                try:
                    await previous.wait()  # commits stay in order
                    await self._live.commit_encoded(row_groups)
                finally:
                    done.set()

            self._task_group.start_soon(commit)  # reading goes on during the fsync

    async def finish(self) -> int:
        """Encode and commit the rest; returns the committed size."""
        await self.execute(self.plan.finish())
        await self._commit_ready(final=True)
        await self._committed.wait()
        return self._live.last_commit.parquet_size


class _SourceIndex:
    """The embedded index parts of one source segment's row groups (read once)."""

    def __init__(self, pf: ParquetFile) -> None:
        payload = read_index_payload(
            pf.read_bytes, pf.thrift_metadata, pf.footer_offset, "a compaction source"
        )
        self.builder = None if payload is None else IndexBuilder.of_payload(payload)


def _raw_row_group(
    pf: ParquetFile, index: int, size: int, options: WriteOptions, source: _SourceIndex
) -> EncodedRowGroup:
    """Row group ``index`` copied raw, its chunks carrying their embedded index parts (from
    the source's blob; computed from the decoded column where the source has none)."""
    row_group = (pf.thrift_metadata.row_groups or [])[index]
    chunks = copy_row_group(
        lambda offset, n: bytes(pf.read_bytes(offset, n)), row_group, file_size=size
    )
    if options.embedded_index:
        names = [column.meta_data.path_in_schema or [] for column in chunks]
        missing = []
        for spec in options.embedded_index:
            ordinal = names.index([spec.name])
            part = None if source.builder is None else source.builder.part_of(spec.name, index)
            if (
                part is None
                or (spec.distinct and part.distinct is None)
                or (spec.time_index and part.time_index is None)
            ):
                missing.append(spec)
                continue
            chunks[ordinal] = replace(chunks[ordinal], index_part=part)
        if missing:
            table = _index_columns(pf, index, options, [spec.name for spec in missing])
            assert table is not None
            for spec in missing:
                ordinal = names.index([spec.name])
                part = index_part(table.column(spec.name), spec)
                chunks[ordinal] = replace(chunks[ordinal], index_part=part)
    return chunks, row_group.num_rows or 0


async def merge_segment(
    merger: Merger,
    directory: Path,
    size: int,
    row_group_rows: tuple[int, ...],
    encrypted: bool,
    decryption: DecryptionConfig | None,
    opened: ParquetFile | None = None,
) -> None:
    """Feed the row groups of one segment (at committed ``size``) to ``merger``, each read
    the way its plan says; the segment's footer is read once (not at all when ``opened``, the
    segment already open at ``size``, is given: its owner closes it)."""
    if opened is not None:
        await _merge_open(merger, opened, size, row_group_rows, encrypted)
        return
    pf = await anyio.to_thread.run_sync(
        functools.partial(ParquetFile, directory, snapshot=size, decryption=decryption)
    )
    try:
        await _merge_open(merger, pf, size, row_group_rows, encrypted)
    finally:
        pf.close()


async def _merge_open(
    merger: Merger, pf: ParquetFile, size: int, row_group_rows: tuple[int, ...], encrypted: bool
) -> None:
    plan = merger.plan
    options = merger.options
    widened = not pf.schema_arrow.equals(merger.schema, check_metadata=False)
    source: _SourceIndex | None = None
    for index, rows in enumerate(row_group_rows):
        way = plan.way(rows, encrypted=encrypted, widened=widened)
        data: EncodedRowGroup | pa.Table | _Rows | None = None
        if way is Way.RAW_COPY:
            if source is None:
                source = await anyio.to_thread.run_sync(_SourceIndex, pf)
            try:
                data = await anyio.to_thread.run_sync(
                    _raw_row_group, pf, index, size, options, source
                )
            except UnsupportedError:
                way = plan.fallback
        if way is Way.PHYSICAL:
            assert not widened  # a run holding an older schema is read the ARROW way
            data = await anyio.to_thread.run_sync(_read_sources, pf, index, options)
        elif way is Way.ARROW:
            table = await anyio.to_thread.run_sync(ParquetFile.read_row_group, pf, index)
            data = widen_table(table, merger.schema) if widened else table
        await merger.execute(plan.offer(rows, way), data)
