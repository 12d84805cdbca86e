"""Child process of ``test_table_crash``: ingests idempotent batches into a table with a process
pool until it is SIGKILLed.

Usage: ``python _crash_child.py DIRECTORY MAX_BATCH``

Writes to stdout, one line per ``os.write``:

- ``pool PID PID FORKSERVER_PID`` once the pool runs (the parent checks that they die with us);
- ``open APPLIED VERSION`` once the table is open (created or recovered); ``APPLIED`` is the
  ``applied["crash"]`` of the committed ``_txn`` (-1 when none), read with ``decode_txn``;
- ``K`` after the append of batch ``K`` (``app_id="crash", batch_id=K``) is acknowledged;
- ``full`` after batch MAX_BATCH (then it waits to be killed).

A table commit writes every segment (data, ``_pm`` blocks and header), syncs them in one round,
then writes its ``_txn`` slot and syncs it (round 2). Those steps take about a millisecond, so
a kill at a random moment would rarely land between them: a third of the commits stall, for up
to STALL_SECONDS, either before the sync round (the segments written, not synced) or between
the rounds (synced, ``_txn`` not written). The steps themselves are the product's.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing import forkserver
from pathlib import Path

import anyio

import streamwrite.table.core as table_core
from streamwrite.format.txn import TXN_FILE, decode_txn
from streamwrite.pool.process import ProcessPool
from streamwrite.table.api import open_table
from tests.table.crash._support import APP_ID, SCHEMA, SEGMENT_ROW_GROUPS, make_batch

STALL_SHARE = 1 / 3
STALL_SECONDS = 0.05


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())  # one write per line; nothing buffered to lose


def stall_before_the_rounds(rng: random.Random) -> None:
    """Make a third of the commits stall before their sync round or between the rounds."""
    stall_at = {"where": ""}

    def stalling(step: str, real: Callable[..., object]) -> Callable[..., object]:
        def run(*args: object) -> object:
            if step == "sync round":  # the first step of a commit's syncs: draw this commit
                stall_at["where"] = (
                    rng.choice(["sync round", "txn"]) if rng.random() < STALL_SHARE else ""
                )
            if stall_at["where"] == step:
                time.sleep(rng.uniform(0.0, STALL_SECONDS))
            return real(*args)

        return run

    table_core.sync_live_files = stalling("sync round", table_core.sync_live_files)  # type: ignore[assignment]
    table_core.write_txn = stalling("txn", table_core.write_txn)  # type: ignore[assignment]


async def main(directory: Path, max_batch: int) -> None:
    stall_before_the_rounds(random.Random())
    pool = await ProcessPool.open(2)
    server = forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
    say(f"pool {' '.join(map(str, pool.worker_pids()))} {server}")
    table = await open_table(
        directory,
        SCHEMA,
        timestamp="ts",
        partition_by="day",
        executor=pool,
        segment_row_groups=SEGMENT_ROW_GROUPS,
    )
    applied = decode_txn((directory / TXN_FILE).read_bytes()).applied.get(APP_ID, -1)
    say(f"open {applied} {table.version}")
    for k in range(applied + 1, max_batch + 1):
        commit = await table.append(make_batch(k), app_id=APP_ID, batch_id=k)
        assert commit is not None and not commit.skipped, commit
        say(str(k))
    say("full")
    threading.Event().wait()  # until the parent's SIGKILL


if __name__ == "__main__":  # the pool's forkserver imports __main__
    anyio.run(main, Path(sys.argv[1]), int(sys.argv[2]))
