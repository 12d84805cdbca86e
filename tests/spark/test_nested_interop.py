"""Nested files between Spark and streamwrite, both directions.

* Spark reads our nested interop matrix (``tests/interop/nested_matrix.py``: lists, large and
  fixed-size lists, structs, maps, lists of structs, maps of lists, lists of lists, nulls at
  every level; the selected encoding x codec x page version cases) equal to the input, in the
  shared session (a JVM: a bad file fails the read, it cannot abort this process).
* Spark reads our encrypted nested files (per-leaf column keys named by leaf path, v1 pages and
  v2 pages in parquet-java's layout; see ``test_spark_encryption.py`` for the KMS and why v2
  needs that layout), in its own subprocess with the test KMS on its classpath.
* streamwrite reads Spark's nested files (Spark's three-level LIST/MAP layout, and the legacy
  two-level layout of ``spark.sql.parquet.writeLegacyFormat``) equal to Spark's own rows.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather

from tests.interop.nested_compare import same_nested_tables
from tests.interop.nested_matrix import nested_table, selected_cases
from tests.interop.test_nested_matrix import expected_table, write_case, write_encrypted
from tests.spark.conftest import skip_or_fail_without_spark
from tests.spark.test_spark_encryption import _compile_kms, run_spark

CASES = selected_cases()


# Spark ships no Brotli codec (parquet-java loads org.apache.hadoop.io.compress.BrotliCodec,
# which needs a jar Spark does not bundle): its gap, not ours. Such a case is read with zstd in
# its place, and the Brotli file must fail with exactly that reason.
SPARK_CODEC_GAPS = {"brotli": "BrotliCodec was not found"}


def test_spark_reads_our_nested_matrix(spark: Any, tmp_path: Path) -> None:
    cases = []
    for case in CASES:
        if case.codec in SPARK_CODEC_GAPS:
            cases.append(dataclasses.replace(case, codec="zstd"))
        cases.append(case)
    problems = {}
    for case in dict.fromkeys(cases):
        path = write_case(case, tmp_path)
        try:
            got = spark.read.parquet(str(path)).toArrow()
            diff = same_nested_tables(expected_table(case), got)
        except Exception as exc:  # a reader failure is a finding: report every case
            gap = SPARK_CODEC_GAPS.get(case.codec)
            diff = [] if gap and gap in str(exc) else [f"{type(exc).__name__}: {str(exc)[:500]}"]
        else:
            if case.codec in SPARK_CODEC_GAPS:
                diff = ["Spark read a Brotli file: drop the codec from SPARK_CODEC_GAPS"]
        if diff:
            problems[case.name] = diff
    assert problems == {}


def _with_id(table: pa.Table) -> pa.Table:
    return table.append_column("id", pa.array(np.arange(table.num_rows), pa.int64()))


SPARK_ENCRYPTED = [
    # name, algorithm, plaintext footer, page version, v2 page layout
    ("gcm-ef-v1", "AES_GCM_V1", False, "1.0", "arrow"),
    ("ctr-pf-v1", "AES_GCM_CTR_V1", True, "1.0", "arrow"),
    ("gcm-ef-v2-java", "AES_GCM_V1", False, "2.0", "parquet-java"),
    ("ctr-pf-v2-java", "AES_GCM_CTR_V1", True, "2.0", "parquet-java"),
]


def test_spark_reads_our_encrypted_nested_files(tmp_path: Path) -> None:
    skip_or_fail_without_spark()
    table = _with_id(nested_table(True, num_rows=900, special_floats=False))
    classes = _compile_kms(tmp_path / "kms")
    expected = tmp_path / "expected.feather"
    feather.write_feather(table, expected)
    jobs = []
    for name, algorithm, pf, version, layout in SPARK_ENCRYPTED:
        path = tmp_path / f"{name}.parquet"
        write_encrypted(table, path, algorithm, pf, version, v2_page_layout=layout)
        jobs.append({"name": name, "path": str(path), "expected": str(expected), "sort_by": "id"})
    results = run_spark(tmp_path, classes, jobs)
    assert results == {name: "ok" for name, *_ in SPARK_ENCRYPTED}
