"""Spark reads files with embedded indexes (spec 001) exactly as the data written: a plain
file and each committed prefix of a live file, vectorized reader on and off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pytest

import streamwrite
from streamwrite.live.file import LiveFile
from tests.interop.test_embedded_index_readers import INDEX, embedded_table


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by([("ts", "ascending"), ("price", "ascending")])


@pytest.mark.parametrize("vectorized", ["true", "false"])
def test_spark_reads_files_with_an_embedded_index(
    spark: Any, tmp_path: Path, vectorized: str
) -> None:
    spark.conf.set("spark.sql.parquet.enableVectorizedReader", vectorized)
    table = embedded_table(5, 8_000)
    plain = tmp_path / "plain.parquet"
    streamwrite.write_table(table, plain, row_group_size=3_000, embedded_index=INDEX)
    batches = [embedded_table(k, n) for k, n in enumerate([700, 1_500])]
    live = tmp_path / "live"

    async def go() -> list[Any]:
        async with await LiveFile.open(
            live, table.schema, row_group_size=1_000, embedded_index=INDEX
        ) as lf:
            return [await lf.append(batch) for batch in batches]

    commits = anyio.run(go)
    raw = (live / "data.parquet").read_bytes()
    cases = [(plain, table)]
    for k, commit in enumerate(commits):
        snap = tmp_path / f"snap_{k}.parquet"
        snap.write_bytes(raw[: commit.parquet_size])
        cases.append((snap, pa.concat_tables(batches[: k + 1])))
    try:
        for path, expected in cases:
            got = spark.read.parquet(str(path)).toArrow()
            got = got.cast(expected.schema) if got.schema != expected.schema else got
            assert _sorted(got).equals(_sorted(expected)), path.name
            count = spark.read.parquet(str(path)).where("sym = 'AAPL'").count()
            assert count == expected.filter(pa.compute.equal(expected["sym"], "AAPL")).num_rows
    finally:
        spark.conf.unset("spark.sql.parquet.enableVectorizedReader")
