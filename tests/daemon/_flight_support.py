"""A real Flight front end over a real IngestService, in this process, on a free port.

The service's event loop runs in a thread (an anyio blocking portal); the server is opened by
:func:`streamwrite.daemon.flight.open_flight_server` in that loop, exactly as the daemon does,
and clients are real ``pyarrow.flight`` / ADBC clients on localhost.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.flight as fl
import pyarrow.parquet as pq
from anyio.from_thread import start_blocking_portal

import streamwrite
from streamwrite.daemon.auth import Authenticator
from streamwrite.daemon.config import load_config
from streamwrite.daemon.flight import open_flight_server
from streamwrite.daemon.service import IngestService
from tests.daemon._support import NARROW_TOKEN, READ_TOKEN, TOKEN
from tests.daemon._support import write_config as write_http_config

__all__ = ["NARROW_TOKEN", "READ_TOKEN", "TOKEN"]


def write_config(path: Path, data_root: Path, extra: str = "") -> Path:
    """The HTTP tests' config, with retry keys off: Flight writes use batch ids."""
    return write_http_config(path, data_root, extra + "\n[ilp]\ndedup_window_seconds = 0\n")


def bearer(token: str) -> fl.FlightCallOptions:
    return fl.FlightCallOptions(headers=[(b"authorization", f"Bearer {token}".encode())])


@dataclass
class FlightDaemon:
    location: str
    data_root: Path
    port: int
    server: Any
    service: IngestService
    tls_root: bytes | None = None

    def client(self) -> fl.FlightClient:
        if self.tls_root is not None:
            return fl.FlightClient(self.location, tls_root_certs=self.tls_root)
        return fl.FlightClient(self.location)

    def read_back(self, table: str) -> pa.Table:
        """The table's newest version, each segment read by pyarrow itself."""
        snapshot = streamwrite.read_snapshot(self.data_root / table)
        parts = [pq.read_table(path) for path in snapshot.data_files()]
        return pa.concat_tables(parts, promote_options="default")

    def exists(self, table: str) -> bool:
        return (self.data_root / table / "_txn").exists()


def start_flight_daemon(
    stack: ExitStack,
    tmp_path: Path,
    extra: str = "",
    *,
    tls: tuple[bytes, bytes] | None = None,
    **limits: int,
) -> FlightDaemon:
    """Start the service and its Flight server; ``stack`` stops them (server first)."""
    config = load_config(write_config(tmp_path / "daemon.toml", tmp_path / "data", extra))
    portal = stack.enter_context(start_blocking_portal())
    service = stack.enter_context(portal.wrap_async_context_manager(IngestService(config)))
    scheme = "grpc+tls" if tls else "grpc"
    server = stack.enter_context(
        portal.wrap_async_context_manager(
            open_flight_server(
                f"{scheme}://127.0.0.1:0", authenticator=Authenticator(config.tokens),
                service=service, tls_certificates=[tls] if tls else None, **limits,
            )
        )
    )  # fmt: skip
    host = "localhost" if tls else "127.0.0.1"
    return FlightDaemon(
        f"{scheme}://{host}:{server.port}",
        config.data_root,
        server.port,
        server,
        service,
        tls[0] if tls else None,
    )


def serve_flight(tmp_path: Path) -> Iterator[FlightDaemon]:
    """The body of each test module's ``flight_daemon`` fixture."""
    with ExitStack() as stack:
        yield start_flight_daemon(stack, tmp_path)


SCHEMA = pa.schema(
    [
        pa.field("timestamp", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("symbol", pa.string()),
        pa.field("price", pa.float64()),
    ]
)


def make_batch(
    start: int, num_rows: int, schema: pa.Schema = SCHEMA, *, step_us: int = 3_600_000_000
) -> pa.RecordBatch:
    """Rows start .. start + num_rows, ``step_us`` apart (by default one per hour, so that
    they span days: partitions)."""
    ids = list(range(start, start + num_rows))
    return pa.record_batch(
        [
            pa.array([i * step_us for i in ids], pa.timestamp("us", tz="UTC")),
            pa.array([f"s{i % 7}" for i in ids]),
            pa.array([i * 0.5 for i in ids]),
        ],
        schema=schema,
    )


def meta(app_id: str, batch_id: int) -> pa.Buffer:
    return pa.py_buffer(json.dumps({"app_id": app_id, "batch_id": batch_id}).encode())


def put(
    daemon: FlightDaemon,
    table: str,
    batches: list[tuple[pa.RecordBatch, pa.Buffer | None]],
    token: str = TOKEN,
    schema: pa.Schema = SCHEMA,
) -> list[dict[str, object]]:
    """DoPut ``batches``, reading each ack right after its batch (the client waits)."""
    client = daemon.client()
    writer, reader = client.do_put(fl.FlightDescriptor.for_path(table), schema, bearer(token))
    acks = []
    try:
        for batch, metadata in batches:
            if metadata is None:
                writer.write_batch(batch)
            else:
                writer.write_with_metadata(batch, metadata)
            buf = reader.read()
            if buf is None:  # the server ended the call: close() raises its error
                break
            acks.append(json.loads(buf.to_pybytes()))
        writer.done_writing()
    finally:
        writer.close()
        client.close()
    return acks
