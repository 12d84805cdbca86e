"""Bad Flight inputs: the right error, nothing written, the server still serving."""

from __future__ import annotations

import json
import time
from contextlib import ExitStack
from pathlib import Path

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from streamwrite.daemon.errors import (
    BadRequestError,
    DaemonInternalError,
    ForbiddenError,
    NotFoundError,
    OverloadedError,
    TooLargeError,
    UnauthorizedError,
)
from streamwrite.daemon.flight_auth import flight_error
from streamwrite.errors import SchemaError, StaleBatchError, StateError
from tests.daemon._flight_support import (
    NARROW_TOKEN,
    READ_TOKEN,
    SCHEMA,
    TOKEN,
    FlightDaemon,
    bearer,
    make_batch,
    meta,
    put,
    start_flight_daemon,
)


def extra_info(exc: fl.FlightError) -> dict[str, object]:
    info: dict[str, object] = json.loads(exc.extra_info)
    return info


def assert_still_serving(daemon: FlightDaemon) -> None:
    acks = put(daemon, "probe", [(make_batch(0, 3), None)])
    assert acks[0]["rows"] == 3


@pytest.mark.parametrize(
    ("token", "table", "error", "message"),
    [
        ("wrong-token", "trades", fl.FlightUnauthenticatedError, "Unknown credentials"),
        (READ_TOKEN, "trades", fl.FlightUnauthorizedError, "no 'write' right on table 'trades'"),
        (NARROW_TOKEN, "trades", fl.FlightUnauthorizedError, "no 'write' right"),  # outside globs
        (NARROW_TOKEN, "sensor_1", fl.FlightUnauthorizedError, "no 'create' right"),
    ],
)
def test_credentials_and_rights(
    flight_daemon: FlightDaemon, token: str, table: str, error: type, message: str
) -> None:
    with pytest.raises(error, match=message) as caught:
        put(flight_daemon, table, [(make_batch(0, 5), meta("job", 0))], token=token)
    status = 401 if error is fl.FlightUnauthenticatedError else 403
    assert extra_info(caught.value)["status"] == status
    assert not flight_daemon.exists(table)
    assert_still_serving(flight_daemon)


def test_missing_token(flight_daemon: FlightDaemon) -> None:
    client = flight_daemon.client()
    with pytest.raises(fl.FlightUnauthenticatedError, match="Credentials are required"):
        writer, _ = client.do_put(fl.FlightDescriptor.for_path("trades"), SCHEMA)
        writer.write_batch(make_batch(0, 5))
        writer.close()
    with pytest.raises(fl.FlightUnauthenticatedError):
        client.get_flight_info(fl.FlightDescriptor.for_path("trades"))
    assert not flight_daemon.exists("trades")
    assert_still_serving(flight_daemon)


def test_narrow_token_writes_inside_its_globs(flight_daemon: FlightDaemon) -> None:
    put(flight_daemon, "sensor_1", [(make_batch(0, 5), None)])  # created by the full token
    acks = put(flight_daemon, "sensor_1", [(make_batch(5, 5), None)], token=NARROW_TOKEN)
    assert acks[0]["rows"] == 5
    assert flight_daemon.read_back("sensor_1").num_rows == 10


@pytest.mark.parametrize("path", [["../x"], ["a/b"], ["x\0"], [".hidden"], ["a", "b"], []])
def test_hostile_table_names(flight_daemon: FlightDaemon, path: list[str]) -> None:
    client = flight_daemon.client()
    descriptor = fl.FlightDescriptor.for_path(*path)
    with pytest.raises(fl.FlightServerError, match=r"table name|path") as caught:
        writer, _ = client.do_put(descriptor, SCHEMA, bearer(TOKEN))
        writer.write_batch(make_batch(0, 5))
        writer.close()
    assert extra_info(caught.value)["status"] == 400
    root = flight_daemon.data_root
    assert sorted(p.name for p in root.iterdir()) == [] if root.exists() else True
    assert not (root.parent / "x").exists()
    assert_still_serving(flight_daemon)


@pytest.mark.parametrize(
    "metadata",
    [b"nope", b'{"app_id": "a"}', b'{"app_id": "a", "batch_id": -3}', b'{"batch": 1}'],
)
def test_bad_app_metadata(flight_daemon: FlightDaemon, metadata: bytes) -> None:
    with pytest.raises(fl.FlightServerError, match="app_metadata"):
        put(flight_daemon, "trades", [(make_batch(0, 5), pa.py_buffer(metadata))])
    assert not flight_daemon.exists("trades")
    assert_still_serving(flight_daemon)


def test_bad_batch_after_good_ones_keeps_the_good_ones(flight_daemon: FlightDaemon) -> None:
    batches = [(make_batch(0, 5), meta("j", 0)), (make_batch(5, 5), meta("j", 1))]
    with pytest.raises(fl.FlightServerError, match="app_metadata"):
        put(flight_daemon, "trades", [*batches, (make_batch(10, 5), pa.py_buffer(b"{"))])
    assert flight_daemon.read_back("trades").num_rows == 10  # the acknowledged ones, once


