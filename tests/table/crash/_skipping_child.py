"""Child of the skipping crash test: append batches to a table with a skipping store, one
row group per segment (every commit seals segments), printing each acknowledged batch id."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from streamwrite.options import CompactionPolicy
from streamwrite.table.api import open_table
from tests.table.crash._support import APP_ID, SCHEMA, make_batch

POLICY = CompactionPolicy(min_small_row_groups=2, target_row_group_rows=4000, grace_seconds=0)
SKIPPING = {"tag": ["valuelist", "bloom"], "batch_id": ["minmax"], "value": ["minmax"]}


async def main(path: Path) -> None:
    table = await open_table(
        path,
        SCHEMA,
        timestamp="ts",
        partition_by="day",
        commit_interval=None,
        compaction_interval=None,
        segment_row_groups=1,
        row_group_size=400,
        skipping=SKIPPING,
    )
    batch_id = table.record.applied.get(APP_ID, -1) + 1
    while True:
        await table.append(make_batch(batch_id), app_id=APP_ID, batch_id=batch_id)
        print(batch_id, flush=True)
        batch_id += 1
        if batch_id % 5 == 0:  # merge the sealed segments: entries added and removed
            await table.compact(policy=POLICY)


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]))
