"""Helpers shared by the benchmarks: arguments, the report's header and targets, best-of-N
timing, machine description, markdown tables, memory.

Every ``bench_*.py`` runs the same way::

    parser = bench_parser(__doc__)          # --quick, --workdir, --json FILE and its own options
    args = parser.parse_args(argv)
    report = Report("write", args, details=[...])   # prints "# streamwrite write benchmark",
                                                    # the command, date and machine
    with report.workdir() as workdir:       # a temporary directory under --workdir
        ... print sections (markdown_table), collect "- target: value -> PASS/FAIL" verdicts
    return report.finish(verdicts)          # "## Targets", and the JSON file if --json

``--json FILE`` writes ``{"benchmark", "command", "date", "machine", "arguments", "targets",
"markdown", "data"}``: the whole printed report, its verdicts, and whatever a benchmark put in
``report.data`` (per-commit figures for ``bench_commit``).

Timings on a shared machine are noisy in one direction only (other work makes a run slower, never
faster), so every figure is the best (minimum) of N runs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import io
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

__all__ = [
    "MB",
    "Report",
    "bench_parser",
    "best_of",
    "command_line",
    "current_rss_size",
    "fmt_bytes",
    "fmt_ratio",
    "load_average",
    "machine_lines",
    "markdown_table",
    "peak_rss_reset",
    "peak_rss_size",
    "verdict",
]

MB = 1_000_000
"""Throughput figures are decimal megabytes."""


def bench_parser(
    doc: str | None, quick_help: str = "small sizes, for a smoke run"
) -> argparse.ArgumentParser:
    """An argument parser described by the first paragraph of ``doc``, with the options every
    benchmark takes: ``--quick`` (small sizes, seconds), ``--workdir DIR`` (where files go, in a
    temporary directory deleted at the end) and ``--json FILE`` (see the module docstring).

    Returns:
        The parser; a benchmark adds its own options and applies ``--quick`` after parsing.
    """
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--workdir", help="where files are written (default: a temporary dir)")
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON to FILE")
    return parser


def verdict(label: str, measured: str, passed: bool) -> str:
    """One line of the targets section: ``- label: measured -> PASS`` (or ``FAIL``)."""
    return f"- {label}: {measured} -> {'PASS' if passed else 'FAIL'}"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages (``n/a`` where the OS has none)."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


class _Tee(io.TextIOBase):
    """Writes to ``out`` and keeps a copy."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.copy = io.StringIO()

    def write(self, text: str) -> int:
        self.copy.write(text)
        return self.out.write(text)

    def flush(self) -> None:
        self.out.flush()


