"""Spark and object storage benchmark: writes, reads and remote byte counts on the same cores.

One run, one local Spark session (``local[2]``, Python workers on this interpreter). The input is
``--rows`` rows of ``streamwrite.testing.reference_table`` (``ts`` as Spark's TIMESTAMP,
microseconds UTC), range-partitioned by ``ts`` into ``--partitions`` Spark partitions, sorted
within each, and cached in Spark's memory before anything is timed, so every writer starts from
the same in-memory DataFrame. Every streamwrite table is ``timestamp="ts", partition_by="day"``
with the table's defaults otherwise (zstd); the reference ticks span one UTC day.

1. **Writes** (round-robin, best of ``--repeat``; each run writes a new directory):
   executor mode (``streamwrite.spark.write(df, path, app_id=, batch_id=)``: each Spark task
   stages a segment, the driver publishes them in one ``_txn`` version), driver mode (the
   ``foreach_batch_sink`` called with the DataFrame and a batch id: ``toArrow()`` on the driver,
   then one table append there), and Spark's own ``df.write.parquet`` with its default codec
   (snappy: the target's peer) and with zstd (the table's codec), rows/s and their ratio to
   ``df.write.parquet``. Every timed run also counts the CPU seconds (user + system, from
   ``/proc/PID/stat``) of the processes it ran in: the Spark JVM (tasks, JIT and GC threads),
   the Python workers Spark forks, and this driver process; the best run's are shown, with
   the peer's CPU total over each one's (a CPU-time ratio: on a shared, loaded machine the
   wall-clock ratio also measures who got the cores). A last row, not a writer, is the floor
   of any executor-side Python writer: a ``mapInArrow`` that only counts the rows it gets.
2. **Reads**: each table the streamwrite writers made, read in full by
   ``spark.read.format("streamwrite")`` and by ``spark.read.parquet`` of the same
   ``data.parquet`` files; the action is the same for both,
   ``df.write.format("noop").mode("overwrite").save()`` (every column of every row reaches the
   JVM's rows; nothing is written). Round-robin, best of ``--repeat``, with CPU seconds as
   above, the number of Spark tasks each reader plans and the seconds that planning takes
   (loading a new DataFrame and ``df.rdd.getNumPartitions()``: for the data source, its
   schema and planning run in Python workers on the driver); the row count and ``sum(qty)``
   each reader gives are checked equal to the input's first (not timed). A third reader is
   the floor of any Python data source: one (defined in this script) that decodes the same
   files with pyarrow's C++ reader, one task per row group, and hands Spark the batches.
3. **Remote read bytes**: the biggest segment of the executor-mode table uploaded to a moto S3
   server on localhost (``streamwrite.testing.s3.S3Server``, HTTP, s3fs), then per column a
   one-column read, ``ParquetFile(RangeSource(store, key, size)).read([column])`` with an empty
   range cache, counted by the store's ``FetchStats``: data requests (GETs; size look-ups and
   listings counted apart) and bytes fetched against the object's size and against the bytes
   of the column chunks the read needs (each row group's chunk, dictionary page included,
   from pyarrow's view of the footer). Opening the file
   fetches the tail (64 KiB by default: the footer); the target compares what the read fetched
   after that with the chunk bytes that tail did not already hold (on a small segment the tail
   holds whole chunks). Each read is checked equal to the local file's column.
   Then the whole executor-mode table is tiered to the bucket (``open_table(...,
   cold_storage="s3://bench/ticks", cold_after=0)`` and ``tier()``) and read by its URL one
   column at a time, ``streamwrite.read_table(url, columns=[c], storage_options=)`` with the
   process-wide range cache cleared: bytes fetched against the chunk bytes of every segment,
   after the newest ``_txn_log`` object and one tail request per segment.
4. **Where the time goes** (``--profile TOP``, one extra run of each streamwrite path, not
   timed above): Spark's Python profiler (``spark.sql.pyspark.udf.profiler=perf``) over the
   executor-mode tasks, ``toArrow()`` against the whole driver-mode call, and the data source's
   worker code (``partitions()`` then ``read()`` of each) under cProfile in this process.

Spark session: ``local[2]`` as the test fixtures, but ``spark.driver.memory`` = ``--driver-memory``
(default 4g: in local mode the executors are the driver JVM, which holds the cached input and,
in driver mode, the whole DataFrame collected as Arrow batches by ``toArrow()`` before they
reach Python; the report prints the cache's size), ``spark.driver.maxResultSize=4g`` (the
collected 10M-row batch is close to the default 1g), the JVM's default JIT and GC (the
fixtures' ``-XX:TieredStopAtLevel=1 -XX:+UseSerialGC`` start a session faster but slow Spark's
own writer and reader, which would flatter our ratios), session time zone UTC, Spark's default
Arrow batch size (10,000 rows).

Run from the repository root::

    .venv/bin/python benchmarks/bench_spark.py                 # 10M rows, best of 2
    .venv/bin/python benchmarks/bench_spark.py --rows 1000000  # development
    .venv/bin/python benchmarks/bench_spark.py --quick         # smoke run (<= 20k rows)
    .venv/bin/python benchmarks/bench_spark.py --profile 20    # and section 4
"""

