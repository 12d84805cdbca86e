"""Tables: partition routing, _txn commits, idempotent batches, rollback, policies, snapshots."""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import streamwrite
from streamwrite.errors import ConfigError, SchemaError
from streamwrite.format.txn import TXN_FILE, Retired, Segment, TxnRecord, decode_txn, encode_txn
from streamwrite.table.api import open_table
from streamwrite.testing import reference_table

DAY_NS = 86_400 * 10**9


def _run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return anyio.run(functools.partial(fn, *args, **kwargs))


def _ticks(num_rows: int, start_day: int = 0, seed: int = 0) -> pa.Table:
    """Reference rows whose timestamps spread over three days from ``start_day``."""
    table = reference_table(num_rows, seed=seed, start_row=seed * 1_000_000)
    rng = np.random.default_rng(seed)
    ts = (start_day + rng.integers(0, 3, num_rows)) * DAY_NS + rng.integers(0, DAY_NS, num_rows)
    return table.set_column(0, "ts", pa.array(ts, pa.timestamp("ns")))


def _sorted(table: pa.Table) -> pa.Table:
    return table.take(pc.sort_indices(table, [("order_id", "ascending")]))


SCHEMA = _ticks(1).schema


def test_txn_record_round_trips_and_detects_damage() -> None:
    record = TxnRecord(
        version=3,
        schema="x",
        timestamp="ts",
        partition_by="day",
        partitions={"ts_day=1970-01-01": (Segment("seg-000000", 123), Segment("seg-000002", 99))},
        applied={"job": 7},
        retired=(Retired("ts_day=1970-01-01/seg-000001", 1795000000.5),),
    )
    data = encode_txn(record)
    assert decode_txn(data) == record
    assert record.is_applied("job", 7) and record.is_applied("job", 3)
    assert not record.is_applied("job", 8) and not record.is_applied("other", 0)
    with pytest.raises(streamwrite.CorruptFileError, match="CRC32"):
        decode_txn(data.replace(b"123", b"124"))
    with pytest.raises(streamwrite.CorruptFileError):
        decode_txn(b"{not json")
    for bad in (
        replace(record, partitions={"../x": (Segment("seg-000000", 1),)}),
        replace(record, partitions={"ts_day=1970-01-01": (Segment("../../etc", 1),)}),
        replace(record, partitions={"d": (Segment("seg-000000", 1), Segment("seg-000000", 2))}),
        replace(record, retired=(Retired("ts_day=1970-01-01/../../x", 0.0),)),
    ):
        with pytest.raises(streamwrite.CorruptFileError, match=r"not allowed|bad or repeated"):
            decode_txn(encode_txn(bad))


def test_txn_next_and_compacted_keep_segment_order() -> None:
    record = TxnRecord(partitions={"d": (Segment("seg-000000", 10), Segment("seg-000001", 5))})
    after = record.next({"d": [Segment("seg-000001", 8), Segment("seg-000002", 3)]}, {"a": 1})
    assert after.partitions["d"] == (
        Segment("seg-000000", 10),
        Segment("seg-000001", 8),
        Segment("seg-000002", 3),
    )
    assert after.version == 1 and after.applied == {"a": 1}
    merged = after.compacted("d", ["seg-000000", "seg-000001"], Segment("seg-000003", 15), 7.0)
    assert merged.partitions["d"] == (Segment("seg-000003", 15), Segment("seg-000002", 3))
    assert merged.retired == (Retired("d/seg-000000", 7.0), Retired("d/seg-000001", 7.0))
    assert merged.files() == (("d/seg-000003", 15), ("d/seg-000002", 3))
    with pytest.raises(ValueError, match="adjacent"):
        after.compacted("d", ["seg-000000", "seg-000002"], Segment("seg-000003", 1), 7.0)
    assert merged.without_retired(["d/seg-000000"]).retired == (Retired("d/seg-000001", 7.0),)


