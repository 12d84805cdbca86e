"""ILP over HTTP, wire-compatible with QuestDB, plus the operations endpoints (aiohttp).

| route | auth | answer |
|---|---|---|
| ``POST /write``, ``POST /api/v2/write`` | yes | 204 once durable; JSON error otherwise |
| ``GET/HEAD /ping`` | no | 204, ``X-Influxdb-Version`` |
| ``GET /settings`` | no | QuestDB's settings JSON: line protocol versions 1 and 2 |
| ``GET /health`` | no | 200 ``{"status": "pass"}`` while the process serves |
| ``GET /ready`` | no | 200 when ready, 503 while starting or draining |
| ``GET /metrics`` | no | Prometheus text |

A write, step by step (each refusal answers at once and writes nothing)::

    draining?                          503 + Retry-After
    Authorization -> principal         401 (JSON)
    precision                          400 "unsupported precision"
    Content-Length > max_body_size     413, before a byte of the body is read
    Content-Encoding not gzip/identity 415
    budget.acquire(4 x body size)      503 + Retry-After past limits.in_flight_bytes
    read the body                      408 past http.body_timeout_seconds (slowloris),
                                       413 past max_body_size (chunked bodies),
                                       413 past max_decompressed_size while inflating
    parse every line, type every row   400 + "line" (thread: the event loop keeps serving)
    one table per request              400 otherwise (see below)
    submit + wait until durable        403 without the right, 404 unknown table, 503 queue
    204

**One table per request.** A request commits atomically: all its rows or none. A table's
commit point is its own ``_txn``, so a request naming two tables could half-commit (as QuestDB
does, by its documentation); the daemon refuses it with a 400 that says so, rather than
acknowledge a write that is not atomic. The questdb client's ``flush()`` per table (or
``sender.transaction(table)``) and influxdb-client points of one measurement per write meet
this.

**Retries never duplicate.** The clients resend a byte-identical body after a timeout or a
5xx. Each write carries a 16-byte key, BLAKE2b of (token name, table, ``Idempotency-Key``
header if sent, else the decompressed body); the table remembers the keys of its commits for
``ilp.dedup_window_seconds`` (durably, in the same commit as the rows), so a resent body whose
first attempt committed writes nothing and answers 204. Two different writes with identical
bodies (no timestamps, server time) within the window are one write: send an
``Idempotency-Key`` to tell them apart, or include timestamps.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from streamwrite.daemon.auth import Authenticator, Principal
from streamwrite.daemon.errors import (
    BadRequestError,
    DaemonError,
    DaemonInternalError,
    NotFoundError,
    OverloadedError,
    RequestTimeoutError,
    TooLargeError,
    UnsupportedMediaError,
)
from streamwrite.daemon.ilp import to_arrow
from streamwrite.daemon.parsing import Parsers
from streamwrite.daemon.service import IngestService

__all__ = ["HttpState", "make_app"]

logger = logging.getLogger("streamwrite.daemon")

PRECISIONS = frozenset({"n", "ns", "u", "us", "ms", "s", "m", "h"})
INFLUX_VERSION = "v2.7.4"
"""What ``/ping`` says in ``X-Influxdb-Version`` (as QuestDB does): influxdb-client reads it."""
_READ_SIZE = 1 << 20
MEMORY_PER_BODY_BYTE = 4
"""What a write in flight holds, per byte of its (inflated) body: the body, its parsed columns
(also pickled from the parse worker), their Arrow table and its encoded pages; measured by
``benchmarks/bench_daemon.py``'s overload run, so that ``limits.in_flight_bytes`` bounds the
memory of the writes in flight, not only their bodies."""


@dataclass
class HttpState:
    """What the handlers share: the service, auth, limits and the readiness flag."""

    service: IngestService
    authenticator: Authenticator
    ready: bool = False
    draining: bool = False
    parsers: Parsers = field(default_factory=lambda: Parsers(0))
    """Where bodies are parsed (worker processes, or threads)."""
    error_prefix: str = field(default_factory=lambda: secrets.token_hex(6))
    error_counter: int = 0

    def error_id(self) -> str:
        """QuestDB's errorId: 12 hex digits of this process, then a counter."""
        self.error_counter += 1
        return f"{self.error_prefix}-{self.error_counter}"


