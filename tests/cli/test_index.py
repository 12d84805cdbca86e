"""``streamwrite index build|show|drop`` on a real table, run as a subprocess: the store is
built and used by ``scan --explain``, shown, dropped; bad configurations and paths are one-line
errors (exit 2) that change nothing."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import anyio
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import streamwrite
from streamwrite.table.api import open_table
from streamwrite.testing import reference_table

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streamwrite", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )


async def _make_table(path: Path, data: pa.Table) -> None:
    table = await open_table(
        path, data.schema, segment_row_groups=1, row_group_size=250, compaction_interval=None
    )
    try:
        for k in range(4):
            await table.append(data.slice(k * 250, 250), app_id="t", batch_id=k)
    finally:
        await table.close()


def _digest(path: Path) -> str:
    hasher = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        hasher.update(str(file).encode() + file.read_bytes())
    return hasher.hexdigest()


@pytest.fixture()
def table(tmp_path: Path) -> Path:
    path = tmp_path / "t"
    anyio.run(_make_table, path, reference_table(1000))
    return path


def test_build_show_explain_drop(table: Path) -> None:
    done = run("index", "show", str(table))
    assert done.returncode == 0 and "no skipping configuration" in done.stdout
    done = run("index", "build", str(table), "order_id=bloom:fpp=0.01", "qty=minmax")
    assert done.returncode == 0, done.stderr
    assert "built the skipping store" in done.stdout
    done = run("index", "show", str(table))
    assert done.returncode == 0, done.stderr
    assert "  order_id=bloom:" in done.stdout and "  qty=minmax" in done.stdout
    assert "store: 4 of the 4 listed segments indexed" in done.stdout
    assert (table / "_skipping").is_dir()
    order_id = reference_table(1000).column("order_id")[600].as_py()
    done = run("scan", str(table), "--filter", f"order_id = '{order_id}'", "--explain")
    assert done.returncode == 0, done.stderr
    assert "skipped by store" in done.stdout, done.stdout
    done = run("scan", str(table), "--filter", f"order_id = '{order_id}'", "--format", "csv")
    expected = streamwrite.read_table(table).filter(pc.field("order_id") == order_id)
    assert len(done.stdout.splitlines()) == 1 + expected.num_rows == 2
    done = run("index", "drop", str(table))
    assert done.returncode == 0, done.stderr
    assert not (table / "_skipping").exists()
    assert "no skipping configuration" in run("index", "show", str(table)).stdout


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["build", "{table}", "qty=nokind"], "nokind"),
        (["build", "{table}", "nope=minmax"], "nope"),
        (["build", "{table}", "qty"], "COLUMN=KIND"),
        (["build", "{table}", "--skipping", "{{"], "not valid JSON"),
        (["build", "{table}"], "no skipping configuration"),
        (["build", "{missing}", "qty=minmax"], "does not exist"),
        (["drop", "{parent}"], "not a table"),
        (["show", "{missing}"], "does not exist"),
    ],
)
def test_errors_are_one_line_and_change_nothing(table: Path, args: list[str], words: str) -> None:
    before = _digest(table)
    names = {"table": str(table), "missing": str(table / "nope"), "parent": str(table.parent)}
    done = run("index", *[arg.format(**names) for arg in args])
    assert done.returncode == 2, done.stdout
    assert len(done.stderr.splitlines()) == 1 and words in done.stderr, done.stderr
    assert done.stderr.startswith(f"streamwrite index {args[0]}: ")
    assert _digest(table) == before
    assert not (table / "_skipping").exists()
