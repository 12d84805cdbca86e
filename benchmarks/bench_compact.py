"""Compaction benchmark: merge speed against pyarrow, raw copy against re-encoding, dead bytes,
and streaming ingest with the background compactor running.

Every table is built by appends before timing (one durable commit per batch:
``await table.append(batch, app_id="bench", batch_id=i)``), from slices of one
``reference_table`` (its rows span ~5.5 hours of one day, so ``partition_by="day"`` on ``ts``
makes one partition). Tables are opened with ``CompactionPolicy(grace_seconds=0)`` so that
compaction deletes the segments it replaced at once. Compaction is destructive, so each timed
``compact()`` runs on a fresh copy of the built table (``shutil.copytree`` then ``os.sync()``,
not timed; the copy is in the page cache, as are the files pyarrow reads). Only
``await table.compact(...)`` is timed: opening the table is not.

**1. Re-encoding** (``reencode``): ``--batches`` commits of ``--rows`` rows (default 1,000 x 10k),
``segment_row_groups`` default (128), so the partition holds ~8 segments of 10k-row row groups,
each with the superseded footers of its commits (dead bytes). Variants, round-robin, best of
``--repeat``:

- **compact(), inline**: ``await table.compact()`` with the default policy (explicit: every
  segment is merged) and the table's default inline executor: every row group is small, so all
  are read with streamwrite's reader and re-encoded into ``row_group_size`` (1,048,576) rows,
  zstd, committed every 64 MiB (fsync) and swapped in through ``_txn``.
- **compact(), ProcessPool(2)**: the same with ``executor=ProcessPool(2)`` (started outside
  timing): row groups are still read in the parent.
- **pyarrow read + write**: ``pq.read_table`` of every segment's ``data.parquet`` at its
  committed size (the same files compaction reads; pyarrow's default threads), concatenated,
  then ``pq.write_table(..., compression="zstd", row_group_size=1,048,576)`` to one file and
  ``os.fsync`` of it. No ``_txn``, no live-file sidecar: the speed reference of the target.
  A second row does the same with ``use_threads=False`` (for context: compaction reads with
  one thread).

MB/s = input bytes (the committed ``data.parquet`` sizes of the merged segments, dead footers
included: ``CompactionResult.bytes_before``) / seconds, the same numerator for every variant.

**2. Raw copy vs re-encode** (``raw``): ``--raw-rows`` rows appended as batches of
``--raw-row-group`` rows with ``row_group_size=--raw-row-group`` and ``segment_row_groups=2``:
segments of two row groups already at the target size. An explicit ``compact()`` with the
default policy merges nothing here (no small row group, dead bytes under the limits: shown in
the output), so every variant sets ``dead_bytes=1`` (each segment's superseded footer then
counts as work):

- **raw copy**: ``CompactionPolicy(dead_bytes=1)``: row groups at the target size are copied
  without decoding (``layout/raw_copy.py``); ``CompactionResult.raw_row_groups`` is shown.
- **re-encode**: ``CompactionPolicy(dead_bytes=1, target_row_group_rows=rg + 1,
  small_fraction=1.0)``: the same row groups count as small, so they are decoded and
  re-encoded into (almost) the same layout. The target ratio is raw copy / this.
- **re-encode, sort_by_timestamp**: ``CompactionPolicy(dead_bytes=1, sort_by_timestamp=True)``
  (everything re-encoded after a sort of the whole run by ``ts``).
- **pyarrow read + write**: as in section 1.

**3. Dead bytes**: for the tables of sections 1 and 2, before and after one compaction: the
sum of ``SegmentInfo.dead_bytes`` and of the committed sizes from ``compaction_status()``,
segments, row groups, and bytes of every file under the table directory.

**4. Streaming with compaction** (``stream``): the streaming benchmark of ``bench_ingest``
(``--batches`` batches of ``--rows`` rows, one durable commit per batch) on a table opened with
``async with``, with the inline executor and with ``ProcessPool(2)`` (``--stream-executor``),
each with and without the background compactor (``compaction_interval=--interval`` s,
``CompactionPolicy(idle_seconds=0, min_small_row_groups=--min-small, grace_seconds=0)``: a
round takes the whole partition, newest segment included, once ``--min-small`` small row
groups gathered). The compactor shares the process and the event loop with the appends, so
the variants cannot be interleaved batch by batch (one table's compactor would slow the
other's commits): they run as whole phases, alternating ``--stream-repeat`` times (per
executor: without, with; then again), each on a new table; the best phase of each variant is
compared. rows/s = rows / wall time of the append loop and the close. Latency = each
``append`` call. Compactions = ``table.metrics.compactions``; their seconds, rows merged and
raw / re-encoded row groups are summed from the ``CompactionResult`` of each round (recorded by
a wrapper of ``streamwrite.compaction.policy.compact_partition`` installed during the phase). A
phase that fails (an exception out of ``append``) is reported and the others go on. After each
phase the table is read back and compared with its input.

The re-encoding section also times its parts apart, once each (``--no-breakdown`` skips it):
streamwrite's reader as ``compact()`` uses it (one ``ParquetFile`` per segment);
``streamwrite.write_table`` of the rows; pyarrow's read and write alone.
``--profile TOP`` cProfiles one inline compaction of the section 1 table.

Run from the repository root::

    .venv/bin/python benchmarks/bench_compact.py                  # 1,000 x 10k, 10M raw rows
    .venv/bin/python benchmarks/bench_compact.py --quick          # seconds
    .venv/bin/python benchmarks/bench_compact.py --only raw
    .venv/bin/python benchmarks/bench_compact.py --only reencode --profile 30
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import io
import os
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pyarrow as pa
import pyarrow.parquet as pq
from _common import command_line, fmt_bytes, fmt_ratio, machine_lines, markdown_table

import streamwrite
import streamwrite.compaction.policy as compaction_module
from streamwrite.compaction.policy import CompactionPolicy, CompactionResult
from streamwrite.options import DEFAULT_ROW_GROUP_SIZE
from streamwrite.pool.process import ProcessPool
from streamwrite.reader.file import ParquetFile
from streamwrite.table.api import Table, open_table
from streamwrite.testing import reference_table

MB = 1_000_000
REENCODE_TARGET = 1.0  # compact() MB/s / pyarrow read + write MB/s
RAW_TARGET = 5.0  # raw copy MB/s / re-encode MB/s
STREAM_TARGET = 0.8  # rows/s with compaction / rows/s without ("within 20%")
LATENCY_TARGET = 1.2  # p50 and p99 with compaction / without
NO_SWEEP = CompactionPolicy(grace_seconds=0)

# ---------------------------------------------------------------------------------------------
# Helpers


def _disk(directory: Path) -> tuple[int, int]:
    """(files, bytes of content) under ``directory``."""
    files = [p for p in directory.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


async def build_table(
    directory: Path,
    batches: list[pa.Table],
    **options: Any,
) -> float:
    """Create a table at ``directory`` and commit each batch (app id + batch id).

    Returns:
        Seconds taken.
    """
    started = time.perf_counter()
    table = await open_table(
        directory,
        batches[0].schema,
        timestamp="ts",
        partition_by="day",
        compaction=NO_SWEEP,
        compaction_interval=None,
        **options,
    )
    try:
        for i, batch in enumerate(batches):
            await table.append(batch, app_id="bench", batch_id=i)
    finally:
        await table.close()
    return time.perf_counter() - started


def fresh_copy(source: Path, target: Path) -> Path:
    """``source`` copied to ``target`` (replaced), written back to disk."""
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    os.sync()
    return target


class Layout:
    """A table's segments as ``compaction_status()`` shows them, and its files."""

    def __init__(self, statuses: list[Any], directory: Path) -> None:
        infos = [info for status in statuses for info in status.segments]
        self.segments = len(infos)
        self.row_groups = sum(len(info.row_group_rows) for info in infos)
        self.num_rows = sum(info.num_rows for info in infos)
        self.committed = sum(info.size for info in infos)
        self.dead = sum(info.dead_bytes for info in infos)
        self.files, self.disk = _disk(directory)
        self.sources = [
            (directory / status.partition / info.name / "data.parquet", info.size)
            for status in statuses
            for info in status.segments
        ]

    def row(self, name: str) -> list[str]:
        return [
            name,
            f"{self.segments:,}",
            f"{self.row_groups:,}",
            f"{self.num_rows:,}",
            fmt_bytes(self.committed),
            fmt_bytes(self.dead),
            f"{self.dead / self.committed:.1%}" if self.committed else "",
            f"{self.files:,}",
            fmt_bytes(self.disk),
        ]


