"""Child process of ``test_crash``: appends commits to a live file until it is SIGKILLed.

Usage: ``python _crash_child.py DIRECTORY SEED MAX_SEQ``

Writes to stdout, one flushed line each (a single ``write`` per line):

- ``open SEQ NUM_ROWS PARQUET_SIZE TORN_BYTES`` once the file is open (created or recovered);
- ``SEQ NUM_ROWS PARQUET_SIZE`` after every acknowledged commit;
- ``full`` when commit MAX_SEQ is reached (then it waits to be killed).

Commit ``n`` appends ``reference_table(size, start_row=rows_before)``, so row ids are unique
and the parent can rebuild every expected value from the commit boundaries alone.

A commit is a few file actions (data write, fsync, ``_pm`` append, header patch, fsync) that
take well under a millisecond together, so a kill at a random moment would almost always land
between commits, or on a child that is already ``full``. To make kills inside a commit (the
torn tails recovery must truncate) common, the child stalls before a random action of a third
of its commits, for up to STALL_SECONDS; the actions themselves are the product's.
"""

from __future__ import annotations

import os
import random
import sys
import time

import anyio

from streamwrite.layout.actions import Action
from streamwrite.live.file import open_live_file
from streamwrite.testing import reference_table

MAX_BATCH = 20
ROW_GROUP_SIZE = 8  # a batch of up to 20 rows becomes 1-3 row groups
STALL_SHARE = 1 / 3  # the share of commits that stall before one of their actions
STALL_SECONDS = 0.03


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())  # one write per line; nothing buffered to lose


async def main(directory: str, seed: int, max_seq: int) -> None:
    rng = random.Random(seed)
    stall_at = -1  # the index of the action of this commit to stall before, or -1

    def stall(_action: Action) -> None:
        nonlocal stall_at
        if stall_at == 0:
            time.sleep(rng.uniform(0.0, STALL_SECONDS))
        stall_at -= 1

    schema = reference_table(1).schema
    lf = await open_live_file(
        directory, schema=schema, action_hook=stall, row_group_size=ROW_GROUP_SIZE
    )
    last = lf.last_commit
    torn = lf.recovery.torn_data_bytes if lf.recovery is not None else 0
    say(f"open {last.seq} {last.num_rows} {last.parquet_size} {torn}")
    while last.seq < max_seq:
        size = rng.randint(1, MAX_BATCH)
        stall_at = rng.randrange(6) if rng.random() < STALL_SHARE else -1
        last = await lf.append(reference_table(size, start_row=last.num_rows))
        say(f"{last.seq} {last.num_rows} {last.parquet_size}")
    say("full")
    await anyio.sleep_forever()  # until the parent's SIGKILL


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
