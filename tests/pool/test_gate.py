"""PriorityGate: appends' jobs get workers before compaction's, and cancellation leaks none.

The urgent window runs on a :class:`~streamwrite.testing.clock.ManualClock` and the tests wait
for the gate's waiters with ``anyio.wait_all_tasks_blocked``: nothing here sleeps.
"""

from __future__ import annotations

import anyio
import pytest

from streamwrite.pool.gate import BACKGROUND, URGENT, PriorityGate
from streamwrite.testing.clock import ManualClock


def test_urgent_waiters_go_first_and_background_leaves_one_worker_free() -> None:
    async def go() -> None:
        clock = ManualClock()
        gate = PriorityGate(2, urgent_window=0.2, clock=clock)
        order: list[str] = []
        await gate.acquire(BACKGROUND)  # no append yet: compaction may take a worker
        await gate.acquire(URGENT)  # appends are flowing now: 0 free

        async def take(name: str, priority: int) -> None:
            await gate.acquire(priority)
            order.append(name)

        async with anyio.create_task_group() as tg:
            tg.start_soon(take, "background", BACKGROUND)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(take, "urgent", URGENT)
            await anyio.wait_all_tasks_blocked()
            assert order == []
            gate.release()  # the urgent waiter came later but goes first
            await anyio.wait_all_tasks_blocked()
            assert order == ["urgent"]
            clock.advance(0.1)  # still inside the urgent window
            gate.release()  # one free, but appends are recent: kept for them
            await anyio.wait_all_tasks_blocked()
            assert order == ["urgent"]
            gate.release()  # two free: the background waiter takes one
            await anyio.wait_all_tasks_blocked()
            assert order == ["urgent", "background"]

        # The last urgent acquire was at t=0; t=0.1 now and one worker is free.
        clock.advance(0.05)  # t=0.15, inside the window: the last worker stays reserved
        async with anyio.create_task_group() as tg:
            tg.start_soon(take, "background 2", BACKGROUND)
            await anyio.wait_all_tasks_blocked()
            assert order == ["urgent", "background"]
            clock.advance(0.06)  # t=0.21: the window is over, but that alone wakes nobody
            await anyio.wait_all_tasks_blocked()
            assert order == ["urgent", "background"]
            gate.release()  # the next release dispatches: the waiter takes a worker
            await anyio.wait_all_tasks_blocked()
            assert order == ["urgent", "background", "background 2"]
        with anyio.fail_after(1):
            await gate.acquire(BACKGROUND)  # and the last free worker is not reserved either

    anyio.run(go)


def test_a_window_without_urgent_jobs_reserves_nothing() -> None:
    async def go() -> None:
        clock = ManualClock()
        gate = PriorityGate(2, urgent_window=0.2, clock=clock)
        await gate.acquire(URGENT)
        gate.release()
        clock.advance(0.2)  # exactly one window later: no longer "recent"
        with anyio.fail_after(1):
            await gate.acquire(BACKGROUND)
            await gate.acquire(BACKGROUND)

    anyio.run(go)


def test_a_cancelled_waiter_leaks_no_worker() -> None:
    async def go() -> None:
        gate = PriorityGate(1, clock=ManualClock())
        await gate.acquire(URGENT)
        async with anyio.create_task_group() as tg:
            tg.start_soon(gate.acquire, URGENT)
            await anyio.wait_all_tasks_blocked()  # the second acquire waits for the worker
            tg.cancel_scope.cancel()  # cancelled while waiting
        gate.release()
        with anyio.fail_after(1):
            await gate.acquire(URGENT)  # the one worker is free again
        gate.release()

    anyio.run(go)


def test_manual_clock_moves_only_forward() -> None:
    clock = ManualClock(5.0)
    clock.advance(0.5)
    assert clock() == 5.5
    with pytest.raises(ValueError, match=r"advance\(-1\.0\)"):
        clock.advance(-1.0)
    assert clock() == 5.5
