"""Files with embedded indexes (spec 001) read by pyarrow, DuckDB and polars exactly as the
data written: plain files and every committed prefix of a live file (each with its own blob),
read in a subprocess (``read_check.py``) so a reader crash fails one test, not the run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.format.index import KV_DATAFUSION_OFFSET, KV_INDEX_OFFSET
from streamwrite.live.file import LiveFile

INDEX: dict[str, list[Any]] = {
    "sym": ["datafusion_distinct"],
    "ts": ["time_index", "distinct"],
    "n": ["distinct"],
}


def embedded_table(seed: int, num_rows: int) -> pa.Table:
    """Tag strings, timestamps, small ints and doubles, with nulls."""
    rng = np.random.default_rng(seed)
    symbols = np.array(["AAPL", "MSFT", "", "é"], dtype=object)[rng.integers(0, 4, num_rows)]
    return pa.table(
        {
            "sym": pa.array(symbols, pa.string(), mask=rng.random(num_rows) < 0.05),
            "ts": pa.array(
                np.sort(rng.integers(0, 10**9, num_rows)),
                pa.timestamp("us", "UTC"),
                mask=rng.random(num_rows) < 0.05,
            ),
            "n": pa.array(rng.integers(0, 7, num_rows), pa.int32()),
            "price": pa.array(rng.random(num_rows) * 100),
        }
    )


def _save_expected(path: Path, table: pa.Table) -> None:
    with (
        pa.OSFile(str(path.with_suffix(".arrow")), "wb") as sink,
        pa.ipc.new_file(sink, table.schema) as writer,
    ):
        writer.write_table(table)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``plain.parquet`` and ``snap_K.parquet`` (the committed prefixes of a live file), each
    with its ``.arrow`` expected table."""
    directory = tmp_path_factory.mktemp("embedded")
    table = embedded_table(0, 30_000)
    streamwrite.write_table(
        table, directory / "plain.parquet", row_group_size=7_000, embedded_index=INDEX
    )
    _save_expected(directory / "plain.parquet", table)
    live = directory / "live"
    batches = [embedded_table(k, n) for k, n in enumerate([500, 3_000, 1, 2_500])]

    async def go() -> list[Any]:
        async with await LiveFile.open(
            live, table.schema, row_group_size=1_000, embedded_index=INDEX
        ) as lf:
            return [await lf.append(batch) for batch in batches]

    commits = anyio.run(go)
    raw = (live / "data.parquet").read_bytes()
    for k, commit in enumerate(commits):
        target = directory / f"snap_{k}.parquet"
        target.write_bytes(raw[: commit.parquet_size])
        _save_expected(target, pa.concat_tables(batches[: k + 1]))
    return directory


def test_files_carry_their_blobs(files: Path) -> None:
    offsets = set()
    for path in sorted(files.glob("*.parquet")):
        keys = pq.ParquetFile(path).metadata.metadata
        offset = int(keys[KV_INDEX_OFFSET.encode()])
        assert path.read_bytes()[offset : offset + 4] == b"IDX1"
        assert KV_DATAFUSION_OFFSET.encode() in keys
        offsets.add((path.name.startswith("snap"), offset))
    assert len(offsets) == 5  # every snapshot's footer names a blob of its own


@pytest.fixture(scope="module")
def results(files: Path) -> dict[tuple[str, str], list[str]]:
    script = Path(__file__).with_name("read_check.py")
    proc = subprocess.run(
        [sys.executable, str(script), str(files), "pyarrow", "duckdb", "polars"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = {}
    for line in proc.stdout.splitlines():
        record = json.loads(line)
        found[(record["file"], record["reader"])] = record["problems"]
    return found


@pytest.mark.parametrize("reader", ["pyarrow", "duckdb", "polars"])
@pytest.mark.parametrize("name", ["plain", "snap_0", "snap_1", "snap_2", "snap_3"])
def test_third_party_readers_read_files_with_an_embedded_index(
    results: dict[tuple[str, str], list[str]], reader: str, name: str
) -> None:
    assert results[(f"{name}.parquet", reader)] == []


def test_streamwrite_reads_them_too(files: Path) -> None:
    for path in sorted(files.glob("*.parquet")):
        with pa.memory_map(str(path.with_suffix(".arrow"))) as source:
            expected = pa.ipc.open_file(source).read_all()
        assert streamwrite.read_table(path).equals(expected)
