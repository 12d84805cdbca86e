"""The process pool (real worker processes) against the inline executor."""

from __future__ import annotations

import functools
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from anyio import wait_all_tasks_blocked

import streamwrite
from streamwrite import errors
from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.encode import encode_row_group, row_group_jobs
from streamwrite.errors import ConfigError, StateError, WorkerError
from streamwrite.format.chunk import EncodedChunk
from streamwrite.format.enums import Encoding
from streamwrite.options import make_write_options
from streamwrite.pool.executor import InlineExecutor
from streamwrite.pool.process import SEGMENT_PREFIX, ProcessPool
from streamwrite.testing import reference_table
from workers.jobs import EncodeChunkJob
from workers.values import BinaryValues

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def run(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    return anyio.run(functools.partial(fn, *args))


# Job types the workers import from this module by pickle reference (tests only).
@dataclass(frozen=True, slots=True)
class SleepJob(EncodeChunkJob):
    """Sleeps, then encodes as usual."""

    sleep_seconds: float = 0.0
    started_path: str | None = None
    """Created by the worker when the job starts (the parent polls for it: another process)."""

    def run(self) -> EncodedChunk:
        if self.started_path is not None:
            Path(self.started_path).touch()
        time.sleep(self.sleep_seconds)
        return super(SleepJob, self).run()


@dataclass(frozen=True, slots=True)
class SuicideJob(EncodeChunkJob):
    """Kills its worker with SIGKILL."""

    def run(self) -> EncodedChunk:
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")


@dataclass(frozen=True, slots=True)
class ExitJob(EncodeChunkJob):
    def run(self) -> EncodedChunk:
        os._exit(3)


def _make_error(cls: type[Exception]) -> Exception:
    """An instance of a streamwrite error class, with the arguments its constructor takes."""
    if issubclass(cls, errors.CorruptFileError):
        return cls("Column 'x' is broken.", 1234)
    if cls is errors.StaleBatchError:
        return errors.StaleBatchError("job-1", 3, 17)
    return cls("Column 'x' is broken.")


@dataclass(frozen=True, slots=True)
class RaiseJob(EncodeChunkJob):
    """Raises ``streamwrite.<error_name>``, looked up through the public package (so in the
    worker too the class reports ``__module__ == "streamwrite"`` and pickles by that name)."""

    error_name: str = "SchemaError"

    def run(self) -> EncodedChunk:
        raise _make_error(getattr(streamwrite, self.error_name))


def _nullable_table(num_rows: int) -> pa.Table:
    """The reference table with nulls in some columns."""
    table = reference_table(num_rows)
    mask = pa.array(np.random.default_rng(7).random(num_rows) < 0.2)
    columns = {}
    for name in table.column_names:
        column = table[name]
        if name in ("symbol", "price", "side"):
            column = pc.if_else(mask, pa.scalar(None, column.type), column)
        columns[name] = column
    return pa.table(columns)


def _jobs(table: pa.Table, **options: Any) -> list[EncodeChunkJob]:
    schema = arrow_to_parquet(table.schema)
    return row_group_jobs(table, schema, make_write_options(table.schema.names, **options))


# First in the module, so that this process's forkserver starts with the worker environment.
@pytest.mark.parametrize("start_method", ["spawn", "forkserver"])
def test_workers_start_with_the_malloc_tunables(start_method: str) -> None:
    async def main() -> list[str]:
        async with await ProcessPool.open(1, start_method=start_method) as pool:
            return [_environ(pid).get("GLIBC_TUNABLES", "") for pid in pool.worker_pids()]

    def _environ(pid: int) -> dict[str, str]:
        raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        return dict(item.decode().split("=", 1) for item in raw if b"=" in item)

    if start_method == "forkserver" and _forkserver_running():
        pytest.skip("the forkserver was started before this test, with its own environment")
    values = run(main)
    # glibc parses the tunables in place (':' becomes NUL), so only the first one shows here.
    assert values and all(v.startswith("glibc.malloc.mmap_threshold=268435456") for v in values)
    assert "GLIBC_TUNABLES" not in os.environ or os.environ["GLIBC_TUNABLES"] != values[0]


def _forkserver_running() -> bool:
    from multiprocessing import forkserver

    return forkserver._forkserver._forkserver_pid is not None  # type: ignore[attr-defined]


OPTION_SETS: list[dict[str, Any]] = [
    {},
    {
        "bloom_filter_options": {"symbol": True, "order_id": {"ndv": 20_000, "fpp": 0.01}},
        "dictionary_pagesize_limit": 4096,  # order_id falls back from the dictionary
        "data_page_size": 16 * 1024,
    },
    {
        "data_page_version": "2.0",
        "compression": "snappy",
        "column_encoding": {"qty": "DELTA_BINARY_PACKED", "price": "BYTE_STREAM_SPLIT"},
        "use_dictionary": ["symbol", "venue"],
    },
]


@pytest.mark.parametrize("options", OPTION_SETS)
def test_pool_output_is_byte_identical_to_inline(options: dict[str, Any]) -> None:
    table = _nullable_table(20_000)
    jobs = _jobs(table, **options)
    expected = encode_row_group(
        table, arrow_to_parquet(table.schema), make_write_options(table.column_names, **options)
    )

    async def main() -> tuple[list[EncodedChunk], list[EncodedChunk]]:
        async with await ProcessPool.open(2) as pool:
            pooled = await pool.run_all(jobs)
        async with InlineExecutor() as inline:
            return pooled, await inline.run_all(jobs)

    pooled, inline = run(main)
    assert len(pooled) == len(expected) == table.num_columns
    for got, via_thread, want in zip(pooled, inline, expected, strict=True):
        for chunk in (got, via_thread):
            assert chunk.data == want.data
            assert chunk.meta_data == want.meta_data
            assert chunk.column_index == want.column_index
            assert chunk.offset_index == want.offset_index
            assert chunk.bloom_filter == want.bloom_filter
    assert any(chunk.bloom_filter for chunk in pooled) == bool(options.get("bloom_filter_options"))


def test_binary_slices_of_a_large_buffer_are_compacted() -> None:
    values = BinaryValues.from_pylist([b"x" * (i % 7) for i in range(1000)])
    sliced = values[300:400]  # offsets do not start at 0; data is the whole buffer
    (job,) = _jobs(pa.table({"s": pa.array([b"y"], pa.binary())}))
    job = replace(job, values=sliced, def_levels=None, num_rows=len(sliced))
    job = replace(job, settings=replace(job.settings, max_definition_level=0))

    async def main() -> tuple[EncodedChunk, EncodedChunk, int]:
        async with await ProcessPool.open(1) as pool:
            return await pool.run(job), await InlineExecutor().run(job), pool.bytes_shared

    pooled, inline, shared = run(main)
    assert pooled == inline
    assert shared < 2 * (sliced.offsets.nbytes + sliced.total_size) + 256


def test_many_concurrent_jobs_of_different_sizes_come_back_in_order() -> None:
    table = reference_table(30_000)
    rng = np.random.default_rng(3)
    jobs: list[EncodeChunkJob] = []
    for length in rng.integers(1, 30_000, size=12):
        start = int(rng.integers(0, 30_000 - length + 1))
        jobs.extend(_jobs(table.slice(start, int(length))))
    rng.shuffle(jobs)

    async def main() -> tuple[list[EncodedChunk], list[EncodedChunk], int]:
        async with await ProcessPool.open(3) as pool:
            got = await pool.run_all(jobs)
            done = pool.jobs_done
        return got, await InlineExecutor().run_all(jobs), done

    got, want, done = run(main)
    assert done == len(jobs) == 84
    assert got == want


def test_a_dead_worker_fails_its_job_and_is_replaced() -> None:
    (job,) = _jobs(reference_table(1_000).select(["qty"]))
    killer = SuicideJob(job.settings, job.values, job.def_levels, job.num_rows)
    exiter = ExitJob(job.settings, job.values, job.def_levels, job.num_rows)

    async def main() -> None:
        async with await ProcessPool.open(2) as pool:
            before = set(pool.worker_pids())
            with pytest.raises(WorkerError, match=r"killed by signal 9.*'qty'"):
                await pool.run(killer)
            with pytest.raises(WorkerError, match="exit code 3"):
                await pool.run(exiter)
            after = set(pool.worker_pids())
            assert len(after) == 2 and after != before
            # The pool keeps working: several jobs at once, on both the old and new workers.
            assert await pool.run_all([job] * 6) == [await InlineExecutor().run(job)] * 6
            # A failure in one job of run_all surfaces as that job's error.
            with pytest.raises(WorkerError):
                await pool.run_all([job, killer, job])
            assert await pool.run(job) == await InlineExecutor().run(job)

    run(main)


def test_killing_a_busy_worker_from_outside_gives_worker_error(tmp_path: Path) -> None:
    (job,) = _jobs(reference_table(100).select(["ts"]))
    started = tmp_path / "started"
    slow = SleepJob(
        job.settings,
        job.values,
        job.def_levels,
        job.num_rows,
        sleep_seconds=10,
        started_path=str(started),
    )

    async def main() -> None:
        async with await ProcessPool.open(1) as pool:
            (pid,) = pool.worker_pids()

            async def kill_soon() -> None:
                with anyio.fail_after(10):  # the worker is another process: poll its marker
                    while not started.exists():
                        await anyio.sleep(0.005)
                os.kill(pid, signal.SIGKILL)

            start = time.monotonic()
            async with anyio.create_task_group() as tg:
                tg.start_soon(kill_soon)
                with pytest.raises(WorkerError, match="killed by signal 9"):
                    await pool.run(slow)
            assert time.monotonic() - start < 5
            assert pool.worker_pids() != [pid]
            assert await pool.run(job) == await InlineExecutor().run(job)

    run(main)


def test_a_cancelled_job_is_discarded_and_the_worker_reused() -> None:
    (job,) = _jobs(reference_table(2_000).select(["order_id"]))
    slow = SleepJob(job.settings, job.values, job.def_levels, job.num_rows, sleep_seconds=0.5)

    async def main() -> None:
        async with await ProcessPool.open(1) as pool:
            (pid,) = pool.worker_pids()
            with anyio.move_on_after(0.1) as scope:
                await pool.run(slow)
            assert scope.cancelled_caught
            # The next job waits for the abandoned one, then runs on the same worker.
            assert await pool.run(job) == await InlineExecutor().run(job)
            assert pool.worker_pids() == [pid]
            # Cancelled while queued behind a busy worker: nothing is sent at all.
            async with anyio.create_task_group() as tg:
                tg.start_soon(pool.run, slow)
                await wait_all_tasks_blocked()  # the slow job holds the worker
                with anyio.move_on_after(0.05):
                    await pool.run(job)
            assert await pool.run_all([job, job]) == [await InlineExecutor().run(job)] * 2

    run(main)


def test_exceptions_raised_in_a_job_come_back_unchanged() -> None:
    (job,) = _jobs(reference_table(100).select(["price"]))
    column = replace(job.settings.column, encoding=Encoding.DELTA_BINARY_PACKED)
    bad = replace(job, settings=replace(job.settings, column=column))

    async def main() -> tuple[BaseException, BaseException]:
        async with await ProcessPool.open(1) as pool:
            with pytest.raises(ConfigError) as pooled:
                await pool.run(bad)
            with pytest.raises(ConfigError) as in_run_all:
                await pool.run_all([job, bad, job])
            assert str(in_run_all.value) == str(pooled.value)
            assert await pool.run(job) == await InlineExecutor().run(job)  # still usable
        with pytest.raises(ConfigError) as inline:
            await InlineExecutor().run(bad)
        return pooled.value, inline.value

    pooled, inline = run(main)
    assert type(pooled) is type(inline)
    assert str(pooled) == str(inline) and "DELTA_BINARY_PACKED" in str(pooled)
    assert any("Raised in a pool worker" in note for note in getattr(pooled, "__notes__", []))


def test_every_streamwrite_error_raised_in_a_worker_arrives_as_its_class() -> None:
    (job,) = _jobs(reference_table(100).select(["qty"]))
    names = errors.__all__

    async def main() -> list[BaseException]:
        raised = []
        async with await ProcessPool.open(1) as pool:
            for name in names:
                failing = RaiseJob(
                    job.settings, job.values, job.def_levels, job.num_rows, error_name=name
                )
                with pytest.raises(streamwrite.StreamwriteError) as info:
                    await pool.run(failing)
                raised.append(info.value)
        return raised

    for name, error in zip(names, run(main), strict=True):
        cls = getattr(streamwrite, name)
        assert cls.__module__ == "streamwrite"
        assert type(error) is cls, (name, type(error))
        assert str(error) == str(_make_error(cls))
        assert any("Raised in a pool worker" in note for note in getattr(error, "__notes__", []))


def test_worker_error_pickles() -> None:
    error = WorkerError("A pool worker (pid 1, killed by signal 9) died.")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is WorkerError and str(again) == str(error)


def test_closed_pool_refuses_jobs_and_close_is_idempotent() -> None:
    (job,) = _jobs(reference_table(100).select(["qty"]))

    async def main() -> None:
        pool = await ProcessPool.open(1)
        assert pool.size == 1
        await pool.aclose()
        await pool.aclose()
        with pytest.raises(StateError, match="closed"):
            await pool.run(job)

    run(main)


def test_bad_pool_arguments_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="fork"):
        run(functools.partial(ProcessPool.open, 1, start_method="fork"))
    with pytest.raises(ConfigError, match="at least 1"):
        run(ProcessPool.open, 0)


