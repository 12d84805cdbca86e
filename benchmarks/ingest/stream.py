"""Section 1 of ``bench_ingest.py``: streaming, one commit per batch, against peers
(``--only stream``): the writers, the latency table and plot, and the section."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from _common import (
    MB,
    fmt_bytes,
    fmt_ratio,
    markdown_table,
    verdict,
)

import streamwrite
from streamwrite.pool.executor import InlineExecutor
from streamwrite.pool.process import ProcessPool
from streamwrite.table.api import open_table
from streamwrite.testing import reference_table

PLOT = Path(__file__).parents[1] / "ingest_latency.png"
STREAM_TARGET = 1.0  # streamwrite rows/s / ParquetWriter rows/s
PEER_TARGET = 10.0  # streamwrite rows/s / deltalake and fastparquet rows/s
ROLLING = 25  # commits in the plot's rolling median

# ---------------------------------------------------------------------------------------------
# Streaming writers: each commits one batch per call and records the call's latency.


class Record:
    """Latencies of one writer, one entry per commit, and where it wrote."""

    def __init__(self, name: str, directory: Path) -> None:
        self.name = name
        self.directory = directory
        self.latency: list[float] = []
        self.rows = 0
        self.wall: float | None = None  # rows/s from wall time instead of summed latency
        directory.mkdir(parents=True)

    def add(self, seconds: float, rows: int) -> None:
        self.latency.append(seconds)
        self.rows += rows

    @property
    def rows_per_second(self) -> float:
        return self.rows / (self.wall if self.wall is not None else sum(self.latency))


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class TableWriter:
    """streamwrite: one idempotent, durable table commit per batch."""

    def __init__(self, record: Record, executor: Any) -> None:
        self.record = record
        self.executor = executor
        self.table: Any = None
        self.i = 0

    async def open(self, schema: pa.Schema) -> None:
        self.table = await open_table(
            self.record.directory / "t",
            schema,
            timestamp="ts",
            partition_by="day",
            executor=self.executor,
        )

    async def commit(self, batch: pa.Table) -> None:
        start = time.perf_counter()
        commit = await self.table.append(batch, app_id="bench", batch_id=self.i)
        self.record.add(time.perf_counter() - start, batch.num_rows)
        assert commit is not None and not commit.skipped
        self.i += 1

    async def close(self) -> None:
        await self.table.close()
        back = streamwrite.read_table(self.record.directory / "t")  # readable, complete
        assert back.num_rows == self.record.rows, (back.num_rows, self.record.rows)


class ParquetWriterRun:
    """pyarrow: one open ParquetWriter, flush (and optionally fsync) after each batch."""

    def __init__(self, record: Record, schema: pa.Schema, fsync: bool) -> None:
        self.record = record
        self.fsync = fsync
        self.path = record.directory / "data.parquet"
        self.file = open(self.path, "wb")  # noqa: SIM115 - closed in close()
        self.writer = pq.ParquetWriter(self.file, schema, compression="zstd")

    def commit(self, batch: pa.Table) -> None:
        start = time.perf_counter()
        self.writer.write_table(batch)
        self.file.flush()
        if self.fsync:
            os.fsync(self.file.fileno())
        self.record.add(time.perf_counter() - start, batch.num_rows)

    def close(self) -> None:
        self.writer.close()
        self.file.close()
        assert pq.ParquetFile(self.path).metadata.num_rows == self.record.rows


def file_per_batch_commit(record: Record, i: int, batch: pa.Table) -> None:
    start = time.perf_counter()
    path = record.directory / f"part-{i:05d}.parquet"
    pq.write_table(batch, path, compression="zstd")
    fsync_path(path)
    record.add(time.perf_counter() - start, batch.num_rows)


def fastparquet_commit(record: Record, i: int, batch: pa.Table) -> None:
    import fastparquet

    frame = batch.to_pandas()  # outside timing
    path = record.directory / "data.parquet"
    start = time.perf_counter()
    fastparquet.write(str(path), frame, append=i > 0, compression="ZSTD")
    fsync_path(path)
    record.add(time.perf_counter() - start, batch.num_rows)


def deltalake_commit(record: Record, batch: pa.Table, properties: Any) -> None:
    from deltalake import write_deltalake

    start = time.perf_counter()
    write_deltalake(str(record.directory), batch, mode="append", writer_properties=properties)
    record.add(time.perf_counter() - start, batch.num_rows)


async def pipelined(
    record: Record, batches: list[pa.Table], rows: int, pool: ProcessPool
) -> list[float]:
    """``async with`` table, commit policy ``commit_rows``; returns the background commits'
    latencies (the per-append latencies go to ``record``)."""
    started = time.perf_counter()
    async with await open_table(
        record.directory / "t",
        batches[0].schema,
        timestamp="ts",
        partition_by="day",
        executor=pool,
        commit_rows=rows,
    ) as table:
        for batch in batches:
            start = time.perf_counter()
            await table.append(batch)
            record.add(time.perf_counter() - start, batch.num_rows)
        await table.flush()
    # After close: flush() can return before the last queued commit ran (see the README).
    commits = list(table.metrics.commit_seconds)
    record.wall = time.perf_counter() - started
    back = streamwrite.read_table(record.directory / "t")
    assert back.num_rows == record.rows, (back.num_rows, record.rows)
    return commits


# ---------------------------------------------------------------------------------------------
# Reporting


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def disk_usage(directory: Path) -> tuple[int, int]:
    """(files, bytes of content) under ``directory``."""
    files = [p for p in directory.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def stream_table(
    records: list[Record], series: dict[str, list[float]], batches_per: dict[str, int]
) -> str:
    by_name = {r.name: r for r in records}
    reference = by_name["pyarrow ParquetWriter (unreadable until close)"].rows_per_second
    delta = by_name.get("deltalake write_deltalake append")
    fast = by_name.get("fastparquet append=True")
    rows = []
    for record in records:
        lat = series[record.name]
        files, size = disk_usage(record.directory)
        speed = record.rows_per_second
        rows.append(
            [
                record.name,
                f"{batches_per[record.name]:,}",
                f"{speed:,.0f}",
                ms(quantile(lat, 0.5)),
                ms(quantile(lat, 0.99)),
                ms(max(lat)),
                f"{files:,}",
                fmt_bytes(size),
                fmt_ratio(speed / reference),
                fmt_ratio(speed / delta.rows_per_second) if delta else "",
                fmt_ratio(speed / fast.rows_per_second) if fast else "",
            ]
        )
    return markdown_table(
        [
            "writer",
            "commits",
            "rows/s",
            "p50 ms",
            "p99 ms",
            "max ms",
            "files created",
            "bytes on disk",
            "vs ParquetWriter",
            "vs deltalake",
            "vs fastparquet",
        ],
        rows,
    )


def plot(series: dict[str, list[float]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 6), dpi=110)
    for name, values in series.items():
        ms = [v * 1000 for v in values]
        x = range(1, len(ms) + 1)
        (line,) = ax.plot(x, ms, linewidth=0.5, alpha=0.3)
        half = ROLLING // 2
        rolling = [statistics.median(ms[max(0, i - half) : i + half + 1]) for i in range(len(ms))]
        ax.plot(
            x,
            rolling,
            color=line.get_color(),
            linewidth=1.6,
            label=f"{name} (p50 {quantile(values, 0.5) * 1000:.1f} ms)",
        )
    ax.set_yscale("log")
    ax.set_xlabel("commit")
    ax.set_ylabel(f"commit latency, ms (log); bold: rolling median of {ROLLING}")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------
# The section


async def run_stream(args: argparse.Namespace, workdir: Path) -> list[str]:
    start = time.perf_counter()
    table = reference_table(args.batches * args.rows)
    batches = [table.slice(i * args.rows, args.rows) for i in range(args.batches)]
    schema = table.schema
    print(
        f"Reference table: {args.batches:,} batches of {args.rows:,} rows, "
        f"{table.nbytes / MB:,.0f} MB of Arrow buffers (built in "
        f"{time.perf_counter() - start:.1f} s, not timed). Its `ts` spans "
        f"{pa.compute.min_max(table.column('ts'))['min']} to "
        f"{pa.compute.min_max(table.column('ts'))['max']}: one day partition.\n"
    )
    import deltalake
    import fastparquet
    import pandas
    from deltalake import WriterProperties

    properties = WriterProperties(compression="ZSTD")
    print(
        f"Peers: pyarrow {pa.__version__}, fastparquet {fastparquet.__version__} (pandas "
        f"{pandas.__version__}), deltalake {deltalake.__version__}.\n"
    )
    pool = await ProcessPool.open(2)
    try:
        sw_inline = TableWriter(
            Record("streamwrite table, inline", workdir / "sw_inline"), InlineExecutor()
        )
        sw_pool = TableWriter(Record("streamwrite table, pool(2)", workdir / "sw_pool"), pool)
        await sw_inline.open(schema)
        await sw_pool.open(schema)
        pw = ParquetWriterRun(
            Record("pyarrow ParquetWriter (unreadable until close)", workdir / "pw"),
            schema,
            fsync=False,
        )
        pw_sync = ParquetWriterRun(
            Record("pyarrow ParquetWriter + fsync (unreadable until close)", workdir / "pws"),
            schema,
            fsync=True,
        )
        per_batch = Record("pyarrow, one file per batch + fsync", workdir / "pa_files")
        fast = Record("fastparquet append=True", workdir / "fp")
        delta = Record("deltalake write_deltalake append", workdir / "dl")
        started = time.perf_counter()
        for i, batch in enumerate(batches):
            await sw_inline.commit(batch)
            await sw_pool.commit(batch)
            pw.commit(batch)
            pw_sync.commit(batch)
            file_per_batch_commit(per_batch, i, batch)
            if i < args.peer_batches:
                fastparquet_commit(fast, i, batch)
                deltalake_commit(delta, batch, properties)
            if (i + 1) % 100 == 0:
                print(
                    f"  ... {i + 1} batches, {time.perf_counter() - started:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
        await sw_inline.close()
        await sw_pool.close()
        pw.close()
        pw_sync.close()
        elapsed = time.perf_counter() - started
        import deltalake as dl

        assert dl.DeltaTable(str(delta.directory)).to_pyarrow_table().num_rows == delta.rows

        pipe = Record("streamwrite pipelined, pool(2) (commit_rows, background)", workdir / "pipe")
        before = (pool.transfer_seconds, pool.receive_seconds, pool.encode_seconds)
        pipe_commits = await pipelined(pipe, batches, args.rows, pool)
        transfer, receive, encode = (
            pool.transfer_seconds - before[0],
            pool.receive_seconds - before[1],
            pool.encode_seconds - before[2],
        )
    finally:
        await pool.aclose()

    records = [
        sw_inline.record,
        sw_pool.record,
        pipe,
        pw.record,
        pw_sync.record,
        per_batch,
        fast,
        delta,
    ]
    series = {r.name: r.latency for r in records}
    series[pipe.name] = pipe_commits
    counts = {r.name: len(series[r.name]) for r in records}
    print(
        f"## 1. Streaming: one commit per {args.rows:,}-row batch (round-robin, "
        f"{elapsed:.0f} s in all; pipelined run separately)\n"
    )
    print(stream_table(records, series, counts) + "\n")
    print(
        "rows/s = rows / summed latency of the commit calls (pipelined: rows / wall time of the "
        "whole loop, flush included; its latencies are the background commits'). "
        f"fastparquet and deltalake ran the first {args.peer_batches:,} batches only"
        if args.peer_batches < args.batches
        else "rows/s = rows / summed latency of the commit calls (pipelined: rows / wall time of "
        "the whole loop, flush included; its latencies are the background commits')"
    )
    print(
        f"\nPipelined run: {len(pipe_commits):,} background commits; pool transfer "
        f"{transfer:.2f} s + receive {receive:.2f} s vs encode {encode:.2f} s in workers.\n"
    )
    plot_series = {
        name: values for name, values in series.items() if "+ fsync (unreadable" not in name
    }
    plot(
        plot_series,
        PLOT,
        f"Commit latency per {args.rows:,}-row batch, reference table "
        f"({dt.datetime.now(dt.UTC):%Y-%m-%d}, 2 cores)",
    )
    print(f"Plot: {PLOT.name}\n")

    reference = pw.record.rows_per_second
    verdicts = []
    for record in (sw_pool.record, sw_inline.record, pipe):
        ratio = record.rows_per_second / reference
        verdicts.append(
            verdict(
                f"{record.name} rows/s >= {STREAM_TARGET}x ParquetWriter",
                fmt_ratio(ratio),
                ratio >= STREAM_TARGET,
            )
        )
    best = max(sw_pool.record.rows_per_second, sw_inline.record.rows_per_second)
    for peer in (delta, fast):
        ratio = best / peer.rows_per_second
        verdicts.append(
            verdict(
                f"streamwrite (best per-batch mode) >= {PEER_TARGET:.0f}x {peer.name}",
                fmt_ratio(ratio),
                ratio >= PEER_TARGET,
            )
        )
    return verdicts
