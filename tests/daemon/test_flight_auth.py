"""Flight auth: bearer header per call, the basic-token handshake, TLS with a self-signed cert."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

import pyarrow.flight as fl
import pytest

from streamwrite.daemon.flight_wire import encode_ticket
from tests.daemon._flight_support import (
    SCHEMA,
    TOKEN,
    FlightDaemon,
    bearer,
    make_batch,
    put,
    start_flight_daemon,
)
from tests.daemon._support import self_signed


def test_basic_token_handshake(flight_daemon: FlightDaemon) -> None:
    client = flight_daemon.client()
    header = client.authenticate_basic_token("ingest", TOKEN)
    assert header == (b"authorization", f"Bearer {TOKEN}".encode())
    options = fl.FlightCallOptions(headers=[header])
    writer, reader = client.do_put(fl.FlightDescriptor.for_path("trades"), SCHEMA, options)
    writer.write_batch(make_batch(0, 4))
    ack = reader.read()
    writer.done_writing()
    writer.close()
    assert ack is not None and json.loads(ack.to_pybytes())["rows"] == 4


@pytest.mark.parametrize(("name", "token"), [("ingest", "wrong"), ("reader", TOKEN)])
def test_handshake_refused(flight_daemon: FlightDaemon, name: str, token: str) -> None:
    """An unknown token, or a known token under another token's name."""
    client = flight_daemon.client()
    with pytest.raises(fl.FlightUnauthenticatedError, match="Unknown credentials"):
        client.authenticate_basic_token(name, token)


def test_tls(tmp_path: Path) -> None:
    with ExitStack() as stack:
        daemon = start_flight_daemon(stack, tmp_path, tls=self_signed("localhost"))
        assert daemon.location.startswith("grpc+tls://")
        acks = put(daemon, "trades", [(make_batch(0, 6), None)])
        assert acks[0]["rows"] == 6
        got = daemon.client().do_get(fl.Ticket(encode_ticket("trades")), bearer(TOKEN))
        assert got.read_all().num_rows == 6
        plain = fl.FlightClient(f"grpc://localhost:{daemon.port}")  # no TLS: no answer
        with pytest.raises(fl.FlightError):
            plain.get_flight_info(
                fl.FlightDescriptor.for_path("trades"), fl.FlightCallOptions(timeout=5)
            )
        untrusted = fl.FlightClient(daemon.location, tls_root_certs=self_signed("localhost")[0])
        with pytest.raises(fl.FlightError):
            untrusted.get_flight_info(
                fl.FlightDescriptor.for_path("trades"), fl.FlightCallOptions(timeout=5)
            )
