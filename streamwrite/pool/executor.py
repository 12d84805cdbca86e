"""Where encode jobs run: the :class:`Executor` protocol and the in-process executor.

Every executor runs the same function, :func:`workers.jobs.run_job`, on the same job, so its
output is byte-identical whatever the executor::

    Executor.run(job, priority)        -> the job's encoded chunk
    Executor.run_all(jobs, priority)   -> the jobs' results, in job order
    Executor.aclose()                  -> resources released (idempotent)

``priority`` orders jobs waiting for a worker: ``0`` (urgent: appends and writes, the default)
before ``1`` (background: compaction). :class:`InlineExecutor` runs jobs in threads of this
process, so a background job waits while urgent ones run (at its pause points, each wait
bounded); :class:`~streamwrite.ProcessPool` hands its workers out by priority
(:mod:`streamwrite.pool.gate`).

The contract is public, so users can bring their own executor (Dask, Ray, a remote pool): a
job is a ``workers.jobs.Job`` (opaque and picklable), ``workers.jobs.run_job`` runs it in any
process (DESIGN: ring 2's only entry point; a worker imports ``workers``, not the async shell),
and its result, a ``streamwrite.format.chunk.EncodedChunk``, is handed back unchanged. Those two
modules are public for this (``tests/test_public_api.py``, ``EXECUTOR_CONTRACT``); the fields of
a job are not.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

import anyio

from streamwrite.format.chunk import EncodedChunk
from streamwrite.pool.gate import URGENT
from workers.jobs import Job, MergeChunkJob, run_job
from workers.shm import BACKGROUND_PAUSE

__all__ = ["BACKGROUND_PAUSE", "Executor", "InlineExecutor", "gather_in_order"]


class Executor(Protocol):
    """Runs encode jobs; results are byte-identical whatever the executor.

    Bring your own by implementing these three methods: ``run`` returns
    ``workers.jobs.run_job(job)``, computed wherever you like (the job pickles; the result is a
    ``streamwrite.format.chunk.EncodedChunk``, to return unchanged). ``workers.jobs`` and
    ``streamwrite.format.chunk`` are public for this contract; a job's fields are not::

        from workers.jobs import Job, run_job
        from streamwrite.format.chunk import EncodedChunk

        class MyExecutor:
            async def run(self, job: Job, priority: int = 0) -> EncodedChunk:
                return await anyio.to_thread.run_sync(run_job, job)
            ...
    """

    async def run(self, job: Job, priority: int = URGENT) -> EncodedChunk:
        """Run one job.

        ``priority``: ``0`` (urgent, the default) is served before ``1`` (background).

        Returns:
            The result of ``run_job(job)``.
        """
        ...

    async def run_all(self, jobs: Sequence[Job], priority: int = URGENT) -> list[EncodedChunk]:
        """Run ``jobs`` concurrently.

        Returns:
            The results of ``jobs``, in job order.
        """
        ...

    async def aclose(self) -> None:
        """Release the executor's resources."""
        ...


async def gather_in_order(
    executor: Executor, jobs: Sequence[Job], priority: int = URGENT
) -> list[EncodedChunk]:
    """Run ``jobs`` concurrently on ``executor``.

    Returns:
        The results, in job order.

    Raises:
        Exception: the first failure in job order (not a group); the other jobs are cancelled.
    """
    results: list[EncodedChunk | None] = [None] * len(jobs)
    errors: dict[int, Exception] = {}

    async with anyio.create_task_group() as tg:

        async def one(index: int, job: Job) -> None:
            try:
                results[index] = await executor.run(job, priority)
            except Exception as exc:
                errors[index] = exc
                tg.cancel_scope.cancel()

        for index, job in enumerate(jobs):
            tg.start_soon(one, index, job)
    if errors:
        raise errors[min(errors)]
    return [result for result in results if result is not None]


def _run_jobs(jobs: list[Job]) -> list[EncodedChunk]:
    return [run_job(job) for job in jobs]


class InlineExecutor:
    """Runs each job in a worker thread of this process (tests, tiny batches).

    Its results are byte-identical to a :class:`~streamwrite.ProcessPool`'s. Jobs share
    the process's GIL, so priority works by waiting: a background job (compaction) starts
    only when no urgent job (an append's) is running, and a compaction job waits again
    before each source chunk it decodes and before it encodes, each time for at most
    ``BACKGROUND_PAUSE`` seconds.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._num_urgent = 0
        self._urgent_idle = threading.Event()
        self._urgent_idle.set()

    async def run(self, job: Job, priority: int = URGENT) -> EncodedChunk:
        """Run one job in a thread (behind the urgent jobs if ``priority`` is background).

        Returns:
            ``run_job(job)``.
        """
        return (await self.run_all([job], priority))[0]

    async def run_all(self, jobs: Sequence[Job], priority: int = URGENT) -> list[EncodedChunk]:
        """Run ``jobs`` one after the other, in one thread hop (a hop costs ~0.1 ms, as much as
        encoding a small chunk).

        Returns:
            The results of ``jobs``, in job order.
        """
        if priority > URGENT:
            return await anyio.to_thread.run_sync(self._run_background, list(jobs))
        with self._lock:
            self._num_urgent += 1
            self._urgent_idle.clear()
        try:
            return await anyio.to_thread.run_sync(_run_jobs, list(jobs))
        finally:
            with self._lock:
                self._num_urgent -= 1
                if self._num_urgent == 0:
                    self._urgent_idle.set()

    def _yield_to_urgent(self) -> None:
        self._urgent_idle.wait(BACKGROUND_PAUSE)

    def _run_background(self, jobs: list[Job]) -> list[EncodedChunk]:
        results = []
        for job in jobs:
            self._yield_to_urgent()
            if isinstance(job, MergeChunkJob):
                results.append(job.run(self._yield_to_urgent))
            else:
                results.append(run_job(job))
        return results

    async def aclose(self) -> None:
        """Nothing to release."""

    async def __aenter__(self) -> InlineExecutor:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
