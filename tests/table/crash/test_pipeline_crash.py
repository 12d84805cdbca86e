"""Crash test of pipelined and group commits: SIGKILL the writer, then check every ticket.

A child process (``_pipeline_child.py``) appends to a table partitioned by day, alternately
in two modes: **pipelined** (one task appends batches with ``wait=False`` while another awaits
the tickets in order) and **group** (eight tasks append concurrently, each its own app id, so
their batches share commits). It prints ``APP K`` once batch ``K`` of ``APP`` is durable. The
parent kills it after a random delay and checks the table through a fresh snapshot, with the
next child recovering from the crash:

- every acknowledged batch is in the table, each of its rows exactly once;
- no batch is half-present: a batch's rows are all there or none is;
- per app, the batches present are exactly ``0..applied[app]`` of the ``_txn`` (commits keep the
  order of appends; a batch committed but not yet acknowledged when the kill came counts as
  committed);
- every row sits in the partition of its day (read by pyarrow).

``STREAMWRITE_PIPELINE_CRASH_KILLS`` sets the number of kills (8 for CI, large nightly);
``STREAMWRITE_PIPELINE_CRASH_SEED`` replays a run (the seed is printed).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from streamwrite.io.txn import read_txn
from streamwrite.table.api import read_snapshot
from streamwrite.table.state import segment_data_path
from tests.table.crash._pipeline_support import batch_rows

KILLS = int(os.environ.get("STREAMWRITE_PIPELINE_CRASH_KILLS", "8"))
SEED = int(os.environ.get("STREAMWRITE_PIPELINE_CRASH_SEED", str(random.randrange(1 << 32))))
CHILD = Path(__file__).with_name("_pipeline_child.py")
ROOT = Path(__file__).resolve().parents[3]
MAX_ROWS = 150_000
"""A fresh table once this many rows are committed (footers grow per commit)."""


def kill_at_random_moment(directory: Path, mode: str, rng: random.Random) -> list[str]:
    """Run a child on ``directory``, SIGKILL it after a random delay; its complete lines."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(directory), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        head = proc.stdout.readline()
        time.sleep(rng.uniform(0.05, 1.0))  # the test: a kill at a random moment of the commits
        proc.kill()
        proc.wait()
        out = head + proc.stdout.read()
        err = proc.stderr.read().decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -9, f"the child exited by itself ({proc.returncode}): {err}"
    assert head == b"open\n", f"the child did not open the table: {err}"
    lines = out.decode().split("\n")
    lines.pop()  # a line cut by the kill (or "" after the last newline) acknowledges nothing
    return lines[1:]


@pytest.mark.timeout(max(300, 10 * KILLS))
def test_sigkill_during_pipelined_and_group_commits(tmp_path: Path) -> None:
    print(f"STREAMWRITE_PIPELINE_CRASH_SEED={SEED} STREAMWRITE_PIPELINE_CRASH_KILLS={KILLS}")
    rng = random.Random(SEED)
    directory = tmp_path / "t0"
    acknowledged: dict[str, int] = {}  # app -> highest batch id acknowledged durable
    committed: dict[str, int] = {}  # app -> applied[app] of the _txn after the last kill
    num_acks = num_tables = 0
    apps_seen: set[str] = set()
    for kill in range(KILLS):
        where = f"seed {SEED}, kill {kill}, {directory.name}"
        mode = "pipelined" if kill % 2 == 0 else "group"
        expected: dict[
            str, int
        ] = {}  # app -> the next batch id to acknowledge: the child resumes after
        for line in kill_at_random_moment(directory, mode, rng):  # what _txn had committed
            app, k = line.split()
            assert int(k) == expected.get(app, committed.get(app, -1) + 1), (
                f"{where}: {app}'s acknowledgements are not consecutive from its last commit"
            )
            expected[app] = int(k) + 1
            acknowledged[app] = int(k)
            num_acks += 1

        snapshot = read_snapshot(directory)
        record_applied = dict(read_txn(directory).applied)
        committed = record_applied
        rows = snapshot.read()
        present: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
        for app, batch_id, row in zip(
            rows.column("app").to_pylist(),
            rows.column("batch_id").to_pylist(),
            rows.column("row").to_pylist(),
            strict=True,
        ):
            present[app][batch_id].append(row)
        for app in set(present) | set(acknowledged) | set(record_applied):
            apps_seen.add(app)
            last = record_applied.get(app, -1)
            assert last >= acknowledged.get(app, -1), f"{where}: acknowledged {app} lost"
            assert sorted(present[app]) == list(range(last + 1)), (
                f"{where}: {app}'s batches present are not 0..{last}"
            )
            for batch_id, batch in present[app].items():
                assert sorted(batch) == list(range(batch_rows(app, batch_id))), (
                    f"{where}: batch {batch_id} of {app} is not present exactly once, whole"
                )
        for name, size in snapshot.files:  # each partition holds only rows of its day
            day = name.split("/")[0].removeprefix("ts_day=")
            # The committed prefix: a killed child may have left a torn tail past it.
            prefix = segment_data_path(directory / name).read_bytes()[:size]
            segment = pq.read_table(pa.BufferReader(prefix), columns=["ts"]).column("ts")
            assert set(pc.strftime(segment, format="%Y-%m-%d").to_pylist()) <= {day}, where

        if rows.num_rows >= MAX_ROWS:
            shutil.rmtree(directory)
            num_tables += 1
            directory = tmp_path / f"t{num_tables}"
            acknowledged, committed = {}, {}
    print(f"acknowledged batches: {num_acks}, apps: {sorted(apps_seen)}, tables: {num_tables + 1}")
    assert num_acks > KILLS, "the children acknowledged too few batches to test much"
    assert len(apps_seen) > 1 or KILLS < 2, "the group mode never acknowledged a batch"
