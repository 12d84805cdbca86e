"""The Spark example runs (its own local session, in a subprocess)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def test_spark_foreach_batch_example_runs(spark: Any, tmp_path: Path) -> None:
    # ``spark`` only for its skip-or-fail check; the example starts its own JVM.
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "spark_foreach_batch.py"),
            "--batches",
            "2",
            "--out",
            str(tmp_path),
            "--timeout",
            "120",
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "read back equal by: streamwrite.read_table, spark.read.parquet" in proc.stdout
