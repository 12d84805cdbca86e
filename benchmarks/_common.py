"""Helpers shared by the benchmarks: best-of-N timing, machine description, markdown tables.

Timings on a shared machine are noisy in one direction only (other work makes a run slower, never
faster), so every figure is the best (minimum) of N runs.
"""

from __future__ import annotations

import gc
import os
import platform
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "best_of",
    "command_line",
    "current_rss_size",
    "fmt_bytes",
    "fmt_ratio",
    "machine_lines",
    "markdown_table",
    "peak_rss_reset",
    "peak_rss_size",
]


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

    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "n/a"
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
