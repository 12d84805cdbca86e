"""Sections 1 and 3 of ``bench_compact.py``: re-encoding small commits (``--only reencode``),
with the read/encode breakdown and the optional profile."""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pyarrow as pa
import pyarrow.parquet as pq
from _common import (
    fmt_bytes,
    fmt_ratio,
    markdown_table,
)

import streamwrite
from compact.common import (
    NO_SWEEP,
    REENCODE_TARGET,
    Layout,
    Timed,
    Variant,
    build_table,
    compaction_variant,
    fresh_copy,
    layout_of,
    merge_table,
    pass_fail,
    pyarrow_merge,
    round_robin,
    segment_source,
)
from streamwrite.options import DEFAULT_ROW_GROUP_SIZE
from streamwrite.pool.process import ProcessPool
from streamwrite.reader.file import ParquetFile
from streamwrite.table.api import open_table
from streamwrite.testing import reference_table


async def run_reencode(
    args: argparse.Namespace, workdir: Path
) -> tuple[list[str], list[list[str]]]:
    start = time.perf_counter()
    data = reference_table(args.batches * args.rows)
    batches = [data.slice(i * args.rows, args.rows) for i in range(args.batches)]
    built = await build_table(workdir / "base", batches)
    before = await layout_of(workdir / "base")
    target = DEFAULT_ROW_GROUP_SIZE
    print(
        f"## 1. Re-encoding compaction: {args.batches:,} commits of {args.rows:,} rows\n\n"
        f"Input table built by {args.batches:,} appends in {built:.1f} s (total "
        f"{time.perf_counter() - start:.1f} s with the reference table; not timed): "
        f"{before.segments} segments, {before.row_groups:,} row groups, "
        f"{fmt_bytes(before.committed)} committed bytes of which {fmt_bytes(before.dead)} dead. "
        f"Target row groups: {target:,} rows.\n"
    )
    sys.stdout.flush()
    checked: set[str] = set()
    pool = await ProcessPool.open(2)

    def compaction(name: str, executor: Any) -> Callable[[], Awaitable[tuple[float, Any]]]:
        return compaction_variant(workdir, data, checked, name, None, executor)

    def pyarrow_variant(use_threads: bool) -> Callable[[], Awaitable[tuple[float, Any]]]:
        async def go() -> tuple[float, Any]:
            out = workdir / "pyarrow.parquet"
            out.unlink(missing_ok=True)
            os.sync()
            with Timed() as timed:
                size = await anyio.to_thread.run_sync(
                    pyarrow_merge, before.sources, out, target, use_threads
                )
            seconds = timed.seconds
            meta = pq.ParquetFile(out).metadata
            assert meta.num_rows == data.num_rows
            return seconds, (meta.num_row_groups, size)

        return go

    variants = [
        Variant("compact(), inline", compaction("inline", None)),
        Variant("compact(), ProcessPool(2)", compaction("pool", pool)),
        Variant("pyarrow read + write", pyarrow_variant(True)),
        Variant("pyarrow read + write, use_threads=False", pyarrow_variant(False)),
    ]
    try:
        await round_robin(variants, args.repeat)
    finally:
        await pool.aclose()
    after = await layout_of(workdir / "work")  # the last compaction's result
    assert pq.read_table(workdir / "pyarrow.parquet").equals(data)
    print(
        merge_table(variants, before.committed, data.num_rows, "pyarrow read + write") + "\n\n"
        f"Best of {args.repeat}, round-robin; MB/s = {fmt_bytes(before.committed)} input bytes "
        "/ seconds; CPU s = user + system seconds of the timed part (this process, all threads, "
        "and the pool's workers), least of the runs (less sensitive to a loaded machine than "
        "wall time). Each compacted table was read back equal to the input once per executor; "
        "pyarrow's output too.\n"
    )
    inline = variants[0]
    pooled = variants[1]
    reference = variants[2]
    ratio = reference.best / inline.best
    ratio_pool = reference.best / pooled.best
    verdicts = [
        f"- re-encoding compaction MB/s >= {REENCODE_TARGET}x pyarrow read + write: inline "
        f"{fmt_ratio(ratio)} -> {pass_fail(ratio >= REENCODE_TARGET)}; ProcessPool(2) "
        f"{fmt_ratio(ratio_pool)} -> {pass_fail(ratio_pool >= REENCODE_TARGET)}"
    ]
    dead = [before.row(f"small commits, before ({args.batches:,} commits)")]
    dead.append(after.row("small commits, after compact()"))
    if not args.no_breakdown:
        print(breakdown(before, data, workdir, target) + "\n")
        sys.stdout.flush()
    if args.profile:
        copy = fresh_copy(workdir / "base", workdir / "work")
        print(
            f"### cProfile of one inline re-encoding compaction ({data.num_rows:,} rows; "
            "worker-thread calls run in the main thread while profiling)\n"
        )
        print("```\n" + (await profile_compaction(copy, args.profile)).strip() + "\n```\n")
    shutil.rmtree(workdir / "work", ignore_errors=True)
    shutil.rmtree(workdir / "base", ignore_errors=True)
    sys.stdout.flush()
    return verdicts, dead


