"""Interop: pyarrow, DuckDB and polars read every committed prefix of a 20-commit live file
equal to the rows committed up to it.

One live file gets 20 commits of reference-table slices of varied sizes (some commits span
several row groups), in two sessions (closed and reopened after commit 10, with a different
``row_group_size``), with a bloom filter on ``order_id``, the page index on and small data pages
(several pages per chunk, so every OffsetIndex has several entries). Each committed prefix
(``data.parquet[:parquet_size]``, commit 0 being the empty file) is copied to its own file; all of
them, plus the bare ``data.parquet``, are read by the three readers in ONE subprocess
(``read_files.py``: a bad file could abort a reader). Each prefix must also carry the footer
chain's key/value metadata and pass ``streamwrite verify`` (pages, CRCs, absolute OffsetIndex
offsets, ColumnIndex, bloom filters).
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.live.file import Commit, LiveFile
from streamwrite.testing import reference_table
from tests.interop.compare import same_tables

READERS = ["pyarrow", "duckdb", "polars"]

# Rows per commit; session 1 uses row_group_size 4000 (9000 rows -> 3 row groups), session 2
# uses 2500 (12000 -> 5, 3001 -> 2, 2500 -> 1).
SESSION_1 = [1, 10, 137, 2048, 9000, 333, 5, 4000, 1, 777]
SESSION_2 = [12000, 64, 3001, 99, 1500, 7, 2500, 42, 256, 1024]
ROW_GROUP_SIZES = (4000, 2500)
OPTIONS = {
    "bloom_filter_options": {"order_id": True},
    "data_page_size": 4096,
    "write_page_index": True,
}


@dataclass(frozen=True)
class LiveCase:
    directory: Path  # the live file
    prefixes: Path  # prefix-NN.parquet + prefix-NN.arrow per commit
    commits: list[Commit]  # commit 0 (the empty file) first
    expected: list[pa.Table]  # rows committed up to each commit
    results: dict[tuple[str, str], list[str]]  # (file name, reader) -> problems


def _write_ipc(table: pa.Table, path: Path) -> None:
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


async def _build(directory: Path) -> tuple[list[Commit], list[pa.Table]]:
    total = sum(SESSION_1) + sum(SESSION_2)
    table = reference_table(total)
    commits: list[Commit] = []
    start = 0
    for rows_per_commit, row_group_size in zip(
        (SESSION_1, SESSION_2), ROW_GROUP_SIZES, strict=True
    ):
        lf = await LiveFile.open(directory, table.schema, row_group_size=row_group_size, **OPTIONS)
        if not commits:
            commits.append(lf.last_commit)  # commit 0: schema, no row groups
        async with lf:
            for rows in rows_per_commit:
                commit = await lf.append(table.slice(start, rows))
                start += rows
                commits.append(commit)
            assert [(s.seq, s.parquet_size, s.num_rows) for s in lf.snapshots()] == [
                (c.seq, c.parquet_size, c.num_rows) for c in commits
            ]
    expected = [table.slice(0, c.num_rows) for c in commits]
    return commits, expected


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> LiveCase:
    root = tmp_path_factory.mktemp("live_interop")
    directory = root / "live"
    commits, expected = anyio.run(_build, directory)
    prefixes = root / "prefixes"
    prefixes.mkdir()
    data = (directory / "data.parquet").read_bytes()
    manifest = []
    for commit, table in zip(commits, expected, strict=True):
        name = f"prefix-{commit.seq:02d}"
        (prefixes / f"{name}.parquet").write_bytes(data[: commit.parquet_size])
        _write_ipc(table, prefixes / f"{name}.arrow")
        manifest.append([str(prefixes / f"{name}.parquet"), str(prefixes / f"{name}.arrow")])
    _write_ipc(expected[-1], root / "whole.arrow")
    manifest.append([str(directory / "data.parquet"), str(root / "whole.arrow")])
    (root / "manifest.json").write_text(json.dumps(manifest))

    proc = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("read_files.py")),
            str(root / "manifest.json"),
            *READERS,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    results = {}
    for line in proc.stdout.splitlines():
        record = json.loads(line)
        results[(Path(record["file"]).name, record["reader"])] = record["problems"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    return LiveCase(directory, prefixes, commits, expected, results)


def test_the_file_has_what_the_test_means(case: LiveCase) -> None:
    commits = case.commits
    assert [c.seq for c in commits] == list(range(21))
    assert commits[0].num_rows == 0 and commits[0].num_row_groups == 0
    # Several commits add several row groups, and sizes strictly grow.
    added = [b.num_row_groups - a.num_row_groups for a, b in itertools.pairwise(commits)]
    assert added.count(1) < len(added) and max(added) == 5
    assert all(a.parquet_size < b.parquet_size for a, b in itertools.pairwise(commits))
    # No append in flight: the file ends at the last commit.
    assert (case.directory / "data.parquet").stat().st_size == commits[-1].parquet_size


@pytest.mark.parametrize("reader", READERS)
def test_reader_reads_every_committed_prefix(case: LiveCase, reader: str) -> None:
    failures = {}
    for commit in case.commits:
        name = f"prefix-{commit.seq:02d}.parquet"
        problems = case.results.get((name, reader), ["no result (reader process died?)"])
        if problems:
            failures[name] = problems
    assert failures == {}


@pytest.mark.parametrize("reader", READERS)
def test_reader_reads_the_bare_data_parquet(case: LiveCase, reader: str) -> None:
    problems = case.results.get(("data.parquet", reader), ["no result (reader process died?)"])
    assert problems == []


def test_streamwrite_reads_every_snapshot(case: LiveCase) -> None:
    for commit, table in zip(case.commits, case.expected, strict=True):
        actual = streamwrite.read_table(case.directory, snapshot=commit.parquet_size)
        assert actual.num_rows == commit.num_rows
        assert same_tables(table, actual) == [], commit


def test_every_footer_links_to_the_previous_commit(case: LiveCase) -> None:
    previous_size = 0
    for commit in case.commits:
        meta = pq.ParquetFile(case.prefixes / f"prefix-{commit.seq:02d}.parquet").metadata
        key_values = meta.metadata or {}
        assert key_values.get(b"streamwrite.commit_seq") == str(commit.seq).encode(), commit
        assert key_values.get(b"streamwrite.prev_size") == str(previous_size).encode(), commit
        assert (meta.num_rows, meta.num_row_groups) == (commit.num_rows, commit.num_row_groups)
        previous_size = commit.parquet_size


def test_every_prefix_verifies(case: LiveCase) -> None:
    """``streamwrite verify`` walks every page: CRCs, absolute OffsetIndex, ColumnIndex, blooms."""
    failures = {}
    for commit in case.commits:
        path = case.prefixes / f"prefix-{commit.seq:02d}.parquet"
        proc = subprocess.run(
            [sys.executable, "-m", "streamwrite.cli", "verify", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if proc.returncode != 0:
            failures[path.name] = (proc.stdout + proc.stderr)[-2000:]
    assert failures == {}


def test_every_row_group_has_its_bloom_filter_and_page_index(case: LiveCase) -> None:
    """Row groups of both sessions carry the order_id bloom filter and a page index."""
    pf = streamwrite.ParquetFile(case.prefixes / f"prefix-{case.commits[-1].seq:02d}.parquet")
    names = pf.schema_arrow.names
    order_id = names.index("order_id")
    for i, row_group in enumerate(pf.thrift_metadata.row_groups or []):
        columns = row_group.columns or []
        meta = columns[order_id].meta_data
        assert meta is not None and meta.bloom_filter_offset is not None, i
        assert all(c.offset_index_offset is not None for c in columns), i
