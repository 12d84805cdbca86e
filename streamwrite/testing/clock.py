"""A clock that moves only when a test says so, for code that takes a ``clock`` callable.

Code that decides by elapsed time (the pool's priority gate today) takes
``clock: Callable[[], float] = time.monotonic``; a test passes a :class:`ManualClock` and
advances it instead of sleeping, so the test neither waits nor depends on the machine's load.
"""

from __future__ import annotations

__all__ = ["ManualClock"]


class ManualClock:
    """Seconds that move only by :meth:`advance`; call the instance to read them.

    Args:
        start: The first reading, in seconds.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def __call__(self) -> float:
        """Returns: the current reading in seconds."""
        return self._now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds``.

        Raises:
            ValueError: ``seconds`` is negative (a monotonic clock never goes back).
        """
        if seconds < 0:
            raise ValueError(f"a ManualClock only moves forward; advance({seconds!r}) would not")
        self._now += seconds
