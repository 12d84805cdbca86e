"""Run in a subprocess: append rows with sequential ids to a table and compact it, until told
to stop (``test_datasource_concurrent.py`` reads the table with Spark meanwhile).

Usage: ``python datasource_writer.py TABLE STOP_FILE LOG_FILE MAX_COMMITS``. Commit ``k``
appends 1..300 rows whose ``id`` continues the previous commit's, so a read is a complete
committed version iff its ids are exactly ``0..n-1`` for an ``n`` logged here, and every other
value follows from the id (:func:`tests.spark.test_datasource.rows`: a minute apart, so the
rows cross day partitions). After each commit a line ``commit VERSION ROWS TIME`` goes to
LOG_FILE; every 4th commit compacts every partition (segments of 4 row groups, small row groups
merged) and logs ``compact VERSION ROWS TIME`` when it rewrote something. The grace period is
long (600 s): a segment compaction retires stays readable as ``_data.retired`` for a Spark task
planned before the compaction. Stops when STOP_FILE exists or after MAX_COMMITS commits.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import numpy as np
import pyarrow as pa

from streamwrite.compaction.policy import CompactionPolicy
from streamwrite.table.api import open_table

PAUSE_SECONDS = 0.02  # pacing: many commits during each Spark read
START_US = 1_795_305_600 * 10**6  # 2026-11-22T00:00:00Z
MINUTE_US = 60 * 10**6
SYMBOLS = ["AAPL", "MSFT", "GOOG", "AMZN"]


def rows(start: int, num_rows: int) -> pa.Table:
    """Rows ``start .. start + num_rows - 1``: every value follows from the ``id`` (a minute
    apart: 1,440 ids a day)."""
    ids = np.arange(start, start + num_rows, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "ts": pa.array(START_US + ids * MINUTE_US, pa.timestamp("us", tz="UTC")),
            "price": ids * 0.25,
            "symbol": pa.array(SYMBOLS, pa.string()).take(pa.array(ids % len(SYMBOLS))),
        }
    )


async def main(path: Path, stop: Path, log_path: Path, max_commits: int) -> None:
    policy = CompactionPolicy(
        min_small_row_groups=4, idle_seconds=0, grace_seconds=600, target_row_group_rows=1_000
    )
    rng = np.random.default_rng(11)
    num_rows = 0
    table = await open_table(
        path,
        rows(0, 1).schema,
        timestamp="ts",
        partition_by="day",
        segment_row_groups=4,
        row_group_size=100,
        compaction=policy,
        compaction_interval=None,
    )
    try:
        with log_path.open("a") as log:
            for batch_id in range(max_commits):
                if stop.exists():
                    break
                size = int(rng.integers(1, 301))
                commit = await table.append(
                    rows(num_rows, size), app_id="writer", batch_id=batch_id
                )
                assert commit is not None and not commit.skipped
                num_rows += size
                log.write(f"commit {commit.version} {num_rows} {time.time()}\n")
                log.flush()
                if batch_id % 4 == 3 and await table.compact():
                    log.write(f"compact {table.version} {num_rows} {time.time()}\n")
                    log.flush()
                await anyio.sleep(PAUSE_SECONDS)
    finally:
        await table.close()


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
