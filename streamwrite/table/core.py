"""The :class:`Table` class: buffering, commits, segments (see :mod:`streamwrite.table`)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
from anyio.abc import TaskGroup

from streamwrite.arrow.partitioning import split_by_partition
from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.compaction.policy import (
    CompactionPolicy,
    CompactionResult,
    PartitionStatus,
    SegmentInfo,
    StepHook,
    compact_table,
    partition_status,
    run_compactor,
)
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.crypto.live_keys import decryption_for
from streamwrite.encode import as_table, check_values, row_group_jobs
from streamwrite.errors import ConfigError, StaleBatchError, StateError
from streamwrite.format.txn import (
    DATA_FILE,
    PENDING_DATA_FILE,
    Segment,
    TxnRecord,
    segment_name,
)
from streamwrite.layout.batch_ids import BatchDecision, check_batch_id, decide_batch
from streamwrite.live.file import EncodedRowGroup, LiveFile, open_live_file
from streamwrite.options import make_write_options
from streamwrite.pool.executor import Executor
from streamwrite.table.recovery import TableLock, segment_numbers, sweep_retired
from streamwrite.table.state import (
    PartitionBuffer,
    PinRegistry,
    TableCommit,
    TableMetrics,
    TableSettings,
    TableSnapshot,
    Unit,
    by_segment,
    snapshot_of,
    write_txn,
)

__all__ = ["KV_TXN", "Table"]

logger = logging.getLogger("streamwrite.table")

KV_TXN = "streamwrite.txn"
"""Footer key/value of a partition commit: the table version and batch id it belongs to."""


class Table:
    """An open table (create or reopen with :func:`open_table`)."""

    def __init__(
        self,
        path: Path,
        record: TxnRecord,
        schema: pa.Schema,
        executor: Executor,
        owns_executor: bool,
        settings: TableSettings,
        write_options: dict[str, Any],
        encryption: FileEncryption | None,
        lock: TableLock,
    ) -> None:
        self.path = path
        self.schema = schema
        self.settings = settings
        self.encryption = encryption
        self.decryption = None if encryption is None else decryption_for(encryption)
        """Reads the table's segments (compaction)."""
        self._record = record
        self._active: dict[str, LiveFile] = {}
        """The newest segment of each partition appended to since open, open for appending
        (opened on the partition's first row group, so that a table of many partitions
        opens no file until it is written)."""
        self._assigned: dict[str, int] = {}
        """Row groups of each open newest segment, committed or encoded for it: the next one's
        ordinal (encrypted tables) and when to start a new segment."""
        self._retired_newest: set[str] = set()
        """Partitions whose listed newest segment was sealed for compaction: their next row
        group starts a new segment."""
        self._sealed: dict[LiveFile, int] = {}
        """Segments replaced as newest, with the row groups they will hold: each is closed when
        its last queued commit is done (and until then compaction leaves it alone)."""
        self._next_segment = segment_numbers(path, record)
        self._lock_file = lock
        self.executor = executor
        self._owns_executor = owns_executor
        self._write_kwargs = write_options
        self.options = make_write_options(schema.names, caller="open_table", **write_options)
        self.parquet_schema = arrow_to_parquet(schema)
        self._buffers: dict[str, PartitionBuffer] = {}
        self._buffered_rows = 0
        self._buffered_bytes = 0
        self._last_commit = time.monotonic()
        self._opened = time.monotonic()
        self._last_rows: dict[str, float] = {}
        """When rows last came for each partition (monotonic; default when the table was
        opened): background compaction waits for ``idle_seconds`` after it."""
        self.segment_infos: dict[tuple[str, str, int], SegmentInfo] = {}
        """Compaction's cache: (partition, segment, committed size) -> what it holds."""
        self.compaction_lock = anyio.Lock()
        self.compactor_scope = anyio.CancelScope()
        """The background compactor runs in it; :meth:`close` cancels it."""
        self.last_compaction_error: Exception | None = None
        """The last error of the background compactor (it keeps running)."""
        self._lock = anyio.Lock()  # buffers and the order of commit units
        self._commit_lock = anyio.Lock()  # one commit (or compaction swap) at a time
        self._poisoned: BaseException | None = None
        self._closed = False
        self._task_group: TaskGroup | None = None
        self._send: Any = None
        self.pins = PinRegistry()
        self.metrics = TableMetrics()

    # -- buffering --------------------------------------------------------------------------

    async def _open_newest(self, name: str) -> LiveFile | None:
        """Open partition ``name``'s listed newest segment for appending, if it may take more."""
        segments = self._record.partitions.get(name)
        if not segments or name in self._retired_newest:
            return None
        live = await LiveFile.open(
            self.path / name / segments[-1].name,
            self.schema,
            encryption=self.encryption,
            **self._write_kwargs,
        )
        self._active[name] = live
        self._assigned[name] = live.last_commit.num_row_groups
        return live

    async def _segment_for_next_row_group(self, name: str) -> LiveFile:
        """The segment partition ``name``'s next row group goes to: its newest, or a new one
        when there is none or it is full (the full one is sealed)."""
        live = self._active.get(name) or await self._open_newest(name)
        if live is not None and self._assigned[name] < self.settings.segment_row_groups:
            return live
        created = await self.new_segment(name)
        self._retired_newest.discard(name)
        if live is not None and live.last_commit.num_row_groups == self._assigned[name]:
            await live.close()  # all its row groups are committed
        elif live is not None:
            self._sealed[live] = self._assigned[name]  # closed by its last commit
        self._active[name] = created
        self._assigned[name] = 0
        self.metrics.segments_created += 1
        return created

    async def _encode(self, name: str, table: pa.Table) -> tuple[LiveFile, EncodedRowGroup]:
        """Encode one row group of partition ``name`` for the segment it goes to (encrypted
        with that segment's own keys and ``aad_file_unique`` and its true ordinal, for an
        encrypted table)."""
        live = await self._segment_for_next_row_group(name)
        jobs = row_group_jobs(
            table,
            self.parquet_schema,
            self.options,
            live.encryptor,
            self._assigned[name] if self.encryption is not None else 0,
        )
        encoded = (await self.executor.run_all(jobs), table.num_rows)
        self._assigned[name] += 1
        return live, encoded

    def _row_group_rows(self, buffer: PartitionBuffer) -> int:
        """Rows of the next row group: ``row_group_size``, fewer when ``row_group_bytes`` says."""
        size = self.options.row_group_size
        limit = self.settings.row_group_bytes
        if limit is not None and buffer.pending_bytes >= limit:
            per_row = buffer.pending_bytes / max(1, buffer.pending_rows)
            size = min(size, max(1, int(limit / per_row)))
        return size

    async def _cut(self, name: str, buffer: PartitionBuffer, *, partial: bool) -> None:
        """Encode full row groups of a partition buffer (and the rest too, if ``partial``).

        The buffer changes only after a row group is encoded, so a cancelled encode loses
        nothing.
        """
        while buffer.pending_rows:
            size = self._row_group_rows(buffer)
            if buffer.pending_rows < size and not partial:
                return
            rows = pa.concat_tables(buffer.pending)
            piece, rest = rows.slice(0, size), rows.slice(size)
            encoded = await self._encode(name, piece)
            buffer.pending = [rest] if rest.num_rows else []
            buffer.pending_rows = rest.num_rows
            buffer.pending_bytes = rest.nbytes
            buffer.encoded.append(encoded)

    def _check(self) -> None:
        if self._closed:
            raise StateError(f"The table {str(self.path)!r} is closed.")
        if self._poisoned is not None:
            raise StateError(
                f"The table {str(self.path)!r} failed a commit ({self._poisoned}); "
                "reopen it to roll back to its last commit."
            ) from self._poisoned

    def _due(self) -> bool:
        settings = self.settings
        if settings.commit_rows is not None and self._buffered_rows >= settings.commit_rows:
            return True
        if settings.commit_bytes is not None and self._buffered_bytes >= settings.commit_bytes:
            return True
        return (
            settings.commit_interval is not None
            and self._buffered_rows > 0
            and time.monotonic() - self._last_commit >= settings.commit_interval
        )

    async def append(
        self,
        data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch],
        *,
        app_id: str | None = None,
        batch_id: int | None = None,
        on_stale: str = "error",
    ) -> TableCommit | None:
        """Add rows. With ``app_id`` and ``batch_id`` the rows (and anything buffered) are
        committed now, exactly once. The last batch id committed for that app id again is a
        replay (Spark's, after a failure): it writes nothing and returns a commit with
        ``skipped=True``. An id below the last one is not a replay (for instance a query
        restarted from a new checkpoint under the same app id, whose ids start at 0 again):
        it raises :class:`~streamwrite.errors.StaleBatchError` and buffers nothing, unless
        ``on_stale="skip"``, which skips it with a warning (logger ``streamwrite.table``).

        Returns:
            The commit when this call committed (or skipped) one, else None.

        Raises:
            ConfigError: ``app_id`` without ``batch_id`` (or the reverse), a negative or
                non-integer ``batch_id``, or ``on_stale`` not ``"error"`` or ``"skip"``.
            StaleBatchError: ``batch_id`` is below the last one committed for ``app_id``.
            SchemaError: the data does not match the table schema, or holds a value its
                column cannot take (a null in a REQUIRED column...): nothing is buffered.
            StateError: an earlier commit failed (the table is poisoned), or it is closed.
            StreamwriteIOError: this commit failed (the table is poisoned from now on).
        """
        self._check()
        batch_id = check_batch_id(app_id, batch_id, on_stale)
        table = as_table(data, self.schema, "the table")
        check_values(table, self.parquet_schema)  # refused whole, before any of it is buffered
        # Once accepted, a batch is buffered (or committed) whole: cancellation waits for that.
        with anyio.CancelScope(shield=True):
            result = await self._accept(table, app_id, batch_id, on_stale)
        return result

    async def _accept(
        self, table: pa.Table, app_id: str | None, batch_id: int | None, on_stale: str = "error"
    ) -> TableCommit | None:
        async with self._lock:
            if app_id is not None and batch_id is not None:
                last = self._record.applied.get(app_id)
                decision = decide_batch(last, batch_id)
                if decision is BatchDecision.STALE and on_stale == "error":
                    assert last is not None
                    raise StaleBatchError(app_id, batch_id, last)
                if decision is not BatchDecision.NEW:
                    if decision is BatchDecision.STALE:
                        logger.warning(
                            "Skipped batch %d of app id %r (on_stale='skip'): it is below the "
                            "last committed batch id %s, so its %d rows are not written.",
                            batch_id,
                            app_id,
                            last,
                            table.num_rows,
                        )
                    self.metrics.batches_skipped += 1
                    return TableCommit(
                        self._record.version, 0, dict(self._record.partitions), skipped=True
                    )
            for name, rows in split_by_partition(
                table, self._record.timestamp, self._record.partition_by
            ):
                buffer = self._buffers.setdefault(name, PartitionBuffer())
                self._last_rows[name] = time.monotonic()
                buffer.pending.append(rows)
                buffer.pending_rows += rows.num_rows
                buffer.pending_bytes += rows.nbytes
                await self._cut(name, buffer, partial=False)
            self._buffered_rows += table.num_rows
            self._buffered_bytes += table.nbytes
            self.metrics.rows_appended += table.num_rows
            self.metrics.bytes_appended += table.nbytes
            self.metrics.rows_buffered = self._buffered_rows
            if app_id is None and not self._due():
                return None
            unit = await self._take_unit(app_id, batch_id)
            # Handed over under the lock, so units commit in the order they were taken.
            return await self._submit(unit, wait=app_id is not None)

    async def _take_unit(self, app_id: str | None, batch_id: int | None) -> Unit:
        """Encode what is buffered and take it out of the buffers (lock held)."""
        for name, buffer in self._buffers.items():
            await self._cut(name, buffer, partial=True)
        parts = {name: b.encoded for name, b in self._buffers.items() if b.encoded}
        unit = Unit(parts, self._buffered_rows, app_id, batch_id)
        self._buffers = {}
        self._buffered_rows = self._buffered_bytes = 0
        self.metrics.rows_buffered = 0
        self._last_commit = time.monotonic()
        return unit

    async def flush(self) -> TableCommit | None:
        """Commit everything appended so far (and wait for background commits).

        Returns:
            The commit, or None when nothing was buffered.
        """
        self._check()
        async with self._lock:
            if self._buffered_rows:
                unit = await self._take_unit(None, None)
            else:  # nothing buffered: a barrier behind the commits already handed over
                unit = Unit({}, 0, None, None)
            result = await self._submit(unit, wait=True)
        self._check()
        return result

    # -- committing -------------------------------------------------------------------------

    async def _commit(self, unit: Unit) -> TableCommit:
        async with self._commit_lock:
            self._check()
            started = time.perf_counter()
            marker = json.dumps(
                {
                    "version": self._record.version + 1,
                    "app_id": unit.app_id,
                    "batch_id": unit.batch_id,
                }
            )
            written: dict[str, list[Segment]] = {}
            try:
                for name in sorted(unit.parts):
                    for live, row_groups in by_segment(unit.parts[name]):
                        commit = await live.commit_encoded(row_groups, ((KV_TXN, marker),))
                        written.setdefault(name, []).append(
                            Segment(live.path.name, commit.parquet_size, commit.footer_checksum)
                        )
            except BaseException as exc:
                self._poisoned = exc
                raise
            record = self._record.next(written, unit.app_id, unit.batch_id)
            await self._publish(record)
            await self._close_sealed(unit)
            seconds = time.perf_counter() - started
            self.metrics.commits += 1
            self.metrics.rows_committed += unit.num_rows
            self.metrics.last_commit_seconds = seconds
            self.metrics.commit_seconds.append(seconds)
            return TableCommit(record.version, unit.num_rows, dict(record.partitions))

    async def _close_sealed(self, unit: Unit) -> None:
        """Close the sealed segments this unit wrote to that hold all their row groups now
        (a segment's row groups may span several queued units)."""
        for parts in unit.parts.values():
            for live, _ in parts:
                final = self._sealed.get(live)
                if final is not None and live.last_commit.num_row_groups == final:
                    del self._sealed[live]
                    await live.close()

    async def _submit(self, unit: Unit, *, wait: bool) -> TableCommit | None:
        """Commit ``unit`` now (no background committer) or hand it over, in order.

        With ``wait``, returns once it is committed (None for a barrier) or raises its error.
        """
        if self._send is None:
            return None if unit.is_barrier else await self._commit(unit)
        self.metrics.queue_depth += 1
        await self._send.send(unit)  # waits while the committer is busy: backpressure
        if not wait:
            return None
        await unit.done.wait()
        if unit.error is not None:
            raise unit.error
        return unit.result

    async def _committer(self, receive: Any) -> None:
        async with receive:
            async for unit in receive:
                try:
                    if not unit.is_barrier:
                        unit.result = await self._commit(unit)
                except Exception as exc:  # the table is poisoned; callers see it next call
                    unit.error = exc
                finally:
                    self.metrics.queue_depth -= 1
                    unit.done.set()

    async def _timer(self) -> None:
        assert self.settings.commit_interval is not None
        while True:
            await anyio.sleep(self.settings.commit_interval / 4)
            if self._poisoned is None and self._due():
                async with self._lock:
                    if self._buffered_rows:
                        await self._submit(await self._take_unit(None, None), wait=False)

    # -- segments and compaction (the steps are in streamwrite.compaction) -----------------

    async def new_segment(self, partition: str, *, pending: bool = False) -> LiveFile:
        """A new segment of ``partition`` (the next number), unpublished until a ``_txn``
        lists it; ``pending``: its data file is ``_data.pending`` (compaction renames it to
        ``data.parquet`` just before the swap), so no engine reading the directory sees it."""
        number = self._next_segment.get(partition, 0)
        self._next_segment[partition] = number + 1
        return await open_live_file(
            self.path / partition / segment_name(number),
            self.schema,
            encryption=self.encryption,
            data_file=PENDING_DATA_FILE if pending else DATA_FILE,
            **self._write_kwargs,
        )

    async def _publish(self, record: TxnRecord) -> None:
        """Publish ``record`` (commit lock held); a failure poisons the table."""
        try:
            await anyio.to_thread.run_sync(write_txn, self.path, record)
        except BaseException as exc:
            self._poisoned = exc
            raise
        self._record = record

    async def swap_segments(
        self, partition: str, replaced: tuple[str, ...], merged: Segment
    ) -> None:
        """List ``merged`` in place of the ``replaced`` segments and retire them: the
        compaction commit point."""
        async with self._commit_lock:
            self._check()
            await self._publish(self._record.compacted(partition, replaced, merged, time.time()))
            self.metrics.compactions += 1

    async def sweep_retired(self, grace_seconds: float | None = None) -> list[str]:
        """Delete retired segments past the grace period (``grace_seconds``, default the
        table policy's) that no snapshot of this process pins, then publish a ``_txn``
        without them.

        Returns:
            The ``partition/segment`` paths deleted.
        """
        if grace_seconds is None:
            grace_seconds = self.settings.compaction.grace_seconds
        async with self._commit_lock:
            self._check()
            if not self._record.retired:
                return []
            deleted = await anyio.to_thread.run_sync(
                sweep_retired, self.path, self._record, grace_seconds, self.pins.is_pinned
            )
            if deleted:
                await self._publish(self._record.without_retired(deleted))
                self.metrics.segments_deleted += len(deleted)
            return deleted

    async def eligible_segments(
        self, partition: str, idle_seconds: float | None, seal: bool
    ) -> tuple[tuple[Segment, ...], int]:
        """The partition's segments now, and how many leading ones compaction may take: those
        no commit will touch again, plus the newest when the partition is idle
        (``idle_seconds``; None: now) with every row group it was given committed. With
        ``seal``, that newest one is sealed: the partition's next row group starts a new
        segment."""
        async with self._lock:
            segments = self._record.partitions.get(partition, ())
            busy = {live.path.name for live in self._sealed if live.path.parent.name == partition}
            live = self._active.get(partition)
            quiet = time.monotonic() - self._last_rows.get(partition, self._opened)
            waiting = idle_seconds is not None and quiet < idle_seconds
            if live is not None:
                buffer = self._buffers.get(partition)
                settled = self._assigned[partition] == live.last_commit.num_row_groups and not (
                    buffer is not None and (buffer.pending_rows or buffer.encoded)
                )
                if not settled or waiting:
                    busy.add(live.path.name)
                elif seal:
                    del self._active[partition]
                    self._retired_newest.add(partition)
                    await live.close()
            elif segments and partition not in self._retired_newest:
                if waiting:  # not opened since the table was, but it may be appended to
                    busy.add(segments[-1].name)
                elif seal:
                    self._retired_newest.add(partition)
            eligible = next((i for i, s in enumerate(segments) if s.name in busy), len(segments))
            return segments, eligible

    @property
    def is_open(self) -> bool:
        """Not closed, and no commit failed."""
        return not self._closed and self._poisoned is None

    async def compaction_status(
        self, policy: CompactionPolicy | None = None, *, explicit: bool = False
    ) -> list[PartitionStatus]:
        """The compaction decision for each partition, with its reasons: the background
        compactor's, or with ``explicit`` what :meth:`compact` would do now (the table's
        policy, or ``policy``). Nothing is sealed or written."""
        self._check()
        policy = policy or self.settings.compaction
        return [
            await partition_status(self, name, policy, explicit=explicit, seal=False)
            for name in sorted(self._record.partitions)
        ]

    async def compact(
        self,
        partition: str | None = None,
        *,
        policy: CompactionPolicy | None = None,
        hook: StepHook | None = None,
    ) -> list[CompactionResult]:
        """Compact every partition (or ``partition``: its name, ``ts_day=2026-11-22``, or
        its value, ``2026-11-22``) that merging improves, now: idle or not, a partition's
        newest segment is taken (sealed: its next rows start a new segment) once all its row
        groups are committed.

        Returns:
            What was compacted.

        Raises:
            ConfigError: an unknown partition.
            StreamwriteIOError: the ``_txn`` publish failed (the table is poisoned).
        """
        self._check()
        if partition is not None:
            found = self._record.find_partition(partition)
            if found is None:
                raise ConfigError(
                    f"The table {str(self.path)!r} has no partition {partition!r} (its "
                    f"partitions: {sorted(self._record.partitions)})."
                )
            partition = found
        names = [partition] if partition else sorted(self._record.partitions)
        policy = policy or self.settings.compaction
        return await compact_table(self, names, policy, explicit=True, hook=hook)

    # -- reading and lifecycle --------------------------------------------------------------

    def snapshot(self) -> TableSnapshot:
        """Pin the newest committed version (readable while appends and compaction go on).

        Release it (``with table.snapshot() as snap:`` or ``snap.release()``) when done:
        until then compaction keeps every segment it reads.
        """
        return snapshot_of(self.path, self._record, self.pins)

    @property
    def record(self) -> TxnRecord:
        """The newest committed ``_txn`` record."""
        return self._record

    @property
    def timestamp(self) -> str | None:
        """The designated timestamp column."""
        return self._record.timestamp

    @property
    def version(self) -> int:
        """The ``_txn`` version of the newest commit."""
        return self._record.version

    async def __aenter__(self) -> Table:
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        send, receive = anyio.create_memory_object_stream[Unit](1)
        self._send = send
        self._task_group.start_soon(self._committer, receive)
        if self.settings.commit_interval is not None:
            self._task_group.start_soon(self._timer)
        if self.settings.compaction_interval is not None:
            self._task_group.start_soon(run_compactor, self)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            await self.close()
        finally:
            if self._task_group is not None:
                self._task_group.cancel_scope.cancel()
                await self._task_group.__aexit__(None, None, None)
                self._task_group = None

    async def close(self) -> None:
        """Commit what is buffered, wait for background commits, stop the compactor (a
        compaction in flight is abandoned: its unpublished segment is deleted), close every
        segment and release the writer lock."""
        if self._closed:
            return
        try:
            if self._poisoned is None:
                await self.flush()
        finally:
            self._closed = True
            self.compactor_scope.cancel()
            async with self.compaction_lock:  # a cancelled compaction has cleaned up
                pass
            if self._send is not None:
                await self._send.aclose()
                self._send = None
            try:
                for live in (*self._sealed, *self._active.values()):
                    await live.close()
                if self._owns_executor:
                    await self.executor.aclose()
            finally:
                self._lock_file.release()
