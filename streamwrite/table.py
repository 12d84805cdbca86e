"""Tables: time-partitioned live files, committed together through ``_txn``.

::

    async with await streamwrite.open_table("ticks", schema, timestamp="ts",
                                            partition_by="day", commit_rows=100_000) as table:
        await table.append(batch)                                   # buffered, committed by policy
        await table.append(batch, app_id="job-1", batch_id=17)      # committed now, exactly once
        await table.flush()                                         # commit what is buffered
    streamwrite.read_table("ticks")                                 # the newest table snapshot

Data path: ``append`` routes rows to partitions (:mod:`streamwrite.layout.partitioning`),
buffers them, and cuts a row group whenever a partition holds ``row_group_size`` rows; each
row group is encoded at once by the executor (a process pool or the inline executor), so
encoding overlaps with the commits that follow. A commit (policy ``commit_rows``,
``commit_bytes``, ``commit_interval`` seconds, ``flush()``, or an append with a batch id)
encodes the partial row groups, commits every touched partition's live file, then publishes a
new ``_txn`` atomically: that is the table's commit point. Inside ``async with`` commits run in
a background task (the next batches encode while the previous commit writes and fsyncs) and
``commit_interval`` is honoured by a timer; without it, commits run inside the calls that
trigger them.

Failure rules: if any partition commit or the ``_txn`` publish fails, the table is poisoned
(every later call raises); reopening rolls partitions that are ahead of ``_txn`` back to it,
so a batch is either in the table once or not at all.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
from anyio.abc import TaskGroup

from streamwrite._io import fsync_directory
from streamwrite._pool import Executor, InlineExecutor
from streamwrite.decryption import DecryptionConfig
from streamwrite.encryption import FileEncryption
from streamwrite.errors import ConfigError, CorruptFileError, StreamwriteIOError
from streamwrite.layout.partitioning import check_timestamp_field, split_by_partition
from streamwrite.layout.txn import TXN_FILE, TxnRecord, decode_txn, encode_txn
from streamwrite.live import EncodedRowGroup, LiveFile
from streamwrite.options import make_write_options
from streamwrite.schema import arrow_to_parquet, decode_arrow_schema, encode_arrow_schema
from streamwrite.writer import as_table, row_group_jobs

__all__ = ["Table", "TableCommit", "TableMetrics", "TableSnapshot", "open_table", "read_snapshot"]

KV_TXN = "streamwrite.txn"
"""Footer key/value of a partition commit: the table version and batch id it belongs to."""


@dataclass(frozen=True, slots=True)
class TableCommit:
    """A table commit: ``version`` of ``_txn`` after it; ``skipped`` for a replayed batch id."""

    version: int
    num_rows: int
    partitions: dict[str, int]
    skipped: bool = False


@dataclass(frozen=True, slots=True)
class TableSnapshot:
    """A pinned table version: each partition's live file at its committed size."""

    path: Path
    version: int
    files: tuple[tuple[str, int], ...]
    """``(partition name, committed data.parquet size)``, in partition order."""

    def read(
        self, columns: list[str] | None = None, *, decryption: DecryptionConfig | None = None
    ) -> pa.Table:
        """Returns: the rows of this version, partitions in order (``decryption`` holds the
        keys of an encrypted table)."""
        from streamwrite.reader import read_table

        tables = [
            read_table(self.path / name, snapshot=size, columns=columns, decryption=decryption)
            for name, size in self.files
        ]
        if not tables:
            schema = decode_arrow_schema(decode_txn((self.path / TXN_FILE).read_bytes()).schema)
            return (
                schema if columns is None else pa.schema([schema.field(c) for c in columns])
            ).empty_table()
        return pa.concat_tables(tables)


def read_snapshot(path: Path) -> TableSnapshot:
    """The newest committed snapshot of the table at ``path`` (from its ``_txn``)."""
    record = decode_txn((path / TXN_FILE).read_bytes())
    files = tuple(sorted((name, size) for name, size in record.partitions.items()))
    return TableSnapshot(path, record.version, files)


@dataclass
class TableMetrics:
    """Counters of one open table (read them any time)."""

    rows_appended: int = 0
    bytes_appended: int = 0
    rows_committed: int = 0
    commits: int = 0
    batches_skipped: int = 0
    last_commit_seconds: float = 0.0
    commit_seconds: list[float] = field(default_factory=list)
    queue_depth: int = 0
    """Commits handed to the background committer and not finished yet."""
    rows_buffered: int = 0


@dataclass
class _Partition:
    pending: list[pa.Table] = field(default_factory=list)
    pending_rows: int = 0
    pending_bytes: int = 0
    encoded: list[EncodedRowGroup] = field(default_factory=list)


