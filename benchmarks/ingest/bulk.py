"""Section 2 of ``bench_ingest.py``: one bulk table through the inline executor, a process
pool and a table (``--only bulk``)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
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
from ingest.stream import disk_usage
from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.encode import row_group_jobs
from streamwrite.layout.file_writer import FileWriter
from streamwrite.options import make_write_options
from streamwrite.pool.process import ProcessPool
from streamwrite.table.api import open_table
from streamwrite.testing import reference_table

BULK_TARGET = 1.0  # pool(2) rows/s / pq.write_table rows/s
TRANSFER_TARGET = 0.10  # pool transfer seconds / encode seconds
WINDOW = 2  # row groups in flight in the pooled bulk write


async def pooled_write(table: pa.Table, path: Path, pool: ProcessPool, rg_size: int) -> None:
    """``write_table`` with the row groups encoded by ``pool``, ``WINDOW`` row groups in flight,
    written in order as they complete."""
    schema = arrow_to_parquet(table.schema)
    options = make_write_options(table.schema.names, row_group_size=rg_size)
    writer = FileWriter(schema, options)
    pieces = [table.slice(s, rg_size) for s in range(0, table.num_rows, rg_size)]
    results: list[Any] = [None] * len(pieces)
    done = [anyio.Event() for _ in pieces]
    limiter = anyio.Semaphore(WINDOW)
    with open(path, "wb") as f:
        f.write(writer.start())

        async def encode(i: int) -> None:
            try:
                results[i] = await pool.run_all(row_group_jobs(pieces[i], schema, options))
            finally:
                done[i].set()

        async with anyio.create_task_group() as tg:

            async def produce() -> None:
                for i in range(len(pieces)):
                    await limiter.acquire()
                    tg.start_soon(encode, i)

            tg.start_soon(produce)
            for i, piece in enumerate(pieces):
                await done[i].wait()
                f.write(writer.add_row_group(results[i], piece.num_rows))
                results[i] = None
                limiter.release()
        f.write(writer.footer())


async def through_table(table: pa.Table, directory: Path, pool: ProcessPool, rg: int) -> None:
    t = await open_table(directory, table.schema, executor=pool, row_group_size=rg)
    await t.append(table)
    await t.flush()
    await t.close()


async def run_bulk(args: argparse.Namespace, workdir: Path) -> list[str]:
    start = time.perf_counter()
    table = reference_table(args.bulk_rows)
    rg = args.row_group_size
    print(
        f"Bulk table: {args.bulk_rows:,} rows, {table.nbytes / MB:,.0f} MB of Arrow buffers, "
        f"row groups of {rg:,} rows (built in {time.perf_counter() - start:.1f} s, not timed).\n"
    )
    started = time.perf_counter()
    pool1 = await ProcessPool.open(1)
    pool2 = await ProcessPool.open(2)
    print(f"Pool start-up (1 + 2 workers, not timed): {time.perf_counter() - started:.2f} s.\n")
    counters: dict[str, tuple[float, float, float]] = {}

    def measured(name: str, pool: ProcessPool, fn: Callable[[], Awaitable[None]]) -> Any:
        async def go() -> None:
            before = (pool.transfer_seconds, pool.receive_seconds, pool.encode_seconds)
            await fn()
            after = (pool.transfer_seconds, pool.receive_seconds, pool.encode_seconds)
            counters[name] = tuple(a - b for a, b in zip(after, before, strict=True))  # type: ignore[assignment]

        return go

    paths = {
        "streamwrite.write_table (inline, 1 process)": workdir / "bulk_inline.parquet",
        "streamwrite + ProcessPool(1)": workdir / "bulk_pool1.parquet",
        "streamwrite + ProcessPool(2)": workdir / "bulk_pool2.parquet",
        "streamwrite table + ProcessPool(2) (append + flush, fsyncs)": workdir / "bulk_table",
        'pq.write_table(compression="zstd")': workdir / "bulk_pyarrow.parquet",
    }
    names = list(paths)

    async def inline() -> None:
        await anyio.to_thread.run_sync(
            lambda: streamwrite.write_table(table, paths[names[0]], row_group_size=rg)
        )

    async def pyarrow_write() -> None:
        await anyio.to_thread.run_sync(
            lambda: pq.write_table(table, paths[names[4]], compression="zstd", row_group_size=rg)
        )

    async def table_path() -> None:
        import shutil

        shutil.rmtree(paths[names[3]], ignore_errors=True)
        await through_table(table, paths[names[3]], pool2, rg)

    variants: dict[str, Callable[[], Awaitable[None]]] = {
        names[0]: inline,
        names[1]: measured(
            names[1], pool1, lambda: pooled_write(table, paths[names[1]], pool1, rg)
        ),
        names[2]: measured(
            names[2], pool2, lambda: pooled_write(table, paths[names[2]], pool2, rg)
        ),
        names[3]: measured(names[3], pool2, table_path),
        names[4]: pyarrow_write,
    }
    best = {name: float("inf") for name in variants}
    best_counters: dict[str, tuple[float, float, float]] = {}
    try:
        for _ in range(max(1, args.repeat)):
            for name, fn in variants.items():
                start = time.perf_counter()
                await fn()
                seconds = time.perf_counter() - start
                if seconds < best[name]:
                    best[name] = seconds
                    if name in counters:
                        best_counters[name] = counters[name]
    finally:
        await pool1.aclose()
        await pool2.aclose()

    same = (
        paths[names[1]].read_bytes() == paths[names[0]].read_bytes() == paths[names[2]].read_bytes()
    )
    back = pq.read_table(paths[names[2]])
    assert back.equals(table), "pyarrow reads the pooled file differently"
    assert streamwrite.read_table(paths[names[3]]).num_rows == table.num_rows

    reference = table.num_rows / best[names[4]]
    rows = []
    for name in names:
        seconds = best[name]
        path = paths[name]
        size = disk_usage(path)[1] if path.is_dir() else path.stat().st_size
        c = best_counters.get(name)
        rows.append(
            [
                name,
                f"{seconds:.3f}",
                f"{table.num_rows / seconds:,.0f}",
                fmt_bytes(size),
                fmt_ratio(table.num_rows / seconds / reference),
                f"{c[2]:.2f}" if c else "",
                f"{c[0]:.3f}" if c else "",
                f"{c[1]:.3f}" if c else "",
                f"{c[0] / c[2]:.1%}" if c else "",
                f"{(c[0] + c[1]) / c[2]:.1%}" if c else "",
            ]
        )
    print(f"## 2. Bulk: {table.num_rows:,} rows, best of {args.repeat}, round-robin\n")
    print(
        markdown_table(
            [
                "writer",
                "seconds (best)",
                "rows/s",
                "bytes",
                "vs pq.write_table",
                "worker encode s",
                "transfer s",
                "receive s",
                "transfer/encode",
                "(transfer+receive)/encode",
            ],
            rows,
        )
        + "\n"
    )
    print(
        f"Pool counters are those of the best run. The inline, pool(1) and pool(2) files are "
        f"{'byte-identical' if same else 'NOT byte-identical'}; pyarrow reads the pool(2) file "
        "equal to the input.\n"
    )
    ratio = best[names[4]] / best[names[2]]
    c2 = best_counters[names[2]]
    overhead = c2[0] / c2[2]
    return [
        verdict(
            f"bulk with 2 workers >= {BULK_TARGET}x pq.write_table",
            fmt_ratio(ratio),
            ratio >= BULK_TARGET,
        ),
        f"- pool transfer overhead < {TRANSFER_TARGET:.0%} of encode time (pool(2) bulk): "
        f"transfer {overhead:.1%} -> {'PASS' if overhead < TRANSFER_TARGET else 'FAIL'} "
        f"(transfer + receive {(c2[0] + c2[1]) / c2[2]:.1%})",
    ]
