"""Compaction of nested tables: full row groups copied raw, small ones merged through the
workers (MergeChunkJob: values with definition and repetition levels, records kept whole),
everything re-encoded when sorted by the designated timestamp, and encrypted nested segments
re-encrypted under the new segment's keys and leaf ordinals (pyarrow decrypts them)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq

import streamwrite
from streamwrite.compaction.policy import CompactionPolicy
from streamwrite.crypto import EncryptionConfig, InMemoryKms, KeyWrapper
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.format.txn import UNPARTITIONED
from streamwrite.pool.process import ProcessPool
from streamwrite.reader.file import ParquetFile
from streamwrite.reader.verify import verify_file
from streamwrite.table.api import open_table
from streamwrite.table.state import segment_data_path
from tests.crypto.test_writer_encryption import MASTER_KEYS, _job, run_pyarrow
from tests.live._nested_rows import NESTED_SCHEMA, nested_rows


def _run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return anyio.run(functools.partial(fn, *args, **kwargs))


async def _commits(path: Path, sizes: list[int], rows: pa.Table, **options: Any) -> None:
    start = 0
    async with await open_table(path, NESTED_SCHEMA, **options) as table:
        for i, size in enumerate(sizes):
            await table.append(rows.slice(start, size), app_id="a", batch_id=i)
            start += size


async def _compact(
    path: Path, policy: CompactionPolicy, pooled: bool = False, **options: Any
) -> Any:
    pool = await ProcessPool.open(2) if pooled else None
    try:
        async with await open_table(path, executor=pool, compaction_interval=None, **options) as t:
            return await t.compact(policy=policy)
    finally:
        if pool is not None:
            await pool.aclose()


def _pyarrow_reads(file: Path, expected: pa.Table) -> None:
    assert pq.read_table(file, page_checksum_verification=True).equals(expected)


def test_raw_and_merged_row_groups_of_a_nested_table(tmp_path: Path) -> None:
    path = tmp_path / "t"
    # segments of 2 row groups: [100, 100] [500, 500] [500, 100]: the two small ones are
    # merged by the workers into one, the full ones copied raw, the last small one alone
    sizes = [100, 100, 500, 500, 500, 100]
    rows = nested_rows(0, sum(sizes))
    options: dict[str, Any] = {
        "segment_row_groups": 2,
        "row_group_size": 500,
        "data_page_row_limit": 64,
        "compaction_interval": None,
    }
    _run(_commits, path, sizes, rows, **options)
    policy = CompactionPolicy(grace_seconds=0, target_row_group_rows=500)
    (result,) = _run(_compact, path, policy, pooled=True)
    assert result.raw_row_groups >= 2 and result.reencoded_row_groups >= 1
    assert streamwrite.read_table(path).equals(rows)
    merged = path / UNPARTITIONED / result.segment.name
    report = verify_file(merged)
    assert report.ok, report.problems
    _pyarrow_reads(segment_data_path(merged), rows)


def test_sorting_by_timestamp_reencodes_nested_rows(tmp_path: Path) -> None:
    path = tmp_path / "t"
    rows = nested_rows(0, 900)
    shuffled = rows.take(np.random.default_rng(3).permutation(900))
    policy = CompactionPolicy(sort_by_timestamp=True, grace_seconds=0)
    options: dict[str, Any] = {
        "timestamp": "ts",
        "segment_row_groups": 2,
        "row_group_size": 150,
        "compaction_interval": None,
    }
    _run(_commits, path, [150] * 6, shuffled, **options)
    (result,) = _run(_compact, path, policy)
    assert result.raw_row_groups == 0 and result.num_rows == 900
    assert streamwrite.read_table(path).equals(rows)
    _pyarrow_reads(segment_data_path(path / UNPARTITIONED / result.segment.name), rows)


def _encryption() -> FileEncryption:
    config = EncryptionConfig(
        footer_key_id="kf", column_keys={"s": "kc", "m.key_value.value": "kd", "deep": "kc"}
    )
    return FileEncryption(KeyWrapper(InMemoryKms(MASTER_KEYS), config), footer_key_columns=["vals"])


def test_encrypted_nested_segments_are_reencrypted_with_leaf_ordinals(tmp_path: Path) -> None:
    path = tmp_path / "t"
    rows = nested_rows(0, 1200)
    options: dict[str, Any] = {
        "segment_row_groups": 2,
        "row_group_size": 200,
        "compaction_interval": None,
    }
    _run(_commits, path, [200] * 6, rows, encryption=_encryption(), **options)
    policy = CompactionPolicy(grace_seconds=0, target_row_group_rows=600)
    (result,) = _run(_compact, path, policy, encryption=_encryption())
    assert result.raw_row_groups == 0 and result.reencoded_row_groups == 2
    decryption = DecryptionConfig.from_kms(InMemoryKms(MASTER_KEYS))
    assert streamwrite.read_table(path, decryption=decryption).equals(rows)
    merged = path / UNPARTITIONED / result.segment.name
    with ParquetFile(merged, decryption=decryption) as pf:
        assert [rg.ordinal for rg in pf.thrift_metadata.row_groups or []] == [0, 1]
    report = verify_file(merged, decryption=decryption)
    assert report.ok, report.problems
    expected = tmp_path / "expected.feather"
    feather.write_feather(rows, expected)
    jobs = [_job("merged", segment_data_path(merged), expected, verify_checksums=True)]
    assert run_pyarrow(tmp_path, jobs) == {"merged": "ok"}