from __future__ import annotations

import contextlib
import cProfile
import io
import json
import os
import pstats
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from _common import (
    MB,
    Report,
    bench_parser,
    best_of,
    fmt_bytes,
    fmt_ratio,
    load_average,
    markdown_table,
    verdict,
)

import streamwrite
import streamwrite.spark
from streamwrite.format.txn import TXN_LOG_DIR
from streamwrite.io.remote import (
    DEFAULT_TAIL_SIZE,
    RANGE_CACHE,
    RangeCache,
    RangeSource,
    open_store,
)
from streamwrite.testing import reference_table
from streamwrite.testing.s3 import S3Server

TABLE_OPTIONS: dict[str, Any] = {"timestamp": "ts", "partition_by": "day"}
"""How every streamwrite writer lays the table out."""
APP_ID = "bench"


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
    """A local[2] session whose Python workers run this interpreter, with the ``streamwrite``
    data source registered."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("streamwrite-bench-spark")
    for key, value in session_config(driver_memory).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    streamwrite.spark.register(spark)
    spark.dataSource.register(PyarrowSource.make())
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
    return table.nbytes, int(pc.sum(table.column("qty")).as_py())


def cached_size(spark: Any) -> int:
    """Bytes Spark's cache holds in memory (every cached RDD)."""
    infos = spark.sparkContext._jsc.sc().getRDDStorageInfo()
    return sum(int(info.memSize()) for info in infos)


def tree_size(path: Path) -> int:
    """Bytes of every file under ``path`` (for a table: ``_txn``, ``_pm`` and data)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def table_segments(table: Path) -> list[tuple[Path, int]]:
    """The ``data.parquet`` files of a table's newest snapshot, with their committed sizes."""
    snapshot = streamwrite.read_snapshot(table)
    sizes = [size for _, size in snapshot.files]
    return list(zip(snapshot.data_files(), sizes, strict=True))


CPU_KINDS = ("JVM", "Python workers", "driver Python")
"""Where the CPU time of a run goes: the Spark JVM (its tasks, Spark's own writer and reader),
the Python workers it forks (mapInArrow, the data source's reads), this process."""


def tree_cpu() -> dict[int, tuple[str, float]]:
    """CPU seconds (user + system, with those of reaped children) of this process and of
    every process under it, by pid, with its kind (:data:`CPU_KINDS`)."""
    me = os.getpid()
    parents: dict[int, int] = {}
    seconds: dict[int, tuple[str, float]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()  # fields[0] is stat field 3 (state)
        pid = int(entry.name)
        parents[pid] = int(fields[1])
        kind = "driver Python" if pid == me else "JVM" if name == "java" else "Python workers"
        seconds[pid] = (kind, sum(int(x) for x in fields[11:15]) / tick)
    tree = {me}
    grew = True
    while grew:
        found = {pid for pid, parent in parents.items() if parent in tree} - tree
        grew = bool(found)
        tree |= found
    return {pid: seconds[pid] for pid in tree if pid in seconds}


def cpu_delta(
    before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]
) -> dict[str, float]:
    """CPU seconds spent between two :func:`tree_cpu` snapshots, by kind."""
    spent = dict.fromkeys(CPU_KINDS, 0.0)
    for pid, (kind, total) in after.items():
        spent[kind] += total - before.get(pid, (kind, 0.0))[1]
    return spent


