"""Nanosecond timestamps filter without pandas (CI has none; ``as_py()`` of a nanosecond
scalar needs it): a child process with pandas blocked parses, binds, describes and reads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHILD = r"""
import sys


class _Block:
    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is blocked in this test")


sys.meta_path.insert(0, _Block())
import pyarrow as pa
import pyarrow.compute as pc

import streamwrite

path = sys.argv[1]
ts = pa.array([1, 2, 3, 1_767_225_600_000_000_001], pa.timestamp("ns"))
table = pa.table({"ts": ts, "x": [1, 2, 3, 4]})
streamwrite.write_table(table, path, row_group_size=2)
t0 = pa.scalar(1_767_225_600_000_000_001, pa.timestamp("ns"))
for filters, rows in [
    (pc.field("ts") >= t0, 1),
    (pc.field("ts").isin(pa.array([1, 2], pa.timestamp("ns"))), 2),
    ([("ts", "in", [t0])], 1),
    ([("ts", "<", t0)], 3),
]:
    assert streamwrite.read_table(path, filters=filters).num_rows == rows, filters
    with streamwrite.ParquetFile(path) as pf:
        assert "2026-01-01T00:00:00.000000001" in pf.plan(filters).explain() or rows != 1
print("ok")
"""


def test_nanosecond_filters_without_pandas(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "ns.parquet")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
