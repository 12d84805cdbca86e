"""PriorityGate: appends' jobs get workers before compaction's, and cancellation leaks none."""

from __future__ import annotations

import anyio

from streamwrite.pool.gate import BACKGROUND, URGENT, PriorityGate


def test_urgent_waiters_go_first_and_background_leaves_one_worker_free() -> None:
    async def go() -> None:
        gate = PriorityGate(2, urgent_window=0.2)
        order: list[str] = []
        await gate.acquire(BACKGROUND)  # no append yet: compaction may take a worker
        await gate.acquire(URGENT)  # appends are flowing now: 0 free

        async def take(name: str, priority: int) -> None:
            await gate.acquire(priority)
            order.append(name)

        async with anyio.create_task_group() as tg:
            tg.start_soon(take, "background", BACKGROUND)
            await anyio.sleep(0.01)
            tg.start_soon(take, "urgent", URGENT)
            await anyio.sleep(0.01)
            assert order == []
            gate.release()  # the urgent waiter came later but goes first
            await anyio.sleep(0.01)
            assert order == ["urgent"]
            gate.release()  # one free, but appends are recent: kept for them
            await anyio.sleep(0.01)
            assert order == ["urgent"]
            gate.release()  # two free: the background waiter takes one
            await anyio.sleep(0.01)
            assert order == ["urgent", "background"]

        await anyio.sleep(0.25)  # no append for a while: background may take the last worker
        with anyio.fail_after(1):
            await gate.acquire(BACKGROUND)

    anyio.run(go)


def test_a_cancelled_waiter_leaks_no_worker() -> None:
    async def go() -> None:
        gate = PriorityGate(1)
        await gate.acquire(URGENT)
        with anyio.move_on_after(0.02):
            await gate.acquire(URGENT)  # cancelled while waiting
        gate.release()
        with anyio.fail_after(1):
            await gate.acquire(URGENT)  # the one worker is free again
        gate.release()

    anyio.run(go)
