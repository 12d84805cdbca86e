"""Data skipping benchmark: needle queries on a table of 1,000 segments, against pyarrow and DuckDB.

One table of the reference data (``--segments`` segments of ``--rows`` rows each, 20M rows at
the defaults), its timestamps spread over a year (partitioned by day, a few segments a day), a
skipping store on ``symbol`` (valuelist, bloom), ``order_id`` (bloom), ``price`` and ``ts``
(minmax), and one symbol (``NEEDLE``) that only one segment holds. Five queries, each run by
four readers in one round-robin loop (best of ``--repeat``):

- **streamwrite, pruned**: ``snapshot.read(columns, filters=f)`` (partition, store, row group,
  page pruning; the filter applied to the rows read);
- **streamwrite, no pruning**: ``snapshot.read(columns)`` then the same filter with
  ``pyarrow.compute`` (every segment read);
- **pyarrow.dataset** on the table directory (Hive partitioning; it prunes by row-group
  statistics, reading every footer), discovered per query, with the same filter;
- **DuckDB** ``read_parquet('<table>/**/*.parquet', hive_partitioning=true)`` with the same
  ``WHERE``.

Per query and reader: seconds, rows returned (all four must agree: the script fails
otherwise), and bytes read (``rchar`` of ``/proc/self/io``: bytes the process read through
system calls, page cache included); for streamwrite also segments / row groups / pages read
(from ``snapshot.plan(filters)``). Then commit time of a streaming table with and without
index maintenance (the same batches, round-robin).

Run from the repository root::

    .venv/bin/python benchmarks/bench_skipping.py            # 1,000 segments x 20,000 rows
    .venv/bin/python benchmarks/bench_skipping.py --quick    # 60 segments x 2,000 rows
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from _common import Report, bench_parser, fmt_bytes, markdown_table, verdict

import streamwrite
from streamwrite.testing import reference_table

YEAR_NS = 365 * 86_400 * 1_000_000_000
START_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z
SKIPPING = {
    "symbol": ["valuelist", "bloom"],
    "order_id": ["bloom"],
    "price": ["minmax"],
    "ts": ["minmax"],
}


def read_chars() -> int:
    """Bytes this process has read through system calls so far (``rchar``)."""
    with open("/proc/self/io", encoding="ascii") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return 0


def segment_rows(index: int, num_rows: int, num_segments: int, needle: int) -> pa.Table:
    """Segment ``index``'s rows: the reference rows with a year-long time axis, a random walk
    ``price`` per segment, and the ``NEEDLE`` symbol in segment ``needle`` only."""
    rows = reference_table(num_rows, start_row=index * num_rows)
    step = YEAR_NS // (num_segments * num_rows)
    ts = START_NS + (index * num_rows + np.arange(num_rows, dtype=np.int64)) * step
    rows = rows.set_column(0, "ts", pa.array(ts, pa.timestamp("ns")))
    if index == needle:
        symbols = rows.column("symbol").to_numpy(zero_copy_only=False).astype(object)
        symbols[:: max(1, num_rows // 50)] = "NEEDLE"
        rows = rows.set_column(1, "symbol", pa.array(symbols, pa.string()))
    return rows


async def build(path: Path, num_segments: int, num_rows: int, needle: int) -> tuple[str, float]:
    """Create the table: one commit per segment. Returns: an ``order_id`` of the needle
    segment and the price above which only the highest few segments hold rows."""
    first = segment_rows(0, 1, num_segments, needle)
    table = await streamwrite.open_table(
        path,
        first.schema,
        timestamp="ts",
        partition_by="day",
        segment_row_groups=1,
        row_group_size=num_rows,
        commit_interval=None,
        compaction_interval=None,
        skipping=SKIPPING,
    )
    order_id = ""
    highs: list[float] = []
    async with table:
        for i in range(num_segments):
            rows = segment_rows(i, num_rows, num_segments, needle)
            highs.append(pc.max(rows.column("price")).as_py())
            if i == needle:
                order_id = rows.column("order_id")[num_rows // 2].as_py()
            await table.append(rows)
            await table.flush()
    threshold = sorted(highs)[-2]  # price > threshold: only the segment with the highest max
    return order_id, threshold


def queries(order_id: str, threshold: float, num_segments: int) -> dict[str, tuple[Any, str]]:
    """Each query as ``(pyarrow expression, SQL WHERE)``."""
    hour0 = START_NS + YEAR_NS // 2
    t0 = pa.scalar(hour0, pa.timestamp("ns"))
    t1 = pa.scalar(hour0 + 3_600_000_000_000, pa.timestamp("ns"))
    sql_t0 = f"make_timestamp_ns({hour0})"
    sql_t1 = f"make_timestamp_ns({hour0 + 3_600_000_000_000})"
    return {
        "one symbol": (pc.field("symbol") == "NEEDLE", "symbol = 'NEEDLE'"),
        "one order_id (bloom)": (pc.field("order_id") == order_id, f"order_id = '{order_id}'"),
        "one hour": (
            (pc.field("ts") >= t0) & (pc.field("ts") < t1),
            f"ts >= {sql_t0} AND ts < {sql_t1}",
        ),
        "price > x (random walk)": (pc.field("price") > threshold, f"price > {threshold!r}"),
        "unprunable (qty >= 500)": (pc.field("qty") >= 500, "qty >= 500"),
    }


COLUMNS = ["ts", "symbol", "price", "qty", "order_id"]


def readers(path: Path) -> dict[str, Callable[[Any, str], pa.Table]]:
    con = duckdb.connect()
    glob = str(path / "**" / "*.parquet")

    def pruned(expr: Any, where: str) -> pa.Table:
        return streamwrite.read_table(path, columns=COLUMNS, filters=expr)

    def unpruned(expr: Any, where: str) -> pa.Table:
        return streamwrite.read_table(path, columns=COLUMNS).filter(expr)

    def pyarrow_dataset(expr: Any, where: str) -> pa.Table:
        # discovered per query, as each streamwrite read reads _txn: a dataset object kept
        # across queries would serve its footers from memory after the first
        dataset = ds.dataset(path, format="parquet", partitioning="hive")
        return dataset.to_table(columns=COLUMNS, filter=expr)

    def duck(expr: Any, where: str) -> pa.Table:
        sql = (
            f"SELECT {', '.join(COLUMNS)} FROM read_parquet('{glob}', hive_partitioning=true) "
            f"WHERE {where}"
        )
        return con.sql(sql).to_arrow_table()

    return {
        "streamwrite pruned": pruned,
        "streamwrite no pruning": unpruned,
        "pyarrow.dataset": pyarrow_dataset,
        "DuckDB": duck,
    }


def run_queries(
    path: Path, order_id: str, threshold: float, num_segments: int, repeat: int
) -> dict[str, dict[str, dict[str, Any]]]:
    """Best seconds, rows and bytes read per query and reader (round-robin repeats)."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    all_readers = readers(path)
    for name, (expr, where) in queries(order_id, threshold, num_segments).items():
        found[name] = {r: {"seconds": float("inf")} for r in all_readers}
        for _ in range(repeat):
            for reader, read in all_readers.items():
                rows = None  # the previous result is freed here, not inside the next timing
                gc.collect()
                chars = read_chars()
                started = time.perf_counter()
                rows = read(expr, where)
                seconds = time.perf_counter() - started
                entry = found[name][reader]
                entry["seconds"] = min(entry["seconds"], seconds)
                entry["rows"] = rows.num_rows
                entry["bytes"] = read_chars() - chars
        plan = streamwrite.read_snapshot(path).plan(expr, COLUMNS)
        found[name]["streamwrite pruned"].update(
            segments=f"{plan.num_segments_read:,} / {plan.num_segments:,}",
            row_groups=f"{plan.num_row_groups_read:,} / {plan.num_row_groups:,}",
            pages=f"{plan.num_pages_read:,} / {plan.num_pages:,}",
        )
        counts = {entry["rows"] for entry in found[name].values()}
        if len(counts) != 1:
            raise SystemExit(f"{name}: the readers disagree on the rows: {found[name]}")
    return found


