"""Run in a subprocess: read listed Parquet files with third-party readers, compare values.

Usage: ``python read_files.py MANIFEST.json [pyarrow] [duckdb] [polars]``. The manifest is a JSON
list of ``[parquet_path, expected_arrow_ipc_path]`` pairs, so any path can be read as it is (a
live file's bare ``data.parquet`` as well as prefix copies). Prints one JSON object per file and
reader: ``{"file": ..., "reader": ..., "problems": [...]}``. A reader that crashes takes only
this process down; the parent test sees the missing lines.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tests.interop.compare import same_tables
from tests.interop.read_check import READERS


def main() -> None:
    manifest = json.loads(Path(sys.argv[1]).read_text())
    readers = sys.argv[2:] or ["pyarrow", "duckdb", "polars"]
    for parquet_path, arrow_path in manifest:
        with pa.memory_map(arrow_path) as source:
            expected = pa.ipc.open_file(source).read_all()
        for reader in readers:
            try:
                actual = READERS[reader](Path(parquet_path))
                problems = same_tables(expected, actual)
            except Exception as exc:  # report any reader failure as a problem
                problems = [f"{type(exc).__name__}: {exc}"]
            print(
                json.dumps({"file": parquet_path, "reader": reader, "problems": problems}),
                flush=True,
            )


if __name__ == "__main__":
    main()
