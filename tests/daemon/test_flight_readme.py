"""The README's Flight snippets, run as written against a real server (location and token
substituted)."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator

import pyarrow as pa

from tests.daemon._flight_support import TOKEN, FlightDaemon


def readme_do_put(location: str, token: str) -> list[dict[str, object]]:
    from datetime import UTC, datetime

    import pyarrow.flight as fl

    client = fl.FlightClient(location)  # grpc+tls://host:8815 with tls_root_certs=pem
    auth = fl.FlightCallOptions(headers=[(b"authorization", f"Bearer {token}".encode())])
    # or: auth = fl.FlightCallOptions(headers=[client.authenticate_basic_token("ingest", token)])

    def batches() -> Iterator[pa.RecordBatch]:  # 10k-100k rows each
        for day in range(1, 4):
            yield pa.record_batch(
                {
                    "timestamp": pa.array(
                        [
                            datetime(2026, 11, day, 9, 30, tzinfo=UTC),
                            datetime(2026, 11, day, 16, 0, tzinfo=UTC),
                        ],
                        pa.timestamp("us", tz="UTC"),
                    ),
                    "symbol": ["ETH-USD", "BTC-USD"],
                    "price": [2615.5, 39269.9],
                }
            )

    schema = next(batches()).schema
    writer, acks = client.do_put(fl.FlightDescriptor.for_path("trades"), schema, auth)
    window, received = 16, []  # up to 16 batches in flight: their commits pipeline and group
    for batch_id, batch in enumerate(batches()):
        ids = json.dumps({"app_id": "loader-1", "batch_id": batch_id}).encode()
        writer.write_with_metadata(batch, pa.py_buffer(ids))
        if batch_id >= window:
            received.append(acks.read())  # None: the server ended the call (close() raises)
    writer.done_writing()
    while (ack := acks.read()) is not None:
        received.append(ack)
    writer.close()
    return [json.loads(ack.to_pybytes()) for ack in received]


def readme_do_get(location: str, token: str) -> pa.Table:
    import pyarrow.flight as fl

    client = fl.FlightClient(location)
    auth = fl.FlightCallOptions(headers=[(b"authorization", f"Bearer {token}".encode())])
    ticket = {
        "table": "trades",
        "columns": ["symbol", "price"],
        "filter": {"since": "2026-11-02T00:00:00Z", "until": "2026-11-03T00:00:00Z"},
    }
    return client.do_get(fl.Ticket(json.dumps(ticket).encode()), auth).read_all()


def readme_adbc(location: str, token: str, table: pa.Table) -> int:
    import adbc_driver_flightsql.dbapi as flightsql

    with (
        flightsql.connect(
            location,
            db_kwargs={"adbc.flight.sql.authorization_header": f"Bearer {token}"},
            autocommit=True,  # each ingest commits by itself (no transactions)
        ) as conn,
        conn.cursor() as cursor,
    ):
        rows: int = cursor.adbc_ingest("trades", table, mode="create_append")
    return rows


def test_readme_snippets(flight_daemon: FlightDaemon) -> None:
    acks = readme_do_put(flight_daemon.location, TOKEN)
    assert [(a["batch_id"], a["rows"], a["skipped"]) for a in acks] == [
        (0, 2, False), (1, 2, False), (2, 2, False),
    ]  # fmt: skip
    got = readme_do_get(flight_daemon.location, TOKEN)
    assert got.to_pylist() == [
        {"symbol": "ETH-USD", "price": 2615.5},
        {"symbol": "BTC-USD", "price": 39269.9},
    ]
    more = flight_daemon.read_back("trades").slice(0, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert readme_adbc(flight_daemon.location, TOKEN, more) == 2
    assert flight_daemon.read_back("trades").num_rows == 8
