"""Child process of ``test_evolution_crash``: appends batches and adds columns until killed.

Usage: ``python _evolve_child.py DIRECTORY MAX_BATCH``.

Opens the table (inline executor, day partitions, tiny segments) inside ``async with``
(background commits) and, for ``k`` = ``applied["crash"]`` + 1 .. MAX_BATCH: appends
:func:`wide_batch` (``make_batch(k)`` plus one column per added column) with ``app_id="crash",
batch_id=k, wait=False``; every :data:`ADD_EVERY` batches calls ``add_columns`` with the next
column ``c<N>`` (int64) while that append is in flight (the schema change races the commit
pipeline); then waits for the append's ticket. Lines on stdout, one ``os.write`` each:

- ``open APPLIED NUM_ADDED`` once the table is open;
- ``added N`` after ``add_columns`` of column ``c<N>`` returned (durable);
- ``K`` after the append of batch ``K`` is durable; ``full`` after MAX_BATCH.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa

from streamwrite.format.txn import TXN_FILE, decode_txn
from streamwrite.table.api import open_table
from tests.table.crash._support import APP_ID, SCHEMA, SEGMENT_ROW_GROUPS, make_batch

ADD_EVERY = 3
"""A column is added after every third batch."""
OPTIONS: dict[str, Any] = {
    "timestamp": "ts",
    "partition_by": "day",
    "segment_row_groups": SEGMENT_ROW_GROUPS,
    "row_group_size": 300,
    "commit_interval": None,
    "compaction_interval": None,
}


def wide_batch(batch_id: int, schema: pa.Schema) -> pa.Table:
    """``make_batch(batch_id)`` with every added column of ``schema`` holding ``batch_id``."""
    batch = make_batch(batch_id)
    for field in schema:
        if field.name not in batch.column_names:
            batch = batch.append_column(field, pa.array(np.full(batch.num_rows, batch_id)))
    return batch


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())  # one write per line; nothing buffered to lose


async def main(directory: Path, max_batch: int) -> None:
    exists = (directory / TXN_FILE).exists()
    table = await open_table(directory, None if exists else SCHEMA, **OPTIONS)
    applied = decode_txn((directory / TXN_FILE).read_bytes()).applied.get(APP_ID, -1)
    added = len(table.schema) - len(SCHEMA)
    say(f"open {applied} {added}")
    async with table:
        for k in range(applied + 1, max_batch + 1):
            batch = wide_batch(k, table.schema)
            ticket = await table.append(batch, app_id=APP_ID, batch_id=k, wait=False)
            if k % ADD_EVERY == 0:
                await table.add_columns([pa.field(f"c{added}", pa.int64())])
                say(f"added {added}")
                added += 1
            commit = await ticket.durable()
            assert not commit.skipped, (k, commit)
            say(str(k))
        say("full")
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]), int(sys.argv[2]))
