"""The SIGKILL crash test of ``test_table_crash`` on a nested table: the same harness (a pool
ingesting idempotent batches, killed at random moments, every committed prefix read by
pyarrow and by us, reopened and replayed) with batches that carry a list of structs of lists
and a map (``STREAMWRITE_CRASH_NESTED=1`` for the harness and its children). Kills:
``STREAMWRITE_NESTED_CRASH_KILLS`` (default 8)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
KILLS = os.environ.get("STREAMWRITE_NESTED_CRASH_KILLS", "8")


@pytest.mark.timeout(max(600, 20 * int(KILLS)))
def test_sigkill_nested_table_ingest(tmp_path: Path) -> None:
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        STREAMWRITE_CRASH_NESTED="1",
        STREAMWRITE_TABLE_CRASH_KILLS=KILLS,
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-s",
            f"--basetemp={tmp_path / 'run'}",
            "tests/table/crash/test_table_crash.py::test_sigkill_pool_ingest_at_random_moments",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=max(600, 20 * int(KILLS)),
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "STREAMWRITE_TABLE_CRASH_SEED=" in done.stdout  # the harness ran, seed printed
