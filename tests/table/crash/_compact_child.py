"""Child process of ``test_compaction_crash``: compacts a table until it is SIGKILLed.

Usage::

    python _compact_child.py steps DIRECTORY STEP OCCURRENCE
    python _compact_child.py ingest DIRECTORY MAX_BATCH EXECUTOR

``steps`` opens the table (inline executor, :data:`TABLE_OPTIONS`) and runs one explicit
``compact()``. Its hook writes ``STEP I`` at the start of each compaction step (``I`` counts that
step's calls: the I-th compacted partition) and, when ``STEP I`` is the one asked for, kills its
own process with SIGKILL right after the line. ``STEP`` ``none`` kills nothing (the parent kills
it); ``finished`` follows a compaction that ran to the end, then it waits to be killed (or
exits, when the step asked for never came).

``ingest`` opens the table (:data:`INGEST_OPTIONS`; EXECUTOR ``pool``: encoding on a
``ProcessPool(2)``, ``inline``: in the event loop's thread) inside ``async with`` (background
commits), replays the last :data:`REPLAYED` committed batch ids (each must be skipped), then runs
two tasks until it is killed: one appends ``make_batch(k)`` with ``app_id="crash",
batch_id=k`` for ``k`` = ``applied["crash"]`` + 1 .. MAX_BATCH; the other loops explicit
``compact()`` calls, so appends commit while segments are merged, swapped and swept.

Lines on stdout, one ``os.write`` each (nothing buffered to lose):

- ``open APPLIED VERSION`` once the table is open (``APPLIED``: ``applied["crash"]`` of the
  committed ``_txn``, -1 when none);
- ``skip K`` after the replayed append of batch ``K`` was skipped;
- ``K`` after the append of batch ``K`` is acknowledged; ``full`` after MAX_BATCH;
- ``step NAME`` at the start of each compaction step, ``compacted N`` after each ``compact()``
  call (``N`` partitions compacted).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

from streamwrite.compaction.policy import CompactionPolicy
from streamwrite.format.txn import TXN_FILE, decode_txn
from streamwrite.pool.process import ProcessPool
from streamwrite.table.api import open_table
from tests.table.crash._support import APP_ID, SCHEMA, make_batch

POLICY = CompactionPolicy(grace_seconds=0, min_small_row_groups=2)
"""Sweeps delete retired segments at once; two small row groups are reason to compact."""
TABLE_OPTIONS: dict[str, Any] = {
    "compaction": POLICY,
    "compaction_interval": None,
    "segment_row_groups": 2,
    "row_group_size": 40,
}
"""The step-kill table: many tiny segments of tiny row groups."""
INGEST_OPTIONS: dict[str, Any] = {**TABLE_OPTIONS, "segment_row_groups": 3, "row_group_size": 100}
"""The ingest table: fewer, larger row groups, so a child gets through several compactions."""
REPLAYED = 3
"""Batch ids replayed (and skipped) by each ingest child before it goes on."""


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())  # one write per line; nothing buffered to lose


def wait_for_kill() -> None:
    threading.Event().wait()  # until the parent's SIGKILL


async def compact_steps(directory: Path, step: str, occurrence: int) -> None:
    table = await open_table(directory, **TABLE_OPTIONS)
    applied = decode_txn((directory / TXN_FILE).read_bytes()).applied.get(APP_ID, -1)
    say(f"open {applied} {table.version}")
    seen: Counter[str] = Counter()

    def hook(name: str) -> None:
        say(f"{name} {seen[name]}")
        if (name, seen[name]) == (step, occurrence):
            os.kill(os.getpid(), signal.SIGKILL)
        seen[name] += 1

    await table.compact(hook=hook)
    say("finished")
    if step == "none":
        wait_for_kill()
    # else exit: the step asked for never came, the parent sees the exit status


async def ingest(directory: Path, max_batch: int, executor: str) -> None:
    pool = await ProcessPool.open(2) if executor == "pool" else None
    table = await open_table(
        directory, SCHEMA, timestamp="ts", partition_by="day", executor=pool, **INGEST_OPTIONS
    )
    applied = decode_txn((directory / TXN_FILE).read_bytes()).applied.get(APP_ID, -1)
    say(f"open {applied} {table.version}")
    async with table:
        for k in range(max(0, applied + 1 - REPLAYED), applied + 1):
            # Ids below the last committed one are stale (not a replay): skipped on request.
            commit = await table.append(make_batch(k), app_id=APP_ID, batch_id=k, on_stale="skip")
            assert commit is not None and commit.skipped, (k, commit)
            say(f"skip {k}")

        async def append() -> None:
            for k in range(applied + 1, max_batch + 1):
                commit = await table.append(make_batch(k), app_id=APP_ID, batch_id=k)
                assert commit is not None and not commit.skipped, (k, commit)
                say(str(k))
            say("full")

        async def compact() -> None:
            while True:
                results = await table.compact(hook=lambda name: say(f"step {name}"))
                say(f"compacted {len(results)}")
                await anyio.sleep(0.01)

        async with anyio.create_task_group() as tg:
            tg.start_soon(append)
            tg.start_soon(compact)


if __name__ == "__main__":  # the pool's forkserver imports __main__
    mode, where = sys.argv[1], Path(sys.argv[2])
    if mode == "steps":
        anyio.run(compact_steps, where, sys.argv[3], int(sys.argv[4]))
    elif mode == "ingest":
        anyio.run(ingest, where, int(sys.argv[3]), sys.argv[4])
    else:
        raise SystemExit(f"unknown mode {mode!r}")
