"""The nested section of ``bench_write.py`` (issue 15): a table of nested columns written and read
by streamwrite and by pyarrow in the same process, interleaved, best of N.

The table (``nested_table(num_rows)``, seeded, built outside timing) holds the four nested
columns of the issue and nothing else (a flat column would blur the nested figures)::

    prices  list<float64>               0-8 elements (mean 4), 5 % null lists, 2 % null elements
    tags    list<string>                0-5 elements of a 2,000-word vocabulary (Zipf), 5 % null
    user    struct<id: int64, name: string>   5 % null structs, 3 % null names (20k names)
    attrs   map<string, string>         0-4 entries, keys from 16, values from 1,000; 5 % null maps,
                                        3 % null values

Writes: ``streamwrite.write_table(table, path)`` (defaults) against
``pq.write_table(table, path, compression="zstd")``. Reads: ``streamwrite.read_table`` against
``pq.read_table`` (threads on, pyarrow's default, and off) of the same file, for our file and for
pyarrow's. Outside timing, pyarrow reads our file back equal to the input and streamwrite reads
both files equal to it.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import os
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _common import MB, Report, fmt_bytes, fmt_ratio, markdown_table, verdict

import streamwrite

__all__ = [
    "NESTED_READ_TARGET",
    "NESTED_SIZE_TARGET",
    "NESTED_SPEED_TARGET",
    "bench_nested",
    "nested_section",
    "nested_table",
    "profile_nested",
]

NESTED_SPEED_TARGET = 0.7  # rows/s >= 0.7x pyarrow's, one process
NESTED_SIZE_TARGET = 1.0  # file size <= pyarrow's default zstd file
NESTED_READ_TARGET = 0.5  # read rows/s >= 0.5x pyarrow's


def _mask(rng: np.random.Generator, n: int, rate: float) -> pa.Array:
    return pa.array(rng.random(n) < rate)


def _words(prefix: str, count: int) -> pa.Array:
    return pa.array([f"{prefix}{i:05d}" for i in range(count)], pa.string())


def _zipf_picks(rng: np.random.Generator, n: int, count: int) -> np.ndarray:
    return (rng.zipf(1.3, n) - 1) % count


def _list(
    rng: np.random.Generator, lengths: np.ndarray, values: pa.Array, null_rate: float
) -> pa.Array:
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return pa.ListArray.from_arrays(
        pa.array(offsets), values, mask=_mask(rng, len(lengths), null_rate)
    )


def nested_table(num_rows: int, seed: int = 42) -> pa.Table:
    """The benchmark's nested table (module docstring), vectorised.

    Returns:
        ``num_rows`` rows.
    """
    rng = np.random.default_rng(seed)
    n = num_rows
    price_lengths = rng.integers(0, 9, n)
    num_prices = int(price_lengths.sum())
    prices = pa.array(
        np.round(100 + np.cumsum(rng.normal(0, 0.05, num_prices)), 2),
        pa.float64(),
        mask=rng.random(num_prices) < 0.02,
    )
    tag_lengths = rng.integers(0, 6, n)
    num_tags = int(tag_lengths.sum())
    tags = _words("tag", 2_000).take(pa.array(_zipf_picks(rng, num_tags, 2_000)))
    user_ids = pa.array(rng.integers(0, 1 << 40, n), pa.int64())
    names = _words("user", 20_000).take(pa.array(rng.integers(0, 20_000, n)))
    names = pa.array(names.to_numpy(zero_copy_only=False), pa.string(), mask=rng.random(n) < 0.03)
    user = pa.StructArray.from_arrays(
        [user_ids, names], names=["id", "name"], mask=_mask(rng, n, 0.05)
    )
    attr_lengths = rng.integers(0, 5, n)
    num_attrs = int(attr_lengths.sum())
    # keys unique within a map: a random start in the 16 keys, then consecutive ones
    first = np.repeat(np.cumsum(attr_lengths) - attr_lengths, attr_lengths)
    key_ids = (np.repeat(rng.integers(0, 16, n), attr_lengths) + np.arange(num_attrs) - first) % 16
    keys = _words("key", 16).take(pa.array(key_ids))
    values = _words("val", 1_000).take(pa.array(rng.integers(0, 1_000, num_attrs)))
    values = pa.array(
        values.to_numpy(zero_copy_only=False), pa.string(), mask=rng.random(num_attrs) < 0.03
    )
    attr_offsets = np.concatenate([[0], np.cumsum(attr_lengths)]).astype(np.int32)
    attrs = pa.MapArray.from_arrays(pa.array(attr_offsets), keys, values, mask=_mask(rng, n, 0.05))
    return pa.table(
        {
            "prices": _list(rng, price_lengths, prices, 0.05),
            "tags": _list(rng, tag_lengths, tags, 0.05),
            "user": user,
            "attrs": attrs,
        }
    )


def _best_interleaved(jobs: list[Callable[[], Any]], repeat: int) -> list[float]:
    """Best wall time of each job, run round-robin so that a noisy spell hits all alike."""
    best = [float("inf")] * len(jobs)
    for _ in range(max(1, repeat)):
        for i, job in enumerate(jobs):
            gc.collect()
            start = time.perf_counter()
            job()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def bench_nested(table: pa.Table, repeat: int, workdir: Path) -> tuple[str, dict[str, Any]]:
    """Write and read ``table`` with both libraries.

    Returns:
        The markdown and the figures (ratios ours/pyarrow: ``speed_ratio``, ``size_ratio``,
        ``read_ratio``; seconds; load averages; read-back checks).
    """
    ours_path, theirs_path = (
        workdir / "nested_streamwrite.parquet",
        workdir / "nested_pyarrow.parquet",
    )
    n = table.num_rows
    load_before = _load()
    write_s = _best_interleaved(
        [
            lambda: streamwrite.write_table(table, ours_path),
            lambda: pq.write_table(table, theirs_path, compression="zstd"),
        ],
        repeat,
    )
    ours_size, theirs_size = ours_path.stat().st_size, theirs_path.stat().st_size
    readers: list[tuple[str, str, Callable[[], Any]]] = []
    for label, path in (("ours", ours_path), ("pyarrow's", theirs_path)):
        readers += [
            (label, "streamwrite.read_table", lambda p=path: streamwrite.read_table(p)),
            (label, "pq.read_table", lambda p=path: pq.read_table(p)),
            (
                label,
                "pq.read_table(use_threads=False)",
                lambda p=path: pq.read_table(p, use_threads=False),
            ),
        ]
    read_s = _best_interleaved([job for _, _, job in readers], repeat)
    load_after = _load()

    write_rows = [
        [
            "streamwrite.write_table",
            f"{write_s[0]:.3f}",
            f"{n / write_s[0]:,.0f}",
            fmt_bytes(ours_size),
            fmt_ratio(write_s[1] / write_s[0]),
            fmt_ratio(ours_size / theirs_size),
        ],
        [
            "pq.write_table (zstd)",
            f"{write_s[1]:.3f}",
            f"{n / write_s[1]:,.0f}",
            fmt_bytes(theirs_size),
            "",
            "",
        ],
    ]
    text = [
        markdown_table(
            [
                "writer",
                "seconds (best)",
                "rows/s",
                "file bytes",
                "ours/pyarrow rows/s",
                "ours/pyarrow size",
            ],
            write_rows,
        )
    ]
    read_rows = []
    for k, (label, reader, _) in enumerate(readers):
        base = read_s[3 * (k // 3) + 1]  # pq.read_table of the same file
        read_rows.append(
            [
                label,
                reader,
                f"{read_s[k]:.3f}",
                f"{n / read_s[k]:,.0f}",
                fmt_ratio(base / read_s[k]) if reader.startswith("streamwrite") else "",
            ]
        )
    text.append(
        "\n"
        + markdown_table(
            ["file", "reader", "seconds (best)", "rows/s", "ours/pyarrow rows/s"], read_rows
        )
    )
    checks = {
        "pyarrow reads ours": pq.read_table(ours_path).equals(table),
        "streamwrite reads ours": streamwrite.read_table(ours_path).equals(table),
        "streamwrite reads pyarrow's": streamwrite.read_table(theirs_path).equals(table),
    }
    text.append(
        "\nRead back equal to the input: "
        + "; ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in checks.items())
        + f".\n\nLoad average {load_before} before, {load_after} after."
    )
    text.append("\nPer leaf column (compressed bytes, encodings):\n")
    text.append(_leaf_breakdown(ours_path, theirs_path))
    summary = {
        "speed_ratio": write_s[1] / write_s[0],
        "size_ratio": ours_size / theirs_size,
        "read_ratio": read_s[1] / read_s[0],
        "read_ratio_pyarrow_file": read_s[4] / read_s[3],
        "read_ratio_single_thread": read_s[2] / read_s[0],
        "write_seconds": write_s,
        "read_seconds": read_s,
        "sizes": [ours_size, theirs_size],
        "checks": checks,
        "load": [load_before, load_after],
        "table_mb": table.nbytes / MB,
    }
    return "\n".join(text), summary


def _leaf_sizes(path: Path) -> dict[str, tuple[int, set[str]]]:
    meta = pq.ParquetFile(path).metadata
    sizes: dict[str, tuple[int, set[str]]] = {}
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        for j in range(group.num_columns):
            chunk = group.column(j)
            size, encodings = sizes.get(chunk.path_in_schema, (0, set()))
            sizes[chunk.path_in_schema] = (
                size + chunk.total_compressed_size,
                encodings | set(chunk.encodings),
            )
    return sizes


def _leaf_breakdown(ours_path: Path, theirs_path: Path) -> str:
    ours, theirs = _leaf_sizes(ours_path), _leaf_sizes(theirs_path)
    rows = [
        [
            name,
            fmt_bytes(ours[name][0]),
            fmt_bytes(theirs[name][0]),
            fmt_ratio(ours[name][0] / theirs[name][0]),
            ", ".join(sorted(ours[name][1])),
            ", ".join(sorted(theirs[name][1])),
        ]
        for name in theirs
        if name in ours
    ]
    return markdown_table(
        [
            "leaf",
            "ours bytes",
            "pyarrow bytes",
            "ours/pyarrow",
            "ours encodings",
            "pyarrow encodings",
        ],
        rows,
    )


def profile_nested(table: pa.Table, workdir: Path, top: int) -> str:
    """cProfile one default streamwrite write and one read of ``table``.

    Returns:
        The top ``top`` functions by own time of each, as text.
    """
    path = workdir / "nested_profile.parquet"
    out = []
    for label, job in (
        ("write", lambda: streamwrite.write_table(table, path)),
        ("read", lambda: streamwrite.read_table(path)),
    ):
        profiler = cProfile.Profile()
        profiler.enable()
        job()
        profiler.disable()
        buf = io.StringIO()
        stats = pstats.Stats(profiler, stream=buf)
        stats.sort_stats("tottime").print_stats(top)
        stats.sort_stats("cumulative").print_stats(top)
        out.append(f"### {label}\n\n```\n{buf.getvalue().strip()}\n```")
    return "\n\n".join(out)


def nested_section(args: argparse.Namespace, report: Report, workdir: Path) -> list[str]:
    """Section 4 of ``bench_write.py``: builds the table, prints the figures (and the profile
    with ``--profile``).

    Returns:
        The section's target verdicts.
    """
    start = time.perf_counter()
    table = nested_table(args.nested_rows)
    print(
        f"## 4. Nested columns ({table.num_rows:,} rows, {table.nbytes / MB:,.0f} MB of Arrow "
        f"buffers, built in {time.perf_counter() - start:.1f} s; one process)\n"
    )
    text, summary = bench_nested(table, args.repeat, workdir)
    print(text + "\n")
    report.data["nested"] = summary
    if args.profile:
        print(f"## cProfile of one nested write and read ({table.num_rows:,} rows)\n")
        print(profile_nested(table, workdir, args.profile) + "\n")
    sys.stdout.flush()
    return [
        verdict(
            f"nested rows/s written >= {NESTED_SPEED_TARGET}x pyarrow",
            fmt_ratio(summary["speed_ratio"]),
            summary["speed_ratio"] >= NESTED_SPEED_TARGET,
        ),
        verdict(
            "nested file <= pyarrow's default zstd file",
            fmt_ratio(summary["size_ratio"]),
            summary["size_ratio"] <= NESTED_SIZE_TARGET,
        ),
        verdict(
            f"nested rows/s read >= {NESTED_READ_TARGET}x pyarrow (our file, pyarrow threads on)",
            fmt_ratio(summary["read_ratio"]),
            summary["read_ratio"] >= NESTED_READ_TARGET,
        ),
    ]
