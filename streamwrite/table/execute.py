"""Blocking execution of the table machine's file actions (:mod:`streamwrite.layout.table`),
and the directory scan recovery plans from (:mod:`streamwrite.layout.table_recovery`). Both
block: the table calls them through ``anyio.to_thread.run_sync``, never on the event loop.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from streamwrite.errors import StreamwriteError, StreamwriteIOError
from streamwrite.format.sidecar.codec import read_version
from streamwrite.format.txn import DATA_FILE, RETIRED_DATA_FILE, TxnRecord, segment_number
from streamwrite.io.local import fsync_directory, pwrite_all, sync_fd
from streamwrite.layout.actions import (
    CommitSegment,
    FsyncDirectory,
    FsyncFile,
    LiveFileName,
    RecoverSegment,
    RemoveTree,
    Rename,
    TableAction,
    WriteFile,
    WriteFileAt,
)
from streamwrite.layout.table_recovery import PartitionListing, SegmentListing

__all__ = ["ActionHook", "run_file_actions", "scan_segment", "scan_table"]

ActionHook = Callable[[TableAction], None]
"""Called before each action runs (tests raise in it to stop between two actions)."""


def _run_one(root: Path, action: TableAction) -> None:
    if isinstance(action, WriteFile):
        with open(root / action.path, "wb") as f:
            f.write(action.data)
    elif isinstance(action, WriteFileAt):
        fd = os.open(root / action.path, os.O_WRONLY)
        try:
            pwrite_all(fd, action.data, action.offset)
        finally:
            os.close(fd)
    elif isinstance(action, FsyncFile):
        fd = os.open(root / action.path, os.O_RDONLY)
        try:
            sync_fd(fd, data_only=action.data_only)
        finally:
            os.close(fd)
    elif isinstance(action, Rename):
        os.replace(root / action.source, root / action.target)
    elif isinstance(action, FsyncDirectory):
        fsync_directory(root / action.path)
    elif isinstance(action, RemoveTree):
        shutil.rmtree(root / action.path, ignore_errors=True)
    else:
        assert isinstance(action, CommitSegment | RecoverSegment)
        raise TypeError(f"{action!r} is a live-file step: the async shell runs it.")


def run_file_actions(
    root: Path, actions: Sequence[TableAction], hook: ActionHook | None = None
) -> None:
    """Run file actions in order in table directory ``root`` (blocking).

    Raises:
        StreamwriteIOError: an action failed (those before it ran; none after it).
    """
    for action in actions:
        if hook is not None:
            hook(action)
        try:
            _run_one(root, action)
        except OSError as exc:
            raise StreamwriteIOError(f"{action!r} in {str(root)!r} failed: {exc}.") from exc


def scan_segment(directory: Path, *, read_pm: bool = True) -> SegmentListing:
    """What a segment directory holds: data file sizes and (``read_pm``) its ``_pm``'s newest
    commit (one read of ``_pm``; a missing or damaged one names none)."""
    try:
        data_size: int | None = (directory / DATA_FILE).stat().st_size
    except FileNotFoundError:
        data_size = None
    committed_size = footer_xxh64 = None
    try:
        if not read_pm:
            raise FileNotFoundError(directory)
        _, _, footer = read_version((directory / LiveFileName.PM.value).read_bytes())
        committed_size = footer.parquet_file_size
        footer_xxh64 = footer.parquet_footer_checksum
    except (OSError, StreamwriteError):
        pass
    return SegmentListing(
        data_size, (directory / RETIRED_DATA_FILE).exists(), committed_size, footer_xxh64
    )


def scan_table(root: Path, record: TxnRecord) -> dict[str, PartitionListing]:
    """The partition directories of table ``root`` (names not starting with ``.`` or ``_``)
    and their segment directories (``seg-N``), as
    :func:`streamwrite.layout.table_recovery.plan_recovery` takes them; the ``_pm`` of the
    segments ``record`` lists are read."""
    listing = {}
    listed = {path for path, _ in record.files()}
    for child in sorted(p for p in root.iterdir() if p.is_dir() and p.name[0] not in "._"):
        segments = {
            entry.name: scan_segment(entry, read_pm=f"{child.name}/{entry.name}" in listed)
            for entry in sorted(child.iterdir())
            if entry.is_dir() and segment_number(entry.name) is not None
        }
        listing[child.name] = PartitionListing(segments)
    return listing
