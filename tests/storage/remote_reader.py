"""Run in a subprocess that sees only the bucket: read a table by URL, write Arrow IPC to stdout.

Usage: ``python remote_reader.py MODE URL`` with the storage options as JSON in the
environment variable ``STREAMWRITE_STORAGE_OPTIONS``. Modes:

- ``read_table``: ``streamwrite.read_table(URL, storage_options=...)``;
- ``pyarrow``: ``pyarrow.dataset`` over ``streamwrite.snapshot_filesystem(URL, ...)``;
- ``duckdb``: DuckDB ``read_parquet`` over the same view (registered as a filesystem);
- ``polars``: polars over the view's files.

The table is written to stdout as an Arrow IPC stream; nothing is written anywhere else.
"""

from __future__ import annotations

import json
import os
import sys

import pyarrow as pa
import pyarrow.dataset as ds

import streamwrite


def main(mode: str, url: str) -> None:
    options = json.loads(os.environ["STREAMWRITE_STORAGE_OPTIONS"])
    if mode == "read_table":
        table = streamwrite.read_table(url, storage_options=options)
    else:
        with streamwrite.snapshot_filesystem(url, storage_options=options) as fs:
            if mode == "pyarrow":
                table = ds.dataset("/", filesystem=fs, format="parquet").to_table()
            elif mode == "duckdb":
                import duckdb

                con = duckdb.connect()
                con.register_filesystem(fs)
                table = con.sql(
                    f"SELECT * FROM read_parquet('{fs.url}/**/*.parquet', "
                    "hive_partitioning = false)"
                ).to_arrow_table()
                con.unregister_filesystem(fs.protocol)
            elif mode == "polars":
                import polars as pl

                table = pl.read_parquet([fs.open(name) for name in fs.find("/")]).to_arrow()
            else:
                raise SystemExit(f"unknown mode {mode!r}")
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    sys.stdout.buffer.write(sink.getvalue().to_pybytes())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
