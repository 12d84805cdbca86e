"""streamwrite quick start: stream a time series into a table while others read it.

Streams ``--seconds`` of synthetic trades (the reference table: ts, symbol, price, qty, side,
venue, order_id) into a day-partitioned table under ``--out`` (default ``./quickstart-out``),
encoding in a process pool and committing automatically (every ``--commit-rows`` rows or
``--commit-interval`` seconds). Meanwhile a reader task reads the newest committed snapshot
three ways: streamwrite, and pyarrow (every page CRC checked) and DuckDB through
``streamwrite.snapshot_filesystem`` (the committed bytes of that one version, no copies).
At the end it prints throughput, commit latency and the files.

``--out`` must be absent, empty, or an earlier quick start's output (marked by the file
``.streamwrite-quickstart``): the demo never deletes anything it did not create. The readers'
scratch copies are deleted as they go; the table is deleted at the end unless ``--keep``.
Ctrl-C stops the demo with one line saying what was committed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import anyio
import duckdb
import pyarrow.dataset as ds

import streamwrite
from streamwrite import ProcessPool, TableSnapshot, open_table
from streamwrite.table.api import read_snapshot
from streamwrite.testing import reference_table

BATCH_ROWS = 20_000
MARKER = ".streamwrite-quickstart"
"""Marks a directory this demo created, so that a later run may replace what is in it."""


def prepare_out(out: Path) -> None:
    """Make ``out`` an empty directory that carries the marker, refusing to touch anything
    the demo did not create.

    Raises:
        SystemExit: ``out`` is a file, or a non-empty directory without the marker.
    """
    if out.exists() and not out.is_dir():
        sys.exit(f"--out {out} is a file; name a new or empty directory.")
    if out.is_dir() and any(out.iterdir()):
        if not (out / MARKER).is_file():
            sys.exit(
                f"--out {out} is not empty and was not made by this demo; it deletes nothing "
                "it did not create. Name a new or empty directory."
            )
        for child in out.iterdir():  # an earlier run's output: the demo made all of it
            if child.name != MARKER:
                shutil.rmtree(child) if child.is_dir() else child.unlink()
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("made by examples/quickstart.py; safe for it to replace\n")


def _read_three_ways(snapshot: TableSnapshot) -> tuple[int, int, int]:
    """Row counts of one snapshot as streamwrite, pyarrow and DuckDB see it: the two engines
    read through ``snapshot_filesystem``, which shows exactly that version's committed bytes."""
    ours = snapshot.read().num_rows
    if not snapshot.files:
        return ours, 0, 0
    with streamwrite.snapshot_filesystem(snapshot.path, version=snapshot) as fs:
        scan = ds.ParquetFragmentScanOptions(page_checksum_verification=True)
        dataset = ds.dataset(
            "/", filesystem=fs, format=ds.ParquetFileFormat(default_fragment_scan_options=scan)
        )
        theirs = dataset.count_rows()
        con = duckdb.connect()
        con.register_filesystem(fs)
        ((duck,),) = con.sql(
            f"SELECT count(*) FROM read_parquet('{fs.url}/**/*.parquet')"
        ).fetchall()
        con.close()
    return ours, theirs, int(duck)


async def main(args: argparse.Namespace) -> None:
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
                with snapshot:  # pinned: compaction keeps its segments until released
                    counts = await anyio.to_thread.run_sync(_read_three_ways, snapshot)
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
    snapshot = read_snapshot(path)
    for data_file in snapshot.data_files():
        print(f"  {data_file}: {data_file.stat().st_size:,} bytes (+ {data_file.parent / '_pm'})")
    if not args.keep:
        shutil.rmtree(path)
        print(f"deleted {path} (run with --keep to keep the table and try the CLI on it)")
        return
    print(f"read it:    streamwrite.read_table({str(path)!r}) -> {final.num_rows:,} rows")
    print(f"inspect it: .venv/bin/streamwrite inspect {path}")
    print(f"compact it: .venv/bin/streamwrite compact {path} --status")


def interrupted(path: Path) -> str:
    """One line saying what the table holds after Ctrl-C."""
    try:
        snapshot = read_snapshot(path)
    except (FileNotFoundError, streamwrite.StreamwriteError):
        return "interrupted before the table was created; nothing was committed."
    rows = snapshot.read(columns=["order_id"]).num_rows
    return (
        f"interrupted: {rows:,} rows are committed in {path} (table version "
        f"{snapshot.version}); rows appended after the last commit were not written."
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--commit-rows", type=int, default=100_000)
    parser.add_argument("--commit-interval", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=Path("quickstart-out"))
    parser.add_argument("--keep", action="store_true", help="keep the table at the end")
    args = parser.parse_args()
    prepare_out(args.out)
    try:
        anyio.run(main, args)
    except KeyboardInterrupt:
        print(interrupted(args.out / "trades"), file=sys.stderr)
        sys.exit(130)
