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
import pyarrow.compute as pc
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import streamwrite
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


SPARK_COLUMNS = ["id", "lf", "ls", "s", "m", "lst", "mli", "nn", "deep"]
SPARK_WRITES: list[tuple[str, dict[str, str]]] = [
    ("three-level-zstd-v1", {"compression": "zstd"}),
    ("three-level-snappy-v2", {"compression": "snappy", "parquet.writer.version": "v2"}),
    ("three-level-plain", {"compression": "none", "parquet.enable.dictionary": "false"}),
    ("legacy-two-level", {"compression": "gzip"}),
]


@pytest.mark.parametrize(("name", "options"), SPARK_WRITES, ids=[n for n, _ in SPARK_WRITES])
def test_streamwrite_reads_spark_nested_files(
    spark: Any, tmp_path: Path, name: str, options: dict[str, str]
) -> None:
    source = _with_id(nested_table(True, num_rows=1_500, special_floats=False))
    df = spark.createDataFrame(source.select(SPARK_COLUMNS)).repartition(2)
    out = tmp_path / name
    legacy = name.startswith("legacy")
    spark.conf.set("spark.sql.parquet.writeLegacyFormat", str(legacy).lower())
    try:
        writer = df.write.mode("overwrite").option("parquet.page.row.count.limit", "300")
        for key, value in options.items():
            writer = writer.option(key, value)
        writer.parquet(str(out))
    finally:
        spark.conf.unset("spark.sql.parquet.writeLegacyFormat")
    files = sorted(out.glob("*.parquet"))
    assert len(files) == 2
    spark_rows = spark.read.parquet(str(out)).toArrow()
    ours = pa.concat_tables(streamwrite.read_table(f) for f in files)
    spark_rows = spark_rows.take(pc.sort_indices(spark_rows, [("id", "ascending")]))
    ours = ours.take(pc.sort_indices(ours, [("id", "ascending")]))
    assert same_nested_tables(spark_rows, ours) == []
    assert same_nested_tables(source.select(SPARK_COLUMNS), ours) == []
    layout = str(pq.ParquetFile(files[0]).schema)  # the footer only
    if legacy:  # Spark's two-level layout: repeated group bag { optional ... array }
        assert " bag {" in layout and " list {" not in layout, layout
    else:
        assert " list {" in layout and " key_value {" in layout, layout
