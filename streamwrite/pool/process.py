"""The process pool executor: :func:`workers.jobs.run_job` in worker processes.

It runs the same function on the same job as :class:`~streamwrite.InlineExecutor`
(:mod:`streamwrite.pool.executor`), so their output is byte-identical.

:class:`ProcessPool` rules:

- Workers are ``forkserver`` or ``spawn`` processes (never ``fork``: the parent runs threads and
  an event loop), started with ``GLIBC_TUNABLES`` raising glibc's mmap and trim thresholds (fresh
  page faults otherwise dominate the workers' kernel time) and with ``workers.jobs`` imported.
- Each worker has one pipe and one shared-memory arena (``sw_<pid>_<random>``) created and owned
  by the parent, reused across jobs and replaced by a larger one on demand. A job's buffers are
  copied into the arena; the pipe carries only a small descriptor (:mod:`workers.shm`). The
  encoded bytes come back through the arena when they fit, else through the pipe.
- While urgent jobs are in flight (waiting or running) a one-byte shared segment, the pause
  flag, is 1: a background MergeChunkJob (compaction) waits at its pause points (before each
  source chunk and before encoding; ``workers.shm.BACKGROUND_PAUSE`` at most each), so the
  cores go to the appends' jobs and the parent; the priority gate decides who gets a worker.
- A worker runs one job at a time. A slot (worker) is taken from the idle stack for a job and
  returned after it, so results can be awaited concurrently and ``run_all`` keeps job order.
- If the awaiting task is cancelled while its job runs, the worker is marked *stale*: its result
  is discarded by the next user of the slot, which waits for it first, so the arena is never
  rewritten or unlinked while a worker still reads it.
- A worker that dies fails its in-flight job with :class:`WorkerError` and is replaced at once;
  a worker found dead while idle is replaced and the job retried on the replacement.
- ``aclose()`` lets in-flight jobs finish (jobs still waiting for a worker fail with
  ``WorkerError``), stops the workers and unlinks every segment; a cancelled ``aclose()`` kills
  the workers instead of waiting. It is idempotent.
"""

from __future__ import annotations

import multiprocessing
import os
import secrets
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from multiprocessing.shared_memory import SharedMemory
from pathlib import Path
from types import TracebackType

import anyio

from streamwrite.errors import ConfigError, StateError, WorkerError
from streamwrite.format.chunk import EncodedChunk
from streamwrite.pool.executor import gather_in_order
from streamwrite.pool.gate import URGENT, PriorityGate
from streamwrite.pool.main_guard import check_main_guard
from workers.jobs import Job
from workers.shm import Reply, job_nbytes, pack_job, worker_main

__all__ = [
    "SEGMENT_PREFIX",
    "sweep_dead_segments",
    "WORKER_GLIBC_TUNABLES",
    "ProcessPool",
]

SEGMENT_PREFIX = "sw_"
"""Every shared-memory segment of a pool is named ``sw_<parent pid>_<random hex>``."""
SHM_DIRECTORY = Path("/dev/shm")


def sweep_dead_segments(directory: Path = SHM_DIRECTORY) -> list[str]:
    """Unlink pool segments whose parent process no longer exists.

    A parent killed together with its resource tracker (SIGKILL of its process group) leaves
    its segments behind; the next pool to open removes them. Segments of live processes, or of
    processes this user may not signal, are left alone.

    Returns:
        The names removed.
    """
    removed = []
    for path in directory.glob(f"{SEGMENT_PREFIX}*_*"):
        owner = path.name[len(SEGMENT_PREFIX) :].split("_", 1)[0]
        if not owner.isdigit() or int(owner) == os.getpid():
            continue
        try:
            os.kill(int(owner), 0)
        except ProcessLookupError:
            path.unlink(missing_ok=True)
            removed.append(path.name)
        except PermissionError:
            continue
    return removed


WORKER_GLIBC_TUNABLES = (
    "glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=1073741824"
)
"""Set in each worker's environment before it starts."""

