"""Child process of ``test_tiering_crash``: tiers a table until it is SIGKILLed.

Usage::

    python _tier_child.py steps DIRECTORY URL OPTIONS_JSON STEP OCCURRENCE
    python _tier_child.py ingest DIRECTORY URL OPTIONS_JSON MAX_BATCH

``steps`` opens the table (cold storage ``URL`` reached with the s3fs keyword arguments
``OPTIONS_JSON``; :data:`TABLE_OPTIONS`) and runs one ``tier()``. Its hook writes ``STEP I``
at the start of each move step (``I`` counts that step's calls: the I-th segment moved) and,
when ``STEP I`` is the one asked for, kills its own process with SIGKILL right after the
line; ``finished`` follows a round that ran to the end (then it exits).

``ingest`` opens (or creates) the table inside ``async with`` (background commits, and
background tiering every 0.05 s) and runs two tasks until it is killed: one appends
``batch(k)`` with ``app_id="crash", batch_id=k`` for ``k`` = ``applied["crash"]`` + 1 ..
MAX_BATCH, the other loops explicit ``tier()`` calls.

Lines on stdout, one ``os.write`` each (nothing buffered to lose): ``open APPLIED VERSION``
once the table is open, ``K`` after batch ``K`` is acknowledged, ``full`` after MAX_BATCH,
``step NAME`` at each move step, ``tiered N`` after each ``tier()`` call.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

from streamwrite.format.txn import TXN_FILE, decode_txn
from streamwrite.table.api import open_table
from tests.storage._tiering_support import SCHEMA, TABLE_OPTIONS, make_batch

APP_ID = "crash"
ROWS = 50


def batch(k: int) -> Any:
    """Batch ``k``: ids ``k * ROWS`` .. ``k * ROWS + ROWS - 1`` over two days."""
    return make_batch(k * ROWS, ROWS)


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())  # one write per line; nothing buffered to lose


async def steps(directory: Path, url: str, options: dict[str, Any], step: str, at: int) -> None:
    table = await open_table(directory, cold_storage=url, storage_options=options, **TABLE_OPTIONS)
    say(f"open {table.record.applied.get(APP_ID, -1)} {table.version}")
    seen: Counter[str] = Counter()

    def hook(name: str) -> None:
        say(f"{name} {seen[name]}")
        if (name, seen[name]) == (step, at):
            os.kill(os.getpid(), signal.SIGKILL)
        seen[name] += 1

    await table.tier(hook=hook)
    say("finished")
    await table.close()


async def ingest(directory: Path, url: str, options: dict[str, Any], max_batch: int) -> None:
    settings = {**TABLE_OPTIONS, "commit_interval": 0.05, "compaction_interval": 0.05}
    table = await open_table(
        directory, SCHEMA, cold_storage=url, storage_options=options, **settings
    )
    applied = decode_txn((directory / TXN_FILE).read_bytes()).applied.get(APP_ID, -1)
    say(f"open {applied} {table.version}")
    async with table:

        async def append() -> None:
            for k in range(applied + 1, max_batch + 1):
                commit = await table.append(batch(k), app_id=APP_ID, batch_id=k)
                assert commit is not None and not commit.skipped, (k, commit)
                say(str(k))
            say("full")

        async def tier() -> None:
            while True:
                moved = await table.tier(hook=lambda name: say(f"step {name}"))
                say(f"tiered {len(moved)}")
                await anyio.sleep(0.01)

        async with anyio.create_task_group() as tg:
            tg.start_soon(append)
            tg.start_soon(tier)


if __name__ == "__main__":
    mode, where, url, options = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4]
    if mode == "steps":
        anyio.run(steps, where, url, json.loads(options), sys.argv[5], int(sys.argv[6]))
    elif mode == "ingest":
        anyio.run(ingest, where, url, json.loads(options), int(sys.argv[5]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
