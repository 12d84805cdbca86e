"""Readers during appends: every read of the bare directory is a complete committed snapshot.

A writer task appends many small commits while a reader thread reads ``read_table(dir)`` in a
loop. Every read must succeed and hold exactly the rows of one committed snapshot (its row
count among the committed totals, every value equal to what those commits appended), and the
row counts a reader sees never go backwards.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path

import anyio
import anyio.lowlevel
import pyarrow as pa

import streamwrite
from streamwrite.live.file import LiveFile
from tests.live._support import SCHEMA, assert_rows, batch, run

COMMITS = 120


def test_reader_sees_only_committed_snapshots(tmp_path: Path) -> None:
    directory = tmp_path / "lf"
    rng = random.Random(7)
    totals = [0]
    done = threading.Event()
    reads: list[pa.Table] = []
    errors: list[BaseException] = []

    def reader() -> None:
        while not done.is_set():
            try:
                reads.append(streamwrite.read_table(directory))
            except BaseException as exc:  # any error is a failure: report it, keep reading
                errors.append(exc)

    async def writer() -> None:
        async with await LiveFile.open(directory, schema=SCHEMA, row_group_size=4) as lf:
            thread = threading.Thread(target=reader, daemon=True)
            thread.start()
            try:
                for _ in range(COMMITS):
                    rows = rng.randint(1, 10)
                    commit = await lf.append(batch(totals[-1], totals[-1] + rows))
                    totals.append(commit.num_rows)
                    await anyio.lowlevel.checkpoint()  # a yield between commits, not a wait
            finally:
                done.set()
                await anyio.to_thread.run_sync(thread.join)

    run(writer)
    assert not errors, f"{len(errors)} reads failed, first: {errors[0]!r}"
    assert len(reads) > 10, "the reader hardly ran"
    seen = [t.num_rows for t in reads]
    assert seen == sorted(seen), "a reader went back to an older snapshot"
    assert len(set(seen)) > 3, "the reader saw too few distinct snapshots to test much"
    position = {total: i for i, total in enumerate(totals)}
    for table in reads:
        assert table.num_rows in position, f"{table.num_rows} rows is no committed total"
        assert_rows(table, totals[: position[table.num_rows] + 1])
