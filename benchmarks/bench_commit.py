"""Commit benchmark: many small durable commits to one live file, against per-batch peers.

One run, three writers, each committing the same pre-generated batches of the reference table
(``--commits`` batches of ``--rows`` rows), round-robin (commit i of every writer, then commit
i+1) so that a noisy spell of the shared machine hits all of them alike:

- **streamwrite**: one ``LiveFile`` with its default write options; each commit is
  ``await lf.append(batch)`` (new row groups + a new cumulative footer, fsync of ``data.parquet``,
  then ``_pm`` written and fsynced twice).
- **pyarrow, one file per batch**: ``pq.write_table(batch, part-i.parquet, compression="zstd")``
  then open the file and ``os.fsync`` it (the directory is not fsynced: that favours pyarrow).
- **fastparquet, append**: ``fastparquet.write(path, df, append=i > 0, compression="ZSTD")`` then
  fsync; the pandas DataFrame is converted outside timing. fastparquet overwrites its previous
  footer in place, so its file is not readable at every moment (shown for speed only).

Each commit is timed with ``perf_counter`` around the call (latency). For streamwrite the run
also records, per commit and outside the timed call: the footer length (the 4 bytes before the
final ``PAR1``), the dead bytes (``unused_bytes`` of the newest ``_pm`` footer, read at the growth
checkpoints, and the running sum of superseded footers at every commit), and, through wrappers
installed in this process, the CPU time of ``FileWriter.footer()`` (``time.thread_time``: the
commit runs in a worker thread), the wall time of row-group encoding, of the whole I/O step and
of every ``os.fsync`` (all writers). Run from the repository root::

    .venv/bin/python benchmarks/bench_commit.py                    # 1,000 commits of 10k rows
    .venv/bin/python benchmarks/bench_commit.py --quick            # 50 commits, seconds
    .venv/bin/python benchmarks/bench_commit.py --fastparquet-commits 300
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.parquet as pq
from _common import (
    MB,
    Report,
    bench_parser,
    fmt_bytes,
    fmt_ratio,
    markdown_table,
    verdict,
)

import streamwrite.live.file
from streamwrite.format.sidecar.codec import read_sidecar
from streamwrite.io.local import LiveFileIO
from streamwrite.layout.file_writer import FileWriter
from streamwrite.live.file import LiveFile
from streamwrite.testing import reference_table

CHECKPOINTS = (1, 10, 100, 250, 500, 750, 1000)
WINDOW = 10  # commits averaged around a checkpoint
FOOTER_BYTES_PER_ROW_GROUP = 740  # DESIGN section 4
P99_TARGET_MS = 15.0
FLAT_TARGET = 1.5  # footer CPU of the last 10 commits / the first 10 commits
SPEED_TARGET = 1.0  # streamwrite rows/s / pyarrow-one-file-per-batch rows/s

# ---------------------------------------------------------------------------------------------
# Per-commit phase timers (wrappers installed in this process)


class Phases:
    """Seconds spent in each instrumented phase during the current commit."""

    def __init__(self) -> None:
        self.current: dict[str, float] = {}

    def reset(self) -> dict[str, float]:
        done, self.current = self.current, {}
        return done

    def add(self, name: str, seconds: float) -> None:
        self.current[name] = self.current.get(name, 0.0) + seconds


PHASES = Phases()


def _timed(fn: Callable[..., Any], name: str, clock: Callable[[], float]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            PHASES.add(name, clock() - start)

    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


def install_timers() -> Callable[[], None]:
    """Wrap footer(), encode_row_group, LiveFileIO.run and os.fsync; returns the undo."""
    saved = [
        (FileWriter, "footer", FileWriter.footer),
        (streamwrite.live.file, "encode_row_group", streamwrite.live.file.encode_row_group),
        (LiveFileIO, "run", LiveFileIO.run),
        (os, "fsync", os.fsync),
    ]
    FileWriter.footer = _timed(FileWriter.footer, "footer_cpu", time.thread_time)  # type: ignore[method-assign]
    streamwrite.live.file.encode_row_group = _timed(  # type: ignore[attr-defined]
        streamwrite.live.file.encode_row_group, "encode", time.perf_counter
    )
    LiveFileIO.run = _timed(LiveFileIO.run, "io", time.perf_counter)  # type: ignore[method-assign]
    os.fsync = _timed(os.fsync, "fsync", time.perf_counter)

    def undo() -> None:
        for owner, name, original in saved:
            setattr(owner, name, original)

    return undo


# ---------------------------------------------------------------------------------------------
# Writers


class Record:
    """Latencies and phase times of one writer, one entry per commit."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.latency: list[float] = []
        self.phases: list[dict[str, float]] = []
        self.rows = 0

    def commit(self, seconds: float, rows: int) -> None:
        self.latency.append(seconds)
        self.phases.append(PHASES.reset())
        self.rows += rows

    def phase(self, name: str) -> list[float]:
        return [p.get(name, 0.0) for p in self.phases]


