"""The :class:`Table` class: buffering, commits, segments (see :mod:`streamwrite.table`)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import anyio
import pyarrow as pa
from anyio.abc import TaskGroup

from streamwrite.arrow.evolution import add_fields
from streamwrite.arrow.partitioning import check_timestamp_field, split_by_partition
from streamwrite.arrow.schema import arrow_to_parquet, encode_arrow_schema
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
from streamwrite.encode import (
    EncodingPlanner,
    as_table,
    attach_index_parts,
    check_values,
    check_write_options,
    row_group_jobs,
)
from streamwrite.errors import ConfigError, StaleBatchError, StateError
from streamwrite.format.txn import DATA_FILE, PENDING_DATA_FILE, Segment, TxnRecord
from streamwrite.layout.actions import CommitSegment
from streamwrite.layout.batch_ids import BatchDecision, check_batch_id
from streamwrite.layout.table import CommitPolicy, TableMachine, TableState
from streamwrite.live.file import EncodedRowGroup, LiveFile, open_live_file, sync_live_files
from streamwrite.options import make_write_options
from streamwrite.pool.executor import Executor
from streamwrite.table.dedup import DedupLogFile, check_dedup_key, dedup_keys
from streamwrite.table.evolution import schema_history, segment_column_names, segment_encryption
from streamwrite.table.pipeline import CommitPipeline, CommitTicket, Unit, applied_ids
from streamwrite.table.recovery import TableLock, segment_numbers, sweep_retired
from streamwrite.table.staged import (
    STAGED_COMMIT_SIZE,
    STAGING_DIR,
    StagedBatch,
    StagedSegment,
    clean_staging,
    move_staged,
    staging_name,
    verify_staged,
)
from streamwrite.table.state import (
    PartitionBuffer,
    PinRegistry,
    TableCommit,
    TableMetrics,
    TableSettings,
    TableSnapshot,
    by_segment,
    snapshot_of,
    write_txn,
)

if TYPE_CHECKING:
    from streamwrite.table.skipping import TableSkipping
    from streamwrite.table.tiering import TableTiering

__all__ = ["KV_TXN", "Table"]

KV_TXN = "streamwrite.txn"
"""Footer key/value of a partition commit: the table version and batch id it belongs to."""


class Table:
    """An open table (create or reopen with :func:`open_table`).

    Schema changes: :meth:`add_columns` appends nullable columns to :attr:`schema` and
    publishes the new schema in a new ``_txn`` version (with the table's schema history).
    Rows appended before the call are committed first, in segments of the old schema; every
    partition's newest segment is sealed, so later rows go to new segments of the new schema
    (a live file's schema never changes). Appends from then on must carry the new schema.
    Readers (:func:`streamwrite.read_table`, :meth:`snapshot`) read older segments as the new
    schema with nulls in the added columns; compaction merges segments of different schemas
    into one of the newest schema. On an encrypted table the added columns are encrypted
    with the footer key.
    """

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
        dedup: DedupLogFile | None = None,
        skipping: TableSkipping | None = None,
    ) -> None:
        self.path = path
        self.schema = schema
        self.settings = settings
        self.encryption = encryption
        self.decryption = None if encryption is None else decryption_for(encryption)
        """Reads the table's segments (compaction)."""
        self._machine = TableMachine(
            record,
            CommitPolicy(
                settings.commit_rows,
                settings.commit_bytes,
                settings.commit_interval,
                settings.row_group_bytes,
                settings.segment_row_groups,
            ),
            time.monotonic(),
            segment_numbers(path, record),
        )
        """The table's decisions (streamwrite.layout.table): counts, names, order."""
        self._active: dict[str, LiveFile] = {}
        """The newest segment of each partition appended to since open, open for appending
        (opened on the partition's first row group, so that a table of many partitions
        opens no file until it is written)."""
        self._planners: dict[str, EncodingPlanner] = {}
        """Each partition's encoding planner (a column's encoding decided once, re-sampled)."""
        self._sealed: dict[tuple[str, str], LiveFile] = {}
        """Segments replaced as newest with row groups still to commit: each is closed when
        the machine says its last queued commit is published (until then compaction leaves
        it alone)."""
        self._lock_file = lock
        self.executor = executor
        self._owns_executor = owns_executor
        self._write_kwargs = write_options
        self.parquet_schema = arrow_to_parquet(schema)
        self.options = make_write_options(
            [c.path_in_schema for c in self.parquet_schema.columns],
            caller="open_table",
            **write_options,
        )
        self._buffers: dict[str, PartitionBuffer] = {}
        self.segment_infos: dict[tuple[str, str, int], SegmentInfo] = {}
        """Compaction's cache: (partition, segment, committed size) -> what it holds."""
        self.compaction_lock = anyio.Lock()
        self.compactor_scope = anyio.CancelScope()
        """The background compactor runs in it; :meth:`close` cancels it."""
        self.last_compaction_error: Exception | None = None
        """The last error of the background compactor (it keeps running)."""
        self._lock = anyio.Lock()  # buffers and the order of commit units
        self._commit_lock = anyio.Lock()  # one commit (or compaction swap) at a time
        self._task_group: TaskGroup | None = None
        self._pipeline = CommitPipeline(
            self._take, self._commit, max_pending=settings.max_in_flight
        )
        """Tickets, the open group and the units in flight (:mod:`.pipeline`)."""
        self.pins = PinRegistry()
        self.metrics = TableMetrics()
        self._dedup = dedup
        """The dedup keys committed within the window and their log (None: dedup_window=0)."""
        self._skipping = skipping
        """The table's data skipping (None: not configured)."""

    # -- buffering --------------------------------------------------------------------------

    async def _open_newest(self, name: str) -> LiveFile | None:
        """Open partition ``name``'s listed newest segment for appending, if it may take more
        (a segment of an older schema than the table's is sealed instead)."""
        segment = self._machine.newest_to_open(name)
        if segment is None:
            return None
        if self._machine.record.partitions[name][-1].is_cold:  # tiered: never appended to
            self._machine.seal_newest(name)
            return None
        if self._machine.record.schemas:  # the table changed its schema: is this one older?
            names = await anyio.to_thread.run_sync(segment_column_names, self.path / name / segment)
            if names != tuple(c.name for c in self.parquet_schema.columns):
                self._machine.seal_newest(name)
                return None
        live = await LiveFile.open(
            self.path / name / segment,
            self.schema,
            encryption=self._encryption(),
            **self._write_kwargs,
        )
        self._active[name] = live
        self._machine.opened(name, segment, live.last_commit.num_row_groups)
        return live

    async def _segment_for_next_row_group(self, name: str) -> tuple[LiveFile, int]:
        """The segment partition ``name``'s next row group goes to and its ordinal there: its
        newest, or a new one when there is none or it is full (the full one is sealed)."""
        live = self._active.get(name) or await self._open_newest(name)
        ordinal = self._machine.next_row_group(name)
        if live is not None and ordinal is not None:
            return live, ordinal
        created = await self.new_segment(name)
        if self._skipping is not None:
            self._skipping.created(f"{name}/{created.path.name}")
        old, close_now = self._machine.roll_over(name, created.path.name)
        if live is not None and old is not None:
            if close_now:
                await live.close()  # all its row groups are committed
            else:
                self._sealed[(name, old)] = live  # closed once its last commit is published
        self._active[name] = created
        self.metrics.segments_created += 1
        return created, 0

    async def _encode(self, name: str, table: pa.Table) -> tuple[LiveFile, EncodedRowGroup]:
        """Encode one row group of partition ``name`` for the segment it goes to (encrypted
        with that segment's own keys and ``aad_file_unique`` and its true ordinal, for an
        encrypted table)."""
        live, ordinal = await self._segment_for_next_row_group(name)
        planner = self._planners.setdefault(name, EncodingPlanner())
        jobs = row_group_jobs(
            table,
            self.parquet_schema,
            self.options,
            live._encryptor,
            ordinal if self.encryption is not None else 0,
            planner,
        )
        started = time.perf_counter()
        chunks = await self.executor.run_all(jobs)
        self.metrics.encode_seconds += time.perf_counter() - started
        planner.observe(chunks)
        chunks = attach_index_parts(chunks, table, self.options)
        return live, (chunks, table.num_rows)

    async def _cut(self, name: str, buffer: PartitionBuffer, *, partial: bool) -> None:
        """Encode the row groups of a partition buffer the machine says are due (the rest
        too, if ``partial``).

        The buffer changes only after a row group is encoded, so a cancelled encode loses
        nothing.
        """
        while True:
            size = self._machine.row_group_rows(name, self.options.row_group_size, partial=partial)
            if size is None:
                return
            rows = pa.concat_tables(buffer.pending)
            piece, rest = rows.slice(0, size), rows.slice(size)
            live, encoded = await self._encode(name, piece)
            if self._skipping is not None:  # the sketch of the segment it goes to
                self._skipping.observe(f"{name}/{live.path.name}", piece)
            buffer.pending = [rest] if rest.num_rows else []
            self._machine.cut(name, piece.num_rows, rest.nbytes, live.path.name)
            buffer.encoded.append((live, encoded))

    def _check(self) -> None:
        machine = self._machine
        if machine.state is TableState.CLOSED:
            raise StateError(f"The table {str(self.path)!r} is closed.")
        if machine.state is TableState.POISONED:
            raise StateError(
                f"The table {str(self.path)!r} failed a commit ({machine.error}); "
                "reopen it to roll back to its last commit."
            ) from machine.error

    def _fail(self, exc: BaseException) -> None:
        """A commit step failed: the table is poisoned, and no append still waiting for a
        commit will get one."""
        self._machine.fail(exc)
        error = StateError(f"The table {str(self.path)!r} failed a commit ({exc}).")
        error.__cause__ = exc
        self._pipeline.fail(error)

    @overload
    async def append(
        self,
        data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch],
        *,
        app_id: str | None = None,
        batch_id: int | None = None,
        on_stale: str = "error",
        wait: Literal[True] = True,
        dedup_key: bytes | None = None,
    ) -> TableCommit | None: ...

    @overload
    async def append(
        self,
        data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch],
        *,
        app_id: str | None = None,
        batch_id: int | None = None,
        on_stale: str = "error",
        wait: Literal[False],
        dedup_key: bytes | None = None,
    ) -> CommitTicket: ...

    async def append(
        self,
        data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch],
        *,
        app_id: str | None = None,
        batch_id: int | None = None,
        on_stale: str = "error",
        wait: bool = True,
        dedup_key: bytes | None = None,
    ) -> TableCommit | CommitTicket | None:
        """Add rows. With ``app_id`` and ``batch_id`` the rows (and anything buffered) are
        committed now, exactly once. The last batch id committed for that app id again is a
        replay (Spark's, after a failure): it writes nothing and returns a commit with
        ``skipped=True``; so is an id still in flight (accepted, not yet durable), once that
        commit is durable. An id below the last one is not a replay (for instance a query
        restarted from a new checkpoint under the same app id, whose ids start at 0 again):
        it raises :class:`~streamwrite.errors.StaleBatchError` and buffers nothing, unless
        ``on_stale="skip"``, which skips it with a warning (logger ``streamwrite.table``).

        With ``wait=False`` the call returns a :class:`CommitTicket` as soon as the rows are
        accepted (validated and buffered) and ``await ticket.durable()`` says when they are
        durable: inside ``async with`` the next batches encode while earlier ones are written
        and synced (pipelining), commits keep the order of appends, and appends arriving
        from many tasks while a commit is in flight share the next one (group commit). An
        append waits while ``max_in_flight`` appends are accepted and not yet durable.

        With ``dedup_key`` (8..64 bytes, e.g. a digest of a request; not with ``app_id``) the
        append is idempotent within the table's ``dedup_window`` (:func:`open_table`): if an
        append with the same key was committed less than ``dedup_window`` seconds before this
        one is accepted (the writer's wall clock at that commit and now), this one writes
        nothing and its commit has ``skipped=True``; so does an append whose key is in flight
        (accepted, not yet durable: it resolves when that one does, or raises its error), and
        the same key twice in one group commit is written once. A key is remembered exactly
        when its rows are committed (its record in the table's dedup log is synced with the
        segments, before the ``_txn`` publish), across reopens and crashes. Past the window
        the same key is written again. With ``dedup_window=0`` keys are checked and ignored.
        The key does not change when rows are committed (the commit policy decides).

        Returns:
            ``wait=False``: the ticket. Otherwise the commit when this call committed (or
            skipped) one, else None (the rows wait for the commit policy; inside
            ``async with`` a commit the policy asks for runs in the background).

        Raises:
            ConfigError: ``app_id`` without ``batch_id`` (or the reverse), a negative or
                non-integer ``batch_id``, ``on_stale`` not ``"error"`` or ``"skip"``,
                ``wait`` not a bool, a ``dedup_key`` that is not 8..64 bytes or comes with
                ``app_id``: nothing is buffered.
            StaleBatchError: ``batch_id`` is below the last one committed (or in flight) for
                ``app_id``.
            SchemaError: the data does not match the table schema, or holds a value its
                column cannot take (a null in a REQUIRED column...): nothing is buffered.
            StateError: an earlier commit failed (the table is poisoned), or it is closed.
            StreamwriteIOError: this commit failed (the table is poisoned from now on).
        """
        self._check()
        batch_id = check_batch_id(app_id, batch_id, on_stale)
        if not isinstance(wait, bool):
            raise ConfigError(f"wait must be True or False, got {wait!r}.")
        check_dedup_key(dedup_key, app_id)
        if self._dedup is None:
            dedup_key = None  # dedup_window=0: deduplication is off
        table = as_table(data, self.schema, "the table")
        check_values(table, self.parquet_schema)  # refused whole, before any of it is buffered
        await self._pipeline.wait_for_room()
        # Once accepted, a batch is buffered whole: cancellation waits for that.
        with anyio.CancelScope(shield=True):
            ticket, due = await self._accept(table, app_id, batch_id, on_stale, dedup_key)
        if due and app_id is None:  # the policy cuts a commit here
            await self._pipeline.take_now()
        if not wait:
            return ticket
        if ticket.done or app_id is not None or (due and not self._pipeline.background):
            return await ticket.durable()
        return None

    async def _accept(
        self,
        table: pa.Table,
        app_id: str | None,
        batch_id: int | None,
        on_stale: str,
        dedup_key: bytes | None = None,
    ) -> tuple[CommitTicket, bool]:
        """Buffer ``table`` whole (lock held) and join the open group.

        Returns:
            Its ticket, and whether a commit was requested.
        """
        async with self._lock:
            self._check()
            if not table.schema.equals(self.schema, check_metadata=False):
                as_table(table, self.schema, "the table")  # add_columns came first: refused
            if app_id is not None and batch_id is not None:
                record = self._machine.record
                skipped = self._pipeline.decide(
                    record,
                    self._machine.decide_batch(app_id, batch_id),
                    app_id,
                    batch_id,
                    on_stale,
                    table.num_rows,
                )
                if skipped is not None:
                    self.metrics.batches_skipped += 1
                    return skipped, False
            if dedup_key is not None and self._dedup is not None:
                remembered = self._dedup.remembered(dedup_key, time.time())
                skipped = self._pipeline.decide_key(self._machine.record, dedup_key, remembered)
                if skipped is not None:
                    self.metrics.appends_deduplicated += 1
                    return skipped, False
            record = self._machine.record
            try:
                for name, rows in split_by_partition(table, record.timestamp, record.partition_by):
                    buffer = self._buffers.setdefault(name, PartitionBuffer())
                    buffer.pending.append(rows)
                    self._machine.buffer(name, rows.num_rows, rows.nbytes, time.monotonic())
                    await self._cut(name, buffer, partial=False)
            except BaseException as exc:
                # Part of the batch may be buffered (or encoded): a later commit must not
                # take rows whose append raised, so nothing more is committed.
                self._fail(exc)
                raise
            self._machine.accept(table.num_rows, table.nbytes)
            self.metrics.rows_appended += table.num_rows
            self.metrics.bytes_appended += table.nbytes
            self.metrics.rows_buffered = self._machine.buffered_rows
            ticket = self._pipeline.join(
                CommitTicket(self._pipeline.drive, table.num_rows, app_id, batch_id, dedup_key)
            )
            if app_id is not None:
                self._pipeline.request()
                return ticket, True
            return ticket, self._machine.commit_due(time.monotonic())

    async def _take(self) -> Unit | None:
        """Encode what is buffered and take it, with the open group's tickets, as the next
        unit. A failure poisons the table (the rows of a failed ticket must never be
        committed by a later unit) and fails those tickets."""
        async with self._lock:
            return await self._detach_and_take()

    async def _detach_and_take(self) -> Unit | None:
        """:meth:`_take` with ``self._lock`` already held."""
        tickets = self._pipeline.detach()
        try:
            return await self._take_locked(tickets)
        except BaseException as exc:
            self._pipeline.abandon(tickets, exc)
            self._fail(exc)
            raise

    async def _take_locked(self, tickets: list[CommitTicket]) -> Unit | None:
        if not tickets and not self._machine.buffered_rows:
            return None
        for name, buffer in self._buffers.items():
            await self._cut(name, buffer, partial=True)
        parts = {name: b.encoded for name, b in self._buffers.items() if b.encoded}
        plan = self._machine.take_unit(applied_ids(tickets), time.monotonic())
        self._buffers = {}
        self.metrics.rows_buffered = 0
        self.metrics.queue_depth = len(self._pipeline.taken) + 1
        return Unit(parts, plan.num_rows, plan, tickets)

    async def flush(self) -> TableCommit | None:
        """Commit everything appended so far (and wait for the commits in flight).

        Returns:
            The commit of what was buffered, or None when nothing was.

        Raises:
            StateError: the table is poisoned or closed.
            StreamwriteIOError: the commit failed (the table is poisoned from now on).
        """
        self._check()
        async with self._lock:
            pipeline = self._pipeline
            ticket = pipeline.open[-1] if pipeline.open else pipeline.last
            buffered = bool(pipeline.open)
            pipeline.request()
        if ticket is None or (ticket.done and not buffered):
            self._check()
            return None
        commit = await ticket.durable()
        self._check()
        return commit if buffered else None

    # -- committing -------------------------------------------------------------------------

    async def _commit(self, unit: Unit) -> TableCommit:
        async with self._commit_lock:
            self._check()
            plan = unit.plan
            keys = dedup_keys([ticket.dedup_key for ticket in unit.tickets])
            if not plan.segments and not plan.applied and not keys:  # the same version
                record = self._machine.record
                return TableCommit(record.version, 0, dict(record.partitions))
            started = time.perf_counter()
            marker = json.dumps(
                {"version": self._machine.record.version + 1, "applied": dict(plan.applied)}
            )
            try:
                groups = {name: by_segment(unit.parts[name]) for name in unit.parts}
                written: list[tuple[CommitSegment, LiveFile, Segment]] = []
                for action in self._machine.begin_commit(plan):
                    live, row_groups = groups[action.partition].pop(0)
                    assert live.path.name == action.segment
                    assert len(row_groups) == action.num_row_groups
                    commit = await live._write_encoded(row_groups, ((KV_TXN, marker),))
                    segment = Segment(live.path.name, commit.parquet_size, commit.footer_checksum)
                    written.append((action, live, segment))
                # Sync round 1: every segment's data and _pm (and the dedup log's records of
                # the keys); round 2 is the _txn publish. Reported only now: the machine lets
                # a segment close once its row groups are.
                log = self._dedup if keys else None
                version = self._machine.record.version + 1
                dedup = None if log is None else log.window.plan(version, time.time(), keys)
                extra = [] if log is None or dedup is None else [log.sync_call(dedup)]
                skipping: list[dict[str, Any]] = []
                if self._skipping is not None:  # sealed segments' entries, in the round
                    written_segments = [(a.partition, segment) for a, _, segment in written]
                    extra.append(
                        self._skipping.sync_call(self._machine.record, written_segments, skipping)
                    )
                await anyio.to_thread.run_sync(
                    sync_live_files, [live for _, live, _ in written], extra
                )
                for action, _, segment in written:
                    self._machine.segment_committed(action, segment)
                record = self._machine.finish_commit(plan)
                if dedup is not None:
                    record = replace(record, dedup=dedup.log)
                if skipping:
                    record = replace(record, skipping=skipping[0])
            except BaseException as exc:
                self._fail(exc)
                raise
            synced = time.perf_counter()
            await self._publish(record)
            if log is not None and dedup is not None:  # the keys are committed
                log.published(dedup)
                if dedup.retire is not None:  # rotated: the old log is deleted
                    await anyio.to_thread.run_sync(log.delete, dedup.retire)
            seconds = time.perf_counter() - started
            self.metrics.segment_seconds += synced - started
            self.metrics.publish_seconds += seconds - (synced - started)
            self.metrics.commits += 1
            self.metrics.rows_committed += unit.num_rows
            self.metrics.appends_committed += len(unit.tickets)
            self.metrics.last_commit_seconds = seconds
            self.metrics.commit_seconds.append(seconds)
            self.metrics.queue_depth = len(self._pipeline.taken) - 1
            return TableCommit(record.version, unit.num_rows, dict(record.partitions))

    async def _timer(self) -> None:
        assert self.settings.commit_interval is not None
        while True:
            await anyio.sleep(self.settings.commit_interval / 4)
            if self._machine.state is TableState.OPEN and self._machine.commit_due(
                time.monotonic()
            ):
                self._pipeline.request()

    # -- schema evolution (streamwrite.table.evolution) -------------------------------------

    def _encryption(self) -> FileEncryption | None:
        """The encryption settings of a segment of the current schema: the caller's, plus
        the footer key for added columns (:func:`.evolution.segment_encryption`)."""
        if self.encryption is None or not self._machine.record.schemas:
            return self.encryption
        history = schema_history(self._machine.record)
        return segment_encryption(self.encryption, history, self.schema)

    async def add_columns(self, fields: Sequence[pa.Field]) -> TableCommit:
        """Append nullable columns to the table's schema.

        What is buffered is committed first, under the old schema (with every commit in
        flight); then a new ``_txn`` version publishes the new schema (durable when this
        returns), and every partition's newest segment is sealed: the next row group of
        each starts a new segment, written with the new schema. Appends accepted before this
        call commit with the old schema; later appends (and any still waiting to be
        accepted) must carry the new one. On an encrypted table the new columns are
        encrypted with the footer key. Older segments read as the new schema with nulls in
        the added columns.

        Args:
            fields: the columns to add, in order (each a nullable ``pyarrow.Field`` whose
                name the table does not have).

        Returns:
            The commit publishing the new schema (``num_rows`` 0; rows buffered before the
            call were committed by the commit before it).

        Raises:
            SchemaError: no field, a name the table has (or given twice), a field that is
                not nullable: nothing changed.
            UnsupportedError: a type the writer cannot map (a union...): nothing changed.
            ConfigError: a name the table's partitioning reserves: nothing changed.
            StateError: the table is poisoned or closed.
            StreamwriteIOError: committing the buffered rows or publishing the schema failed
                (the table is poisoned; reopening gives the old schema or the new one).
        """
        self._check()
        async with self._lock:
            self._check()
            record = self._machine.record
            schema = add_fields(self.schema, fields)
            check_timestamp_field(schema, record.timestamp, record.partition_by)
            parquet_schema = arrow_to_parquet(schema)
            options = make_write_options(
                [c.path_in_schema for c in parquet_schema.columns],
                caller="add_columns",
                **self._write_kwargs,
            )
            check_write_options(parquet_schema, options)
            # Appends wait for the buffer lock meanwhile; nothing may stop halfway.
            with anyio.CancelScope(shield=True):
                unit = await self._detach_and_take()
                await self._pipeline.drain(unit)
                self._check()
                async with self._commit_lock:
                    self._check()
                    record = self._machine.record.evolved(encode_arrow_schema(schema))
                    await self._publish(record)
                self.schema, self.options, self.parquet_schema = schema, options, parquet_schema
                if self._skipping is not None:
                    self._skipping.evolved(schema)
                self._planners = {}
                for name, segment, close_now in self._machine.seal_all():
                    live = self._active.pop(name)
                    if close_now:
                        await live.close()
                    else:  # not reached: every unit was drained; closed at its publish
                        self._sealed[(name, segment)] = live
            return TableCommit(record.version, 0, dict(record.partitions))

    # -- staged segments (streamwrite.table.staged: written elsewhere, adopted here) ----------

    def stage(
        self, app_id: str, batch_id: int, *, commit_size: int = STAGED_COMMIT_SIZE
    ) -> StagedBatch:
        """Where and how workers stage the rows of batch ``(app_id, batch_id)``: the
        picklable :class:`~streamwrite.StagedBatch` (this table's schema, partitioning, write
        options and encryption). Keep the table open until :meth:`adopt_staged`: a writer
        opening the table deletes every staging directory.

        Args:
            app_id, batch_id: the batch (as :meth:`append` takes them).
            commit_size: encoded bytes a staged segment holds in memory before committing
                them (each commit writes a footer; default 64 MiB).

        Returns:
            The staged batch (workers call its ``write``).

        Raises:
            ConfigError: a bad ``app_id``, ``batch_id`` or ``commit_size``.
            StateError: the table is poisoned or closed.
        """
        self._check()
        checked = check_batch_id(app_id, batch_id, "error")
        assert checked is not None
        if isinstance(commit_size, bool) or not isinstance(commit_size, int) or commit_size < 1:
            raise ConfigError(f"commit_size must be a positive integer, got {commit_size!r}.")
        record = self._machine.record
        return StagedBatch(
            str(self.path.absolute()),
            app_id,
            checked,
            self.schema,
            record.timestamp,
            record.partition_by,
            dict(self._write_kwargs),
            self._encryption(),
            commit_size,
        )

    async def adopt_staged(
        self,
        staged: Sequence[StagedSegment],
        *,
        app_id: str,
        batch_id: int,
        on_stale: str = "error",
    ) -> TableCommit:
        """Publish the segments staged for batch ``(app_id, batch_id)`` (exactly one attempt's
        report per piece of work) in one ``_txn`` version that records the batch id, then
        delete the batch's staging directory (failed and losing attempts with it). What is
        buffered is committed first. A replay (the batch id committed before) publishes
        nothing; so does a batch with no segment. The adopted segments are sealed: the next
        row of their partition starts a new segment. Staging is deleted when a writer
        opens the table (so nothing a crash left behind is ever published).

        Returns:
            The commit (``skipped=True`` for a replay or a skipped stale batch id).

        Raises:
            ConfigError: bad ids, a segment outside the batch's staging, reported twice.
            StaleBatchError: ``batch_id`` is below the last one committed for ``app_id``
                (unless ``on_stale="skip"``): nothing is published.
            CorruptFileError: a staged segment is missing or not what was reported (nothing
                is published; the table stays open).
            StateError: the table is poisoned or closed.
            StreamwriteIOError: moving the segments or the publish failed (poisoned).
        """
        self._check()
        checked = check_batch_id(app_id, batch_id, on_stale)
        assert checked is not None
        batch = f"{STAGING_DIR}/{staging_name(app_id, checked)}"
        async with self._lock:
            self._check()
            with anyio.CancelScope(shield=True):  # nothing may stop halfway
                unit = await self._detach_and_take()
                await self._pipeline.drain(unit)
                async with self._commit_lock:
                    self._check()
                    record = self._machine.record
                    decision = self._machine.decide_batch(app_id, checked)
                    commit = TableCommit(record.version, 0, dict(record.partitions), True)
                    if decision is BatchDecision.STALE and on_stale == "error":
                        raise StaleBatchError(app_id, checked, record.applied[app_id])
                    if decision is BatchDecision.NEW and staged:
                        columns = tuple(c.name for c in self.parquet_schema.columns)
                        segments = await anyio.to_thread.run_sync(
                            verify_staged, self.path, staged, batch, columns
                        )
                        moves = [(s, self._machine.allocate_segment(s.partition)) for s in segments]
                        try:
                            listed = await anyio.to_thread.run_sync(move_staged, self.path, moves)
                        except BaseException as exc:
                            self._fail(exc)
                            raise
                        record = record.next(listed, {app_id: checked})
                        await self._publish(record)
                        for partition in listed:  # sealed: appends start a new segment
                            live = self._active.pop(partition, None)
                            if live is not None:
                                await live.close()
                            self._machine.seal_newest(partition)
                        num_rows = sum(s.num_rows for s in segments)
                        commit = TableCommit(record.version, num_rows, dict(record.partitions))
                    elif decision is BatchDecision.NEW:
                        commit = replace(commit, skipped=False)
                await anyio.to_thread.run_sync(clean_staging, self.path, batch)
            return commit

    # -- segments and compaction (the steps are in streamwrite.compaction) -----------------

    async def new_segment(self, partition: str, *, pending: bool = False) -> LiveFile:
        """A new segment of ``partition`` (the next number), unpublished until a ``_txn``
        lists it; ``pending``: its data file is ``_data.pending`` (compaction renames it to
        ``data.parquet`` just before the swap), so no engine reading the directory sees it."""
        return await open_live_file(
            self.path / partition / self._machine.allocate_segment(partition),
            self.schema,
            encryption=self._encryption(),
            data_file=PENDING_DATA_FILE if pending else DATA_FILE,
            **self._write_kwargs,
        )

    async def _publish(self, record: TxnRecord) -> None:
        """Publish ``record`` (commit lock held; ``write_txn`` runs the machine's publish
        actions in a worker thread); a failure poisons the table. Then close the sealed
        segments whose last commit this was."""
        try:
            await anyio.to_thread.run_sync(write_txn, self.path, record)
        except BaseException as exc:
            self._fail(exc)
            raise
        for key in self._machine.published(record):
            await self._sealed.pop(key).close()

    async def swap_segments(
        self, partition: str, replaced: tuple[str, ...], merged: Segment
    ) -> None:
        """List ``merged`` in place of the ``replaced`` segments and retire them: the
        compaction commit point (the skipping store gains the merged segment's entry and loses
        the retired ones' in that same ``_txn`` version)."""
        skipping = self._skipping
        sketch = None
        if skipping is not None:  # read before the lock: commits go on meanwhile
            sketch = await anyio.to_thread.run_sync(skipping.merged_sketch, partition, merged)
        async with self._commit_lock:
            self._check()
            record = self._machine.record.compacted(partition, replaced, merged, time.time())
            if skipping is not None:
                try:
                    record = await anyio.to_thread.run_sync(
                        skipping.compacted, record, partition, replaced, merged, sketch
                    )
                except BaseException as exc:
                    self._fail(exc)
                    raise
            await self._publish(record)
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
            if not self._machine.record.retired:
                return []
            deleted = await anyio.to_thread.run_sync(
                sweep_retired, self.path, self._machine.record, grace_seconds, self.pins.is_pinned
            )
            if deleted:
                await self._publish(self._machine.record.without_retired(deleted))
                self.metrics.segments_deleted += len(deleted)
            return deleted

    async def eligible_segments(
        self, partition: str, idle_seconds: float | None, seal: bool
    ) -> tuple[tuple[Segment, ...], int]:
        """The partition's local segments now (its leading cold ones left out), and how many
        leading ones compaction may take: those
        no commit will touch again, plus the newest when the partition is idle
        (``idle_seconds``; None: now) with every row group it was given committed. With
        ``seal``, that newest one is sealed: the partition's next row group starts a new
        segment."""
        async with self._lock:
            machine = self._machine
            segments = machine.record.partitions.get(partition, ())
            busy = machine.sealed_segments(partition)
            live = self._active.get(partition)
            quiet = machine.quiet_seconds(partition, time.monotonic())
            waiting = idle_seconds is not None and quiet < idle_seconds
            if live is not None:
                if not machine.is_settled(partition) or waiting:
                    busy.add(live.path.name)
                elif seal:
                    del self._active[partition]
                    machine.seal_newest(partition)
                    await live.close()
            elif segments and machine.has_newest(partition):
                if waiting:  # not opened since the table was, but it may be appended to
                    busy.add(segments[-1].name)
                elif seal:
                    machine.seal_newest(partition)
            eligible = next((i for i, s in enumerate(segments) if s.name in busy), len(segments))
            # compaction never touches cold segments (tiering keeps them a leading run)
            num_cold = next((i for i, s in enumerate(segments) if not s.is_cold), len(segments))
            return segments[num_cold:], max(eligible - num_cold, 0)

    @property
    def is_open(self) -> bool:
        """Not closed, and no commit failed."""
        return self._machine.state is TableState.OPEN

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
            for name in sorted(self._machine.record.partitions)
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
            found = self._machine.record.find_partition(partition)
            if found is None:
                raise ConfigError(
                    f"The table {str(self.path)!r} has no partition {partition!r} (its "
                    f"partitions: {sorted(self._machine.record.partitions)})."
                )
            partition = found
        names = [partition] if partition else sorted(self._machine.record.partitions)
        policy = policy or self.settings.compaction
        return await compact_table(self, names, policy, explicit=True, hook=hook)

    # -- cold storage (streamwrite.table.tiering) -----------------------------------------

    _tiering: TableTiering | None = None
    """Moves settled segments to the table's cold storage (None: it has none; set by
    :func:`open_table` from ``cold_storage``)."""

    @property
    def last_tiering_error(self) -> Exception | None:
        """The last error of background tiering (it keeps running), or of the cold storage
        recovery on open when the store could not be reached (the next round retries)."""
        return None if self._tiering is None else self._tiering.last_error

    async def tier(self, *, hook: Callable[[str], None] | None = None) -> list[str]:
        """Move the segments due now to cold storage (``open_table(cold_storage=...)``):
        settled ones (no writer holds them, compaction would not merge them) whose data was
        last written ``cold_after`` seconds ago or more. Each is uploaded, verified (size
        and XXH64 read back), published in ``_txn`` and the bucket's ``_txn_log``, and its
        local copy is retired (deleted after the compaction grace period). ``hook`` is
        called with each step's name as it starts: ``upload``, ``verify``, ``publish``,
        ``log``, ``retire``, ``done``.

        Returns:
            The ``partition/segment`` paths moved.

        Raises:
            ConfigError: the table has no cold storage.
            StreamwriteIOError: the object store failed (nothing is lost: an unpublished
                upload is deleted now or by the next round or open).
            CorruptFileError: an object read back differs from the local segment.
            StateError: the table is closed or poisoned, or another writer uses the cold
                storage root.
        """
        self._check()
        if self._tiering is None:
            raise ConfigError(
                f"The table {str(self.path)!r} has no cold storage; open it with "
                "open_table(..., cold_storage=URL) to tier segments."
            )
        return await self._tiering.tier(self, hook)

    async def publish_change(self, change: Callable[[TxnRecord], TxnRecord]) -> TxnRecord:
        """Publish ``change(newest record)`` as the next ``_txn`` version (commit lock held;
        a failed publish poisons the table).

        Returns:
            The published record.
        """
        async with self._commit_lock:
            self._check()
            record = change(self._machine.record)
            await self._publish(record)
            return record

    # -- reading and lifecycle --------------------------------------------------------------

    def snapshot(self) -> TableSnapshot:
        """Pin the newest committed version (readable while appends and compaction go on).

        Release it (``with table.snapshot() as snap:`` or ``snap.release()``) when done:
        until then compaction keeps every segment it reads. Its cold segments are read from
        the table's cold storage with the table's ``storage_options``.
        """
        options = None if self._tiering is None else self._tiering.store.storage_options
        return snapshot_of(self.path, self._machine.record, self.pins, options)

    @property
    def record(self) -> TxnRecord:
        """The newest committed ``_txn`` record."""
        return self._machine.record

    @property
    def timestamp(self) -> str | None:
        """The designated timestamp column."""
        return self._machine.record.timestamp

    @property
    def version(self) -> int:
        """The ``_txn`` version of the newest commit."""
        return self._machine.record.version

    async def __aenter__(self) -> Table:
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        self._task_group.start_soon(self._pipeline.run_taker)
        self._task_group.start_soon(self._pipeline.run_committer)
        self._pipeline.background = True
        if self.settings.commit_interval is not None:
            self._task_group.start_soon(self._timer)
        if self.settings.compaction_interval is not None:
            self._task_group.start_soon(run_compactor, self)
            if self._tiering is not None:
                self._task_group.start_soon(self._tiering.run, self)
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
        if self._machine.state is TableState.CLOSED:
            return
        try:
            if self._machine.state is TableState.OPEN:
                await self.flush()
        finally:
            self._machine.close()
            self.compactor_scope.cancel()
            if self._tiering is not None:
                self._tiering.scope.cancel()
            async with self.compaction_lock:  # a cancelled compaction has cleaned up
                pass
            self._pipeline.background = False
            self._pipeline.fail(StateError(f"The table {str(self.path)!r} is closed."))
            try:
                for live in (*self._sealed.values(), *self._active.values()):
                    await live.close()
                if self._dedup is not None:
                    self._dedup.close()
                if self._skipping is not None:
                    self._skipping.close()
                if self._owns_executor:
                    await self.executor.aclose()
            finally:
                self._lock_file.release()
