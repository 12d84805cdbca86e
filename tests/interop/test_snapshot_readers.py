"""pyarrow, DuckDB and polars read tables through ``streamwrite.snapshot_filesystem``.

Engines run in subprocesses (``snapshot_readers.py``): a bad file must not abort the test run.
The must-show: a reader loop of ``STREAMWRITE_SNAPSHOT_READS`` reads (default 200) spread over
the engines, beside a writer process (``snapshot_writer.py``) that appends and compacts the
same table: every read through the view is a complete committed version. The same loop on
the bare table directory is run for comparison and its failures printed, not asserted.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import streamwrite
from streamwrite.compaction.policy import CompactionPolicy
from streamwrite.table.api import open_table, read_snapshot
from streamwrite.testing import reference_table
from tests.interop.compare import same_tables

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DAY_NS = 86_400 * 10**9
NUM_READS = int(os.environ.get("STREAMWRITE_SNAPSHOT_READS", "200"))


def _python(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )


def _two_days(table: pa.Table) -> pa.Table:
    ts = pc.cast(table["ts"], pa.int64()).to_numpy() + (np.arange(table.num_rows) % 2) * DAY_NS
    return table.set_column(0, "ts", pa.array(ts, pa.timestamp("ns")))


def _table_in_the_grace_period(path: Path) -> None:
    """Small commits over two day partitions, a compaction whose retired segments stay on disk
    (grace 1 h), more commits, then bytes of an append in flight past a committed size."""
    data = _two_days(reference_table(6_000))
    options: dict[str, Any] = {
        "timestamp": "ts",
        "partition_by": "day",
        "segment_row_groups": 2,
        "compaction_interval": None,
        "compaction": CompactionPolicy(grace_seconds=3600, min_small_row_groups=2),
    }

    async def go() -> None:
        async with await open_table(path, data.schema, **options) as table:
            for i in range(8):
                await table.append(data.slice(i * 500, 500), app_id="a", batch_id=i)
            assert await table.compact()
            for i in range(8, 12):
                await table.append(data.slice(i * 500, 500), app_id="a", batch_id=i)
            assert table.record.retired  # still on disk, where globs of the bare path find them

    anyio.run(functools.partial(go))
    snapshot = read_snapshot(path)
    with open(snapshot.data_files()[-1], "ab") as f:
        f.write(b"\x15\x04row group bytes of an append in flight")


def test_each_engine_reads_the_view_equal_to_read_table(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _table_in_the_grace_period(path)
    want = streamwrite.read_table(path).sort_by("order_id")
    out = tmp_path / "out"
    out.mkdir()
    proc = _python(str(HERE / "snapshot_readers.py"), "engines", str(path), str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    for engine in ("pyarrow", "duckdb", "polars", "polars-pyarrow"):
        with pa.memory_map(str(out / f"{engine}.arrow")) as source:
            got = pa.ipc.open_file(source).read_all().sort_by("order_id")
        assert got.num_rows == want.num_rows == 6_000, engine
        assert same_tables(want, got) == [], engine


def test_duckdb_reads_a_newer_version_through_a_new_view_beside_the_old(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _table_in_the_grace_period(path)
    proc = _python(str(HERE / "snapshot_readers.py"), "duckdb-refresh", str(path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert (result["before"], result["after"], result["old_again"]) == (6_000, 6_005, 6_000)
    assert result["fixed"] == [6_000, 6_005]
    old, new = result["versions"]
    assert new > old
    old_protocol, new_protocol = result["protocols"]
    assert old_protocol not in result["registered"] and new_protocol in result["registered"]


def _kind(problem: str | None) -> str:
    """A failed read's kind: the exception's name, or what was wrong with the rows."""
    if problem is None:
        return "rows of no commit"
    if problem.startswith("seq is not"):
        return "duplicate or missing rows"
    return problem.split(":")[0]


def _reader_loop(path: Path, mode: str, commits: Path) -> tuple[list[dict[str, Any]], str]:
    proc = _python(str(HERE / "snapshot_readers.py"), "loop", str(path), mode, str(NUM_READS))
    reads = [json.loads(line) for line in proc.stdout.splitlines()]
    return reads, f"exit {proc.returncode}: {proc.stderr[-2000:]}"


def test_reads_through_the_view_beside_a_writer_that_appends_and_compacts(
    tmp_path: Path,
) -> None:
    path, stop, commits = tmp_path / "t", tmp_path / "stop", tmp_path / "commits"
    script = str(HERE / "snapshot_writer.py")
    writer = subprocess.Popen(
        [sys.executable, script, str(path), str(stop), str(commits), "100000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        # The writer is another OS process; it reports commits only through the commits file,
        # so this polls that file (with a deadline) rather than waiting on an event.
        deadline = time.monotonic() + 120
        while not (commits.exists() and commits.read_text().count("\n") >= 3):
            assert writer.poll() is None, writer.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the writer made no commit"
            time.sleep(0.05)  # poll interval
        view, view_exit = _reader_loop(path, "view", commits)
        bare, bare_exit = _reader_loop(path, "bare", commits)
    finally:
        stop.touch()
        out, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err[-3000:]
    summary = json.loads(out)
    counts = {int(line) for line in commits.read_text().split()}

    assert len(view) == NUM_READS, view_exit
    failed = [read for read in view if read["problem"]]
    assert failed == [], failed[:5]
    assert all(read["num_rows"] in counts for read in view)  # a version some commit produced
    versions = [read["version"] for read in view]
    assert versions == sorted(versions)  # each view the newest version when it was made
    engines = Counter(read["engine"] for read in view)
    assert set(engines) == {"pyarrow", "duckdb", "polars", "polars-pyarrow"}
    assert len(set(versions)) >= 5, "the writer was not committing during the reads"
    compacted = [float(t) for t in Path(f"{commits}.compactions").read_text().split()]
    during = [t for t in compacted if view[0]["time"] < t < view[-1]["time"]]
    assert during, f"no compaction during the reads: {compacted}, {summary}"

    bare_failed = [read for read in bare if read["problem"] or read["num_rows"] not in counts]
    kinds = Counter(f"{read['engine']}: {_kind(read['problem'])}" for read in bare_failed)
    examples = {_kind(r["problem"]): r["problem"] for r in reversed(bare_failed) if r["problem"]}
    print(
        f"\nsnapshot view: {len(view)} reads ({dict(engines)}), 0 failed, "
        f"{len(set(versions))} versions and {len(during)} compactions during them; "
        f"writer: {summary}\n"
        f"bare table directory: {len(bare_failed)} of {len(bare)} reads failed "
        f"({bare_exit.split(':')[0]}): {dict(kinds)}\n"
        + "\n".join(f"  {problem[:200]}" for problem in examples.values())
    )
