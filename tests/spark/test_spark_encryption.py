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

Encrypted DATA_PAGE_V2 pages: parquet-java keeps the levels in plaintext and encrypts only the
values (``ColumnChunkPageWriteStore.writePageV2``); parquet-cpp (pyarrow), arrow-rs and our
default ``v2_page_layout="arrow"`` encrypt the whole body as one module. Spark reads our
``v2_page_layout="parquet-java"`` files, and still fails on the Arrow layout of nullable
columns ("GCM tag check failed", or garbage levels under AES_GCM_CTR_V1); the test asserts both.
Spark also writes encrypted v2 files (``parquet.writer.version=v2``) that our reader reads.
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
import pyarrow as pa
import pyarrow.feather as feather
import pytest

from streamwrite.crypto import EncryptionConfig, InMemoryKms, KeyWrapper
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.live.file import LiveFile
from streamwrite.writer import write_table
from tests.crypto.test_writer_encryption import MASTER_KEYS, TABLE, WRITE_OPTIONS, Case, write_case
from tests.spark.conftest import REQUIRE_ENV, SESSION_CONFIG, skip_or_fail_without_spark
from workers import decode

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
    for job in manifest.get("writes", []):
        try:
            df = spark.createDataFrame(feather.read_table(job["source"]))  # Arrow, no pandas
            writer = df.coalesce(1).write.mode("overwrite")
            for key, value in job["options"].items():
                writer = writer.option(key, value)
            writer.parquet(job["path"])
            results[job["name"]] = "ok"
        except Exception as exc:
            results[job["name"]] = "error: " + type(exc).__name__ + ": " + str(exc)[:2000]
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


def run_spark(
    tmp: Path,
    classes: Path,
    jobs: list[dict[str, Any]],
    writes: list[dict[str, Any]] | None = None,
) -> dict[str, str]:
    """Runs ``writes`` (Spark writes a feather table as parquet), then reads every job's file,
    with Spark in one subprocess; returns name -> "ok" | error."""
    script = tmp / "spark_reader.py"
    script.write_text(SPARK_READER)
    manifest = tmp / "manifest.json"
    out = tmp / "results.json"
    manifest.write_text(
        json.dumps({"config": _session_config(classes), "jobs": jobs, "writes": writes or []})
    )
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
V2_CASES = [
    Case("ef-double-v2", page_version="2.0"),
    Case("pf-single-ctr-v2", algorithm="AES_GCM_CTR_V1", plaintext_footer=True,
         double_wrapping=False, page_version="2.0"),
    Case("ef-single-ctr-v2", algorithm="AES_GCM_CTR_V1", double_wrapping=False,
         page_version="2.0"),
    Case("pf-double-v2-uncompressed", plaintext_footer=True, page_version="2.0",
         compression="none"),
]  # fmt: skip
JAVA_LAYOUT = "+parquet-java"


def write_case_layout(case: Case, path: Path, layout: str) -> None:
    """``write_case`` with ``FileEncryption(v2_page_layout=layout)``."""
    _, wrapper = case.encryption()
    encryption = FileEncryption(
        wrapper, footer_key_columns=case.footer_key_columns, v2_page_layout=layout
    )
    write_table(
        TABLE,
        path,
        encryption=encryption,
        data_page_version=case.page_version,
        compression=case.compression,
        write_page_checksum=case.checksums,
        **WRITE_OPTIONS,
    )


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
    for case in [*SPARK_CASES, *V2_CASES]:
        path = tmp_path / f"{case.name}.parquet"
        write_case(case, path)
        jobs.append({"name": case.name, "path": str(path), "expected": str(full), "sort_by": "d"})
    for case in V2_CASES:
        name = case.name + JAVA_LAYOUT
        path = tmp_path / f"{name}.parquet"
        write_case_layout(case, path, "parquet-java")
        jobs.append({"name": name, "path": str(path), "expected": str(full), "sort_by": "d"})
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
    gap = {case.name for case in V2_CASES}  # Arrow layout (module docstring)
    assert {k: v for k, v in results.items() if k not in gap} == {
        job["name"]: "ok" for job in jobs if job["name"] not in gap
    }
    for name in gap:
        assert results[name].startswith("error: "), (name, results[name])


SPARK_WRITES = [
    # name, algorithm, plaintext footer, compression
    ("spark-v2-gcm", "AES_GCM_V1", False, "zstd"),
    ("spark-v2-ctr-pf", "AES_GCM_CTR_V1", True, "snappy"),
    ("spark-v2-gcm-uncompressed", "AES_GCM_V1", False, "uncompressed"),
]


def test_our_reader_reads_spark_encrypted_v2_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark writes encrypted DATA_PAGE_V2 files (parquet-java's layout: plaintext levels);
    our reader reads them with the same master keys, checksums verified."""
    from streamwrite import ParquetFile, read_table
    from streamwrite.crypto.decryption import DecryptionConfig

    skip_or_fail_without_spark()
    classes = _compile_kms(tmp_path / "kms")
    source = tmp_path / "source.feather"
    feather.write_feather(TABLE, source)
    writes = []
    for name, algorithm, pf, compression in SPARK_WRITES:
        options = {
            "parquet.writer.version": "v2",
            "parquet.page.write-checksum.enabled": "true",
            "parquet.encryption.column.keys": "kc:a,b;kd:e",
            "parquet.encryption.footer.key": "kf",
            "parquet.encryption.algorithm": algorithm,
            "parquet.encryption.plaintext.footer": str(pf).lower(),
            "parquet.page.row.count.limit": "400",
            "compression": compression,
        }
        writes.append(
            {"name": name, "source": str(source), "path": str(tmp_path / name), "options": options}
        )
    results = run_spark(tmp_path, classes, [], writes)
    assert results == {name: "ok" for name, *_ in SPARK_WRITES}
    config = DecryptionConfig.from_kms(InMemoryKms(MASTER_KEYS))
    # record the layout of every V2 page body with levels that our reader decrypts
    layouts: list[str] = []
    original = decode._ChunkDecoder.decrypt_v2_body

    def spy(self: Any, body: memoryview, levels: int, *args: Any) -> memoryview:
        size = len(body)
        java = int.from_bytes(body[levels : levels + 4], "little") == size - levels - 4
        arrow = int.from_bytes(body[0:4], "little") == size - 4
        layouts.append("parquet-java" if java and not arrow else "other")
        return original(self, body, levels, *args)

    monkeypatch.setattr(decode._ChunkDecoder, "decrypt_v2_body", spy)
    for name, algorithm, _, _ in SPARK_WRITES:
        files = sorted((tmp_path / name).glob("*.parquet"))
        assert files, name
        for file in files:
            with ParquetFile(file, decryption=config) as pf:
                assert pf.encryption_algorithm == algorithm
        got = pa.concat_tables(read_table(f, decryption=config) for f in files)
        got = got.select(TABLE.column_names).sort_by("d")
        for column in TABLE.column_names:
            assert got.column(column).to_pylist() == TABLE.column(column).to_pylist(), (
                name,
                column,
            )
        assert layouts and set(layouts) == {"parquet-java"}, (name, layouts)
        layouts.clear()
