"""The inline executor's priorities: a background (compaction) job waits at its pause points
while an urgent job runs, and its result is the same as when run at once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import anyio
import numpy as np
import pyarrow as pa

import streamwrite
from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.encode import chunk_settings
from streamwrite.format.chunk import EncodedChunk
from streamwrite.options import make_write_options
from streamwrite.pool.executor import BACKGROUND_PAUSE, InlineExecutor
from streamwrite.pool.gate import BACKGROUND, URGENT
from streamwrite.pool.process import ProcessPool
from streamwrite.reader.file import ParquetFile
from workers.jobs import MergeChunkJob, run_job


def _merge_job(tmp_path: Path) -> MergeChunkJob:
    rng = np.random.default_rng(5)
    data = pa.table({"word": pa.array([f"w{v}" for v in rng.integers(0, 30, 3000)])})
    path = tmp_path / "src.parquet"
    streamwrite.write_table(data, path, row_group_size=1000)
    schema = arrow_to_parquet(data.schema)
    spec = schema.columns[0]
    with ParquetFile(path) as pf:
        sources = tuple(pf._source_chunk(i, spec) for i in range(3))
    return MergeChunkJob(
        chunk_settings(spec, make_write_options(data.schema.names)), sources, True, 1 << 28
    )


def test_merge_job_calls_between_before_each_source_and_the_encoding(tmp_path: Path) -> None:
    job = _merge_job(tmp_path)
    calls: list[int] = []
    got = job.run(lambda: calls.append(1))
    assert len(calls) == len(job.sources) + 1
    assert got == run_job(job)


class _HeldJob:
    """An urgent job that runs until the test releases it."""

    def __init__(self, result: EncodedChunk) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.result = result

    def run(self) -> EncodedChunk:
        self.started.set()
        self.release.wait(30)
        return self.result


def test_a_background_job_waits_at_its_pause_points_while_an_urgent_job_runs(
    tmp_path: Path,
) -> None:
    job = _merge_job(tmp_path)
    expected = run_job(job)
    held = _HeldJob(expected)
    pause_points = 1 + len(job.sources) + 1  # before the job, each source, the encoding

    async def main() -> tuple[float, list[EncodedChunk], list[EncodedChunk]]:
        executor = InlineExecutor()
        urgent: list[EncodedChunk] = []
        background: list[EncodedChunk] = []
        elapsed = 0.0

        async def run_urgent() -> None:
            urgent.extend(await executor.run_all([held], URGENT))  # type: ignore[list-item]

        async def run_background() -> None:
            nonlocal elapsed
            start = time.monotonic()
            background.extend(await executor.run_all([job], BACKGROUND))
            elapsed = time.monotonic() - start

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_urgent)
            await anyio.to_thread.run_sync(held.started.wait, 30)
            tg.start_soon(run_background)
            await anyio.sleep(pause_points * BACKGROUND_PAUSE * 2)
            held.release.set()
        return elapsed, urgent, background

    elapsed, urgent, background = anyio.run(main)
    assert urgent == [expected]
    assert background == [expected]
    # every pause point waited (bounded) for the held urgent job: a lower bound, never flaky
    assert elapsed >= pause_points * BACKGROUND_PAUSE * 0.9


def test_background_and_urgent_inline_results_are_the_same(tmp_path: Path) -> None:
    job = _merge_job(tmp_path)

    async def main() -> tuple[EncodedChunk, EncodedChunk]:
        executor = InlineExecutor()
        return await executor.run(job, BACKGROUND), await executor.run(job, URGENT)

    background, urgent = anyio.run(main)
    assert background == urgent


def test_a_pool_background_merge_job_waits_while_urgent_jobs_are_in_flight(
    tmp_path: Path,
) -> None:
    """The pool's pause flag, set as an urgent job in flight sets it: a background merge
    job waits at each of its pause points (lower bound; the result is unchanged)."""
    job = _merge_job(tmp_path)
    expected = run_job(job)
    pause_points = len(job.sources) + 1

    async def main() -> tuple[float, EncodedChunk, EncodedChunk]:
        async with await ProcessPool.open(2) as pool:
            quick = await pool.run(job, BACKGROUND)  # flag clear: no waiting
            pool._set_urgent(+1)  # as ProcessPool.run does for an urgent job
            try:
                start = time.monotonic()
                paused = await pool.run(job, BACKGROUND)
                elapsed = time.monotonic() - start
            finally:
                pool._set_urgent(-1)
        return elapsed, quick, paused

    elapsed, quick, paused = anyio.run(main)
    assert quick == paused == expected
    assert elapsed >= pause_points * BACKGROUND_PAUSE * 0.9
