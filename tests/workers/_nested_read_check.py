"""Run in a subprocess: read ``X.parquet`` files of a directory with pyarrow (page checksums
verified) and DuckDB, compare with ``X.arrow`` (Arrow IPC). Prints one JSON line per file and
reader: ``{"file", "reader", "problems"}`` (a crashing reader takes only this process down)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def _plain(value: Any) -> Any:
    """Python values with NaN made comparable and maps (lists of pairs) as lists of lists."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def check_pyarrow(path: Path, expected: pa.Table) -> list[str]:
    actual = pq.read_table(path, page_checksum_verification=True)
    problems = []
    if actual.schema != expected.schema:
        problems.append(f"schema {actual.schema} != {expected.schema}")
    for name in expected.column_names:
        got, want = actual.column(name), expected.column(name)
        # (NaN != NaN for Arrow's equals: then the Python values decide)
        if not got.equals(want) and _plain(got.to_pylist()) != _plain(want.to_pylist()):
            problems.append(f"{name}: values differ")
    return problems


def check_duckdb(path: Path, expected: pa.Table) -> list[str]:
    import duckdb

    con = duckdb.connect()
    actual = con.sql(f"SELECT * FROM read_parquet('{path}')").to_arrow_table()
    problems = []
    for name in expected.column_names:
        got = _plain(actual.column(name).to_pylist())
        want = _plain(expected.column(name).to_pylist())
        if got != want:
            problems.append(f"{name}: values differ")
    return problems


READERS = {"pyarrow": check_pyarrow, "duckdb": check_duckdb}


def main() -> None:
    directory = Path(sys.argv[1])
    for path in sorted(directory.glob("*.parquet")):
        with pa.memory_map(str(path.with_suffix(".arrow"))) as source:
            expected = pa.ipc.open_file(source).read_all()
        for reader in sys.argv[2:] or ["pyarrow"]:
            try:
                problems = READERS[reader](path, expected)
            except Exception as exc:  # any reader failure is a problem of the file
                problems = [f"{type(exc).__name__}: {exc}"]
            print(json.dumps({"file": path.name, "reader": reader, "problems": problems}))


if __name__ == "__main__":
    main()