def _json_error(state: HttpState, error: DaemonError, endpoint: str) -> web.Response:
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.line is not None:
        body["line"] = error.line
    body["errorId"] = error_id = state.error_id()
    headers = {}
    if isinstance(error, OverloadedError):
        headers["Retry-After"] = str(error.retry_after_seconds)
    level = logging.ERROR if error.status >= 500 and error.status != 503 else logging.INFO
    logger.log(
        level,
        "request refused",
        extra={"endpoint": endpoint, "status": error.status, "errorId": error_id,
               "reason": error.message},
    )  # fmt: skip
    # Exactly "application/json" (no charset): the questdb client parses nothing else.
    return web.Response(
        status=error.status,
        body=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **headers},
    )


@dataclass
class _Body:
    """A read body: its bytes (inflated), their digest, and its size on the wire."""

    data: bytes
    digest: Any
    received_size: int


async def _read_body(request: web.Request, state: HttpState, acquired: list[int]) -> _Body:
    """Read and inflate the body within the size, time and budget limits."""
    http = state.service.config.http
    max_body_size, max_inflated_size = http["max_body_size"], http["max_decompressed_size"]
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("identity", "gzip", ""):
        raise UnsupportedMediaError(f"Content-Encoding {encoding!r} is not supported: use gzip.")
    declared = request.content_length
    if declared is not None and declared > max_body_size:
        state.service.metrics.rejections.labels("too_large").inc()
        raise TooLargeError(
            f"transaction is too large, either flush more frequently or increase "
            f"http.max_body_size [maxBufferSize={max_body_size}, contentLength={declared}]"
        )
    budget = state.service.budget

    def charge(num_bytes: int) -> None:
        budget.acquire(MEMORY_PER_BODY_BYTE * num_bytes)
        acquired[0] += MEMORY_PER_BODY_BYTE * num_bytes

    if declared:
        charge(declared)
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS) if encoding == "gzip" else None
    digest = hashlib.blake2b(digest_size=16)
    parts: list[bytes] = []
    received_size = inflated_size = 0
    with anyio.move_on_after(http["body_timeout_seconds"]) as scope:
        while chunk := await request.content.read(_READ_SIZE):
            received_size += len(chunk)
            if received_size > max_body_size:
                state.service.metrics.rejections.labels("too_large").inc()
                raise TooLargeError(
                    f"transaction is too large, either flush more frequently or increase "
                    f"http.max_body_size [maxBufferSize={max_body_size}]"
                )
            if declared is None:
                charge(len(chunk))
            if inflater is not None:
                chunk = _inflate(inflater, chunk, max_inflated_size - inflated_size)
                charge(len(chunk))  # the inflated bytes are what is parsed and kept
            inflated_size += len(chunk)
            digest.update(chunk)
            parts.append(chunk)
    if scope.cancelled_caught:
        raise RequestTimeoutError(
            f"The body did not arrive within {http['body_timeout_seconds']} s."
        )
    if inflater is not None and not inflater.eof:
        raise UnsupportedMediaError("The gzip body is truncated.")
    return _Body(b"".join(parts), digest, received_size)


def _inflate(inflater: Any, chunk: bytes, room_size: int) -> bytes:
    try:
        out: bytes = inflater.decompress(chunk, room_size + 1)
    except zlib.error as exc:
        raise UnsupportedMediaError(f"The gzip body does not decode: {exc}.") from None
    if len(out) > room_size or inflater.unconsumed_tail:
        raise TooLargeError("The decompressed body is larger than http.max_decompressed_size.")
    return out


def _dedup_key(principal: Principal, table: str, request: web.Request, body: _Body) -> bytes:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(principal.name.encode() + b"\0" + table.encode() + b"\0")
    key = request.headers.get("Idempotency-Key")
    digest.update(b"K" + key.encode() if key is not None else b"B" + body.digest.digest())
    return digest.digest()


