"""Write to ``streamwrite serve`` with every client it speaks to, then read the tables back.

Starts a daemon on a temporary data root (or uses yours: ``--http HOST:PORT --flight
HOST:PORT --token T``), then writes:

1. plain HTTP (what ``curl`` sends): ILP text to ``POST /write``;
2. the ``questdb`` client (``pip install questdb``): ``Sender.from_conf("http::...")``;
3. ``influxdb-client`` (``pip install influxdb-client``): the v2 write API, gzip on;
4. Arrow Flight (``pyarrow.flight``): ``do_put`` with batch ids, acknowledged once durable;

and reads each table with ``streamwrite.read_table`` (the daemon may be running: every
committed version is readable). Run it from the repository root::

    python examples/daemon_clients.py
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path

import pyarrow as pa

import streamwrite

TOKEN = "example-token"


def start_daemon(root: Path) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """``streamwrite serve`` on ports the OS picks; returns the process and its addresses."""
    config = root / "daemon.toml"
    config.write_text(
        f'data_root = "{root / "data"}"\n\n'
        "[[tokens]]\n"
        'name = "example"\n'
        f'sha256 = "{hashlib.sha256(TOKEN.encode()).hexdigest()}"\n'
        'tables = ["*"]\n'
        'rights = ["write", "create", "add_column", "read"]\n'
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamwrite", "serve", "--config", str(config),
         "--http-listen", "127.0.0.1:0", "--flight-listen", "127.0.0.1:0"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    for line in proc.stderr:  # one JSON object per line; "ready" names the bound addresses
        entry = json.loads(line)
        if entry["event"] == "ready":
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return proc, entry["addresses"]
    raise SystemExit("the daemon did not start")


def write_http(addr: str, token: str) -> None:
    body = b"sensors,site=lab temp=21.5,ok=true 1700000000000000000\n"
    request = urllib.request.Request(
        f"http://{addr}/write?precision=n", data=body, method="POST",
        headers={"Authorization": f"Bearer {token}"},
    )  # fmt: skip
    with urllib.request.urlopen(request) as response:
        assert response.status == 204  # durable: the table commit is published


def write_questdb(addr: str, token: str) -> None:
    from questdb import Sender, TimestampNanos

    with Sender.from_conf(f"http::addr={addr};token={token};") as sender:
        for i in range(1000):
            sender.row(
                "trades",
                symbols={"sym": "ETH-USD", "side": "buy" if i % 2 else "sell"},
                columns={"price": 2615.5 + i, "qty": i},
                at=TimestampNanos(1_700_000_000_000_000_000 + i * 1_000_000),
            )
        sender.flush()  # returns once the daemon answered 204: the rows are durable


def write_influxdb(addr: str, token: str) -> None:
    from influxdb_client import InfluxDBClient, Point
    from influxdb_client.client.write_api import SYNCHRONOUS

    with InfluxDBClient(url=f"http://{addr}", token=token, org="-", enable_gzip=True) as client:
        client.write_api(write_options=SYNCHRONOUS).write(
            bucket="-",
            record=[
                Point("weather").tag("city", "Oslo").field("temp", -3.5 + i) for i in range(10)
            ],
        )


def write_flight(addr: str, token: str) -> None:
    from pyarrow import flight

    client = flight.FlightClient(f"grpc://{addr}")
    options = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {token}".encode())])
    batch = pa.record_batch(
        {
            "ts": pa.array([1_700_000_000_000_000] * 3, pa.timestamp("us", tz="UTC")),
            "device": ["a", "b", "c"],
            "value": [1.0, 2.0, 3.0],
        }
    )
    writer, reader = client.do_put(
        flight.FlightDescriptor.for_path("devices"), batch.schema, options=options
    )
    for batch_id in (0, 1, 2, 2):  # the replayed id 2 is acknowledged, written once
        metadata = json.dumps({"app_id": "example", "batch_id": batch_id}).encode()
        writer.write_with_metadata(batch, pa.py_buffer(metadata))
        print("  flight ack:", json.loads(reader.read().to_pybytes()))
    writer.done_writing()
    writer.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", help="a running daemon's HTTP host:port")
    parser.add_argument("--flight", help="a running daemon's Flight host:port")
    parser.add_argument("--token", default=TOKEN)
    parser.add_argument("--data-root", help="the running daemon's data_root (to read back)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc = None
        if args.http is None:
            proc, addresses = start_daemon(Path(tmp))
            args.http, args.flight = addresses["http"], addresses.get("flight")
            args.data_root = str(Path(tmp) / "data")
        try:
            write_http(args.http, args.token)
            write_questdb(args.http, args.token)
            write_influxdb(args.http, args.token)
            if args.flight:
                write_flight(args.flight, args.token)
            if args.data_root:
                for name in ("sensors", "trades", "weather", "devices"):
                    path = Path(args.data_root) / name
                    if (path / "_txn").exists():
                        table = streamwrite.read_table(path)
                        print(f"{name}: {table.num_rows} rows, columns {table.column_names}")
        finally:
            if proc is not None:
                proc.terminate()  # SIGTERM: drain, commit, exit 0
                proc.wait(60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
