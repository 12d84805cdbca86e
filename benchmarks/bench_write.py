"""Write-path benchmark: streamwrite against ``pyarrow.parquet`` on the reference table.

Four sections, each printed as markdown (see ``benchmarks/README.md`` for recorded figures):

1. Whole file: ``streamwrite.write_table`` with its defaults against
   ``pq.write_table(compression="zstd")`` with its defaults, both in this one process, plus both
   with ``compression="none"`` and both with ``data_page_version="2.0"``. Seconds, rows/s, file
   bytes and the ours/pyarrow ratios; then the per-column chunk sizes and encodings of the two
   default files, read from the footers with pyarrow.
1b. One 10k-row batch: the encode a table or live-file commit does per batch
   (``row_group_jobs`` + ``workers.jobs.run_job`` of each column, with the writer's
   ``EncodingPlanner``; and without one) against ``pq.write_table(batch, BufferOutputStream(),
   compression="zstd")``, ms per batch (wall and CPU) over ``--batches`` consecutive batches,
   round-robin, best of ``--repeat``, with the load average.
2. Per kernel: for each (column, encoding) pair that applies to the reference table, MB/s of input
   (MB = the Arrow buffer bytes of the column) for (a) our kernel alone on the physical values,
   (b) streamwrite writing that single column uncompressed with that encoding and (c) pyarrow doing
   the same, and the ratio (b)/(c).
3. Memory: peak RSS of one whole-file write of each library, each in its own subprocess.
4. Nested (issue 15, ``benchmarks/_nested.py``): a table of list<float64>, list<string>,
   struct<int64, string> and map<string, string> columns (``--nested-rows``) written by
   ``streamwrite.write_table`` and ``pq.write_table(compression="zstd")``, interleaved, and read
   back by ``streamwrite.read_table`` and ``pq.read_table``: rows/s and file size ratios, the
   load average; ``--profile TOP`` also profiles one nested write and read.

Every time is the best of ``--repeat`` runs (the machine may be shared; noise only slows runs).
Run from the repository root::

    .venv/bin/python benchmarks/bench_write.py                 # 10M rows, best of 3
    .venv/bin/python benchmarks/bench_write.py --quick         # smoke run, seconds
    .venv/bin/python benchmarks/bench_write.py --only kernels  # one section
    .venv/bin/python benchmarks/bench_write.py --only nested --profile 25  # nested columns
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from _common import (
    MB,
    Report,
    bench_parser,
    best_of,
    current_rss_size,
    fmt_bytes,
    fmt_ratio,
    markdown_table,
    peak_rss_reset,
    peak_rss_size,
    verdict,
)
from _nested import nested_section

import streamwrite
from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.arrow.values import to_physical
from streamwrite.encode import EncodingPlanner, row_group_jobs
from streamwrite.format.structs import Type
from streamwrite.options import make_write_options
from streamwrite.testing import reference_table
from workers.encoding.byte_stream_split import encode_byte_stream_split
from workers.encoding.delta_binary_packed import encode_delta_binary_packed
from workers.encoding.delta_byte_array import encode_delta_byte_array
from workers.encoding.delta_length_byte_array import encode_delta_length_byte_array
from workers.encoding.dictionary import dictionary_encode, encode_dictionary_indices
from workers.encoding.plain import encode_plain
from workers.encoding.rle_hybrid import encode_boolean_rle
from workers.jobs import run_job

DICTIONARY = "dictionary"
SECTIONS = ("file", "batch", "kernels", "memory", "nested")

# (column, encoding) pairs of the reference table; DICTIONARY means use_dictionary=True.
KERNEL_CASES: list[tuple[str, str]] = [
    ("ts", "DELTA_BINARY_PACKED"),
    ("ts", "PLAIN"),
    ("qty", "PLAIN"),
    ("qty", "DELTA_BINARY_PACKED"),
    ("qty", DICTIONARY),
    ("price", "PLAIN"),
    ("price", "BYTE_STREAM_SPLIT"),
    ("symbol", DICTIONARY),
    ("venue", DICTIONARY),
    ("order_id", "PLAIN"),
    ("order_id", "DELTA_LENGTH_BYTE_ARRAY"),
    ("order_id", "DELTA_BYTE_ARRAY"),
    ("side", "PLAIN"),
    ("side", "RLE"),
]

# Targets from the issue.
KERNEL_TARGET = 0.5  # each kernel within 2x of pyarrow's C++ (ours/pyarrow MB/s >= 0.5)
FILE_SPEED_TARGET = 0.5  # whole-file rows/s >= 0.5x pyarrow's
FILE_SIZE_TARGET = 1.0  # default file no larger than pyarrow's default zstd file
BATCH_TARGET = 1.0  # one 10k-row batch encoded at least as fast as pyarrow writes it
BATCH_ROWS = 10_000


# ---------------------------------------------------------------------------------------------
# Section 1: whole file


@dataclass(frozen=True)
class Variant:
    label: str
    streamwrite_options: dict[str, Any]
    pyarrow_options: dict[str, Any]


VARIANTS = [
    Variant("default (zstd)", {}, {"compression": "zstd"}),
    Variant("compression=none", {"compression": "none"}, {"compression": "none"}),
    Variant(
        "zstd, data_page_version=2.0",
        {"data_page_version": "2.0"},
        {"compression": "zstd", "data_page_version": "2.0"},
    ),
]


def _write_streamwrite(table: pa.Table, path: Path, options: dict[str, Any]) -> None:
    streamwrite.write_table(table, path, **options)


def _write_pyarrow(table: pa.Table, path: Path, options: dict[str, Any]) -> None:
    pq.write_table(table, path, **options)


WRITERS: dict[str, Callable[[pa.Table, Path, dict[str, Any]], None]] = {
    "streamwrite": _write_streamwrite,
    "pyarrow": _write_pyarrow,
}


def _best_interleaved(jobs: list[Callable[[], Any]], repeat: int) -> list[float]:
    """Best time of each job, running the jobs round-robin so that a noisy spell hits all alike."""
    best = [float("inf")] * len(jobs)
    for _ in range(max(1, repeat)):
        for i, job in enumerate(jobs):
            seconds, _ = best_of(job, 1)
            best[i] = min(best[i], seconds)
    return best


def bench_file(table: pa.Table, repeat: int, workdir: Path) -> tuple[str, dict[str, float]]:
    """Section 1. Returns the markdown and the target figures of the default variant."""
    num_rows = table.num_rows
    jobs: list[Callable[[], Any]] = []
    paths: list[tuple[Variant, str, Path]] = []
    for v_index, variant in enumerate(VARIANTS):
        for library, options in (
            ("streamwrite", variant.streamwrite_options),
            ("pyarrow", variant.pyarrow_options),
        ):
            path = workdir / f"file_{v_index}_{library}.parquet"
            writer = WRITERS[library]
            jobs.append(lambda w=writer, p=path, o=options: w(table, p, o))
            paths.append((variant, library, path))
    seconds = _best_interleaved(jobs, repeat)

    rows = []
    summary: dict[str, float] = {}
    for v_index, variant in enumerate(VARIANTS):
        ours_s, theirs_s = seconds[2 * v_index], seconds[2 * v_index + 1]
        ours_size = paths[2 * v_index][2].stat().st_size
        theirs_size = paths[2 * v_index + 1][2].stat().st_size
        for library, secs, size in (
            ("streamwrite", ours_s, ours_size),
            ("pyarrow", theirs_s, theirs_size),
        ):
            rows.append(
                [
                    variant.label,
                    library,
                    f"{secs:.3f}",
                    f"{num_rows / secs:,.0f}",
                    fmt_bytes(size),
                    fmt_ratio(theirs_s / ours_s) if library == "streamwrite" else "",
                    fmt_ratio(ours_size / theirs_size) if library == "streamwrite" else "",
                ]
            )
        if v_index == 0:
            summary = {"speed_ratio": theirs_s / ours_s, "size_ratio": ours_size / theirs_size}

    out = [
        markdown_table(
            [
                "variant",
                "writer",
                "seconds (best)",
                "rows/s",
                "file bytes",
                "ours/pyarrow rows/s",
                "ours/pyarrow size",
            ],
            rows,
        )
    ]

    # Correctness, outside timing: pyarrow must read each of our files back equal to the input.
    checks = []
    for variant, library, path in paths:
        if library != "streamwrite":
            continue
        back = pq.read_table(path)
        ok = back.equals(table)
        checks.append(f"{variant.label}: {'equal' if ok else 'NOT EQUAL'}")
        if not ok:
            summary["read_back_failed"] = 1.0
    out.append("\npyarrow reads our files back equal to the input: " + "; ".join(checks) + ".")

    out.append("\nPer column, default files (compressed bytes of all chunks of the column):\n")
    out.append(_column_breakdown(paths[0][2], paths[1][2], table))
    return "\n".join(out), summary


def _chunk_stats(path: Path) -> dict[str, tuple[int, int, set[str]]]:
    """Per column name: (compressed bytes, uncompressed bytes, encodings) over all row groups."""
    meta = pq.ParquetFile(path).metadata
    stats: dict[str, tuple[int, int, set[str]]] = {}
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        for j in range(group.num_columns):
            col = group.column(j)
            name = col.path_in_schema
            comp, uncomp, encs = stats.get(name, (0, 0, set()))
            stats[name] = (
                comp + col.total_compressed_size,
                uncomp + col.total_uncompressed_size,
                encs | set(col.encodings),
            )
    return stats


def _column_breakdown(ours_path: Path, theirs_path: Path, table: pa.Table) -> str:
    ours = _chunk_stats(ours_path)
    theirs = _chunk_stats(theirs_path)
    num_groups = (
        pq.ParquetFile(ours_path).metadata.num_row_groups,
        pq.ParquetFile(theirs_path).metadata.num_row_groups,
    )
    rows = []
    for name in table.column_names:
        o_comp, o_uncomp, o_encs = ours[name]
        t_comp, t_uncomp, t_encs = theirs[name]
        ratio = o_comp / t_comp
        flag = " **(>1.1)**" if ratio > 1.1 else ""
        rows.append(
            [
                name,
                fmt_bytes(o_comp),
                fmt_bytes(t_comp),
                fmt_ratio(ratio) + flag,
                fmt_bytes(o_uncomp),
                fmt_bytes(t_uncomp),
                ", ".join(sorted(o_encs)),
                ", ".join(sorted(t_encs)),
            ]
        )
    o_total = sum(v[0] for v in ours.values())
    t_total = sum(v[0] for v in theirs.values())
    rows.append(
        [
            "**all columns**",
            fmt_bytes(o_total),
            fmt_bytes(t_total),
            fmt_ratio(o_total / t_total),
            fmt_bytes(sum(v[1] for v in ours.values())),
            fmt_bytes(sum(v[1] for v in theirs.values())),
            "",
            "",
        ]
    )
    text = markdown_table(
        [
            "column",
            "ours compressed",
            "pyarrow compressed",
            "ours/pyarrow",
            "ours uncompressed",
            "pyarrow uncompressed",
            "ours encodings",
            "pyarrow encodings",
        ],
        rows,
    )
    return text + f"\n\nRow groups: ours {num_groups[0]}, pyarrow {num_groups[1]}."


# ---------------------------------------------------------------------------------------------
# Section 2: kernels


def _kernel(encoding: str, physical_type: Type) -> Callable[[Any], int]:
    """Our encoder for ``encoding``; the callable returns the number of encoded bytes."""
    if encoding == DICTIONARY:

        def run(values: Any) -> int:
            dictionary, indices = dictionary_encode(values, physical_type)
            page = encode_plain(dictionary, physical_type)
            return len(page) + len(encode_dictionary_indices(indices, len(dictionary)))

        return run
    simple: dict[str, Callable[[Any], bytes]] = {
        "PLAIN": lambda v: encode_plain(v, physical_type),
        "DELTA_BINARY_PACKED": encode_delta_binary_packed,
        "BYTE_STREAM_SPLIT": encode_byte_stream_split,
        "DELTA_LENGTH_BYTE_ARRAY": encode_delta_length_byte_array,
        "DELTA_BYTE_ARRAY": encode_delta_byte_array,
        "RLE": encode_boolean_rle,
    }
    fn = simple[encoding]
    return lambda values: len(fn(values))


def _single_column_options(column: str, encoding: str) -> dict[str, Any]:
    if encoding == DICTIONARY:
        return {"compression": "none", "use_dictionary": True}
    return {"compression": "none", "use_dictionary": False, "column_encoding": {column: encoding}}


def _encodings_of(path: Path) -> str:
    meta = pq.ParquetFile(path).metadata
    encs: set[str] = set()
    for i in range(meta.num_row_groups):
        encs |= set(meta.row_group(i).column(0).encodings)
    return ",".join(sorted(encs - {"RLE"})) or "RLE"


def _fmt_mb(value: float) -> str:
    """Three significant digits for small values, whole numbers for large ones."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def bench_kernels(table: pa.Table, repeat: int, workdir: Path) -> tuple[str, list[str]]:
    """Section 2. Returns the markdown and the pairs that miss the target."""
    schema = arrow_to_parquet(table.schema)
    specs = {spec.name: spec for spec in schema.columns}
    rows = []
    misses = []
    for column, encoding in KERNEL_CASES:
        array = table.column(column).combine_chunks()
        single = pa.table({column: array})
        input_mb = array.nbytes / MB
        spec = specs[column]
        values = to_physical(array, spec).values  # outside timing
        kernel = _kernel(encoding, spec.physical_type)
        options = _single_column_options(column, encoding)
        ours_path = workdir / f"kernel_{column}_{encoding}_streamwrite.parquet"
        theirs_path = workdir / f"kernel_{column}_{encoding}_pyarrow.parquet"

        def job_a(kernel: Callable[[Any], int] = kernel, values: Any = values) -> int:
            return kernel(values)

        def job_b(single: pa.Table = single, path: Path = ours_path, o: Any = options) -> None:
            streamwrite.write_table(single, path, **o)

        def job_c(single: pa.Table = single, path: Path = theirs_path, o: Any = options) -> None:
            pq.write_table(single, path, **o)

        t_a, t_b, t_c = _best_interleaved([job_a, job_b, job_c], repeat)
        encoded_size = job_a()
        ratio = t_c / t_b
        ratio_a = t_c / t_a
        flag = " **(<0.5)**" if ratio < KERNEL_TARGET else ""
        if ratio < KERNEL_TARGET:
            misses.append(f"{column}/{encoding} ({ratio:.2f}x)")
        rows.append(
            [
                column,
                encoding,
                _fmt_mb(input_mb),
                _fmt_mb(input_mb / t_a),
                _fmt_mb(input_mb / t_b),
                _fmt_mb(input_mb / t_c),
                fmt_ratio(ratio) + flag,
                fmt_ratio(ratio_a),
                fmt_bytes(encoded_size),
                fmt_bytes(ours_path.stat().st_size),
                fmt_bytes(theirs_path.stat().st_size),
                _encodings_of(ours_path) + " / " + _encodings_of(theirs_path),
            ]
        )
    text = markdown_table(
        [
            "column",
            "encoding",
            "input MB",
            "(a) kernel MB/s",
            "(b) ours file MB/s",
            "(c) pyarrow file MB/s",
            "(b)/(c)",
            "(a)/(c)",
            "kernel bytes",
            "ours file bytes",
            "pyarrow file bytes",
            "data encodings ours / pyarrow",
        ],
        rows,
    )
    return text, misses


