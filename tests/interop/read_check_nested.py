"""Run in a subprocess: read every ``*.parquet`` in a directory of nested files with
third-party readers, as ``read_check.py`` does for flat ones.

Usage: ``python read_check_nested.py DIR [pyarrow] [duckdb] [polars]``. Each ``X.parquet`` is
compared with ``X.arrow`` (the expected table, Arrow IPC file) by
:func:`tests.interop.nested_compare.same_nested_tables`; pyarrow reads with
``page_checksum_verification=True`` and must also give back the exact Arrow schema written
(the footer's ``ARROW:schema``). Prints one JSON object per file and reader:
``{"file": ..., "reader": ..., "problems": [...]}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.interop.nested_compare import same_nested_tables
from tests.interop.read_check import READERS


def main() -> None:
    directory = Path(sys.argv[1])
    readers = sys.argv[2:] or ["pyarrow", "duckdb", "polars"]
    for path in sorted(directory.glob("*.parquet")):
        with pa.memory_map(str(path.with_suffix(".arrow"))) as source:
            expected = pa.ipc.open_file(source).read_all()
        for reader in readers:
            try:
                actual = READERS[reader](path)
                problems = same_nested_tables(expected, actual)
                if reader == "pyarrow" and not actual.schema.equals(expected.schema):
                    problems.append(f"schema {actual.schema} != {expected.schema}")
            except Exception as exc:  # report any reader failure as a problem
                problems = [f"{type(exc).__name__}: {exc}"]
            print(
                json.dumps({"file": path.name, "reader": reader, "problems": problems}), flush=True
            )


if __name__ == "__main__":
    main()
