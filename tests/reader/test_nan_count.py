"""The writer records ``Statistics.nan_count`` (parquet.thrift field 9) for FLOAT, DOUBLE and
FLOAT16 chunks, so a reader can know a chunk holds no NaN; other columns get none. pyarrow
reads the files unchanged (the interop matrix checks every other reader)."""

from __future__ import annotations

import io
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import streamwrite


def _nan_counts(data: bytes) -> list[list[int | None]]:
    pf = streamwrite.ParquetFile(data)
    return [
        [pf._column_metadata(i, j).statistics.nan_count for j in range(len(pf.schema_arrow))]  # type: ignore[union-attr]
        for i in range(pf.num_row_groups)
    ]


def _rows(table: pa.Table) -> list[object]:
    """The values, NaN written as a string (NaN != NaN)."""
    return [
        ["NaN" if isinstance(v, float) and math.isnan(v) else v for v in column.to_pylist()]
        for column in table.columns
    ]


@pytest.mark.parametrize("use_dictionary", [True, False])
def test_nan_count_per_chunk(use_dictionary: bool) -> None:
    nan = float("nan")
    table = pa.table(
        {
            "f32": pa.array([1.0, nan, None, nan, 2.0, 3.0], pa.float32()),
            "f64": pa.array([nan, nan, nan, None, 0.0, -0.0], pa.float64()),
            "f16": pa.array(np.array([1, np.nan, 2, 3, np.nan, np.nan], dtype=np.float16)),
            "i": pa.array([1, 2, 3, 4, 5, 6], pa.int64()),
        }
    )
    sink = io.BytesIO()
    streamwrite.write_table(table, sink, row_group_size=3, use_dictionary=use_dictionary)
    assert _nan_counts(sink.getvalue()) == [[1, 3, 1, None], [1, 0, 2, None]]
    assert _rows(pq.read_table(io.BytesIO(sink.getvalue()))) == _rows(table)


def test_nan_count_all_nan_chunk_has_no_bounds() -> None:
    table = pa.table({"x": pa.array([float("nan")] * 4, pa.float64())})
    sink = io.BytesIO()
    streamwrite.write_table(table, sink)
    stats = streamwrite.ParquetFile(sink.getvalue())._column_metadata(0, 0).statistics
    assert stats is not None
    assert (stats.nan_count, stats.min_value, stats.max_value) == (4, None, None)
