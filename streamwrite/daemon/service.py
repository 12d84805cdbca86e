"""The tables the daemon writes, shared by the HTTP and Flight front ends.

The daemon is the single writer of every table under ``data_root`` (the table lock says so to
any other process). A table is opened on first use (created when the token may and the config
allows), kept open with its background committer and compactor running (a task per table in
the service's task group: the task that opened a table closes it), and closed, with what it
buffered committed, when the service stops.

One write, from acceptance to acknowledgement::

    submit(principal, table, convert)             rights: write (+ create, + add_column)
      budget.acquire(body bytes)                  503 past limits.in_flight_bytes
      open or create the table                    404 unless auto-created
      under the table's lock:
        queue check                               503 past limits.table_queue
        convert(current schema) -> rows, new fields   (ILP typing, or Arrow conforming)
        table.add_columns(new fields)             a committed schema change (nullable)
        table.append(rows, wait=False, ...)       accepted: a CommitTicket
      table.flush() in a background task          asks for a commit now; the caller goes on
                                                  (a Flight stream pipelines; concurrent
                                                  writes share the commit)
    PendingWrite.result()                         ticket.durable(): the _txn is published
      budget.release                              only then may the caller answer 204 / ack

A write's rows are one append, so they are committed whole or not at all; a ``dedup_key`` (a
digest of token, table and body, from the HTTP layer) makes a retried request write nothing
when its first attempt committed within ``ilp.dedup_window_seconds``; ``app_id``/``batch_id``
(Flight) use the table's exactly-once batch ids.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pyarrow as pa
from anyio.abc import TaskGroup, TaskStatus

import streamwrite
from streamwrite.daemon.auth import Principal, check_table_name
from streamwrite.daemon.config import DaemonConfig, TableConfig
from streamwrite.daemon.errors import (
    BadRequestError,
    DaemonError,
    DaemonInternalError,
    NotFoundError,
    OverloadedError,
)
from streamwrite.daemon.metrics import Metrics
from streamwrite.errors import SchemaError, StreamwriteError

__all__ = ["Budget", "Convert", "IngestService", "PendingWrite", "WriteResult", "conform"]

T = TypeVar("T")

Convert = Callable[[pa.Schema | None], tuple[pa.Table, list[pa.Field]]]
"""Rows for a table: given its schema (None: the table does not exist yet), the rows in exactly
that schema's columns followed by any new columns, and those new (nullable) fields."""


@dataclass(frozen=True)
class WriteResult:
    """A durable write: its table, rows, the ``_txn`` version that holds them, and whether
    it was a retry (or replayed batch id) that wrote nothing."""

    table: str
    rows: int
    version: int
    skipped: bool


class Budget:
    """The global in-flight byte budget: bodies being parsed or committed."""

    def __init__(self, limit_bytes: int, retry_after_seconds: int, metrics: Metrics) -> None:
        self.limit_bytes = limit_bytes
        self.retry_after_seconds = retry_after_seconds
        self.used_bytes = 0
        self._metrics = metrics

    def acquire(self, num_bytes: int) -> None:
        """Take ``num_bytes`` or raise :class:`OverloadedError` (one request alone may take
        the whole budget, so a body the size limit allows is never refused forever)."""
        if self.used_bytes and self.used_bytes + num_bytes > self.limit_bytes:
            self._metrics.rejections.labels("overloaded").inc()
            raise OverloadedError(
                f"The daemon is at its in-flight limit ({self.limit_bytes} bytes): retry.",
                retry_after_seconds=self.retry_after_seconds,
            )
        self.used_bytes += num_bytes
        self._metrics.in_flight_bytes.set(self.used_bytes)

    def release(self, num_bytes: int) -> None:
        """Give back what :meth:`acquire` took."""
        self.used_bytes -= num_bytes
        self._metrics.in_flight_bytes.set(self.used_bytes)


@dataclass
class _Handle:
    """An open table: its lock (schema reads and changes + acceptance) and queue depth."""

    name: str
    table: streamwrite.Table
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    num_pending: int = 0


