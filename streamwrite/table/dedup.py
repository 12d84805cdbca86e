"""Idempotent appends: the dedup log of an open table (blocking file access for the table).

The byte layout is :mod:`streamwrite.format.dedup`; the decisions (which keys are remembered,
when the log rotates) are :class:`streamwrite.layout.dedup.DedupWindow`. This module opens
the log when the table opens (recovery: cut it to the size ``_txn`` records, load the keys
within the window, delete logs ``_txn`` does not name), and gives each commit that carries
keys one sync call that writes its records and syncs them, run in the commit's first sync
round with the segments (:func:`streamwrite.live.file.sync_live_files`), before the ``_txn``
publish: a key is in the committed log exactly when its rows are in the committed table.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
from collections.abc import Sequence
from pathlib import Path

from streamwrite.errors import ConfigError, CorruptFileError
from streamwrite.format.dedup import (
    DEDUP_HEADER,
    MAX_KEY_SIZE,
    MIN_KEY_SIZE,
    decode_dedup_log,
    is_dedup_log_name,
)
from streamwrite.format.txn import TxnRecord
from streamwrite.io.local import SyncCall, fsync_directory, pwrite_all, sync_fd
from streamwrite.layout.dedup import DEFAULT_ROTATE_SIZE, DedupWindow, DedupWrite

__all__ = [
    "DEFAULT_DEDUP_WINDOW",
    "ROTATE_SIZE",
    "DedupLogFile",
    "check_dedup_key",
    "check_dedup_window",
    "dedup_keys",
]

DEFAULT_DEDUP_WINDOW = 900.0
"""Seconds a committed dedup key is remembered by default (15 minutes)."""
ROTATE_SIZE = DEFAULT_ROTATE_SIZE
"""Bytes a dedup log reaches before it may be rotated (read when a table opens)."""


def check_dedup_window(value: object) -> float:
    """Returns: ``value`` as seconds (0 turns deduplication off).

    Raises:
        ConfigError: not a finite number >= 0.
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not (math.isfinite(value) and value >= 0)
    ):
        raise ConfigError(f"dedup_window must be a number of seconds >= 0, got {value!r}.")
    return float(value)


def check_dedup_key(key: object, app_id: str | None) -> None:
    """Check an append's ``dedup_key``.

    Raises:
        ConfigError: not ``bytes`` of 8..64 bytes, or given with an ``app_id`` (batch ids).
    """
    if key is None:
        return
    if not isinstance(key, bytes) or not MIN_KEY_SIZE <= len(key) <= MAX_KEY_SIZE:
        what = f"{len(key)} bytes" if isinstance(key, bytes) else f"a {type(key).__name__}"
        raise ConfigError(
            f"dedup_key must be bytes of {MIN_KEY_SIZE}..{MAX_KEY_SIZE} bytes (a digest of the "
            f"request), got {what}."
        )
    if app_id is not None:
        raise ConfigError(
            f"dedup_key and app_id/batch_id are two ways to make an append idempotent; use "
            f"one (got app_id {app_id!r} with a dedup_key)."
        )


def dedup_keys(keys: Sequence[bytes | None]) -> list[bytes]:
    """The distinct keys among ``keys`` (None left out), in order."""
    return list(dict.fromkeys(key for key in keys if key is not None))


class DedupLogFile:
    """The dedup log of an open table: its window (:class:`DedupWindow`) and file."""

    def __init__(self, directory: Path, window: DedupWindow) -> None:
        self.directory = directory
        self.window = window
        self._fd: int | None = None
        """The log's descriptor for appending (opened at its first append)."""

    @classmethod
    def open(
        cls, directory: Path, record: TxnRecord, window_seconds: float, now: float
    ) -> DedupLogFile:
        """Recover the table's dedup log (blocking): cut it to the size ``record`` names,
        load the keys committed within ``window_seconds`` before ``now``, and delete the dedup
        logs ``record`` does not name (a rotation that crashed before or after its publish).

        Returns:
            The open log (no file yet when ``record`` names none).

        Raises:
            CorruptFileError: the log ``record`` names is missing, shorter than its committed
                size, or damaged within it (open the table with ``dedup_window=0`` to write
                without deduplication).
        """
        log = record.dedup
        for entry in os.listdir(directory):
            if is_dedup_log_name(entry) and (log is None or entry != log.name):
                os.unlink(directory / entry)
        if log is None:
            return cls(directory, DedupWindow(window_seconds, rotate_size=ROTATE_SIZE))
        path = directory / log.name
        hint = "open the table with dedup_window=0 to write without deduplication"
        try:
            with open(path, "r+b") as f:
                data = f.read()
                if len(data) > log.size:
                    f.truncate(log.size)  # a torn or unpublished tail
        except FileNotFoundError as exc:
            raise CorruptFileError(
                f"The dedup log {str(path)!r} that the table's _txn names is missing ({hint}).",
                0,
            ) from exc
        if len(data) < log.size:
            raise CorruptFileError(
                f"The dedup log {str(path)!r} holds {len(data)} bytes; the table's _txn "
                f"records {log.size} committed ({hint}).",
                len(data),
            )
        try:
            records = decode_dedup_log(data[: log.size], str(path))
        except CorruptFileError as exc:
            raise CorruptFileError(f"{exc.message} ({hint})", exc.offset) from exc
        return cls(
            directory, DedupWindow(window_seconds, log, records, now, rotate_size=ROTATE_SIZE)
        )

    def remembered(self, key: bytes, now: float) -> bool:
        """True when ``key`` was committed within the window before ``now`` (commits past it
        are forgotten first, so memory holds one window of keys even between commits)."""
        self.window.expire(now)
        return self.window.remembered(key, now) is not None

    def sync_call(self, write: DedupWrite) -> SyncCall:
        """The call of the commit's first sync round that writes ``write`` and syncs it (for a
        new log: creates it, writes it whole, syncs it and the table directory)."""

        def run() -> None:
            if write.create:
                fd = os.open(
                    self.directory / write.name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644
                )
                try:
                    pwrite_all(fd, DEDUP_HEADER, 0)
                    if write.copy is not None:  # the old log's records within the window
                        self._copy(fd, *write.copy)
                    pwrite_all(fd, write.data, write.offset)
                    sync_fd(fd)
                    fsync_directory(self.directory)
                finally:
                    os.close(fd)
                return
            if self._fd is None:
                self._fd = os.open(self.directory / write.name, os.O_WRONLY)
            pwrite_all(self._fd, write.data, write.offset)
            sync_fd(self._fd)

        return f"the dedup log {write.name}", run

    def _copy(self, fd: int, name: str, offset: int, size: int) -> None:
        """Copy ``size`` bytes at ``offset`` of log ``name`` to just after ``fd``'s header."""
        source = os.open(self.directory / name, os.O_RDONLY)
        try:
            data = os.pread(source, size, offset)
        finally:
            os.close(source)
        if len(data) != size:
            raise OSError(errno.EIO, f"read {len(data)} of {size} bytes of {name} to rotate it")
        pwrite_all(fd, data, len(DEDUP_HEADER))

    def published(self, write: DedupWrite) -> None:
        """The ``_txn`` naming ``write``'s log is published: its keys are remembered (after a
        rotation, delete the old log with :meth:`delete`)."""
        self.window.committed(write)
        if write.create:
            self.close()  # the next append opens the new log

    def delete(self, name: str) -> None:
        """Delete the dedup log ``name`` that no published ``_txn`` names any more (blocking;
        a crash before it leaves the file to the next open)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.directory / name)

    def close(self) -> None:
        """Close the log's descriptor (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