SHUTDOWN_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    import anyio
    from anyio import wait_all_tasks_blocked
    from tests.pool.test_process import SleepJob, SuicideJob, _jobs
    from streamwrite.pool.process import ProcessPool
    from streamwrite.errors import StateError, WorkerError
    from streamwrite.testing import reference_table

    async def main(start_method):
        jobs = _jobs(reference_table(50_000))
        job = jobs[0]
        pool = await ProcessPool.open(2, start_method=start_method)
        for pid in pool.worker_pids():
            with open("/proc/%d/environ" % pid, "rb") as f:
                env = f.read()
            assert b"GLIBC_TUNABLES=glibc.malloc.mmap_threshold=268435456" in env, pid
        await pool.run_all(jobs)
        await pool.run_all(_jobs(reference_table(200_000)))  # arenas grow: segments replaced
        try:
            await pool.run(SuicideJob(job.settings, job.values, job.def_levels, job.num_rows))
        except WorkerError:
            pass
        with anyio.move_on_after(0.05):
            slow = SleepJob(
                job.settings, job.values, job.def_levels, job.num_rows, sleep_seconds=0.3
            )
            await pool.run(slow)
        await pool.run_all(jobs)
        # aclose while jobs are in flight: they complete, queued ones fail, all is unlinked.
        async def run_all_until_closed():
            try:
                await pool.run_all(jobs)
            except StateError as exc:
                assert "closed" in str(exc), exc

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_all_until_closed)
            await wait_all_tasks_blocked()  # jobs in flight
            await pool.aclose()
        prefix = "sw_%d_" % os.getpid()
        print("LEFT", [n for n in os.listdir("/dev/shm") if n.startswith(prefix)], flush=True)

    if __name__ == "__main__":
        anyio.run(main, sys.argv[1])
    """
)


@pytest.mark.parametrize("start_method", ["forkserver", "spawn"])
def test_clean_shutdown_leaves_no_segments_and_no_tracker_warnings(
    start_method: str, tmp_path: Path
) -> None:
    script = tmp_path / "pool_shutdown.py"
    script.write_text(SHUTDOWN_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "always"}
    proc = subprocess.run(
        [sys.executable, str(script), start_method],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "LEFT []" in proc.stdout
    assert "resource_tracker" not in proc.stderr and "leaked" not in proc.stderr, proc.stderr
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(SEGMENT_PREFIX)]


def test_transfer_overhead_is_small_against_encode_time() -> None:
    """Prints the parent's copy + pickle time against the workers' encode time (no assert)."""
    jobs = _jobs(reference_table(1_000_000))

    async def main() -> None:
        async with await ProcessPool.open(1) as pool:
            await pool.run_all(jobs)  # warm the arena and the worker's allocator
            transfer, encode = pool.transfer_seconds, pool.encode_seconds
            receive = pool.receive_seconds
            for _ in range(3):
                await pool.run_all(jobs)
            transfer = pool.transfer_seconds - transfer
            encode = pool.encode_seconds - encode
            receive = pool.receive_seconds - receive
        print(
            f"\n1M rows x 3, 1 worker: transfer {transfer:.3f} s, receive {receive:.3f} s, "
            f"encode {encode:.3f} s: transfer {100 * transfer / encode:.1f}% "
            f"(+receive {100 * (transfer + receive) / encode:.1f}%) of encode time"
        )
        assert transfer > 0 and encode > 0

    run(main)
