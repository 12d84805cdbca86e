"""Opening a table directory: the writer lock, recovery of segments, deletion of old ones.

Recovery, given the newest ``_txn`` (``layout/txn.py`` states the rules)::

    partition dir not in _txn                 never published: delete it
    segment dir listed                        committed size == listed: keep
                                              ahead of _txn: roll back to the listed size
                                              behind, or missing: CorruptFileError
    segment dir retired                       keep until the grace period passes (sweep)
    segment dir neither listed nor retired    never published (creation or compaction
                                              crashed before its _txn): delete it

No segment stays open: each is checked through its ``_pm`` (the last footer names the
committed parquet size) and opened, which recovers it, only when that check fails or disagrees
with ``_txn``. The table opens a partition's newest segment when it first appends to it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from streamwrite._io import fsync_directory
from streamwrite.encryption import FileEncryption
from streamwrite.errors import CorruptFileError, StreamwriteError, StreamwriteIOError
from streamwrite.format._sidecar_header import read_header
from streamwrite.format.sidecar import read_footer_at
from streamwrite.layout.actions import LiveFileName
from streamwrite.layout.txn import TxnRecord, segment_number
from streamwrite.live import LiveFile

__all__ = [
    "LOCK_FILE",
    "TableLock",
    "delete_segment",
    "recover_segments",
    "segment_numbers",
    "sweep_retired",
]

LOCK_FILE = "_lock"
LOCK_POLL_SECONDS = 0.05


class TableLock:
    """``flock`` on ``<table>/_lock``: one writer per table (readers never lock)."""

    def __init__(self, directory: Path, timeout_seconds: float = 0.0) -> None:
        self._fd: int | None = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + timeout_seconds
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError as exc:
                if time.monotonic() < deadline:
                    time.sleep(LOCK_POLL_SECONDS)
                    continue
                os.close(self._fd)
                self._fd = None
                raise StreamwriteIOError(
                    f"The table {str(directory)!r} is open for writing elsewhere (its "
                    f"{LOCK_FILE} is locked; waited {timeout_seconds:g} s); one writer per table."
                ) from exc

    def release(self) -> None:
        """Unlock (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)  # closing releases the flock
            self._fd = None


def delete_segment(directory: Path) -> None:
    """Remove a segment (or partition) directory and make the removal durable."""
    shutil.rmtree(directory, ignore_errors=True)
    if directory.parent.exists():
        fsync_directory(directory.parent)


def _committed_size(directory: Path) -> int | None:
    """The committed ``data.parquet`` size named by a segment's ``_pm``, None if unreadable."""
    try:
        data = (directory / LiveFileName.PM.value).read_bytes()
        header, pm_size = read_header(data)
        if pm_size == 0:
            return None
        return read_footer_at(data, pm_size, header).parquet_file_size
    except (OSError, StreamwriteError):
        return None


async def _open_at(
    directory: Path,
    listed: int,
    schema: pa.Schema,
    write_options: dict[str, Any],
    encryption: FileEncryption | None,
) -> LiveFile:
    """Open a listed segment and bring it back to its ``_txn`` size."""
    if not (directory / LiveFileName.DATA.value).exists():
        raise CorruptFileError(f"The segment {str(directory)!r} listed in _txn is missing.", 0)
    live = await LiveFile.open(directory, schema, encryption=encryption, **write_options)
    try:
        current = live.last_commit.parquet_size
        if current > listed:
            await live.rollback(listed)
        elif current < listed:
            raise CorruptFileError(
                f"Segment {str(directory)!r} has {current} committed bytes, the table's _txn "
                f"records {listed}.",
                current,
            )
    except BaseException:
        await live.close()
        raise
    return live


async def recover_segments(
    path: Path,
    record: TxnRecord,
    schema: pa.Schema,
    write_options: dict[str, Any],
    encryption: FileEncryption | None,
) -> None:
    """Apply the recovery rules of the module docstring. Segments whose ``_pm`` names their
    listed size are left closed; the others are opened (recovered), rolled back, closed."""
    retired = {r.path for r in record.retired}
    for child in sorted(p for p in path.iterdir() if p.is_dir() and p.name[0] not in "._"):
        segments = record.partitions.get(child.name)
        if segments is None:  # only unpublished segments
            delete_segment(child)
            continue
        listed = {segment.name for segment in segments}
        for entry in sorted(child.iterdir()):
            unpublished = entry.name not in listed and f"{child.name}/{entry.name}" not in retired
            if entry.is_dir() and segment_number(entry.name) is not None and unpublished:
                delete_segment(entry)
        for segment in segments:
            directory = child / segment.name
            if _committed_size(directory) != segment.size:
                live = await _open_at(directory, segment.size, schema, write_options, encryption)
                await live.close()
    missing = [name for name in record.partitions if not (path / name).is_dir()]
    if missing:
        raise CorruptFileError(
            f"Partition(s) {sorted(missing)} listed in _txn are missing from {str(path)!r}.", 0
        )
    if record.partitions:  # one segment opened now: encryption settings that do not fit fail here
        newest = max(record.partitions)
        segment = record.partitions[newest][-1]
        live = await _open_at(
            path / newest / segment.name, segment.size, schema, write_options, encryption
        )
        await live.close()


def sweep_retired(
    path: Path,
    record: TxnRecord,
    grace_seconds: float,
    is_pinned: Callable[[str], bool],
    now: float | None = None,
) -> list[str]:
    """Delete retired segments past their grace period that no snapshot of this process pins.

    Returns:
        The ``partition/segment`` paths deleted (the caller publishes a ``_txn`` without them).
    """
    now = time.time() if now is None else now
    deleted = []
    for retired in record.retired:
        if now - retired.since >= grace_seconds and not is_pinned(retired.path):
            delete_segment(path / retired.path)
            deleted.append(retired.path)
    return deleted


def segment_numbers(path: Path, record: TxnRecord) -> dict[str, int]:
    """The next unused segment number of each partition (over ``_txn`` and the disk)."""
    numbers: dict[str, int] = {}

    def see(partition: str, name: str) -> None:
        number = segment_number(name)
        if number is not None:
            numbers[partition] = max(numbers.get(partition, 0), number + 1)

    for partition, segments in record.partitions.items():
        for segment in segments:
            see(partition, segment.name)
    for retired in record.retired:
        see(*retired.path.split("/", 1))
    for partition in record.partitions:
        if (path / partition).is_dir():
            for entry in (path / partition).iterdir():
                see(partition, entry.name)
    return numbers
