"""Run in a subprocess: read every ``*.parquet`` in a directory with third-party readers.

Usage: ``python read_check.py DIR [pyarrow] [duckdb] [polars]``. Each ``X.parquet`` is compared
with ``X.arrow`` (the expected table, Arrow IPC file). Prints one JSON object per file and reader:
``{"file": ..., "reader": ..., "problems": [...]}``. A reader that crashes takes only this
process down; the parent test sees the missing lines.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.interop.compare import same_tables


def read_pyarrow(path: Path) -> pa.Table:
    return pq.read_table(path, page_checksum_verification=True)


def read_duckdb(path: Path) -> pa.Table:
    import duckdb

    con = duckdb.connect()
    return con.sql(f"SELECT * FROM read_parquet('{path}')").to_arrow_table()


def read_polars(path: Path) -> pa.Table:
    import polars as pl

    return pl.read_parquet(path).to_arrow()


READERS = {"pyarrow": read_pyarrow, "duckdb": read_duckdb, "polars": read_polars}


def main() -> None:
    directory = Path(sys.argv[1])
    readers = sys.argv[2:] or ["pyarrow", "duckdb"]
    for path in sorted(directory.glob("*.parquet")):
        with pa.memory_map(str(path.with_suffix(".arrow"))) as source:
            expected = pa.ipc.open_file(source).read_all()
        for reader in readers:
            try:
                actual = READERS[reader](path)
                problems = same_tables(expected, actual)
            except Exception as exc:  # report any reader failure as a problem
                problems = [f"{type(exc).__name__}: {exc}"]
            print(
                json.dumps({"file": path.name, "reader": reader, "problems": problems}), flush=True
            )


if __name__ == "__main__":
    main()
