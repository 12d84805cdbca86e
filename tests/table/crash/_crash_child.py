"""Child process of ``test_table_crash``: ingests idempotent batches into a table with a process
pool until it is SIGKILLed.

Usage: ``python _crash_child.py DIRECTORY MAX_BATCH``

Writes to stdout, one line per ``os.write``:

- ``pool PID PID FORKSERVER_PID`` once the pool runs (the parent checks that they die with us);
- ``open APPLIED VERSION`` once the table is open (created or recovered); ``APPLIED`` is the
  ``applied["crash"]`` of the committed ``_txn`` (-1 when none), read with ``decode_txn``;
- ``K`` after the append of batch ``K`` (``app_id="crash", batch_id=K``) is acknowledged;
- ``full`` after batch MAX_BATCH (then it waits to be killed).
"""

from __future__ import annotations

import os
import sys
import threading
from multiprocessing import forkserver
from pathlib import Path

import anyio

from streamwrite.format.txn import TXN_FILE, decode_txn
from streamwrite.pool.process import ProcessPool
from streamwrite.table.api import open_table
from tests.table.crash._support import APP_ID, SCHEMA, SEGMENT_ROW_GROUPS, make_batch


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())  # one write per line; nothing buffered to lose


async def main(directory: Path, max_batch: int) -> None:
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
