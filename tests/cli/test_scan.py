"""``streamwrite scan``, run as a real subprocess on a table, a live file and a plain Parquet
file: exactly the rows the filter keeps (checked against ``pyarrow.compute`` on the full
read), the three formats, ``--columns`` and ``--limit``, and one-line errors (exit 2) that
change nothing."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

import anyio
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.table.api import open_table
from streamwrite.testing import reference_table

ROOT = Path(__file__).resolve().parents[2]
DAY_NS = 86_400 * 10**9


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streamwrite", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )


def _data(num_rows: int) -> pa.Table:
    table = reference_table(num_rows)
    ts = pc.cast(table["ts"], pa.int64()).to_numpy()
    return table.set_column(0, "ts", pa.array(ts + (ts % 2) * DAY_NS, pa.timestamp("ns", "UTC")))


async def _make_table(path: Path, data: pa.Table) -> None:
    table = await open_table(
        path,
        data.schema,
        timestamp="ts",
        partition_by="day",
        segment_row_groups=2,
        row_group_size=200,
        compaction_interval=None,
    )
    try:
        for k in range(4):
            part = data.slice(k * (data.num_rows // 4), data.num_rows // 4)
            await table.append(part, app_id="t", batch_id=k)
    finally:
        await table.close()


async def _make_live(path: Path, data: pa.Table) -> None:
    live = await streamwrite.LiveFile.open(path, data.schema)
    try:
        for k in range(3):
            await live.append(data.slice(k * 100, 100))
    finally:
        await live.close()


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("scan")
    data = _data(1200)
    anyio.run(_make_table, root / "table", data)
    anyio.run(_make_live, root / "live", data)
    pq.write_table(data, root / "plain.parquet", row_group_size=250)
    return {"table": root / "table", "live": root / "live", "file": root / "plain.parquet"}


def _digest(path: Path) -> str:
    files = sorted(p for p in ([path] if path.is_file() else path.rglob("*")) if p.is_file())
    hasher = hashlib.sha256()
    for file in files:
        hasher.update(str(file).encode() + file.read_bytes())
    return hasher.hexdigest()


CASES = [
    ("symbol in ('S0001', 'S0002') and qty > 500", pc.field("symbol").isin(["S0001", "S0002"])
     & (pc.field("qty") > 500)),
    ("price < 100 or side = true", (pc.field("price") < 100) | (pc.field("side") == True)),  # noqa: E712
    ("venue like 'X%' and not side = true", pc.starts_with(pc.field("venue"), "X")
     & ~(pc.field("side") == True)),  # noqa: E712
    ("ts >= timestamp '2026-01-02 00:00:00+00:00'",
     pc.field("ts") >= pa.scalar(1_767_312_000 * 10**6, pa.timestamp("us", "UTC"))),
    ("order_id = 'nope'", pc.field("order_id") == "nope"),
]  # fmt: skip


@pytest.mark.parametrize("kind", ["table", "live", "file"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_scan_prints_exactly_the_matching_rows(
    paths: dict[str, Path], kind: str, case: int
) -> None:
    text, expression = CASES[case]
    path = paths[kind]
    if kind == "live" and text.startswith("ts"):
        pytest.skip("the live file's rows are one day")
    expected = streamwrite.read_table(path).filter(expression)
    done = run("scan", str(path), "--filter", text, "--format", "json", "--columns", "order_id")
    assert done.returncode == 0, done.stderr
    got = [json.loads(line)["order_id"] for line in done.stdout.splitlines()]
    assert got == expected.column("order_id").to_pylist()


def test_formats_columns_and_limit(paths: dict[str, Path]) -> None:
    table = paths["table"]
    expected = streamwrite.read_table(table).filter(pc.field("qty") > 900).slice(0, 7)
    args = ["scan", str(table), "--filter", "qty > 900", "--limit", "7", "--columns"]
    done = run(*args, "qty,price,ts", "--format", "csv")
    assert done.returncode == 0, done.stderr
    lines = list(csv.reader(io.StringIO(done.stdout)))
    assert lines[0] == ["qty", "price", "ts"]
    assert [int(row[0]) for row in lines[1:]] == expected.column("qty").to_pylist()
    assert [float(row[1]) for row in lines[1:]] == expected.column("price").to_pylist()
    assert lines[1][2].endswith("+00:00") and "T" in lines[1][2]
    done = run(*args, "qty,symbol")
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0].split() == ["qty", "symbol"] and out[-1] == "(7 rows)"
    assert [int(line.split()[0]) for line in out[1:-1]] == expected.column("qty").to_pylist()
    done = run("scan", str(table), "--filter", "qty > 5000")
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "(0 rows)"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--filter", "qty >"], "at position 6"),
        (["--filter", "nope = 1"], "'nope'"),
        (["--filter", "symbol > 3"], "cannot be compared with column 'symbol'"),
        (["--filter", "qty > 1", "--columns", "qty,,price"], "empty column name"),
        (["--filter", "qty > 1", "--columns", "nope"], "nope"),
        (["--filter", "qty > 1", "--limit", "-1"], "--limit"),
        (["--filter", "symbol like '%x'"], "prefix"),
    ],
)
def test_errors_are_one_line_and_change_nothing(
    paths: dict[str, Path], args: list[str], words: str
) -> None:
    before = _digest(paths["table"])
    done = run("scan", str(paths["table"]), *args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and words in done.stderr, done.stderr
    assert done.stderr.startswith("streamwrite scan: ")
    assert _digest(paths["table"]) == before


def test_missing_path(tmp_path: Path) -> None:
    done = run("scan", str(tmp_path / "nope"), "--filter", "x = 1")
    assert done.returncode == 2 and "does not exist" in done.stderr
    assert not (tmp_path / "nope").exists()


def test_explain_a_table(paths: dict[str, Path]) -> None:
    table = paths["table"]
    before = _digest(table)
    done = run("scan", str(table), "--filter", "ts < timestamp '2026-01-01 12:00Z'", "--explain")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    snapshot = streamwrite.read_snapshot(table)
    num_partitions = len({name.split("/")[0] for name, _ in snapshot.files})
    assert num_partitions == 2
    assert f"partitions: 1 of {num_partitions} read; 1 skipped by time range" in lines
    assert any(line.startswith("bytes read: ") for line in lines)
    segments = [line for line in lines if line.startswith("ts_day=")]
    assert len(segments) == len(snapshot.files)
    skipped = [line for line in segments if "skipped by partition" in line]
    assert skipped and all(line.startswith("ts_day=2026-01-02") for line in skipped)
    assert _digest(table) == before  # footers only; nothing written


@pytest.mark.parametrize("kind", ["file", "live"])
def test_explain_a_file(paths: dict[str, Path], kind: str) -> None:
    path = paths[kind]
    done = run("scan", str(path), "--filter", "qty > 5000", "--explain")
    assert done.returncode == 0, done.stderr
    num_row_groups = streamwrite.ParquetFile(path).metadata.num_row_groups
    assert (
        f"row groups: 0 of {num_row_groups} read; {num_row_groups} skipped by statistics"
        in done.stdout.splitlines()
    )
    rows = [line for line in done.stdout.splitlines() if "skipped by statistics" in line]
    assert len(rows) == num_row_groups + 1  # the summary line and one per row group