async def commit_times(path: Path, num_commits: int, num_rows: int) -> dict[str, list[float]]:
    """Seconds per durable commit, with and without index maintenance, round-robin."""
    schema = reference_table(1).schema
    tables = {
        "no index": await streamwrite.open_table(
            path / "plain",
            schema,
            timestamp="ts",
            partition_by="day",
            commit_interval=None,
            compaction_interval=None,
        ),
        "with index": await streamwrite.open_table(
            path / "indexed",
            schema,
            timestamp="ts",
            partition_by="day",
            commit_interval=None,
            compaction_interval=None,
            skipping=SKIPPING,
        ),
    }
    seconds: dict[str, list[float]] = {name: [] for name in tables}
    for i in range(num_commits):
        batch = reference_table(num_rows, start_row=i * num_rows)
        for name, table in tables.items():
            started = time.perf_counter()
            await table.append(batch)
            await table.flush()
            seconds[name].append(time.perf_counter() - started)
    for table in tables.values():
        await table.close()
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--segments", type=int, default=1_000)
    parser.add_argument("--rows", type=int, default=20_000, help="rows per segment")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--commits", type=int, default=200, help="streaming commits timed")
    parser.add_argument("--commit-rows", type=int, default=10_000)
    args = parser.parse_args(argv)
    if args.quick:
        args.segments, args.rows, args.repeat, args.commits = 60, 2_000, 1, 20
    report = Report(
        "skipping",
        args,
        details=[
            f"- table: {args.segments} segments x {args.rows:,} rows "
            f"({args.segments * args.rows:,} rows), skipping {SKIPPING}"
        ],
    )
    needle = args.segments // 3
    with report.workdir() as workdir:
        started = time.perf_counter()
        order_id, threshold = anyio.run(build, workdir / "t", args.segments, args.rows, needle)
        print(f"table built in {time.perf_counter() - started:.0f} s\n")
        found = run_queries(workdir / "t", order_id, threshold, args.segments, args.repeat)
        rows = []
        for name, by_reader in found.items():
            base = by_reader["streamwrite pruned"]["seconds"]
            for reader, entry in by_reader.items():
                rows.append(
                    [
                        name,
                        reader,
                        f"{entry['seconds'] * 1e3:.1f}",
                        f"{entry['seconds'] / base:.1f}",
                        f"{int(entry['rows']):,}",
                        fmt_bytes(int(entry["bytes"])),
                        entry.get("segments", ""),
                        entry.get("row_groups", ""),
                        entry.get("pages", ""),
                    ]
                )
        print("## Queries\n")
        print(
            markdown_table(
                [
                    "query",
                    "reader",
                    "ms (best)",
                    "/ pruned",
                    "rows",
                    "bytes read",
                    "segments read",
                    "row groups read",
                    "pages read",
                ],
                rows,
            )
        )
        times = anyio.run(commit_times, workdir / "c", args.commits, args.commit_rows)
        plain = statistics.median(times["no index"])
        indexed = statistics.median(times["with index"])
        print(
            f"\n## Streaming commits ({args.commits} x {args.commit_rows:,} rows)\n\n"
            f"median commit: {plain * 1e3:.2f} ms without index maintenance, "
            f"{indexed * 1e3:.2f} ms with ({indexed / plain:.3f}x)\n"
        )
    verdicts = []
    for name in ("one symbol", "one order_id (bloom)", "one hour"):
        ours = found[name]["streamwrite pruned"]["seconds"]
        worst = min(found[name]["pyarrow.dataset"]["seconds"], found[name]["DuckDB"]["seconds"])
        verdicts.append(
            verdict(
                f"{name}: >= 20x faster than pyarrow.dataset and DuckDB",
                f"{worst / ours:.1f}x",
                worst / ours >= 20,
            )
        )
    name = "unprunable (qty >= 500)"
    ratio = (
        found[name]["streamwrite pruned"]["seconds"]
        / found[name]["streamwrite no pruning"]["seconds"]
    )
    verdicts.append(
        verdict("unprunable query, pruned / no pruning <= 1.1", f"{ratio:.2f}x", ratio <= 1.1)
    )
    verdicts.append(
        verdict(
            "index maintenance <= 5% of commit time",
            f"{indexed / plain:.3f}x",
            indexed / plain <= 1.05,
        )
    )
    return report.finish(verdicts)


if __name__ == "__main__":
    sys.exit(main())