class PendingWrite:
    """An accepted write; :meth:`result` waits until it is durable."""

    def __init__(
        self,
        service: IngestService,
        handle: _Handle,
        ticket: streamwrite.CommitTicket,
        num_rows: int,
        num_bytes: int,
    ) -> None:
        self._service = service
        self._handle = handle
        self._ticket = ticket
        self.num_rows = num_rows
        self.num_bytes = num_bytes
        self._accepted = time.perf_counter()
        self._result: WriteResult | None = None
        self._finished = False

    async def result(self) -> WriteResult:
        """Wait until the write is durable.

        Raises:
            DaemonInternalError: its commit failed (nothing of it is acknowledged).
        """
        if self._result is not None:
            return self._result
        try:
            commit = await self._ticket.durable()
        except StreamwriteError as exc:
            raise DaemonInternalError(
                f"commit error for table: {self._handle.name}, error: {exc}"
            ) from exc
        finally:
            if not self._finished:
                self._finished = True
                self._service._finished(self._handle, self.num_bytes)
        metrics = self._service.metrics
        metrics.commit_seconds.observe(time.perf_counter() - self._accepted)
        if not commit.skipped:
            metrics.rows.labels(self._handle.name).inc(self.num_rows)
            metrics.bytes.labels(self._handle.name).inc(self.num_bytes)
        self._result = WriteResult(
            self._handle.name, 0 if commit.skipped else self.num_rows, commit.version,
            commit.skipped,
        )  # fmt: skip
        return self._result


def conform(data: pa.Table, schema: pa.Schema | None) -> tuple[pa.Table, list[pa.Field]]:
    """Arrow rows (Flight) in a table's columns: ``schema``'s columns in order (a nullable one
    the rows lack becomes nulls), then columns the table lacks, as new nullable fields.

    Raises:
        BadRequestError: a column of another type than the table's, or a required column
            missing.
    """
    if schema is None:
        return data, []
    columns, fields = [], []
    for table_field in schema:
        index = data.schema.get_field_index(table_field.name)
        if index < 0:
            if not table_field.nullable:
                raise BadRequestError(
                    f"The rows lack the column {table_field.name!r}, which the table requires."
                )
            columns.append(pa.nulls(data.num_rows, table_field.type))
        else:
            column = data.column(index)
            if not column.type.equals(table_field.type):
                raise BadRequestError(
                    f"Column {table_field.name!r} is {column.type} in the rows and "
                    f"{table_field.type} in the table."
                )
            if str(column.type) != str(table_field.type):
                # Equal but for the names of nested fields (Arrow ignores a list's item name,
                # e.g. Spark's "element"): the rows take the table's names.
                column = column.cast(table_field.type)
            columns.append(column)
        fields.append(table_field)
    new = [f.with_nullable(True) for f in data.schema if f.name not in schema.names]
    columns += [data.column(f.name) for f in new]
    return pa.Table.from_arrays(columns, schema=pa.schema(fields + new)), new


