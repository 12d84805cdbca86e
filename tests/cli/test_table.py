"""The command line on tables and live files, run as a real subprocess (``python -m
streamwrite``) on tables made by ``open_table``: inspect, verify and ``compact --status`` of a
table (also while another process holds it open for writing), torn tails, mistyped paths,
typed statistics, help and version, progress on a terminal, Ctrl-C."""

from __future__ import annotations

import datetime
import decimal
import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import streamwrite
from streamwrite.compaction.policy import CompactionPolicy
from streamwrite.format.txn import TXN_FILE, decode_txn
from streamwrite.table.api import open_table
from streamwrite.testing import reference_table

ROOT = Path(__file__).resolve().parents[2]
DAY_NS = 86_400 * 10**9


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streamwrite", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=ROOT,
    )


def _two_days(num_rows: int) -> pa.Table:
    table = reference_table(num_rows)
    ts = pc.cast(table["ts"], pa.int64()).to_numpy()
    ts = ts + (ts % 2) * DAY_NS
    return table.set_column(0, "ts", pa.array(ts, pa.timestamp("ns")))


def _make_table(path: Path, data: pa.Table, num_commits: int, **options: Any) -> None:
    size = data.num_rows // num_commits
    settings = {"timestamp": "ts", "partition_by": "day", "segment_row_groups": 2, **options}

    async def go() -> None:
        async with await open_table(
            path, data.schema, compaction_interval=None, **settings
        ) as table:
            for i in range(num_commits):
                await table.append(data.slice(i * size, size), app_id="job", batch_id=i)
                await table.flush()

    anyio.run(go)


@pytest.fixture
def table_path(tmp_path: Path) -> Path:
    path = tmp_path / "ticks"
    _make_table(path, _two_days(6_000), 6)
    return path


def _record(path: Path) -> Any:
    return decode_txn((path / TXN_FILE).read_bytes())


# -- inspect ---------------------------------------------------------------------------------


