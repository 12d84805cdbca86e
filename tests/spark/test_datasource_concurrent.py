"""Spark reads through the ``streamwrite`` data source while another process appends to the
table and compacts it: every read is one committed version, whole.

The writer (``datasource_writer.py``, a subprocess) appends rows with sequential ids, 1..300 a
commit, and compacts every 4th commit (grace period 600 s). Spark reads the table again and
again with small tasks (row-group ranges of a few KB, so most segments are read by several
tasks, some planned before a compaction and run after it). Each read must be a gap-free,
duplicate-free prefix of the ids whose length the writer logged as a committed total, and
equal, value for value, to what ``streamwrite.read_table`` returns at that version (the rows
the writer appended up to it). Reads go on until ``STREAMWRITE_SPARK_READS`` (default 6) are
done and at least one of them overlapped a compaction.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import streamwrite
from tests.spark.datasource_writer import rows

ROOT = Path(__file__).resolve().parents[2]
NUM_READS = int(os.environ.get("STREAMWRITE_SPARK_READS", "6"))
DEADLINE_SECONDS = 600


def _by_id(table: pa.Table) -> pa.Table:
    index = table.schema.get_field_index("ts")
    table = table.set_column(index, "ts", table.column("ts").cast(pa.int64()))
    return table.take(pc.sort_indices(table, [("id", "ascending")]))


def _log(path: Path) -> list[tuple[str, int, int, float]]:
    """The writer's log: ``(kind, version, rows, time)`` per line."""
    entries = []
    for line in path.read_text().splitlines():
        kind, version, num_rows, when = line.split()
        entries.append((kind, int(version), int(num_rows), float(when)))
    return entries


def test_reads_equal_committed_versions_during_appends_and_compaction(
    spark: Any, tmp_path: Path
) -> None:
    path, stop, log = tmp_path / "t", tmp_path / "stop", tmp_path / "log"
    command = ["-m", "tests.spark.datasource_writer", str(path), str(stop), str(log), "1000000"]
    writer = subprocess.Popen(
        [sys.executable, *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    reads: list[tuple[float, float, pa.Table]] = []
    try:
        # The writer reports commits only through its log file, so this polls it.
        deadline = time.monotonic() + 120
        while not (log.exists() and log.read_text().count("\n") >= 3):
            assert writer.poll() is None, writer.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the writer made no commit"
            time.sleep(0.05)  # poll interval
        deadline = time.monotonic() + DEADLINE_SECONDS
        while time.monotonic() < deadline:
            assert writer.poll() is None, writer.communicate()[1][-3000:]
            compactions = [when for kind, _, _, when in _log(log) if kind == "compact"]
            overlapped = any(a <= when <= b for a, b, _ in reads for when in compactions)
            if len(reads) >= NUM_READS and overlapped:
                break
            started = time.time()
            df = (
                spark.read.format("streamwrite")
                .option("partition_bytes", "3000")
                .option("parallelism", "4")
                .load(str(path))
            )
            got = df.toArrow()
            reads.append((started, time.time(), got))
    finally:
        stop.touch()
        _, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err[-3000:]

    entries = _log(log)
    totals = {num_rows for _, _, num_rows, _ in entries}
    compactions = [when for kind, _, _, when in entries if kind == "compact"]
    assert compactions, "the writer never compacted"
    assert any(a <= when <= b for a, b, _ in reads for when in compactions), (
        "no read overlapped a compaction"
    )
    counts = []
    for _, _, got in reads:
        ids = sorted(got.column("id").to_pylist())
        counts.append(len(ids))
        assert ids == list(range(len(ids)))  # no gap, no duplicate
        assert len(ids) in totals  # a committed version
        assert _by_id(got).equals(_by_id(rows(0, len(ids))))  # every value of that version
    assert len(reads) >= NUM_READS
    assert len(set(counts)) >= 2, f"every read saw the same version: {counts}"

    final = streamwrite.read_table(path)
    assert _by_id(final).equals(_by_id(rows(0, max(totals))))
    got = spark.read.format("streamwrite").load(str(path)).toArrow()
    assert _by_id(got).equals(_by_id(final))
