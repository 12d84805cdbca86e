"""The data files a snapshot view shows, opened when the view is made
(:mod:`streamwrite.table.snapshot_fs` has the rules): a local segment's data file as an open
descriptor (it survives a retire's rename and a sweep's unlink), a cold segment's object as a
ranged source (immutable: nothing to pin)."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from streamwrite.errors import CorruptFileError, StreamwriteIOError
from streamwrite.format.txn import cold_object_key
from streamwrite.io.remote import RangeSource
from streamwrite.table.state import TableSnapshot

__all__ = [
    "DATA_FILE",
    "DataFile",
    "MissingDataFileError",
    "close_fds",
    "open_files",
    "open_snapshot",
]

DATA_FILE = "data.parquet"
_RESOLVE_ATTEMPTS = 3
"""How many times a data file not found at its path is looked up again through the snapshot
(a segment retired meanwhile is renamed, once)."""


@dataclass(frozen=True, slots=True)
class DataFile:
    """One shown file: its committed size, open descriptor (or, for a cold segment, its
    object as a ranged source and no descriptor: -1) and modification time."""

    size: int
    fd: int
    mtime: float
    disk_path: str
    """The local path, or the cold object's URL."""
    source: RangeSource | None = None


def close_fds(fds: list[int]) -> None:
    """Close each descriptor of ``fds`` (errors ignored) and empty the list."""
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    fds.clear()


def open_files(
    entries: list[tuple[str, int, Path]],
) -> dict[str, DataFile]:
    """Open each ``(view path, committed size, disk path)``; all or nothing.

    Raises:
        FileNotFoundError: a data file is gone (its descriptors are closed again).
        CorruptFileError: a data file is shorter than its committed size.
        StreamwriteIOError: any other failure to open or stat.
    """
    opened: dict[str, DataFile] = {}
    fds: list[int] = []
    try:
        for view_path, size, disk_path in entries:
            fd = os.open(disk_path, os.O_RDONLY)  # not inherited by child processes (PEP 446)
            fds.append(fd)
            stat = os.fstat(fd)
            if stat.st_size < size:
                raise CorruptFileError(
                    f"{str(disk_path)!r} holds {stat.st_size} bytes, fewer than the committed "
                    f"size {size} its table records.",
                    stat.st_size,
                )
            opened[view_path] = DataFile(size, fd, stat.st_mtime, str(disk_path))
    except FileNotFoundError:
        close_fds(fds)
        raise
    except OSError as exc:
        close_fds(fds)
        raise StreamwriteIOError(f"Opening a data file of the snapshot failed: {exc}.") from exc
    except BaseException:
        close_fds(fds)
        raise
    return opened


def _table_entries(
    snapshot: TableSnapshot,
) -> tuple[list[tuple[str, int, Path]], dict[str, DataFile]]:
    """``(view path, committed size, disk path)`` of each local segment of ``snapshot``, and
    the shown file of each cold one (a ranged source: nothing to open)."""
    local: list[tuple[str, int, Path]] = []
    cold: dict[str, DataFile] = {}
    store = snapshot._cold_store()
    now = time.time()
    for name, size in snapshot.files:
        location = snapshot.segment_location(name)
        view_path = f"/{name}/{DATA_FILE}"
        if store is not None and location == store.object_url(cold_object_key(name)):
            source = RangeSource(store, cold_object_key(name), size)
            cold[view_path] = DataFile(size, -1, now, location, source)
        else:
            local.append((view_path, size, Path(location)))
    return local, cold


class MissingDataFileError(Exception):
    """A data file of a snapshot is gone (its segment was swept, or the table is damaged)."""


def open_snapshot(snapshot: TableSnapshot) -> dict[str, DataFile]:
    """Open the data files of ``snapshot``, taking their on-disk paths from the snapshot.

    A segment retired between asking for its path and opening it may have been renamed
    (retiring only renames forward), so a file not found sends the view back to
    ``TableSnapshot.data_files()`` for the current paths, a few times.

    Raises:
        MissingDataFileError: a data file is gone (the table API found none, or it vanished
            each time).
        CorruptFileError: a data file is shorter than its committed size.
        StreamwriteIOError: a data file cannot be opened.
    """
    detail = ""
    for _ in range(_RESOLVE_ATTEMPTS):
        try:
            entries, cold = _table_entries(snapshot)
        except CorruptFileError as exc:  # the table API found no data file for a segment
            raise MissingDataFileError(str(exc)) from exc
        try:
            return {**open_files(entries), **cold}
        except FileNotFoundError as exc:
            detail = f"{exc.filename!r} was not found"
    raise MissingDataFileError(detail)