def round_robin(
    runs: dict[str, Callable[[int], object]], repeat: int
) -> dict[str, tuple[float, dict[str, float]]]:
    """Call each of ``runs`` (with the round's index) once per round, ``repeat`` rounds.

    Returns:
        The best wall-clock seconds of each, with the CPU seconds of that run by kind
        (:func:`cpu_delta`).
    """
    best: dict[str, tuple[float, dict[str, float]]] = {}
    for index in range(max(1, repeat)):
        for name, run in runs.items():
            before = tree_cpu()
            started = time.perf_counter()
            run(index)
            seconds = time.perf_counter() - started
            if name not in best or seconds < best[name][0]:
                best[name] = (seconds, cpu_delta(before, tree_cpu()))
    return best


def cpu_cells(cpu: dict[str, float], peer: dict[str, float]) -> list[str]:
    """The CPU columns of a table row: seconds by kind, in all, and the peer's total over
    this one's (the CPU-time ratio: on a loaded machine steadier than wall-clock ratios)."""
    total = sum(cpu.values())
    return [
        *(f"{cpu[kind]:.1f}" for kind in CPU_KINDS),
        f"{total:.1f}",
        fmt_ratio(sum(peer.values()) / total) if total else "-",
    ]


CPU_HEADERS = [*(f"CPU s {kind}" for kind in CPU_KINDS), "CPU s all", "CPU vs peer"]


def count_batches(batches: Any) -> Any:
    """A ``mapInArrow`` function that reads every batch and writes nothing: what the
    JVM-to-Python transfer alone costs an executor-side writer."""
    num_rows = sum(batch.num_rows for batch in batches)
    yield pa.RecordBatch.from_pydict({"num_rows": [num_rows]})


class PyarrowSource:
    """A Python data source (``bench_pyarrow``) reading Parquet files with pyarrow's C++
    reader, one task per row group: what the Python-to-JVM transfer of a data source costs
    with the fastest decoder at hand (defined here and pickled by value)."""

    @staticmethod
    def make() -> type:
        from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

        class Reader(DataSourceReader):  # type: ignore[misc]
            def __init__(self, files: list[str], schema: Any) -> None:
                self.files = files
                self.schema = schema

            def partitions(self) -> list[Any]:
                return [
                    InputPartition((path, i))
                    for path in self.files
                    for i in range(pq.ParquetFile(path).metadata.num_row_groups)
                ]

            def read(self, partition: Any) -> Any:
                from pyspark.sql.pandas.types import to_arrow_schema

                path, i = partition.value
                target = to_arrow_schema(self.schema, timezone="UTC")
                table = pq.ParquetFile(path).read_row_group(i).select(target.names)
                yield from table.cast(target).to_batches(max_chunksize=65536)

        class Source(DataSource):  # type: ignore[misc]
            @classmethod
            def name(cls) -> str:
                return "bench_pyarrow"

            def schema(self) -> Any:
                from pyspark.sql.types import StructType

                return StructType.fromJson(json.loads(self.options["schema"]))

            def reader(self, schema: Any) -> Any:
                return Reader(self.options["files"].split("\n"), schema)

        return Source


@dataclass
class Writer:
    """One way of writing the DataFrame into a directory."""

    label: str
    write: Callable[[Any, Path], object]
    is_table: bool
    last: Path | None = None


