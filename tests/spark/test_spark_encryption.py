"""Spark reads streamwrite's encrypted files (DESIGN sections 5 and 7).

Spark 4 decrypts with parquet-java's ``PropertiesDrivenCryptoFactory`` and a ``KmsClient``
named in ``parquet.encryption.kms.client.class``. pyspark ships no in-memory KMS, so the test
compiles ``tests/spark/java/InMemoryTestKms.java`` (wrapping like our ``InMemoryKms`` and
parquet-java's test ``InMemoryKMS``) with ``javac`` against pyspark's jars, and runs Spark in
a subprocess with its own light session (a separate JVM: the shared test session is already
started without that class on its classpath). Master keys reach the KMS through the Hadoop
property ``parquet.encryption.key.list``.

Files: column keys plus a footer-key column, double and single wrapping, encrypted and signed
plaintext footers, both algorithms, and committed prefixes of an encrypted live file.

Known gap, recorded here: encrypted DATA_PAGE_V2 pages. We encrypt the whole page body (levels
and values) as one module, as parquet-cpp (pyarrow) and arrow-rs do; parquet-java 1.17 (Spark 4)
fails on them ("GCM tag check failed", or garbage levels under AES_GCM_CTR_V1), which fits
parquet-java decrypting only the values after the plaintext levels. The test asserts that they
still fail, so a fix on either side shows up here.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pyarrow.feather as feather
import pytest

from streamwrite.crypto import EncryptionConfig, InMemoryKms, KeyWrapper
from streamwrite.encryption import FileEncryption
from streamwrite.live import LiveFile
from tests.spark.conftest import REQUIRE_ENV, SESSION_CONFIG, skip_or_fail_without_spark
from tests.test_writer_encryption import MASTER_KEYS, TABLE, WRITE_OPTIONS, Case, write_case

ROOT = Path(__file__).resolve().parents[2]
JAVA_SOURCE = Path(__file__).parent / "java" / "InMemoryTestKms.java"
KMS_CLASS = "streamwrite.testkms.InMemoryTestKms"
CRYPTO_FACTORY = "org.apache.parquet.crypto.keytools.PropertiesDrivenCryptoFactory"

SPARK_READER = textwrap.dedent(
    """
    import json, os, sys
    import pyarrow.feather as feather
    from pyspark.sql import SparkSession

    manifest = json.load(open(sys.argv[1]))
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = SparkSession.builder.master("local[2]").appName("streamwrite-encryption")
    for key, value in manifest["config"].items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    results = {}
    for job in manifest["jobs"]:
        try:
            got = spark.read.parquet(job["path"]).toArrow()
            expected = feather.read_table(job["expected"])
            key = job["sort_by"]
            got = got.sort_by(key)
            expected = expected.sort_by(key)
            same = got.column_names == expected.column_names and all(
                got.column(c).to_pylist() == expected.column(c).to_pylist()
                for c in expected.column_names
            )
            results[job["name"]] = "ok" if same else "different values"
        except Exception as exc:
            results[job["name"]] = "error: " + type(exc).__name__ + ": " + str(exc)[:2000]
    spark.stop()
    json.dump(results, open(sys.argv[2], "w"))
    """
)


def _pyspark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def _compile_kms(out: Path) -> Path:
    """Compiles the test KMS into ``out``; returns the classpath directory."""
    javac = shutil.which("javac")
    if javac is None:
        reason = "javac is missing (a JDK is needed to compile the test KmsClient)"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"Spark encryption tests cannot run: {reason}, and {REQUIRE_ENV}=1.")
        pytest.skip(f"Spark encryption tests skipped: {reason}.")
    classes = out / "classes"
    classes.mkdir(parents=True)
    proc = subprocess.run(
        [javac, "-d", str(classes), "-cp", str(_pyspark_jars() / "*"), str(JAVA_SOURCE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, f"javac failed:\n{proc.stderr[-4000:]}"
    return classes


def _session_config(classes: Path) -> dict[str, str]:
    key_list = ", ".join(f"{k}:{base64.b64encode(v).decode()}" for k, v in MASTER_KEYS.items())
    return {
        **SESSION_CONFIG,
        "spark.driver.extraClassPath": str(classes),
        "spark.executor.extraClassPath": str(classes),
        "spark.hadoop.parquet.crypto.factory.class": CRYPTO_FACTORY,
        "spark.hadoop.parquet.encryption.kms.client.class": KMS_CLASS,
        "spark.hadoop.parquet.encryption.key.list": key_list,
    }


def run_spark(tmp: Path, classes: Path, jobs: list[dict[str, Any]]) -> dict[str, str]:
    """Reads every job's file with Spark in one subprocess; returns name -> "ok" | error."""
    script = tmp / "spark_reader.py"
    script.write_text(SPARK_READER)
    manifest = tmp / "manifest.json"
    out = tmp / "results.json"
    manifest.write_text(json.dumps({"config": _session_config(classes), "jobs": jobs}))
    proc = subprocess.run(
        [sys.executable, str(script), str(manifest), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=ROOT,
    )
    assert proc.returncode == 0, f"Spark died ({proc.returncode}): {proc.stderr[-4000:]}"
    results: dict[str, str] = json.loads(out.read_text())
    return results


SPARK_CASES = [
    Case("ef-double"),
    Case("pf-double", plaintext_footer=True),
    Case("ef-single-ctr", algorithm="AES_GCM_CTR_V1", double_wrapping=False),
    Case("pf-single-ctr", algorithm="AES_GCM_CTR_V1", plaintext_footer=True,
         double_wrapping=False),
    Case("ef-bits256-prefix", bits=256, aad_prefix=b"s3://bucket/file.parquet"),
    Case("uniform-pf", column_keys={}, footer_key_columns=("a", "b", "c", "d", "e"),
         plaintext_footer=True),
]  # fmt: skip
V2_GAP_CASES = [
    Case("ef-double-v2", page_version="2.0"),
    Case("pf-single-ctr-v2", algorithm="AES_GCM_CTR_V1", plaintext_footer=True,
         double_wrapping=False, page_version="2.0"),
]  # fmt: skip


async def _live_file(path: Path, plaintext_footer: bool) -> list[int]:
    config = EncryptionConfig(
        footer_key_id="kf",
        column_keys={"a": "kc", "b": "kc", "e": "kd"},
        plaintext_footer=plaintext_footer,
    )
    sizes = []
    encryption = FileEncryption(KeyWrapper(InMemoryKms(MASTER_KEYS), config))
    async with await LiveFile.open(
        path, TABLE.schema, encryption=encryption, **WRITE_OPTIONS
    ) as lf:
        sizes.append((await lf.append(TABLE.slice(0, 1000))).parquet_size)
    encryption = FileEncryption(KeyWrapper(InMemoryKms(MASTER_KEYS), config))
    async with await LiveFile.open(path, encryption=encryption, **WRITE_OPTIONS) as lf:
        sizes.append((await lf.append(TABLE.slice(1000, 2000))).parquet_size)
    return sizes


def test_spark_reads_our_encrypted_files(tmp_path: Path) -> None:
    skip_or_fail_without_spark()
    classes = _compile_kms(tmp_path / "kms")
    full = tmp_path / "expected-full.feather"
    feather.write_feather(TABLE, full)
    jobs = []
    for case in [*SPARK_CASES, *V2_GAP_CASES]:
        path = tmp_path / f"{case.name}.parquet"
        write_case(case, path)
        jobs.append({"name": case.name, "path": str(path), "expected": str(full), "sort_by": "d"})
    for pf in (False, True):
        live = tmp_path / f"live-{'pf' if pf else 'ef'}"
        sizes = anyio.run(functools.partial(_live_file, live, pf))
        data = (live / "data.parquet").read_bytes()
        for size, rows in zip(sizes, [1000, 3000], strict=True):
            prefix = tmp_path / f"{live.name}-{rows}.parquet"
            prefix.write_bytes(data[:size])
            expected = tmp_path / f"expected-{rows}.feather"
            feather.write_feather(TABLE.slice(0, rows), expected)
            jobs.append(
                {
                    "name": f"{live.name}@{rows}",
                    "path": str(prefix),
                    "expected": str(expected),
                    "sort_by": "d",
                }
            )
    results = run_spark(tmp_path, classes, jobs)
    gap = {case.name for case in V2_GAP_CASES}
    assert {k: v for k, v in results.items() if k not in gap} == {
        job["name"]: "ok" for job in jobs if job["name"] not in gap
    }
    for name in gap:  # the known DATA_PAGE_V2 gap (module docstring)
        assert results[name].startswith("error: "), (name, results[name])
