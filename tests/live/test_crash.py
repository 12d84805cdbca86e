"""Crash test with real processes: SIGKILL a writer at random moments, then recover.

A child process (``_crash_child.py``) opens a live file and appends commits of 1-20 rows in a
loop, printing ``seq num_rows parquet_size`` after every acknowledged commit. The parent kills
it with SIGKILL after a random delay, checks the directory, and starts the next child on the
same directory, so every child also recovers and resumes after a crash. The directory is
replaced by a fresh one once it holds MAX_SEQ commits (footers grow with every row group).

What the parent checks after each kill:

- every acknowledged commit is still a snapshot with the same row count and size, and the
  newest snapshot is either the last acknowledged commit or exactly one commit more. One more
  is allowed: a commit whose ``_pm`` header patch (the commit point) reached the file before
  the kill, but whose acknowledgement line was not yet written, is legitimately committed.
  The next child continues from it, so the parent adopts it into its history;
- the newest snapshot holds exactly the committed rows, each row id once, with every value
  equal to what the commits appended, and one random older snapshot does too;
- pyarrow (``page_checksum_verification=True``) reads the committed prefix bytes equal to us.

Half of the checks reopen the file (LiveFile.open, which runs recovery); the other half only
plan recovery (``recover(apply=False)``) and read, leaving the torn tail for the next child
to truncate; a fifth of the kills land from the child's start, inside its own open/recovery.

``STREAMWRITE_CRASH_KILLS`` sets the number of kills (20 for CI, >= 1000 nightly);
``STREAMWRITE_CRASH_SEED`` replays a run (the seed is printed).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import streamwrite
from streamwrite.live.file import LiveFile, recover
from tests.live._support import SCHEMA, assert_rows, pyarrow_read_prefix, run

KILLS = int(os.environ.get("STREAMWRITE_CRASH_KILLS", "20"))
SEED = int(os.environ.get("STREAMWRITE_CRASH_SEED", str(random.randrange(1 << 32))))
MAX_SEQ = 40
CHILD = Path(__file__).with_name("_crash_child.py")
ROOT = Path(__file__).resolve().parents[2]

State = tuple[int, int, int]
"""(seq, num_rows, parquet_size) of one commit."""


@dataclass
class Stats:
    kills: int = 0
    acknowledged: int = 0
    unreported: int = 0
    torn: int = 0
    during_open: int = 0
    directories: int = 1


@dataclass
class ChildReport:
    opened: tuple[int, int, int, int] | None
    acks: list[State]


def kill_at_random_moment(directory: Path, rng: random.Random) -> ChildReport:
    """Start a child on ``directory``, SIGKILL it after a random delay, parse what it said."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(directory), str(rng.getrandbits(32)), str(MAX_SEQ)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        head = b""
        if rng.random() < 0.2:
            # The random delay is the test: a kill anywhere from startup through open/recovery.
            time.sleep(rng.uniform(0.0, 0.8))
        else:
            head = proc.stdout.readline()  # opened; kill somewhere in the append loop
            time.sleep(rng.uniform(0.0, 0.25))  # the test: a kill at a random moment of the loop
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
    lines = out.decode().split("\n")
    lines.pop()  # a line cut by the kill (or "" after the last newline) acknowledges nothing
    opened = None
    acks: list[State] = []
    for line in lines:
        words = line.split()
        if words[0] == "open":
            seq, num_rows, size, torn = map(int, words[1:])
            opened = (seq, num_rows, size, torn)
        elif words[0] != "full":
            seq, num_rows, size = map(int, words)
            acks.append((seq, num_rows, size))
    return ChildReport(opened, acks)


def committed_state(directory: Path, reopen: bool) -> tuple[list[State], int]:
    """The committed snapshots and the torn data bytes, by reopening or by planning only."""
    if reopen:

        async def open_and_list() -> tuple[list[State], int]:
            async with await LiveFile.open(directory, schema=SCHEMA) as lf:
                torn = lf.recovery.torn_data_bytes if lf.recovery is not None else 0
                return [(s.seq, s.num_rows, s.parquet_size) for s in lf.snapshots()], torn

        return run(open_and_list)
    plan = recover(directory, apply=False)
    states = [(v.seq, v.metadata.num_rows or 0, v.parquet_size) for v in plan.versions]
    return states, plan.torn_data_bytes


def check_data(directory: Path, history: list[State], rng: random.Random) -> None:
    boundaries = [num_rows for _, num_rows, _ in history]
    table = streamwrite.read_table(directory)
    assert_rows(table, boundaries)
    third_party = pyarrow_read_prefix(directory, history[-1][2])
    assert third_party.equals(table), "pyarrow reads the committed prefix differently"
    j = rng.randrange(len(history))
    older = streamwrite.read_table(directory, snapshot=history[j][2])
    assert_rows(older, boundaries[: j + 1])


@pytest.mark.timeout(max(300, 3 * KILLS))
def test_sigkill_at_random_moments(tmp_path: Path) -> None:
    print(f"STREAMWRITE_CRASH_SEED={SEED} STREAMWRITE_CRASH_KILLS={KILLS}")
    rng = random.Random(SEED)
    stats = Stats()
    directory = tmp_path / "lf-0"
    history: list[State] = []  # every commit known to be committed, index = seq
    expected_torn = 0  # what the next child's recovery must truncate
    for kill in range(KILLS):
        where = f"seed {SEED}, kill {kill}, {directory.name}"
        report = kill_at_random_moment(directory, rng)
        stats.kills += 1
        if report.opened is None:
            stats.during_open += 1
        else:
            seq, num_rows, size, torn = report.opened
            if history:  # the child recovered to exactly what the parent last saw
                assert (seq, num_rows, size) == history[-1], where
                assert torn == expected_torn, where
            else:
                assert (seq, num_rows) == (0, 0), where
        acks = report.acks
        if acks:
            first = report.opened[0] + 1 if report.opened else 1
            assert [a[0] for a in acks] == list(range(first, first + len(acks))), where
        stats.acknowledged += len(acks)

        # Nothing is known yet: the file may not even exist; reopening creates or recovers it.
        reopen = kill % 2 == 0 or not history
        states, torn = committed_state(directory, reopen)
        stats.torn += torn > 0
        expected_torn = 0 if reopen else torn
        assert [s[0] for s in states] == list(range(len(states))), where
        known = list(history)
        if not known and report.opened is not None:
            known = [report.opened[:3]]  # commit 0, the creation
        known += [a for a in acks if a[0] >= len(known)]
        assert states[: len(known)] == known, f"{where}: an acknowledged commit changed"
        if not known:  # killed before it said "open": at most the empty creation commit
            assert len(states) == 1 and states[0][:2] == (0, 0), where
            known = states
        extra = len(states) - len(known)
        assert extra in (0, 1), f"{where}: {extra} commits past the last acknowledgement"
        if extra:
            stats.unreported += 1
            assert states[-1][1] > states[-2][1], where
        history = states
        check_data(directory, history, rng)

        if history[-1][0] >= MAX_SEQ:
            shutil.rmtree(directory)
            stats.directories += 1
            directory = tmp_path / f"lf-{stats.directories - 1}"
            history = []
            expected_torn = 0
    print(stats)
    assert stats.acknowledged > KILLS, "the children acknowledged too few commits to test much"
    assert stats.torn or KILLS < 30, "no kill left a torn tail: the kill timing tests nothing"
