"""Run in a subprocess: read a table whose segments have two schemas with third-party engines.

Usage: ``python _evolution_readers.py TABLE EXPECTED.arrow``. ``EXPECTED`` is the table's rows
(the current schema, ``id`` unique). Each form reads the table directory (or the snapshot view,
``streamwrite.snapshot_filesystem``) and prints one JSON object ``{"form", "outcome"}``:
``equal`` (the rows and columns of ``EXPECTED``; a Hive partition column an engine adds is
dropped first), ``added columns dropped`` (every row, only the columns of the oldest schema),
``error: <type>: <message>`` or ``different: ...``. A reader that crashes takes only this
process down.
"""

from __future__ import annotations

import glob
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def _plain(table: Any) -> pa.Table:
    if hasattr(table, "read_all"):  # DuckDB's .arrow() is a RecordBatchReader
        table = table.read_all()
    if not isinstance(table, pa.Table):  # polars
        table = table.to_arrow()
    table = table.drop_columns([c for c in table.column_names if c == "ts_day"])
    for i, field in enumerate(table.schema):
        if pa.types.is_dictionary(field.type):
            table = table.set_column(i, field.name, table[i].cast(field.type.value_type))
            field = table.schema.field(i)
        if pa.types.is_timestamp(field.type) and field.type.tz:  # DuckDB says Etc/UTC
            table = table.set_column(i, field.name, table[i].cast(pa.timestamp("us", "UTC")))
        elif pa.types.is_large_string(field.type):
            table = table.set_column(i, field.name, table[i].cast(pa.string()))
    return table.sort_by("id").combine_chunks()


def forms(table: str, schema: pa.Schema) -> dict[str, Callable[[], Any]]:
    import duckdb
    import polars as pl
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    import streamwrite

    files = sorted(glob.glob(f"{table}/**/*.parquet", recursive=True))
    # The schema as polars reads it from a segment of the current schema (it maps a
    # dictionary column to Categorical, which a String target would refuse).
    polars_schema = max((pl.read_parquet_schema(f) for f in files), key=len)

    def view_pyarrow() -> pa.Table:
        with streamwrite.snapshot_filesystem(table) as fs:
            return ds.dataset("/", filesystem=fs, format="parquet", schema=fs.schema).to_table()

    def view_duckdb() -> pa.Table:
        with streamwrite.snapshot_filesystem(table) as fs:
            con = duckdb.connect()
            con.register_filesystem(fs)
            got = con.sql(
                f"SELECT * FROM read_parquet('{fs.url}/**/*.parquet', union_by_name=true)"
            ).arrow()
            return got.read_all() if hasattr(got, "read_all") else got

    glob_sql = f"read_parquet('{table}/**/*.parquet'"
    return {
        "pyarrow pq.read_table": lambda: pq.read_table(table),
        "pyarrow ds.dataset(schema=current)": lambda: ds.dataset(
            table, format="parquet", schema=schema
        ).to_table(),
        "pyarrow ds.dataset(view, schema=fs.schema)": view_pyarrow,
        "duckdb default": lambda: duckdb.connect().sql(f"SELECT * FROM {glob_sql})").arrow(),
        "duckdb union_by_name": lambda: (
            duckdb.connect().sql(f"SELECT * FROM {glob_sql}, union_by_name=true)").arrow()
        ),
        "duckdb view union_by_name": view_duckdb,
        "polars default": lambda: pl.read_parquet(f"{table}/**/*.parquet"),
        "polars scan_parquet(schema, missing_columns=insert)": lambda: pl.scan_parquet(
            f"{table}/**/*.parquet", schema=polars_schema, missing_columns="insert"
        ).collect(),
        "polars concat diagonal": lambda: pl.concat(
            [pl.read_parquet(f) for f in files], how="diagonal"
        ),
    }


def main() -> None:
    table, expected_path = sys.argv[1:3]
    with pa.memory_map(expected_path) as source:
        expected = _plain(pa.ipc.open_file(source).read_all())
    schema = pa.ipc.open_file(pa.memory_map(expected_path)).schema
    oldest = expected.select(["ts", "id", "price"])
    for form, read in forms(table, schema).items():
        try:
            got = _plain(read())
            if got.equals(expected):
                outcome = "equal"
            elif got.equals(oldest):
                outcome = "added columns dropped"
            else:
                outcome = f"different: {got.schema.names} {got.num_rows} rows"
        except Exception as exc:  # report any reader failure
            outcome = f"error: {type(exc).__name__}: {str(exc)[:200]}"
        print(json.dumps({"form": form, "outcome": outcome}), flush=True)


if __name__ == "__main__":
    main()