class StreamwriteRun:
    """One live file; per commit also the footer length and (at checkpoints) dead bytes."""

    def __init__(self, directory: Path, checkpoints: set[int]) -> None:
        self.directory = directory
        self.checkpoints = checkpoints
        self.record = Record("streamwrite LiveFile.append")
        self.sizes: list[int] = []
        self.row_groups: list[int] = []
        self.footer_bytes: list[int] = []
        self.dead_sum: list[int] = []  # running sum of superseded footers (+8 each)
        self.dead_pm: dict[int, int] = {}  # commit number -> _pm unused_bytes
        self.lf: LiveFile | None = None
        self._data_fd = -1
        self._first_footer = 0

    async def open(self, schema: pa.Schema) -> None:
        self.lf = await LiveFile.open(self.directory, schema)
        self._data_fd = os.open(self.directory / "data.parquet", os.O_RDONLY)
        self._first_footer = self._footer_length(self.lf.last_commit.parquet_size)
        PHASES.reset()

    def _footer_length(self, size: int) -> int:
        tail = os.pread(self._data_fd, 8, size - 8)
        assert tail[4:] == b"PAR1", tail
        return int.from_bytes(tail[:4], "little")

    async def commit(self, batch: pa.Table) -> None:
        assert self.lf is not None
        PHASES.reset()
        start = time.perf_counter()
        commit = await self.lf.append(batch)
        self.record.commit(time.perf_counter() - start, batch.num_rows)
        # Outside timing: sizes, footer length, dead bytes.
        previous = self.footer_bytes[-1] if self.footer_bytes else self._first_footer
        self.sizes.append(commit.parquet_size)
        self.row_groups.append(commit.num_row_groups)
        self.footer_bytes.append(self._footer_length(commit.parquet_size))
        self.dead_sum.append((self.dead_sum[-1] if self.dead_sum else 0) + previous + 8)
        number = len(self.sizes)
        if number in self.checkpoints:
            pm = (self.directory / "_pm").read_bytes()
            self.dead_pm[number] = read_sidecar(pm).footers[0][1].unused_bytes

    async def close(self) -> None:
        if self.lf is not None:
            await self.lf.close()
        if self._data_fd >= 0:
            os.close(self._data_fd)


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def pyarrow_commit(record: Record, directory: Path, i: int, batch: pa.Table) -> None:
    PHASES.reset()
    start = time.perf_counter()
    path = directory / f"part-{i:05d}.parquet"
    pq.write_table(batch, path, compression="zstd")
    _fsync_path(path)
    record.commit(time.perf_counter() - start, batch.num_rows)


def fastparquet_commit(record: Record, path: Path, i: int, frame: Any) -> None:
    import fastparquet

    PHASES.reset()
    start = time.perf_counter()
    fastparquet.write(str(path), frame, append=i > 0, compression="ZSTD")
    _fsync_path(path)
    record.commit(time.perf_counter() - start, len(frame))


# ---------------------------------------------------------------------------------------------
# Reporting


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _disk(directory: Path) -> tuple[int, int, int]:
    """(files, bytes of content, bytes allocated) under ``directory``."""
    files = [p for p in directory.rglob("*") if p.is_file()]
    stats = [p.stat() for p in files]
    return len(files), sum(s.st_size for s in stats), sum(s.st_blocks * 512 for s in stats)