class IngestService:
    """The daemon's tables (``async with IngestService(config) as service``)."""

    def __init__(
        self,
        config: DaemonConfig,
        metrics: Metrics | None = None,
        executor: streamwrite.Executor | None = None,
    ) -> None:
        self.config = config
        self.metrics = metrics or Metrics()
        self.executor = executor
        limits = config.limits
        self.budget = Budget(limits["in_flight_bytes"], limits["retry_after_seconds"], self.metrics)
        self._handles: dict[str, _Handle] = {}
        self._opening = anyio.Lock()
        self._closing = anyio.Event()
        self._task_group: TaskGroup | None = None

    async def __aenter__(self) -> IngestService:
        self.config.data_root.mkdir(parents=True, exist_ok=True)
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        try:
            for declared in self.config.tables:
                await self._declared(declared)
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Close every table (committing what they buffered)."""
        self._closing.set()
        if self._task_group is not None:
            await self._task_group.__aexit__(None, None, None)
            self._task_group = None

    def path(self, name: str) -> Path:
        """The directory of table ``name`` (validated)."""
        return self.config.data_root / check_table_name(name)

    def exists(self, name: str) -> bool:
        """True when table ``name`` is open or on disk."""
        return name in self._handles or (self.path(name) / "_txn").exists()

    async def _declared(self, declared: TableConfig) -> None:
        handle = await self._open(
            declared.name, declared.schema, declared.timestamp, declared.partition_by
        )
        assert handle is not None

    def _table_options(self) -> dict[str, Any]:
        engine = self.config.engine
        options: dict[str, Any] = {
            "executor": self.executor,
            "commit_interval": engine["commit_interval_seconds"] or None,
            "compaction_interval": engine["compaction_interval_seconds"] or None,
            "segment_row_groups": engine["segment_row_groups"],
        }
        if self.config.ilp["dedup_window_seconds"]:
            options["dedup_window"] = self.config.ilp["dedup_window_seconds"]
        return options

    async def _run_table(
        self,
        path: Path,
        schema: pa.Schema | None,
        options: dict[str, Any],
        *,
        task_status: TaskStatus[streamwrite.Table],
    ) -> None:
        async with await streamwrite.open_table(path, schema, **options) as table:
            task_status.started(table)
            await self._closing.wait()

    async def _open(
        self,
        name: str,
        schema: pa.Schema | None = None,
        timestamp: str | None = None,
        partition_by: str | None = None,
    ) -> _Handle | None:
        """The open table ``name``; opened from disk, or created when ``schema`` is given;
        None when it does not exist and no schema is given."""
        handle = self._handles.get(name)
        if handle is not None:
            return handle
        async with self._opening:
            handle = self._handles.get(name)
            if handle is not None:
                return handle
            path = self.path(name)
            exists = (path / "_txn").exists()
            if not exists and schema is None:
                return None
            if self._closing.is_set() or self._task_group is None:
                raise OverloadedError("The daemon is shutting down.")
            options = self._table_options()
            if not exists:
                options |= {"timestamp": timestamp, "partition_by": partition_by}
            try:
                table = await self._task_group.start(
                    self._run_table, path, None if exists else schema, options
                )
            except SchemaError as exc:
                if exists:
                    raise DaemonInternalError(f"Cannot open table {name!r}: {exc}") from exc
                # The request's columns cannot make a table (an unsupported type): its fault.
                raise BadRequestError(f"table: {name}; cannot create it: {exc}") from exc
            except StreamwriteError as exc:
                raise DaemonInternalError(f"Cannot open table {name!r}: {exc}") from exc
            handle = self._handles[name] = _Handle(name, table)
            self.metrics.tables_open.set(len(self._handles))
            return handle

    async def schema(self, name: str) -> pa.Schema | None:
        """The current schema of table ``name``, or None when it does not exist."""
        handle = await self._open(name)
        return None if handle is None else handle.table.schema

    async def submit(
        self,
        principal: Principal,
        name: str,
        convert: Convert,
        *,
        num_bytes: int = 0,
        app_id: str | None = None,
        batch_id: int | None = None,
        dedup_key: bytes | None = None,
        timestamp: str | None = None,
        partition_by: str | None = None,
    ) -> PendingWrite:
        """Accept a write (see the module docstring); ``num_bytes`` is charged to the
        in-flight budget until the write is durable or refused.

        Raises:
            UnauthorizedError, ForbiddenError, NotFoundError, BadRequestError,
            OverloadedError: refused, nothing written.
            DaemonInternalError: the table could not be opened or its commit failed.
        """
        check_table_name(name)
        principal.require("write", name)
        self.budget.acquire(num_bytes)
        try:
            return await self._submit(
                principal, name, convert, num_bytes, app_id, batch_id, dedup_key, timestamp,
                partition_by,
            )  # fmt: skip
        except BaseException:
            self.budget.release(num_bytes)
            raise

    async def _submit(
        self,
        principal: Principal,
        name: str,
        convert: Convert,
        num_bytes: int,
        app_id: str | None,
        batch_id: int | None,
        dedup_key: bytes | None,
        timestamp: str | None,
        partition_by: str | None,
    ) -> PendingWrite:
        ilp = self.config.ilp
        handle = await self._open(name)
        if handle is None:
            if not ilp["auto_create_tables"]:
                raise NotFoundError(
                    f"table does not exist [table={name}] and auto-creation of tables is off."
                )
            principal.require("create", name)
            rows, _ = await anyio.to_thread.run_sync(convert, None)
            handle = await self._open(name, rows.schema, timestamp, partition_by)
            assert handle is not None
        async with handle.lock:
            if handle.num_pending >= self.config.limits["table_queue"]:
                self.metrics.rejections.labels("overloaded").inc()
                raise OverloadedError(
                    f"The table {name!r} has {handle.num_pending} writes waiting: retry.",
                    retry_after_seconds=self.config.limits["retry_after_seconds"],
                )
            table = handle.table
            rows, new_fields = await anyio.to_thread.run_sync(convert, table.schema)
            if new_fields:
                if not ilp["auto_create_columns"]:
                    raise BadRequestError(
                        f"table: {name}; the columns {[f.name for f in new_fields]} do not "
                        "exist and auto-creation of columns is off."
                    )
                principal.require("add_column", name)
                await self._call(table.add_columns(new_fields), name)
            extra: dict[str, Any] = {} if dedup_key is None else {"dedup_key": dedup_key}
            ticket = await self._call(
                table.append(rows, app_id=app_id, batch_id=batch_id, wait=False, **extra), name
            )
            handle.num_pending += 1
            self.metrics.queue_depth.labels(name).set(handle.num_pending)
        pending = PendingWrite(self, handle, ticket, rows.num_rows, num_bytes)
        if not ticket.done and self._task_group is not None:
            self._task_group.start_soon(self._request_commit, table)
        return pending

    @staticmethod
    async def _request_commit(table: streamwrite.Table) -> None:
        """Commit now what a write appended, without making the writer wait: a Flight stream
        submits its next batch while this one commits (pipelined), and writes arriving
        meanwhile share the commit (grouped). A failure reaches the writes through their
        tickets (the table is poisoned), so it is not raised here."""
        with contextlib.suppress(StreamwriteError):
            await table.flush()

    async def _call(self, step: Awaitable[T], name: str) -> T:
        """Run a table call, mapping its errors: bad rows 400, a failed table 500."""
        try:
            return await step
        except DaemonError:
            raise
        except (SchemaError, streamwrite.StaleBatchError, streamwrite.ConfigError) as exc:
            raise BadRequestError(f"table: {name}; {exc}") from exc
        except StreamwriteError as exc:
            raise DaemonInternalError(f"commit error for table: {name}, error: {exc}") from exc

    def _finished(self, handle: _Handle, num_bytes: int) -> None:
        handle.num_pending -= 1
        self.metrics.queue_depth.labels(handle.name).set(handle.num_pending)
        self.budget.release(num_bytes)

    async def write(
        self, principal: Principal, name: str, convert: Convert, **kwargs: Any
    ) -> WriteResult:
        """:meth:`submit`, then wait until the write is durable."""
        pending = await self.submit(principal, name, convert, **kwargs)
        return await pending.result()

    async def read(
        self, principal: Principal, name: str, columns: list[str] | None = None
    ) -> pa.Table:
        """The rows of table ``name``'s newest published version (right ``read``).

        Raises:
            ForbiddenError, NotFoundError.
        """
        check_table_name(name)
        principal.require("read", name)
        handle = await self._open(name)
        if handle is None:
            raise NotFoundError(f"table does not exist [table={name}].")
        snapshot = handle.table.snapshot()
        try:
            return await anyio.to_thread.run_sync(lambda: snapshot.read(columns=columns))
        except (KeyError, SchemaError) as exc:
            raise BadRequestError(f"table: {name}; {exc}") from exc

    async def timestamp_column(self, name: str) -> str | None:
        """The designated timestamp column of table ``name`` (None: it has none).

        Raises:
            NotFoundError: no such table.
        """
        handle = await self._open(name)
        if handle is None:
            raise NotFoundError(f"table does not exist [table={name}].")
        return handle.table.timestamp

    @property
    def num_pending(self) -> int:
        """Writes accepted and not yet durable, over all tables."""
        return sum(h.num_pending for h in self._handles.values())
