"""Dedup keys benchmark: the cost of ``Table.append(..., dedup_key=)`` on a durable commit.

Two tables in one run, committed **round-robin** (commit i of each, then i+1) so that a noisy
spell of the shared machine hits both alike: the same batches of the reference table, one
durable commit per append (``append(batch, wait=False)`` then ``await ticket.durable()``,
outside ``async with``: the caller commits), one table without keys and one with a fresh
16-byte key per append (its commit also appends a record to ``_dedup.*`` and syncs it in the
same sync round as the segment). A third column re-sends a committed key (the retry: skipped,
nothing written). Then the window's own costs: reopening a table whose log holds ``--keys``
keys (one commit each, the worst case), and the memory of that many keys.

Run from the repository root::

    .venv/bin/python benchmarks/bench_dedup.py                 # 300 commits of 1,000 rows
    .venv/bin/python benchmarks/bench_dedup.py --rows 100 --commits 500 --keys 90000
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import anyio
from _common import Report, bench_parser, markdown_table, verdict

from streamwrite.format.dedup import DEDUP_HEADER, encode_dedup_records
from streamwrite.format.txn import DedupLog, TxnRecord
from streamwrite.table.api import open_table
from streamwrite.table.dedup import DedupLogFile
from streamwrite.testing import reference_table


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def commits(directory: Path, num_commits: int, num_rows: int) -> dict[str, list[float]]:
    rows = reference_table(num_rows * 4)
    tables = {
        "no key": await open_table(
            directory / "plain", rows.schema, commit_interval=None, compaction_interval=None
        ),
        "dedup key": await open_table(
            directory / "keyed", rows.schema, commit_interval=None, compaction_interval=None
        ),
    }
    seconds: dict[str, list[float]] = {name: [] for name in (*tables, "retry (skipped)")}
    for i in range(num_commits):
        batch = rows.slice((i % 4) * num_rows, num_rows)
        key = i.to_bytes(16, "little")
        for name, table in tables.items():
            started = time.perf_counter()
            ticket = await table.append(
                batch, dedup_key=key if name == "dedup key" else None, wait=False
            )
            commit = await ticket.durable()
            seconds[name].append(time.perf_counter() - started)
            assert not commit.skipped
        started = time.perf_counter()
        ticket = await tables["dedup key"].append(batch, dedup_key=key, wait=False)
        assert (await ticket.durable()).skipped
        seconds["retry (skipped)"].append(time.perf_counter() - started)
    for table in tables.values():
        await table.close()
    return seconds


def reopen(directory: Path, num_keys: int) -> tuple[float, float, int]:
    """Seconds to load a log of ``num_keys`` one-key commits, the window's bytes, log size."""
    now = time.time()
    data = DEDUP_HEADER + b"".join(
        encode_dedup_records(v, now - 1.0, [os.urandom(16)]) for v in range(1, num_keys + 1)
    )
    (directory / "_dedup.1").write_bytes(data)
    record = TxnRecord(version=num_keys, dedup=DedupLog("_dedup.1", len(data)))
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        log = DedupLogFile.open(directory, record, 900.0, now)
        best = min(best, time.perf_counter() - started)
        assert log.window.num_keys == num_keys
    tracemalloc.start()
    log = DedupLogFile.open(directory, record, 900.0, now)
    size, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return best, size, len(data)


def rotation(directory: Path, num_keys: int) -> tuple[float, float, int]:
    """A rotation keeping ``num_keys`` live keys (one commit each) of a log twice that size:
    seconds to plan it (on the event loop), to write and sync the new log (the sync round's
    call), and the new log's size."""
    now = time.time()
    old = [encode_dedup_records(v, now - 2000.0, [os.urandom(16)]) for v in range(num_keys)]
    live = [
        encode_dedup_records(v, now - 1.0, [os.urandom(16)]) for v in range(num_keys, 2 * num_keys)
    ]
    data = DEDUP_HEADER + b"".join(old + live)
    (directory / "_dedup.1").write_bytes(data)
    record = TxnRecord(version=2 * num_keys, dedup=DedupLog("_dedup.1", len(data)))
    log = DedupLogFile.open(directory, record, 900.0, now)
    log.window.rotate_size = 0
    started = time.perf_counter()
    write = log.window.plan(2 * num_keys + 1, now, [os.urandom(16)])
    planned = time.perf_counter() - started
    assert write.create
    _, call = log.sync_call(write)
    started = time.perf_counter()
    call()
    return planned, time.perf_counter() - started, write.log.size


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--rows", type=int, default=1_000)
    parser.add_argument("--keys", type=int, default=90_000)
    args = parser.parse_args(argv)
    if args.quick:
        args.commits, args.keys = 30, 5_000
    report = Report(
        "dedup keys",
        args,
        details=[f"{args.commits} commits of {args.rows} rows, {args.keys} keys"],
    )
    with report.workdir() as workdir:
        seconds = anyio.run(commits, workdir / "commits", args.commits, args.rows)
        base = statistics.median(seconds["no key"])
        rows = [
            [
                name,
                f"{statistics.median(values) * 1e3:.2f}",
                f"{percentile(values, 0.9) * 1e3:.2f}",
                f"{percentile(values, 0.99) * 1e3:.2f}",
                f"{statistics.median(values) / base:.2f}",
            ]
            for name, values in seconds.items()
        ]
        print("## append + durable\n")
        print(
            markdown_table(["append + durable", "median ms", "p90 ms", "p99 ms", "/ no key"], rows)
        )
        for name in ("reopen", "rotation"):
            (workdir / name).mkdir()
        load_seconds, window_size, log_size = reopen(workdir / "reopen", args.keys)
        print(
            f"\nreopen with {args.keys} keys (one commit each, log {log_size / 1e6:.2f} MB): "
            f"{load_seconds * 1e3:.0f} ms (best of 3); window memory "
            f"{window_size / 1e6:.1f} MB ({window_size / args.keys:.0f} bytes a key)"
        )
        planned, synced, size = rotation(workdir / "rotation", args.keys)
        print(
            f"rotation keeping {args.keys} keys (new log {size / 1e6:.2f} MB): planned in "
            f"{planned * 1e3:.2f} ms on the event loop, written and synced in {synced * 1e3:.1f} "
            "ms (its commit's sync round)\n"
        )
        ratio = statistics.median(seconds["dedup key"]) / base
    return report.finish(
        [verdict("commit with a key / without (median)", f"{ratio:.2f}x", ratio <= 1.1)]
    )


if __name__ == "__main__":
    sys.exit(main())
