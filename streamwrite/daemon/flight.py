"""The Arrow Flight front end: DoPut ingest, Flight SQL bulk ingest (ADBC), DoGet snapshots.

Start and stop it from the daemon's event loop (it binds its port at once)::

    async with open_flight_server("grpc://127.0.0.1:8815", authenticator=auth,
                                  service=service) as server:   # server.port
        ...                                  # serving; leaving the block shuts it down

or build a :class:`FlightIngestServer` with a :class:`anyio.from_thread.BlockingPortal` of
that loop (it serves once constructed; ``serve()`` is not needed) and call its
:meth:`~FlightIngestServer.stop` from another thread: it drains (new calls and the next batch
of each DoPut stream get ``FlightUnavailableError``, after the acks of every accepted batch),
then shuts down, waiting a bounded time for the calls in progress, whose writes need the loop.

Calls (handlers run on gRPC threads and reach the :class:`IngestService` through the portal):

- **DoPut, PATH descriptor** ``[b"<table>"]``: each record batch is one write
  (``app_metadata`` JSON ``{"app_id", "batch_id"}`` for exactly-once, or none); it is
  acknowledged, in order, with PutResult JSON ``{"batch_id", "rows", "table_version",
  "skipped"}`` once its table commit is published. Batches are submitted as they arrive and
  acknowledged by a second thread as they become durable, so commits pipeline and group; at
  most ``max_in_flight_batches`` are pending per stream (then the stream waits), and when the
  daemon's byte budget or the table queue is full a stream with writes pending waits for
  them instead of failing (503 only when it has none). A replayed last batch id writes
  nothing and is acknowledged with ``"skipped": true``; an older one is refused (400).
  Columns are matched by name (:func:`streamwrite.daemon.service.conform`): a column of another
  type is refused (400), a nullable table column the batch lacks is filled with nulls, a
  column the table lacks is added as nullable (right ``add_column``). A missing table is
  created from the stream's schema (right ``create``); its designated timestamp is the field
  the schema metadata ``streamwrite.timestamp`` names, else a timestamp column named
  ``timestamp``, else none (one partition), partitioned by ``ilp.partition_by``.
- **DoPut, CMD descriptor** holding a Flight SQL ``CommandStatementIngest`` (ADBC
  ``adbc_ingest``, modes append / create / create_append; replace is refused since it would
  drop acknowledged rows): the stream's batches are one write, committed whole or not at all
  (at most ``max_ingest_size`` bytes), answered with one PutResult ``DoPutUpdateResult``.
- **DoGet** of a ticket (JSON, see :mod:`streamwrite.daemon.flight_wire`; right ``read``):
  the newest published version of the table, projected and filtered on its designated
  timestamp (``since`` inclusive, ``until`` exclusive). **GetFlightInfo** / **GetSchema** of a
  PATH descriptor give the table's schema and a ticket for all of it.
- ADBC's connection calls: ``GetFlightInfo(CommandGetSqlInfo)`` is refused (the driver
  tolerates it), ``DoAction("CloseSession")`` answers CLOSED.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, TypeVar

import anyio
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as fl
from anyio.from_thread import BlockingPortal

from streamwrite.daemon.auth import Authenticator, Principal, check_table_name
from streamwrite.daemon.errors import (
    BadRequestError,
    NotFoundError,
    OverloadedError,
    TooLargeError,
)
from streamwrite.daemon.flight_auth import (
    MIDDLEWARE_KEY,
    AuthMiddlewareFactory,
    NoOpAuthHandler,
    as_daemon_error,
    flight_error,
    principal_of,
)
from streamwrite.daemon.flight_wire import (
    EXISTS_APPEND,
    EXISTS_FAIL,
    EXISTS_REPLACE,
    INGEST_TYPE_URL,
    NOT_EXIST_CREATE,
    NOT_EXIST_FAIL,
    SQL_TYPE_URL_PREFIX,
    decode_any,
    decode_ingest,
    encode_ack,
    encode_close_session_result,
    encode_put_update_result,
    encode_ticket,
    parse_batch_ids,
    parse_ticket,
)
from streamwrite.daemon.service import IngestService, PendingWrite, conform

__all__ = [
    "DEFAULT_MAX_BATCH_SIZE",
    "DEFAULT_MAX_INGEST_SIZE",
    "DEFAULT_MAX_IN_FLIGHT_BATCHES",
    "DEFAULT_SHUTDOWN_TIMEOUT_SECONDS",
    "TIMESTAMP_METADATA_KEY",
    "FlightIngestServer",
    "filter_time_range",
    "open_flight_server",
]

T = TypeVar("T")

DEFAULT_MAX_BATCH_SIZE = 64 << 20
"""Bytes (Arrow buffers) of one DoPut record batch: 413 past it."""
DEFAULT_MAX_INGEST_SIZE = 256 << 20
"""Bytes of one Flight SQL ingest (one all-or-nothing write): 413 past it."""
DEFAULT_MAX_IN_FLIGHT_BATCHES = 32
"""DoPut batches of one stream accepted and not yet acknowledged: the stream waits past it."""
DEFAULT_SHUTDOWN_TIMEOUT_SECONDS = 20.0
"""How long :func:`open_flight_server` waits for the calls in progress when it stops."""
TIMESTAMP_METADATA_KEY = b"streamwrite.timestamp"
"""Schema metadata naming the designated timestamp of a table a DoPut creates."""
_NS_PER_UNIT = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def filter_time_range(
    data: pa.Table, column: str, since_ns: int | None, until_ns: int | None
) -> pa.Table:
    """The rows of ``data`` whose ``column`` (a timestamp) is in ``[since_ns, until_ns)``.

    Bounds are nanoseconds since the epoch (None: unbounded); a null timestamp is outside
    every range.

    Raises:
        BadRequestError: ``column`` is not a timestamp column.
    """
    if since_ns is None and until_ns is None:
        return data
    kind = data.schema.field(column).type
    if not pa.types.is_timestamp(kind):
        raise BadRequestError(f"The designated timestamp {column!r} is {kind}, not a timestamp.")
    ns_per_unit = _NS_PER_UNIT[kind.unit]
    values = pc.cast(data.column(column), pa.int64())
    mask = None
    # value * ns_per_unit >= since  <=>  value >= ceil(since / ns_per_unit), and alike for <
    for bound, compare in ((since_ns, pc.greater_equal), (until_ns, pc.less)):
        if bound is not None:
            part = compare(values, pa.scalar(-(-bound // ns_per_unit), pa.int64()))
            mask = part if mask is None else pc.and_(mask, part)
    return data.filter(mask)


class _Acker:
    """Writes a DoPut stream's acks, in order, as its writes become durable (own thread).

    The stream's thread :meth:`put` s each accepted write (blocking while
    ``max_in_flight`` are pending); this thread waits for each through the portal and
    sends its PutResult. The first failure (a failed commit, a client gone) stops the acks;
    :meth:`check` raises it.
    """

    def __init__(self, writer: Any, portal: BlockingPortal, max_in_flight: int) -> None:
        self._writer = writer
        self._portal = portal
        self._items: queue.Queue[tuple[int | None, PendingWrite] | None] = queue.Queue()
        self._cond = threading.Condition()
        self._num_pending = 0
        self._max_in_flight = max_in_flight
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="flight-acks", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._items.get()) is not None:
            batch_id, pending = item
            try:
                # awaited even after a failure: the service releases the write's budget
                # and queue slot only then
                result = self._portal.call(pending.result)
                if self.error is None:
                    ack = encode_ack(batch_id, result.rows, result.version, result.skipped)
                    self._writer.write(pa.py_buffer(ack))
            except BaseException as exc:
                if self.error is None:
                    self.error = exc
            with self._cond:
                self._num_pending -= 1
                self._cond.notify_all()

    def check(self) -> None:
        """Raise the failure that stopped the acks, if any."""
        if self.error is not None:
            raise self.error

    def put(self, batch_id: int | None, pending: PendingWrite) -> None:
        """Queue an accepted write's ack; wait while ``max_in_flight`` are pending."""
        with self._cond:
            self._cond.wait_for(lambda: self._num_pending < self._max_in_flight)
            self._num_pending += 1
        self._items.put((batch_id, pending))

    def wait_one(self) -> bool:
        """Wait until one more pending write is acknowledged; False when none is pending."""
        with self._cond:
            if self._num_pending == 0:
                return False
            before = self._num_pending
            self._cond.wait_for(lambda: self._num_pending < before)
            return True

    def finish(self) -> None:
        """Wait until every queued ack is written (or the acks failed); stop the thread."""
        self._items.put(None)
        self._thread.join()