LAYOUT_HEADERS = [
    "table",
    "segments",
    "row groups",
    "rows",
    "committed bytes",
    "dead bytes",
    "dead %",
    "files",
    "bytes on disk",
]


async def layout_of(directory: Path, **options: Any) -> Layout:
    table = await open_table(directory, compaction=NO_SWEEP, compaction_interval=None, **options)
    try:
        return Layout(await table.compaction_status(), directory)
    finally:
        await table.close()


async def timed_compact(
    directory: Path, policy: CompactionPolicy | None, executor: Any = None, **options: Any
) -> tuple[float, list[CompactionResult]]:
    """Open the table at ``directory`` (not timed; ``options``: its write options, which
    ``_txn`` does not keep) and time one ``compact()``."""
    table = await open_table(
        directory, compaction=NO_SWEEP, compaction_interval=None, executor=executor, **options
    )
    try:
        start = time.perf_counter()
        results = await table.compact(policy=policy)
        seconds = time.perf_counter() - start
    finally:
        await table.close()
    return seconds, results


def compaction_variant(
    workdir: Path,
    data: pa.Table,
    checked: set[str],
    name: str,
    policy: CompactionPolicy | None,
    executor: Any = None,
    **options: Any,
) -> Callable[[], Awaitable[tuple[float, Any]]]:
    """One timed ``compact()`` of a fresh copy of ``workdir/base`` (its output is checked
    against ``data`` the first time ``name`` runs)."""

    async def go() -> tuple[float, Any]:
        copy = fresh_copy(workdir / "base", workdir / "work")
        seconds, results = await timed_compact(copy, policy, executor, **options)
        assert len(results) == 1 and results[0].num_rows == data.num_rows, results
        if name not in checked:
            checked.add(name)
            _check_compacted(copy, data)
        return seconds, results

    return go


