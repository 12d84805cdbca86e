"""``_txn`` records the XXH64 of each segment's committed Parquet footer beside its size
(issue 10, item 8), and opening a table checks each segment's ``_pm`` against it: a ``_pm``
that lost that record (rebuilt from a damaged footer chain, or replaced) cannot pass a
damaged footer off as the committed one."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
import pytest

import streamwrite
from streamwrite.compaction.policy import CompactionPolicy
from streamwrite.errors import CorruptFileError
from streamwrite.format.sidecar.codec import parquet_footer_checksum
from streamwrite.format.txn import TXN_FILE, Segment, decode_txn, encode_txn
from streamwrite.table.api import open_table
from streamwrite.testing import reference_table

TABLE = reference_table(3_000)


def _run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return anyio.run(functools.partial(fn, *args, **kwargs))


def _tail_checksum(data_file: Path, size: int) -> int:
    data = data_file.read_bytes()[:size]
    footer_length = int.from_bytes(data[-8:-4], "little")
    return parquet_footer_checksum(data[-footer_length - 8 :])


def test_every_segment_commit_and_merge_records_its_footer_checksum(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def build() -> None:
        policy = CompactionPolicy(grace_seconds=0, min_small_row_groups=2)
        async with await open_table(
            path, TABLE.schema, row_group_size=500, segment_row_groups=2, compaction=policy
        ) as table:
            for k in range(3):
                await table.append(TABLE.slice(k * 1000, 1000), app_id="a", batch_id=k)
            await table.compact()

    _run(build)
    record = decode_txn((path / TXN_FILE).read_bytes())
    segments = [(p, s) for p, segs in record.partitions.items() for s in segs]
    assert segments
    for partition, segment in segments:
        data_file = path / partition / segment.name / "data.parquet"
        assert segment.footer_xxh64 == _tail_checksum(data_file, segment.size)
    assert streamwrite.read_table(path).num_rows == 3_000


def test_txn_round_trips_with_and_without_checksums() -> None:
    from streamwrite.format.txn import TxnRecord

    record = TxnRecord(
        schema="x",
        partitions={
            "sw_partition=all": (Segment("seg-000000", 10, 2**64 - 1), Segment("seg-000001", 7))
        },
    )
    assert decode_txn(encode_txn(record)) == record


def test_opening_refuses_a_pm_whose_footer_checksum_differs_from_txn(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def build() -> None:
        async with await open_table(path, TABLE.schema) as table:
            await table.append(TABLE, app_id="a", batch_id=0)

    _run(build)
    record = decode_txn((path / TXN_FILE).read_bytes())
    ((partition, (segment,)),) = record.partitions.items()
    assert segment.footer_xxh64 is not None
    # A _txn that recorded another footer (as a damaged footer rebuilt into _pm would show).
    wrong = record.partitions | {partition: (Segment(segment.name, segment.size, 12345),)}
    from dataclasses import replace

    (path / TXN_FILE).write_bytes(encode_txn(replace(record, partitions=wrong)))
    before = {p: p.read_bytes() for p in path.rglob("*") if p.is_file() and p.name != "_lock"}

    async def reopen() -> None:
        with pytest.raises(CorruptFileError, match="XXH64"):
            await open_table(path)

    _run(reopen)
    after = {p: p.read_bytes() for p in path.rglob("*") if p.is_file() and p.name != "_lock"}
    assert after == before  # nothing changed