def test_inspect_a_table(table_path: Path) -> None:
    record = _record(table_path)
    result = run("inspect", str(table_path), "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["txn_version"] == record.version
    assert [p["name"] for p in info["partitions"]] == sorted(record.partitions)
    for p in info["partitions"]:
        assert [s["name"] for s in p["segments"]] == [s.name for s in record.partitions[p["name"]]]
        assert all(s["committed_size"] > 0 and s["dead_bytes"] > 0 for s in p["segments"])
    assert info["num_rows"] == streamwrite.read_table(table_path).num_rows == 6_000
    assert info["writer_pids"] == [] and info["retired"] == []
    assert info["applied"] == {"job": 5}
    assert "pins" in info and "not visible" in info["pins"]
    text = run("inspect", str(table_path))
    assert text.returncode == 0, text.stderr
    assert f"_txn version {record.version}" in text.stdout
    assert "writer holding the table: none" in text.stdout
    assert all(f"partition {name}" in text.stdout for name in record.partitions)


def test_inspect_a_partition_points_at_the_table(table_path: Path) -> None:
    partition = next(iter(_record(table_path).partitions))
    result = run("inspect", str(table_path / partition))
    assert result.returncode == 2 and "is a partition of a table" in result.stderr


def test_inspect_shows_retired_segments_after_compaction(table_path: Path) -> None:
    result = run("compact", str(table_path), "--grace", "600")
    assert result.returncode == 0, result.stderr
    info = json.loads(run("inspect", str(table_path), "--json").stdout)
    assert info["retired"] and all(r["on_disk"] for r in info["retired"])
    assert all(0 <= r["retired_seconds_ago"] < 600 for r in info["retired"])


# -- verify ----------------------------------------------------------------------------------


def test_verify_a_table(table_path: Path) -> None:
    result = run("verify", str(table_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("OK")
    record = _record(table_path)
    name, size = record.files()[0]
    data = table_path / name / "data.parquet"
    damaged = bytearray(data.read_bytes())
    damaged[size // 3] ^= 0x10
    data.write_bytes(bytes(damaged))
    result = run("verify", str(table_path))
    assert result.returncode == 1
    assert f"PROBLEM {name}:" in result.stdout


def test_verify_reports_a_torn_tail_of_a_table_segment(table_path: Path) -> None:
    name, size = _record(table_path).files()[-1]
    with open(table_path / name / "data.parquet", "ab") as f:
        f.write(b"torn bytes of a crashed append")
    result = run("verify", str(table_path))
    assert result.returncode == 1
    assert f"{name}: data.parquet holds 30 bytes past its committed size {size}" in result.stdout
    assert f"streamwrite recover {table_path} --apply" in result.stdout
    assert run("recover", str(table_path)).returncode == 0
    assert (table_path / name / "data.parquet").stat().st_size == size + 30  # a dry run
    applied = run("recover", str(table_path), "--apply")
    assert applied.returncode == 0, applied.stderr
    assert (table_path / name / "data.parquet").stat().st_size == size
    assert run("verify", str(table_path)).returncode == 0


def _live_file(path: Path) -> pa.Table:
    data = reference_table(2_000)

    async def go() -> None:
        async with await streamwrite.LiveFile.open(path, data.schema) as live:
            await live.append(data.slice(0, 1_000))
            await live.append(data.slice(1_000))

    anyio.run(go)
    return data


def _pyarrow_reads(path: Path) -> subprocess.CompletedProcess[str]:
    code = "import sys, pyarrow.parquet as pq; print(pq.read_table(sys.argv[1]).num_rows)"
    return subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=False
    )


def test_verify_reports_a_torn_tail_of_a_live_file(tmp_path: Path) -> None:
    path = tmp_path / "live"
    _live_file(path)
    assert run("verify", str(path)).returncode == 0
    with open(path / "data.parquet", "ab") as f:
        f.write(b"x" * 100)
    assert _pyarrow_reads(path / "data.parquet").returncode != 0  # the bare file is unreadable
    result = run("verify", str(path))
    assert result.returncode == 1, result.stdout
    assert "100 bytes past its last commit" in result.stdout
    assert f"Run: streamwrite recover {path} --apply" in result.stdout
    assert run("recover", str(path), "--apply").returncode == 0
    assert run("verify", str(path)).returncode == 0
    assert _pyarrow_reads(path / "data.parquet").stdout.strip() == "2000"


# -- compact --status while a writer holds the table ----------------------------------------

_WRITER = """
import sys, anyio
from streamwrite.table.api import open_table
from streamwrite.testing import reference_table

async def main():
    table = await open_table(sys.argv[1], compaction_interval=None)
    print("open", flush=True)
    await anyio.to_thread.run_sync(sys.stdin.readline)
    data = reference_table(10)
    await table.append(data, app_id="job", batch_id=6)
    await table.close()
    print("closed", flush=True)

anyio.run(main)
"""


def test_compact_status_is_read_only_while_a_writer_holds_the_table(table_path: Path) -> None:
    lock = table_path / "_lock"
    before = (_record(table_path), lock.stat().st_ino)
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(table_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert writer.stdout is not None and writer.stdin is not None
        assert writer.stdout.readline().strip() == "open"
        status = run("compact", str(table_path), "--status")
        assert status.returncode == 0, status.stderr
        assert f"A writer (pid {writer.pid}) holds the table" in status.stdout
        for name in before[0].partitions:
            assert f"{name}: compact" in status.stdout or f"{name}: leave" in status.stdout
        as_json = run("compact", str(table_path), "--status", "--json")
        assert [s["partition"] for s in json.loads(as_json.stdout)] == sorted(before[0].partitions)
        info = json.loads(run("inspect", str(table_path), "--json").stdout)
        assert info["writer_pids"] == [writer.pid]
        busy = run("compact", str(table_path))
        assert busy.returncode == 2 and "open for writing elsewhere" in busy.stderr
        assert (_record(table_path), lock.stat().st_ino) == before
        writer.stdin.write("go\n")
        writer.stdin.flush()
        assert writer.stdout.readline().strip() == "closed"  # the writer kept its lock
        assert writer.wait(timeout=60) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait(timeout=60)
    assert _record(table_path).applied == {"job": 6}


def test_compact_status_decides_as_compact(table_path: Path) -> None:
    status = run("compact", str(table_path), "--status", "--target-rows", "4000")
    assert status.returncode == 0, status.stderr
    planned = {
        line.split(":")[0]: line.split(": compact ")[1].split(", ")
        for line in status.stdout.splitlines()
        if ": compact " in line
    }
    assert planned, status.stdout
    done = run("compact", str(table_path), "--target-rows", "4000", "--grace", "0", "--json")
    assert done.returncode == 0, done.stderr
    merged = {r["partition"]: list(r["merged"]) for r in json.loads(done.stdout)}
    assert merged == planned


# -- paths that are not what a command needs -------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["inspect"],
        ["verify"],
        ["recover"],
        ["recover", "--apply"],
        ["compact"],
        ["compact", "--status"],
    ],
)
def test_a_mistyped_path_creates_nothing(tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "tikcs"
    result = run(command[0], str(missing), *command[1:])
    assert result.returncode == 2
    assert f"'{missing}' does not exist" in result.stderr
    assert not missing.exists() and list(tmp_path.iterdir()) == []


def test_compact_on_a_directory_that_is_no_table_creates_no_lock(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    result = run("compact", str(tmp_path / "data"))
    assert result.returncode == 2
    assert "is not a table (a directory holding _txn)" in result.stderr
    assert list((tmp_path / "data").iterdir()) == []
    result = run("inspect", str(tmp_path / "data"))
    assert result.returncode == 2 and "not a table (it has no _txn)" in result.stderr
    result = run("recover", str(tmp_path / "data"), "--apply")
    assert result.returncode == 2 and "is not a live file" in result.stderr
    assert list((tmp_path / "data").iterdir()) == []
    streamwrite.write_table(pa.table({"a": [1]}), tmp_path / "data" / "part-0.parquet")
    result = run("verify", str(tmp_path / "data"))
    assert result.returncode == 2
    assert (
        "is a directory of Parquet files" in result.stderr
        and "give one of its files" in result.stderr
    )


# -- typed statistics ---------------------------------------------------------------------


def test_statistics_print_as_typed_values(tmp_path: Path) -> None:
    path = tmp_path / "typed.parquet"
    streamwrite.write_table(
        pa.table(
            {
                "ts": pa.array(
                    [datetime.datetime(2026, 11, 22, 9, 30), datetime.datetime(2026, 11, 22, 16)],
                    pa.timestamp("us", tz="UTC"),
                ),
                "ns": pa.array(
                    [1_700_000_000_123_456_789, 1_700_000_001_000_000_000], pa.timestamp("ns")
                ),
                "sym": ["MSFT", "AAPL"],
                "px": pa.array(
                    [decimal.Decimal("101.2500"), decimal.Decimal("99.5000")], pa.decimal128(12, 4)
                ),
                "day": [datetime.date(2026, 11, 21), datetime.date(2026, 11, 22)],
                "ok": [True, False],
                "raw": pa.array([b"\x00\xff", b"\x01"], pa.binary()),
            }
        ),
        path,
    )
    info = json.loads(run("inspect", str(path), "--json").stdout)
    stats = {c["column"]: c["statistics"] for c in info["row_groups"][0]["columns"]}
    assert (stats["ts"]["min"], stats["ts"]["max"]) == (
        "2026-11-22T09:30:00.000000Z",
        "2026-11-22T16:00:00.000000Z",
    )
    assert stats["ns"]["min"] == "2023-11-14T22:13:20.123456789"
    assert (stats["sym"]["min"], stats["sym"]["max"]) == ("AAPL", "MSFT")
    assert (stats["px"]["min"], stats["px"]["max"]) == ("99.5000", "101.2500")
    assert (stats["day"]["min"], stats["day"]["max"]) == ("2026-11-21", "2026-11-22")
    assert (stats["ok"]["min"], stats["ok"]["max"]) == (False, True)
    assert (stats["raw"]["min"], stats["raw"]["max"]) == ("0x00ff", "0x01")
    text = run("inspect", str(path)).stdout
    assert "min=2026-11-22T09:30:00.000000Z max=2026-11-22T16:00:00.000000Z" in text
    assert "min=AAPL max=MSFT" in text and "min=99.5000 max=101.2500" in text


# -- help, version ---------------------------------------------------------------------------


def test_help_shows_the_whole_usage_and_version() -> None:
    result = run("--help")
    assert result.returncode == 0
    for needle in ("inspect", "verify", "recover", "compact", "examples:", "exit status:", "130"):
        assert needle in result.stdout, needle
    compact = run("compact", "--help")
    assert "--status" in compact.stdout and "examples:" in compact.stdout
    version = run("--version")
    assert version.stdout.strip() == f"streamwrite {streamwrite.__version__}"


# -- progress and Ctrl-C, on a terminal ------------------------------------------------------


class Terminal:
    """The command line with stdout and stderr on a pseudo-terminal."""

    def __init__(self, *args: str) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "streamwrite", *args],
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=slave,
            cwd=ROOT,
        )
        os.close(slave)
        self.output = b""

    def read_until(self, needle: bytes, timeout: float = 120) -> bool:
        deadline = time.monotonic() + timeout
        while needle not in self.output and time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # the process closed the terminal
                    return needle in self.output
                if not chunk:
                    break
                self.output += chunk
        return needle in self.output

    def finish(self, timeout: float = 120) -> tuple[int, str]:
        self.read_until(b"\x00", timeout=0.5)
        code = self.process.wait(timeout=timeout)
        self.read_until(b"\x00", timeout=0.5)
        os.close(self.master)
        return code, self.output.decode(errors="replace")


def test_progress_shows_on_a_terminal_only(table_path: Path) -> None:
    terminal = Terminal("verify", str(table_path))
    code, output = terminal.finish()
    assert code == 0 and "OK:" in output
    assert "segments" in output and "100%" in output  # tqdm's bar
    quiet = Terminal("verify", str(table_path), "--quiet")
    code, output = quiet.finish()
    assert code == 0 and "100%" not in output
    piped = run("verify", str(table_path))
    assert piped.returncode == 0 and piped.stderr == "" and "100%" not in piped.stdout


def _big_file(path: Path) -> None:
    data = reference_table(200_000)
    streamwrite.write_table(data, path, row_group_size=500, data_page_row_limit=100)


def test_ctrl_c_during_verify_prints_one_line(tmp_path: Path) -> None:
    path = tmp_path / "big.parquet"
    _big_file(path)
    terminal = Terminal("verify", str(path))
    assert terminal.read_until(b"row groups"), terminal.output  # the progress bar is up
    terminal.process.send_signal(signal.SIGINT)
    code, output = terminal.finish()
    assert code == 130, output
    assert "Traceback" not in output
    assert (
        output.rstrip()
        .splitlines()[-1]
        .endswith("streamwrite verify: interrupted: nothing was changed (verification incomplete)")
    )


def test_ctrl_c_during_compaction_says_what_was_published(tmp_path: Path) -> None:
    """Ctrl-C while the first of three partitions is being written: one line, exit 130, and
    the line matches the table (nothing published, or the partitions it names)."""
    path = tmp_path / "ticks"
    data = reference_table(450_000)
    ts = pc.cast(data["ts"], pa.int64()).to_numpy()
    days = ts + (np.arange(data.num_rows) % 3) * DAY_NS
    _make_table(
        path,
        data.set_column(0, "ts", pa.array(days, pa.timestamp("ns"))),
        30,
        segment_row_groups=8,
        compaction=CompactionPolicy(grace_seconds=0),
    )
    before = _record(path)
    assert len(before.partitions) == 3
    terminal = Terminal("compact", str(path), "--sort", "--target-rows", "50000")
    assert terminal.read_until(b"write"), terminal.output  # the first new segment is being written
    terminal.process.send_signal(signal.SIGINT)
    code, output = terminal.finish()
    assert code == 130, output
    assert "Traceback" not in output
    last = output.rstrip().splitlines()[-1]
    after = _record(path)
    changed = [p for p in before.partitions if after.partitions[p] != before.partitions[p]]
    if "the table is unchanged" in last:
        assert last.endswith("streamwrite compact: compaction cancelled; the table is unchanged")
        assert after == before
    else:
        assert f"cancelled after {len(changed)} partition(s) were compacted and published" in last
        assert 0 < len(changed) < 3
    for partition in before.partitions:  # no unpublished segment is left behind
        listed = {s.name for s in after.partitions[partition]}
        assert {p.name for p in (path / partition).iterdir()} == listed
    assert streamwrite.read_table(path).num_rows == 450_000