def _segment_source(path: Path, size: int) -> Any:
    """``data.parquet`` for pyarrow at its committed ``size`` (the path when that is the whole
    file, which it is for every closed segment)."""
    if path.stat().st_size == size:
        return path
    with open(path, "rb") as f:
        return pa.BufferReader(f.read(size))


def pyarrow_merge(
    sources: list[tuple[Path, int]], out: Path, row_group_size: int, use_threads: bool
) -> int:
    """Read every segment with pyarrow, write one zstd file, fsync it.

    Returns:
        The output file's size.
    """
    table = pa.concat_tables(
        [pq.read_table(_segment_source(p, s), use_threads=use_threads) for p, s in sources]
    )
    pq.write_table(table, out, compression="zstd", row_group_size=row_group_size)
    fd = os.open(out, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return out.stat().st_size


class Variant:
    """One way of merging the same input; keeps its best time and what it reported."""

    def __init__(self, name: str, fn: Callable[[], Awaitable[tuple[float, Any]]]) -> None:
        self.name = name
        self.fn = fn
        self.best = float("inf")
        self.times: list[float] = []
        self.detail: Any = None

    async def run(self) -> None:
        seconds, detail = await self.fn()
        self.times.append(seconds)
        if seconds < self.best:
            self.best = seconds
            self.detail = detail


async def round_robin(variants: list[Variant], repeat: int) -> None:
    for r in range(max(1, repeat)):
        for variant in variants:
            await variant.run()
        print(f"  ... round {r + 1} of {repeat} done", file=sys.stderr, flush=True)


def _result_cells(detail: Any) -> tuple[str, str, str, str]:
    """(raw row groups, re-encoded row groups, output row groups, output bytes)."""
    if isinstance(detail, list):
        results: list[CompactionResult] = detail
        return (
            f"{sum(r.raw_row_groups for r in results):,}",
            f"{sum(r.reencoded_row_groups for r in results):,}",
            f"{sum(r.raw_row_groups + r.reencoded_row_groups for r in results):,}",
            fmt_bytes(sum(r.segment.size for r in results)),
        )
    if isinstance(detail, tuple):  # pyarrow: (row groups, bytes)
        return "", "", f"{detail[0]:,}", fmt_bytes(detail[1])
    return "", "", "", ""


def merge_table(variants: list[Variant], input_bytes: int, num_rows: int, reference: str) -> str:
    base = next(v for v in variants if v.name == reference)
    rows = []
    for v in variants:
        raw, reencoded, out_rgs, out_bytes = _result_cells(v.detail)
        rows.append(
            [
                v.name,
                f"{v.best:.3f}",
                " / ".join(f"{t:.2f}" for t in v.times),
                f"{input_bytes / v.best / MB:,.1f}",
                f"{num_rows / v.best:,.0f}",
                raw,
                reencoded,
                out_rgs,
                out_bytes,
                fmt_ratio(base.best / v.best),
            ]
        )
    return markdown_table(
        [
            "variant",
            "seconds (best)",
            "all runs s",
            "MB/s (input)",
            "rows/s",
            "raw row groups",
            "re-encoded row groups",
            "output row groups",
            "output bytes",
            f"vs {reference}",
        ],
        rows,
    )


def _check_compacted(directory: Path, expected: pa.Table) -> None:
    back = streamwrite.read_table(directory)
    assert back.num_rows == expected.num_rows, (back.num_rows, expected.num_rows)
    assert back.equals(expected), "the compacted table reads differently from its input"


# ---------------------------------------------------------------------------------------------
# Sections 1 and 3: re-encoding small commits


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
            start = time.perf_counter()
            size = await anyio.to_thread.run_sync(
                pyarrow_merge, before.sources, out, target, use_threads
            )
            seconds = time.perf_counter() - start
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
        "/ seconds. Each compacted table was read back equal to the input once per executor; "
        "pyarrow's output too.\n"
    )
    inline = variants[0]
    pooled = variants[1]
    reference = variants[2]
    ratio = reference.best / inline.best
    ratio_pool = reference.best / pooled.best
    verdicts = [
        f"- re-encoding compaction MB/s >= {REENCODE_TARGET}x pyarrow read + write: inline "
        f"{fmt_ratio(ratio)} -> {_verdict(ratio >= REENCODE_TARGET)}; ProcessPool(2) "
        f"{fmt_ratio(ratio_pool)} -> {_verdict(ratio_pool >= REENCODE_TARGET)}"
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
            lambda: [pq.read_table(_segment_source(p, s)) for p, s in before.sources],
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


# ---------------------------------------------------------------------------------------------
# Sections 2 and 3: raw copy


async def run_raw(args: argparse.Namespace, workdir: Path) -> tuple[list[str], list[list[str]]]:
    rg = args.raw_row_group
    num_batches = max(2, args.raw_rows // rg)
    start = time.perf_counter()
    data = reference_table(num_batches * rg)
    batches = [data.slice(i * rg, rg) for i in range(num_batches)]
    built = await build_table(workdir / "base", batches, row_group_size=rg, segment_row_groups=2)
    before = await layout_of(workdir / "base", row_group_size=rg)
    copy = fresh_copy(workdir / "base", workdir / "work")
    default_results = (await timed_compact(copy, None, row_group_size=rg))[1]
    print(
        f"## 2. Raw copy vs re-encode: {num_batches} commits of {rg:,}-row row groups\n\n"
        f"Input table built in {built:.1f} s (total {time.perf_counter() - start:.1f} s with the "
        f"reference table; not timed): {before.segments} segments of 2 row groups "
        f"(`row_group_size={rg:,}`, `segment_row_groups=2`), "
        f"{fmt_bytes(before.committed)} committed bytes, {fmt_bytes(before.dead)} dead. "
        f"`compact()` with the default policy on it: {len(default_results)} partition(s) "
        f"compacted{' (nothing to merge)' if not default_results else ''}.\n"
    )
    sys.stdout.flush()
    checked: set[str] = set()

    def compaction(name: str, policy: CompactionPolicy) -> Callable[[], Awaitable[Any]]:
        return compaction_variant(workdir, data, checked, name, policy, row_group_size=rg)

    async def pyarrow_variant() -> tuple[float, Any]:
        out = workdir / "pyarrow.parquet"
        out.unlink(missing_ok=True)
        os.sync()
        start = time.perf_counter()
        size = await anyio.to_thread.run_sync(pyarrow_merge, before.sources, out, rg, True)
        seconds = time.perf_counter() - start
        return seconds, (pq.ParquetFile(out).metadata.num_row_groups, size)

    variants = [
        Variant("raw copy", compaction("raw", CompactionPolicy(dead_bytes=1))),
        Variant(
            "re-encode",
            compaction(
                "reencode",
                CompactionPolicy(dead_bytes=1, target_row_group_rows=rg + 1, small_fraction=1.0),
            ),
        ),
        Variant(
            "re-encode, sort_by_timestamp",
            compaction("sorted", CompactionPolicy(dead_bytes=1, sort_by_timestamp=True)),
        ),
        Variant("pyarrow read + write", pyarrow_variant),
    ]
    await round_robin(variants, args.repeat)
    after = await layout_of(workdir / "work", row_group_size=rg)  # the last (sorted) variant
    print(
        merge_table(variants, before.committed, data.num_rows, "re-encode") + "\n\n"
        f"Best of {args.repeat}, round-robin; MB/s = {fmt_bytes(before.committed)} input bytes "
        "/ seconds. Every compacted table was read back equal to the input once.\n"
    )
    raw, reencode = variants[0], variants[1]
    ratio = reencode.best / raw.best
    raw_rgs = sum(r.raw_row_groups for r in raw.detail)
    verdicts = [
        f"- raw copy >= {RAW_TARGET:.0f}x faster than re-encode: {fmt_ratio(ratio)} "
        f"({raw_rgs} of {before.row_groups} row groups copied raw; vs re-encode with "
        f"sort_by_timestamp {fmt_ratio(variants[2].best / raw.best)}) -> "
        f"{_verdict(ratio >= RAW_TARGET)}"
    ]
    dead = [
        before.row(f"{rg:,}-row row groups, before"),
        after.row("... after compact() (sort_by_timestamp)"),
    ]
    shutil.rmtree(workdir / "work", ignore_errors=True)
    shutil.rmtree(workdir / "base", ignore_errors=True)
    return verdicts, dead


# ---------------------------------------------------------------------------------------------
# Section 4: streaming with the background compactor


class Phase:
    """One streaming run: per-append latencies, wall time, the table's counters."""

    def __init__(self, executor: str, compaction: bool, run: int) -> None:
        self.executor = executor
        self.compaction = compaction
        self.run = run
        self.latency: list[float] = []
        self.wall = 0.0
        self.rows = 0
        self.compactions = 0
        self.compaction_errors = 0
        self.compaction_error: str | None = None
        self.error: str | None = None
        self.layout: Layout | None = None
        self.results: list[CompactionResult] = []
        """What the background compactor did (recorded by a wrapper, see ``stream_phase``)."""

    @property
    def variant(self) -> str:
        return f"{self.executor}, {'with' if self.compaction else 'without'} compaction"

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.wall if self.wall else 0.0


async def stream_phase(
    phase: Phase,
    directory: Path,
    data: pa.Table,
    batches: list[pa.Table],
    executor: Any,
    args: argparse.Namespace,
) -> None:
    policy = CompactionPolicy(idle_seconds=0, min_small_row_groups=args.min_small, grace_seconds=0)
    table: Table | None = None
    # The background compactor's results are not kept by the table: record them through a
    # wrapper of the function its rounds call (restored below).
    original = compaction_module.compact_partition

    async def recorded(*a: Any, **k: Any) -> CompactionResult:
        result = await original(*a, **k)
        phase.results.append(result)
        return result

    compaction_module.compact_partition = recorded
    started = time.perf_counter()
    try:
        async with await open_table(
            directory,
            batches[0].schema,
            timestamp="ts",
            partition_by="day",
            executor=executor,
            compaction=policy,
            compaction_interval=args.interval if phase.compaction else None,
        ) as table:
            for i, batch in enumerate(batches):
                start = time.perf_counter()
                commit = await table.append(batch, app_id="bench", batch_id=i)
                phase.latency.append(time.perf_counter() - start)
                assert commit is not None and not commit.skipped
                phase.rows += batch.num_rows
        phase.wall = time.perf_counter() - started
    except Exception as exc:  # a library failure: reported, the other phases go on
        phase.error = f"batch {len(phase.latency):,}: {type(exc).__name__}: {exc}"
    finally:
        compaction_module.compact_partition = original
    if table is not None:
        phase.compactions = table.metrics.compactions
        phase.compaction_errors = table.metrics.compaction_errors
        if table.last_compaction_error is not None:
            error = table.last_compaction_error
            phase.compaction_error = f"{type(error).__name__}: {error}"
    if phase.error is None:
        back = streamwrite.read_table(directory)
        assert back.num_rows == phase.rows, (back.num_rows, phase.rows)
        assert back.equals(data), f"{phase.variant}: the table reads differently from its input"
        phase.layout = await layout_of(directory)


async def run_stream(args: argparse.Namespace, workdir: Path) -> list[str]:
    data = reference_table(args.batches * args.rows)
    batches = [data.slice(i * args.rows, args.rows) for i in range(args.batches)]
    phases: list[Phase] = []
    pool = await ProcessPool.open(2)
    try:
        for r in range(max(1, args.stream_repeat)):
            for executor_name in args.stream_executor:
                executor = pool if executor_name == "pool(2)" else None
                for compaction in (False, True):
                    phase = Phase(executor_name, compaction, r + 1)
                    directory = workdir / f"stream_{len(phases)}"
                    await stream_phase(phase, directory, data, batches, executor, args)
                    phases.append(phase)
                    shutil.rmtree(directory)
                    print(
                        f"  ... {phase.variant}, run {r + 1}: "
                        + (
                            f"FAILED ({phase.error})"
                            if phase.error
                            else f"{phase.rows_per_second:,.0f} rows/s"
                        )
                        + f", {phase.compactions} compactions, "
                        f"{phase.compaction_errors} compaction errors",
                        file=sys.stderr,
                        flush=True,
                    )
    finally:
        await pool.aclose()
    best: dict[str, Phase] = {}
    for phase in phases:
        if phase.error is None and (
            phase.variant not in best or phase.rows_per_second > best[phase.variant].rows_per_second
        ):
            best[phase.variant] = phase
    rows = []
    for phase in phases:
        without = best.get(f"{phase.executor}, without compaction")
        ok = phase.error is None
        layout = phase.layout
        rows.append(
            [
                f"{phase.variant}, run {phase.run}"
                + (" (best)" if best.get(phase.variant) is phase else ""),
                f"{len(phase.latency):,}",
                f"{phase.wall:.1f}" if ok else "",
                f"{phase.rows_per_second:,.0f}" if ok else "FAILED",
                _ms(_quantile(phase.latency, 0.5)) if phase.latency else "",
                _ms(_quantile(phase.latency, 0.99)) if phase.latency else "",
                _ms(max(phase.latency)) if phase.latency else "",
                f"{phase.compactions}",
                f"{sum(r.seconds for r in phase.results):.1f}" if phase.results else "",
                f"{sum(r.num_rows for r in phase.results):,}" if phase.results else "",
                f"{sum(r.raw_row_groups for r in phase.results)} / "
                f"{sum(r.reencoded_row_groups for r in phase.results)}"
                if phase.results
                else "",
                f"{phase.compaction_errors}",
                f"{layout.segments}" if layout else "",
                f"{layout.row_groups:,}" if layout else "",
                fmt_bytes(layout.dead) if layout else "",
                fmt_bytes(layout.disk) if layout else "",
                fmt_ratio(phase.rows_per_second / without.rows_per_second)
                if ok and without
                else "",
            ]
        )
    print(
        f"## 4. Streaming, {args.batches:,} commits of {args.rows:,} rows, with and without "
        f"the background compactor (phases alternate)\n\n"
        + markdown_table(
            [
                "phase",
                "commits",
                "wall s",
                "rows/s",
                "p50 ms",
                "p99 ms",
                "max ms",
                "compactions",
                "compaction s",
                "rows merged",
                "raw / re-encoded row groups",
                "compaction errors",
                "segments at end",
                "row groups at end",
                "dead bytes at end",
                "bytes on disk at end",
                "rows/s vs best without",
            ],
            rows,
        )
        + "\n\n"
        f"Policy: `CompactionPolicy(idle_seconds=0, min_small_row_groups={args.min_small}, "
        f"grace_seconds=0)`, `compaction_interval={args.interval:g}`. Every finished phase "
        "was read back equal to its input.\n"
    )
    failures = [f"- {p.variant}, run {p.run}: {p.error}" for p in phases if p.error is not None] + [
        f"- {p.variant}, run {p.run}: {p.compaction_errors} background compaction error(s), "
        f"the last: {p.compaction_error}"
        for p in phases
        if p.compaction_error is not None
    ]
    if failures:
        print("Failures:\n\n" + "\n".join(failures) + "\n")
    verdicts = []
    for executor_name in args.stream_executor:
        without = best.get(f"{executor_name}, without compaction")
        with_ = best.get(f"{executor_name}, with compaction")
        failed = [p for p in phases if p.executor == executor_name and p.error is not None]
        if without is None or with_ is None or failed:
            verdicts.append(
                f"- streaming rows/s with compaction >= {STREAM_TARGET}x without "
                f"({executor_name}): {len(failed)} phase(s) failed -> FAIL"
            )
            if without is None or with_ is None:
                continue
        ratio = with_.rows_per_second / without.rows_per_second
        p50 = _quantile(with_.latency, 0.5) / _quantile(without.latency, 0.5)
        p99 = _quantile(with_.latency, 0.99) / _quantile(without.latency, 0.99)
        if not failed:
            verdicts.append(
                f"- streaming rows/s with compaction >= {STREAM_TARGET}x without "
                f"({executor_name}): {fmt_ratio(ratio)} ({with_.compactions} compactions in "
                f"the best run) -> {_verdict(ratio >= STREAM_TARGET)}"
            )
        verdicts.append(
            f"- commit p50 / p99 with compaction <= {LATENCY_TARGET}x without "
            f"({executor_name}, best runs): p50 {fmt_ratio(p50)}, p99 {fmt_ratio(p99)} -> "
            f"{_verdict(p50 <= LATENCY_TARGET and p99 <= LATENCY_TARGET)}"
        )
    return verdicts


# ---------------------------------------------------------------------------------------------
# Main

SECTIONS = ("reencode", "raw", "stream")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=1000, help="small commits (1 and 4)")
    parser.add_argument("--rows", type=int, default=10_000, help="rows per small commit")
    parser.add_argument("--raw-rows", type=int, default=10_000_000, help="rows of section 2")
    parser.add_argument(
        "--raw-row-group", type=int, default=1_000_000, help="section 2 row group (and batch) rows"
    )
    parser.add_argument("--repeat", type=int, default=3, help="sections 1 and 2: best of N")
    parser.add_argument(
        "--stream-repeat", type=int, default=2, help="section 4: phases of each variant"
    )
    parser.add_argument(
        "--interval", type=float, default=2.0, help="section 4: compaction_interval seconds"
    )
    parser.add_argument("--min-small", type=int, default=64, help="section 4: min_small_row_groups")
    parser.add_argument(
        "--stream-executor",
        choices=["inline", "pool(2)"],
        action="append",
        help="section 4: executors (repeatable; default both)",
    )
    parser.add_argument(
        "--no-breakdown", action="store_true", help="section 1: skip the read/encode breakdown"
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, seconds")
    parser.add_argument(
        "--only", choices=SECTIONS, action="append", help="run only these sections (repeatable)"
    )
    parser.add_argument(
        "--profile",
        type=int,
        metavar="TOP",
        default=0,
        help="section 1: also cProfile one inline compaction and print the TOP lines",
    )
    parser.add_argument("--workdir", help="where files are written (default: a temporary dir)")
    args = parser.parse_args(argv)
    args.stream_executor = args.stream_executor or ["inline", "pool(2)"]
    if args.quick:
        args.batches = min(args.batches, 60)
        args.raw_rows = min(args.raw_rows, 1_000_000)
        args.raw_row_group = min(args.raw_row_group, 250_000)
        args.repeat = 1
        args.stream_repeat = 1
        args.interval = min(args.interval, 0.25)
        args.min_small = min(args.min_small, 8)
    return args


async def run(args: argparse.Namespace, workdir: Path) -> list[str]:
    sections = args.only or list(SECTIONS)
    verdicts: list[str] = []
    dead: list[list[str]] = []
    if "reencode" in sections:
        (workdir / "reencode").mkdir()
        v, d = await run_reencode(args, workdir / "reencode")
        verdicts += v
        dead += d
    if "raw" in sections:
        (workdir / "raw").mkdir()
        v, d = await run_raw(args, workdir / "raw")
        verdicts += v
        dead += d
    if dead:
        print("## 3. Dead bytes and files, before and after one compaction\n")
        print(markdown_table(LAYOUT_HEADERS, dead) + "\n")
        print(
            "committed / dead bytes: sums of `SegmentInfo.size` / `.dead_bytes` from "
            "`compaction_status()`; bytes on disk: every file under the table directory "
            "(`_txn`, `_lock`, each segment's `data.parquet` and `_pm`).\n"
        )
        sys.stdout.flush()
    if "stream" in sections:
        (workdir / "stream").mkdir()
        verdicts += await run_stream(args, workdir / "stream")
    return verdicts


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print("# streamwrite compaction benchmark\n")
    print(f"- command: `{command_line()}`")
    print(f"- date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}")
    for line in machine_lines():
        print(line)
    print(
        f"- small commits: {args.batches:,} x {args.rows:,} rows; raw copy: {args.raw_rows:,} "
        f"rows in {args.raw_row_group:,}-row row groups; best of {args.repeat}; streaming "
        f"phases: {args.stream_repeat} per variant\n"
    )
    sys.stdout.flush()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_compact_", dir=args.workdir) as tmp:
        verdicts = anyio.run(run, args, Path(tmp))
    print("## Targets\n")
    print("\n".join(verdicts))
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "n/a"
    print(
        f"\nWall time of the whole run: {time.perf_counter() - started:.0f} s; load average at "
        f"the end: {load}."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
