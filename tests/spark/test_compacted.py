"""Spark reads a table that compaction rewrote: raw-copied row groups (rebased offsets, page
index) and re-encoded ones, through the files of the committed snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

import streamwrite
from streamwrite.cli import main as cli_main
from streamwrite.spark import foreach_batch_sink, read_table_df
from streamwrite.table.api import read_snapshot
from tests.spark._support import by_value, ticks


def test_spark_reads_a_compacted_table(spark: Any, tmp_path: Path) -> None:
    table_path = tmp_path / "table"
    sink = foreach_batch_sink(table_path, app_id="job", segment_row_groups=1)
    parts = [ticks(100, 0, seed=8)]
    parts += [ticks(3_000, 100 + k * 3_000, seed=k) for k in range(4)]
    parts += [ticks(100, 12_100, seed=9)]
    for batch_id, part in enumerate(parts):
        sink(spark.createDataFrame(part), batch_id)
    assert len(read_snapshot(table_path).files) == 6  # one row group per segment

    # At a 2,000-row target, 3,000-row row groups are full: the first absorbs the small one
    # before it (re-encoded), the other three are copied raw, the last small one re-encoded.
    assert cli_main(["compact", str(table_path), "--target-rows", "2000", "--grace", "0"]) == 0
    snapshot = read_snapshot(table_path)
    assert len(snapshot.files) == 1
    expected = by_value(pa.concat_tables(parts))
    assert by_value(streamwrite.read_table(table_path)).equals(expected)
    files = [str(path) for path in snapshot.data_files()]
    assert by_value(spark.read.parquet(*files).toArrow()).equals(expected)
    filtered = spark.read.parquet(*files).where("value >= 6000 AND value < 6010").toArrow()
    assert sorted(filtered.column("value").to_pylist()) == list(range(6000, 6010))
    with streamwrite.ParquetFile(snapshot.data_files()[0]) as pf:
        assert [rg.num_rows for rg in pf.thrift_metadata.row_groups or []] == [
            3100,
            3000,
            3000,
            3000,
            100,
        ]
    assert by_value(read_table_df(spark, table_path).toArrow()).equals(expected)

    sink(spark.createDataFrame(ticks(50, 20_000, seed=3)), len(parts))  # appends go on
    assert streamwrite.read_table(table_path).num_rows == expected.num_rows + 50