# ---------------------------------------------------------------------------------------------
# Section 3: memory


def memory_child(library: str, num_rows: int, path: str) -> None:
    """Build the table, reset the peak RSS, write once; print a JSON line with the figures."""
    table = reference_table(num_rows)
    table_rss = current_rss_size()
    reset = peak_rss_reset()
    start = time.perf_counter()
    WRITERS[library](
        table,
        Path(path),
        VARIANTS[0].streamwrite_options
        if library == "streamwrite"
        else VARIANTS[0].pyarrow_options,
    )
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {
                "library": library,
                "table_rss": table_rss,
                "peak_rss": peak_rss_size(),
                "peak_reset": reset,
                "seconds": seconds,
                "table_bytes": table.nbytes,
            }
        )
    )


def bench_memory(num_rows: int, workdir: Path) -> str:
    """Section 3: one subprocess per library."""
    results = {}
    for library in WRITERS:
        proc = subprocess.run(
            [
                sys.executable,
                __file__,
                "--memory-child",
                library,
                "--rows",
                str(num_rows),
                "--out",
                str(workdir / f"memory_{library}.parquet"),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        results[library] = json.loads(proc.stdout.strip().splitlines()[-1])
    rows = []
    for library, r in results.items():
        rows.append(
            [
                library,
                f"{r['table_bytes'] / MB:,.0f}",
                f"{r['table_rss'] / MB:,.0f}",
                f"{r['peak_rss'] / MB:,.0f}",
                f"{(r['peak_rss'] - r['table_rss']) / MB:,.0f}",
                f"{r['seconds']:.2f}",
            ]
        )
    reset_note = (
        "peak RSS reset after building the table (/proc/self/clear_refs), "
        "so the peak covers the write"
        if all(r["peak_reset"] for r in results.values())
        else "peak RSS could NOT be reset: the peak may be the table build's, not the write's"
    )
    return (
        markdown_table(
            [
                "writer",
                "table MB (Arrow)",
                "RSS before write MB",
                "peak RSS during write MB",
                "write overhead MB (peak - before)",
                "seconds (one run)",
            ],
            rows,
        )
        + f"\n\nOne default write each, in its own subprocess; {reset_note}."
    )


# ---------------------------------------------------------------------------------------------
# Profile


def profile_write(table: pa.Table, workdir: Path, top: int) -> str:
    """cProfile one default streamwrite write; the top functions by total (own) time."""
    profiler = cProfile.Profile()
    path = workdir / "profile.parquet"
    profiler.enable()
    streamwrite.write_table(table, path)
    profiler.disable()
    buf = io.StringIO()
    pstats.Stats(profiler, stream=buf).sort_stats("tottime").print_stats(top)
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------
# Section 1b: one 10k-row batch


def bench_batch(num_batches: int, repeat: int) -> tuple[str, dict[str, float]]:
    """Encode ``num_batches`` consecutive 10k-row batches of the reference table per run.

    Returns:
        The markdown and the figures (ms per batch, ratios).
    """
    table = reference_table(num_batches * BATCH_ROWS)
    batches = [table.slice(i * BATCH_ROWS, BATCH_ROWS) for i in range(num_batches)]
    schema = arrow_to_parquet(table.schema)
    options = make_write_options(table.schema.names, caller="bench_write")

    def planned() -> None:
        planner = EncodingPlanner()  # one writer's planner, as a table segment holds one
        for batch in batches:
            planner.observe(
                [run_job(job) for job in row_group_jobs(batch, schema, options, planner=planner)]
            )

    def unplanned() -> None:
        for batch in batches:
            for job in row_group_jobs(batch, schema, options):
                run_job(job)

    def theirs() -> None:
        for batch in batches:
            pq.write_table(batch, pa.BufferOutputStream(), compression="zstd")

    jobs = {"streamwrite (planner)": planned, "streamwrite (no planner)": unplanned}
    jobs["pyarrow write_table"] = theirs
    wall = dict.fromkeys(jobs, float("inf"))
    cpu = dict.fromkeys(jobs, float("inf"))
    load_before = os.getloadavg()[0]
    for _ in range(max(1, repeat)):
        for name, job in jobs.items():
            gc.collect()
            start_wall, start_cpu = time.perf_counter(), time.process_time()
            job()
            wall[name] = min(wall[name], time.perf_counter() - start_wall)
            cpu[name] = min(cpu[name], time.process_time() - start_cpu)
    load_after = os.getloadavg()[0]
    per_batch = 1000 / num_batches
    peer = "pyarrow write_table"
    rows = [
        [
            name,
            f"{wall[name] * per_batch:.2f}",
            f"{cpu[name] * per_batch:.2f}",
            fmt_ratio(wall[peer] / wall[name]),
            fmt_ratio(cpu[peer] / cpu[name]),
        ]
        for name in jobs
    ]
    text = markdown_table(
        ["encoder", "ms/batch (wall)", "ms/batch (CPU)", "speed vs pyarrow (wall)", "(CPU)"], rows
    )
    text += (
        f"\n\n{num_batches} batches of {BATCH_ROWS:,} rows per run, best of {repeat}; "
        f"load average {load_before:.2f} before, {load_after:.2f} after."
    )
    summary = {
        "ms_per_batch": {name: wall[name] * per_batch for name in jobs},
        "cpu_ms_per_batch": {name: cpu[name] * per_batch for name in jobs},
        "speed_ratio": wall[peer] / wall["streamwrite (planner)"],
        "cpu_ratio": cpu[peer] / cpu["streamwrite (planner)"],
        "load": [load_before, load_after],
    }
    return text, summary


# ---------------------------------------------------------------------------------------------
# Main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = bench_parser(__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000, help="whole-file rows")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs")
    parser.add_argument("--kernel-rows", type=int, default=1_000_000, help="per-kernel rows")
    parser.add_argument("--batches", type=int, default=100, help="10k-row batches per batch run")
    parser.add_argument("--nested-rows", type=int, default=1_000_000, help="nested table rows")
    parser.add_argument(
        "--only", choices=SECTIONS, action="append", help="run only these sections (repeatable)"
    )
    parser.add_argument(
        "--profile",
        type=int,
        metavar="TOP",
        default=0,
        help="also cProfile one default streamwrite write and print the TOP lines",
    )
    parser.add_argument("--memory-child", choices=list(WRITERS), help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.rows = min(args.rows, 200_000)
        args.kernel_rows = min(args.kernel_rows, 100_000)
        args.batches = min(args.batches, 10)
        args.nested_rows = min(args.nested_rows, 50_000)
        args.repeat = min(args.repeat, 2)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.memory_child:
        memory_child(args.memory_child, args.rows, args.out)
        return 0
    sections = args.only or list(SECTIONS)
    report = Report(
        "write",
        args,
        [f"- every time is the best of {args.repeat} run(s); the writers run round-robin"],
    )
    verdicts: list[str] = []
    with report.workdir() as workdir:
        if "file" in sections or (args.profile and "nested" not in sections):
            start = time.perf_counter()
            table = reference_table(args.rows)
            print(
                f"Reference table: {table.num_rows:,} rows, {table.nbytes / MB:,.0f} MB of Arrow "
                f"buffers (built in {time.perf_counter() - start:.1f} s, not timed below).\n"
            )
            if "file" in sections:
                print(f"## 1. Whole file ({table.num_rows:,} rows, one process)\n")
                text, summary = bench_file(table, args.repeat, workdir)
                print(text + "\n")
                report.data["file"] = summary
                verdicts.append(
                    verdict(
                        f"whole-file rows/s >= {FILE_SPEED_TARGET}x pyarrow",
                        fmt_ratio(summary["speed_ratio"]),
                        summary["speed_ratio"] >= FILE_SPEED_TARGET,
                    )
                )
                verdicts.append(
                    verdict(
                        "default file <= pyarrow's default zstd file",
                        fmt_ratio(summary["size_ratio"]),
                        summary["size_ratio"] <= FILE_SIZE_TARGET,
                    )
                )
                sys.stdout.flush()
            if args.profile:
                print(f"## cProfile of one default streamwrite write ({table.num_rows:,} rows)\n")
                print("```\n" + profile_write(table, workdir, args.profile).strip() + "\n```\n")
            del table
        if "batch" in sections:
            print(f"## 1b. One {BATCH_ROWS:,}-row batch (encode per commit, one process)\n")
            text, batch_summary = bench_batch(args.batches, max(args.repeat, 5))
            print(text + "\n")
            report.data["batch"] = batch_summary
            verdicts.append(
                verdict(
                    f"one 10k-row batch encoded >= {BATCH_TARGET}x pyarrow's speed (wall)",
                    fmt_ratio(batch_summary["speed_ratio"]),
                    batch_summary["speed_ratio"] >= BATCH_TARGET,
                )
            )
            sys.stdout.flush()
        if "kernels" in sections:
            table = reference_table(args.kernel_rows)
            print(
                f"## 2. Per kernel ({args.kernel_rows:,} rows, uncompressed, "
                f"MB = Arrow buffer bytes of the column)\n"
            )
            text, misses = bench_kernels(table, args.repeat, workdir)
            print(text + "\n")
            verdicts.append(
                f"- each kernel (b)/(c) >= {KERNEL_TARGET}x: "
                + ("PASS" if not misses else "FAIL: " + ", ".join(misses))
            )
            del table
            sys.stdout.flush()
        if "memory" in sections:
            print(f"## 3. Memory ({args.rows:,} rows, default options)\n")
            print(bench_memory(args.rows, workdir) + "\n")
        if "nested" in sections:
            verdicts += nested_section(args, report, workdir)
    return report.finish(verdicts)


if __name__ == "__main__":
    raise SystemExit(main())