START_TIMEOUT = 60.0
"""Seconds a new worker may take to import its modules and report ready."""

STOP_TIMEOUT = 5.0
"""Seconds a worker may take to exit after the stop message before it is killed."""

_MIN_SEGMENT_SIZE = 1 << 20


_ENV_LOCK = threading.Lock()


def _merged_tunables(existing: str | None) -> str:
    if not existing:
        return WORKER_GLIBC_TUNABLES
    present = {item.split("=", 1)[0] for item in existing.split(":")}
    extra = [t for t in WORKER_GLIBC_TUNABLES.split(":") if t.split("=", 1)[0] not in present]
    return ":".join([existing, *extra])


@contextmanager
def _worker_environment() -> Iterator[None]:
    """``GLIBC_TUNABLES`` for processes started (and a forkserver launched) inside the block."""
    with _ENV_LOCK:
        saved = os.environ.get("GLIBC_TUNABLES")
        os.environ["GLIBC_TUNABLES"] = _merged_tunables(saved)
        try:
            yield
        finally:
            if saved is None:
                del os.environ["GLIBC_TUNABLES"]
            else:
                os.environ["GLIBC_TUNABLES"] = saved


class _WorkerDiedError(Exception):
    pass


@dataclass(slots=True)
class _Transfer:
    seconds: float
    nbytes: int


class _Worker:
    """One worker process, its pipe and its arena (all blocking calls; run them in threads)."""

    def __init__(self, ctx: BaseContext, number: int) -> None:
        parent_conn, child_conn = ctx.Pipe(duplex=True)
        self.process: BaseProcess = ctx.Process(  # type: ignore[attr-defined]
            target=worker_main,
            args=(child_conn,),
            name=f"streamwrite-worker-{number}",
            daemon=True,
        )
        self.conn: Connection = parent_conn
        self.segment: SharedMemory | None = None
        self.stale = False
        try:
            with _worker_environment():
                self.process.start()
        finally:
            child_conn.close()
        if not self.conn.poll(START_TIMEOUT):
            self.kill()
            raise WorkerError(f"A pool worker did not start within {START_TIMEOUT} seconds.")
        try:
            message = self.conn.recv()
        except (EOFError, OSError) as exc:
            self.kill()
            raise WorkerError(
                f"A pool worker exited while starting (exit code {self.process.exitcode})."
            ) from exc
        self.pid: int = message[1]

    def _ensure_segment(self, nbytes: int) -> SharedMemory:
        segment = self.segment
        if segment is not None and segment.size >= nbytes:
            return segment
        old_size = 0 if segment is None else segment.size
        size = max(nbytes, 2 * old_size, _MIN_SEGMENT_SIZE)
        size = (size + _MIN_SEGMENT_SIZE - 1) // _MIN_SEGMENT_SIZE * _MIN_SEGMENT_SIZE
        name = f"{SEGMENT_PREFIX}{os.getpid()}_{secrets.token_hex(6)}"
        new = SharedMemory(name=name, create=True, size=size)
        self.release_segment()
        self.segment = new
        return new

    def release_segment(self) -> None:
        """Close and unlink the arena (only when the worker is not using it)."""
        segment, self.segment = self.segment, None
        if segment is None:
            return
        with suppress(BufferError):  # a result view is being read in another thread
            segment.close()
        segment.unlink()

    def submit(self, job: Job, pause_flag: str = "") -> _Transfer:
        """Copy ``job`` into the arena and send its descriptor (with ``pause_flag``).

        Raises:
            _WorkerDiedError: the worker exited.
        """
        start = time.perf_counter()
        nbytes = job_nbytes(job)
        if nbytes:
            segment = self._ensure_segment(nbytes)
            assert segment.buf is not None
            shared = pack_job(job, segment.name, segment.buf)
        else:
            shared = pack_job(job, "", memoryview(bytearray()))
        if pause_flag:
            shared = replace(shared, pause_flag=pause_flag)
        try:
            self.conn.send(shared)
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise _WorkerDiedError from exc
        return _Transfer(time.perf_counter() - start, nbytes)

    def receive(self) -> Reply:
        """Read the reply to the job in flight (copying the bytes out of the arena).

        Raises:
            _WorkerDiedError: the worker exited.
        """
        try:
            reply: Reply = self.conn.recv()
        except (EOFError, OSError) as exc:
            raise _WorkerDiedError from exc
        if reply.chunk is not None and reply.data_size >= 0:
            assert self.segment is not None and self.segment.buf is not None
            data = bytes(self.segment.buf[: reply.data_size])
            chunk = reply.chunk
            reply = Reply(
                EncodedChunk(
                    data,
                    chunk.meta_data,
                    chunk.column_index,
                    chunk.offset_index,
                    chunk.bloom_filter,
                    chunk.observed,
                ),
                -1,
                reply.encode_seconds,
            )
        return reply

    def exit_description(self) -> str:
        self.process.join(STOP_TIMEOUT)
        code = self.process.exitcode
        if code is not None and code < 0:
            return f"killed by signal {-code}"
        return f"exit code {code}"

    def stop(self, graceful: bool) -> None:
        """Stop the process (politely first if ``graceful``), close the pipe, unlink the arena."""
        if graceful and self.process.is_alive():
            with suppress(OSError):
                self.conn.send(None)
            self.process.join(STOP_TIMEOUT)
        self.kill()
        self.conn.close()
        self.release_segment()

    def kill(self) -> None:
        if self.process.exitcode is None:
            self.process.kill()
            self.process.join()


