"""MergeChunkJob (compaction's decode-and-encode job): row ranges of existing chunks encode
exactly as their rows would from Arrow, inline and in the process pool."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pytest

import streamwrite
from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.compaction.policy import CompactionPolicy
from streamwrite.encode import chunk_settings, row_group_jobs
from streamwrite.format.txn import UNPARTITIONED
from streamwrite.options import make_write_options
from streamwrite.pool.process import ProcessPool
from streamwrite.reader.file import ParquetFile
from streamwrite.table.api import open_table
from workers.jobs import MergeChunkJob, run_job


def _table(num_rows: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    nulls = rng.random(num_rows) < 0.2
    ints = pa.array(rng.integers(-5, 5, num_rows), pa.int32(), mask=nulls)
    words = pa.array(
        [f"w{v}" for v in rng.integers(0, 50, num_rows)], mask=rng.random(num_rows) < 0.3
    )
    fixed = pa.array([bytes([v % 256]) * 4 for v in range(num_rows)], pa.binary(4))
    flags = pa.array(rng.random(num_rows) < 0.5, mask=rng.random(num_rows) < 0.1)
    ts = pa.array(np.arange(num_rows, dtype=np.int64) * 1000, pa.timestamp("us"))
    return pa.table({"ints": ints, "words": words, "fixed": fixed, "flags": flags, "ts": ts})


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_row_ranges_encode_as_their_arrow_rows(tmp_path: Path, version: str) -> None:
    data = _table(3000)
    path = tmp_path / "src.parquet"
    options: dict[str, Any] = {"row_group_size": 1000, "data_page_version": version}
    streamwrite.write_table(data, path, data_page_size=2048, **options)
    ranges = [(0, 250, 1000), (1, 0, 1000), (2, 0, 600)]  # rows 250..2600
    expected_rows = data.slice(250, 2350)
    write_options = make_write_options(data.schema.names, **options)
    schema = arrow_to_parquet(data.schema)
    expected = [run_job(job) for job in row_group_jobs(expected_rows, schema, write_options)]
    with ParquetFile(path) as pf:
        for column, spec in enumerate(schema.columns):
            sources = []
            for index, start, stop in ranges:
                source = pf.source_chunk(index, spec, start, stop)
                sources.append(source)
            job = MergeChunkJob(
                chunk_settings(spec, write_options),
                tuple(sources),
                True,
                pf.max_decompressed_page_size,
            )
            got = run_job(job)
            assert got.data == expected[column].data, spec.name
            assert got.meta_data == expected[column].meta_data, spec.name
            assert got.column_index == expected[column].column_index
            assert got.offset_index == expected[column].offset_index


def test_pool_and_inline_compaction_write_the_same_row_groups(tmp_path: Path) -> None:
    data = _table(20_000, seed=3)
    base = tmp_path / "base"

    async def build() -> None:
        async with await open_table(
            base, data.schema, segment_row_groups=4, compaction_interval=None
        ) as table:
            for i in range(20):
                await table.append(data.slice(i * 1000, 1000), app_id="a", batch_id=i)

    anyio.run(build)
    shutil.copytree(base, tmp_path / "pool")
    policy = CompactionPolicy(target_row_group_rows=6000, grace_seconds=0)

    async def compact(path: Path, pooled: bool) -> Path:
        pool = await ProcessPool.open(2) if pooled else None
        try:
            table = await open_table(path, executor=pool, compaction_interval=None)
            try:
                (result,) = await table.compact(policy=policy)
            finally:
                await table.close()
        finally:
            if pool is not None:
                await pool.aclose()
        assert result.reencoded_row_groups == 4 and result.raw_row_groups == 0
        return path / UNPARTITIONED / result.segment.name

    inline = anyio.run(functools.partial(compact, base, False))
    pooled = anyio.run(functools.partial(compact, tmp_path / "pool", True))
    with ParquetFile(inline) as a, ParquetFile(pooled) as b:
        assert [rg.num_rows for rg in a.thrift_metadata.row_groups or []] == [
            6000,
            6000,
            6000,
            2000,
        ]
        for index in range(4):
            for spec in a.parquet_schema.columns:
                start_a, size_a = a.chunk_range(index, spec)
                start_b, size_b = b.chunk_range(index, spec)
                assert bytes(a.read_bytes(start_a, size_a)) == bytes(b.read_bytes(start_b, size_b))
    assert streamwrite.read_table(base).equals(data)
    assert streamwrite.read_table(tmp_path / "pool").equals(data)