class Report:
    """One benchmark run's report: prints the header now, the targets at :meth:`finish`.

    Args:
        title: The benchmark's name in ``# streamwrite {title} benchmark``.
        args: The parsed arguments (``--json`` and ``--workdir`` are read from them).
        details: More header lines (``- ...``), after the machine's.
    """

    def __init__(self, title: str, args: argparse.Namespace, details: Sequence[str] = ()) -> None:
        self.title = title
        self.args = args
        self.data: dict[str, Any] = {}
        """Figures a benchmark adds to the JSON file (``"data"``)."""
        self.started = time.perf_counter()
        self.date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        self._tee: _Tee | None = None
        if getattr(args, "json", None):
            self._tee = _Tee(sys.stdout)
            sys.stdout = self._tee
        self.machine = machine_lines()
        print(f"# streamwrite {title} benchmark\n")
        print(f"- command: `{command_line()}`")
        print(f"- date: {self.date}")
        for line in self.machine:
            print(line)
        for line in details:
            print(line)
        print()
        sys.stdout.flush()

    @contextmanager
    def workdir(self) -> Iterator[Path]:
        """A temporary directory (under ``--workdir`` if given), deleted at the end.

        Yields:
            Its path.
        """
        with tempfile.TemporaryDirectory(
            prefix=f"bench_{self.title}_", dir=getattr(self.args, "workdir", None)
        ) as tmp:
            yield Path(tmp)

    def seconds(self) -> float:
        """Returns: wall-clock seconds since the report started."""
        return time.perf_counter() - self.started

    def finish(self, verdicts: Sequence[str], trailer: str | None = None) -> int:
        """Print ``## Targets``, the verdicts and ``trailer``; write the JSON file if asked.

        Returns:
            0, the process's exit status.
        """
        if verdicts:
            print("## Targets\n")
            print("\n".join(verdicts))
        if trailer is not None:
            print(trailer)
        sys.stdout.flush()
        if self._tee is not None:
            sys.stdout = self._tee.out
            document = {
                "benchmark": self.title,
                "command": command_line(),
                "date": self.date,
                "machine": [line.removeprefix("- ") for line in self.machine],
                "arguments": {k: v for k, v in vars(self.args).items() if k != "json"},
                "targets": [line.removeprefix("- ") for line in verdicts],
                "markdown": self._tee.copy.getvalue(),
                "data": self.data,
            }
            Path(self.args.json).write_text(json.dumps(document, indent=1) + "\n")
        return 0


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Run ``fn`` ``repeat`` times (at least once).

    Returns:
        ``(best wall-clock seconds, the result of the last call)``.
    """
    best = float("inf")
    result: Any = None
    for _ in range(max(1, repeat)):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_lines() -> list[str]:
    """One markdown bullet per fact about the machine and the library versions.

    Returns:
        Lines ready to print.
    """
    import numpy as np
    import pyarrow as pa

    load = load_average()
    return [
        f"- platform: {platform.platform()}",
        f"- CPU: {_cpu_model()}, {os.cpu_count()} logical cores "
        f"(pyarrow cpu_count {pa.cpu_count()})",
        f"- load average at start: {load}",
        f"- python {platform.python_version()} ({platform.python_implementation()}), "
        f"numpy {np.__version__}, pyarrow {pa.__version__}",
    ]


def command_line() -> str:
    """The command that started this process, as a shell would accept it."""
    exe = (
        os.path.relpath(sys.executable)
        if sys.executable.startswith(os.getcwd())
        else sys.executable
    )
    return " ".join(shlex.quote(a) for a in [exe, *sys.argv])


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub markdown table; numbers are right-aligned.

    Returns:
        The table text, without a trailing newline.
    """
    cells = [[str(c) for c in row] for row in rows]
    numeric = [
        all(_looks_numeric(row[i]) for row in cells if row[i]) and any(row[i] for row in cells)
        for i in range(len(headers))
    ]
    lines = ["| " + " | ".join(headers) + " |"]
    lines.append("|" + "|".join("---:" if n else "---" for n in numeric) + "|")
    lines.extend("| " + " | ".join(row) + " |" for row in cells)
    return "\n".join(lines)


def _looks_numeric(text: str) -> bool:
    stripped = text.replace(",", "").replace("x", "").replace("**", "").replace(" ", "")
    stripped = stripped.replace("(<0.5)", "").replace("(>1.1)", "")
    try:
        float(stripped)
    except ValueError:
        return False
    return True


def fmt_bytes(num_bytes: int) -> str:
    """``12,345,678`` style byte count."""
    return f"{num_bytes:,}"


def fmt_ratio(value: float) -> str:
    """``0.83x`` style ratio."""
    return f"{value:.2f}x"


def peak_rss_reset() -> bool:
    """Reset this process's peak RSS (Linux ``clear_refs`` 5).

    Returns:
        Whether the reset worked (the peak then covers only what follows).
    """
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        return False
    return True


def peak_rss_size() -> int:
    """Peak resident set size of this process in bytes (``VmHWM``, else ``ru_maxrss``)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def current_rss_size() -> int:
    """Current resident set size of this process in bytes (``VmRSS``; 0 if unknown)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0