async def _write(request: web.Request, state: HttpState) -> web.Response:
    service = state.service
    if state.draining:
        service.metrics.rejections.labels("draining").inc()
        raise OverloadedError("The daemon is shutting down: retry.")
    try:
        principal = state.authenticator.authenticate(request.headers.get("Authorization"))
    except DaemonError:
        service.metrics.rejections.labels("auth").inc()
        raise
    precision = request.query.get("precision", "n")
    if precision not in PRECISIONS:
        raise BadRequestError(f"unsupported precision {precision!r}")
    acquired = [0]
    try:
        body = await _read_body(request, state, acquired)
        try:
            batches = await state.parsers.parse(body.data, precision, time.time_ns())
        except BadRequestError:
            service.metrics.parse_errors.labels("ilp").inc()
            raise
        if not batches:
            return web.Response(status=204)
        tables = sorted({b.table for b in batches})
        if len(tables) > 1:
            service.metrics.parse_errors.labels("ilp").inc()
            raise BadRequestError(
                f"The request holds lines for {len(tables)} tables ({', '.join(tables[:5])}"
                f"{', ...' if len(tables) > 5 else ''}); streamwrite commits a request "
                "atomically and a commit covers one table: send one table per request "
                "(questdb: flush per table or sender.transaction(table))."
            )
        name = tables[0]
        ilp = service.config.ilp
        unit = ilp["timestamp_unit"]

        def convert(schema: Any) -> Any:
            return to_arrow(batches, schema, timestamp_column="timestamp", timestamp_unit=unit)

        pending = await service.submit(
            principal,
            name,
            convert,
            dedup_key=_dedup_key(principal, name, request, body)
            if ilp["dedup_window_seconds"]
            else None,
            timestamp="timestamp",
            partition_by=None if ilp["partition_by"] == "none" else ilp["partition_by"],
        )
        result = await pending.result()
        if not result.skipped:
            service.metrics.bytes.labels(name).inc(body.received_size)
        logger.debug(
            "write",
            extra={"table": name, "rows": result.rows, "version": result.version,
                   "skipped": result.skipped},
        )  # fmt: skip
        return web.Response(status=204)
    finally:
        if acquired[0]:
            service.budget.release(acquired[0])


def _handler(
    state: HttpState,
    endpoint: str,
    run: Callable[[web.Request, HttpState], Awaitable[web.Response]],
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handle(request: web.Request) -> web.Response:
        try:
            response = await run(request, state)
        except DaemonError as exc:
            response = _json_error(state, exc, endpoint)
        except Exception as exc:  # a bug: answer 500 with an errorId, keep serving
            logger.exception("internal error", extra={"endpoint": endpoint})
            error = DaemonInternalError(
                f"internal error ({type(exc).__name__}): the daemon's log has it under this errorId"
            )
            response = _json_error(state, error, endpoint)
        state.service.metrics.requests.labels(endpoint, str(response.status)).inc()
        return response

    return handle


async def _ping(request: web.Request, state: HttpState) -> web.Response:
    return web.Response(status=204, headers={"X-Influxdb-Version": INFLUX_VERSION})


async def _settings(request: web.Request, state: HttpState) -> web.Response:
    body = {
        "config": {
            "release.type": "OSS",
            "release.version": "streamwrite",
            "accepting.writes": ["http"],
            "line.proto.support.versions": [1, 2],
            "ilp.proto.transports": ["http"],
            "cairo.max.file.name.length": 127,
        },
        "preferences.version": 0,
        "preferences": {},
    }
    return web.json_response(body)


async def _health(request: web.Request, state: HttpState) -> web.Response:
    return web.json_response({"name": "streamwrite", "status": "pass"})


async def _ready(request: web.Request, state: HttpState) -> web.Response:
    if state.ready and not state.draining:
        return web.json_response({"status": "ready"})
    status = "draining" if state.draining else "starting"
    return web.json_response({"status": status}, status=503)


async def _metrics(request: web.Request, state: HttpState) -> web.Response:
    body = generate_latest(state.service.metrics.registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def _not_found(request: web.Request, state: HttpState) -> web.Response:
    raise NotFoundError(f"No endpoint {request.method} {request.path}.")


def make_app(state: HttpState) -> web.Application:
    """The aiohttp application (run it with ``AppRunner(app, auto_decompress=False)``: the
    write handler inflates gzip itself, within the limits)."""
    app = web.Application(client_max_size=1 << 62)
    write = _handler(state, "write", _write)
    app.router.add_post("/write", write)
    app.router.add_post("/api/v2/write", write)
    ping = _handler(state, "ping", _ping)
    app.router.add_get("/ping", ping)  # aiohttp answers HEAD through the GET route
    app.router.add_get("/settings", _handler(state, "settings", _settings))
    app.router.add_get("/health", _handler(state, "health", _health))
    app.router.add_get("/ready", _handler(state, "ready", _ready))
    app.router.add_get("/metrics", _handler(state, "metrics", _metrics))
    app.router.add_route("*", "/{tail:.*}", _handler(state, "other", _not_found))
    return app