def test_rows_route_to_partitions_and_read_back(tmp_path: Path) -> None:
    batches = [_ticks(500, start_day=d, seed=d) for d in (0, 2, 1)]  # day 1 arrives late

    async def go() -> None:
        table = await open_table(tmp_path / "t", SCHEMA, timestamp="ts", partition_by="day")
        for batch in batches:
            await table.append(batch)
        commit = await table.flush()
        assert commit is not None and commit.num_rows == 1500
        assert sorted(commit.partitions) == [
            "ts_day=1970-01-01",
            "ts_day=1970-01-02",
            "ts_day=1970-01-03",
            "ts_day=1970-01-04",
            "ts_day=1970-01-05",
        ]
        await table.close()

    _run(go)
    expected = _sorted(pa.concat_tables(batches))
    assert _sorted(streamwrite.read_table(tmp_path / "t")).equals(expected)
    for part in (tmp_path / "t").iterdir():
        if part.is_dir():
            (segment,) = part.iterdir()  # 5 row groups or fewer: one segment
            days = pc.unique(pc.floor_temporal(streamwrite.read_table(segment)["ts"], unit="day"))
            assert len(days) == 1 and str(days[0].value // DAY_NS) == str(
                (
                    np.datetime64(part.name.removeprefix("ts_day=")) - np.datetime64("1970-01-01")
                ).astype(int)
            )


def test_replayed_batch_ids_write_nothing(tmp_path: Path) -> None:
    batch = _ticks(300)

    async def go() -> None:
        table = await open_table(tmp_path / "t", SCHEMA, timestamp="ts", partition_by="day")
        first = await table.append(batch, app_id="job-1", batch_id=5)
        assert first is not None and not first.skipped and first.num_rows == 300
        again = await table.append(batch, app_id="job-1", batch_id=5)
        older = await table.append(batch, app_id="job-1", batch_id=4, on_stale="skip")
        assert again is not None and again.skipped and older is not None and older.skipped
        assert table.metrics.batches_skipped == 2
        other = await table.append(batch.slice(0, 10), app_id="job-2", batch_id=5)
        assert other is not None and not other.skipped
        await table.close()
        reopened = await open_table(tmp_path / "t")
        replay = await reopened.append(batch, app_id="job-1", batch_id=5)
        assert replay is not None and replay.skipped
        await reopened.close()

    _run(go)
    assert streamwrite.read_table(tmp_path / "t").num_rows == 310
    assert decode_txn((tmp_path / "t" / TXN_FILE).read_bytes()).applied == {"job-1": 5, "job-2": 5}


def test_partition_commits_without_a_txn_commit_are_rolled_back(tmp_path: Path) -> None:
    batch = _ticks(200)

    async def go() -> None:
        table = await open_table(tmp_path / "t", SCHEMA, timestamp="ts", partition_by="day")
        await table.append(batch, app_id="a", batch_id=1)
        await table.close()
        # A crash after partition commits, before _txn: commit to partitions directly.
        partition = next(p for p in sorted((tmp_path / "t").iterdir()) if p.is_dir())
        async with await streamwrite.LiveFile.open(partition / "seg-000000") as live:
            await live.append(_ticks(50, seed=9).slice(0, 50))
        unpublished = [partition / "seg-000001", tmp_path / "t" / "1999-01-01" / "seg-000000"]
        for directory in unpublished:
            async with await streamwrite.LiveFile.open(directory, SCHEMA) as live:
                await live.append(_ticks(5, seed=8))
        reopened = await open_table(tmp_path / "t")
        assert reopened.version == 1
        await reopened.close()
        assert not any(d.exists() for d in unpublished)
        assert not (tmp_path / "t" / "1999-01-01").exists()

    _run(go)
    assert _sorted(streamwrite.read_table(tmp_path / "t")).equals(_sorted(batch))


def test_commit_policies_and_background_commits(tmp_path: Path) -> None:
    async def go() -> None:
        async with await open_table(
            tmp_path / "t",
            SCHEMA,
            timestamp="ts",
            partition_by="day",
            commit_rows=1000,
            row_group_size=400,
        ) as table:
            for i in range(5):
                assert await table.append(_ticks(300, seed=i)) is None
            await table.flush()
            assert table.metrics.commits >= 2
            assert table.metrics.rows_committed == 1500
            pinned = table.snapshot()
            await table.append(_ticks(10, seed=99))
        assert pinned.read().num_rows == 1500
        async with await open_table(tmp_path / "t", commit_interval=0.05) as table:
            await table.append(_ticks(7, seed=50))
            with anyio.fail_after(5):
                while table.metrics.commits == 0:
                    await anyio.sleep(0.02)

    _run(go)
    assert streamwrite.read_table(tmp_path / "t").num_rows == 1517


