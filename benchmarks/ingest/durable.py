"""Section 3 of ``bench_ingest.py``: durable streaming modes against their peers (``--only
durable``), all in one run.

- **encode alone**: one ``--rows`` batch encoded into memory: ours (``row_group_jobs`` +
  ``run_job`` in this thread with one ``EncodingPlanner``, the work a table commit hands its
  executor) vs pyarrow
  (``pq.ParquetWriter(BufferOutputStream, zstd).write_table(batch)``), batch by batch in turn;
- **sequential durable**: ``await table.append(batch, app_id=, batch_id=)`` (returns when
  durable and published) vs pyarrow one file per batch + fsync of the file and of the
  directory (the truly durable form), batch by batch in turn;
- **pipelined durable**: inside ``async with``, ``append(..., wait=False)`` per batch, every
  ticket awaited (``max_in_flight`` bounds them); rows / wall time including the last
  ticket, vs pyarrow ``ParquetWriter`` (not durable, not readable until close) on the same
  batches, run just before and after (the mean of the two);
- **group commit**: ``--appenders`` tasks each appending ``--group-rows``-row batches with
  their own app id inside ``async with``, each append waiting until durable (``wait=True``,
  the target's form), and again with ``--group-window`` tickets in flight per task (a client
  that pipelines, as line-protocol clients do): rows / wall time, append-to-durable latency;
- each streamwrite mode with the inline executor and with ``ProcessPool(2)``; CPU seconds per
  million rows = this process's CPU time plus the pool workers' (from ``/proc``), over rows;
- the per-commit breakdown of the sequential inline run: the table's metrics (encode,
  segment write + sync, ``_txn`` publish) and every ``os.fsync``/``os.fdatasync`` call of the
  run timed and counted per file kind (the calls are wrapped for the run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.parquet as pq
from _common import fmt_ratio, markdown_table, verdict

from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.encode import EncodingPlanner, row_group_jobs
from streamwrite.options import make_write_options
from streamwrite.pool.executor import InlineExecutor
from streamwrite.pool.process import ProcessPool
from streamwrite.table.api import CommitTicket, open_table
from streamwrite.testing import reference_table
from workers.jobs import run_job

SEQUENTIAL_TARGET = 1.0  # vs pyarrow one file per batch + fsync
P99_TARGET_SECONDS = 0.010
PIPELINED_TARGET = 1.0  # vs pyarrow ParquetWriter (not durable)
GROUP_TARGET_ROWS_PER_SECOND = 1_500_000
ENCODE_TARGET = 1.0


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


# ---------------------------------------------------------------------------------------------
# CPU time and syncs


def cpu_seconds(pool: ProcessPool | None) -> float:
    """This process's CPU seconds plus the pool workers' (utime + stime from /proc)."""
    total = time.process_time()
    if pool is not None:
        ticks = os.sysconf("SC_CLK_TCK")
        for pid in pool.worker_pids():
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def _file_kind(fd: int) -> str:
    try:
        path = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return "?"
    name = os.path.basename(path)
    if name in ("data.parquet", "_data.pending", "_pm"):
        return name
    if "_txn" in name:
        return "_txn"
    return "directory" if os.path.isdir(path) else name


@contextmanager
def timed_syncs() -> Iterator[dict[tuple[str, str], list[float]]]:
    """Wrap ``os.fsync`` and ``os.fdatasync`` for the block: ``(call, file kind) -> seconds``."""
    calls: dict[tuple[str, str], list[float]] = defaultdict(list)
    originals = {name: getattr(os, name) for name in ("fsync", "fdatasync")}

    def wrap(name: str, sync: Callable[[int], None]) -> Callable[[int], None]:
        def timed(fd: int) -> None:
            start = time.perf_counter()
            sync(fd)
            calls[(name, _file_kind(fd))].append(time.perf_counter() - start)

        return timed

    for name, sync in originals.items():
        setattr(os, name, wrap(name, sync))
    try:
        yield calls
    finally:
        for name, sync in originals.items():
            setattr(os, name, sync)


_FSYNC = os.fsync  # the peer's syncs are not counted in the breakdown


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        _FSYNC(fd)
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------------
# The modes


def encode_alone(batches: list[pa.Table]) -> tuple[list[float], list[float]]:
    """Per batch: our encode (with the planner a table partition keeps) and pyarrow's, in
    turn."""
    schema = arrow_to_parquet(batches[0].schema)
    options = make_write_options(batches[0].schema.names, caller="bench")
    planner = EncodingPlanner()
    ours, theirs = [], []
    for batch in batches:
        start = time.perf_counter()
        planner.observe(
            [run_job(job) for job in row_group_jobs(batch, schema, options, None, 0, planner)]
        )
        ours.append(time.perf_counter() - start)
        start = time.perf_counter()
        sink = pa.BufferOutputStream()
        with pq.ParquetWriter(sink, batch.schema, compression="zstd") as writer:
            writer.write_table(batch)
        theirs.append(time.perf_counter() - start)
    return ours, theirs


async def sequential(
    batches: list[pa.Table], workdir: Path, executor: Any
) -> tuple[list[float], list[float], Any, dict[tuple[str, str], list[float]]]:
    """Per batch, in turn: a durable table commit, and pyarrow's file + fsync + dir fsync."""
    ours, theirs = [], []
    files = workdir / "files"
    files.mkdir()
    table = await open_table(
        workdir / "t", batches[0].schema, timestamp="ts", partition_by="day", executor=executor
    )
    with timed_syncs() as syncs:
        for i, batch in enumerate(batches):
            start = time.perf_counter()
            await table.append(batch, app_id="bench", batch_id=i)
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            path = files / f"part-{i:05d}.parquet"
            pq.write_table(batch, path, compression="zstd")
            fsync_path(path)
            fsync_path(files)
            theirs.append(time.perf_counter() - start)
    await table.close()
    return ours, theirs, table.metrics, syncs