def run_writes(
    df: Any, workdir: Path, num_rows: int, repeat: int, data: dict[str, Any]
) -> tuple[dict[str, Path], str]:
    """Section 1.

    Returns:
        The directory of each streamwrite writer's last run (by label), and the verdict;
        ``data["write_seconds"]`` gets the best seconds of each writer.
    """

    def executors(frame: Any, path: Path) -> object:
        return streamwrite.spark.write(frame, path, app_id=APP_ID, batch_id=0, **TABLE_OPTIONS)

    def driver(frame: Any, path: Path) -> object:
        sink = streamwrite.spark.foreach_batch_sink(path, app_id=APP_ID, **TABLE_OPTIONS)
        sink(frame, 0)
        return None

    def parquet(frame: Any, path: Path) -> object:
        frame.write.parquet(str(path))
        return None

    def parquet_zstd(frame: Any, path: Path) -> object:
        frame.write.option("compression", "zstd").parquet(str(path))
        return None

    def transfer_floor(frame: Any, path: Path) -> object:
        path.mkdir()
        return frame.mapInArrow(count_batches, "num_rows BIGINT").collect()

    peer_label = "df.write.parquet (snappy, Spark's default)"
    writers = [
        Writer("executor mode (streamwrite.spark.write)", executors, True),
        Writer("driver mode (foreach_batch_sink, toArrow)", driver, True),
        Writer(peer_label, parquet, False),
        Writer("df.write.parquet (zstd)", parquet_zstd, False),
        Writer("floor: mapInArrow that only counts rows (no write)", transfer_floor, False),
    ]
    out = workdir / "writes"
    out.mkdir()

    def run(writer: Writer, index: int) -> None:
        if writer.last is not None:
            shutil.rmtree(writer.last)  # one copy per writer on disk
        writer.last = out / f"w{writers.index(writer)}-{index}"
        writer.write(df, writer.last)

    load_before = load_average()
    timed = round_robin({w.label: (lambda index, w=w: run(w, index)) for w in writers}, repeat)
    best = {label: seconds for label, (seconds, _) in timed.items()}
    peer = best[peer_label]
    data["write_seconds"] = best
    data["write_cpu_seconds"] = {label: cpu for label, (_, cpu) in timed.items()}
    rows = []
    for writer in writers:
        assert writer.last is not None
        seconds, cpu = timed[writer.label]
        if writer.is_table:
            num_files = len(table_segments(writer.last))
        else:
            num_files = len(list(writer.last.glob("part-*.parquet")))
        rows.append(
            [
                writer.label,
                f"{seconds:.2f}",
                f"{num_rows / seconds:,.0f}",
                fmt_ratio(peer / seconds),
                fmt_bytes(tree_size(writer.last)),
                num_files,
                *cpu_cells(cpu, timed[peer_label][1]),
            ]
        )
    print(f"## 1. Writes ({num_rows:,} rows, round-robin, best of {repeat})\n")
    print(f"- load average before: {load_before}; after: {load_average()}\n")
    print(
        markdown_table(
            [
                "writer",
                "seconds",
                "rows/s",
                "rows/s vs df.write.parquet",
                "bytes",
                "files",
                *CPU_HEADERS,
            ],
            rows,
        )
    )
    print()
    ratio = peer / best[writers[0].label]
    tables = {w.label.split(" (")[0]: w.last for w in writers if w.is_table and w.last is not None}
    return tables, verdict(
        "executor-mode writes >= 1.0x df.write.parquet rows/s", fmt_ratio(ratio), ratio >= 1.0
    )


