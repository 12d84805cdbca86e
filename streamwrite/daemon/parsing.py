"""Where request bodies are parsed: in worker processes (``engine.parse_workers``, default 2),
or in threads of the server process (0).

Parsing is most of the CPU a write costs, and much of it holds the GIL, so in the server
process it competes with everything else the daemon does (HTTP, typing, encoding, commits)
for one core; a worker process gives it the other. A body goes to a worker whole (bytes
pickle cheaply); the worker feeds it to an :class:`~streamwrite.daemon.ilp.IlpParser` in
``PIECE_SIZE`` slices, so its working memory stays bounded whatever the body's size, and
sends back the parsed batches (numpy and Arrow arrays). A parse error comes back as the
same :class:`~streamwrite.daemon.errors.BadRequestError`, line number included. A worker
that dies (killed, out of memory) fails the requests it held with a 500 and is replaced; a
worker whose daemon dies (SIGKILL) exits within ``PARENT_CHECK_SECONDS``.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import anyio

from streamwrite.daemon.errors import DaemonInternalError
from streamwrite.daemon.ilp import IlpBatch, IlpParser

__all__ = ["PIECE_SIZE", "Parsers", "parse_pieces"]

PIECE_SIZE = 1 << 20
"""Bytes fed to the parser at a time: its working memory is ~20x this."""
PARENT_CHECK_SECONDS = 0.5


def _exit_with_parent(parent_pid: int) -> None:
    """Worker initializer: exit when the daemon is gone. A SIGKILLed daemon closes no pipe a
    ``ProcessPoolExecutor`` worker waits on (its siblings hold the queue's write end too), so
    without this every kill would leave the workers behind."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def parse_pieces(body: bytes, precision: str, now_ns: int) -> list[IlpBatch]:
    """Parse a whole body, ``PIECE_SIZE`` bytes at a time (runs in a worker process).

    Raises:
        BadRequestError: a malformed line, with its line number.
    """
    parser = IlpParser(precision=precision, now_ns=now_ns)
    batches: list[IlpBatch] = []
    view = memoryview(body)
    for start in range(0, len(body), PIECE_SIZE):
        batches += parser.feed(bytes(view[start : start + PIECE_SIZE]))
    return batches + parser.close()


class Parsers:
    """Parses bodies in ``num_workers`` processes (0: in two threads of this process)."""

    def __init__(self, num_workers: int) -> None:
        self.num_workers = num_workers
        self._threads = anyio.CapacityLimiter(2)
        self._pool: ProcessPoolExecutor | None = None
        if num_workers:
            self._pool = self._start()

    def _start(self) -> ProcessPoolExecutor:
        # spawn: the server has threads, which fork would copy in an unknown state.
        return ProcessPoolExecutor(
            self.num_workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_exit_with_parent,
            initargs=(os.getpid(),),
        )

    def warm_up(self) -> None:
        """Start the workers now (they import numpy and pyarrow: ~1 s), not at the first write."""
        if self._pool is not None:
            list(
                self._pool.map(
                    parse_pieces,
                    [b"w v=1\n"] * self.num_workers,
                    ["n"] * self.num_workers,
                    [0] * self.num_workers,
                )
            )

    async def parse(self, body: bytes, precision: str, now_ns: int) -> list[IlpBatch]:
        """The batches of ``body``.

        Raises:
            BadRequestError: a malformed line.
            DaemonInternalError: the worker died (it is replaced; the request may be retried).
        """
        if self._pool is None:
            return await anyio.to_thread.run_sync(
                parse_pieces, body, precision, now_ns, limiter=self._threads
            )
        pool = self._pool
        try:
            return await asyncio.wrap_future(pool.submit(parse_pieces, body, precision, now_ns))
        except BrokenProcessPool:
            if self._pool is pool:
                self._pool = self._start()
                pool.shutdown(wait=False, cancel_futures=True)
            raise DaemonInternalError("internal error: the parser process died; retry.") from None

    def close(self) -> None:
        """Stop the workers."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