async def pipelined(batches: list[pa.Table], directory: Path, executor: Any) -> float:
    """Wall seconds to append every batch with ``wait=False`` and see every ticket durable."""
    start = time.perf_counter()
    async with await open_table(
        directory,
        batches[0].schema,
        timestamp="ts",
        partition_by="day",
        executor=executor,
        compaction_interval=None,
    ) as table:
        tickets: list[CommitTicket] = []
        for i, batch in enumerate(batches):
            tickets.append(await table.append(batch, app_id="bench", batch_id=i, wait=False))
        for ticket in tickets:
            await ticket.durable()
    return time.perf_counter() - start


def parquet_writer(batches: list[pa.Table], path: Path) -> float:
    start = time.perf_counter()
    with (
        open(path, "wb") as file,
        pq.ParquetWriter(file, batches[0].schema, compression="zstd") as writer,
    ):
        for batch in batches:
            writer.write_table(batch)
            file.flush()
    return time.perf_counter() - start


async def group_commit(
    table_rows: pa.Table, directory: Path, executor: Any, appenders: int, rows: int, window: int
) -> tuple[float, list[float], Any]:
    """Wall seconds for ``appenders`` tasks to append all of ``table_rows`` in ``rows``-row
    batches (task j takes batches j, j + appenders, ...), and every append's latency (from
    the call to durable). ``window`` 1: each append waits until durable (``wait=True``);
    more: each task keeps up to ``window`` appends in flight (``wait=False`` tickets)."""
    num_batches = table_rows.num_rows // rows
    latencies: list[float] = []
    async with await open_table(
        directory,
        table_rows.schema,
        timestamp="ts",
        partition_by="day",
        executor=executor,
        compaction_interval=None,
    ) as table:
        start = time.perf_counter()

        async def appender(j: int) -> None:
            in_flight: list[tuple[float, CommitTicket]] = []
            for n, k in enumerate(range(j, num_batches, appenders)):
                begin = time.perf_counter()
                batch = table_rows.slice(k * rows, rows)
                if window == 1:
                    await table.append(batch, app_id=f"a{j}", batch_id=n)
                    latencies.append(time.perf_counter() - begin)
                    continue
                ticket = await table.append(batch, app_id=f"a{j}", batch_id=n, wait=False)
                in_flight.append((begin, ticket))
                if len(in_flight) >= window:
                    began, oldest = in_flight.pop(0)
                    await oldest.durable()
                    latencies.append(time.perf_counter() - began)
            for began, ticket in in_flight:
                await ticket.durable()
                latencies.append(time.perf_counter() - began)

        async with anyio.create_task_group() as tasks:
            for j in range(appenders):
                tasks.start_soon(appender, j)
        seconds = time.perf_counter() - start
    return seconds, latencies, table.metrics


