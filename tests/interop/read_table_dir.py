"""Run in a subprocess: read a table directory directly with third-party engines, compare rows.

Usage: ``python read_table_dir.py TABLE EXPECTED.arrow KEY [PARTITION_COLUMN]``. ``EXPECTED`` is
``streamwrite.read_table(TABLE)`` (an Arrow IPC file) plus, for a partitioned table, the column
``PARTITION_COLUMN`` holding each row's partition value as text (``2026-11-22``). Each form of
:data:`FORMS` reads ``TABLE`` as a user would, with no streamwrite code; rows are sorted by
``KEY``; an engine may add the partition column (its values must then be each row's partition)
but nothing else. Prints one JSON object per form: ``{"form": ..., "problems": [...],
"partition_column": bool}``. A reader that crashes takes only this process down.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.interop.compare import same_tables, same_values


def pyarrow_read_table(table: str) -> pa.Table:
    import pyarrow.parquet as pq

    return pq.read_table(table)


def pyarrow_dataset(table: str) -> pa.Table:
    import pyarrow.dataset as ds

    return ds.dataset(table).to_table()


def pyarrow_dataset_hive(table: str) -> pa.Table:
    import pyarrow.dataset as ds

    return ds.dataset(table, partitioning="hive").to_table()


def duckdb_glob(table: str) -> pa.Table:
    import duckdb

    return duckdb.connect().sql(f"SELECT * FROM read_parquet('{table}/**/*.parquet')").arrow()


def duckdb_data_files(table: str) -> pa.Table:
    import duckdb

    return duckdb.connect().sql(f"SELECT * FROM read_parquet('{table}/*/*/data.parquet')").arrow()


def polars_glob(table: str) -> pa.Table:
    import polars as pl

    return pl.read_parquet(f"{table}/**/*.parquet").to_arrow()


def polars_glob_hive(table: str) -> pa.Table:
    import polars as pl

    return pl.read_parquet(f"{table}/**/*.parquet", hive_partitioning=True).to_arrow()


FORMS: dict[str, Callable[[str], pa.Table]] = {
    "pq.read_table(table)": pyarrow_read_table,
    "ds.dataset(table)": pyarrow_dataset,
    "ds.dataset(table, partitioning='hive')": pyarrow_dataset_hive,
    "duckdb read_parquet('table/**/*.parquet')": duckdb_glob,
    "duckdb read_parquet('table/*/*/data.parquet')": duckdb_data_files,
    "pl.read_parquet('table/**/*.parquet')": polars_glob,
    "pl.read_parquet('table/**/*.parquet', hive_partitioning=True)": polars_glob_hive,
}


def compare(
    expected: pa.Table, actual: pa.Table, key: str, partition_column: str | None
) -> tuple[list[str], bool]:
    """Differences of ``actual`` from ``expected`` (both sorted by ``key`` here), and whether
    the engine added the partition column."""
    if hasattr(actual, "read_all"):  # a RecordBatchReader (DuckDB's .arrow())
        actual = actual.read_all()
    expected = expected.take(pc.sort_indices(expected, [(key, "ascending")]))
    actual = actual.take(pc.sort_indices(actual, [(key, "ascending")]))
    problems = []
    added = partition_column is not None and partition_column in actual.column_names
    if partition_column is not None:
        if added:
            got = actual[partition_column]
            if pa.types.is_date(got.type) or pa.types.is_timestamp(got.type):
                got = got.cast(pa.string())
            diff = same_values(expected[partition_column], got)
            if diff:
                problems.append(f"partition column {partition_column}: {diff}")
            actual = actual.drop_columns([partition_column])
        expected = expected.drop_columns([partition_column])
    problems += same_tables(expected, actual)
    return problems, added


def main() -> None:
    table, expected_path, key = sys.argv[1:4]
    partition_column = sys.argv[4] if len(sys.argv) > 4 else None
    with pa.memory_map(expected_path) as source:
        expected = pa.ipc.open_file(source).read_all()
    for form, read in FORMS.items():
        added = False
        try:
            problems, added = compare(expected, read(table), key, partition_column)
        except Exception as exc:  # report any reader failure as a problem
            problems = [f"{type(exc).__name__}: {exc}"]
        line = {"form": form, "problems": problems, "partition_column": added}
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