class FlightIngestServer(fl.FlightServerBase):  # type: ignore[misc]
    """The daemon's Flight service (see the module docstring); serving once constructed.

    Args:
        location: ``grpc://host:port`` (``grpc+tls://host:port`` with ``tls_certificates``);
            port 0 picks a free one (:attr:`port`).
        authenticator: the daemon's tokens.
        service: the tables.
        portal: a portal of the event loop ``service`` runs in.
        tls_certificates: ``(cert_pem, key_pem)`` pairs: TLS when given.
        max_batch_size, max_ingest_size, max_in_flight_batches: the limits above.
    """

    def __init__(
        self,
        location: str,
        *,
        authenticator: Authenticator,
        service: IngestService,
        portal: BlockingPortal,
        tls_certificates: list[tuple[bytes, bytes]] | None = None,
        max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
        max_ingest_size: int = DEFAULT_MAX_INGEST_SIZE,
        max_in_flight_batches: int = DEFAULT_MAX_IN_FLIGHT_BATCHES,
    ) -> None:
        self._draining = threading.Event()
        super().__init__(
            location,
            auth_handler=NoOpAuthHandler(),
            tls_certificates=tls_certificates or None,
            middleware={MIDDLEWARE_KEY: AuthMiddlewareFactory(authenticator, self._draining)},
        )
        self._service = service
        self._portal = portal
        self.max_batch_size = max_batch_size
        self.max_ingest_size = max_ingest_size
        self.max_in_flight_batches = max_in_flight_batches

    def drain(self) -> None:
        """Stop taking work: new calls get ``FlightUnavailableError``, and each DoPut stream
        ends at its next batch (that batch unwritten, every accepted one acknowledged first)
        with ``FlightUnavailableError``, so the client resends from its last ack."""
        self._draining.set()

    def stop(self, timeout_seconds: float = DEFAULT_SHUTDOWN_TIMEOUT_SECONDS) -> bool:
        """:meth:`drain`, then ``shutdown()`` (in a daemon thread: it waits for the calls in
        progress, and a client holding a stream open but idle would hold it forever).
        Call it from any thread but the service's event loop, which the calls need.

        Returns:
            True when the server stopped within ``timeout_seconds``.
        """
        self.drain()
        stopper = threading.Thread(target=self.shutdown, name="flight-shutdown", daemon=True)
        stopper.start()
        stopper.join(timeout_seconds)
        return not stopper.is_alive()

    def _call(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``func`` (async or not) in the service's event loop; its result."""
        return self._portal.call(partial(func, *args, **kwargs))

    def _count(self, endpoint: str, status: int) -> None:
        self._service.metrics.requests.labels(endpoint, str(status)).inc()

    def _guarded(self, endpoint: str, run: Callable[[], T]) -> T:
        """``run()``, counted in the metrics, its errors as Flight errors."""
        try:
            result = run()
        except BaseException as exc:
            error = as_daemon_error(exc) if not isinstance(exc, fl.FlightError) else None
            self._count(endpoint, 500 if error is None else error.status)
            raise flight_error(exc if error is None else error) from None
        self._count(endpoint, 200)
        return result

    # --- DoPut --------------------------------------------------------------------------

    def do_put(self, context: Any, descriptor: Any, reader: Any, writer: Any) -> None:
        """Ingest a stream (PATH: per-batch acks; CMD: Flight SQL bulk ingest)."""
        principal = principal_of(context)
        if descriptor.descriptor_type == fl.DescriptorType.CMD:
            self._guarded(
                "flight_sql_ingest", lambda: self._ingest(principal, descriptor, reader, writer)
            )
        else:
            self._guarded("flight_do_put", lambda: self._put(principal, descriptor, reader, writer))

    def _creation(self, schema: pa.Schema) -> dict[str, Any]:
        """The ``timestamp`` and ``partition_by`` of a table created from ``schema``."""
        metadata = schema.metadata or {}
        name = metadata.get(TIMESTAMP_METADATA_KEY, b"").decode() or None
        if (
            name is None
            and "timestamp" in schema.names
            and pa.types.is_timestamp(schema.field("timestamp").type)
        ):
            name = "timestamp"
        if name is not None and name not in schema.names:
            raise BadRequestError(
                f"The schema metadata {TIMESTAMP_METADATA_KEY.decode()!r} names {name!r}, "
                "which is not a column of the stream."
            )
        partition_by = self._service.config.ilp["partition_by"]
        return {
            "timestamp": name,
            "partition_by": None if name is None or partition_by == "none" else partition_by,
        }

    def _submit(
        self, principal: Principal, table: str, data: pa.Table, **kwargs: Any
    ) -> PendingWrite:
        pending: PendingWrite = self._call(
            self._service.submit, principal, table, partial(conform, data),
            num_bytes=data.nbytes, **kwargs,
        )  # fmt: skip
        return pending

    def _put(self, principal: Principal, descriptor: Any, reader: Any, writer: Any) -> None:
        path = descriptor.path or []
        if len(path) != 1:
            raise BadRequestError(
                f"A DoPut path descriptor names one table, got {len(path)} path elements."
            )
        try:
            table = check_table_name(path[0].decode("utf-8"))
        except UnicodeDecodeError:
            raise BadRequestError("The table name is not UTF-8.") from None
        principal.require("write", table)
        creation = self._creation(reader.schema)
        acker = _Acker(writer, self._portal, self.max_in_flight_batches)
        try:
            while True:
                try:
                    chunk = reader.read_chunk()
                except StopIteration:
                    break
                acker.check()
                if self._draining.is_set():
                    raise OverloadedError(
                        "The server is shutting down: this batch was not written; reconnect "
                        "and resend from the last acknowledged batch."
                    )
                ids = parse_batch_ids(
                    None if chunk.app_metadata is None else chunk.app_metadata.to_pybytes()
                )
                if chunk.data is None:
                    raise BadRequestError("A DoPut message carried metadata but no record batch.")
                num_bytes = chunk.data.nbytes
                if num_bytes > self.max_batch_size:
                    raise TooLargeError(
                        f"A record batch of {num_bytes} bytes is over the limit of "
                        f"{self.max_batch_size} bytes per batch; send smaller batches."
                    )
                data = pa.Table.from_batches([chunk.data])
                while True:
                    try:
                        pending = self._submit(
                            principal, table, data, app_id=ids.app_id, batch_id=ids.batch_id,
                            **creation,
                        )  # fmt: skip
                        break
                    except OverloadedError:
                        if not acker.wait_one():  # nothing of ours pending: refuse (503)
                            raise
                        acker.check()
                acker.put(ids.batch_id, pending)
        finally:
            acker.finish()  # acks of what was accepted go out before any error
        acker.check()

    def _ingest(self, principal: Principal, descriptor: Any, reader: Any, writer: Any) -> None:
        type_url, value = decode_any(descriptor.command)
        if type_url != INGEST_TYPE_URL:
            name = type_url.removeprefix(SQL_TYPE_URL_PREFIX)
            raise BadRequestError(
                f"This server only ingests: the Flight SQL command {name!r} is not supported."
            )
        command = decode_ingest(value)
        if command.temporary or command.transaction_id is not None:
            raise BadRequestError("Temporary tables and transactions are not supported.")
        if command.catalog or command.schema:
            raise BadRequestError(
                "Tables have no catalog or schema here: ingest into a plain table name."
            )
        if command.if_exists == EXISTS_REPLACE:
            raise BadRequestError(
                "Ingest mode 'replace' is not supported: it would drop acknowledged rows. "
                "Use append, create or create_append."
            )
        if command.if_not_exist not in (NOT_EXIST_CREATE, NOT_EXIST_FAIL) or (
            command.if_exists not in (EXISTS_FAIL, EXISTS_APPEND)
        ):
            raise BadRequestError("The ingest command leaves its table definition options unset.")
        table = check_table_name(command.table)
        principal.require("write", table)
        exists = self._call(self._service.exists, table)
        if exists and command.if_exists == EXISTS_FAIL:
            raise BadRequestError(f"Table {table!r} already exists (ingest mode 'create').")
        if not exists and command.if_not_exist == NOT_EXIST_FAIL:
            raise NotFoundError(f"Table {table!r} does not exist (ingest mode 'append').")
        if not exists:
            principal.require("create", table)
        creation = self._creation(reader.schema)
        batches, num_bytes = [], 0
        for batch in _batches(reader):
            num_bytes += batch.nbytes
            if num_bytes > self.max_ingest_size:
                raise TooLargeError(
                    f"The ingest is over the limit of {self.max_ingest_size} bytes; nothing "
                    "was written. Ingest it in parts."
                )
            batches.append(batch)
        data = pa.Table.from_batches(batches, schema=reader.schema)
        pending = self._submit(principal, table, data, **creation)
        result = self._call(pending.result)
        writer.write(pa.py_buffer(encode_put_update_result(result.rows)))

    # --- reads --------------------------------------------------------------------------

    def do_get(self, context: Any, ticket: Any) -> fl.RecordBatchStream:
        """The rows a ticket asks for, from the table's newest published version."""
        principal = principal_of(context)
        return self._guarded("flight_do_get", lambda: self._get(principal, ticket.ticket))

    def _get(self, principal: Principal, raw: bytes) -> fl.RecordBatchStream:
        ticket = parse_ticket(raw)
        table = check_table_name(ticket.table)
        principal.require("read", table)
        filtered = ticket.since_ns is not None or ticket.until_ns is not None
        timestamp: str | None = None
        if filtered:
            timestamp = self._call(self._service.timestamp_column, table)
            if timestamp is None:
                raise BadRequestError(
                    f"Table {table!r} has no designated timestamp: it cannot be filtered by time."
                )
        columns = None if ticket.columns is None else list(ticket.columns)
        read_columns = columns
        if columns is not None and timestamp is not None and timestamp not in columns:
            read_columns = [*columns, timestamp]
        data: pa.Table = self._call(self._service.read, principal, table, read_columns)
        if timestamp is not None:
            data = filter_time_range(data, timestamp, ticket.since_ns, ticket.until_ns)
        if columns is not None:
            data = data.select(columns)
        return fl.RecordBatchStream(data)

    def _info(self, principal: Principal, descriptor: Any) -> fl.FlightInfo:
        if descriptor.descriptor_type == fl.DescriptorType.CMD:
            type_url, _ = decode_any(descriptor.command)
            name = type_url.removeprefix(SQL_TYPE_URL_PREFIX)
            raise BadRequestError(
                f"This server only ingests and serves DoGet: {name!r} is not supported."
            )
        path = descriptor.path or []
        if len(path) != 1:
            raise BadRequestError(f"A path descriptor names one table, got {len(path)} elements.")
        table = check_table_name(path[0].decode("utf-8", "replace"))
        principal.require("read", table)
        schema = self._call(self._service.schema, table)
        if schema is None:
            raise NotFoundError(f"table does not exist [table={table}].")
        endpoint = fl.FlightEndpoint(encode_ticket(table), [])
        return fl.FlightInfo(schema, descriptor, [endpoint], -1, -1)

    def get_flight_info(self, context: Any, descriptor: Any) -> fl.FlightInfo:
        """A table's schema and the ticket for all its rows (PATH descriptor)."""
        principal = principal_of(context)
        return self._guarded("flight_get_flight_info", lambda: self._info(principal, descriptor))

    def get_schema(self, context: Any, descriptor: Any) -> fl.SchemaResult:
        """A table's schema (PATH descriptor)."""
        principal = principal_of(context)
        info = self._guarded("flight_get_schema", lambda: self._info(principal, descriptor))
        return fl.SchemaResult(info.schema)

    # --- actions ------------------------------------------------------------------------

    def list_actions(self, context: Any) -> list[tuple[str, str]]:
        """The one action: ADBC's ``CloseSession``."""
        return [("CloseSession", "End a Flight SQL session (nothing to release here).")]

    def do_action(self, context: Any, action: Any) -> Iterator[bytes]:
        """``CloseSession`` answers CLOSED (sessions hold nothing); others are refused."""
        if action.type == "CloseSession":
            self._count("flight_do_action", 200)
            return iter([encode_close_session_result()])
        self._count("flight_do_action", 400)
        raise flight_error(BadRequestError(f"Unknown Flight action {action.type!r}."))


def _batches(reader: Any) -> Iterator[pa.RecordBatch]:
    while True:
        try:
            chunk = reader.read_chunk()
        except StopIteration:
            return
        if chunk.data is not None:
            yield chunk.data


@asynccontextmanager
async def open_flight_server(
    location: str,
    *,
    authenticator: Authenticator,
    service: IngestService,
    tls_certificates: list[tuple[bytes, bytes]] | None = None,
    shutdown_timeout_seconds: float = DEFAULT_SHUTDOWN_TIMEOUT_SECONDS,
    **limits: int,
) -> AsyncIterator[FlightIngestServer]:
    """Serve Flight on ``location`` for the body of ``async with`` (in the service's loop).

    Yields the running :class:`FlightIngestServer` (``.port`` is the bound port). Leaving
    the block stops it (:meth:`FlightIngestServer.stop`): no new calls, DoPut streams end at
    their next batch, and it waits up to ``shutdown_timeout_seconds`` for the calls in
    progress (a client holding an idle stream open is abandoned after that; nothing it sent
    after its last ack was written).

    Raises:
        pyarrow.lib.ArrowException: the location cannot be bound.
    """
    async with BlockingPortal() as portal:
        server = FlightIngestServer(
            location, authenticator=authenticator, service=service, portal=portal,
            tls_certificates=tls_certificates, **limits,
        )  # fmt: skip
        try:
            yield server
        finally:
            server.drain()
            stopper = threading.Thread(target=server.shutdown, name="flight-shutdown", daemon=True)
            stopper.start()
            deadline = time.monotonic() + shutdown_timeout_seconds
            while stopper.is_alive() and time.monotonic() < deadline:
                await anyio.sleep(0.02)