def _read_per_segment(sources: list[tuple[Path, int]]) -> int:
    """Read every row group with one ``ParquetFile`` per segment."""
    rows = 0
    for path, size in sources:
        with ParquetFile(path.parent, snapshot=size) as pf:
            for index in range(len(pf.thrift_metadata.row_groups or [])):
                rows += pf.read_row_group(index).num_rows
    return rows


def breakdown(before: Layout, data: pa.Table, workdir: Path, target: int) -> str:
    """Time the parts of a re-encoding compaction apart (one run each, synchronous)."""
    parts: list[tuple[str, Callable[[], Any]]] = [
        (
            "streamwrite read, one ParquetFile per segment (as compact() reads)",
            lambda: _read_per_segment(before.sources),
        ),
        (
            "streamwrite.write_table of the rows (encode + write, no fsync)",
            lambda: streamwrite.write_table(
                data, workdir / "encode.parquet", row_group_size=target
            ),
        ),
        (
            "pyarrow read of the segments (pq.read_table, threads)",
            lambda: [pq.read_table(segment_source(p, s)) for p, s in before.sources],
        ),
        (
            'pq.write_table(compression="zstd") of the rows',
            lambda: pq.write_table(
                data, workdir / "encode_pa.parquet", compression="zstd", row_group_size=target
            ),
        ),
    ]
    rows = []
    for name, fn in parts:
        start = time.perf_counter()
        fn()
        seconds = time.perf_counter() - start
        rows.append([name, f"{seconds:.3f}", f"{data.num_rows / seconds:,.0f}"])
    (workdir / "encode.parquet").unlink(missing_ok=True)
    (workdir / "encode_pa.parquet").unlink(missing_ok=True)
    return (
        "Where the time goes (one run each, after the timed runs, same input; not round-robin):"
        "\n\n" + markdown_table(["part", "seconds", "rows/s"], rows)
    )


async def profile_compaction(directory: Path, top: int) -> str:
    """cProfile one inline ``compact()``. Compaction reads and encodes in worker threads
    (``anyio.to_thread.run_sync``), which cProfile does not follow, so while profiling that
    function runs its argument in the calling thread."""
    original = anyio.to_thread.run_sync

    async def in_this_thread(fn: Callable[..., Any], *args: Any, **_: Any) -> Any:
        return fn(*args)

    table = await open_table(directory, compaction=NO_SWEEP, compaction_interval=None)
    profiler = cProfile.Profile()
    anyio.to_thread.run_sync = in_this_thread  # type: ignore[assignment]
    try:
        start = time.perf_counter()
        profiler.enable()
        await table.compact()
        profiler.disable()
        seconds = time.perf_counter() - start
    finally:
        anyio.to_thread.run_sync = original
        await table.close()
    buf = io.StringIO()
    buf.write(f"compact() under the profiler: {seconds:.2f} s\n")
    stats = pstats.Stats(profiler, stream=buf)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return buf.getvalue()