@dataclass
class _Unit:
    """One table commit's worth of encoded row groups, per partition (empty: a barrier)."""

    parts: dict[str, list[EncodedRowGroup]]
    num_rows: int
    app_id: str | None
    batch_id: int | None
    done: anyio.Event = field(default_factory=anyio.Event)
    result: TableCommit | None = None
    error: BaseException | None = None

    @property
    def is_barrier(self) -> bool:
        """Nothing to commit: it only marks a place in the committer's queue."""
        return not self.parts and not self.num_rows


def _write_txn(path: Path, record: TxnRecord) -> None:
    """Publish ``record`` atomically: temporary file, fsync, rename, directory fsync."""
    temporary = path / f".{TXN_FILE}.{record.version}.tmp"
    try:
        with open(temporary, "wb") as f:
            f.write(encode_txn(record))
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path / TXN_FILE)
        fsync_directory(path)
    except OSError as exc:
        raise StreamwriteIOError(f"Publishing {str(path / TXN_FILE)!r} failed: {exc}.") from exc


class Table:
    """An open table (create or reopen with :func:`open_table`)."""

    def __init__(
        self,
        path: Path,
        record: TxnRecord,
        schema: pa.Schema,
        files: dict[str, LiveFile],
        executor: Executor,
        owns_executor: bool,
        policy: tuple[int | None, int | None, float | None],
        write_options: dict[str, Any],
        row_group_bytes: int | None = None,
        encryption: FileEncryption | None = None,
    ) -> None:
        self.path = path
        self._encryption = encryption
        self._next_ordinal: dict[str, int] = (
            {}
            if encryption is None
            else {name: live.last_commit.num_row_groups for name, live in files.items()}
        )
        """Encrypted tables: the row group ordinal of each partition's next encoded row group."""
        self.schema = schema
        self._record = record
        self._files = files
        self._executor = executor
        self._owns_executor = owns_executor
        self._commit_rows, self._commit_bytes, self._commit_interval = policy
        self._row_group_bytes = row_group_bytes
        self._write_options = write_options
        self._options = make_write_options(schema.names, **write_options)
        self._parquet_schema = arrow_to_parquet(schema)
        self._buffers: dict[str, _Partition] = {}
        self._buffered_rows = 0
        self._buffered_bytes = 0
        self._last_commit = time.monotonic()
        self._lock = anyio.Lock()  # buffers and the order of commit units
        self._commit_lock = anyio.Lock()  # one commit at a time
        self._poisoned: BaseException | None = None
        self._closed = False
        self._task_group: TaskGroup | None = None
        self._send: Any = None
        self.metrics = TableMetrics()

    # -- buffering --------------------------------------------------------------------------

    async def _encode(self, name: str, table: pa.Table) -> EncodedRowGroup:
        """Encode one row group of partition ``name`` (encrypted with the partition's own
        keys and ``aad_file_unique`` and its true ordinal, for an encrypted table)."""
        if self._encryption is None:
            jobs = row_group_jobs(table, self._parquet_schema, self._options)
        else:
            live = await self._partition(name)
            jobs = row_group_jobs(
                table,
                self._parquet_schema,
                self._options,
                live.encryptor,
                self._next_ordinal[name],
            )
        return (await self._executor.run_all(jobs), table.num_rows)

    def _row_group_rows(self, buffer: _Partition) -> int:
        """Rows of the next row group: ``row_group_size``, fewer when ``row_group_bytes`` says."""
        size = self._options.row_group_size
        if self._row_group_bytes is not None and buffer.pending_bytes >= self._row_group_bytes:
            per_row = buffer.pending_bytes / max(1, buffer.pending_rows)
            size = min(size, max(1, int(self._row_group_bytes / per_row)))
        return size

    async def _cut(self, name: str, buffer: _Partition, *, partial: bool) -> None:
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
            if name in self._next_ordinal:
                self._next_ordinal[name] += 1
            buffer.pending = [rest] if rest.num_rows else []
            buffer.pending_rows = rest.num_rows
            buffer.pending_bytes = rest.nbytes
            buffer.encoded.append(encoded)

    def _check(self) -> None:
        if self._closed:
            raise StreamwriteIOError(f"The table {str(self.path)!r} is closed.")
        if self._poisoned is not None:
            raise StreamwriteIOError(
                f"The table {str(self.path)!r} failed a commit ({self._poisoned}); "
                "reopen it to roll back to its last commit."
            ) from self._poisoned

    def _due(self) -> bool:
        if self._commit_rows is not None and self._buffered_rows >= self._commit_rows:
            return True
        if self._commit_bytes is not None and self._buffered_bytes >= self._commit_bytes:
            return True
        return (
            self._commit_interval is not None
            and self._buffered_rows > 0
            and time.monotonic() - self._last_commit >= self._commit_interval
        )

    async def append(
        self,
        data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch],
        *,
        app_id: str | None = None,
        batch_id: int | None = None,
    ) -> TableCommit | None:
        """Add rows. With ``app_id`` and ``batch_id`` the rows (and anything buffered) are
        committed now, exactly once: a batch id already committed for that app id writes
        nothing and returns a commit with ``skipped=True``.

        Returns:
            The commit when this call committed (or skipped) one, else None.

        Raises:
            SchemaError: the data does not match the table schema.
            StreamwriteIOError: a commit failed (the table is poisoned), or it is closed.
        """
        self._check()
        if (app_id is None) != (batch_id is None):
            raise ConfigError("app_id and batch_id go together.")
        table = as_table(data, self.schema, "the table")
        # Once accepted, a batch is buffered (or committed) whole: cancellation waits for that.
        with anyio.CancelScope(shield=True):
            result = await self._accept(table, app_id, batch_id)
        return result

    async def _accept(
        self, table: pa.Table, app_id: str | None, batch_id: int | None
    ) -> TableCommit | None:
        async with self._lock:
            if (
                app_id is not None
                and batch_id is not None
                and self._record.is_applied(app_id, batch_id)
            ):
                self.metrics.batches_skipped += 1
                return TableCommit(
                    self._record.version, 0, dict(self._record.partitions), skipped=True
                )
            for name, rows in split_by_partition(
                table, self._record.timestamp, self._record.partition_by
            ):
                buffer = self._buffers.setdefault(name, _Partition())
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

    async def _take_unit(self, app_id: str | None, batch_id: int | None) -> _Unit:
        """Encode what is buffered and take it out of the buffers (lock held)."""
        for name, buffer in self._buffers.items():
            await self._cut(name, buffer, partial=True)
        parts = {name: b.encoded for name, b in self._buffers.items() if b.encoded}
        unit = _Unit(parts, self._buffered_rows, app_id, batch_id)
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
                unit = _Unit({}, 0, None, None)
            result = await self._submit(unit, wait=True)
        self._check()
        return result

    # -- committing -------------------------------------------------------------------------

    async def _partition(self, name: str) -> LiveFile:
        live = self._files.get(name)
        if live is None:
            live = await LiveFile.open(
                self.path / name, self.schema, encryption=self._encryption, **self._write_options
            )
            self._files[name] = live
            if self._encryption is not None:
                self._next_ordinal[name] = live.last_commit.num_row_groups
        return live

    async def _commit(self, unit: _Unit) -> TableCommit:
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
            sizes: dict[str, int] = {}
            try:
                for name in sorted(unit.parts):
                    live = await self._partition(name)
                    commit = await live.commit_encoded(unit.parts[name], ((KV_TXN, marker),))
                    sizes[name] = commit.parquet_size
                record = self._record.next(sizes, unit.app_id, unit.batch_id)
                await anyio.to_thread.run_sync(_write_txn, self.path, record)
            except BaseException as exc:
                self._poisoned = exc
                raise
            self._record = record
            seconds = time.perf_counter() - started
            self.metrics.commits += 1
            self.metrics.rows_committed += unit.num_rows
            self.metrics.last_commit_seconds = seconds
            self.metrics.commit_seconds.append(seconds)
            return TableCommit(record.version, unit.num_rows, dict(record.partitions))

    async def _submit(self, unit: _Unit, *, wait: bool) -> TableCommit | None:
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
        assert self._commit_interval is not None
        while True:
            await anyio.sleep(self._commit_interval / 4)
            if self._poisoned is None and self._due():
                async with self._lock:
                    if self._buffered_rows:
                        await self._submit(await self._take_unit(None, None), wait=False)

    # -- reading and lifecycle --------------------------------------------------------------

    def snapshot(self) -> TableSnapshot:
        """Pin the newest committed version (readable while appends go on)."""
        files = tuple(sorted(self._record.partitions.items()))
        return TableSnapshot(self.path, self._record.version, files)

    @property
    def version(self) -> int:
        """The ``_txn`` version of the newest commit."""
        return self._record.version

    async def __aenter__(self) -> Table:
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        send, receive = anyio.create_memory_object_stream[_Unit](1)
        self._send = send
        self._task_group.start_soon(self._committer, receive)
        if self._commit_interval is not None:
            self._task_group.start_soon(self._timer)
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
        """Commit what is buffered, wait for background commits, close every partition."""
        if self._closed:
            return
        try:
            if self._poisoned is None:
                await self.flush()
        finally:
            self._closed = True
            if self._send is not None:
                await self._send.aclose()
                self._send = None
            for live in self._files.values():
                await live.close()
            if self._owns_executor:
                await self._executor.aclose()


