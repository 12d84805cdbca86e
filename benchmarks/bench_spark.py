"""Spark and object storage benchmark: writes, reads and remote byte counts on the same cores.

One run, one local Spark session (``local[2]``, Python workers on this interpreter). The input is
``--rows`` rows of ``streamwrite.testing.reference_table`` (``ts`` as Spark's TIMESTAMP,
microseconds UTC), range-partitioned by ``ts`` into ``--partitions`` Spark partitions, sorted
within each, and cached in Spark's memory before anything is timed, so every writer starts from
the same in-memory DataFrame.

1. **Writes** (round-robin, best of ``--repeat``; each run writes a new directory):
   the driver-mode sink (``foreach_batch_sink(path, timestamp="ts", partition_by="day")`` called
   with the DataFrame and a batch id: ``toArrow()`` on the driver, then one table append there),
   and Spark's own ``df.write.parquet`` with its default codec (snappy) and with zstd (the
   table's codec). rows/s and the ratio to ``df.write.parquet`` (snappy: Spark's default, the
   target's peer).
2. **Reads**: each table the writers made, read in full by ``spark.read.format("streamwrite")``
   and by ``spark.read.parquet`` of the same ``data.parquet`` files; the action is the same for
   both, ``df.write.format("noop").mode("overwrite").save()`` (every row of every column reaches
   the JVM; nothing is written). Round-robin, best of ``--repeat``; the row count and
   ``sum(qty)`` of both readers are checked equal to the input's (not timed).

Spark session: ``local[2]`` as the test fixtures, but ``spark.driver.memory`` = ``--driver-memory``
(default 4g: local mode runs the executors in the driver JVM, which holds the cached input,
about 0.4 GB at 10M rows, plus driver mode's ``toArrow()``, the whole 10M-row batch as Arrow
buffers, about 0.7 GB, collected in the JVM before it reaches Python; the fixtures' 1g fails
there), ``spark.driver.maxResultSize=4g`` (the collected batch exceeds the default 1g), the
JVM's default JIT and GC (the fixtures' ``-XX:TieredStopAtLevel=1 -XX:+UseSerialGC`` start a
session faster but slow Spark's own writer and reader down, which would flatter our ratios),
session time zone UTC, and the Arrow batch size Spark's default (10,000 rows).

Run from the repository root::

    .venv/bin/python benchmarks/bench_spark.py                 # 10M rows, best of 2
    .venv/bin/python benchmarks/bench_spark.py --rows 1000000  # development
    .venv/bin/python benchmarks/bench_spark.py --quick         # smoke run (20k rows)
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from _common import (
    Report,
    bench_parser,
    fmt_bytes,
    fmt_ratio,
    load_average,
    markdown_table,
    verdict,
)

import streamwrite
import streamwrite.spark
from streamwrite.spark import foreach_batch_sink
from streamwrite.testing import reference_table

TABLE_OPTIONS: dict[str, Any] = {"timestamp": "ts", "partition_by": "day"}
"""How every streamwrite writer lays the table out (the reference ticks span one UTC day)."""


def session_config(driver_memory: str) -> dict[str, str]:
    """The Spark settings of the run (module docstring)."""
    return {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.driver.memory": driver_memory,
        "spark.driver.maxResultSize": "4g",
        "spark.sql.session.timeZone": "UTC",
    }


def start_spark(driver_memory: str) -> Any:
    """A local[2] session whose Python workers run this interpreter."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("streamwrite-bench-spark")
    for key, value in session_config(driver_memory).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    streamwrite.spark.register(spark)
    return spark


def write_source(path: Path, num_rows: int) -> tuple[int, int]:
    """The reference table as one Parquet file Spark reads (``ts`` in microseconds, UTC).

    Returns:
        The Arrow bytes of the table and its ``sum(qty)``.
    """
    table = reference_table(num_rows)
    ts = pc.cast(table.column("ts"), pa.timestamp("us", tz="UTC"), safe=False)
    table = table.set_column(0, "ts", ts)
    pq.write_table(table, path, compression="zstd", row_group_size=1_000_000)
    qty = int(pc.sum(table.column("qty")).as_py())
    return table.nbytes, qty


