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
import sys
from pathlib import Path

import anyio
import anyio.to_thread
from _common import (
    Report,
    bench_parser,
    load_average,
    markdown_table,
)
from compact.common import (
    LAYOUT_HEADERS,
)
from compact.raw import run_raw
from compact.reencode import run_reencode
from compact.stream import run_stream

SECTIONS = ("reencode", "raw", "stream")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = bench_parser(__doc__, quick_help="small sizes, seconds")
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
    report = Report(
        "compaction",
        args,
        [
            f"- small commits: {args.batches:,} x {args.rows:,} rows; raw copy: "
            f"{args.raw_rows:,} rows in {args.raw_row_group:,}-row row groups; best of "
            f"{args.repeat}; streaming phases: {args.stream_repeat} per variant"
        ],
    )
    with report.workdir() as workdir:
        verdicts = anyio.run(run, args, workdir)
    return report.finish(
        verdicts,
        f"\nWall time of the whole run: {report.seconds():.0f} s; load average at "
        f"the end: {load_average()}.",
    )


if __name__ == "__main__":
    raise SystemExit(main())