def writer_table(records: list[tuple[Record, Path]]) -> str:
    rows = []
    for record, directory in records:
        lat = record.latency
        files, size, allocated = _disk(directory)
        fsync = record.phase("fsync")
        rows.append(
            [
                record.name,
                f"{len(lat):,}",
                f"{record.rows / sum(lat):,.0f}",
                _ms(_quantile(lat, 0.5)),
                _ms(_quantile(lat, 0.9)),
                _ms(_quantile(lat, 0.99)),
                _ms(max(lat)),
                _ms(_quantile(fsync, 0.5)),
                _ms(_quantile(fsync, 0.99)),
                f"{files:,}",
                fmt_bytes(size),
                fmt_bytes(allocated),
            ]
        )
    return markdown_table(
        [
            "writer",
            "commits",
            "rows/s",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "max ms",
            "fsync p50 ms",
            "fsync p99 ms",
            "files created",
            "bytes (content)",
            "bytes (allocated)",
        ],
        rows,
    )


def _window(values: list[float], number: int) -> float:
    """Mean of the WINDOW commits around commit ``number`` (1-based), clipped to the run."""
    start = max(0, min(number - 1 - WINDOW // 2, len(values) - WINDOW))
    chunk = values[start : start + WINDOW]
    return statistics.fmean(chunk)


def growth_table(run: StreamwriteRun) -> str:
    record = run.record
    footer_cpu = record.phase("footer_cpu")
    encode = record.phase("encode")
    io = record.phase("io")
    fsync = record.phase("fsync")
    rows = []
    for number in sorted(run.dead_pm):
        k = run.row_groups[number - 1]
        size = run.sizes[number - 1]
        dead = run.dead_pm[number]
        rows.append(
            [
                f"{number:,}",
                f"{k:,}",
                fmt_bytes(size),
                fmt_bytes(run.footer_bytes[number - 1]),
                fmt_bytes(FOOTER_BYTES_PER_ROW_GROUP * k),
                fmt_bytes(dead),
                fmt_bytes(FOOTER_BYTES_PER_ROW_GROUP * k * k // 2),
                f"{dead / size:.3f}",
                _ms(_window(footer_cpu, number)),
                _ms(_window(record.latency, number)),
                _ms(_window(encode, number)),
                _ms(_window(io, number)),
                _ms(_window(fsync, number)),
            ]
        )
    return markdown_table(
        [
            "commit",
            "row groups",
            "data.parquet bytes",
            "footer bytes",
            "740*k",
            "dead bytes (_pm)",
            "740*k^2/2",
            "dead/total",
            "footer CPU ms",
            "latency ms",
            "encode ms",
            "I/O ms (write+fsync)",
            "fsync ms",
        ],
        rows,
    )


# ---------------------------------------------------------------------------------------------
# Main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = bench_parser(__doc__, quick_help="50 commits, for a smoke run")
    parser.add_argument("--commits", type=int, default=1000, help="commits per writer")
    parser.add_argument("--rows", type=int, default=10_000, help="rows per commit")
    parser.add_argument(
        "--fastparquet-commits",
        type=int,
        default=None,
        help="commits for fastparquet (default: --commits; 0 skips it)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.commits = min(args.commits, 50)
    if args.fastparquet_commits is None:
        args.fastparquet_commits = args.commits
    args.fastparquet_commits = min(args.fastparquet_commits, args.commits)
    return args


async def run(args: argparse.Namespace, workdir: Path, data: dict[str, Any]) -> list[str]:
    """Both sections; ``data`` receives every per-commit figure (``--json``).

    Returns:
        The verdicts.
    """
    start = time.perf_counter()
    table = reference_table(args.commits * args.rows)
    batches = [table.slice(i * args.rows, args.rows) for i in range(args.commits)]
    print(
        f"Reference table: {args.commits:,} batches of {args.rows:,} rows, "
        f"{table.nbytes / MB:,.0f} MB of Arrow buffers (built in "
        f"{time.perf_counter() - start:.1f} s, not timed).\n"
    )
    fastparquet_ok = args.fastparquet_commits > 0
    if fastparquet_ok:
        try:
            import fastparquet
            import pandas

            fp_version = f"fastparquet {fastparquet.__version__}, pandas {pandas.__version__}"
        except ImportError as exc:
            print(f"fastparquet skipped: {exc}\n")
            fastparquet_ok = False

    checkpoints = {c for c in CHECKPOINTS if c <= args.commits} | {args.commits}
    ours = StreamwriteRun(workdir / "streamwrite", checkpoints)
    pa_dir = workdir / "pyarrow"
    pa_dir.mkdir()
    pa_record = Record("pyarrow, one file per batch")
    fp_dir = workdir / "fastparquet"
    fp_dir.mkdir()
    fp_record = Record("fastparquet append=True")

    undo = install_timers()
    started = time.perf_counter()
    try:
        await ours.open(table.schema)
        for i, batch in enumerate(batches):
            await ours.commit(batch)
            pyarrow_commit(pa_record, pa_dir, i, batch)
            if fastparquet_ok and i < args.fastparquet_commits:
                frame = batch.to_pandas()  # outside timing
                fastparquet_commit(fp_record, fp_dir / "data.parquet", i, frame)
            if (i + 1) % 100 == 0:
                print(
                    f"  ... {i + 1} commits, {time.perf_counter() - started:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
        await ours.close()
    finally:
        undo()
    elapsed = time.perf_counter() - started

    records = [(ours.record, ours.directory), (pa_record, pa_dir)]
    if fastparquet_ok:
        records.append((fp_record, fp_dir))
    print(
        f"## 1. Commits ({args.rows:,} rows each, fsync after each; round-robin, "
        f"{elapsed:.0f} s in all)\n"
    )
    if fastparquet_ok:
        print(f"Peers: pyarrow {pa.__version__}; {fp_version}.\n")
    print(writer_table(records) + "\n")
    print(
        "rows/s = rows / the summed latency of the commit calls. fsync ms = time in os.fsync "
        "during the commit (streamwrite: 3 per commit).\n"
    )
    check_back = pq.ParquetFile(ours.directory / "data.parquet").metadata
    assert check_back.num_rows == ours.record.rows, check_back.num_rows

    print("## 2. Growth of the live file (streamwrite)\n")
    print(growth_table(ours) + "\n")
    mismatched = [n for n, dead in ours.dead_pm.items() if dead != ours.dead_sum[n - 1]]
    k_last = ours.row_groups[-1]
    dead_last = ours.dead_pm[args.commits]
    per_rg = (ours.footer_bytes[-1] - ours.footer_bytes[0]) / max(1, k_last - ours.row_groups[0])
    print(
        f"Footer growth: {per_rg:,.0f} bytes per row group (DESIGN predicts "
        f"{FOOTER_BYTES_PER_ROW_GROUP}); dead bytes after {args.commits:,} commits "
        f"{dead_last:,} = {dead_last / (per_rg * k_last**2 / 2):.2f}"
        f" x (measured bytes/row group) * k^2/2. Dead bytes from _pm "
        f"{'match' if not mismatched else 'DO NOT match'} the sum of superseded footers "
        f"(+8 each){'' if not mismatched else ' at commits ' + str(mismatched)}. Footer CPU, "
        f"latency and phase times are means over the {WINDOW} commits around each checkpoint.\n"
    )

    data.update(
        {r.name: {"latency": r.latency, "phases": r.phases, "rows": r.rows} for r, _ in records}
    )
    data["growth"] = {
        "parquet_size": ours.sizes,
        "row_groups": ours.row_groups,
        "footer_bytes": ours.footer_bytes,
        "dead_bytes": ours.dead_sum,
    }

    lat = ours.record.latency
    p99 = _quantile(lat, 0.99) * 1000
    cpu = ours.record.phase("footer_cpu")
    flat = statistics.fmean(cpu[-WINDOW:]) / statistics.fmean(cpu[:WINDOW])
    speed = (ours.record.rows / sum(lat)) / (pa_record.rows / sum(pa_record.latency))
    return [
        verdict(
            f"commit latency p99 <= {P99_TARGET_MS:.0f} ms", f"{p99:.2f} ms", p99 <= P99_TARGET_MS
        ),
        verdict(
            f"footer CPU flat (last {WINDOW} / first {WINDOW} commits <= {FLAT_TARGET}x)",
            fmt_ratio(flat),
            flat <= FLAT_TARGET,
        ),
        verdict("rows/s >= pyarrow one-file-per-batch", fmt_ratio(speed), speed >= SPEED_TARGET),
    ]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report = Report(
        "commit",
        args,
        [
            f"- {args.commits:,} commits of {args.rows:,} rows per writer"
            + (
                f" (fastparquet: {args.fastparquet_commits:,})"
                if args.fastparquet_commits != args.commits
                else ""
            )
            + "; one run, not best-of: latency percentiles are the point"
        ],
    )
    with report.workdir() as workdir:
        verdicts = anyio.run(run, args, workdir, report.data)
    return report.finish(verdicts)


if __name__ == "__main__":
    raise SystemExit(main())
