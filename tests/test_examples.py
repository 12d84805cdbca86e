"""The quick start example: it runs, cleans up after itself, never deletes what it did not make,
and Ctrl-C prints one line saying what was committed."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import streamwrite

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "examples" / "quickstart.py"


def _quickstart(out: Path, *args: str) -> list[str]:
    return [sys.executable, str(QUICKSTART), "--workers", "1", "--out", str(out), *args]


def _has_committed_rows(path: Path) -> bool:
    if not (path / "_txn").exists():
        return False
    return streamwrite.read_table(path).num_rows > 0


def test_quickstart_runs_and_leaves_nothing_behind(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    proc = subprocess.run(
        _quickstart(out, "--seconds", "2"), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "every one equal in streamwrite, pyarrow" in proc.stdout
    assert sorted(p.name for p in out.iterdir()) == [".streamwrite-quickstart"]
    # A second run may replace its own output; --keep keeps the table for the CLI hints.
    proc = subprocess.run(
        _quickstart(out, "--seconds", "1", "--keep"), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "trades" / "_txn").is_file()
    assert f"streamwrite inspect {out / 'trades'}" in proc.stdout


def test_quickstart_refuses_a_directory_it_did_not_make(tmp_path: Path) -> None:
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    proc = subprocess.run(
        _quickstart(tmp_path, "--seconds", "1"), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode != 0
    assert "not empty and was not made by this demo" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precious.txt"]
    assert precious.read_text() == "keep me"
    proc = subprocess.run(
        _quickstart(precious, "--seconds", "1"), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode != 0 and "is a file" in proc.stderr
    assert precious.read_text() == "keep me"


def test_ctrl_c_prints_one_line_with_what_was_committed(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    proc = subprocess.Popen(
        _quickstart(out, "--seconds", "60"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # The demo is another OS process that says nothing until it ends: poll the table it writes
    # (with a deadline) until it holds committed rows, then interrupt it.
    deadline = time.monotonic() + 120
    while not _has_committed_rows(out / "trades"):
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "the demo committed nothing in 120 s"
        time.sleep(0.1)  # poll interval
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr[-3000:]
    assert lines[0].startswith("interrupted: ") and "rows are committed" in lines[0]


def test_daemon_clients_example_writes_with_every_client() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "daemon_clients.py")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    for line in (
        "sensors: 1 rows",
        "trades: 1000 rows",
        "weather: 10 rows",
        "devices: 9 rows",
    ):
        assert line in out, out
    assert out.count("flight ack:") == 4 and out.count("'skipped': True") == 1
