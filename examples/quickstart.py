"""streamwrite quick start: write the reference table, read it back with three readers.

Writes 1,000,000 rows of the reference time-series table to ``quickstart-out/trades.parquet``
(override with ``--rows`` / ``--out``), then reads the file with streamwrite's own reader,
pyarrow (checking every page CRC) and DuckDB, and prints throughput and sizes next to
pyarrow's own writer.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

import streamwrite
from streamwrite.testing import reference_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path("quickstart-out"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    table = reference_table(args.rows)
    ours = args.out / "trades.parquet"
    theirs = args.out / "trades-pyarrow.parquet"

    start = time.perf_counter()
    streamwrite.write_table(table, ours, bloom_filter_options={"order_id": True})
    ours_s = time.perf_counter() - start
    start = time.perf_counter()
    pq.write_table(table, theirs, compression="zstd")
    theirs_s = time.perf_counter() - start

    assert streamwrite.read_table(ours).equals(table)
    assert pq.read_table(ours, page_checksum_verification=True).equals(table)
    ((count, symbols),) = duckdb.sql(
        f"SELECT count(*), count(DISTINCT symbol) FROM read_parquet('{ours}')"
    ).fetchall()
    assert count == table.num_rows

    print(f"rows:                 {table.num_rows:,}")
    print(
        f"streamwrite write:    {table.num_rows / ours_s:,.0f} rows/s, "
        f"{ours.stat().st_size:,} bytes -> {ours}"
    )
    print(
        f"pyarrow write (zstd): {table.num_rows / theirs_s:,.0f} rows/s, "
        f"{theirs.stat().st_size:,} bytes"
    )
    print(
        f"read back equal by:   streamwrite, pyarrow (page CRCs checked), "
        f"DuckDB ({count:,} rows, {symbols} symbols)"
    )
    print(f"inspect it:           .venv/bin/streamwrite inspect {ours}")


if __name__ == "__main__":
    main()
