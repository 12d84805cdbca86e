"""Section 4 of ``bench_compact.py``: streaming ingest with the background compactor
(``--only stream``)."""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
from _common import (
    fmt_bytes,
    fmt_ratio,
    markdown_table,
)

import streamwrite
import streamwrite.compaction.policy as compaction_module
from compact.common import (
    LATENCY_TARGET,
    STREAM_TARGET,
    Layout,
    layout_of,
    ms,
    pass_fail,
    quantile,
)
from streamwrite.compaction.policy import CompactionPolicy, CompactionResult
from streamwrite.pool.process import ProcessPool
from streamwrite.table.api import Table, open_table
from streamwrite.testing import reference_table


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
                ms(quantile(phase.latency, 0.5)) if phase.latency else "",
                ms(quantile(phase.latency, 0.99)) if phase.latency else "",
                ms(max(phase.latency)) if phase.latency else "",
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
        p50 = quantile(with_.latency, 0.5) / quantile(without.latency, 0.5)
        p99 = quantile(with_.latency, 0.99) / quantile(without.latency, 0.99)
        if not failed:
            verdicts.append(
                f"- streaming rows/s with compaction >= {STREAM_TARGET}x without "
                f"({executor_name}): {fmt_ratio(ratio)} ({with_.compactions} compactions in "
                f"the best run) -> {pass_fail(ratio >= STREAM_TARGET)}"
            )
        verdicts.append(
            f"- commit p99 with compaction <= {LATENCY_TARGET}x without "
            f"({executor_name}, best runs): p99 {fmt_ratio(p99)} (p50 {fmt_ratio(p50)}) -> "
            f"{pass_fail(p99 <= LATENCY_TARGET)}"
        )
    return verdicts
