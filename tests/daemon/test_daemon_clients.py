"""The real clients against a real ``streamwrite serve``: the ``questdb`` Sender over HTTP
(protocol auto -> 2 and forced 1; token and Basic auth; a rejected request surfacing as the
client's error with code and line) and ``influxdb-client`` (synchronous and batching writes,
Token auth, gzip, ``ping()``). Rows are read back by pyarrow and DuckDB."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import streamwrite
from tests.daemon._support import TOKEN, Daemon

questdb = pytest.importorskip("questdb")
influxdb_client = pytest.importorskip("influxdb_client")

BASE_NS = 1_700_000_000_000_000_000


def read(daemon: Daemon, name: str) -> pa.Table:
    return streamwrite.read_table(daemon.config.parent / "data" / name)


def duckdb_count(path: Path) -> int:
    """Rows of a table directory counted by DuckDB, in a subprocess (a bad file must not
    abort the test run)."""
    script = (
        "import duckdb, sys; "
        "print(duckdb.sql(f\"select count(*) from read_parquet('{sys.argv[1]}/**/*.parquet')\")"
        ".fetchall()[0][0])"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True
    )
    return int(out.stdout)


@pytest.mark.parametrize("protocol", ["auto", "1"])
def test_questdb_sender(daemon_factory, protocol: str) -> None:  # type: ignore[no-untyped-def]
    from questdb import Sender, TimestampNanos

    daemon = daemon_factory()
    conf = f"http::addr={daemon.http_addr};token={TOKEN};"
    if protocol != "auto":
        conf += f"protocol_version={protocol};"
    with Sender.from_conf(conf) as sender:
        assert sender.protocol_version == (2 if protocol == "auto" else 1)
        for i in range(5000):
            sender.row(
                "trades",
                symbols={"sym": f"S{i % 7}", "side": "buy" if i % 2 else "sell"},
                columns={"price": i / 4, "qty": i, "note": f"n{i}", "ok": i % 3 == 0},
                at=TimestampNanos(BASE_NS + i * 1_000_000),
            )
            if i % 1000 == 999:
                sender.flush()
    table = read(daemon, "trades").sort_by("qty")
    assert table.num_rows == 5000
    assert table.column("qty").to_pylist() == list(range(5000))
    assert table.column("price").to_pylist() == [i / 4 for i in range(5000)]
    assert table.column("sym").to_pylist()[:8] == [f"S{i % 7}" for i in range(8)]
    assert duckdb_count(daemon.config.parent / "data" / "trades") == 5000


def test_questdb_basic_auth_and_error(daemon_factory) -> None:  # type: ignore[no-untyped-def]
    from questdb import Sender, TimestampNanos

    daemon = daemon_factory()
    conf = f"http::addr={daemon.http_addr};username=ingest;password={TOKEN};"
    with Sender.from_conf(conf) as sender:
        sender.row("stat", columns={"avg": 1.5}, at=TimestampNanos(BASE_NS))
        sender.flush()
        sender.row("stat", columns={"avg": 2.5}, at=TimestampNanos(BASE_NS + 1))
        sender.row("stat", columns={"avg": "text"}, at=TimestampNanos(BASE_NS + 2))
        with pytest.raises(Exception) as caught:
            sender.flush()
    message = str(caught.value)
    assert "code: invalid" in message and "line: 2" in message, message
    assert read(daemon, "stat").num_rows == 1
    with pytest.raises(Exception, match="401"):
        bad = f"http::addr={daemon.http_addr};username=ingest;password=wrong;"
        with Sender.from_conf(bad) as sender:
            sender.row("stat", columns={"avg": 1.0}, at=TimestampNanos(BASE_NS))
            sender.flush()


def test_influxdb_client(daemon_factory) -> None:  # type: ignore[no-untyped-def]
    from influxdb_client import InfluxDBClient, Point, WritePrecision
    from influxdb_client.client.write_api import SYNCHRONOUS, WriteOptions

    daemon = daemon_factory()
    with InfluxDBClient(url=daemon.http, token=TOKEN, org="o", enable_gzip=True) as client:
        assert client.ping()
        api = client.write_api(write_options=SYNCHRONOUS)
        points = [
            Point("weather").tag("site", f"s{i % 3}").field("temp", 20.0 + i).field("n", i)
            .time(BASE_NS + i, WritePrecision.NS)
            for i in range(300)
        ]  # fmt: skip
        api.write(bucket="b", record=points)
        api.write(
            bucket="b",
            record="weather,site=s9 temp=1.0,n=1000i 1700000001",
            write_precision=WritePrecision.S,
        )
        batching = client.write_api(write_options=WriteOptions(batch_size=100, flush_interval=100))
        for i in range(250):
            batching.write(
                bucket="b", record=f"weather,site=b temp=2.0,n={2000 + i}i {BASE_NS + 10_000 + i}"
            )
        batching.close()
    table = read(daemon, "weather")
    assert table.num_rows == 551
    assert sorted(table.column("n").to_pylist()) == [*range(300), 1000, *range(2000, 2250)]
    second = next(r for r in table.to_pylist() if r["n"] == 1000)
    assert second["timestamp"].timestamp() == 1700000001
    with InfluxDBClient(url=daemon.http, token="wrong", org="o") as client:
        from influxdb_client.rest import ApiException

        with pytest.raises(ApiException) as caught:
            client.write_api(write_options=SYNCHRONOUS).write(bucket="b", record="weather v=1")
        assert caught.value.status == 401
