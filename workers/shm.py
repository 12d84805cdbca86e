"""Shared-memory transport of encode jobs, and the worker process loop of the process pool.

The parent (``streamwrite.pool.process``) owns one shared-memory segment per worker, the *arena*,
and
reuses it across jobs (growing it on demand). For each job it copies the column buffers into the
arena and sends the worker a small picklable :class:`SharedJob` through the worker's pipe::

    arena := [values | offsets, data] [def_levels] [rep_levels]   each array 64-byte aligned

    SharedJob(segment, segment_size, job, values, def_levels, ..., rep_levels)
        job         the EncodeChunkJob with values, def_levels and rep_levels None (settings,
                    num_rows; its class, so job subclasses run their own ``run``), or the
                    MergeChunkJob with each source's data=b""
        values      ArraySpec | BinarySpec, or None when the job carries its values inline
        def_levels  ArraySpec | None
        rep_levels  ArraySpec | None (a nested leaf's repetition levels)
        sources     a MergeChunkJob's source pages, (offset, size) each:
                    arena := [source 0] [source 1] ...   each at a 64-byte boundary

A ``BinaryValues`` is compacted on the way: only ``data[offsets[0]:offsets[-1]]`` is copied and
the offsets are rebased to start at zero, so a slice of a large buffer costs only its own bytes.

The worker attaches to the arena by name, builds read-only zero-copy numpy views, calls
:func:`workers.jobs.run_job`, and answers with a :class:`Reply`. When the encoded bytes fit into
the arena (the inputs are dead by then) it writes them there instead of pickling them through
the pipe. Workers attach without registering the segment with the resource tracker: the parent
created every segment, it alone unlinks them.

This module is imported by worker processes: it must not import anyio or the async shell.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sized
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from multiprocessing import resource_tracker
from multiprocessing.connection import Connection
from multiprocessing.shared_memory import SharedMemory
from typing import Any

import numpy as np
import numpy.typing as npt

from streamwrite.format.chunk import EncodedChunk
from workers.jobs import EncodeChunkJob, Job, MergeChunkJob, run_job
from workers.values import BinaryValues

__all__ = [
    "ALIGNMENT",
    "BACKGROUND_PAUSE",
    "ArraySpec",
    "BinarySpec",
    "PauseFlags",
    "Reply",
    "SharedJob",
    "SharedSegment",
    "attach_segment",
    "job_nbytes",
    "pack_job",
    "unpack_job",
    "worker_main",
]

ALIGNMENT = 64
"""Every array in an arena starts at a multiple of this many bytes."""


@dataclass(frozen=True, slots=True)
class ArraySpec:
    """Where one C-contiguous array lies in a segment."""

    offset: int
    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        """Bytes the array occupies."""
        return int(np.dtype(self.dtype).itemsize * int(np.prod(self.shape, dtype=np.int64)))


@dataclass(frozen=True, slots=True)
class BinarySpec:
    """Where a :class:`~workers.values.BinaryValues` lies (offsets rebased to start at 0)."""

    offsets: ArraySpec
    data: ArraySpec


@dataclass(frozen=True, slots=True)
class SharedJob:
    """The picklable descriptor of a job whose buffers lie in the segment ``segment``."""

    segment: str
    segment_size: int
    job: Job
    values: ArraySpec | BinarySpec | None
    def_levels: ArraySpec | None
    sources: tuple[tuple[int, int], ...] = ()
    """A MergeChunkJob's source pages: ``(offset, size)`` of each in the segment."""
    pause_flag: str = ""
    """A background MergeChunkJob: the pool's one-byte segment, non-zero while urgent jobs
    are in flight; the worker waits at the job's pause points while it is (``""``: never)."""
    rep_levels: ArraySpec | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """A worker's answer to one :class:`SharedJob`.

    ``chunk`` is set on success; its ``data`` is empty when the bytes were written to the arena
    at offset 0 (``data_size`` of them; -1 when they travel inside ``chunk``). On failure
    ``error`` holds the exception (or None when it could not be pickled, then ``error_type`` and
    ``error_message`` describe it) and ``error_traceback`` the worker's formatted traceback.
    ``encode_seconds`` is the worker's time inside ``run_job``.
    """

    chunk: EncodedChunk | None = None
    data_size: int = -1
    encode_seconds: float = 0.0
    error: BaseException | None = None
    error_type: str = ""
    error_message: str = ""
    error_traceback: str = ""


def _align(n: int) -> int:
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def _is_plain_array(value: object) -> bool:
    return isinstance(value, np.ndarray) and not value.dtype.hasobject


def _shareable(job: EncodeChunkJob) -> bool:
    values = job.values
    if isinstance(values, BinaryValues):
        return _is_plain_array(values.offsets) and _is_plain_array(values.data)
    return _is_plain_array(values)


