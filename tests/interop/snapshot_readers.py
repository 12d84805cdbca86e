"""Run in a subprocess: third-party engines read a table through ``snapshot_filesystem``.

Usage:
- ``python snapshot_readers.py engines TABLE OUT_DIR``: each engine reads the whole table with
  the README snippet; writes ``OUT_DIR/<engine>.arrow`` (Arrow IPC) for the parent to compare.
- ``python snapshot_readers.py duckdb-refresh TABLE``: one DuckDB connection reads a view, the
  table gets a commit, a new view is registered beside the old one (and a view under a fixed
  protocol is replaced by a newer one); prints JSON counts.
- ``python snapshot_readers.py loop TABLE view|bare NUM_READS``: the reader loop beside a
  writer (``snapshot_writer.py``): NUM_READS reads spread over pyarrow, DuckDB, polars (native
  reader) and polars (through pyarrow), through the view or the bare table directory. Prints
  one JSON line per read: ``{"i", "engine", "time", "version", "num_rows", "problem"}``
  (``time``: wall-clock seconds when the read started); ``problem`` is
  None for a read whose ``seq`` values are exactly ``0..num_rows-1``.

A crash of an engine takes only this process down; the parent sees the missing lines.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds

import streamwrite

# -- the README snippets (one per engine) -------------------------------------------------------


def read_pyarrow(table_path: Path) -> pa.Table:
    with streamwrite.snapshot_filesystem(table_path) as fs:  # one _txn version
        return ds.dataset("/", filesystem=fs, format="parquet").to_table()


def read_duckdb(table_path: Path) -> pa.Table:
    con = duckdb.connect()
    with streamwrite.snapshot_filesystem(table_path) as fs:
        con.register_filesystem(fs)  # URLs <fs.protocol>://... now read this view
        table = con.sql(
            f"SELECT * FROM read_parquet('{fs.url}/**/*.parquet', hive_partitioning = false)"
        ).to_arrow_table()
        con.unregister_filesystem(fs.protocol)
    return table


def read_polars(table_path: Path) -> pl.DataFrame:
    with streamwrite.snapshot_filesystem(table_path) as fs:
        return pl.read_parquet([fs.open(name) for name in fs.find("/")])


def read_polars_lazy(table_path: Path) -> pl.DataFrame:
    with streamwrite.snapshot_filesystem(table_path) as fs:
        dataset = ds.dataset("/", filesystem=fs, format="parquet")
        return pl.scan_pyarrow_dataset(dataset).collect()


def engines(table_path: Path, out: Path) -> None:
    results: dict[str, pa.Table] = {
        "pyarrow": read_pyarrow(table_path),
        "duckdb": read_duckdb(table_path),
        "polars": read_polars(table_path).to_arrow(),
        "polars-pyarrow": read_polars_lazy(table_path).to_arrow(),
    }
    for name, table in results.items():
        with (
            pa.OSFile(str(out / f"{name}.arrow"), "wb") as sink,
            pa.ipc.new_file(sink, table.schema) as writer,
        ):
            writer.write_table(table)


def duckdb_refresh(table_path: Path) -> None:
    import anyio

    from streamwrite.table.api import open_table

    con = duckdb.connect()
    old = streamwrite.snapshot_filesystem(table_path)
    con.register_filesystem(old)
    query = "SELECT count(*) FROM read_parquet('{}/**/*.parquet')"
    (before,) = con.sql(query.format(old.url)).fetchall()

    async def commit() -> None:
        async with await open_table(table_path) as table:
            await table.append(table.snapshot().read().slice(0, 5))

    fixed = streamwrite.snapshot_filesystem(table_path, protocol="ticks")  # the same SQL each time
    con.register_filesystem(fixed)
    (fixed_before,) = con.sql(
        "SELECT count(*) FROM read_parquet('ticks:///**/*.parquet')"
    ).fetchall()
    anyio.run(commit)
    con.unregister_filesystem("ticks")  # a fixed name: unregister the old view first
    fixed.close()
    fixed = streamwrite.snapshot_filesystem(table_path, protocol="ticks")
    con.register_filesystem(fixed)
    (fixed_after,) = con.sql(
        "SELECT count(*) FROM read_parquet('ticks:///**/*.parquet')"
    ).fetchall()
    con.unregister_filesystem("ticks")
    fixed.close()
    new = streamwrite.snapshot_filesystem(table_path)
    con.register_filesystem(new)  # beside the old one: each view has its own protocol
    (after,) = con.sql(query.format(new.url)).fetchall()
    (old_again,) = con.sql(query.format(old.url)).fetchall()
    con.unregister_filesystem(old.protocol)
    old.close()
    print(
        json.dumps(
            {
                "before": before[0],
                "after": after[0],
                "old_again": old_again[0],
                "fixed": [fixed_before[0], fixed_after[0]],
                "versions": [old.version, new.version],
                "protocols": [old.protocol, new.protocol],
                "registered": con.list_filesystems(),
            }
        )
    )


# -- the reader loop ----------------------------------------------------------------------------

Reader = Callable[[Path], tuple[Any, np.ndarray]]  # -> (version, seq values)


class Loop:
    def __init__(self, table_path: Path) -> None:
        self.path = table_path
        self.con = duckdb.connect()  # one connection for the whole loop, as an app would

    def view_pyarrow(self) -> tuple[Any, np.ndarray]:
        with streamwrite.snapshot_filesystem(self.path) as fs:
            table = ds.dataset("/", filesystem=fs, format="parquet").to_table(columns=["seq"])
            return fs.version, table.column("seq").to_numpy()

    def view_duckdb(self) -> tuple[Any, np.ndarray]:
        with streamwrite.snapshot_filesystem(self.path) as fs:
            self.con.register_filesystem(fs)
            try:
                table = self.con.sql(
                    f"SELECT seq FROM read_parquet('{fs.url}/**/*.parquet')"
                ).to_arrow_table()
            finally:
                self.con.unregister_filesystem(fs.protocol)
            return fs.version, table.column("seq").to_numpy()

    def view_polars(self) -> tuple[Any, np.ndarray]:
        with streamwrite.snapshot_filesystem(self.path) as fs:
            frame = pl.read_parquet([fs.open(name) for name in fs.find("/")], columns=["seq"])
            return fs.version, frame["seq"].to_numpy()

    def view_polars_pyarrow(self) -> tuple[Any, np.ndarray]:
        with streamwrite.snapshot_filesystem(self.path) as fs:
            dataset = ds.dataset("/", filesystem=fs, format="parquet")
            frame = pl.scan_pyarrow_dataset(dataset).select("seq").collect()
            return fs.version, frame["seq"].to_numpy()

    def bare_pyarrow(self) -> tuple[Any, np.ndarray]:
        table = ds.dataset(self.path, format="parquet").to_table(columns=["seq"])
        return None, table.column("seq").to_numpy()

    def bare_duckdb(self) -> tuple[Any, np.ndarray]:
        table = self.con.sql(
            f"SELECT seq FROM read_parquet('{self.path}/**/*.parquet')"
        ).to_arrow_table()
        return None, table.column("seq").to_numpy()

    def bare_polars(self) -> tuple[Any, np.ndarray]:
        frame = pl.read_parquet(f"{self.path}/**/*.parquet", columns=["seq"])
        return None, frame["seq"].to_numpy()


def loop(table_path: Path, mode: str, num_reads: int) -> None:
    readers = Loop(table_path)
    engines = (
        {
            "pyarrow": readers.view_pyarrow,
            "duckdb": readers.view_duckdb,
            "polars": readers.view_polars,
            "polars-pyarrow": readers.view_polars_pyarrow,
        }
        if mode == "view"
        else {
            "pyarrow": readers.bare_pyarrow,
            "duckdb": readers.bare_duckdb,
            "polars": readers.bare_polars,
        }
    )
    names = list(engines)
    for i in range(num_reads):
        engine = names[i % len(names)]
        version: Any = None
        started = time.time()
        num_rows = None
        problem = None
        try:
            version, seq = engines[engine]()
            num_rows = len(seq)
            ordered = np.sort(seq)
            if not np.array_equal(ordered, np.arange(num_rows, dtype=ordered.dtype)):
                problem = f"seq is not 0..{num_rows - 1} (duplicates or gaps)"
        except Exception as exc:  # a failed read is what the parent counts
            problem = f"{type(exc).__name__}: {str(exc)[:300]}"
        line = {"i": i, "engine": engine, "time": started, "version": version}
        line["num_rows"] = num_rows
        print(json.dumps({**line, "problem": problem}), flush=True)


if __name__ == "__main__":
    command, table = sys.argv[1], Path(sys.argv[2])
    if command == "engines":
        engines(table, Path(sys.argv[3]))
    elif command == "duckdb-refresh":
        duckdb_refresh(table)
    else:
        loop(table, sys.argv[3], int(sys.argv[4]))
