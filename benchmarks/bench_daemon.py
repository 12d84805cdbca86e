"""Daemon benchmark: ``streamwrite serve`` fed by the real clients, against the library's own
append path in the same run (the ceiling: what the daemon adds is HTTP, parsing and typing).

The daemon runs as a subprocess (``--workers`` encode processes, default 0: in the server)
on a temporary data root, with one token; every figure is durable (an answer or an ack comes
only after the table commit is published). Rows are a trades table: ``sym`` and ``side``
tags, ``price`` float, ``qty`` int, a nanosecond timestamp; each request is ``--rows`` rows
of one table, every body distinct (so retry deduplication never drops one).

- **ILP, questdb client**: ``Sender.from_conf("http::...;protocol_version=2")``, bodies built
  beforehand with ``sender.new_buffer()`` (outside timing) and sent with
  ``flush(buffer, clear=False)``; 1 and 4 concurrent senders (threads; the client's I/O runs
  in Rust without the GIL). rows/s = rows / wall time; ack latency = each ``flush``.
- **ILP at half the peak**: the 4 senders paced to half the 4-sender rate (their phases spread
  over the period): ack p50/p99.
- **Flight DoPut**: ``FlightClient.do_put`` of 10k- and 100k-row record batches, each with
  ``app_metadata`` batch ids, acks read as they come (the writer keeps up to 8 in flight).
- **Daemon CPU**: user+system CPU seconds per million rows of the daemon and its parse
  workers (``/proc/<pid>/stat``), for the 4-sender ILP run.
- **Overload**: 16 raw HTTP clients sending 4 MiB bodies as fast as they can against a daemon
  with ``limits.in_flight_bytes`` = 32 MiB (10x the budget offered at once): peak RSS of the
  daemon and its workers above their idle RSS, against the budget, and how many 503s were
  answered.
- **Library ceiling**: ``open_table`` + 4 tasks appending the same rows as Arrow tables
  (``wait=False`` tickets, ``flush``, group commit), in this process.

Run from the repository root::

    .venv/bin/python benchmarks/bench_daemon.py            # 10k-row requests, ~2M rows per run
    .venv/bin/python benchmarks/bench_daemon.py --quick
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
from _common import Report, bench_parser, markdown_table, verdict

import streamwrite

TOKEN = "bench-token"
BASE_NS = 1_700_000_000_000_000_000


def trades(num_rows: int, start: int) -> pa.Table:
    """``num_rows`` trades rows, timestamps from ``start`` (microseconds apart)."""
    i = np.arange(start, start + num_rows, dtype=np.int64)
    syms = np.array([f"SYM{k}" for k in range(50)])
    return pa.table(
        {
            "sym": pa.array(syms[i % 50]).dictionary_encode(),
            "side": pa.array(np.where(i % 2 == 0, "buy", "sell")).dictionary_encode(),
            "price": pa.array(100.0 + (i % 1000) * 0.25),
            "qty": pa.array(i % 97),
            "timestamp": pa.array(BASE_NS // 1000 + i, pa.timestamp("us", tz="UTC")),
        }
    )


class Daemon:
    """``streamwrite serve`` as a subprocess, with its bound address."""

    def __init__(self, root: Path, extra: str = "", workers: int = 0) -> None:
        root.mkdir(parents=True, exist_ok=True)
        sha = hashlib.sha256(TOKEN.encode()).hexdigest()
        config = root / "daemon.toml"
        config.write_text(
            f'data_root = "{root / "data"}"\n[engine]\nworkers = {workers}\n'
            f"compaction_interval_seconds = 0.0\n{extra}\n"
            f'[[tokens]]\nname = "bench"\nsha256 = "{sha}"\n'
        )
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamwrite",
                "serve",
                "--config",
                str(config),
                "--http-listen",
                "127.0.0.1:0",
                "--flight-listen",
                "127.0.0.1:0",
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        self.addresses: dict[str, str] = {}
        for line in self.proc.stderr:
            entry = json.loads(line)
            if entry.get("event") == "ready":
                self.addresses = entry["addresses"]
                break
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def pids(self) -> list[int]:
        """The daemon and its child processes (the parse workers, an encode pool)."""
        found = [self.proc.pid]
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == self.proc.pid:
                    found.append(int(stat.parent.name))
            except (OSError, ValueError):
                continue
        return found

    def cpu_seconds(self) -> float:
        """User + system CPU seconds of the daemon and its children so far."""
        total = 0
        for pid in self.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])
        return total / os.sysconf("SC_CLK_TCK")

    def rss_bytes(self) -> int:
        """Resident bytes of the daemon and its children."""
        total = 0
        for pid in self.pids():
            try:
                lines = Path(f"/proc/{pid}/status").read_text().splitlines()
            except OSError:
                continue
            total += sum(int(line.split()[1]) * 1024 for line in lines if line.startswith("VmRSS:"))
        return total

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(60)


def build_buffers(
    addr: str, num_senders: int, per_sender: int, rows: int, table: str
) -> list[list[Any]]:
    """Distinct ILP bodies (protocol 2) per sender, built with the questdb client."""
    from questdb import Sender, TimestampNanos

    conf = f"http::addr={addr};token={TOKEN};protocol_version=2;"
    out = []
    serial = 0
    with Sender.from_conf(conf) as sender:
        for _ in range(num_senders):
            buffers = []
            for _ in range(per_sender):
                buffer = sender.new_buffer()
                for k in range(rows):
                    i = serial * rows + k
                    buffer.row(
                        table,
                        symbols={"sym": f"SYM{i % 50}", "side": "buy" if i % 2 == 0 else "sell"},
                        columns={"price": 100.0 + (i % 1000) * 0.25, "qty": i % 97},
                        at=TimestampNanos(BASE_NS + i * 1000),
                    )
                buffers.append(buffer)
                serial += 1
            out.append(buffers)
    return out


def run_ilp(
    addr: str, buffers: list[list[Any]], pace_seconds: float = 0.0
) -> tuple[float, list[float]]:
    """Send every buffer (one sender thread per list): wall seconds and each ack latency.
    Paced senders send one request every ``pace_seconds``, their phases spread evenly over
    the period (in step, all would arrive at once: a burst every period, not a rate)."""
    from questdb import Sender

    latencies: list[float] = []
    lock = threading.Lock()
    origin = time.perf_counter() + 0.5

    def send(number: int, mine: list[Any]) -> None:
        conf = f"http::addr={addr};token={TOKEN};protocol_version=2;auto_flush=off;"
        with Sender.from_conf(conf) as sender:
            next_at = origin + number * pace_seconds / len(buffers)
            for buffer in mine:
                if pace_seconds:
                    time.sleep(max(0.0, next_at - time.perf_counter()))
                    next_at += pace_seconds
                started = time.perf_counter()
                sender.flush(buffer, clear=False)
                with lock:
                    latencies.append(time.perf_counter() - started)

    threads = [threading.Thread(target=send, args=(n, mine)) for n, mine in enumerate(buffers)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started, latencies


def run_flight(
    location: str, batches: list[pa.RecordBatch], table: str
) -> tuple[float, list[float]]:
    """DoPut ``batches`` with batch ids, up to 8 unacknowledged: seconds and ack latencies."""
    from pyarrow import flight

    client = flight.FlightClient(location)
    options = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {TOKEN}".encode())])
    writer, reader = client.do_put(
        flight.FlightDescriptor.for_path(table), batches[0].schema, options=options
    )
    sent: list[float] = []
    latencies: list[float] = []
    started = time.perf_counter()
    for batch_id, batch in enumerate(batches):
        if len(sent) - len(latencies) >= 8:
            reader.read()
            latencies.append(time.perf_counter() - sent[len(latencies)])
        metadata = json.dumps({"app_id": f"bench-{table}", "batch_id": batch_id}).encode()
        sent.append(time.perf_counter())
        writer.write_with_metadata(batch, pa.py_buffer(metadata))
    writer.done_writing()
    while len(latencies) < len(sent):
        reader.read()
        latencies.append(time.perf_counter() - sent[len(latencies)])
    writer.close()
    return time.perf_counter() - started, latencies


def run_overload(addr: str, body: bytes, seconds: float) -> dict[str, int]:
    """16 clients POSTing ``body`` for ``seconds``: answers by status."""
    statuses: dict[str, int] = {}
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def client(number: int) -> None:
        conn = http.client.HTTPConnection(addr, timeout=60)
        k = 0
        while time.perf_counter() < deadline:
            k += 1
            conn.request(
                "POST",
                "/write",
                body=body,
                headers={"Authorization": f"Bearer {TOKEN}", "Idempotency-Key": f"{number}-{k}"},
            )
            response = conn.getresponse()
            response.read()
            with lock:
                statuses[str(response.status)] = statuses.get(str(response.status), 0) + 1
            if response.status == 503:
                time.sleep(0.01)
        conn.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


async def library_ceiling(path: Path, tables: list[list[pa.Table]]) -> float:
    """Seconds for 4 tasks appending the same rows through ``Table.append``, durable."""
    schema = tables[0][0].schema.set(
        tables[0][0].schema.get_field_index("timestamp"),
        pa.field("timestamp", pa.timestamp("us", tz="UTC"), nullable=False),
    )
    async with await streamwrite.open_table(
        path, schema, timestamp="timestamp", partition_by="day", compaction_interval=None
    ) as table:

        async def task(mine: list[pa.Table]) -> None:
            for rows in mine:
                ticket = await table.append(rows.cast(schema), wait=False)
                await table.flush()
                await ticket.durable()

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for mine in tables:
                group.start_soon(task, mine)
        return time.perf_counter() - started


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q)) * 1000 if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--rows", type=int, default=10_000, help="rows per ILP request")
    parser.add_argument("--requests", type=int, default=50, help="requests per sender")
    parser.add_argument("--workers", type=int, default=0, help="daemon encode processes")
    args = parser.parse_args(argv)
    if args.quick:
        args.requests = 8
    report = Report(
        "daemon", args, details=[f"{args.rows} rows per request, workers={args.workers}"]
    )
    verdicts = []
    with report.workdir() as workdir:
        daemon = Daemon(workdir / "d", workers=args.workers)
        try:
            addr = daemon.addresses["http"]
            rows_table = []
            one = build_buffers(addr, 1, args.requests, args.rows, "ilp1")
            four = build_buffers(addr, 4, args.requests, args.rows, "ilp4")
            seconds1, lat1 = run_ilp(addr, one)
            cpu_before = daemon.cpu_seconds()
            seconds4, lat4 = run_ilp(addr, four)
            cpu4 = daemon.cpu_seconds() - cpu_before
            rate1 = args.rows * args.requests / seconds1
            rate4 = args.rows * args.requests * 4 / seconds4
            half = build_buffers(addr, 4, max(4, args.requests // 2), args.rows, "ilphalf")
            pace = 4 * args.rows / (rate4 / 2)
            _, lat_half = run_ilp(addr, half, pace_seconds=pace)
            rows_table += [
                [
                    "ILP, questdb, 1 sender",
                    f"{rate1:,.0f}",
                    f"{percentile(lat1, 50):.1f}",
                    f"{percentile(lat1, 99):.1f}",
                ],
                [
                    "ILP, questdb, 4 senders",
                    f"{rate4:,.0f}",
                    f"{percentile(lat4, 50):.1f}",
                    f"{percentile(lat4, 99):.1f}",
                ],
                [
                    f"ILP, 4 senders at half peak ({rate4 / 2:,.0f} rows/s offered)",
                    "-",
                    f"{percentile(lat_half, 50):.1f}",
                    f"{percentile(lat_half, 99):.1f}",
                ],
            ]
            flight_rates = {}
            if "flight" in daemon.addresses:
                for batch_rows in (10_000, 100_000):
                    total = max(args.rows * args.requests * 2, batch_rows * 8)
                    source = trades(total, 10**9 + batch_rows)
                    batches = source.to_batches(max_chunksize=batch_rows)
                    seconds, lat = run_flight(
                        f"grpc://{daemon.addresses['flight']}", batches, f"fl{batch_rows}"
                    )
                    flight_rates[batch_rows] = total / seconds
                    rows_table.append(
                        [
                            f"Flight DoPut, {batch_rows:,}-row batches",
                            f"{total / seconds:,.0f}",
                            f"{percentile(lat, 50):.1f}",
                            f"{percentile(lat, 99):.1f}",
                        ]
                    )
            cpu_per_million = cpu4 / (args.rows * args.requests * 4 / 1e6)
        finally:
            daemon.stop()
        ceiling_tables = [
            [trades(args.rows, (s * args.requests + r) * args.rows) for r in range(args.requests)]
            for s in range(4)
        ]
        seconds_lib = anyio.run(library_ceiling, workdir / "lib", ceiling_tables)
        rate_lib = args.rows * args.requests * 4 / seconds_lib
        rows_table.append(
            ["library: 4 tasks, Table.append (the ceiling)", f"{rate_lib:,.0f}", "-", "-"]
        )
        print("## Throughput and ack latency (durable)\n")
        print(markdown_table(["path", "rows/s", "ack p50 ms", "ack p99 ms"], rows_table))
        print(f"\nILP 4 senders / library ceiling: {rate4 / rate_lib:.2f}x")
        print(f"daemon CPU per million rows (ILP, 4 senders): {cpu_per_million:.2f} s\n")

        budget = 32 << 20
        over = Daemon(
            workdir / "o", f"[limits]\nin_flight_bytes = {budget}\n", workers=args.workers
        )
        try:
            time.sleep(0.5)
            idle = over.rss_bytes()
            body_buffers = build_buffers(over.addresses["http"], 1, 1, 40_000, "over")
            body = bytes(body_buffers[0][0])
            peak = idle
            done = threading.Event()

            def sample() -> None:
                nonlocal peak
                while not done.is_set():
                    peak = max(peak, over.rss_bytes())
                    time.sleep(0.02)

            sampler = threading.Thread(target=sample)
            sampler.start()
            statuses = run_overload(over.addresses["http"], body, 5.0 if args.quick else 15.0)
            done.set()
            sampler.join()
        finally:
            over.stop()
        print(
            f"## Overload: 16 clients x {len(body) / 2**20:.1f} MiB bodies against a "
            f"{budget >> 20} MiB in-flight budget\n"
        )
        print(
            markdown_table(
                ["idle RSS MiB", "peak RSS MiB", "growth / budget", "answers"],
                [
                    [
                        f"{idle / 2**20:.0f}",
                        f"{peak / 2**20:.0f}",
                        f"{(peak - idle) / budget:.2f}x",
                        ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items())),
                    ]
                ],
            )
        )
        verdicts += [
            verdict(
                "ILP over HTTP >= 1M rows/s durable, 4 senders",
                f"{rate4:,.0f} rows/s",
                rate4 >= 1e6,
            ),
            verdict(
                "Flight DoPut >= 2M rows/s",
                ", ".join(f"{k:,}: {v:,.0f}" for k, v in flight_rates.items()) or "not run",
                bool(flight_rates) and max(flight_rates.values()) >= 2e6,
            ),
            verdict(
                "ack p99 <= 50 ms at half the peak rate",
                f"{percentile(lat_half, 99):.1f} ms",
                percentile(lat_half, 99) <= 50,
            ),
            verdict(
                "RSS bounded by the budget under overload",
                f"growth {(peak - idle) / budget:.2f}x the budget",
                peak - idle <= 4 * budget,
            ),
        ]
        report.data = {"rate1": rate1, "rate4": rate4, "flight": flight_rates, "ceiling": rate_lib}
    return report.finish(verdicts)


if __name__ == "__main__":
    sys.exit(main())
