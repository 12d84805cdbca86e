"""The durable file moves of a table's segments: delete one, publish one, retire some.

A segment is a directory ``<table>/<partition>/seg-N`` whose data file changes name as it goes
through its life (``streamwrite.format.txn`` names them)::

    _data.pending   a merged segment being written by compaction (no engine sees it)
        | publish_pending     rename, then fsync the segment directory
    data.parquet    listed in _txn (engines reading the table directory see it)
        | retire_segments     rename, then fsync the segment directory (skipped if done)
    _data.retired   retired by a compaction swap; pinned snapshots still read it
        | delete_segment      rmtree, then fsync the partition directory
    (gone)

Every step is a rename or removal made durable by an ``fsync`` of the directory holding it,
so a crash leaves each segment in one of the states above; the table's recovery finishes or
undoes the step from what ``_txn`` lists. These functions block: the async shells (tables,
compaction) run them in a worker thread.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from streamwrite.errors import StreamwriteIOError
from streamwrite.format.txn import DATA_FILE, PENDING_DATA_FILE, RETIRED_DATA_FILE
from streamwrite.io.local import fsync_directory

__all__ = ["delete_segment", "durable_rename", "publish_pending", "retire_segments"]


def delete_segment(directory: Path) -> None:
    """Remove a segment (or partition) directory and make the removal durable."""
    shutil.rmtree(directory, ignore_errors=True)
    if directory.parent.exists():
        fsync_directory(directory.parent)


def durable_rename(source: Path, target: Path) -> None:
    """Rename within one directory and make it durable (fsync of the directory).

    Raises:
        StreamwriteIOError: the rename or the fsync failed (the message names both paths).
    """
    try:
        os.rename(source, target)
        fsync_directory(target.parent)
    except OSError as exc:
        raise StreamwriteIOError(
            f"Renaming {str(source)!r} to {target.name!r} failed: {exc}."
        ) from exc


def publish_pending(directory: Path) -> None:
    """Give a merged segment's data file its published name (``_data.pending`` ->
    ``data.parquet``), durably: the step before the ``_txn`` swap that lists it.

    Raises:
        StreamwriteIOError: the rename failed.
    """
    durable_rename(directory / PENDING_DATA_FILE, directory / DATA_FILE)


def retire_segments(path: Path, paths: list[str]) -> None:
    """Move the data of retired segments (``partition/segment`` of table ``path``) out of
    every engine's reach (``data.parquet`` -> ``_data.retired``), durably; segments already
    retired are skipped (idempotent).

    Raises:
        StreamwriteIOError: a rename failed (those before it are done and durable).
    """
    for name in paths:
        directory = path / name
        if (directory / DATA_FILE).exists():
            durable_rename(directory / DATA_FILE, directory / RETIRED_DATA_FILE)
