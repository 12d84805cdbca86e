"""``serve(config)``: the daemon's life, from start to a drained exit.

::

    start      open the declared tables (recovering each: a SIGKILLed daemon's tables come
               back with every acknowledged row), start the encode pool, bind HTTP and
               Flight; /ready answers 200, and the log says "ready" with the bound addresses
    serve      until SIGTERM or SIGINT
    drain      /ready answers 503 at once and new writes 503 (the clients retry them);
               the listening sockets close; requests in flight finish (their commits
               complete and they are answered); then every table commits what it buffered
               and closes; exit status 0, within ``DRAIN_SECONDS``

After a SIGKILL nothing acknowledged is lost: a write is answered only once its table commit
is published, and opening a table rolls back anything past its last ``_txn``.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import ssl
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path

import anyio
from aiohttp import web

import streamwrite
from streamwrite.daemon.auth import Authenticator
from streamwrite.daemon.config import DaemonConfig, parse_listen
from streamwrite.daemon.flight import FlightIngestServer, open_flight_server
from streamwrite.daemon.http import HttpState, make_app
from streamwrite.daemon.logs import configure_logging
from streamwrite.daemon.metrics import Metrics
from streamwrite.daemon.parsing import Parsers
from streamwrite.daemon.service import IngestService
from streamwrite.errors import ConfigError

__all__ = ["DRAIN_SECONDS", "run", "serve"]

logger = logging.getLogger("streamwrite.daemon")

DRAIN_SECONDS = 20.0
"""How long HTTP requests in flight may take to finish after SIGTERM (Kubernetes waits 30 s)."""
FLIGHT_STOP_SECONDS = 5.0
"""How long Flight calls may take to end after the HTTP drain (an idle open stream would hold
the server forever: everything it was acknowledged is durable, so it is cut)."""


def _ssl_context(section: dict[str, str], where: str) -> ssl.SSLContext | None:
    if not section["tls_cert"] and not section["tls_key"]:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(section["tls_cert"], section["tls_key"])
    logger.info("tls on", extra={"listener": where})
    return context


LOCK_FILE = ".streamwrite-daemon.lock"
"""In the data root: held (``flock``) by the daemon serving it (no table name starts with '.')."""


@contextmanager
def data_root_lock(data_root: Path) -> Iterator[None]:
    """Hold the data root for this process.

    Raises:
        ConfigError: another daemon serves it (one daemon per data root: it is the single
            writer of every table there).
    """
    data_root.mkdir(parents=True, exist_ok=True)
    fd = os.open(data_root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(
                f"Another daemon serves the data root {str(data_root)!r}: one daemon per data "
                "root (it is the single writer of every table there)."
            ) from None
        yield
    finally:
        os.close(fd)


async def serve(config: DaemonConfig) -> None:
    """Run the daemon until SIGTERM/SIGINT, then drain and return (see the module docstring).

    Raises:
        ConfigError: a bad listen address or TLS file; StreamwriteError: a declared table
            does not open.
    """
    authenticator = Authenticator(config.tokens)
    if authenticator.open:
        logger.warning("no tokens configured: every request may write, create and read")
    metrics = Metrics()
    async with AsyncExitStack() as stack:
        stack.enter_context(data_root_lock(config.data_root))
        executor = None
        if config.engine["workers"]:
            executor = await stack.enter_async_context(
                await streamwrite.ProcessPool.open(config.engine["workers"])
            )
        service = await stack.enter_async_context(IngestService(config, metrics, executor))
        parsers = Parsers(config.engine["parse_workers"])
        stack.callback(parsers.close)
        await anyio.to_thread.run_sync(parsers.warm_up)
        state = HttpState(service, authenticator, parsers=parsers)
        addresses: dict[str, str] = {}
        flight: FlightIngestServer | None = None
        if config.flight["listen"]:
            host, port = parse_listen(config.flight["listen"], "flight.listen")
            section = config.flight
            tls = None
            if section["tls_cert"] or section["tls_key"]:
                tls = [
                    (Path(section["tls_cert"]).read_bytes(), Path(section["tls_key"]).read_bytes())
                ]
            flight = await stack.enter_async_context(
                open_flight_server(
                    f"{'grpc+tls' if tls else 'grpc'}://{host}:{port}",
                    authenticator=authenticator,
                    service=service,
                    tls_certificates=tls,
                    shutdown_timeout_seconds=FLIGHT_STOP_SECONDS,
                )
            )
            addresses["flight"] = f"{host}:{flight.port}"
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            runner = web.AppRunner(
                make_app(state),
                auto_decompress=False,
                access_log=None,
                handle_signals=False,
                shutdown_timeout=DRAIN_SECONDS,
            )
            await runner.setup()
            try:
                if config.http["listen"]:
                    host, port = parse_listen(config.http["listen"], "http.listen")
                    site = web.TCPSite(
                        runner, host, port, ssl_context=_ssl_context(config.http, "http")
                    )
                    await site.start()
                    server = site._server
                    sockets = getattr(server, "sockets", None) or []
                    bound = sockets[0].getsockname() if sockets else (host, port)
                    addresses["http"] = f"{bound[0]}:{bound[1]}"
                state.ready = True
                logger.info(
                    "ready",
                    extra={"addresses": addresses, "data_root": str(config.data_root),
                           "config_sources": list(config.sources)},
                )  # fmt: skip
                async for signum in signals:
                    logger.info("draining", extra={"signal": signal.Signals(signum).name})
                    break
            finally:
                state.draining = True
                if flight is not None:
                    flight.drain()
                # Closes the listening sockets, then waits for the handlers in flight.
                await runner.cleanup()
    logger.info("stopped")


def run(config: DaemonConfig) -> None:
    """Configure JSON logging and run :func:`serve` on an asyncio event loop.

    Raises:
        StreamwriteError, OSError: what stopped the daemon from starting (a port in use, a
            TLS file missing, a declared table that does not open), unwrapped from the task
            groups it passed through.
    """
    configure_logging(config.log["level"])
    try:
        anyio.run(serve, config, backend="asyncio")
    except BaseExceptionGroup as group:
        error: BaseException = group
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        raise error from None