def run_reads(
    spark: Any,
    tables: dict[str, Path],
    num_rows: int,
    qty_sum: int,
    repeat: int,
    data: dict[str, Any],
) -> str:
    """Section 2: each table by the data source and by spark.read.parquet of its files.

    Returns:
        The verdict on the data source's read speed (the worst table); ``data["read_seconds"]``
        gets the best seconds of both readers per table.
    """
    from pyspark.sql import functions as sf

    def full_scan(frame: Any) -> None:
        frame.write.format("noop").mode("overwrite").save()

    rows = []
    ratios = []
    load_before = load_average()
    for label, table in tables.items():
        files = tuple(str(path) for path, _ in table_segments(table))
        schema = spark.read.parquet(*files).schema.json()
        frames = {
            'format("streamwrite")': lambda t=str(table): spark.read.format("streamwrite").load(t),
            "spark.read.parquet": lambda f=files: spark.read.parquet(*f),
            "floor: a Python data source decoding with pyarrow": lambda f=files, j=schema: (
                spark.read.format("bench_pyarrow")
                .option("files", "\n".join(f))
                .option("schema", j)
                .load()
            ),
        }
        tasks, planning = {}, {}
        for reader, make in frames.items():
            check = make().agg(sf.count("*"), sf.sum("qty")).collect()[0]  # checked, not timed
            assert (check[0], check[1]) == (num_rows, qty_sum), (label, reader, check)
            started = time.perf_counter()
            tasks[reader] = make().rdd.getNumPartitions()  # load and plan (no rows read)
            planning[reader] = time.perf_counter() - started
        timed = round_robin(
            {reader: (lambda _, make=make: full_scan(make())) for reader, make in frames.items()},
            repeat,
        )
        best = {reader: seconds for reader, (seconds, _) in timed.items()}
        ratio = best["spark.read.parquet"] / best['format("streamwrite")']
        ratios.append(ratio)
        data.setdefault("read_seconds", {})[label] = best
        data.setdefault("read_cpu_seconds", {})[label] = {r: c for r, (_, c) in timed.items()}
        for reader, (seconds, cpu) in timed.items():
            rows.append(
                [
                    label,
                    len(files),
                    reader,
                    tasks[reader],
                    f"{planning[reader]:.2f}",
                    f"{seconds:.2f}",
                    f"{num_rows / seconds:,.0f}",
                    fmt_ratio(best["spark.read.parquet"] / seconds),
                    *cpu_cells(cpu, timed["spark.read.parquet"][1]),
                ]
            )
    print(f"## 2. Reads (full scan into the noop sink, round-robin, best of {repeat})\n")
    print(f"- load average before: {load_before}; after: {load_average()}\n")
    print(
        markdown_table(
            [
                "table written by",
                "segments",
                "reader",
                "Spark tasks",
                "planning s",
                "seconds",
                "rows/s",
                "rows/s vs spark.read.parquet",
                *CPU_HEADERS,
            ],
            rows,
        )
    )
    print()
    worst = min(ratios)
    return verdict(
        "data source reads >= 0.5x spark.read.parquet of the same files (worst table)",
        fmt_ratio(worst),
        worst >= 0.5,
    )


def chunk_ranges(path: Path) -> dict[str, list[tuple[int, int]]]:
    """The byte ranges of each column's chunks in the file (every row group), from pyarrow's
    view of the footer: from the chunk's first page (its dictionary page when it has one) over
    ``total_compressed_size`` bytes.

    Returns:
        ``{column path: [(offset, size), ...]}``.
    """
    metadata = pq.ParquetFile(path).metadata
    ranges: dict[str, list[tuple[int, int]]] = {}
    for i in range(metadata.num_row_groups):
        group = metadata.row_group(i)
        for j in range(group.num_columns):
            chunk = group.column(j)
            start = chunk.data_page_offset
            if chunk.has_dictionary_page and chunk.dictionary_page_offset:
                start = min(start, chunk.dictionary_page_offset)
            ranges.setdefault(chunk.path_in_schema, []).append((start, chunk.total_compressed_size))
    return ranges


def bytes_below(ranges: list[tuple[int, int]], end: int) -> int:
    """Bytes of ``ranges`` that lie before offset ``end``."""
    return sum(max(0, min(offset + size, end) - offset) for offset, size in ranges)


def run_remote(table: Path, data: dict[str, Any]) -> list[str]:
    """Section 3: one-column reads of a segment, then of the whole table, in a moto S3
    bucket.

    Returns:
        The verdicts; ``data["remote_segment"]`` and ``data["remote_table"]`` get
        ``{column: [GETs, bytes fetched, chunk bytes needed]}``.
    """
    with S3Server() as server:
        server.create_bucket("bench")
        return [
            remote_segment(server, table, data.setdefault("remote_segment", {})),
            remote_table(server, table, data.setdefault("remote_table", {})),
        ]


