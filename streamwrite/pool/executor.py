"""Where encode jobs run: the :class:`Executor` protocol and the in-process executor.

Every executor runs the same function, :func:`workers.jobs.run_job`, on the same job, so its
output is byte-identical whatever the executor::

    Executor.run(job, priority)        -> the job's encoded chunk
    Executor.run_all(jobs, priority)   -> the jobs' results, in job order
    Executor.aclose()                  -> resources released (idempotent)

``priority`` orders jobs waiting for a worker: ``0`` (urgent: appends and writes, the default)
before ``1`` (background: compaction). :class:`InlineExecutor` runs jobs in a thread of this
process and ignores it; :class:`~streamwrite.ProcessPool` honours it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import anyio

from streamwrite.format.chunk import EncodedChunk
from streamwrite.pool.gate import URGENT
from workers.jobs import Job, run_job

__all__ = ["Executor", "InlineExecutor", "gather_in_order"]


class Executor(Protocol):
    """Runs encode jobs; results are byte-identical whatever the executor."""

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

    Its results are byte-identical to a :class:`~streamwrite.ProcessPool`'s.
    """

    async def run(self, job: Job, priority: int = URGENT) -> EncodedChunk:
        """Run one job in a thread (``priority`` is not used).

        Returns:
            ``run_job(job)``.
        """
        return await anyio.to_thread.run_sync(run_job, job)

    async def run_all(self, jobs: Sequence[Job], priority: int = URGENT) -> list[EncodedChunk]:
        """Run ``jobs`` one after the other, in one thread hop (a hop costs ~0.1 ms, as much as
        encoding a small chunk).

        Returns:
            The results of ``jobs``, in job order.
        """
        return await anyio.to_thread.run_sync(_run_jobs, list(jobs))

    async def aclose(self) -> None:
        """Nothing to release."""

    async def __aenter__(self) -> InlineExecutor:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
