"""Idempotent appends: ``Table.append(..., dedup_key=)`` and the table's dedup log.

A key committed within ``dedup_window`` seconds makes a later append with the same key write
nothing (``skipped=True``); a key in flight makes it follow that append; the same key twice in
one group commit is written once; the keys survive a reopen and a crash (the log is cut to the
size ``_txn`` records); the log rotates; past the window a key is written again.
"""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.errors import ConfigError, CorruptFileError, StateError, StreamwriteIOError
from streamwrite.format.dedup import DEDUP_HEADER, decode_dedup_log
from streamwrite.format.txn import TXN_FILE, encode_txn_payload
from streamwrite.io.txn import read_txn
from streamwrite.live.file import LiveFile
from streamwrite.table import dedup as dedup_module
from streamwrite.table.api import CommitTicket, open_table
from streamwrite.table.dedup import DedupLogFile
from streamwrite.testing import reference_table

ROWS = reference_table(2_000)


def _run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return anyio.run(functools.partial(fn, *args, **kwargs))


def _open(path: Path, **kwargs: Any) -> Any:
    kwargs.setdefault("compaction_interval", None)
    kwargs.setdefault("commit_interval", None)
    return open_table(path, ROWS.schema, **kwargs)


def key(n: int, size: int = 16) -> bytes:
    return n.to_bytes(8, "little") * (size // 8) + bytes(size % 8)


def logs(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir() if p.name.startswith("_dedup"))


def logged_keys(path: Path) -> list[bytes]:
    """Every key of the committed dedup log, in order (repeats kept)."""
    record = read_txn(path)
    assert record.dedup is not None
    data = (path / record.dedup.name).read_bytes()[: record.dedup.size]
    return [k for r in decode_dedup_log(data, "test") for k in r.split()]


def test_a_key_committed_within_the_window_writes_nothing(tmp_path: Path) -> None:
    async def scenario() -> None:
        table = await _open(tmp_path / "t")
        first = await table.append(ROWS.slice(0, 10), dedup_key=key(1), wait=False)
        commit = await first.durable()
        assert not commit.skipped and commit.version == 1
        again = await table.append(ROWS.slice(0, 10), dedup_key=key(1), wait=False)
        assert again.done, "a committed key resolves at once"
        retried = await again.durable()
        assert retried.skipped and retried.num_rows == 0 and retried.version == 1
        # wait=True returns the skipped commit at once
        waited = await table.append(ROWS.slice(0, 10), dedup_key=key(1))
        assert waited is not None and waited.skipped
        other = await table.append(ROWS.slice(10, 5), dedup_key=key(2), wait=False)
        assert not (await other.durable()).skipped
        assert table.metrics.appends_deduplicated == 2
        assert table.version == 2
        await table.close()

    _run(scenario)
    assert streamwrite.read_table(tmp_path / "t").equals(ROWS.slice(0, 15))
    assert logged_keys(tmp_path / "t") == [key(1), key(2)]


def test_a_key_past_the_window_is_written_again(tmp_path: Path) -> None:
    async def scenario() -> None:
        table = await _open(tmp_path / "t", dedup_window=0.3)
        assert not (
            await (await table.append(ROWS.slice(0, 10), dedup_key=key(1), wait=False)).durable()
        ).skipped
        skipped = await (
            await table.append(ROWS.slice(0, 10), dedup_key=key(1), wait=False)
        ).durable()
        assert skipped.skipped
        await anyio.sleep(0.4)
        again = await (
            await table.append(ROWS.slice(0, 10), dedup_key=key(1), wait=False)
        ).durable()
        assert not again.skipped, "a key past the window is written again"
        await table.close()

    _run(scenario)
    back = streamwrite.read_table(tmp_path / "t")
    assert back.equals(pa.concat_tables([ROWS.slice(0, 10)] * 2))
    assert logged_keys(tmp_path / "t") == [key(1), key(1)]


def test_a_key_in_flight_follows_its_ticket(tmp_path: Path) -> None:
    async def scenario() -> None:
        table = await _open(tmp_path / "t")
        first = await table.append(ROWS.slice(0, 10), dedup_key=key(1), wait=False)
        follower = await table.append(ROWS.slice(0, 10), dedup_key=key(1), wait=False)
        assert not first.done and not follower.done
        assert (await follower.durable()).skipped  # it drives the commit of the first
        committed = await first.durable()
        assert not committed.skipped and committed.num_rows == 10
        await table.close()

    _run(scenario)
    assert streamwrite.read_table(tmp_path / "t").equals(ROWS.slice(0, 10))


def test_a_key_in_flight_follows_inside_async_with_and_fails_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        async with await _open(tmp_path / "t") as table:

            async def broken(*args: Any, **kwargs: Any) -> Any:  # injected: the disk is full
                raise StreamwriteIOError("injected: the disk is full")

            monkeypatch.setattr(LiveFile, "_write_encoded", broken)
            first = await table.append(ROWS.slice(0, 10), dedup_key=key(1), wait=False)
            follower = await table.append(ROWS.slice(0, 10), dedup_key=key(1), wait=False)
            with pytest.raises(StreamwriteIOError) as failed:
                await _flush_quietly(table, first)
            with pytest.raises(StreamwriteIOError) as followed:
                await follower.durable()
            assert followed.value is failed.value
            monkeypatch.undo()

    _run(scenario)
    assert streamwrite.read_table(tmp_path / "t").num_rows == 0


async def _flush_quietly(table: Any, ticket: CommitTicket) -> Any:
    """Ask for a commit and wait for ``ticket`` (flush raises the poisoning error too)."""
    with contextlib.suppress(StreamwriteIOError, StateError):
        await table.flush()
    return await ticket.durable()


def test_the_same_key_twice_in_one_group_commit_is_written_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        table = await _open(tmp_path / "t")
        tickets = [
            await table.append(ROWS.slice(k * 10, 10), dedup_key=key(k % 3), wait=False)
            for k in range(9)
        ]
        commit = await table.flush()
        assert commit is not None and commit.num_rows == 30 and table.metrics.commits == 1
        results = [await t.durable() for t in tickets]
        assert [r.skipped for r in results] == [False] * 3 + [True] * 6
        assert {r.version for r in results} == {1}
        await table.close()

    _run(scenario)
    assert streamwrite.read_table(tmp_path / "t").equals(ROWS.slice(0, 30))
    assert sorted(logged_keys(tmp_path / "t")) == sorted([key(0), key(1), key(2)])


def test_concurrent_retries_inside_async_with_write_each_key_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with await _open(tmp_path / "t", commit_interval=0.01) as table:

            async def client(n: int) -> None:
                for attempt in range(3):  # a retry after a lost answer, and one more
                    ticket = await table.append(
                        ROWS.slice(n * 10, 10), dedup_key=key(n), wait=False
                    )
                    commit = await ticket.durable()
                    assert commit.skipped == (attempt > 0) or attempt == 0

            async with anyio.create_task_group() as group:
                for n in range(40):
                    group.start_soon(client, n)
            assert table.metrics.appends_deduplicated == 80

    _run(scenario)
    back = streamwrite.read_table(tmp_path / "t").sort_by("order_id")
    assert back.equals(ROWS.slice(0, 400).sort_by("order_id"))


def test_reopening_keeps_the_keys_within_the_window(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def scenario() -> None:
        table = await _open(path)
        for n in range(5):
            await (
                await table.append(ROWS.slice(n * 10, 10), dedup_key=key(n), wait=False)
            ).durable()
        await table.close()
        table = await _open(path)
        assert table._dedup.window.num_keys == 5
        for n in range(5):
            ticket = await table.append(ROWS.slice(n * 10, 10), dedup_key=key(n), wait=False)
            assert ticket.done and (await ticket.durable()).skipped
        await table.close()
        # Reopened with a window the commits are older than: nothing is remembered.
        await anyio.sleep(0.05)
        table = await _open(path, dedup_window=0.01)
        assert table._dedup.window.num_keys == 0
        again = await table.append(ROWS.slice(0, 10), dedup_key=key(0), wait=False)
        assert not (await again.durable()).skipped
        await table.close()

    _run(scenario)
    expected = pa.concat_tables([ROWS.slice(0, 50), ROWS.slice(0, 10)])
    assert streamwrite.read_table(path).equals(expected)
    # Engines reading the directory never see the log (its name starts with "_").
    assert pq.read_table(path).num_rows == 60
    assert logs(path) == ["_dedup.1"]


def test_a_torn_log_tail_is_cut_on_open_and_its_keys_forgotten(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def scenario() -> None:
        table = await _open(path)
        await (await table.append(ROWS.slice(0, 10), dedup_key=key(1), wait=False)).durable()
        await table.close()

    _run(scenario)
    record = read_txn(path)
    assert record.dedup is not None
    committed = (path / record.dedup.name).read_bytes()
    assert len(committed) == record.dedup.size
    # A crash after the log's records were written and synced but before the _txn publish:
    # an unpublished record of key 2 (and a torn one) past the committed size.
    from streamwrite.format.dedup import encode_dedup_records

    tail = encode_dedup_records(record.version + 1, 0.0, [key(2)])
    (path / record.dedup.name).write_bytes(committed + tail + tail[:7])

    async def reopen() -> None:
        table = await _open(path)
        assert (path / record.dedup.name).stat().st_size == record.dedup.size, "tail not cut"
        assert table._dedup.window.num_keys == 1
        second = await table.append(ROWS.slice(10, 10), dedup_key=key(2), wait=False)
        assert not (await second.durable()).skipped, "an unpublished key was remembered"
        first = await table.append(ROWS.slice(0, 10), dedup_key=key(1), wait=False)
        assert (await first.durable()).skipped
        await table.close()

    _run(reopen)
    assert streamwrite.read_table(path).equals(ROWS.slice(0, 20))
    assert logged_keys(path) == [key(1), key(2)]


def test_a_failed_commit_poisons_and_its_key_is_not_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t"

    async def scenario() -> None:
        table = await _open(path)
        await (await table.append(ROWS.slice(0, 10), dedup_key=key(1), wait=False)).durable()
        original = DedupLogFile.sync_call

        def failing(self: DedupLogFile, write: Any) -> Any:
            what, run = original(self, write)

            def run_then_fail() -> None:
                run()  # the records are written and synced; the round fails after
                raise OSError(5, "injected: the disk failed")

            return what, run_then_fail

        monkeypatch.setattr(DedupLogFile, "sync_call", failing)
        ticket = await table.append(ROWS.slice(10, 10), dedup_key=key(2), wait=False)
        with pytest.raises(StreamwriteIOError):
            await ticket.durable()
        monkeypatch.undo()
        with pytest.raises(StateError):  # poisoned: a retry is refused, not skipped
            await table.append(ROWS.slice(10, 10), dedup_key=key(2), wait=False)
        await table.close()
        assert read_txn(path).version == 1
        table = await _open(path)
        retry = await table.append(ROWS.slice(10, 10), dedup_key=key(2), wait=False)
        assert not (await retry.durable()).skipped, "the key of a failed commit was remembered"
        await table.close()

    _run(scenario)
    assert streamwrite.read_table(path).equals(ROWS.slice(0, 20))
    assert logged_keys(path) == [key(1), key(2)]


def test_rotation_keeps_the_keys_within_the_window_and_deletes_the_old_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dedup_module, "ROTATE_SIZE", 600)
    path = tmp_path / "t"
    names: list[list[str]] = []

    async def scenario() -> None:
        table = await _open(path, dedup_window=1.5)
        for n in range(60):
            one = ROWS.slice(n, 1)
            await (await table.append(one, dedup_key=key(n, 8 + n % 3 * 8), wait=False)).durable()
            names.append(logs(path))
            if n in (19, 39):
                await anyio.sleep(1.6)  # the keys so far leave the window
        await table.close()
        table = await _open(path, dedup_window=1.5)
        # the last 20 keys are remembered after the reopen, the first ones are not
        assert (
            await (
                await table.append(ROWS.slice(59, 1), dedup_key=key(59, 8 + 59 % 3 * 8), wait=False)
            ).durable()
        ).skipped
        assert not (
            await (await table.append(ROWS.slice(0, 1), dedup_key=key(0, 8), wait=False)).durable()
        ).skipped
        await table.close()

    _run(scenario)
    assert all(len(n) == 1 for n in names), "an old log outlived its rotation"
    assert len({n[0] for n in names}) >= 2, "the log never rotated"
    record = read_txn(path)
    assert record.dedup is not None and record.dedup.size < 2_000
    assert streamwrite.read_table(path).equals(
        pa.concat_tables([ROWS.slice(0, 60), ROWS.slice(0, 1)])
    )


def test_logs_the_txn_does_not_name_are_deleted_on_open(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def scenario() -> None:
        table = await _open(path)
        await (await table.append(ROWS.slice(0, 10), dedup_key=key(1), wait=False)).durable()
        await table.close()
        # A rotation that crashed before its publish left its new log behind.
        (path / "_dedup.7").write_bytes(DEDUP_HEADER)
        table = await _open(path)
        assert logs(path) == ["_dedup.1"]
        assert (
            await (await table.append(ROWS.slice(0, 10), dedup_key=key(1), wait=False)).durable()
        ).skipped
        await table.close()

    _run(scenario)


def test_a_table_without_keys_has_no_log_and_its_txn_encodes_as_before(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def scenario() -> None:
        table = await _open(path)
        await table.append(ROWS.slice(0, 10), app_id="job", batch_id=0)
        await table.close()

    _run(scenario)
    record = read_txn(path)
    assert record.dedup is None and logs(path) == []
    assert b"dedup" not in encode_txn_payload(record)
    assert b"dedup" not in (path / TXN_FILE).read_bytes()


@pytest.mark.parametrize(
    "bad", [b"short", bytes(7), bytes(65), "a-string-key-of-16", bytearray(16), 12345678]
)
def test_a_bad_dedup_key_is_refused_and_nothing_buffered(tmp_path: Path, bad: Any) -> None:
    async def scenario() -> None:
        table = await _open(tmp_path / "t")
        with pytest.raises(ConfigError, match="dedup_key"):
            await table.append(ROWS.slice(0, 10), dedup_key=bad)
        assert table._machine.buffered_rows == 0
        await table.append(ROWS.slice(0, 1), dedup_key=bytes(8))
        await table.append(ROWS.slice(1, 1), dedup_key=bytes(64))
        await table.close()

    _run(scenario)
    assert streamwrite.read_table(tmp_path / "t").equals(ROWS.slice(0, 2))


def test_dedup_keys_and_batch_ids_are_not_combined(tmp_path: Path) -> None:
    async def scenario() -> None:
        table = await _open(tmp_path / "t")
        with pytest.raises(ConfigError, match="app_id"):
            await table.append(ROWS.slice(0, 10), app_id="job", batch_id=0, dedup_key=key(1))
        # both kinds side by side in one group commit
        a = await table.append(ROWS.slice(0, 10), app_id="job", batch_id=0, wait=False)
        b = await table.append(ROWS.slice(10, 10), dedup_key=key(1), wait=False)
        assert (await a.durable()).version == (await b.durable()).version == 1
        assert (await table.append(ROWS.slice(0, 10), app_id="job", batch_id=0)).skipped
        assert (await table.append(ROWS.slice(10, 10), dedup_key=key(1))).skipped
        await table.close()

    _run(scenario)
    assert streamwrite.read_table(tmp_path / "t").equals(ROWS.slice(0, 20))


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), True, "900"])
def test_a_bad_dedup_window_is_refused(tmp_path: Path, bad: Any) -> None:
    with pytest.raises(ConfigError, match="dedup_window"):
        _run(_open, tmp_path / "t", dedup_window=bad)
    assert not (tmp_path / "t").exists()


def test_a_zero_window_turns_deduplication_off(tmp_path: Path) -> None:
    async def scenario() -> None:
        table = await _open(tmp_path / "t", dedup_window=0)
        for _ in range(2):
            ticket = await table.append(ROWS.slice(0, 10), dedup_key=key(1), wait=False)
            assert not (await ticket.durable()).skipped
        with pytest.raises(ConfigError):  # keys are still checked
            await table.append(ROWS.slice(0, 10), dedup_key=b"short")
        await table.close()

    _run(scenario)
    assert streamwrite.read_table(tmp_path / "t").num_rows == 20
    assert logs(tmp_path / "t") == [] and read_txn(tmp_path / "t").dedup is None


def test_a_damaged_log_fails_the_open_and_a_zero_window_opens_anyway(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def scenario() -> None:
        table = await _open(path)
        await (await table.append(ROWS.slice(0, 10), dedup_key=key(1), wait=False)).durable()
        await table.close()
        log = path / "_dedup.1"
        data = bytearray(log.read_bytes())
        data[len(DEDUP_HEADER) + 30] ^= 0xFF  # a key byte inside the committed prefix
        log.write_bytes(bytes(data))
        with pytest.raises(CorruptFileError, match="dedup_window=0"):
            await _open(path)
        table = await _open(path, dedup_window=0)
        await table.append(ROWS.slice(10, 10), dedup_key=key(1))
        await table.close()
        os.unlink(log)
        with pytest.raises(CorruptFileError, match="missing"):
            await _open(path)

    _run(scenario)
    assert streamwrite.read_table(path).equals(ROWS.slice(0, 20))


def test_an_empty_append_with_a_key_is_remembered(tmp_path: Path) -> None:
    async def scenario() -> None:
        table = await _open(tmp_path / "t")
        first = await table.append(ROWS.slice(0, 0), dedup_key=key(1), wait=False)
        assert not (await first.durable()).skipped
        assert (await table.append(ROWS.slice(0, 0), dedup_key=key(1))).skipped
        await table.close()

    _run(scenario)
    assert logged_keys(tmp_path / "t") == [key(1)]


def test_the_readme_example(tmp_path: Path) -> None:
    async def scenario() -> None:
        # --- README: Idempotent appends ---
        import hashlib

        import streamwrite

        def request_key(token: bytes, table_name: str, body: bytes) -> bytes:
            return hashlib.blake2b(
                b"\0".join([token, table_name.encode(), body]), digest_size=16
            ).digest()

        body = b"trades,sym=BTC price=1.5 1700000000000000000\n"  # what the client sent
        batch = ROWS.slice(0, 10)  # its rows, parsed
        async with await streamwrite.open_table(
            tmp_path / "trades", batch.schema, dedup_window=900.0
        ) as table:
            key = request_key(b"token", "trades", body)
            ticket = await table.append(batch, dedup_key=key, wait=False)
            first = await ticket.durable()  # durable: answer 204
            retry = await table.append(batch, dedup_key=key, wait=False)  # the same body again
            again = await retry.durable()
            assert not first.skipped and again.skipped  # the retry wrote nothing
        # --- end ---

    _run(scenario)
    assert streamwrite.read_table(tmp_path / "trades").num_rows == 10


def test_a_rotation_cut_short_before_or_after_its_publish_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash between the rotation's steps: the new log written and synced but its ``_txn``
    not published (the new log is deleted on open; the old one holds the keys), or published
    but the old log not deleted yet (deleted on open)."""
    monkeypatch.setattr(dedup_module, "ROTATE_SIZE", 300)
    path = tmp_path / "t"
    import streamwrite.table.core as core_module

    real_write_txn = core_module.write_txn

    def publish_fails_on_rotation(directory: Path, record: Any) -> None:
        if record.dedup is not None and record.dedup.name not in logs(directory):
            raise AssertionError("the new log must be on disk before its publish")
        current = read_txn(directory).dedup
        rotating = current is not None and record.dedup is not None
        if rotating and record.dedup.name != current.name:  # the rotation's commit point
            raise StreamwriteIOError("injected: the _txn publish failed")
        real_write_txn(directory, record)

    async def until_rotation(table: Any, first: int) -> int:
        """Commit one key at a time until a commit rotates (or fails to); its key number."""
        for n in range(first, first + 200):
            name = table.record.dedup.name if table.record.dedup else None
            ticket = await table.append(ROWS.slice(n % 2000, 1), dedup_key=key(n), wait=False)
            try:
                await ticket.durable()
            except StreamwriteIOError:
                return n
            if name is not None and table.record.dedup.name != name:
                return n
            if n % 8 == 7:
                await anyio.sleep(0.25)  # earlier keys leave the window
        raise AssertionError("no rotation")

    async def scenario() -> None:
        # 1. crash before the publish: the new log is left over
        table = await _open(path, dedup_window=0.5)
        monkeypatch.setattr(core_module, "write_txn", publish_fails_on_rotation)
        failed = await until_rotation(table, 0)
        monkeypatch.setattr(core_module, "write_txn", real_write_txn)
        assert not table.is_open and len(logs(path)) == 2
        await table.close()
        published = read_txn(path).dedup
        assert published is not None
        # the checks reopen with a long window: under load the reopen alone may take longer
        # than 0.5 s, and a key the log still holds must be remembered however late it is asked
        table = await _open(path, dedup_window=60.0)
        assert logs(path) == [published.name], "the unpublished new log was not deleted"
        remembered = await table.append(ROWS.slice(0, 1), dedup_key=key(failed - 1), wait=False)
        assert (await remembered.durable()).skipped
        retry = await table.append(ROWS.slice(failed % 2000, 1), dedup_key=key(failed), wait=False)
        assert not (await retry.durable()).skipped, "the failed commit's key was remembered"
        await table.close()
        table = await _open(path, dedup_window=0.5)
        # 2. crash after the publish, before the old log is deleted
        monkeypatch.setattr(DedupLogFile, "delete", lambda self, name: None)
        rotated = await until_rotation(table, failed + 1)
        await table.close()
        assert len(logs(path)) == 2
        table = await _open(path, dedup_window=60.0)
        assert logs(path) == [read_txn(path).dedup.name]  # type: ignore[union-attr]
        again = await table.append(ROWS.slice(0, 1), dedup_key=key(rotated), wait=False)
        assert (await again.durable()).skipped
        await table.close()

    _run(scenario)
    back = streamwrite.read_table(path)
    assert len(set(back.column("order_id").to_pylist())) == back.num_rows