def tree_size(path: Path) -> int:
    """Bytes of every file under ``path`` (a table's ``_txn``, footers chain and data)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def data_files(table: Path) -> list[str]:
    """The ``data.parquet`` files of a table's newest snapshot."""
    return [str(p) for p in streamwrite.read_snapshot(table).data_files()]


def spark_parquet_files(directory: Path) -> list[str]:
    """The part files ``df.write.parquet`` wrote into ``directory``."""
    return sorted(str(p) for p in directory.glob("part-*.parquet"))


def round_robin(
    runs: dict[str, Callable[[int], object]], repeat: int, between: Callable[[], None]
) -> dict[str, float]:
    """Call each of ``runs`` (with the repeat index) once per round, ``repeat`` rounds.

    Returns:
        The best wall-clock seconds of each.
    """
    best = dict.fromkeys(runs, float("inf"))
    for index in range(max(1, repeat)):
        for name, run in runs.items():
            between()
            started = time.perf_counter()
            run(index)
            best[name] = min(best[name], time.perf_counter() - started)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, quick_help="smoke run: at most 20,000 rows, one repeat")
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the DataFrame")
    parser.add_argument("--repeat", type=int, default=2, help="best of N (default 2)")
    parser.add_argument(
        "--partitions", type=int, default=4, help="Spark partitions of the input (default 4)"
    )
    parser.add_argument("--driver-memory", default="4g", help="spark.driver.memory (default 4g)")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.repeat = min(args.rows, 20_000), 1
    report = Report(
        "spark",
        args,
        [
            f"- rows {args.rows:,}, Spark partitions {args.partitions}, best of {args.repeat}",
            "- Spark: local[2], "
            + ", ".join(f"{k}={v}" for k, v in session_config(args.driver_memory).items()),
        ],
    )
    with report.workdir() as workdir:
        started = time.perf_counter()
        source = workdir / "source.parquet"
        arrow_size, qty_sum = write_source(source, args.rows)
        spark = start_spark(args.driver_memory)
        import pyspark

        df = (
            spark.read.parquet(str(source))
            .repartitionByRange(args.partitions, "ts")
            .sortWithinPartitions("ts")
            .cache()
        )
        assert df.count() == args.rows
        print(
            f"Input: {args.rows:,} rows, {fmt_bytes(arrow_size)} bytes of Arrow buffers, "
            f"cached in {args.partitions} Spark partitions (pyspark {pyspark.__version__}; "
            f"set up in {time.perf_counter() - started:.1f} s, not timed).\n"
        )
        verdicts: list[str] = []
        try:
            writes = run_writes(spark, df, workdir, args)
            verdicts += writes.pop("verdicts")
            reads = run_reads(spark, writes, args.rows, qty_sum, args.repeat)
            verdicts += reads
        finally:
            df.unpersist()
            spark.stop()
        print(f"- total run time {report.seconds():.0f} s\n")
        return report.finish(verdicts)


