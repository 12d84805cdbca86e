"""Blocking file access for a live-file directory: runs the actions the state machines return.

Used from a worker thread by the async shell. Offsets come from the actions (never ``tell()``);
writes use ``os.pwrite`` in a loop until every byte is written. The directory is locked with
``flock`` on ``_pm`` so that two writers never append to the same live file.

``Fsync`` runs as ``fdatasync`` (:func:`sync_fd`; ``fsync`` where the platform has no
``fdatasync``): a live file's writes append (fdatasync makes the new size durable with the
bytes) or overwrite in place, and no other inode metadata (times) is ever needed back.

Consecutive ``Fsync`` actions form one sync round (the first round of a commit: ``data.parquet``
and ``_pm``; a table's round covers every segment of the commit, :func:`run_sync_round`): with
:data:`CONCURRENT_SYNCS` they run at once, one in the calling thread and the others in a small
shared pool, so the filesystem may serve them with one journal commit; the round fails if any
of them fails. Their order is no promise of the disk anyway.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path

from streamwrite.errors import StreamwriteIOError
from streamwrite.layout.actions import Action, Fsync, LiveFileName, Truncate, WriteAt

__all__ = [
    "CONCURRENT_SYNCS",
    "ActionHook",
    "LiveFileIO",
    "SyncCall",
    "fsync_directory",
    "pwrite_all",
    "run_sync_round",
    "sync_fd",
]

ActionHook = Callable[[Action], None]
"""Called before each action; tests raise from it to inject failures between actions."""


def sync_fd(fd: int, *, data_only: bool = True) -> None:
    """Make the file's data durable: ``fdatasync`` (the data and the metadata needed to read
    it back, such as its size), or a full ``fsync`` when not ``data_only`` or where the
    platform has no ``fdatasync``."""
    if data_only and hasattr(os, "fdatasync"):
        os.fdatasync(fd)
    else:
        os.fsync(fd)


CONCURRENT_SYNCS = True
"""Run the syncs of one round concurrently (measured faster than one after the other on ext4:
the README's figures); False runs them in order in the calling thread."""
SYNC_THREADS = 4
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()

SyncCall = tuple[str, Callable[[], None]]
"""What a sync is (for the error message) and the call that runs it."""


def _sync_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(SYNC_THREADS, thread_name_prefix="streamwrite-sync")
        return _pool


def run_sync_round(calls: Sequence[SyncCall]) -> list[str]:
    """Run one round of syncs: at once (:data:`CONCURRENT_SYNCS`, the first in this thread),
    or in order; every one runs even when another fails.

    Returns:
        The failed syncs' descriptions with their errors (empty: all durable).
    """
    if not calls:
        return []
    futures: list[Future[None]] = []
    if CONCURRENT_SYNCS and len(calls) > 1:
        pool = _sync_pool()
        futures = [pool.submit(call) for _, call in calls[1:]]
        local = calls[:1]
    else:
        local = list(calls)
    failed = []
    for what, call in local:
        try:
            call()
        except OSError as exc:
            failed.append(f"{what} failed: {exc}")
    for (what, _), future in zip(calls[1:], futures, strict=False):
        try:
            future.result()
        except OSError as exc:
            failed.append(f"{what} failed: {exc}")
    return failed


def pwrite_all(fd: int, data: bytes | memoryview, offset: int) -> None:
    """Write every byte of ``data`` at ``offset`` (``pwrite`` in a loop).

    Raises:
        OSError: a write failed or wrote nothing.
    """
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        if written <= 0:
            raise OSError(errno.EIO, "pwrite wrote nothing")
        view = view[written:]
        offset += written


def fsync_directory(path: Path) -> None:
    """Make the directory's entries (new files, renames) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LiveFileIO:
    """Open file descriptors of ``data.parquet`` and ``_pm`` in one directory, locked.

    ``_pm`` doubles as the lock file and is created if missing (an empty ``_pm`` is what
    recovery treats as a missing one); ``data.parquet`` is created only with ``create``.
    ``data_file`` names the file that :attr:`LiveFileName.DATA` stands for (a table's
    compaction writes a merged segment under a name no engine reads, renamed once complete).
    """

    def __init__(
        self,
        directory: Path,
        *,
        create: bool,
        hook: ActionHook | None = None,
        data_file: str = LiveFileName.DATA.value,
    ) -> None:
        self.directory = directory
        self.hook = hook
        self.data_file = data_file
        self._fds: dict[LiveFileName, int] = {}
        try:
            # _pm is also the lock, so it is always created; an empty _pm reads as missing.
            self._fds[LiveFileName.PM] = os.open(
                directory / LiveFileName.PM.value, os.O_RDWR | os.O_CREAT, 0o644
            )
            data_flags = os.O_RDWR | (os.O_CREAT if create else 0)
            self._fds[LiveFileName.DATA] = os.open(directory / data_file, data_flags, 0o644)
            fcntl.flock(self._fds[LiveFileName.PM], fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.close()
            raise StreamwriteIOError(
                f"The live file {str(directory)!r} is open for writing elsewhere."
            ) from None
        except OSError as exc:
            self.close()
            raise StreamwriteIOError(
                f"Cannot open the live file {str(directory)!r}: {exc}."
            ) from exc

    def size(self, name: LiveFileName) -> int:
        """The filesystem size (an upper bound, never a commit boundary)."""
        return os.fstat(self._fds[name]).st_size

    def read(self, name: LiveFileName, offset: int, size: int) -> bytes:
        """``size`` bytes at ``offset`` (fewer only at the end of the file)."""
        chunks = []
        fd = self._fds[name]
        while size > 0:
            chunk = os.pread(fd, size, offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def read_all(self, name: LiveFileName) -> bytes:
        return self.read(name, 0, self.size(name))

    def run(self, actions: Iterable[Action]) -> None:
        """Execute actions in order (consecutive ``Fsync`` actions as one sync round).

        Raises:
            StreamwriteIOError: an action failed (the caller poisons its state machine).
        """
        pending = list(actions)
        start = 0
        while start < len(pending):
            end = start
            while end < len(pending) and isinstance(pending[end], Fsync):
                end += 1
            if end > start:
                failed = run_sync_round(self.sync_calls(pending[start:end]))
                if failed:
                    raise StreamwriteIOError(f"{'; '.join(failed)}.")
                start = end
                continue
            action = pending[start]
            fd = self._fds[action.file]
            try:
                if self.hook is not None:
                    self.hook(action)
                if isinstance(action, WriteAt):
                    pwrite_all(fd, action.data, action.offset)
                elif isinstance(action, Truncate):
                    os.ftruncate(fd, action.size)
            except OSError as exc:
                raise StreamwriteIOError(self._failed(action, exc)) from exc
            start += 1

    def sync_calls(self, syncs: Sequence[Action]) -> list[SyncCall]:
        """The calls of a sync round (run them with :func:`run_sync_round`); the action hook
        is called for each first, in order.

        Raises:
            StreamwriteIOError: the hook raised (for tests: a failure before the round).
        """
        calls: list[SyncCall] = []
        for action in syncs:
            try:
                if self.hook is not None:
                    self.hook(action)
            except OSError as exc:
                raise StreamwriteIOError(self._failed(action, exc)) from exc
            fd = self._fds[action.file]
            what = (
                f"{type(action).__name__} on {self._name(action.file)} in {str(self.directory)!r}"
            )
            calls.append((what, partial(sync_fd, fd)))
        return calls

    def _failed(self, action: Action, exc: OSError) -> str:
        return (
            f"{type(action).__name__} on {self._name(action.file)} in "
            f"{str(self.directory)!r} failed: {exc}."
        )

    def _name(self, name: LiveFileName) -> str:
        return self.data_file if name is LiveFileName.DATA else name.value

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)  # closing releases the flock
        self._fds.clear()
