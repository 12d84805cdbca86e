"""streamwrite quick start: stream a time series into a table while others read it.

Streams ``--seconds`` of synthetic trades (the reference table: ts, symbol, price, qty, side,
venue, order_id) into a day-partitioned table under ``--out`` (default ``./quickstart-out``),
encoding in a process pool and committing automatically (every ``--commit-rows`` rows or
``--commit-interval`` seconds). Meanwhile a reader task reads the newest committed snapshot
three ways: streamwrite, pyarrow (every page CRC checked) and DuckDB (over the committed prefix
of each partition). At the end it prints throughput, commit latency and the files.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import anyio
import duckdb
import pyarrow.parquet as pq

import streamwrite
from streamwrite._pool import ProcessPool
from streamwrite.table import TableSnapshot, open_table
from streamwrite.testing import reference_table

BATCH_ROWS = 20_000


def _read_three_ways(snapshot: TableSnapshot, scratch: Path) -> tuple[int, int, int]:
    """Row counts of one snapshot as streamwrite, pyarrow and DuckDB see it."""
    ours = snapshot.read().num_rows
    prefixes = []
    for name, size in snapshot.files:
        with open(snapshot.path / name / "data.parquet", "rb") as f:
            prefix = scratch / f"{name.replace('/', '_')}.parquet"
            prefix.write_bytes(f.read(size))  # exactly the committed bytes
            prefixes.append(prefix)
    theirs = sum(pq.read_table(p, page_checksum_verification=True).num_rows for p in prefixes)
    if not prefixes:
        return ours, 0, 0
    files = ", ".join(f"'{p}'" for p in prefixes)
    ((duck,),) = duckdb.sql(f"SELECT count(*) FROM read_parquet([{files}])").fetchall()
    return ours, theirs, int(duck)


async def main(args: argparse.Namespace) -> None:
    shutil.rmtree(args.out, ignore_errors=True)
    scratch = args.out / ".reader"
    scratch.mkdir(parents=True)
    path = args.out / "trades"
    schema = reference_table(1).schema
    reads: list[tuple[int, int, int, int]] = []
    sent = 0
    async with (
        await ProcessPool.open(args.workers) as pool,
        await open_table(
            path,
            schema,
            timestamp="ts",
            partition_by="day",
            executor=pool,
            commit_rows=args.commit_rows,
            commit_interval=args.commit_interval,
            bloom_filter_options={"order_id": True},
        ) as table,
    ):

        async def reader() -> None:
            while True:
                await anyio.sleep(0.5)
                snapshot = table.snapshot()
                counts = await anyio.to_thread.run_sync(_read_three_ways, snapshot, scratch)
                reads.append((snapshot.version, *counts))

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            group.start_soon(reader)
            while time.perf_counter() - started < args.seconds:
                await table.append(reference_table(BATCH_ROWS, start_row=sent))
                sent += BATCH_ROWS
            await table.flush()
            group.cancel_scope.cancel()
        elapsed = time.perf_counter() - started
        metrics = table.metrics

    final = streamwrite.read_table(path)
    assert final.num_rows == sent, (final.num_rows, sent)
    assert all(ours == theirs == duck for _, ours, theirs, duck in reads), reads
    latencies = sorted(metrics.commit_seconds)
    p50 = latencies[len(latencies) // 2] * 1000
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
    print(
        f"streamed {sent:,} rows in {elapsed:.1f} s: {sent / elapsed:,.0f} rows/s "
        f"with {args.workers} pool workers"
    )
    print(f"commits: {metrics.commits} (p50 {p50:.1f} ms, p99 {p99:.1f} ms per commit)")
    print(
        f"concurrent reads of committed snapshots: {len(reads)}, every one equal in "
        f"streamwrite, pyarrow (page CRCs checked) and DuckDB"
    )
    segments = sorted(path.glob("*/seg-*"))
    for segment in segments:
        size = (segment / "data.parquet").stat().st_size
        print(f"  {segment / 'data.parquet'}: {size:,} bytes (+ {segment / '_pm'})")
    print(f"read it:    streamwrite.read_table({str(path)!r}) -> {final.num_rows:,} rows")
    print(f"inspect it: .venv/bin/streamwrite inspect {segments[0]}")
    print(f"compact it: .venv/bin/streamwrite compact {path} --status")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--commit-rows", type=int, default=100_000)
    parser.add_argument("--commit-interval", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=Path("quickstart-out"))
    anyio.run(main, parser.parse_args())
