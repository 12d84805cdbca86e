"""Helpers shared by the sections of ``bench_compact.py``: building tables, fresh copies,
layouts, timed compactions, the pyarrow merge reference and the merge-speed table."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from _common import MB, fmt_bytes, fmt_ratio, markdown_table

import streamwrite
from streamwrite.compaction.policy import CompactionPolicy, CompactionResult
from streamwrite.table.api import open_table

REENCODE_TARGET = 1.0  # compact() MB/s / pyarrow read + write MB/s
RAW_TARGET = 5.0  # raw copy MB/s / re-encode MB/s
STREAM_TARGET = 0.8  # rows/s with compaction / rows/s without ("within 20%")
LATENCY_TARGET = 2.0  # commit p99 with compaction / without (issue 12; p50 shown)
NO_SWEEP = CompactionPolicy(grace_seconds=0)


_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int] | None = None) -> float:
    """CPU seconds (user + system) of this process (all threads) and of ``pids`` (a pool's
    live workers, which ``os.times`` does not count)."""
    times = os.times()
    total = times.user + times.system
    for pid in pids or []:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime
    return total


class Timed:
    """Wall and CPU seconds of a block (CPU: this process and ``pids``)."""

    last_cpu = 0.0
    """CPU seconds of the block timed last (read by :class:`Variant`)."""

    def __init__(self, pids: list[int] | None = None) -> None:
        self.pids = pids or []
        self.seconds = 0.0
        self.cpu = 0.0

    def __enter__(self) -> Timed:
        self._cpu = cpu_seconds(self.pids)
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.seconds = time.perf_counter() - self._start
        self.cpu = cpu_seconds(self.pids) - self._cpu
        Timed.last_cpu = self.cpu


def disk_usage(directory: Path) -> tuple[int, int]:
    """(files, bytes of content) under ``directory``."""
    files = [p for p in directory.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def pass_fail(ok: bool) -> str:
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
        self.files, self.disk = disk_usage(directory)
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
    pids = executor.worker_pids() if hasattr(executor, "worker_pids") else []
    try:
        with Timed(pids) as timed:
            results = await table.compact(policy=policy)
    finally:
        await table.close()
    return timed.seconds, results


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
            check_compacted(copy, data)
        return seconds, results

    return go


def segment_source(path: Path, size: int) -> Any:
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
        [pq.read_table(segment_source(p, s), use_threads=use_threads) for p, s in sources]
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
        self.cpu: list[float] = []
        self.detail: Any = None

    async def run(self) -> None:
        Timed.last_cpu = float("nan")
        seconds, detail = await self.fn()
        self.times.append(seconds)
        self.cpu.append(Timed.last_cpu)
        if seconds < self.best:
            self.best = seconds
            self.detail = detail


async def round_robin(variants: list[Variant], repeat: int) -> None:
    for r in range(max(1, repeat)):
        for variant in variants:
            await variant.run()
        print(f"  ... round {r + 1} of {repeat} done", file=sys.stderr, flush=True)


def result_cells(detail: Any) -> tuple[str, str, str, str]:
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
        raw, reencoded, out_rgs, out_bytes = result_cells(v.detail)
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
                f"{min(v.cpu):.2f}",
                fmt_ratio(min(base.cpu) / min(v.cpu)),
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
            "CPU s (least)",
            "CPU vs reference",
        ],
        rows,
    )


def check_compacted(directory: Path, expected: pa.Table) -> None:
    back = streamwrite.read_table(directory)
    assert back.num_rows == expected.num_rows, (back.num_rows, expected.num_rows)
    assert back.equals(expected), "the compacted table reads differently from its input"
