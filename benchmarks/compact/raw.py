"""Sections 2 and 3 of ``bench_compact.py``: raw copy against re-encoding (``--only raw``)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pyarrow.parquet as pq
from _common import (
    fmt_bytes,
    fmt_ratio,
)

from compact.common import (
    RAW_TARGET,
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
    timed_compact,
)
from streamwrite.compaction.policy import CompactionPolicy
from streamwrite.testing import reference_table


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
        with Timed() as timed:
            size = await anyio.to_thread.run_sync(pyarrow_merge, before.sources, out, rg, True)
        return timed.seconds, (pq.ParquetFile(out).metadata.num_row_groups, size)

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
        "/ seconds; CPU s = user + system seconds of the timed part (this process, all threads, "
        "and the pool's workers), least of the runs (less sensitive to a loaded machine than "
        "wall time). Every compacted table was read back equal to the input once.\n"
    )
    raw, reencode = variants[0], variants[1]
    ratio = reencode.best / raw.best
    raw_rgs = sum(r.raw_row_groups for r in raw.detail)
    verdicts = [
        f"- raw copy >= {RAW_TARGET:.0f}x faster than re-encode: {fmt_ratio(ratio)} "
        f"({raw_rgs} of {before.row_groups} row groups copied raw; vs re-encode with "
        f"sort_by_timestamp {fmt_ratio(variants[2].best / raw.best)}) -> "
        f"{pass_fail(ratio >= RAW_TARGET)}"
    ]
    dead = [
        before.row(f"{rg:,}-row row groups, before"),
        after.row("... after compact() (sort_by_timestamp)"),
    ]
    shutil.rmtree(workdir / "work", ignore_errors=True)
    shutil.rmtree(workdir / "base", ignore_errors=True)
    return verdicts, dead