class _Slot:
    """A place for one worker; the worker in it is replaced when it dies."""

    def __init__(self, worker: _Worker | None) -> None:
        self.worker = worker


def _remote_error(reply: Reply, job: Job) -> Exception:
    error = reply.error
    if not isinstance(error, Exception):
        error = WorkerError(
            f"A job on column {'.'.join(job.settings.path_in_schema)!r} raised "
            f"{reply.error_type}: {reply.error_message} (the exception could not be pickled)."
        )
    error.add_note(f"Raised in a pool worker:\n{reply.error_traceback}")
    return error


class ProcessPool:
    """Runs jobs in worker processes, sending column buffers through shared memory.

    Open it with :meth:`open`; close it with :meth:`aclose` or ``async with``.
    """

    def __init__(self, ctx: BaseContext, size: int) -> None:
        """Use :meth:`open`."""
        self._ctx = ctx
        self._size = size
        self._slots: list[_Slot] = []
        self._all_slots: list[_Slot] = []
        self._gate = PriorityGate(size)
        self._closing = False
        self._closed = anyio.Event()
        self._started = 0
        self.jobs_done = 0
        """Jobs that returned a result or raised inside the worker."""
        self.bytes_shared = 0
        """Bytes copied into shared memory."""
        self.transfer_seconds = 0.0
        """Parent time spent copying job buffers into shared memory and pickling descriptors."""
        self.receive_seconds = 0.0
        """Parent time spent reading replies (unpickling, copying encoded bytes out)."""
        self.encode_seconds = 0.0
        """Worker time spent inside ``run_job``."""
        self._num_urgent = 0
        self._pause_flag = SharedMemory(
            name=f"{SEGMENT_PREFIX}{os.getpid()}_{secrets.token_hex(6)}", create=True, size=1
        )
        """One byte, 1 while urgent jobs are in flight: background merge jobs wait at their
        pause points while it is (:attr:`workers.shm.SharedJob.pause_flag`)."""

    @classmethod
    async def open(
        cls, size: int | None = None, *, start_method: str = "forkserver"
    ) -> ProcessPool:
        """Start ``size`` workers (default: the number of cores).

        Returns:
            The running pool.

        Raises:
            ConfigError: ``size`` below 1, an unusable ``start_method`` (``fork`` is
                refused), or a call from the main script's top level outside
                ``if __name__ == "__main__":`` (workers would re-run that code).
            WorkerError: a worker failed to start.
        """
        check_main_guard("ProcessPool.open()")
        if size is None:
            size = os.cpu_count() or 1
        if size < 1:
            raise ConfigError(f"The process pool size must be at least 1, got {size}.")
        if start_method not in ("forkserver", "spawn"):
            raise ConfigError(
                f"The process pool start method must be 'forkserver' or 'spawn', got "
                f"{start_method!r} ('fork' is unsafe in a process running threads)."
            )
        try:
            ctx = multiprocessing.get_context(start_method)
        except ValueError as exc:
            raise ConfigError(f"Start method {start_method!r} is not available here.") from exc
        if start_method == "forkserver":
            # Only takes effect if this process has not started its forkserver yet.
            ctx.set_forkserver_preload(["__main__", "workers.shm"])
        await anyio.to_thread.run_sync(sweep_dead_segments)
        pool = cls(ctx, size)
        errors: list[Exception] = []

        async def start(slot: _Slot) -> None:
            try:
                await pool._start_worker(slot)
            except Exception as exc:
                errors.append(exc)

        try:
            async with anyio.create_task_group() as tg:
                for _ in range(size):
                    slot = _Slot(None)
                    pool._slots.append(slot)
                    pool._all_slots.append(slot)
                    tg.start_soon(start, slot)
            if errors:
                raise errors[0]
        except BaseException:
            with anyio.CancelScope(shield=True):
                await pool._shutdown(graceful=False)
            raise
        return pool

    @property
    def size(self) -> int:
        """Number of worker processes."""
        return self._size

    def worker_pids(self) -> list[int]:
        """Returns: the process ids of the current workers."""
        return [slot.worker.pid for slot in self._all_slots if slot.worker is not None]

    async def _start_worker(self, slot: _Slot) -> None:
        self._started += 1
        slot.worker = await anyio.to_thread.run_sync(_Worker, self._ctx, self._started)

    async def _replace(self, slot: _Slot) -> None:
        """Stop the worker of ``slot`` and start another (unless closing). Call shielded."""
        dead, slot.worker = slot.worker, None
        if dead is not None:
            await anyio.to_thread.run_sync(dead.stop, False)
        if not self._closing:
            await self._start_worker(slot)

    async def _receive(self, slot: _Slot) -> Reply:
        """Wait for the reply of the job in flight on ``slot`` (cancellable while waiting).

        Raises:
            _WorkerDiedError: the worker exited (it has been replaced).
        """
        worker = slot.worker
        assert worker is not None
        try:
            await anyio.wait_readable(worker.conn)
        except anyio.ClosedResourceError:  # a forced shutdown closed the pipe
            raise _WorkerDiedError(f"pid {worker.pid}, stopped by the pool shutdown") from None
        with anyio.CancelScope(shield=True):
            start = time.perf_counter()
            try:
                reply = await anyio.to_thread.run_sync(worker.receive)
            except _WorkerDiedError:
                description = await anyio.to_thread.run_sync(worker.exit_description)
                await self._replace(slot)
                raise _WorkerDiedError(f"pid {worker.pid}, {description}") from None
            worker.stale = False
            self.receive_seconds += time.perf_counter() - start
        return reply

    async def _make_ready(self, slot: _Slot) -> _Worker:
        """A live worker for ``slot``, with any discarded result of a cancelled job drained."""
        if slot.worker is None:
            with anyio.CancelScope(shield=True):
                await self._start_worker(slot)
        worker = slot.worker
        assert worker is not None
        if worker.stale:
            with suppress(_WorkerDiedError):
                await self._receive(slot)
            worker = slot.worker
            assert worker is not None
        return worker

    async def _submit(self, slot: _Slot, job: Job, pause_flag: str = "") -> None:
        """Send ``job`` to the worker of ``slot``, replacing a worker found dead once
        (``pause_flag``: see :attr:`workers.shm.SharedJob.pause_flag`)."""
        with anyio.CancelScope(shield=True):
            for attempt in range(2):
                worker = slot.worker
                assert worker is not None
                try:
                    transfer = await anyio.to_thread.run_sync(worker.submit, job, pause_flag)
                except _WorkerDiedError:
                    if attempt:
                        raise WorkerError("Could not send a job to a fresh pool worker.") from None
                    await self._replace(slot)
                    continue
                worker.stale = True
                self.transfer_seconds += transfer.seconds
                self.bytes_shared += transfer.nbytes
                return

    async def run(self, job: Job, priority: int = URGENT) -> EncodedChunk:
        """Run ``job`` on a worker once one is free for ``priority``: urgent jobs (``0``, the
        default) before background jobs (``1``), which leave one worker free while urgent jobs
        are flowing (pools of 2 or more).

        Returns:
            The encoded chunk, equal to ``run_job(job)``.

        Raises:
            WorkerError: the worker died while running the job.
            StateError: the pool is closed.
            Exception: whatever ``run_job`` raised in the worker (same type and message).
        """
        if self._closing:
            raise StateError("The process pool is closed.")
        if priority > URGENT:
            return await self._run(job, priority)
        self._set_urgent(+1)
        try:
            return await self._run(job, priority)
        finally:
            self._set_urgent(-1)

    def _set_urgent(self, change: int) -> None:
        self._num_urgent += change
        buf = self._pause_flag.buf
        if buf is not None:  # None once closed
            buf[0] = 1 if self._num_urgent else 0

    async def _run(self, job: Job, priority: int) -> EncodedChunk:
        await self._gate.acquire(priority)
        try:
            if self._closing:
                raise StateError("The process pool was closed before this job could start.")
            slot = self._slots.pop()
            try:
                await self._make_ready(slot)
                await self._submit(slot, job, self._pause_flag.name if priority > URGENT else "")
                try:
                    reply = await self._receive(slot)
                except _WorkerDiedError as died:
                    column = ".".join(job.settings.path_in_schema)
                    raise WorkerError(
                        f"A pool worker ({died}) died while encoding column {column!r}."
                    ) from None
            finally:
                self._slots.append(slot)
        finally:
            self._gate.release()
        self.jobs_done += 1
        self.encode_seconds += reply.encode_seconds
        if reply.chunk is None:
            raise _remote_error(reply, job)
        return reply.chunk

    async def run_all(self, jobs: Sequence[Job], priority: int = URGENT) -> list[EncodedChunk]:
        """Run ``jobs`` concurrently on the workers.

        Returns:
            The results in job order.

        Raises:
            WorkerError, Exception: as :meth:`run`, for the first failing job in job order
            (the other jobs are cancelled).
        """
        return await gather_in_order(self, jobs, priority)

    async def aclose(self) -> None:
        """Wait for jobs in flight, stop the workers, unlink all shared memory. Idempotent."""
        if self._closing:
            await self._closed.wait()
            return
        self._closing = True
        graceful = False
        try:
            for _ in range(self._size):
                await self._gate.acquire()
            graceful = True
        finally:
            with anyio.CancelScope(shield=True):
                await self._shutdown(graceful)

    async def _shutdown(self, graceful: bool) -> None:
        self._closing = True
        for slot in self._all_slots:
            worker, slot.worker = slot.worker, None
            if worker is None:
                continue
            if worker.stale and graceful:
                try:
                    with anyio.fail_after(STOP_TIMEOUT):
                        await anyio.wait_readable(worker.conn)
                    await anyio.to_thread.run_sync(worker.receive)
                except (TimeoutError, _WorkerDiedError):
                    pass
            anyio.notify_closing(worker.conn)
            await anyio.to_thread.run_sync(worker.stop, graceful)
        with suppress(FileNotFoundError):  # a second shutdown (a failed open, then aclose)
            self._pause_flag.close()
            self._pause_flag.unlink()
        self._closed.set()

    async def __aenter__(self) -> ProcessPool:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
