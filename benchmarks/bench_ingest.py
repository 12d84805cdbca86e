"""Ingest benchmark: durable micro-batch commits through a table, and bulk writes with the pool.

**Streaming** (section 1): the same pre-generated batches of the reference table (``--batches``
batches of ``--rows`` rows, slices of one table built outside timing), one durable commit per
batch, committed by every writer **round-robin** (batch i of each writer, then batch i+1) so that
a noisy spell of the shared machine hits all of them alike:

- **streamwrite table, inline** / **pool(2)**: ``open_table(dir, schema, timestamp="ts",
  partition_by="day", executor=...)`` then ``await table.append(batch, app_id="bench",
  batch_id=i)`` per batch: the batch is encoded, the partition's live file committed (fsyncs)
  and ``_txn`` published (write, fsync, rename, directory fsync) before the call returns; the table
  is readable after every commit. The reference table's 10M rows span ~5.5 hours of one day, so
  ``partition_by="day"`` routes everything to one partition (the routing cost is still paid).
- **pyarrow ParquetWriter**: one open ``pq.ParquetWriter(f, schema, compression="zstd")``;
  ``writer.write_table(batch)`` + ``f.flush()`` per batch. **Not readable until ``close()``** (no
  footer) and not durable (no fsync): the speed reference of the targets. A second row does the
  same plus ``os.fsync`` per batch (durable bytes, still unreadable).
- **pyarrow, one file per batch**: ``pq.write_table(batch, part-i.parquet, compression="zstd")``
  + fsync of the file (not of the directory, which favours pyarrow).
- **fastparquet**: ``fastparquet.write(path, df, append=i > 0, compression="ZSTD")`` + fsync
  (the DataFrame is converted outside timing). It rewrites its footer in place: not readable at
  every moment.
- **deltalake**: ``write_deltalake(path, batch, mode="append", writer_properties=ZSTD)``. A
  ``strace`` of deltalake 1.6.6 shows **no fsync at all** (files are renamed into place and log
  entries hard-linked): its commits are readable but not durable.

Extra row, not round-robin: **streamwrite pipelined**: ``async with await open_table(...,
commit_rows=rows, executor=ProcessPool(2))`` and ``append(batch)`` without ids, then ``flush()``:
commits run in the background while the next batches encode. Its latency series is the
background commits' ``metrics.commit_seconds``; rows/s is rows / wall time of the whole loop.

**Durable streaming modes** (section 3, ``ingest/durable.py``): encode alone, sequential
durable, pipelined durable and group commit, each against its peer in the same run, with a
per-commit breakdown and CPU seconds per million rows (the section's docstring says how).

**Bulk** (section 2): one ``--bulk-rows`` reference table in ``--row-group-size`` row groups,
best of ``--repeat``, variants round-robin: ``streamwrite.write_table`` (inline, one process); the
same file encoded by ``ProcessPool(1)`` and ``ProcessPool(2)`` (``row_group_jobs`` of each row group
through ``pool.run_all``, two row groups in flight, assembled in order by ``FileWriter``: what a
``write_table(..., executor=pool)`` would do; no such API exists yet); the table path
(``open_table`` + ``append`` + ``flush`` with the pool, fsyncs included); and
``pq.write_table(compression="zstd")``. Pool start-up is not timed. The pool's own counters give
the transfer overhead: ``transfer_seconds`` (parent: copying buffers into shared memory, pickling
the descriptor) and ``receive_seconds`` (parent: reading replies) against ``encode_seconds``
(workers: inside ``run_job``).

Run from the repository root::

    .venv/bin/python benchmarks/bench_ingest.py                  # 1,000 x 10k rows, 10M bulk
    .venv/bin/python benchmarks/bench_ingest.py --quick          # 50 batches, 1M bulk: seconds
    .venv/bin/python benchmarks/bench_ingest.py --only bulk
    .venv/bin/python benchmarks/bench_ingest.py --only durable --batches 200
"""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio
from _common import (
    Report,
    bench_parser,
)
from ingest.bulk import run_bulk
from ingest.durable import run_durable
from ingest.stream import run_stream


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = bench_parser(__doc__, quick_help="50 batches, 1M bulk rows")
    parser.add_argument("--batches", type=int, default=1000, help="streaming batches")
    parser.add_argument("--rows", type=int, default=10_000, help="rows per batch")
    parser.add_argument(
        "--peer-batches",
        type=int,
        default=None,
        help="batches for fastparquet and deltalake (default: --batches)",
    )
    parser.add_argument("--bulk-rows", type=int, default=10_000_000, help="rows of the bulk table")
    parser.add_argument("--row-group-size", type=int, default=1_000_000, help="bulk row groups")
    parser.add_argument("--repeat", type=int, default=3, help="bulk: best of N")
    parser.add_argument("--appenders", type=int, default=16, help="group commit: tasks")
    parser.add_argument("--group-rows", type=int, default=1_000, help="group commit: rows each")
    parser.add_argument(
        "--group-window", type=int, default=4, help="group commit: tickets in flight per task"
    )
    parser.add_argument("--only", choices=["stream", "bulk", "durable"], help="run one section")
    args = parser.parse_args(argv)
    if args.quick:
        args.batches = min(args.batches, 50)
        args.bulk_rows = min(args.bulk_rows, 1_000_000)
        args.row_group_size = min(args.row_group_size, 100_000)
        args.repeat = 1
    if args.peer_batches is None:
        args.peer_batches = args.batches
    args.peer_batches = min(args.peer_batches, args.batches)
    return args


async def run(args: argparse.Namespace, workdir: Path) -> list[str]:
    verdicts = []
    if args.only in (None, "stream"):
        verdicts += await run_stream(args, workdir / "stream")
    if args.only in (None, "bulk"):
        (workdir / "bulk").mkdir()
        verdicts += await run_bulk(args, workdir / "bulk")
    if args.only in (None, "durable"):
        (workdir / "durable").mkdir()
        verdicts += await run_durable(args, workdir / "durable")
    return verdicts


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report = Report(
        "ingest",
        args,
        [
            f"- streaming: {args.batches:,} batches of {args.rows:,} rows"
            + (
                f" (fastparquet, deltalake: {args.peer_batches:,})"
                if args.peer_batches < args.batches
                else ""
            )
            + f"; bulk: {args.bulk_rows:,} rows in row groups of {args.row_group_size:,}"
        ],
    )
    with report.workdir() as workdir:
        verdicts = anyio.run(run, args, workdir)
    return report.finish(verdicts, f"\nWall time of the whole run: {report.seconds():.0f} s.")


if __name__ == "__main__":
    raise SystemExit(main())