def remote_segment(server: S3Server, table: Path, data: dict[str, Any]) -> str:
    """Section 3a: one-column reads of the table's biggest segment, uploaded by hand.

    Returns:
        The verdict (the worst column).
    """
    path, size = max(table_segments(table), key=lambda segment: segment[1])
    key = "ticks/seg/data.parquet"
    local = pq.read_table(path)
    ranges = chunk_ranges(path)
    rows = []
    worst = 0.0
    store = open_store("s3://bench/segment", server.storage_options)
    started = time.perf_counter()
    store.put_file(key, path, size)
    upload_seconds = time.perf_counter() - started
    for column in local.column_names:
        store.stats.reset()
        started = time.perf_counter()
        source = RangeSource(store, key, size, cache=RangeCache())
        reader = streamwrite.ParquetFile(source)
        opening = store.stats.num_bytes  # the footer: one request (two if it is long)
        got = reader.read([column])
        seconds = time.perf_counter() - started
        assert got.column(0).equals(local.column(column)), column
        num_requests, fetched = store.stats.num_requests, store.stats.num_bytes
        needed = sum(size for _, size in ranges[column])
        # the chunk bytes the footer request did not bring along (it fetched the tail)
        beyond = bytes_below(ranges[column], size - opening)
        ratio = (fetched - opening) / beyond if beyond else None
        data[column] = [num_requests, fetched, needed]
        if ratio is not None:
            worst = max(worst, ratio)
        rows.append(
            [
                column,
                num_requests,
                store.stats.num_metadata_requests,
                fmt_bytes(fetched),
                fmt_bytes(opening),
                fmt_bytes(needed),
                fmt_bytes(beyond),
                "-" if ratio is None else fmt_ratio(ratio),
                fmt_ratio(fetched / needed),
                f"{fetched / size:.1%}",
                f"{seconds * 1000:.0f}",
            ]
        )
    print("## 3. Remote read bytes (moto S3 server on localhost, s3fs)\n")
    print("### 3a. One column of a segment: ParquetFile(RangeSource(...))\n")
    print(
        f"- object: the executor-mode table's biggest segment, {fmt_bytes(size)} bytes, "
        f"{pq.ParquetFile(path).metadata.num_row_groups} row groups, {local.num_rows:,} rows; "
        f"uploaded by ObjectStore.put_file in {upload_seconds:.2f} s "
        f"({size / MB / upload_seconds:.0f} MB/s)"
    )
    print("- each read: a new RangeCache, FetchStats reset; load average " + load_average())
    print()
    print(
        markdown_table(
            [
                "column",
                "GETs",
                "size/list requests",
                "bytes fetched",
                "opening (footer)",
                "chunk bytes needed",
                "needed beyond the footer request",
                "fetched after opening vs needed beyond",
                "all fetched vs needed",
                "fetched vs object",
                "ms",
            ],
            rows,
        )
    )
    print()
    return verdict(
        "a one-column remote read fetches <= 1.2x the chunk bytes it needs (after the footer "
        "request; worst column)",
        fmt_ratio(worst),
        worst <= 1.2,
    )


async def tier_all(table: Path, url: str, options: dict[str, Any]) -> list[str]:
    """Move every segment of ``table`` to the cold root ``url`` now (``cold_after=0``).

    Returns:
        The segments moved.
    """
    opened = await streamwrite.open_table(
        table, cold_storage=url, storage_options=options, cold_after=0.0
    )
    try:
        moved: list[str] = await opened.tier()
    finally:
        await opened.close()
    return moved


