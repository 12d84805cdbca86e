"""Arrow Flight DoPut against a real server and IngestService: acks once durable, exactly once."""

from __future__ import annotations

import json
import time
from contextlib import ExitStack
from pathlib import Path

import pyarrow as pa
import pyarrow.flight as fl
import pytest

import streamwrite
from tests.daemon._flight_support import (
    SCHEMA,
    TOKEN,
    FlightDaemon,
    bearer,
    make_batch,
    meta,
    put,
    start_flight_daemon,
)


def test_do_put_acks_each_batch_once_durable(flight_daemon: FlightDaemon) -> None:
    batches = [make_batch(i * 100, 100) for i in range(4)]
    acks = put(flight_daemon, "trades", [(b, meta("job", i)) for i, b in enumerate(batches)])
    assert [a["batch_id"] for a in acks] == [0, 1, 2, 3]
    assert [a["rows"] for a in acks] == [100] * 4
    assert not any(a["skipped"] for a in acks)
    versions = [a["table_version"] for a in acks]
    assert versions == sorted(versions)
    # each ack came after its commit was published: the rows are on disk now, read by pyarrow
    got = flight_daemon.read_back("trades").sort_by("timestamp")
    assert got.select(SCHEMA.names).equals(pa.Table.from_batches(batches).cast(got.schema))


def test_replayed_batch_id_writes_nothing(flight_daemon: FlightDaemon) -> None:
    first = [make_batch(i * 10, 10) for i in range(3)]
    put(flight_daemon, "trades", [(b, meta("job", i)) for i, b in enumerate(first)])
    # the client lost the last ack and reconnects: it resends batch 2, then goes on with 3
    acks = put(
        flight_daemon, "trades", [(first[2], meta("job", 2)), (make_batch(30, 10), meta("job", 3))]
    )
    assert acks[0]["skipped"] is True and acks[0]["rows"] == 0 and acks[0]["batch_id"] == 2
    assert acks[1]["skipped"] is False and acks[1]["rows"] == 10
    got = flight_daemon.read_back("trades")
    assert got.num_rows == 40
    assert sorted(got.column("price").to_pylist()) == [i * 0.5 for i in range(40)]


def test_stale_batch_id_refused(flight_daemon: FlightDaemon) -> None:
    put(flight_daemon, "trades", [(make_batch(i * 10, 10), meta("job", i)) for i in range(3)])
    with pytest.raises(fl.FlightServerError, match="below the last committed"):
        put(flight_daemon, "trades", [(make_batch(100, 10), meta("job", 0))])
    assert flight_daemon.read_back("trades").num_rows == 30


def test_many_batches_pipelined(flight_daemon: FlightDaemon) -> None:
    """The client writes every batch before reading any ack: acks come back in order."""
    num_batches = 100
    client = flight_daemon.client()
    writer, reader = client.do_put(fl.FlightDescriptor.for_path("ticks"), SCHEMA, bearer(TOKEN))
    for i in range(num_batches):
        writer.write_with_metadata(make_batch(i * 50, 50), meta("pipe", i))
    writer.done_writing()
    acks = []
    while (buf := reader.read()) is not None:
        acks.append(json.loads(buf.to_pybytes()))
    writer.close()
    assert [a["batch_id"] for a in acks] == list(range(num_batches))
    assert sum(a["rows"] for a in acks) == num_batches * 50
    versions = [a["table_version"] for a in acks]
    assert versions == sorted(versions)
    got = flight_daemon.read_back("ticks")
    assert got.num_rows == num_batches * 50
    assert sorted(got.column("price").to_pylist()) == [i * 0.5 for i in range(num_batches * 50)]


@pytest.mark.skipif(
    not hasattr(streamwrite.Table, "add_columns"), reason="needs Table.add_columns (evolve)"
)
def test_batches_without_ids_and_new_column(flight_daemon: FlightDaemon) -> None:
    put(flight_daemon, "trades", [(make_batch(0, 5), None)])
    wider = SCHEMA.append(pa.field("qty", pa.int64()))
    batch = pa.record_batch(
        [*make_batch(5, 5).columns, pa.array(range(5), pa.int64())], schema=wider
    )
    acks = put(flight_daemon, "trades", [(batch, None)], schema=wider)
    assert acks == [{"batch_id": None, "rows": 5, "table_version": acks[0]["table_version"],
                     "skipped": False}]  # fmt: skip
    got = flight_daemon.read_back("trades").sort_by("timestamp")
    assert got.column("qty").to_pylist() == [None] * 5 + list(range(5))


def test_drain_ends_streams_at_a_batch_boundary(flight_daemon: FlightDaemon) -> None:
    client = flight_daemon.client()
    writer, reader = client.do_put(fl.FlightDescriptor.for_path("trades"), SCHEMA, bearer(TOKEN))
    writer.write_with_metadata(make_batch(0, 5), meta("d", 0))
    assert json.loads(reader.read().to_pybytes())["rows"] == 5
    flight_daemon.server.drain()
    with pytest.raises(fl.FlightUnavailableError, match="shutting down"):
        writer.write_with_metadata(make_batch(5, 5), meta("d", 1))
        assert reader.read() is None
        writer.close()
    with pytest.raises(fl.FlightUnavailableError, match="shutting down"):
        client.get_flight_info(fl.FlightDescriptor.for_path("trades"), bearer(TOKEN))
    assert flight_daemon.read_back("trades").num_rows == 5  # the acknowledged batch only


def test_stop_is_bounded_by_an_idle_stream(tmp_path: Path) -> None:
    with ExitStack() as stack:
        daemon = start_flight_daemon(stack, tmp_path)
        client = daemon.client()
        writer, reader = client.do_put(fl.FlightDescriptor.for_path("t"), SCHEMA, bearer(TOKEN))
        writer.write_batch(make_batch(0, 5))
        assert reader.read() is not None
        started = time.monotonic()
        assert daemon.server.stop(timeout_seconds=0.5) is False  # the idle stream holds it
        assert time.monotonic() - started < 5
        with pytest.raises(fl.FlightUnavailableError):  # its next batch ends it
            writer.write_batch(make_batch(5, 5))
            reader.read()
            writer.close()
        assert daemon.server.stop(timeout_seconds=10) is True
        assert daemon.read_back("t").num_rows == 5
