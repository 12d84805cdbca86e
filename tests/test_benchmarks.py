"""The benchmarks' shared helpers (``benchmarks/_common.py``) and one benchmark end to end.

``bench_commit.py`` runs as a script (as a user runs it) with tiny sizes: the header, sections,
targets and the ``--json`` document come out of the shared :class:`Report`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from _common import bench_parser, markdown_table, verdict  # noqa: E402


def test_every_benchmark_takes_the_shared_options() -> None:
    args = bench_parser("Title.\n\nMore.").parse_args(["--quick", "--json", "x.json"])
    assert (args.quick, args.json, args.workdir) == (True, "x.json", None)
    for script in sorted(BENCHMARKS.glob("bench_*.py")):
        text = script.read_text()
        assert "bench_parser(__doc__" in text and "Report(" in text, script.name


def test_verdict_and_table_format() -> None:
    assert verdict("p99 <= 15 ms", "9.50 ms", True) == "- p99 <= 15 ms: 9.50 ms -> PASS"
    assert verdict("rows/s", "0.40x", False) == "- rows/s: 0.40x -> FAIL"
    assert markdown_table(["name", "rows"], [["a", "1,000"], ["b", "20"]]).splitlines() == [
        "| name | rows |",
        "|---|---:|",
        "| a | 1,000 |",
        "| b | 20 |",
    ]


def test_bench_commit_quick_run_writes_its_report_as_json(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "bench_commit.py"),
            "--quick",
            "--commits",
            "12",
            "--rows",
            "200",
            "--fastparquet-commits",
            "0",
            "--workdir",
            str(tmp_path),
            "--json",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("# streamwrite commit benchmark\n\n- command: `")
    assert "## 1. Commits" in proc.stdout and "## Targets" in proc.stdout
    document = json.loads(out.read_text())
    assert document["benchmark"] == "commit"
    assert document["markdown"] == proc.stdout
    assert document["arguments"]["commits"] == 12
    assert [t.rsplit(" -> ", 1)[1] in ("PASS", "FAIL") for t in document["targets"]] == [True] * 3
    assert len(document["data"]["streamwrite LiveFile.append"]["latency"]) == 12
    assert document["data"]["growth"]["row_groups"][-1] >= 12
    assert list(tmp_path.iterdir()) == [out]  # the temporary work directory is gone


def test_bench_spark_quick_run_writes_its_report_as_json(tmp_path: Path) -> None:
    """``bench_spark.py`` end to end on a tiny DataFrame: its own local[2] session (a Spark
    session is expensive, so one run covers writes, reads and the remote byte counts)."""
    from tests.spark.conftest import skip_or_fail_without_spark

    skip_or_fail_without_spark()
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "bench_spark.py"),
            "--quick",
            "--rows",
            "3000",
            "--driver-memory",
            "1g",
            "--profile",
            "3",
            "--workdir",
            str(tmp_path),
            "--json",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("# streamwrite spark benchmark\n\n- command: `")
    sections = ["## 1. Writes", "## 2. Reads", "## 3. Remote read bytes", "### 3b.", "## 4. Where"]
    for section in [*sections, "## Targets"]:
        assert section in proc.stdout, section
    document = json.loads(out.read_text())
    assert document["benchmark"] == "spark"
    assert document["markdown"] == proc.stdout
    assert document["arguments"]["rows"] == 3000
    assert [t.rsplit(" -> ", 1)[1] in ("PASS", "FAIL") for t in document["targets"]] == [True] * 4
    assert len(document["data"]["write_seconds"]) == 5  # 4 writers and the transfer floor
    assert set(document["data"]["read_seconds"]) == {"executor mode", "driver mode"}
    assert set(document["data"]["write_cpu_seconds"]["df.write.parquet (zstd)"]) == {
        "JVM",
        "Python workers",
        "driver Python",
    }
    for section in ("remote_segment", "remote_table"):
        assert len(document["data"][section]) == 7  # every column of the reference table
    assert list(tmp_path.iterdir()) == [out]  # the temporary work directory is gone
