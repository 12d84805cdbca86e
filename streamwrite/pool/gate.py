"""Which job gets the next free pool worker: appends before background work.

A table's appends wait for their row group's encode jobs; compaction's jobs are large (a
column of a million rows) and nobody waits for them. Without an order, an append's jobs queue
behind compaction's and its commit latency jumps by a compaction job's length. The gate::

    acquire(URGENT)       a free worker, else the first one released (urgent waiters first)
    acquire(BACKGROUND)   a free worker, but while urgent jobs came within URGENT_WINDOW
                          seconds one worker stays free for them (pools of 2 or more);
                          waiters are served in priority order, then arrival order
    release()             the worker goes to the first waiter allowed to take it

No job is preempted: an urgent job can still wait for one running background job when every
worker is busy, which the reservation makes rare while appends are flowing.

The window is measured on ``clock`` (``time.monotonic`` unless a test passes its own), read only
when a job asks for a worker; the end of a window wakes nobody: a background waiter held back by
the reservation takes the worker at the next ``acquire`` or ``release``.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

__all__ = ["BACKGROUND", "URGENT", "URGENT_WINDOW", "PriorityGate"]

URGENT = 0
"""Priority of the jobs of appends and writes (the default)."""
BACKGROUND = 1
"""Priority of compaction's jobs."""
URGENT_WINDOW = 1.0
"""Seconds after an urgent job during which background jobs leave one worker free."""


@dataclass(order=True)
class _Waiter:
    priority: int
    seq: int
    event: anyio.Event = field(compare=False, default_factory=anyio.Event)
    granted: bool = field(compare=False, default=False)
    cancelled: bool = field(compare=False, default=False)


class PriorityGate:
    """Hands out ``size`` workers by priority (see the module docstring).

    Args:
        size: The number of workers.
        urgent_window: Seconds after an urgent ``acquire`` during which background jobs leave
            one worker free.
        clock: Seconds from an arbitrary start, never decreasing; ``time.monotonic`` by default.
    """

    def __init__(
        self,
        size: int,
        urgent_window: float = URGENT_WINDOW,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._size = size
        self._urgent_window = urgent_window
        self._clock = clock
        self._free = size
        self._waiters: list[_Waiter] = []
        self._seq = itertools.count()
        self._last_urgent = -math.inf

    def _may_take(self, priority: int) -> bool:
        if priority <= URGENT:
            return self._free > 0
        busy_appending = self._clock() - self._last_urgent < self._urgent_window
        reserve = 1 if self._size > 1 and busy_appending else 0
        return self._free > reserve

    def _dispatch(self) -> None:
        while self._waiters:
            waiter = self._waiters[0]
            if waiter.cancelled:
                heapq.heappop(self._waiters)
                continue
            if not self._may_take(waiter.priority):
                return
            heapq.heappop(self._waiters)
            self._free -= 1
            waiter.granted = True
            waiter.event.set()

    async def acquire(self, priority: int = URGENT) -> None:
        """Wait for a worker (cancellation-safe: a worker granted to a cancelled waiter is
        passed on)."""
        if priority <= URGENT:
            self._last_urgent = self._clock()
        waiter = _Waiter(priority, next(self._seq))
        heapq.heappush(self._waiters, waiter)
        self._dispatch()
        try:
            await waiter.event.wait()
        except BaseException:
            if waiter.granted:
                self.release()
            else:
                waiter.cancelled = True
            raise

    def release(self) -> None:
        """Give a worker back."""
        self._free += 1
        self._dispatch()
