"""Run in a subprocess: append to a table and compact it until told to stop.

Usage: ``python snapshot_writer.py TABLE STOP_FILE COMMITS_FILE MAX_COMMITS``. Each commit appends
1..400 rows whose ``seq`` column continues the previous commit's (so a read is a complete
committed version iff its ``seq`` values are exactly ``0..n-1`` for an ``n`` listed here); rows
alternate between two day partitions. After each commit the table's row count is appended to
COMMITS_FILE (one number a line, flushed). Every 8th commit compacts the table with a grace
period of 0 s, so retired segments are deleted at once (readers in other processes hold them
only through open file descriptors); the wall-clock time each compaction ends goes to
``COMMITS_FILE.compactions``. Stops when STOP_FILE exists or after MAX_COMMITS commits;
prints a JSON summary.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import anyio
import numpy as np
import pyarrow as pa

from streamwrite.compaction.policy import CompactionPolicy
from streamwrite.table.api import open_table

SCHEMA = pa.schema([("ts", pa.timestamp("ns")), ("seq", pa.int64())])
START_NS = 1_767_225_600_000_000_000  # 2026-01-01
DAY_NS = 86_400 * 10**9


def rows(start: int, num_rows: int) -> pa.Table:
    seq = np.arange(start, start + num_rows, dtype=np.int64)
    ts = START_NS + seq * 1000 + (seq % 2) * DAY_NS
    return pa.table({"ts": pa.array(ts, pa.timestamp("ns")), "seq": seq})


async def main(path: Path, stop: Path, commits: Path, max_commits: int) -> None:
    policy = CompactionPolicy(
        min_small_row_groups=4, idle_seconds=0, grace_seconds=0, target_row_group_rows=2_000
    )
    rng = np.random.default_rng(7)
    num_rows = compactions = 0
    async with await open_table(
        path,
        SCHEMA,
        timestamp="ts",
        partition_by="day",
        segment_row_groups=4,
        compaction=policy,
        compaction_interval=None,
    ) as table:
        with commits.open("a") as log, Path(f"{commits}.compactions").open("a") as times:
            for batch_id in range(max_commits):
                if stop.exists():
                    break
                size = int(rng.integers(1, 401))
                await table.append(rows(num_rows, size), app_id="writer", batch_id=batch_id)
                num_rows += size
                log.write(f"{num_rows}\n")
                log.flush()
                if batch_id % 8 == 7:
                    compactions += len(await table.compact())
                    times.write(f"{time.time()}\n")
                    times.flush()
        version = table.version
    print(json.dumps({"rows": num_rows, "version": version, "compactions": compactions}))


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