def test_schema_conflict(flight_daemon: FlightDaemon) -> None:
    put(flight_daemon, "trades", [(make_batch(0, 5), None)])
    other = pa.schema([SCHEMA.field("timestamp"), pa.field("price", pa.string())])
    batch = pa.record_batch([make_batch(0, 2).column(0), pa.array(["1.5", "2.5"])], schema=other)
    with pytest.raises(fl.FlightServerError, match="'price' is string in the rows and double"):
        put(flight_daemon, "trades", [(batch, None)], schema=other)
    assert flight_daemon.read_back("trades").num_rows == 5
    assert_still_serving(flight_daemon)


def test_batch_over_the_limit(tmp_path: Path) -> None:
    with ExitStack() as stack:
        daemon = start_flight_daemon(stack, tmp_path, max_batch_size=4096)
        put(daemon, "trades", [(make_batch(0, 10), None)])
        with pytest.raises(fl.FlightServerError, match="over the limit of 4096 bytes") as caught:
            put(daemon, "trades", [(make_batch(10, 1000), None)])
        assert extra_info(caught.value)["status"] == 413
        assert daemon.read_back("trades").num_rows == 10
        assert_still_serving(daemon)


def test_unknown_action(flight_daemon: FlightDaemon) -> None:
    client = flight_daemon.client()
    with pytest.raises(fl.FlightServerError, match="Unknown Flight action 'drop'"):
        list(client.do_action(fl.Action("drop", b""), bearer(TOKEN)))


@pytest.mark.parametrize(
    ("error", "kind", "status"),
    [
        (BadRequestError("bad"), fl.FlightServerError, 400),
        (UnauthorizedError("who"), fl.FlightUnauthenticatedError, 401),
        (ForbiddenError("no"), fl.FlightUnauthorizedError, 403),
        (NotFoundError("gone"), fl.FlightServerError, 404),
        (TooLargeError("big"), fl.FlightServerError, 413),
        (OverloadedError("busy"), fl.FlightUnavailableError, 503),
        (DaemonInternalError("broke"), fl.FlightInternalError, 500),
        (SchemaError("types"), fl.FlightServerError, 400),
        (StaleBatchError("a", 1, 2), fl.FlightServerError, 400),
        (StateError("poisoned"), fl.FlightInternalError, 500),
    ],
)
def test_error_mapping(error: Exception, kind: type, status: int) -> None:
    mapped = flight_error(error)
    assert type(mapped) is kind
    assert str(error) in str(mapped)
    assert extra_info(mapped)["status"] == status


def test_unexpected_error_hides_its_message() -> None:
    mapped = flight_error(RuntimeError("secret row value 42"))
    assert type(mapped) is fl.FlightInternalError
    assert "secret" not in str(mapped) and extra_info(mapped)["status"] == 500


def test_a_stream_waits_for_its_acks_instead_of_overloading(tmp_path: Path) -> None:
    """A budget that holds ~3 batches and a table queue of 2: one pipelined stream of 40
    batches is throttled by its own pending writes, never refused with 503."""
    extra = "[limits]\nin_flight_bytes = 150000\ntable_queue = 2\n"
    with ExitStack() as stack:
        daemon = start_flight_daemon(stack, tmp_path, extra)
        client = daemon.client()
        writer, reader = client.do_put(fl.FlightDescriptor.for_path("t"), SCHEMA, bearer(TOKEN))
        for i in range(40):
            batch = make_batch(i * 2000, 2000, step_us=1000)  # one partition: quick commits
            writer.write_with_metadata(batch, meta("w", i))
        writer.done_writing()
        acks = []
        while (buf := reader.read()) is not None:
            acks.append(json.loads(buf.to_pybytes()))
        writer.close()
        assert [a["batch_id"] for a in acks] == list(range(40))
        assert daemon.read_back("t").num_rows == 80_000


def test_a_client_gone_mid_stream_releases_its_budget(flight_daemon: FlightDaemon) -> None:
    """Acks can no longer be sent, yet every accepted write is still awaited, so the
    service's in-flight budget and queue slots come back."""
    client = flight_daemon.client()
    writer, _ = client.do_put(fl.FlightDescriptor.for_path("t"), SCHEMA, bearer(TOKEN))
    for i in range(30):
        writer.write_with_metadata(make_batch(i * 100, 100, step_us=1000), meta("gone", i))
    client.close()  # no done_writing, no ack read
    service = flight_daemon.service
    deadline = time.monotonic() + 20
    while (service.num_pending or service.budget.used_bytes) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert service.num_pending == 0 and service.budget.used_bytes == 0
    assert_still_serving(flight_daemon)


def test_unexpected_error_is_logged_without_its_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    try:
        raise ValueError("row value 'secret-42'")
    except ValueError as exc:
        error = exc
    with caplog.at_level("ERROR", logger="streamwrite.daemon.flight"):
        flight_error(error)
    assert "ValueError" in caplog.text and "test_flight_errors.py" in caplog.text
    assert "secret" not in caplog.text