def remote_table(server: S3Server, table: Path, data: dict[str, Any]) -> str:
    """Section 3b: the executor-mode table tiered to the bucket, then read by its URL one
    column at a time (``streamwrite.read_table(url, columns=[c], storage_options=)``).

    Returns:
        The verdict (the worst column).
    """
    url, options = "s3://bench/ticks", server.storage_options
    segments = table_segments(table)
    per_column: dict[str, list[tuple[list[tuple[int, int]], int]]] = {}
    for path, size in segments:
        for column, ranges in chunk_ranges(path).items():
            per_column.setdefault(column, []).append((ranges, size))
    local_seconds: dict[str, float] = {}
    local: dict[str, pa.ChunkedArray] = {}
    for column in per_column:
        started = time.perf_counter()
        local[column] = streamwrite.read_table(table, columns=[column]).column(0)
        local_seconds[column] = time.perf_counter() - started
    started = time.perf_counter()
    moved = anyio.run(tier_all, table, url, options)
    tier_seconds = time.perf_counter() - started
    assert len(moved) == len(segments), moved
    store = open_store(url, options)
    logs = store.list(TXN_LOG_DIR)
    log_size = store.size(logs[-1]) or 0
    tails = [min(size, DEFAULT_TAIL_SIZE) for _, size in segments]
    rows = []
    worst = 0.0
    for column, chunks in per_column.items():
        RANGE_CACHE.clear()
        store.stats.reset()
        started = time.perf_counter()
        got = streamwrite.read_table(url, columns=[column], storage_options=options)
        seconds = time.perf_counter() - started
        assert got.column(0).equals(local[column]), column
        num_requests, fetched = store.stats.num_requests, store.stats.num_bytes
        needed = sum(size for ranges, _ in chunks for _, size in ranges)
        metadata = log_size + sum(tails)
        beyond = sum(
            bytes_below(ranges, size - tail)
            for (ranges, size), tail in zip(chunks, tails, strict=True)
        )
        ratio = (fetched - metadata) / beyond if beyond else None  # None: tails held all
        data[column] = [num_requests, fetched, needed]
        if ratio is not None:
            worst = max(worst, ratio)
        rows.append(
            [
                column,
                num_requests,
                store.stats.num_metadata_requests,
                fmt_bytes(fetched),
                fmt_bytes(needed),
                "-" if ratio is None else fmt_ratio(ratio),
                fmt_ratio(fetched / needed),
                f"{seconds * 1000:.0f}",
                f"{local_seconds[column] * 1000:.0f}",
            ]
        )
    total_size = sum(size for _, size in segments)
    print("### 3b. One column of the whole table by its URL: read_table(url, columns=[c])\n")
    print(
        f"- the executor-mode table ({len(segments)} segments, {fmt_bytes(total_size)} bytes) "
        f"tiered by open_table(cold_storage={url!r}, cold_after=0) and tier(): "
        f"{tier_seconds:.2f} s (upload, read back for the XXH64, publish)"
    )
    print(
        f"- each read: the range cache cleared, FetchStats reset; expected metadata = the "
        f"newest _txn_log object ({fmt_bytes(log_size)} bytes) + each segment's first request "
        f"(its tail, {fmt_bytes(sum(tails))} bytes in all); load average {load_average()}\n"
    )
    print(
        markdown_table(
            [
                "column",
                "GETs",
                "size/list requests",
                "bytes fetched",
                "chunk bytes needed",
                "fetched - metadata vs needed beyond the tails",
                "all fetched vs needed",
                "ms (URL)",
                "ms (local, before tiering)",
            ],
            rows,
        )
    )
    print()
    return verdict(
        "read_table(url, columns=[one]) fetches <= 1.2x the chunk bytes it needs (after the "
        "log object and the footers; worst column)",
        fmt_ratio(worst),
        worst <= 1.2,
    )


def print_stats(stats: pstats.Stats, top: int) -> None:
    """The ``top`` functions of ``stats`` by own time, as a code block."""
    buffer = io.StringIO()
    stats.stream = buffer  # type: ignore[attr-defined]
    stats.strip_dirs().sort_stats("tottime").print_stats(top)
    lines = [
        line
        for line in buffer.getvalue().splitlines()
        if line.strip() and not line.rstrip().endswith(".pstats")  # the dump files' names
    ]
    print("```\n" + "\n".join(lines) + "\n```\n")


