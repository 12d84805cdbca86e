"""Local tables whose sealed segments live in cold storage (issue 16): every reader of a
snapshot opens segments through ``TableSnapshot.open_segment``, local or cold (a moto S3
server over HTTP), and reads what it read before the segments moved."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

import streamwrite
from streamwrite.errors import ChecksumError, ConfigError, CorruptFileError, StateError
from streamwrite.format.txn import cold_object_key
from streamwrite.io.remote import RANGE_CACHE, RangeSource, open_store
from streamwrite.table.state import read_snapshot
from tests.storage._cold_tables import tick_rows, tier_by_hand, write_table


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """6 commits over two day partitions, segments of 2 row groups (3 per partition)."""
    path = tmp_path / "t"
    write_table(path, [tick_rows(400, 400 * i) for i in range(6)], segment_row_groups=2)
    return path


def _every_other(path: Path) -> list[str]:
    return [name for name, _ in read_snapshot(path).files][::2]


def test_a_table_with_cold_segments_reads_as_before_they_moved(
    table: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    want = streamwrite.read_table(table)
    cold = _every_other(table)
    url = f"s3://{bucket}/cold"
    record = tier_by_hand(table, url, storage_options, cold)
    assert record.cold == url
    assert all(not (table / name).exists() for name in cold)  # only the cold copy is left
    got = streamwrite.read_table(table, storage_options=storage_options)
    assert got.equals(want)
    columns = ["order_id", "price"]
    assert streamwrite.read_table(table, columns=columns, storage_options=storage_options).equals(
        want.select(columns)
    )
    filters = [("symbol", "in", ["SYM000", "SYM003"]), ("qty", ">", 500)]
    expected = want.filter(
        (pc.field("symbol").isin(["SYM000", "SYM003"])) & (pc.field("qty") > 500)
    )
    assert streamwrite.read_table(table, filters=filters, storage_options=storage_options).equals(
        expected
    )


def test_open_segment_opens_local_and_cold_segments(
    table: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    cold = set(_every_other(table))
    url = f"s3://{bucket}/cold"
    tier_by_hand(table, url, storage_options, cold)
    snapshot = read_snapshot(table, storage_options=storage_options)
    assert snapshot.url is None and snapshot._cold_store() == open_store(url, storage_options)
    for name, size in snapshot.files:
        with snapshot.open_segment(name, size) as segment:
            source = segment._source._ranged
            assert isinstance(source, RangeSource) == (name in cold)
            assert segment.metadata.num_rows > 0
        location = snapshot.segment_location(name)
        if name in cold:
            assert location == f"{url}/{cold_object_key(name)}"
        else:
            assert location == str(table / name / "data.parquet")
    assert [location for location, _ in snapshot.files()] == [
        snapshot.segment_location(name) for name, _ in snapshot.files
    ]
    with pytest.raises(StateError, match="cold storage"):
        snapshot.data_files()


def test_a_snapshot_taken_before_tiering_reads_segments_moved_since(
    table: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    """A pinned version lists a segment as local; tiering moved it and deleted the local copy
    (after its grace period): the reader finds it in cold storage through the newest _txn."""
    before = read_snapshot(table, storage_options=storage_options)
    want = before.read()
    tier_by_hand(table, f"s3://{bucket}/cold", storage_options)
    assert not any((table / name).exists() for name, _ in before.files)
    assert before.record is not None and before.record.cold is None
    assert before.read().equals(want)
    assert before.read(filters=[("qty", "<", 100)]).equals(want.filter(pc.field("qty") < 100))


def test_a_local_snapshot_with_cold_segments_pickles_without_its_pin(
    table: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    tier_by_hand(table, f"s3://{bucket}/cold", storage_options, _every_other(table))
    snapshot = read_snapshot(table, storage_options=storage_options)
    assert snapshot._cold_store() is not None  # made lazily: not pickled as a client
    again = pickle.loads(pickle.dumps(snapshot))
    assert again == snapshot and again.record == snapshot.record
    assert again.storage_options == storage_options
    assert again.read().equals(snapshot.read())


def test_pruning_reads_only_the_footers_of_cold_segments(
    table: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    url = f"s3://{bucket}/cold"
    tier_by_hand(table, url, storage_options)
    snapshot = read_snapshot(table, storage_options=storage_options)
    stats = open_store(url, storage_options).stats
    RANGE_CACHE.clear()
    stats.reset()
    plan = snapshot.plan([("order_id", "==", "no such order")])
    assert plan.num_segments_read == 0 and plan.segments_skipped == {"footer": 6}
    sizes = [size for _, size in snapshot.files]
    assert stats.num_requests == len(sizes)  # one tail request per segment
    assert stats.num_bytes <= sum(min(size, 64 * 1024) for size in sizes)


def test_the_skipping_store_prunes_cold_segments_of_a_local_table(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    path = tmp_path / "t"
    write_table(
        path,
        [tick_rows(400, 400 * i) for i in range(6)],
        segment_row_groups=2,
        skipping={"qty": ["minmax"]},
    )
    url = f"s3://{bucket}/cold"
    tier_by_hand(path, url, storage_options)
    snapshot = read_snapshot(path, storage_options=storage_options)
    stats = open_store(url, storage_options).stats
    RANGE_CACHE.clear()
    stats.reset()
    plan = snapshot.plan([("qty", ">", 5000)])
    assert plan.num_segments_read == 0
    assert plan.segments_skipped.get("store", 0) >= 1
    assert stats.num_requests == plan.segments_skipped.get("footer", 0)


def test_pyarrow_reads_a_local_table_with_cold_segments_through_the_snapshot_filesystem(
    table: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    want = streamwrite.read_table(table).sort_by("order_id")
    tier_by_hand(table, f"s3://{bucket}/cold", storage_options, _every_other(table))
    with streamwrite.snapshot_filesystem(table, storage_options=storage_options) as fs:
        got = ds.dataset("/", filesystem=fs, format="parquet").to_table().sort_by("order_id")
        keys = {fs.ukey(name) for name in fs.find("/")}
    assert got.select(want.column_names).equals(want)
    assert sum(key.startswith("s3://") for key in keys) == 3  # the cold ones, by URL


def test_a_cold_segment_whose_footer_is_not_the_recorded_one_is_refused(
    table: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    url = f"s3://{bucket}/cold"
    name = _every_other(table)[0]
    tier_by_hand(table, url, storage_options, [name])
    store = open_store(url, storage_options)
    key = cold_object_key(name)
    data = bytearray(store.read_all(key))
    data[-12] ^= 0x01
    store.delete([key])
    assert store.put_if_absent(key, bytes(data))
    RANGE_CACHE.clear()
    with pytest.raises(ChecksumError, match="_txn recorded"):
        streamwrite.read_table(table, storage_options=storage_options)


def test_storage_options_where_they_do_not_apply_are_refused(tmp_path: Path) -> None:
    data = tmp_path / "plain.parquet"
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": [1]}), data)
    with pytest.raises(ConfigError, match="storage_options"):
        streamwrite.read_table(data, storage_options={"anon": True})
    with pytest.raises(ConfigError, match="snapshot="):
        streamwrite.read_table("s3://bucket/t", snapshot=100)


def test_a_missing_local_segment_is_still_damage(table: Path) -> None:
    import shutil

    name, _ = read_snapshot(table).files[0]
    shutil.rmtree(table / name)
    with pytest.raises(CorruptFileError, match="committed data is gone"):
        streamwrite.read_table(table)


NO_COMPACTION = streamwrite.CompactionPolicy(min_small_row_groups=10**6, grace_seconds=0.0)
"""Compaction never merges (every settled segment may move); retired copies go at once."""


async def _tiered_table(path: Path, url: str, options: dict[str, Any] | None) -> dict[str, Any]:
    """Six commits, ``table.tier()``, the local copies swept; what the writer saw."""
    async with await streamwrite.open_table(
        path,
        tick_rows(1).schema,
        timestamp="ts",
        partition_by="day",
        segment_row_groups=1,
        commit_interval=None,
        compaction=NO_COMPACTION,
        compaction_interval=None,
        cold_storage=url,
        storage_options=options,
        cold_after=0.0,
    ) as table:
        for i in range(6):
            await table.append(tick_rows(300, 300 * i), app_id="w", batch_id=i)
        with table.snapshot() as before:
            want = before.read()
        moved = await table.tier()
        await table.sweep_retired()
        with table.snapshot() as after:
            got = after.read()
            cold = [
                name
                for name, _ in after.files
                if after.segment_location(name) != str(path / name / "data.parquet")
            ]
            filtered = after.read(filters=[("qty", "<", 100)])
        return {"want": want, "got": got, "moved": moved, "cold": cold, "filtered": filtered}


def test_table_snapshot_reads_the_segments_tier_moved(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    path = tmp_path / "t"
    url = f"s3://{bucket}/cold"
    seen = anyio.run(_tiered_table, path, url, storage_options)
    assert seen["moved"] and sorted(seen["cold"]) == sorted(seen["moved"])
    assert not any((path / name).exists() for name in seen["moved"])  # swept locally
    assert seen["got"].equals(seen["want"])
    assert seen["filtered"].equals(seen["want"].filter(pc.field("qty") < 100))
    after_close = streamwrite.read_table(path, storage_options=storage_options)
    assert after_close.equals(seen["want"])
    by_url = streamwrite.read_table(url, storage_options=storage_options)
    cold_rows = pa.concat_tables(
        [
            read_snapshot(path, storage_options=storage_options).open_segment(n, s).read()
            for n, s in read_snapshot(path).files
            if n in seen["moved"]
        ]
    )
    assert by_url.sort_by("order_id").equals(cold_rows.sort_by("order_id"))


def test_a_table_url_of_a_local_directory_reads_as_any_fsspec_url(tmp_path: Path) -> None:
    path = tmp_path / "t"
    root = tmp_path / "cold"
    url = f"file://{root}"
    seen = anyio.run(_tiered_table, path, url, None)
    assert seen["moved"]
    by_url = streamwrite.read_table(url)
    assert by_url.num_rows == sum(
        read_snapshot(url).open_segment(n, s).metadata.num_rows for n, s in read_snapshot(url).files
    )
    assert set(by_url.column("order_id").to_pylist()) <= set(
        seen["want"].column("order_id").to_pylist()
    )
    assert streamwrite.read_table(path).equals(seen["want"])  # no options needed for file://
