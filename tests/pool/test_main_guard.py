"""A script that opens a ProcessPool outside ``if __name__ == "__main__":`` fails at once.

Pool workers (forkserver or spawn) import the user's main module again; without the guard its
top-level code runs again in every worker (the README's snippet did so and deleted files).
``ProcessPool.open`` refuses that case before any worker starts, naming the fix; a guarded
script, a function called from the guard, and ``python -c`` work.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

BODY = """
import anyio
from streamwrite import ProcessPool

with open({marker!r}, "a") as f:
    f.write("top level ran\\n")

async def main():
    async with await ProcessPool.open(2, start_method={method!r}) as pool:
        print("pool size", pool.size)
"""


def _run(script: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env
    )


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_an_unguarded_script_fails_at_once_naming_the_fix(tmp_path: Path, method: str) -> None:
    marker = tmp_path / "runs.txt"
    script = tmp_path / "unguarded.py"
    script.write_text(BODY.format(marker=str(marker), method=method) + "anyio.run(main)\n")
    proc = _run(script)
    assert proc.returncode != 0
    assert "ConfigError" in proc.stderr
    assert 'if __name__ == "__main__":' in proc.stderr
    assert str(script) in proc.stderr
    assert marker.read_text() == "top level ran\n"  # once: no worker re-ran the script


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_a_guarded_script_runs_its_top_level_once(tmp_path: Path, method: str) -> None:
    marker = tmp_path / "runs.txt"
    script = tmp_path / "guarded.py"
    script.write_text(
        BODY.format(marker=str(marker), method=method)
        + textwrap.dedent(
            """
            def go():
                anyio.run(main)

            if __name__ == "__main__":
                go()
            """
        )
    )
    proc = _run(script)
    assert proc.returncode == 0, proc.stderr
    assert "pool size 2" in proc.stdout
    # The guarded call ran once; workers import the module as __mp_main__ (top level again,
    # which is why the guard matters) but never reach the guarded code.
    assert proc.stdout.count("pool size") == 1


def test_python_dash_c_has_no_script_to_reimport(tmp_path: Path) -> None:
    code = (
        "import anyio\nfrom streamwrite import ProcessPool\n"
        "async def main():\n"
        "    async with await ProcessPool.open(1) as pool:\n"
        "        print('ok', pool.size)\n"
        "anyio.run(main)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert "ok 1" in proc.stdout
