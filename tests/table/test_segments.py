"""Table segments: roll-over at ``segment_row_groups``, recovery of unpublished and ahead
segments, the table writer lock, pinned snapshots."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import streamwrite
import streamwrite.table.core as table_core
from streamwrite.errors import ConfigError, StreamwriteIOError
from streamwrite.format.txn import TXN_FILE, UNPARTITIONED, decode_txn
from streamwrite.table.api import open_table, read_snapshot
from streamwrite.testing import reference_table

TABLE = reference_table(2_000)


def _run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return anyio.run(functools.partial(fn, *args, **kwargs))


def _record(path: Path) -> Any:
    return decode_txn((path / TXN_FILE).read_bytes())


def test_segments_roll_over_and_read_back_in_order(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def go() -> None:
        async with await open_table(
            path, TABLE.schema, row_group_size=100, segment_row_groups=3
        ) as table:
            for i in range(7):  # 7 commits of 2 row groups: segments of 3, 3, 3, 3, 2
                await table.append(TABLE.slice(200 * i, 200), app_id="a", batch_id=i)
            assert table.metrics.segments_created == 5
            for n in range(4):  # sealed segments are closed: their writer lock is free
                async with await streamwrite.LiveFile.open(path / UNPARTITIONED / f"seg-{n:06d}"):
                    pass
            with pytest.raises(StreamwriteIOError):  # the newest one is open
                await streamwrite.LiveFile.open(path / UNPARTITIONED / "seg-000004")

    _run(go)
    segments = _record(path).partitions[UNPARTITIONED]
    assert [s.name for s in segments] == [f"seg-{n:06d}" for n in range(5)]
    assert streamwrite.read_table(path).equals(TABLE.slice(0, 1400))
    for segment in segments:
        directory = path / UNPARTITIONED / segment.name
        md = pq.ParquetFile(pa.BufferReader((directory / "data.parquet").read_bytes())).metadata
        assert md.num_row_groups == (2 if segment is segments[-1] else 3)
        assert (directory / "data.parquet").stat().st_size == segment.size  # sealed: untouched
    snapshot = read_snapshot(path)
    assert [name for name, _ in snapshot.files] == [f"{UNPARTITIONED}/{s.name}" for s in segments]


def test_a_commit_spanning_two_segments_rolls_back_whole(tmp_path: Path) -> None:
    """The _txn publish fails after a commit wrote the end of one segment and the start of
    the next: reopening rolls the first back and deletes the second."""
    path = tmp_path / "t"

    async def go(monkeypatch: pytest.MonkeyPatch) -> None:
        table = await open_table(path, TABLE.schema, row_group_size=100, segment_row_groups=2)
        await table.append(TABLE.slice(0, 100), app_id="a", batch_id=0)
        published = _record(path)

        def fail(*args: Any) -> None:
            raise StreamwriteIOError("injected: the _txn publish failed")

        monkeypatch.setattr(table_core, "write_txn", fail)
        with pytest.raises(StreamwriteIOError, match="injected"):
            await table.append(TABLE.slice(100, 200), app_id="a", batch_id=1)
        monkeypatch.undo()
        assert (path / UNPARTITIONED / "seg-000001" / "data.parquet").exists()
        await table.close()
        reopened = await open_table(path)
        assert _record(path) == published
        assert not (path / UNPARTITIONED / "seg-000001").exists()
        commit = await reopened.append(TABLE.slice(100, 200), app_id="a", batch_id=1)
        assert commit is not None and not commit.skipped
        await reopened.close()

    with pytest.MonkeyPatch.context() as monkeypatch:
        _run(go, monkeypatch)
    assert streamwrite.read_table(path).equals(TABLE.slice(0, 300))


def test_one_writer_per_table(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def go() -> None:
        table = await open_table(path, TABLE.schema)
        with pytest.raises(StreamwriteIOError, match="open for writing elsewhere"):
            await open_table(path)
        await table.close()
        again = await open_table(path)  # the lock went with close()
        await again.close()

    _run(go)


def test_segment_row_groups_is_checked(tmp_path: Path) -> None:
    for bad in (0, 32768):
        with pytest.raises(ConfigError, match="segment_row_groups"):
            _run(open_table, tmp_path / "t", TABLE.schema, segment_row_groups=bad)


def test_snapshot_pins_until_released(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def go() -> None:
        async with await open_table(path, TABLE.schema, segment_row_groups=1) as table:
            await table.append(TABLE.slice(0, 10), app_id="a", batch_id=0)
            with table.snapshot() as snapshot:
                assert table.pins.is_pinned(f"{UNPARTITIONED}/seg-000000")
                await table.append(TABLE.slice(10, 10), app_id="a", batch_id=1)
                assert snapshot.read().equals(TABLE.slice(0, 10))
                assert not table.pins.is_pinned(f"{UNPARTITIONED}/seg-000001")
            assert not table.pins.is_pinned(f"{UNPARTITIONED}/seg-000000")
            dropped = table.snapshot()
            assert table.pins.is_pinned(f"{UNPARTITIONED}/seg-000001")
            del dropped  # garbage collection releases too
            assert not table.pins.is_pinned(f"{UNPARTITIONED}/seg-000001")

    _run(go)
    assert [s.name for s in _record(path).partitions[UNPARTITIONED]] == ["seg-000000", "seg-000001"]


def test_a_second_writer_waits_for_the_lock_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def go() -> None:
        table = await open_table(path, TABLE.schema)
        async with anyio.create_task_group() as tg:

            async def later_close() -> None:
                await anyio.sleep(0.3)  # the behaviour under test: the second open waits this long
                await table.close()

            tg.start_soon(later_close)
            started = anyio.current_time()
            waiting = await open_table(path, lock_timeout=10)
            assert anyio.current_time() - started >= 0.25
            await waiting.close()
        with pytest.raises(ConfigError, match="lock_timeout"):
            await open_table(path, lock_timeout=-1)

    _run(go)


def test_background_commits_lagging_behind_a_roll_over(tmp_path: Path) -> None:
    """Regression: a unit holding a segment's first row group committed after the next
    row group had rolled the partition over, closed the segment while the unit holding its
    second row group was still queued ("The live file ... is closed")."""
    path = tmp_path / "t"

    async def go() -> None:
        async with await open_table(
            path,
            TABLE.schema,
            segment_row_groups=2,
            row_group_size=100,
            commit_rows=100,
            compaction_interval=None,
        ) as table:
            for i in range(40):
                await table.append(TABLE.slice(i * 50, 50))

    _run(go)
    assert streamwrite.read_table(path).equals(TABLE.slice(0, 2000))
    assert len(_record(path).partitions[UNPARTITIONED]) == 10


def test_reopening_opens_no_segment_until_its_partition_is_written(tmp_path: Path) -> None:
    """A table of many partitions opens no file per partition; the first append to one
    continues its newest segment."""
    path = tmp_path / "t"
    day_ns = 86_400 * 10**9
    ts = pa.array(np.arange(200, dtype=np.int64) * day_ns, pa.timestamp("ns"))  # 200 days
    data = TABLE.slice(0, 200).set_column(0, "ts", ts)

    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    async def go() -> None:
        options: dict[str, Any] = {"compaction_interval": None}
        async with await open_table(
            path, data.schema, timestamp="ts", partition_by="day", **options
        ) as table:
            await table.append(data, app_id="a", batch_id=0)
        before = open_fds()
        table = await open_table(path, **options)
        assert open_fds() - before <= 3  # the lock (and a moment's file), not 2 per partition
        await table.append(data.slice(5, 1), app_id="a", batch_id=1)
        assert [s.name for s in table.record.partitions["ts_day=1970-01-06"]] == ["seg-000000"]
        await table.close()

    _run(go)
    got = streamwrite.read_table(path)
    assert got.num_rows == 201
    assert streamwrite.read_table(path / "ts_day=1970-01-06" / "seg-000000").num_rows == 2


def test_reading_a_partition_directory_says_to_read_the_table(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def go() -> None:
        async with await open_table(path, TABLE.schema, compaction_interval=None) as table:
            await table.append(TABLE.slice(0, 10), app_id="a", batch_id=0)

    _run(go)
    with pytest.raises(ConfigError, match="partition of a table"):
        streamwrite.read_table(path / UNPARTITIONED)
    assert streamwrite.read_table(path / UNPARTITIONED / "seg-000000").num_rows == 10