async def _recover_partitions(
    path: Path,
    record: TxnRecord,
    schema: pa.Schema,
    write_options: dict[str, Any],
    encryption: FileEncryption | None,
) -> dict[str, LiveFile]:
    """Open every partition; roll back those ahead of ``_txn`` (their table commit never came).

    A partition whose creation never reached its first commit point is created again (with the
    table's schema), then treated like any partition the ``_txn`` does not name.
    """
    files: dict[str, LiveFile] = {}
    try:
        for child in sorted(
            p for p in path.iterdir() if p.is_dir() and (p / "data.parquet").exists()
        ):
            live = await LiveFile.open(child, schema, encryption=encryption, **write_options)
            files[child.name] = live
            committed = record.partitions.get(child.name)
            current = live.last_commit.parquet_size
            if committed is None:
                committed = live.snapshots()[0].parquet_size  # the empty creation commit
            if current > committed:
                await live.rollback(committed)
            elif current < committed:
                raise CorruptFileError(
                    f"Partition {child.name!r} has {current} committed bytes, the table's _txn "
                    f"records {committed}.",
                    current,
                )
    except BaseException:
        for live in files.values():
            await live.close()
        raise
    return files


async def open_table(
    path: str | Path,
    schema: pa.Schema | None = None,
    *,
    timestamp: str | None = None,
    partition_by: str | None = None,
    executor: Executor | None = None,
    commit_rows: int | None = None,
    commit_bytes: int | None = None,
    commit_interval: float | None = None,
    row_group_bytes: int | None = None,
    encryption: FileEncryption | None = None,
    **write_options: Any,
) -> Table:
    """Create the table at ``path`` (a directory) or reopen it, recovering first.

    Args:
        path: the table directory.
        schema: required to create; checked against the table when reopening.
        timestamp: the designated timestamp column (rows route to partitions by it).
        partition_by: ``"hour"``, ``"day"``, ``"month"`` or None (one partition).
        executor: where encoding runs (a :class:`streamwrite._pool.ProcessPool`); default an
            inline executor owned by the table.
        commit_rows, commit_bytes, commit_interval: commit when this many rows or bytes are
            buffered, or this many seconds passed since the last commit.
        row_group_bytes: also cut a row group when a partition buffers this many (Arrow)
            bytes; ``row_group_size`` (rows, a write option) applies too.
        encryption: encrypts every partition (each its own live file with its own
            ``aad_file_unique``; data keys come from the key source, see
            :class:`~streamwrite.encryption.FileEncryption`). Reopening an encrypted table
            needs it again (its key source unwraps the partitions' keys).
        write_options: as for :func:`streamwrite.write_table`.

    Returns:
        The open table; use ``async with`` for background commits and ``commit_interval``.

    Raises:
        ConfigError: bad options, no schema for a new table, a schema that does not match.
        CorruptFileError: a partition is behind the table's ``_txn``.
        EncryptionError: an encrypted partition reopened without ``encryption``.
    """
    directory = Path(path)
    for name, value in (
        ("commit_rows", commit_rows),
        ("commit_bytes", commit_bytes),
        ("row_group_bytes", row_group_bytes),
    ):
        if value is not None and value < 1:
            raise ConfigError(f"{name} must be positive, got {value!r}.")
    if commit_interval is not None and not (commit_interval > 0 and math.isfinite(commit_interval)):
        raise ConfigError(
            f"commit_interval must be a positive number of seconds, got {commit_interval!r}."
        )
    txn_path = directory / TXN_FILE
    if txn_path.exists():
        record = decode_txn(await anyio.Path(txn_path).read_bytes())
        stored = decode_arrow_schema(record.schema)
        if schema is not None and not schema.equals(stored, check_metadata=False):
            raise ConfigError(f"The table at {str(directory)!r} has schema {stored}, not {schema}.")
        if (timestamp, partition_by) not in ((None, None), (record.timestamp, record.partition_by)):
            raise ConfigError(
                f"The table at {str(directory)!r} is partitioned by {record.partition_by!r} on "
                f"{record.timestamp!r}; it cannot change to {partition_by!r} on {timestamp!r}."
            )
        schema = stored
        files = await _recover_partitions(directory, record, schema, write_options, encryption)
    else:
        if schema is None:
            raise ConfigError(f"A new table at {str(directory)!r} needs a schema.")
        check_timestamp_field(schema, timestamp, partition_by)
        make_write_options(schema.names, **write_options)  # validate before creating anything
        arrow_to_parquet(schema)
        directory.mkdir(parents=True, exist_ok=True)
        record = TxnRecord(
            schema=encode_arrow_schema(schema), timestamp=timestamp, partition_by=partition_by
        )
        await anyio.to_thread.run_sync(_write_txn, directory, record)
        files = {}
    owns = executor is None
    return Table(
        directory,
        record,
        schema,
        files,
        executor or InlineExecutor(),
        owns,
        (commit_rows, commit_bytes, commit_interval),
        write_options,
        row_group_bytes,
        encryption,
    )