def _binary_bounds(values: BinaryValues) -> tuple[int, int]:
    if values.offsets.shape[0] == 0:
        return 0, 0
    return int(values.offsets[0]), int(values.offsets[-1])


def job_nbytes(job: Job) -> int:
    """Returns: the arena bytes :func:`pack_job` needs for ``job`` (0 if it travels inline)."""
    if isinstance(job, MergeChunkJob):
        return sum(_align(len(source.data)) for source in job.sources)
    size = 0
    if _shareable(job):
        values = job.values
        if isinstance(values, BinaryValues):
            start, stop = _binary_bounds(values)
            size += _align(values.offsets.nbytes) + _align(stop - start)
        else:
            size += _align(values.nbytes)
    for levels in (job.def_levels, job.rep_levels):
        if levels is not None:
            size += _align(levels.nbytes)
    return size


def _put(buf: memoryview, offset: int, array: npt.NDArray[Any]) -> ArraySpec:
    spec = ArraySpec(offset, array.dtype.str, tuple(int(n) for n in array.shape))
    target: npt.NDArray[Any] = np.ndarray(array.shape, dtype=array.dtype, buffer=buf, offset=offset)
    np.copyto(target, array, casting="no")
    return spec


def pack_job(job: Job, segment: str, buf: memoryview) -> SharedJob:
    """Copy the buffers of ``job`` into ``buf`` (at least :func:`job_nbytes` long).

    Returns:
        The descriptor to send to a worker attached to ``segment``.
    """
    if isinstance(job, MergeChunkJob):
        return _pack_merge_job(job, segment, buf)
    offset = 0
    values_spec: ArraySpec | BinarySpec | None = None
    values = job.values
    if _shareable(job):
        if isinstance(values, BinaryValues):
            start, stop = _binary_bounds(values)
            offsets = ArraySpec(offset, np.dtype(np.int64).str, (int(values.offsets.shape[0]),))
            target: npt.NDArray[np.int64] = np.ndarray(
                offsets.shape, dtype=np.int64, buffer=buf, offset=offset
            )
            np.subtract(values.offsets, start, out=target, casting="unsafe")
            offset += _align(offsets.nbytes)
            data = _put(buf, offset, values.data[start:stop])
            offset += _align(data.nbytes)
            values_spec = BinarySpec(offsets, data)
        else:
            values_spec = _put(buf, offset, values)
            offset += _align(values_spec.nbytes)
        values = None
    levels_spec = rep_spec = None
    if job.def_levels is not None:
        levels_spec = _put(buf, offset, job.def_levels)
        offset += _align(levels_spec.nbytes)
    if job.rep_levels is not None:
        rep_spec = _put(buf, offset, job.rep_levels)
    hollow = replace(job, values=values, def_levels=None, rep_levels=None)
    return SharedJob(segment, len(buf), hollow, values_spec, levels_spec, rep_levels=rep_spec)


def _pack_merge_job(job: MergeChunkJob, segment: str, buf: memoryview) -> SharedJob:
    """Copy the source pages of ``job`` into ``buf`` (pickling them through the pipe would
    copy them three more times)."""
    offset = 0
    places = []
    for source in job.sources:
        size = len(source.data)
        buf[offset : offset + size] = source.data
        places.append((offset, size))
        offset += _align(size)
    hollow = replace(job, sources=tuple(replace(source, data=b"") for source in job.sources))
    return SharedJob(segment, len(buf), hollow, None, None, tuple(places))


def _view(buf: memoryview, spec: ArraySpec) -> npt.NDArray[Any]:
    array: npt.NDArray[Any] = np.ndarray(
        spec.shape, dtype=np.dtype(spec.dtype), buffer=buf, offset=spec.offset
    )
    array.flags.writeable = False
    return array


def unpack_job(shared: SharedJob, buf: memoryview) -> Job:
    """Returns: the job of ``shared`` with zero-copy, read-only views into ``buf``."""
    if isinstance(shared.job, MergeChunkJob):
        sources = tuple(
            replace(source, data=buf[offset : offset + size])
            for source, (offset, size) in zip(shared.job.sources, shared.sources, strict=True)
        )
        return replace(shared.job, sources=sources)
    values: Any = shared.job.values
    if isinstance(shared.values, BinarySpec):
        values = BinaryValues(_view(buf, shared.values.offsets), _view(buf, shared.values.data))
    elif isinstance(shared.values, ArraySpec):
        values = _view(buf, shared.values)
    levels = None if shared.def_levels is None else _view(buf, shared.def_levels)
    reps = None if shared.rep_levels is None else _view(buf, shared.rep_levels)
    return replace(shared.job, values=values, def_levels=levels, rep_levels=reps)


_TRACKER_LOCK = threading.Lock()


def _no_register(name: Sized, rtype: str) -> None:
    del name, rtype


