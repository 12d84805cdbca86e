"""Flight SQL bulk ingest with the real ADBC driver (``adbc_driver_flightsql``)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import adbc_driver_flightsql.dbapi as fsql
import adbc_driver_manager
import pyarrow as pa
import pyarrow.flight as fl
import pytest

from streamwrite.daemon.flight_wire import encode_any
from tests.daemon._flight_support import (
    NARROW_TOKEN,
    TOKEN,
    FlightDaemon,
    bearer,
    make_batch,
)


@contextmanager
def adbc_cursor(daemon: FlightDaemon, token: str = TOKEN) -> Iterator[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # connecting warns of nothing (autocommit: no transactions)
        conn = fsql.connect(
            daemon.location,
            db_kwargs={"adbc.flight.sql.authorization_header": f"Bearer {token}"},
            autocommit=True,
        )
    try:
        with conn.cursor() as cursor:
            yield cursor
    finally:
        conn.close()


def rows(start: int, num_rows: int) -> pa.Table:
    return pa.Table.from_batches([make_batch(start, num_rows)])


def test_adbc_ingest_modes(flight_daemon: FlightDaemon) -> None:
    with adbc_cursor(flight_daemon) as cursor:
        assert cursor.adbc_ingest("trades", rows(0, 30), mode="create") == 30
        assert cursor.adbc_ingest("trades", rows(30, 20), mode="append") == 20
        assert cursor.adbc_ingest("trades", rows(50, 10), mode="create_append") == 10
        assert cursor.adbc_ingest("fresh", rows(0, 5), mode="create_append") == 5
    got = flight_daemon.read_back("trades")
    assert sorted(got.column("price").to_pylist()) == [i * 0.5 for i in range(60)]
    assert flight_daemon.read_back("fresh").num_rows == 5


def test_adbc_ingest_many_batches_is_one_write(flight_daemon: FlightDaemon) -> None:
    data = pa.Table.from_batches([make_batch(i * 10, 10) for i in range(8)])
    with adbc_cursor(flight_daemon) as cursor:
        assert cursor.adbc_ingest("trades", data, mode="create") == 80
    assert flight_daemon.read_back("trades").num_rows == 80


@pytest.mark.parametrize(
    ("mode", "setup", "message"),
    [
        ("append", False, "does not exist"),
        ("create", True, "already exists"),
        ("replace", True, "'replace' is not supported"),
    ],
)
def test_adbc_ingest_refusals(
    flight_daemon: FlightDaemon, mode: str, setup: bool, message: str
) -> None:
    with adbc_cursor(flight_daemon) as cursor:
        if setup:
            cursor.adbc_ingest("trades", rows(0, 5), mode="create")
        with pytest.raises(adbc_driver_manager.Error, match=message):
            cursor.adbc_ingest("trades", rows(5, 5), mode=mode)
    assert flight_daemon.exists("trades") is setup
    if setup:
        assert flight_daemon.read_back("trades").num_rows == 5


def test_adbc_ingest_rights(flight_daemon: FlightDaemon) -> None:
    with adbc_cursor(flight_daemon, NARROW_TOKEN) as cursor:
        with pytest.raises(adbc_driver_manager.Error, match="no 'create' right"):
            cursor.adbc_ingest("sensor_1", rows(0, 5), mode="create_append")
        with pytest.raises(adbc_driver_manager.Error, match="no 'write' right"):
            cursor.adbc_ingest("trades", rows(0, 5), mode="create_append")
    assert not flight_daemon.exists("sensor_1") and not flight_daemon.exists("trades")


def test_adbc_ingest_over_the_limit_writes_nothing(flight_daemon: FlightDaemon) -> None:
    flight_daemon.server.max_ingest_size = 4096
    with (
        adbc_cursor(flight_daemon) as cursor,
        pytest.raises(adbc_driver_manager.Error, match="over the limit of 4096 bytes"),
    ):
        cursor.adbc_ingest("trades", rows(0, 2000), mode="create")
    assert not flight_daemon.exists("trades")


def test_other_flight_sql_commands_refused(flight_daemon: FlightDaemon) -> None:
    client = flight_daemon.client()
    query = encode_any("type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery", b"")
    with pytest.raises(fl.FlightServerError, match="'CommandStatementQuery' is not supported"):
        client.get_flight_info(fl.FlightDescriptor.for_command(query), bearer(TOKEN))
    with pytest.raises(fl.FlightServerError, match="'CommandStatementQuery' is not supported"):
        writer, _ = client.do_put(
            fl.FlightDescriptor.for_command(query), rows(0, 1).schema, bearer(TOKEN)
        )
        writer.write_table(rows(0, 1))
        writer.close()
    with pytest.raises(fl.FlightServerError, match="not a protobuf Any"):
        client.get_flight_info(fl.FlightDescriptor.for_command(b"\x0a\x09x"), bearer(TOKEN))