def test_bad_options_and_schemas(tmp_path: Path) -> None:
    async def go() -> None:
        with pytest.raises(ConfigError, match=r"no table at .* pass a schema"):
            await open_table(tmp_path / "none")
        assert not (tmp_path / "none").exists()  # a mistyped path creates nothing
        with pytest.raises(ConfigError, match="partition_by"):
            await open_table(tmp_path / "x", SCHEMA, timestamp="ts", partition_by="week")
        with pytest.raises(ConfigError, match="not a timestamp"):
            await open_table(tmp_path / "x", SCHEMA, timestamp="qty", partition_by="day")
        table = await open_table(tmp_path / "t", SCHEMA, timestamp="ts", partition_by="day")
        with pytest.raises(SchemaError):
            await table.append(pa.table({"x": [1]}))
        with pytest.raises(ConfigError, match="go together"):
            await table.append(_ticks(1), app_id="a")
        await table.close()
        with pytest.raises(ConfigError, match="cannot change"):
            await open_table(tmp_path / "t", timestamp="ts", partition_by="hour")

    _run(go)


def test_pool_and_inline_tables_are_byte_identical(tmp_path: Path) -> None:
    from streamwrite.pool.process import ProcessPool

    batches = [_ticks(700, seed=s) for s in range(3)]

    async def fill(path: Path, pool: Any) -> None:
        table = await open_table(
            path, SCHEMA, timestamp="ts", partition_by="day", executor=pool, row_group_size=256
        )
        for i, batch in enumerate(batches):
            await table.append(batch, app_id="a", batch_id=i)
        await table.close()

    async def go() -> None:
        await fill(tmp_path / "inline", None)
        async with await ProcessPool.open(2) as pool:
            await fill(tmp_path / "pool", pool)

    _run(go)
    inline = sorted(
        p.relative_to(tmp_path / "inline") for p in (tmp_path / "inline").rglob("*") if p.is_file()
    )
    pooled = sorted(
        p.relative_to(tmp_path / "pool") for p in (tmp_path / "pool").rglob("*") if p.is_file()
    )
    assert inline == pooled
    for rel in inline:
        assert (tmp_path / "inline" / rel).read_bytes() == (tmp_path / "pool" / rel).read_bytes(), (
            rel
        )


def test_cancelled_appends_are_all_or_nothing_and_row_groups_cut_by_bytes(tmp_path: Path) -> None:
    batches = [_ticks(400, seed=s) for s in range(6)]

    async def go() -> None:
        table = await open_table(
            tmp_path / "t", SCHEMA, timestamp="ts", partition_by="day", row_group_bytes=20_000
        )
        cancelled = 0
        for batch in batches:
            with anyio.move_on_after(0.0005) as scope:  # the deadline passes mid-append
                await table.append(batch)
                # The shielded append finished; the pending cancellation lands here.
                cancelled += anyio.current_time() > scope.deadline
                await anyio.sleep(0)
        await table.close()
        assert cancelled > 0  # cancellations came mid-append, and each batch went in whole

    _run(go)
    result = streamwrite.read_table(tmp_path / "t")
    assert _sorted(result).equals(_sorted(pa.concat_tables(batches)))
    partition = next(p for p in (tmp_path / "t").iterdir() if p.is_dir())
    md = streamwrite.ParquetFile(partition / "seg-000000").thrift_metadata
    assert max(rg.num_rows for rg in md.row_groups) < 400  # cut by bytes, not by the 1Mi rows


def test_a_partition_whose_creation_never_committed_is_deleted(tmp_path: Path) -> None:
    batch = _ticks(100)

    async def go() -> None:
        table = await open_table(tmp_path / "t", SCHEMA, timestamp="ts", partition_by="day")
        await table.append(batch, app_id="a", batch_id=1)
        await table.close()
        torn = tmp_path / "t" / "2000-01-01" / "seg-000000"  # crashed creating a partition
        torn.mkdir(parents=True)
        (torn / "data.parquet").write_bytes(b"PAR1\x15\x00")
        (torn / "_pm").write_bytes(b"")
        reopened = await open_table(tmp_path / "t")
        assert reopened.version == 1
        await reopened.close()
        assert not torn.parent.exists()

    _run(go)
    assert _sorted(streamwrite.read_table(tmp_path / "t")).equals(_sorted(batch))
