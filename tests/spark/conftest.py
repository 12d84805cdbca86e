"""One light local SparkSession for the whole test run (DESIGN section 7).

The Spark tests skip, with the reason, when pyspark or Java is missing. CI installs both and
sets ``STREAMWRITE_REQUIRE_SPARK=1``, which turns that skip into a failure.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import pytest

REQUIRE_ENV = "STREAMWRITE_REQUIRE_SPARK"

SESSION_CONFIG = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.memory": "1g",
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
    # Not UTC on purpose: Spark timestamps then arrive zoned, and the sink must store UTC.
    "spark.sql.session.timeZone": "Asia/Kolkata",
}


def missing_requirement() -> str | None:
    """Why Spark cannot run here, or None."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install -e '.[spark]')"
    java_home = os.environ.get("JAVA_HOME")
    if shutil.which("java") is None and not (
        java_home and os.path.exists(os.path.join(java_home, "bin", "java"))
    ):
        return "no java on PATH or in JAVA_HOME (Spark needs Java 17)"
    return None


def skip_or_fail_without_spark() -> None:
    reason = missing_requirement()
    if reason is None:
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"Spark tests cannot run: {reason}, and {REQUIRE_ENV}=1 requires them.")
    pytest.skip(f"Spark tests skipped: {reason}.")


MASTER = "local[2,2]"
"""Two cores; a failed task is retried once, as on a cluster (plain ``local[2]`` never
retries: the executor-side write tests make a task fail once)."""


def build_session(app_name: str) -> Any:
    """The light local session of DESIGN section 7 (PYSPARK_PYTHON set to this Python)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(MASTER).appName(app_name)
    for key, value in SESSION_CONFIG.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    skip_or_fail_without_spark()
    session = build_session("streamwrite-tests")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
