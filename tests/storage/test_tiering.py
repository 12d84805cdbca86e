"""Tiering against a real S3-compatible server (moto over HTTP, s3fs): ``open_table(...,
cold_storage=)``, ``Table.tier()``, what the bucket holds, recovery on open, retention, and
the error cases."""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
import xxhash

import streamwrite
from streamwrite.errors import ConfigError, StateError, StreamwriteIOError
from streamwrite.format.txn import (
    DATA_FILE,
    RETIRED_DATA_FILE,
    TXN_LOG_DIR,
    cold_object_key,
    decode_txn_payload,
    txn_log_name,
)
from streamwrite.io.remote import open_store
from streamwrite.layout.tiering import MOVE_STEPS, OWNER_FILE
from streamwrite.table.api import open_table
from tests.storage._tiering_support import (
    SCHEMA,
    TABLE_OPTIONS,
    make_batch,
    read_record,
    read_rows,
    segment_bytes,
)

T = TypeVar("T")


def run(fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
    return anyio.run(functools.partial(fn, *args, **kwargs))


def _url(bucket: str) -> str:
    return f"s3://{bucket}/tables/ticks"


async def _ingest(
    directory: Path, url: str | None, options: dict[str, Any] | None, num_batches: int, **extra: Any
) -> None:
    table = await open_table(
        directory,
        SCHEMA,
        cold_storage=url,
        storage_options=options,
        **{**TABLE_OPTIONS, **extra},
    )
    try:
        start = table.record.applied.get("t", -1) + 1
        for k in range(start, start + num_batches):
            await table.append(make_batch(k * 100, 100), app_id="t", batch_id=k)
            await table.flush()
    finally:
        await table.close()


def test_tier_moves_settled_segments_and_publishes_the_log(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    url = _url(bucket)
    store = open_store(url, storage_options)
    run(_ingest, tmp_path, url, storage_options, 3)
    reference = read_rows(tmp_path, store)
    assert reference.num_rows == 300
    before = read_record(tmp_path)
    local_bytes = {
        f"{p}/{s.name}": segment_bytes(tmp_path, store, p, s)
        for p, segments in before.partitions.items()
        for s in segments
    }

    async def tier() -> list[str]:
        table = await open_table(
            tmp_path, cold_storage=url, storage_options=storage_options, **TABLE_OPTIONS
        )
        try:
            return await table.tier()
        finally:
            await table.close()

    moved = run(tier)
    record = read_record(tmp_path)
    # every segment moved: all were sealed and the partitions idle (cold_after=0)
    assert sorted(moved) == sorted(local_bytes)
    assert record.cold == url
    for path, data in local_bytes.items():
        partition, _, name = path.partition("/")
        segment = next(s for s in record.partitions[partition] if s.name == name)
        assert segment.is_cold and segment.size == len(data)
        assert segment.object_xxh64 == xxhash.xxh64(data).intdigest()
        assert store.read_all(cold_object_key(path)) == data
        assert not (tmp_path / path).exists()  # retired, then swept (grace 0)
    assert record.retired == ()
    # the bucket's newest log object is the cold view of the newest version that changed it
    logs = store.list(TXN_LOG_DIR)
    assert logs == [txn_log_name(record.version - 1)] or logs == [txn_log_name(record.version)]
    view = decode_txn_payload(store.read_all(logs[-1]))
    assert view.partitions == record.cold_view().partitions
    assert view.cold == url
    assert read_rows(tmp_path, store).equals(reference)


def test_appends_after_tiering_start_new_segments(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    url = _url(bucket)
    store = open_store(url, storage_options)

    async def main() -> None:
        table = await open_table(
            tmp_path, SCHEMA, cold_storage=url, storage_options=storage_options, **TABLE_OPTIONS
        )
        try:
            await table.append(make_batch(0, 100))
            await table.flush()
            moved = await table.tier()
            assert len(moved) == 2  # two days, a row group of 50 each: one segment each
            await table.append(make_batch(100, 100))  # the newest segments are cold: new ones
            await table.flush()
            await table.compact()  # compaction leaves cold segments alone
            assert await table.tier() != []
            await table.append(make_batch(200, 100))
        finally:
            await table.close()
        table = await open_table(
            tmp_path, cold_storage=url, storage_options=storage_options, **TABLE_OPTIONS
        )
        try:
            await table.append(make_batch(300, 100))
        finally:
            await table.close()

    run(main)
    rows = read_rows(tmp_path, store)
    assert rows.column("id").to_pylist() == list(range(400))
    record = read_record(tmp_path)
    for segments in record.partitions.values():
        flags = [s.is_cold for s in segments]
        assert flags == sorted(flags, reverse=True)  # the cold ones lead


def test_a_snapshot_pinned_before_the_move_reads_the_retired_local_copy(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    url = _url(bucket)

    async def main() -> None:
        table = await open_table(
            tmp_path, SCHEMA, cold_storage=url, storage_options=storage_options, **TABLE_OPTIONS
        )
        try:
            await table.append(make_batch(0, 100))
            await table.flush()
            with table.snapshot() as snapshot:
                expected = snapshot.read()
                moved = await table.tier()
                assert moved
                for path in moved:  # pinned: retired, not swept
                    assert (tmp_path / path / RETIRED_DATA_FILE).exists()
                    assert not (tmp_path / path / DATA_FILE).exists()
                assert snapshot.read().equals(expected)
            await table.sweep_retired(0)
            assert all(not (tmp_path / path).exists() for path in moved)
        finally:
            await table.close()

    run(main)


def test_recovery_on_open_deletes_orphans_and_puts_a_missing_log(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    url = _url(bucket)
    store = open_store(url, storage_options)
    run(_ingest, tmp_path, url, storage_options, 2)

    async def tier_one() -> list[str]:
        table = await open_table(
            tmp_path, cold_storage=url, storage_options=storage_options, **TABLE_OPTIONS
        )
        try:
            return await table.tier()
        finally:
            await table.close()

    moved = run(tier_one)
    record = read_record(tmp_path)
    # as a crash would leave it: an upload never published, the newest log object lost
    orphan = cold_object_key("ts_day=2026-01-01/seg-000099")
    store.put_if_absent(orphan, b"not published")
    store.put_if_absent("notes/readme.txt", b"not ours")
    for key in store.list(TXN_LOG_DIR):
        store.delete([key])

    async def reopen() -> None:
        table = await open_table(
            tmp_path, cold_storage=url, storage_options=storage_options, **TABLE_OPTIONS
        )
        await table.close()

    run(reopen)
    assert store.size(orphan) is None
    assert store.size("notes/readme.txt") == len(b"not ours")
    assert store.list(TXN_LOG_DIR) == [txn_log_name(record.version)]
    view = decode_txn_payload(store.read_all(txn_log_name(record.version)))
    assert sorted(f"{p}/{s.name}" for p, ss in view.partitions.items() for s in ss) == sorted(moved)


def test_old_log_objects_expire_after_the_grace_period(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    url = _url(bucket)
    store = open_store(url, storage_options)

    async def main() -> None:
        table = await open_table(
            tmp_path, SCHEMA, cold_storage=url, storage_options=storage_options, **TABLE_OPTIONS
        )
        try:
            for k in range(3):
                await table.append(make_batch(k * 100, 100, num_days=1))
                await table.flush()
                await table.tier()
            # grace 0: every superseded log object is gone, the newest stays
            assert store.list(TXN_LOG_DIR) == [max(store.list(TXN_LOG_DIR))]
        finally:
            await table.close()

    run(main)


def test_background_tiering_inside_async_with(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    url = _url(bucket)
    store = open_store(url, storage_options)

    async def main() -> None:
        options = {**TABLE_OPTIONS, "compaction_interval": 0.1}
        async with await open_table(
            tmp_path, SCHEMA, cold_storage=url, storage_options=storage_options, **options
        ) as table:
            await table.append(make_batch(0, 100))
            await table.flush()
            with anyio.fail_after(20):
                while not all(s.is_cold for ss in table.record.partitions.values() for s in ss):
                    await anyio.sleep(0.05)
            assert table.last_tiering_error is None

    run(main)
    assert read_rows(tmp_path, store).column("id").to_pylist() == list(range(100))


def test_cold_after_keeps_young_segments_local(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    url = _url(bucket)

    async def main() -> None:
        options = {**TABLE_OPTIONS, "cold_after": 3600.0}
        table = await open_table(
            tmp_path, SCHEMA, cold_storage=url, storage_options=storage_options, **options
        )
        try:
            await table.append(make_batch(0, 200))  # two segments a day
            await table.flush()
            assert await table.tier() == []
            # a sealed segment last written two hours ago is due (the newest is not: its
            # partition was not idle for cold_after)
            for partition, segments in table.record.partitions.items():
                assert len(segments) == 2
                for segment in segments:
                    data = tmp_path / partition / segment.name / DATA_FILE
                    old = data.stat().st_mtime - 7200
                    os.utime(data, (old, old))
            moved = await table.tier()
            assert sorted(moved) == sorted(
                f"{p}/{ss[0].name}" for p, ss in table.record.partitions.items()
            )
        finally:
            await table.close()

    run(main)


def test_the_steps_of_a_move_in_order(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    url = _url(bucket)
    seen: list[str] = []

    async def main() -> None:
        table = await open_table(
            tmp_path, SCHEMA, cold_storage=url, storage_options=storage_options, **TABLE_OPTIONS
        )
        try:
            await table.append(make_batch(0, 50, num_days=1))
            await table.flush()
            assert len(await table.tier(hook=seen.append)) == 1
        finally:
            await table.close()

    run(main)
    assert tuple(seen) == MOVE_STEPS


# -- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"cold_storage": "nosuchscheme://b/p"}, "No fsspec filesystem"),
        ({"cold_storage": ""}, "URL string"),
        ({"cold_storage": 42}, "URL string"),
        ({"cold_storage": "s3://user:hunter2@bucket/p"}, "carries credentials"),
        ({"storage_options": {"key": "k"}}, "without cold_storage"),
        ({"cold_storage": "s3://b/p", "storage_options": ["key"]}, "mapping"),
        ({"cold_after": -1}, "cold_after"),
        ({"cold_after": float("nan")}, "cold_after"),
        ({"cold_after": True}, "cold_after"),
        ({"cold_after": "1"}, "cold_after"),
    ],
)
def test_bad_cold_storage_arguments_are_config_errors(
    tmp_path: Path, kwargs: dict[str, Any], match: str
) -> None:
    options = {**TABLE_OPTIONS, **kwargs}
    with pytest.raises(ConfigError, match=match) as info:
        run(open_table, tmp_path / "t", SCHEMA, **options)
    assert "hunter2" not in str(info.value)
    assert not (tmp_path / "t").exists()  # nothing was created


def test_another_cold_root_is_a_config_error(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    url = _url(bucket)
    run(_ingest, tmp_path, url, storage_options, 1)
    run(_tier_all, tmp_path, url, storage_options)
    with pytest.raises(ConfigError, match="keeps its cold segments in"):
        run(
            open_table,
            tmp_path,
            cold_storage=f"s3://{bucket}/elsewhere",
            storage_options=storage_options,
            **TABLE_OPTIONS,
        )
    # reopening without cold storage works (no tiering); the cold root stays recorded
    table = run(open_table, tmp_path, **{**TABLE_OPTIONS, "cold_after": 0})
    with pytest.raises(ConfigError, match="no cold storage"):
        run(table.tier)
    run(table.close)
    assert read_record(tmp_path).cold == url


async def _tier_all(directory: Path, url: str, options: dict[str, Any]) -> list[str]:
    table = await open_table(directory, cold_storage=url, storage_options=options, **TABLE_OPTIONS)
    try:
        return await table.tier()
    finally:
        await table.close()


def test_an_unreachable_store_loses_nothing(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    url = _url(bucket)
    good = open_store(url, storage_options)
    run(_ingest, tmp_path, url, storage_options, 2)
    reference = read_rows(tmp_path, good)
    dead = {
        **storage_options,
        "client_kwargs": {**storage_options["client_kwargs"], "endpoint_url": "http://127.0.0.1:9"},
        "config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 1},
    }

    async def main() -> None:
        table = await open_table(tmp_path, cold_storage=url, storage_options=dead, **TABLE_OPTIONS)
        try:  # opens (its hot path needs no store); the recovery failure is kept
            assert isinstance(table.last_tiering_error, StreamwriteIOError)
            with pytest.raises(StreamwriteIOError, match="Cannot"):
                await table.tier()
            assert table.is_open
            await table.append(make_batch(1000, 10))  # appends go on
        finally:
            await table.close()

    run(main)
    record = read_record(tmp_path)
    assert not any(s.is_cold for ss in record.partitions.values() for s in ss)
    rows = read_rows(tmp_path, good)
    assert rows.num_rows == reference.num_rows + 10
    # the store back: the next open tiers as usual
    assert run(_tier_all, tmp_path, url, storage_options)
    assert read_rows(tmp_path, good).equals(rows)


def test_a_log_of_another_writer_is_a_state_error(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    url = _url(bucket)
    store = open_store(url, storage_options)
    run(_ingest, tmp_path, url, storage_options, 1)
    run(_tier_all, tmp_path, url, storage_options)
    record = read_record(tmp_path)
    store.put_if_absent(txn_log_name(record.version + 5), b"{}")
    with pytest.raises(StateError, match="another table or writer"):
        run(_tier_all, tmp_path, url, storage_options)
    # the table itself is untouched and opens without cold storage
    assert read_record(tmp_path) == record


def test_public_api_reaches_tiering(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    url = _url(bucket)

    async def main() -> None:
        table = await streamwrite.open_table(
            tmp_path, SCHEMA, cold_storage=url, storage_options=storage_options, **TABLE_OPTIONS
        )
        try:
            await table.append(make_batch(0, 10, num_days=1))
            await table.flush()
            assert await table.tier() == [
                f"ts_day=2026-01-01/{table.record.partitions['ts_day=2026-01-01'][0].name}"
            ]
        finally:
            await table.close()

    run(main)


def test_two_tables_never_share_a_cold_root(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    url = _url(bucket)
    store = open_store(url, storage_options)
    first, second = tmp_path / "first", tmp_path / "second"
    run(_ingest, first, url, storage_options, 2)
    assert run(_tier_all, first, url, storage_options)
    keys = store.list("")
    objects = {key: store.read_all(key) for key in keys}
    # a second table given the same root by mistake: refused before anything is touched,
    # although its segments have the same names (its uploads would replace the first's)
    run(_ingest, second, None, None, 1)
    with pytest.raises(StateError, match="belongs to another table"):
        run(open_table, second, cold_storage=url, storage_options=storage_options, **TABLE_OPTIONS)
    with pytest.raises(StateError, match="belongs to another table"):
        run(_ingest, tmp_path / "third", url, storage_options, 1)
    assert {key: store.read_all(key) for key in store.list("")} == objects
    assert read_record(second).cold is None
    # the first table keeps working; one that lost its owner file adopts its own root's marker
    (first / OWNER_FILE).unlink()
    run(_ingest, first, url, storage_options, 1)
    assert run(_tier_all, first, url, storage_options)
    assert read_rows(first, store).num_rows == 300


def test_a_local_directory_as_cold_storage(tmp_path: Path) -> None:
    root = tmp_path / "cold"
    table_dir = tmp_path / "table"
    url = f"file://{root}"
    store = open_store(url)
    run(_ingest, table_dir, url, None, 2)
    reference = read_rows(table_dir, store)
    moved = run(_tier_all, table_dir, url, {})
    assert moved
    record = read_record(table_dir)
    assert record.cold == url
    for path in moved:
        assert (root / path / DATA_FILE).is_file()
    newest = sorted((root / TXN_LOG_DIR).iterdir())[-1]
    assert decode_txn_payload(newest.read_bytes()).partitions == record.cold_view().partitions
    assert read_rows(table_dir, store).equals(reference)
    # engines listing the root see exactly the cold segments
    listed = sorted(str(p.relative_to(root)) for p in root.rglob("*.parquet"))
    assert listed == sorted(f"{path}/{DATA_FILE}" for path in moved)