def run_writes(spark: Any, df: Any, workdir: Path, args: Any) -> dict[str, Any]:
    """Section 1. Returns the directories of the last run of each writer and the verdicts."""
    out = workdir / "writes"
    out.mkdir()
    last: dict[str, Path] = {}

    def target(name: str, index: int) -> Path:
        path = out / f"{name}-{index}"
        previous = last.get(name)
        if previous is not None:
            shutil.rmtree(previous)  # keep one copy per writer on disk
        last[name] = path
        return path

    def driver(index: int) -> None:
        sink = foreach_batch_sink(target("driver", index), app_id="bench", **TABLE_OPTIONS)
        sink(df, 0)

    def spark_parquet(index: int) -> None:
        df.write.parquet(str(target("parquet", index)))

    def spark_parquet_zstd(index: int) -> None:
        df.write.option("compression", "zstd").parquet(str(target("parquet-zstd", index)))

    runs: dict[str, Callable[[int], object]] = {
        "driver mode (foreach_batch_sink, toArrow)": driver,
        "df.write.parquet (snappy, default)": spark_parquet,
        "df.write.parquet (zstd)": spark_parquet_zstd,
    }
    load_before = load_average()
    best = round_robin(runs, args.repeat, lambda: None)
    peer = best["df.write.parquet (snappy, default)"]
    directories = dict(
        zip(runs, (last["driver"], last["parquet"], last["parquet-zstd"]), strict=True)
    )
    rows = []
    for name, seconds in best.items():
        directory = directories[name]
        num_files = (
            len(data_files(directory))
            if (directory / "_txn").exists()
            else len(spark_parquet_files(directory))
        )
        rows.append(
            [
                name,
                f"{seconds:.2f}",
                f"{args.rows / seconds:,.0f}",
                fmt_ratio(peer / seconds),
                fmt_bytes(tree_size(directory)),
                num_files,
            ]
        )
    print(f"## 1. Writes ({args.rows:,} rows, round-robin, best of {args.repeat})\n")
    print(f"- load average before: {load_before}; after: {load_average()}\n")
    print(
        markdown_table(
            ["writer", "seconds", "rows/s", "rows/s vs df.write.parquet", "bytes", "files"],
            rows,
        )
    )
    print()
    return {
        "tables": {
            "driver mode": last["driver"],
        },
        "parquet": last["parquet"],
        "verdicts": [],
    }


def run_reads(
    spark: Any, writes: dict[str, Any], num_rows: int, qty_sum: int, repeat: int
) -> list[str]:
    """Section 2: each table by the data source and by spark.read.parquet of its files.

    Returns:
        The verdict on the data source's read speed.
    """
    from pyspark.sql import functions as sf

    def full_scan(frame: Any) -> None:
        frame.write.format("noop").mode("overwrite").save()

    rows = []
    ratios = []
    load_before = load_average()
    for label, table in writes["tables"].items():
        files = data_files(table)
        source = spark.read.format("streamwrite").load(str(table))
        parquet = spark.read.parquet(*files)
        for frame in (source, parquet):  # checked, not timed
            check = frame.agg(sf.count("*"), sf.sum("qty")).collect()[0]
            assert (check[0], check[1]) == (num_rows, qty_sum), (label, check)
        best = round_robin(
            {
                "source": lambda _, t=str(table): full_scan(
                    spark.read.format("streamwrite").load(t)
                ),
                "parquet": lambda _, f=tuple(files): full_scan(spark.read.parquet(*f)),
            },
            repeat,
            lambda: None,
        )
        ratio = best["parquet"] / best["source"]
        ratios.append(ratio)
        rows.append(
            [
                label,
                len(files),
                f"{best['source']:.2f}",
                f"{num_rows / best['source']:,.0f}",
                f"{best['parquet']:.2f}",
                f"{num_rows / best['parquet']:,.0f}",
                fmt_ratio(ratio),
            ]
        )
    print(f"## 2. Reads (full scan, noop sink, round-robin, best of {repeat})\n")
    print(f"- load average before: {load_before}; after: {load_average()}\n")
    print(
        markdown_table(
            [
                "table written by",
                "segments",
                'format("streamwrite") s',
                "rows/s",
                "spark.read.parquet s",
                "rows/s",
                "source vs parquet rows/s",
            ],
            rows,
        )
    )
    print()
    worst = min(ratios)
    return [
        verdict(
            "data source reads >= 0.5x spark.read.parquet of the same files (worst table)",
            fmt_ratio(worst),
            worst >= 0.5,
        )
    ]


if __name__ == "__main__":
    sys.exit(main())
