"""DoGet of a table snapshot with projection and time range; GetFlightInfo / GetSchema."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as fl
import pytest

import streamwrite
from streamwrite.daemon.flight import filter_time_range
from streamwrite.daemon.flight_wire import encode_ticket
from tests.daemon._flight_support import (
    NARROW_TOKEN,
    READ_TOKEN,
    SCHEMA,
    TOKEN,
    FlightDaemon,
    bearer,
    make_batch,
    put,
)

HOUR_NS = 3_600 * 10**9


def get(daemon: FlightDaemon, ticket: bytes, token: str = READ_TOKEN) -> pa.Table:
    client = daemon.client()
    try:
        return client.do_get(fl.Ticket(ticket), bearer(token)).read_all()
    finally:
        client.close()


@pytest.fixture
def trades(flight_daemon: FlightDaemon) -> pa.Table:
    batches = [make_batch(i * 24, 24) for i in range(3)]  # 72 hourly rows: three days
    put(flight_daemon, "trades", [(b, None) for b in batches])
    return pa.Table.from_batches(batches)


def test_do_get_everything(flight_daemon: FlightDaemon, trades: pa.Table) -> None:
    got = get(flight_daemon, encode_ticket("trades")).sort_by("timestamp")
    assert got.equals(trades.cast(got.schema))
    assert got.equals(flight_daemon.read_back("trades").sort_by("timestamp").cast(got.schema))


def test_do_get_projection_and_time_range(flight_daemon: FlightDaemon, trades: pa.Table) -> None:
    ticket = encode_ticket("trades", ["price"], since="1970-01-01T10:00:00Z", until=30 * HOUR_NS)
    got = get(flight_daemon, ticket)
    assert got.column_names == ["price"]
    assert sorted(got.column("price").to_pylist()) == [i * 0.5 for i in range(10, 30)]


def test_do_get_open_ended_ranges(flight_daemon: FlightDaemon, trades: pa.Table) -> None:
    since = get(flight_daemon, encode_ticket("trades", since=70 * HOUR_NS))
    assert sorted(since.column("price").to_pylist()) == [35.0, 35.5]
    until = get(flight_daemon, encode_ticket("trades", ["symbol", "timestamp"], until=HOUR_NS))
    assert until.column_names == ["symbol", "timestamp"] and until.num_rows == 1


def test_do_get_refusals(flight_daemon: FlightDaemon, trades: pa.Table) -> None:
    with pytest.raises(fl.FlightUnauthorizedError, match="no 'read' right"):
        get(flight_daemon, encode_ticket("trades"), token=NARROW_TOKEN)
    with pytest.raises(fl.FlightServerError, match="does not exist"):
        get(flight_daemon, encode_ticket("nothing"))
    with pytest.raises(fl.FlightServerError, match="Invalid table name"):
        get(flight_daemon, encode_ticket("../trades"))
    with pytest.raises(fl.FlightServerError, match="ticket"):
        get(flight_daemon, b'{"table": "trades", "filter": {"since": "soon"}}')
    with pytest.raises(fl.FlightServerError, match="nope"):
        get(flight_daemon, encode_ticket("trades", ["nope"]))


def test_flight_info_and_schema(flight_daemon: FlightDaemon, trades: pa.Table) -> None:
    client = flight_daemon.client()
    descriptor = fl.FlightDescriptor.for_path("trades")
    info = client.get_flight_info(descriptor, bearer(READ_TOKEN))
    assert info.schema.names == SCHEMA.names
    got = client.do_get(info.endpoints[0].ticket, bearer(READ_TOKEN)).read_all()
    assert got.num_rows == trades.num_rows
    assert client.get_schema(descriptor, bearer(TOKEN)).schema.names == SCHEMA.names
    with pytest.raises(fl.FlightServerError, match="does not exist"):
        client.get_flight_info(fl.FlightDescriptor.for_path("nothing"), bearer(TOKEN))


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_filter_time_range_matches_a_reference(unit: str) -> None:
    """Bounds in ns against values in each unit: the same rows as comparing exact ns values."""
    per = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[unit]
    values = pa.array([-5, -1, 0, 1, 2, 3, 7, None, 1000], pa.int64())
    data = pa.table({"ts": values.cast(pa.timestamp(unit, tz="UTC")), "i": range(9)})
    for since in (None, -5 * per, -per + 1, 0, per - 1, per, 3 * per + 1):
        for until in (None, 0, 1, per, 2 * per + 1, 7 * per):
            got = filter_time_range(data, "ts", since, until).column("i").to_pylist()
            want = [
                i for i, v in enumerate(values.to_pylist())
                if (since is None and until is None)  # no filter: every row, nulls too
                or (v is not None and (since is None or v * per >= since)
                and (until is None or v * per < until))
            ]  # fmt: skip
            assert got == want, (since, until)
    assert filter_time_range(data, "ts", None, None) is data
    assert pc.sum(data.column("i")).as_py() == 36


def test_designated_timestamp_from_schema_metadata(flight_daemon: FlightDaemon) -> None:
    """A DoPut that creates a table names its designated timestamp in the schema metadata;
    the table is partitioned by day on it and DoGet filters on it."""
    schema = pa.schema(
        [pa.field("ts", pa.timestamp("ns", tz="UTC")), pa.field("v", pa.int64())],
        metadata={"streamwrite.timestamp": "ts"},
    )
    hours = list(range(0, 72, 6))
    batch = pa.record_batch(
        [pa.array([h * HOUR_NS for h in hours], schema.field("ts").type), pa.array(hours)],
        schema=schema,
    )
    put(flight_daemon, "metrics", [(batch, None)], schema=schema)
    partitions = {name.split("/")[0] for name, _ in _snapshot_files(flight_daemon, "metrics")}
    assert len(partitions) == 3  # three days
    got = get(
        flight_daemon, encode_ticket("metrics", ["v"], since=24 * HOUR_NS, until="1970-01-03")
    )
    assert sorted(got.column("v").to_pylist()) == [24, 30, 36, 42]


def test_filter_without_designated_timestamp(flight_daemon: FlightDaemon) -> None:
    schema = pa.schema([pa.field("v", pa.int64())])
    put(flight_daemon, "plain", [(pa.record_batch([pa.array([1, 2])], schema=schema), None)],
        schema=schema)  # fmt: skip
    assert get(flight_daemon, encode_ticket("plain")).num_rows == 2
    with pytest.raises(fl.FlightServerError, match="no designated timestamp"):
        get(flight_daemon, encode_ticket("plain", since=0))


def _snapshot_files(daemon: FlightDaemon, table: str) -> tuple[tuple[str, int], ...]:
    return streamwrite.read_snapshot(daemon.data_root / table).files
