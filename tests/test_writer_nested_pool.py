"""Nested columns through the process pool: the jobs of nested leaves (repetition levels
beside definition levels, carried in the workers' shared-memory arena) encode to exactly the
bytes the inline executor gives, and so do the files built from them."""

from __future__ import annotations

import os
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.encode import row_group_jobs
from streamwrite.format.chunk import EncodedChunk
from streamwrite.layout.file_writer import FileWriter
from streamwrite.options import make_write_options
from streamwrite.pool.executor import InlineExecutor
from streamwrite.pool.process import ProcessPool
from streamwrite.testing.strategies import nested_tables
from workers.jobs import EncodeChunkJob

EXAMPLES = int(os.environ.get("STREAMWRITE_POOL_NESTED_EXAMPLES", "4"))


def _big_nested_table(num_rows: int) -> pa.Table:
    rng = np.random.default_rng(11)
    lengths = rng.integers(0, 5, num_rows)
    offsets = np.zeros(num_rows + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    values = pa.array(rng.normal(size=int(offsets[-1])), mask=rng.random(int(offsets[-1])) < 0.1)
    null_lists = pa.array(rng.random(num_rows) < 0.1)
    floats = pa.ListArray.from_arrays(pa.array(offsets), values, mask=null_lists)
    words = pa.array([f"w{i % 97}" for i in range(int(offsets[-1]))])
    strings = pa.ListArray.from_arrays(pa.array(offsets), words)
    struct = pa.StructArray.from_arrays(
        [
            pa.array(rng.integers(0, 1 << 40, num_rows)),
            pa.array([f"s{i}" for i in range(num_rows)]),
        ],
        names=["id", "name"],
        mask=pa.array(rng.random(num_rows) < 0.05),
    )
    maps = pa.MapArray.from_arrays(pa.array(offsets), words, words)
    deep = pa.array([[[i, None], [], None] if i % 4 else None for i in range(num_rows)])
    return pa.table({"f": floats, "s": strings, "st": struct, "m": maps, "deep": deep}).slice(
        3, num_rows - 10
    )


def _pooled_and_inline(
    jobs: list[EncodeChunkJob],
) -> tuple[list[EncodedChunk], list[EncodedChunk], int]:
    async def main() -> tuple[list[EncodedChunk], list[EncodedChunk], int]:
        async with await ProcessPool.open(2) as pool:
            pooled = await pool.run_all(jobs)
            shared = pool.bytes_shared
        async with InlineExecutor() as inline:
            return pooled, await inline.run_all(jobs), shared

    return anyio.run(main)


def _file(table: pa.Table, chunks: list[EncodedChunk], options: Any) -> bytes:
    schema = arrow_to_parquet(table.schema)
    writer = FileWriter(schema, options)
    return writer.start() + writer.add_row_group(chunks, table.num_rows) + writer.footer()


@pytest.mark.parametrize(
    "options",
    [{}, {"data_page_version": "2.0", "compression": "zstd", "data_page_row_limit": 500}],
)
def test_pool_encodes_nested_leaves_byte_identical_to_inline(options: dict[str, Any]) -> None:
    table = _big_nested_table(20_000)
    schema = arrow_to_parquet(table.schema)
    write_options = make_write_options([c.name for c in schema.columns], **options)
    jobs = row_group_jobs(table, schema, write_options)
    assert len(jobs) == len(schema.columns) == 7
    assert sum(job.rep_levels is not None for job in jobs) == 5
    rep_bytes = sum(job.rep_levels.nbytes for job in jobs if job.rep_levels is not None)
    pooled, inline, shared = _pooled_and_inline(jobs)
    assert shared >= rep_bytes  # the repetition levels travelled through the arena
    for got, want in zip(pooled, inline, strict=True):
        assert got.data == want.data
        assert got.meta_data == want.meta_data
        assert got.column_index == want.column_index
        assert got.offset_index == want.offset_index
    data = _file(table, pooled, write_options)
    assert data == _file(table, inline, write_options)
    back = pq.read_table(pa.BufferReader(data), page_checksum_verification=True)
    assert back.column("deep").equals(table.column("deep"))
    assert back.column("st").equals(table.column("st"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_drawn_nested_tables_pool_equals_inline(data: st.DataObject) -> None:
    table = data.draw(nested_tables(min_rows=1))
    schema = arrow_to_parquet(table.schema)
    write_options = make_write_options(
        [c.name for c in schema.columns], data_page_row_limit=data.draw(st.integers(1, 8))
    )
    jobs = row_group_jobs(table, schema, write_options)
    pooled, inline, _ = _pooled_and_inline(jobs)
    assert _file(table, pooled, write_options) == _file(table, inline, write_options)