def run_profiles(spark: Any, df: Any, tables: dict[str, Path], workdir: Path, top: int) -> None:
    """Section 4 (``--profile``): where the time of each streamwrite path goes, one extra run
    each, not part of the timings above."""
    from pyspark_streamwrite import DefaultSource

    print(f"## 4. Where the time goes (--profile {top}: one extra run of each, profiled)\n")
    print(f"- load average: {load_average()}\n")
    num_cores = spark.sparkContext.defaultParallelism

    # executor mode: Spark's own profiler of the mapInArrow tasks (cProfile in each worker)
    spark.profile.clear()
    spark.conf.set("spark.sql.pyspark.udf.profiler", "perf")
    try:
        started = time.perf_counter()
        streamwrite.spark.write(
            df, workdir / "profiled", app_id=APP_ID, batch_id=0, **TABLE_OPTIONS
        )
        wall = time.perf_counter() - started
    finally:
        spark.conf.unset("spark.sql.pyspark.udf.profiler")
    dump = workdir / "profiles"
    spark.profile.dump(str(dump), type="perf")
    stats = pstats.Stats(*(str(p) for p in sorted(dump.glob("*.pstats"))))
    python_seconds = stats.total_tt  # type: ignore[attr-defined]
    print(
        f"### Executor-mode write: {wall:.2f} s wall (profiled); the mapInArrow tasks' Python "
        f"functions ran {python_seconds:.2f} s, summed over tasks ({num_cores} cores x wall = "
        f"{num_cores * wall:.2f} s). cProfile counts wall time: waiting for the JVM's next "
        "Arrow batch shows as serializers.py load_stream\n"
    )
    print_stats(stats, top)
    shutil.rmtree(workdir / "profiled")

    # driver mode: toArrow alone, then the whole sink call
    to_arrow, _ = best_of(lambda: df.toArrow().num_rows, 2)
    sink = streamwrite.spark.foreach_batch_sink(
        workdir / "profiled", app_id=APP_ID, **TABLE_OPTIONS
    )
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.runcall(sink, df, 0)
    whole = time.perf_counter() - started
    print(
        f"### Driver-mode write: {whole:.2f} s (profiled): df.toArrow() alone {to_arrow:.2f} s "
        "(best of 2), "
        "the rest is the table append on the driver (the profile covers the calling thread "
        "only)\n"
    )
    print_stats(pstats.Stats(profiler), top)
    shutil.rmtree(workdir / "profiled")

    # data source: the worker's code (partitions, then read each) in this process
    for label, table in tables.items():
        source = DefaultSource({"path": str(table)})
        reader = source.reader(source.schema())
        profiler = cProfile.Profile()
        started = time.perf_counter()
        profiler.enable()
        num_rows = sum(
            batch.num_rows for part in reader.partitions() for batch in reader.read(part)
        )
        profiler.disable()
        seconds = time.perf_counter() - started
        print(
            f"### Data source read of the {label} table, in one process: {seconds:.2f} s for "
            f"{num_rows:,} rows (the Python workers' code: partitions, then every read; "
            "without the Arrow transfer to the JVM)\n"
        )
        print_stats(pstats.Stats(profiler), top)


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, quick_help="smoke run: at most 20,000 rows, one repeat")
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the DataFrame")
    parser.add_argument("--repeat", type=int, default=2, help="best of N (default 2)")
    parser.add_argument(
        "--partitions", type=int, default=4, help="Spark partitions of the input (default 4)"
    )
    parser.add_argument("--driver-memory", default="4g", help="spark.driver.memory (default 4g)")
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="TOP",
        help="also profile one extra run of each streamwrite path (section 4), TOP functions",
    )
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
            f"cached in {args.partitions} Spark partitions ({fmt_bytes(cached_size(spark))} "
            f"bytes in memory); pyspark {pyspark.__version__}; set up in "
            f"{time.perf_counter() - started:.1f} s, not timed.\n"
        )
        try:
            tables, write_verdict = run_writes(df, workdir, args.rows, args.repeat, report.data)
            read_verdict = run_reads(spark, tables, args.rows, qty_sum, args.repeat, report.data)
            profiles = io.StringIO()  # section 4, printed after section 3 (which tiers a table)
            if args.profile:
                with contextlib.redirect_stdout(profiles):
                    run_profiles(spark, df, tables, workdir, args.profile)
        finally:
            df.unpersist()
            spark.stop()
        remote_verdicts = run_remote(tables["executor mode"], report.data)
        print(profiles.getvalue(), end="")
        print(f"- total run time {report.seconds():.0f} s\n")
        return report.finish([write_verdict, read_verdict, *remote_verdicts])


if __name__ == "__main__":
    sys.exit(main())