@contextmanager
def _untracked() -> Iterator[None]:
    """Attach without telling the resource tracker (Python < 3.13 has no ``track=False``)."""
    with _TRACKER_LOCK:
        register = resource_tracker.register
        resource_tracker.register = _no_register
        try:
            yield
        finally:
            resource_tracker.register = register


def attach_segment(name: str) -> SharedMemory:
    """Attach to an existing segment without registering it with the resource tracker.

    Returns:
        The attached segment; close it (never unlink it: its creator does).
    """
    if sys.version_info >= (3, 13):
        return SharedMemory(name=name, track=False)
    with _untracked():
        return SharedMemory(name=name)


class SharedSegment:
    """A worker's attachment to the current arena; re-attaches when the parent replaces it."""

    def __init__(self) -> None:
        self._segment: SharedMemory | None = None
        self._retired: list[SharedMemory] = []

    def view(self, name: str) -> memoryview:
        """Returns: the buffer of segment ``name`` (attached on first use)."""
        if self._segment is None or self._segment.name != name.lstrip("/"):
            if self._segment is not None:
                self._retired.append(self._segment)
            self._segment = attach_segment(name)
            self._close_retired()
        buf = self._segment.buf
        assert buf is not None
        return buf

    def _close_retired(self) -> None:
        still_used = []
        for segment in self._retired:
            try:
                segment.close()
            except BufferError:  # a view is still alive somewhere; retry later
                still_used.append(segment)
        self._retired = still_used

    def close(self) -> None:
        """Detach from every segment."""
        if self._segment is not None:
            self._retired.append(self._segment)
            self._segment = None
        self._close_retired()


def _error_reply(exc: BaseException, encode_seconds: float) -> Reply:
    text = "".join(traceback.format_exception(exc))
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        kind = type(exc)
        return Reply(
            encode_seconds=encode_seconds,
            error_type=f"{kind.__module__}.{kind.__qualname__}",
            error_message=str(exc),
            error_traceback=text,
        )
    return Reply(encode_seconds=encode_seconds, error=exc, error_traceback=text)


BACKGROUND_PAUSE = 0.05
"""Seconds a background job waits, at one of its pause points, for the urgent jobs in flight
to finish (bounded: background work is slowed, never starved)."""
_PAUSE_POLL = 0.001


class PauseFlags:
    """A worker's attachments to pause flags (:attr:`SharedJob.pause_flag`)."""

    def __init__(self) -> None:
        self._flags: dict[str, SharedMemory] = {}

    def waiter(self, name: str) -> Callable[[], None]:
        """Returns: a function that waits while flag ``name`` is set (at most
        ``BACKGROUND_PAUSE`` seconds a call)."""
        flag = self._flags.get(name)
        if flag is None:
            flag = self._flags[name] = attach_segment(name)
        buf = flag.buf
        assert buf is not None

        def wait() -> None:
            deadline = time.monotonic() + BACKGROUND_PAUSE
            while buf[0] and time.monotonic() < deadline:
                time.sleep(_PAUSE_POLL)

        return wait

    def close(self) -> None:
        """Detach from every flag."""
        for flag in self._flags.values():
            with suppress(BufferError):
                flag.close()
        self._flags.clear()


def _serve(shared: SharedJob, segments: SharedSegment, flags: PauseFlags | None = None) -> Reply:
    start = time.perf_counter()
    try:
        buf = segments.view(shared.segment) if shared.segment else memoryview(b"")
        job = unpack_job(shared, buf)
        if shared.pause_flag and flags is not None and isinstance(job, MergeChunkJob):
            chunk = job.run(flags.waiter(shared.pause_flag))
        else:
            chunk = run_job(job)
        seconds = time.perf_counter() - start
        size = len(chunk.data)
        if shared.segment and size <= len(buf):
            buf[:size] = chunk.data
            return Reply(replace(chunk, data=b""), size, seconds)
        return Reply(chunk, -1, seconds)
    except Exception as exc:
        return _error_reply(exc, time.perf_counter() - start)


def worker_main(conn: Connection) -> None:
    """The loop of a pool worker: answer each :class:`SharedJob` from ``conn`` with a Reply.

    Sends ``("ready", pid)`` first; stops on ``None`` or when the parent's end closes.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when workers stop
    segments = SharedSegment()
    flags = PauseFlags()
    conn.send(("ready", os.getpid()))
    try:
        while True:
            try:
                shared = conn.recv()
            except EOFError:
                break
            if shared is None:
                break
            reply = _serve(shared, segments, flags)
            del shared
            try:
                conn.send(reply)
            except (BrokenPipeError, ConnectionResetError):
                break
            except Exception as exc:  # the result itself does not pickle
                conn.send(_error_reply(exc, reply.encode_seconds))
    finally:
        segments.close()
        flags.close()
        conn.close()