# ---------------------------------------------------------------------------------------------
# The section


async def run_durable(args: argparse.Namespace, workdir: Path) -> list[str]:
    rows_total = args.batches * args.rows
    source = reference_table(rows_total)
    batches = [source.slice(i * args.rows, args.rows) for i in range(args.batches)]
    verdicts: list[str] = []
    pool = await ProcessPool.open(2)
    try:
        executors: dict[str, Any] = {"inline": InlineExecutor(), "pool(2)": pool}

        # 1. encode alone
        ours, theirs = encode_alone(batches)
        enc_ratio = statistics.median(theirs) / statistics.median(ours)
        print(f"## 3. Durable streaming modes ({args.batches:,} batches of {args.rows:,} rows)\n")
        print("### Encode one batch into memory (this thread, batch by batch in turn)\n")
        print(
            markdown_table(
                ["encoder", "p50 ms", "p99 ms", "rows/s (p50)", "vs pyarrow"],
                [
                    [
                        "streamwrite row_group_jobs + run_job",
                        ms(statistics.median(ours)),
                        ms(quantile(ours, 0.99)),
                        f"{args.rows / statistics.median(ours):,.0f}",
                        fmt_ratio(enc_ratio),
                    ],
                    [
                        "pyarrow ParquetWriter.write_table",
                        ms(statistics.median(theirs)),
                        ms(quantile(theirs, 0.99)),
                        f"{args.rows / statistics.median(theirs):,.0f}",
                        "1.00x",
                    ],
                ],
            )
            + "\n"
        )
        verdicts.append(
            verdict(
                f"encode of one {args.rows:,}-row batch >= {ENCODE_TARGET}x pyarrow",
                fmt_ratio(enc_ratio),
                enc_ratio >= ENCODE_TARGET,
            )
        )

        # 2. sequential durable
        rows_table = []
        breakdown = None
        for name, executor in executors.items():
            cpu0 = cpu_seconds(pool)
            directory = workdir / f"seq-{name}"
            directory.mkdir()
            ours, theirs, metrics, syncs = await sequential(batches, directory, executor)
            cpu = cpu_seconds(pool) - cpu0
            ratio = sum(theirs) / sum(ours)
            rows_table.append(
                [
                    f"streamwrite table, {name}",
                    f"{rows_total / sum(ours):,.0f}",
                    ms(statistics.median(ours)),
                    ms(quantile(ours, 0.99)),
                    fmt_ratio(ratio),
                    f"{cpu / rows_total * 1e6:.2f} (with the peer's)",
                ]
            )
            rows_table.append(
                [
                    f"  pyarrow file per batch + fsync file + dir (same run as {name})",
                    f"{rows_total / sum(theirs):,.0f}",
                    ms(statistics.median(theirs)),
                    ms(quantile(theirs, 0.99)),
                    "1.00x",
                    "",
                ]
            )
            verdicts.append(
                verdict(
                    f"sequential durable ({name}) >= {SEQUENTIAL_TARGET}x pyarrow file per "
                    "batch + fsync",
                    fmt_ratio(ratio),
                    ratio >= SEQUENTIAL_TARGET,
                )
            )
            p99 = quantile(ours, 0.99)
            verdicts.append(
                verdict(
                    f"sequential durable ({name}) commit p99 <= 10 ms",
                    f"{ms(p99)} ms",
                    p99 <= P99_TARGET_SECONDS,
                )
            )
            if name == "inline":
                breakdown = (metrics, syncs, len(batches))
        print("### Sequential durable commits (batch by batch in turn with the peer)\n")
        print(
            markdown_table(
                ["writer", "rows/s", "p50 ms", "p99 ms", "vs peer", "CPU s / M rows"], rows_table
            )
            + "\n"
        )
        if breakdown is not None:
            metrics, syncs, n = breakdown
            parts = [
                ["encode (executor)", ms(metrics.encode_seconds / n)],
                ["segments: write + sync (data, _pm)", ms(metrics.segment_seconds / n)],
                ["_txn publish", ms(metrics.publish_seconds / n)],
                ["whole commit (append call)", ms(statistics.mean(metrics.commit_seconds))],
            ]
            for (call, kind), seconds in sorted(syncs.items()):
                parts.append(
                    [f"  {call}({kind}): {len(seconds) / n:.1f} per commit", ms(sum(seconds) / n)]
                )
            print(
                "Per-commit breakdown, sequential inline run (mean ms per commit; the syncs "
                "are inside the segment and publish rows):\n"
            )
            print(markdown_table(["part", "ms per commit"], parts) + "\n")

        # 3. pipelined durable
        rows_table = []
        for name, executor in executors.items():
            before = parquet_writer(batches, workdir / f"pw-{name}-a.parquet")
            cpu0 = cpu_seconds(pool)
            seconds = await pipelined(batches, workdir / f"pipe-{name}", executor)
            cpu = cpu_seconds(pool) - cpu0
            after = parquet_writer(batches, workdir / f"pw-{name}-b.parquet")
            peer = (before + after) / 2
            ratio = peer / seconds
            rows_table.append(
                [
                    f"streamwrite pipelined, {name}",
                    f"{rows_total / seconds:,.0f}",
                    f"{rows_total / peer:,.0f}",
                    fmt_ratio(ratio),
                    f"{cpu / rows_total * 1e6:.2f}",
                ]
            )
            verdicts.append(
                verdict(
                    f"pipelined durable ({name}) >= {PIPELINED_TARGET}x pyarrow "
                    "ParquetWriter (not durable)",
                    fmt_ratio(ratio),
                    ratio >= PIPELINED_TARGET,
                )
            )
        print("### Pipelined durable appends (wait=False, every ticket awaited)\n")
        print(
            markdown_table(
                [
                    "writer",
                    "rows/s",
                    "ParquetWriter rows/s (same run)",
                    "vs ParquetWriter",
                    "CPU s / M rows",
                ],
                rows_table,
            )
            + "\n"
        )

        # 4. group commit
        rows_table = []
        for window in (1, args.group_window):
            for name, executor in executors.items():
                cpu0 = cpu_seconds(pool)
                seconds, latencies, metrics = await group_commit(
                    source,
                    workdir / f"group-{name}-{window}",
                    executor,
                    args.appenders,
                    args.group_rows,
                    window,
                )
                cpu = cpu_seconds(pool) - cpu0
                speed = rows_total / seconds
                mode = "wait=True" if window == 1 else f"{window} tickets in flight per task"
                rows_table.append(
                    [
                        f"streamwrite group commit, {name}, {mode}",
                        f"{speed:,.0f}",
                        ms(quantile(latencies, 0.5)),
                        ms(quantile(latencies, 0.99)),
                        f"{metrics.commits:,}",
                        f"{metrics.appends_committed / metrics.commits:.1f}",
                        f"{cpu / rows_total * 1e6:.2f}",
                    ]
                )
                if window == 1:
                    verdicts.append(
                        verdict(
                            f"group commit ({name}), {args.appenders} appenders x "
                            f"{args.group_rows:,} rows, wait=True, >= 1.5M rows/s durable",
                            f"{speed:,.0f}",
                            speed >= GROUP_TARGET_ROWS_PER_SECOND,
                        )
                    )
        print(
            f"### Group commit: {args.appenders} concurrent appenders x {args.group_rows:,} "
            "rows, each its own app id (latency: from the append call to durable)\n"
        )
        print(
            markdown_table(
                [
                    "writer",
                    "rows/s (durable)",
                    "append p50 ms",
                    "append p99 ms",
                    "commits",
                    "appends per commit",
                    "CPU s / M rows",
                ],
                rows_table,
            )
            + "\n"
        )
    finally:
        await pool.aclose()
    return verdicts
