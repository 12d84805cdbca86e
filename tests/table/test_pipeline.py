"""Pipelined appends and group commits (issue 12, items 3 and 4).

``append(..., wait=False)`` returns a ticket once the rows are accepted; ``await
ticket.durable()`` returns the commit that holds them. Commits keep the order of appends;
appends that wait together share one commit; a failed commit fails every ticket in it with
the same error, and none of its rows is ever committed later.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pytest

import streamwrite
from streamwrite.errors import (
    ConfigError,
    StaleBatchError,
    StateError,
    StreamwriteIOError,
    WorkerError,
)
from streamwrite.live.file import LiveFile
from streamwrite.pool.executor import InlineExecutor
from streamwrite.table.api import CommitTicket, open_table
from streamwrite.testing import reference_table

ROWS = reference_table(4_000)


def _run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return anyio.run(functools.partial(fn, *args, **kwargs))


def _open(path: Path, **kwargs: Any) -> Any:
    kwargs.setdefault("compaction_interval", None)
    return open_table(path, ROWS.schema, commit_interval=None, **kwargs)


def test_pipelined_tickets_resolve_in_append_order(tmp_path: Path) -> None:
    resolved: list[tuple[int, int]] = []

    async def scenario() -> Any:
        async with await _open(tmp_path / "t") as table:

            async def wait_for(k: int, ticket: CommitTicket) -> None:
                resolved.append((k, (await ticket.durable()).version))

            async with anyio.create_task_group() as group:
                for k in range(40):
                    batch = ROWS.slice(k * 100, 100)
                    ticket = await table.append(batch, app_id="job", batch_id=k, wait=False)
                    assert isinstance(ticket, CommitTicket) and ticket.num_rows == 100
                    group.start_soon(wait_for, k, ticket)
            assert table.record.applied == {"job": 39}
            return table.metrics

    metrics = _run(scenario)
    assert sorted(k for k, _ in resolved) == list(range(40))
    versions = [version for _, version in sorted(resolved)]
    assert versions == sorted(versions), "a later append was committed before an earlier one"
    assert metrics.appends_committed == 40 and 1 <= metrics.commits <= 40
    assert streamwrite.read_table(tmp_path / "t").equals(ROWS)


def test_outside_async_with_a_waiting_ticket_commits_the_whole_group(tmp_path: Path) -> None:
    async def scenario() -> None:
        table = await _open(tmp_path / "t")
        tickets = [
            await table.append(ROWS.slice(k * 10, 10), app_id=f"app{k}", batch_id=0, wait=False)
            for k in range(5)
        ]
        assert table.version == 0 and not any(t.done for t in tickets)  # nothing committed
        commit = await tickets[2].durable()
        assert all(t.done for t in tickets)
        assert {(await t.durable()).version for t in tickets} == {commit.version} == {1}
        assert commit.num_rows == 50 and table.metrics.commits == 1
        assert table.record.applied == {f"app{k}": 0 for k in range(5)}
        await table.close()

    _run(scenario)
    assert streamwrite.read_table(tmp_path / "t").equals(ROWS.slice(0, 50))


def test_concurrent_appenders_share_commits(tmp_path: Path) -> None:
    async def scenario() -> Any:
        async with await _open(tmp_path / "t") as table:

            async def appender(app: int) -> None:
                for k in range(5):
                    start = (app * 5 + k) * 50
                    commit = await table.append(ROWS.slice(start, 50), app_id=f"a{app}", batch_id=k)
                    assert commit is not None and not commit.skipped

            async with anyio.create_task_group() as group:
                for app in range(16):
                    group.start_soon(appender, app)
            assert table.record.applied == {f"a{app}": 4 for app in range(16)}
            return table.metrics

    metrics = _run(scenario)
    assert metrics.appends_committed == 80
    assert metrics.commits < 80, "no two concurrent appends shared a commit"
    back = streamwrite.read_table(tmp_path / "t")
    assert back.sort_by("order_id").equals(ROWS.slice(0, 4_000).sort_by("order_id"))


def test_a_failed_group_commit_fails_every_ticket_with_the_same_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        table = await _open(tmp_path / "t")
        await table.append(ROWS.slice(0, 10), app_id="before", batch_id=0)

        async def broken(*args: Any, **kwargs: Any) -> Any:  # injected failure: the disk
            raise StreamwriteIOError("injected: the disk is full")

        monkeypatch.setattr(LiveFile, "_write_encoded", broken)
        tickets = [
            await table.append(ROWS.slice(10 + k, 1), app_id=f"g{k}", batch_id=0, wait=False)
            for k in range(3)
        ]
        errors = []
        for ticket in tickets:
            with pytest.raises(StreamwriteIOError) as info:
                await ticket.durable()
            errors.append(info.value)
        assert errors[0] is errors[1] is errors[2]
        with pytest.raises(StateError):
            await table.append(ROWS.slice(20, 1))
        monkeypatch.undo()
        await table.close()

    _run(scenario)
    back = streamwrite.read_table(tmp_path / "t")
    assert back.equals(ROWS.slice(0, 10)), "rows of a failed commit were committed"


def test_appends_behind_a_failed_commit_raise_state_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> int:
        async with await _open(tmp_path / "t", max_in_flight=64) as table:
            calls = 0
            original = LiveFile._write_encoded

            async def slow_then_broken(self: LiveFile, *args: Any, **kwargs: Any) -> Any:
                nonlocal calls
                calls += 1
                if calls == 2:
                    await anyio.sleep(0.05)  # later appends pile up behind this commit
                    raise StreamwriteIOError("injected: the disk is full")
                return await original(self, *args, **kwargs)

            monkeypatch.setattr(LiveFile, "_write_encoded", slow_then_broken)
            tickets = [
                await table.append(ROWS.slice(k * 10, 10), app_id="job", batch_id=k, wait=False)
                for k in range(8)
            ]
            outcomes = []
            for ticket in tickets:
                try:
                    outcomes.append((await ticket.durable()).version)
                except StreamwriteIOError:
                    outcomes.append("failed")
                except StateError:
                    outcomes.append("poisoned")
            assert outcomes[0] == 1
            failed = outcomes.index("failed")
            assert set(outcomes[failed + 1 :]) <= {"failed", "poisoned"}
            monkeypatch.undo()
            with pytest.raises(StateError):
                await table.flush()
            return failed

    failed = _run(scenario)  # closing a poisoned table commits nothing more
    assert streamwrite.read_table(tmp_path / "t").equals(ROWS.slice(0, 10 * failed))


def test_an_id_in_flight_again_joins_its_commit_and_a_lower_one_is_stale(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        table = await _open(tmp_path / "t")
        first = await table.append(ROWS.slice(0, 10), app_id="job", batch_id=1, wait=False)
        again = await table.append(ROWS.slice(0, 10), app_id="job", batch_id=1, wait=False)
        with pytest.raises(StaleBatchError) as info:
            await table.append(ROWS.slice(0, 10), app_id="job", batch_id=0, wait=False)
        assert info.value.last_batch_id == 1
        repeated = await again.durable()
        committed = await first.durable()
        assert repeated.skipped and not committed.skipped
        assert repeated.version == committed.version == 1
        assert table.metrics.batches_skipped == 1
        await table.close()

    _run(scenario)
    assert streamwrite.read_table(tmp_path / "t").equals(ROWS.slice(0, 10))


def test_backpressure_bounds_the_appends_in_flight(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with await _open(tmp_path / "t", max_in_flight=3) as table:
            tickets: list[CommitTicket] = []
            for k in range(30):
                tickets.append(
                    await table.append(ROWS.slice(k * 10, 10), app_id="j", batch_id=k, wait=False)
                )
                assert sum(not t.done for t in tickets) <= 3
            await table.flush()
            assert all(t.done for t in tickets)

    _run(scenario)
    assert streamwrite.read_table(tmp_path / "t").equals(ROWS.slice(0, 300))


def test_an_empty_batch_with_an_id_records_the_id(tmp_path: Path) -> None:
    async def scenario() -> None:
        table = await _open(tmp_path / "t")
        commit = await table.append(ROWS.slice(0, 0), app_id="job", batch_id=4)
        assert commit is not None and commit.num_rows == 0 and not commit.skipped
        assert table.record.applied == {"job": 4} and commit.version == 1
        replay = await table.append(ROWS.slice(0, 0), app_id="job", batch_id=4)
        assert replay is not None and replay.skipped
        await table.close()

    _run(scenario)


def test_a_cancelled_waiter_does_not_cancel_the_commit(tmp_path: Path) -> None:
    async def scenario() -> None:
        table = await _open(tmp_path / "t")
        ticket = await table.append(ROWS.slice(0, 10), app_id="job", batch_id=0, wait=False)
        with anyio.move_on_after(0):
            await ticket.durable()  # leads the commit, shielded, then sees the cancellation
        assert ticket.done and table.version == 1
        await table.close()

    _run(scenario)
    assert streamwrite.read_table(tmp_path / "t").equals(ROWS.slice(0, 10))


def test_policy_commits_return_tickets_too(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with await open_table(
            tmp_path / "t", ROWS.schema, commit_rows=100, compaction_interval=None
        ) as table:
            tickets = [await table.append(ROWS.slice(k * 50, 50), wait=False) for k in range(4)]
            versions = [(await t.durable()).version for t in tickets]
            assert versions == [1, 1, 2, 2]  # the policy cut a commit every 100 rows

    _run(scenario)


@pytest.mark.parametrize("value", [0, -1, 1.5, True])
def test_max_in_flight_must_be_a_positive_integer(tmp_path: Path, value: object) -> None:
    with pytest.raises(ConfigError, match="max_in_flight"):
        _run(open_table, tmp_path / "t", ROWS.schema, max_in_flight=value)
    assert not (tmp_path / "t").exists() or not any((tmp_path / "t").iterdir())


def test_pa_record_batches_are_accepted_with_wait_false(tmp_path: Path) -> None:
    async def scenario() -> None:
        table = await _open(tmp_path / "t")
        batches = ROWS.slice(0, 20).to_batches(max_chunksize=5)
        ticket = await table.append(batches, wait=False)
        assert isinstance(ticket, CommitTicket) and ticket.num_rows == 20
        assert (await table.flush()) is not None and ticket.done
        await table.close()

    _run(scenario)
    assert streamwrite.read_table(tmp_path / "t").equals(
        pa.Table.from_batches(ROWS.slice(0, 20).to_batches())
    )


@pytest.mark.parametrize("wait", ["no", None, 0])
def test_wait_must_be_a_bool_and_nothing_is_buffered(tmp_path: Path, wait: object) -> None:
    async def scenario() -> None:
        table = await _open(tmp_path / "t")
        with pytest.raises(ConfigError, match="wait"):
            await table.append(ROWS.slice(0, 10), wait=wait)  # type: ignore[call-overload]
        await table.append(ROWS.slice(10, 5), app_id="job", batch_id=0)
        await table.close()

    _run(scenario)
    assert streamwrite.read_table(tmp_path / "t").equals(ROWS.slice(10, 5))


class _FailingExecutor:
    """An executor (the public protocol) whose ``fail_at``-th ``run_all`` raises, as a
    crashed worker process would."""

    def __init__(self, fail_at: int) -> None:
        self.calls = 0
        self.fail_at = fail_at
        self.inline = InlineExecutor()

    async def run(self, job: Any, priority: int = 0) -> Any:
        return await self.inline.run(job, priority)

    async def run_all(self, jobs: Any, priority: int = 0) -> Any:
        self.calls += 1
        if self.calls == self.fail_at:
            raise WorkerError("injected: the worker process died")
        return await self.inline.run_all(jobs, priority)

    async def aclose(self) -> None:
        pass


def test_an_append_whose_encoding_fails_is_never_committed_later(tmp_path: Path) -> None:
    """Regression: a full row group's encode failed inside append (rows already buffered);
    the append raised, yet the next commit wrote the rows it had left in the buffer."""

    async def scenario() -> None:
        table = await _open(tmp_path / "t", executor=_FailingExecutor(3), row_group_size=10)
        await table.append(ROWS.slice(0, 10), app_id="job", batch_id=0)  # encode 1
        with pytest.raises(WorkerError):
            await table.append(ROWS.slice(10, 25))  # encodes 2, then 3 fails
        with pytest.raises(StateError):
            await table.flush()
        await table.close()

    _run(scenario)
    assert streamwrite.read_table(tmp_path / "t").equals(ROWS.slice(0, 10))
