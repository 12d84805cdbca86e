"""Regression tests for library bugs found by the table crash test and the ingest benchmark:
``flush()`` returning before queued background commits ran, and pool segments left in
``/dev/shm`` when a pool's whole process group is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from streamwrite.live.file import LiveFile
from streamwrite.pool.process import SEGMENT_PREFIX, ProcessPool
from streamwrite.table.api import open_table, read_snapshot
from streamwrite.testing import reference_table

ROOT = Path(__file__).resolve().parents[3]
CHILD = Path(__file__).with_name("_crash_child.py")


def _group_alive(pgid: int) -> bool:
    """Whether any process of the group ``pgid`` still exists (signal 0 probes, sends nothing)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_flush_waits_for_every_background_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Slow partition commits make the race deterministic: while the committer commits unit 2,
    # unit 3 waits in the stream buffer; flush() queues on the commit lock first, gets it when
    # unit 2 is done, and returns before the committer has even received unit 3.
    original = LiveFile.commit_encoded

    async def slow_commit(self: LiveFile, *args: Any, **kwargs: Any) -> Any:
        await anyio.sleep(0.05)
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(LiveFile, "commit_encoded", slow_commit)
    batch = reference_table(1000)

    async def go() -> tuple[int, int, int]:
        async with await open_table(tmp_path / "t", batch.schema, commit_rows=1000) as table:
            for _ in range(3):
                await table.append(batch)
            await table.flush()  # "Commit everything appended so far (and wait for ...)"
            committed = table.metrics.rows_committed
            readable = read_snapshot(tmp_path / "t").read().num_rows
            return table.metrics.rows_appended, committed, readable

    appended, committed, readable = anyio.run(go)
    assert (committed, readable) == (appended, appended)


def test_no_segments_leak_when_the_process_group_is_killed(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(tmp_path / "t"), "1000000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        cwd=ROOT,
        start_new_session=True,  # the child, its forkserver, workers and tracker: one group
    )
    assert proc.stdout is not None
    try:
        while not proc.stdout.readline()[:1].isdigit():  # a batch was encoded by the pool
            assert proc.poll() is None, "the child exited"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 10  # the group's other processes are not our children:
        while _group_alive(proc.pid):  # poll until the kernel has reaped every one of them
            assert time.monotonic() < deadline, "the killed process group is still alive"
            time.sleep(0.01)
        # Nothing survived to unlink them (unless another pool, e.g. a concurrent test run,
        # swept them already); the next pool to open sweeps segments of dead pids.

        async def open_and_close() -> None:
            pool = await ProcessPool.open(1)
            await pool.aclose()

        anyio.run(open_and_close)
        leaked = sorted(Path("/dev/shm").glob(f"{SEGMENT_PREFIX}{proc.pid}_*"))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stdout.close()
    assert not leaked, f"leaked segments: {[p.name for p in leaked]}"


def test_sweep_removes_only_segments_of_dead_parents(tmp_path: Path) -> None:
    from streamwrite.pool.process import sweep_dead_segments

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_pid = int(dead.stdout)  # that process has exited
    (tmp_path / f"{SEGMENT_PREFIX}{dead_pid}_abc").write_bytes(b"x")
    (tmp_path / f"{SEGMENT_PREFIX}{os.getpid()}_def").write_bytes(b"x")
    (tmp_path / f"{SEGMENT_PREFIX}1_ghi").write_bytes(b"x")  # init: alive, not ours
    (tmp_path / "other_file").write_bytes(b"x")
    assert sweep_dead_segments(tmp_path) == [f"{SEGMENT_PREFIX}{dead_pid}_abc"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"{SEGMENT_PREFIX}{os.getpid()}_def", f"{SEGMENT_PREFIX}1_ghi", "other_file"]
    )
