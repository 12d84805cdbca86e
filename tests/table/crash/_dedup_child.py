"""Child process of ``test_dedup_crash``: clients sending requests with dedup keys, with
retries, until SIGKILLed.

Usage: ``python _dedup_child.py DIRECTORY RESEND_FILE SEED``. The child first re-sends every
key of RESEND_FILE (hex, one a line: every key sent to the table before, acknowledged or not,
as clients retry after the daemon restarts), spread over its clients, then sends new random
keys; one request in four re-sends a key sent earlier (a retry after a lost answer).

Writes to stdout, one line per ``os.write``: ``open`` once the table is open, ``sent KEY``
before a request's append is called, ``ack KEY 0|1`` once it is durable (1: skipped).
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import anyio

from streamwrite.table.api import open_table
from tests.table.crash._dedup_support import KEY_SIZE, SCHEMA, key_batch

NUM_CLIENTS = 6


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())  # one write per line; nothing buffered to lose


async def main(directory: Path, resend_file: Path, seed: int) -> None:
    resend = [bytes.fromhex(line) for line in resend_file.read_text().split()]
    rng = random.Random(seed)
    sent: list[bytes] = []
    async with await open_table(
        directory,
        SCHEMA,
        timestamp="ts",
        partition_by="day",
        segment_row_groups=4,
        commit_interval=0.005,
        compaction_interval=None,
        max_in_flight=16,
    ) as table:
        say("open")

        async def client(index: int) -> None:
            todo = resend[index::NUM_CLIENTS]
            while True:
                if todo:
                    key = todo.pop()
                elif sent and rng.random() < 0.25:
                    key = rng.choice(sent[-50:])  # a retry of a recent request
                else:
                    key = rng.randbytes(KEY_SIZE)
                sent.append(key)
                say(f"sent {key.hex()}")
                ticket = await table.append(key_batch(key), dedup_key=key, wait=False)
                commit = await ticket.durable()
                say(f"ack {key.hex()} {int(commit.skipped)}")

        async with anyio.create_task_group() as group:
            for index in range(NUM_CLIENTS):
                group.start_soon(client, index)


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))
