"""Crash test of idempotent appends: SIGKILL a writer whose clients retry, then re-send all.

A child process (``_dedup_child.py``) runs six clients appending requests to a table
partitioned by day, each request a batch that is a function of its random 16-byte dedup key;
one request in four re-sends a recent key (a retry after a lost answer), and a new child first
re-sends **every** key sent to the table before (acknowledged or not: a client retries
whatever it did not see acknowledged, and an answer may be lost after the commit). The parent
kills the child after a random delay and checks the table through a fresh snapshot:

- every acknowledged key's rows are in the table, each row exactly once;
- every key present was sent, and its rows are all there exactly once (never half, never
  twice), whatever was acknowledged;
- a key already in the table before a child started is acknowledged by it only as skipped.

Every ``TABLE_KILLS`` kills (and at the end) the parent re-sends every key sent to the table
itself and then every sent key is present exactly once; then a fresh table starts.

``STREAMWRITE_DEDUP_CRASH_KILLS`` sets the number of kills (10 for CI, 100+ once);
``STREAMWRITE_DEDUP_CRASH_SEED`` replays a run (the seed is printed).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import anyio
import pyarrow.compute as pc
import pytest

from streamwrite.table.api import open_table, read_snapshot
from tests.table.crash._dedup_support import SCHEMA, key_batch, key_rows

KILLS = int(os.environ.get("STREAMWRITE_DEDUP_CRASH_KILLS", "10"))
SEED = int(os.environ.get("STREAMWRITE_DEDUP_CRASH_SEED", str(random.randrange(1 << 32))))
CHILD = Path(__file__).with_name("_dedup_child.py")
ROOT = Path(__file__).resolve().parents[3]
TABLE_KILLS = 10
"""Kills per table: then every sent key is re-sent, checked, and a fresh table starts."""


def kill_at_random_moment(directory: Path, resend: list[bytes], rng: random.Random) -> list[str]:
    """Run a child on ``directory`` re-sending ``resend`` first, SIGKILL it after a random
    delay; its complete lines."""
    resend_file = directory.with_name(directory.name + ".resend")
    resend_file.write_text("".join(f"{key.hex()}\n" for key in resend))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(directory), str(resend_file), str(rng.randrange(1 << 32))],
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


def present_keys(directory: Path, where: str) -> set[bytes]:
    """The keys in the table's newest snapshot; each one's rows exactly once, whole."""
    rows = read_snapshot(directory).read(["key", "row"])
    counts = Counter(
        zip(rows.column("key").to_pylist(), rows.column("row").to_pylist(), strict=True)
    )
    twice = [row for row, count in counts.items() if count > 1]
    assert not twice, f"{where}: {len(twice)} rows are present more than once, e.g. {twice[:3]}"
    per_key = Counter(rows.column("key").to_pylist())
    for hex_key, num_rows in per_key.items():
        assert num_rows == key_rows(bytes.fromhex(hex_key)), (
            f"{where}: key {hex_key} has {num_rows} rows, not its request's "
            f"{key_rows(bytes.fromhex(hex_key))}"
        )
    assert pc.min(rows.column("row")).as_py() in (None, 0)
    return {bytes.fromhex(k) for k in per_key}


def resend_all(directory: Path, keys: list[bytes]) -> int:
    """Re-send every key in this process (as clients would after the last restart).

    Returns:
        How many were written (not skipped).
    """

    async def run() -> int:
        table = await open_table(directory, SCHEMA, compaction_interval=None, commit_interval=None)
        tickets = [await table.append(key_batch(k), dedup_key=k, wait=False) for k in keys]
        await table.flush()
        written = sum([not (await ticket.durable()).skipped for ticket in tickets])
        await table.close()
        return written

    return int(anyio.run(run))


@pytest.mark.timeout(max(300, 10 * KILLS))
def test_sigkill_with_retried_dedup_keys(tmp_path: Path) -> None:
    print(f"STREAMWRITE_DEDUP_CRASH_SEED={SEED} STREAMWRITE_DEDUP_CRASH_KILLS={KILLS}")
    rng = random.Random(SEED)
    stats: Counter[str] = Counter()
    directory = tmp_path / "t0"
    sent: dict[bytes, None] = {}  # every key sent to the current table, in order
    acknowledged: set[bytes] = set()
    present: set[bytes] = set()

    def finish_table(where: str) -> None:
        nonlocal present
        keys = list(sent)
        written = resend_all(directory, keys)
        after = present_keys(directory, where)
        assert after == set(keys), f"{where}: after re-sending every key, keys are missing"
        assert written == len(after - present), f"{where}: a re-sent key was written twice"
        stats["written_by_final_resend"] += written
        stats["tables"] += 1
        present = after

    for kill in range(KILLS):
        where = f"seed {SEED}, kill {kill}, {directory.name}"
        before = present
        for line in kill_at_random_moment(directory, list(sent), rng):
            kind, hex_key, *rest = line.split()
            key = bytes.fromhex(hex_key)
            if kind == "sent":
                stats["sent"] += 1
                stats["retries"] += key in sent
                sent.setdefault(key)
                continue
            assert kind == "ack", line
            skipped = rest == ["1"]
            stats["acks_skipped" if skipped else "acks_written"] += 1
            assert skipped or key not in before, (
                f"{where}: key {hex_key} was in the table before this child, and written again"
            )
            if skipped and key in before and key not in acknowledged:
                stats["lost_answers_retried"] += 1  # committed, unacknowledged, then skipped
            acknowledged.add(key)
        present = present_keys(directory, where)
        assert acknowledged <= present, f"{where}: acknowledged keys are missing"
        assert present <= set(sent), f"{where}: a key present was never sent"
        stats["kills"] += 1
        if kill % TABLE_KILLS == TABLE_KILLS - 1 or kill == KILLS - 1:
            finish_table(where)
            directory = tmp_path / f"t{kill + 1}"
            sent, acknowledged, present = {}, set(), set()
    print(dict(stats))
    assert stats["acks_written"] > KILLS, "the children acknowledged too few requests"
    assert stats["acks_skipped"] > 0, "no retry was ever skipped"
