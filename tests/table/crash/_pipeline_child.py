"""Child process of ``test_pipeline_crash``: pipelined or group commits until SIGKILLed.

Usage: ``python _pipeline_child.py DIRECTORY MODE`` with MODE ``pipelined`` or ``group``.

- ``pipelined``: one task appends batches of app ``pipe`` with ``wait=False`` (ids from the
  ``_txn``'s ``applied`` + 1 on), another awaits the tickets in order;
- ``group``: ``NUM_APPS`` tasks append concurrently, each its own app id, ``wait=True``, so
  their batches share commits.

Writes to stdout, one line per ``os.write``: ``open`` once the table is open, then
``APP K`` once batch ``K`` of ``APP`` is acknowledged durable.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio

from streamwrite.table.api import CommitTicket, open_table
from tests.table.crash._pipeline_support import GROUP_APPS, PIPELINED_APP, SCHEMA, app_batch


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())  # one write per line; nothing buffered to lose


async def main(directory: Path, mode: str) -> None:
    async with await open_table(
        directory,
        SCHEMA,
        timestamp="ts",
        partition_by="day",
        segment_row_groups=4,
        compaction_interval=None,
        max_in_flight=8,
    ) as table:
        applied = dict(table.record.applied)
        say("open")
        if mode == "pipelined":
            send, receive = anyio.create_memory_object_stream[tuple[int, CommitTicket]](16)

            async def acknowledge() -> None:
                async with receive:
                    async for k, ticket in receive:
                        commit = await ticket.durable()
                        assert not commit.skipped, commit
                        say(f"{PIPELINED_APP} {k}")

            async with anyio.create_task_group() as group:
                group.start_soon(acknowledge)
                async with send:
                    k = applied.get(PIPELINED_APP, -1) + 1
                    while True:
                        batch = app_batch(PIPELINED_APP, k)
                        ticket = await table.append(
                            batch, app_id=PIPELINED_APP, batch_id=k, wait=False
                        )
                        await send.send((k, ticket))
                        k += 1
        else:

            async def appender(app: str) -> None:
                k = applied.get(app, -1) + 1
                while True:
                    commit = await table.append(app_batch(app, k), app_id=app, batch_id=k)
                    assert commit is not None and not commit.skipped, commit
                    say(f"{app} {k}")
                    k += 1

            async with anyio.create_task_group() as group:
                for app in GROUP_APPS:
                    group.start_soon(appender, app)


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]), sys.argv[2])
