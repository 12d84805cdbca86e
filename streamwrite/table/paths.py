"""Where a listed segment's data is now: ``data.parquet``, or ``_data.retired`` once
compaction retired it (``format/txn.py``: a data file's name moves one way only)."""

from __future__ import annotations

from pathlib import Path

from streamwrite.errors import CorruptFileError
from streamwrite.format.txn import DATA_FILE, RETIRED_DATA_FILE

__all__ = ["segment_data_path"]


def _missing(directory: Path) -> CorruptFileError:
    return CorruptFileError(
        f"The segment {str(directory)!r} that the table's _txn names has no data file (neither "
        f"{DATA_FILE} nor {RETIRED_DATA_FILE}): committed data is gone. It was deleted, or a "
        "retired segment was swept after its grace period while this snapshot was read.",
        0,
    )


def segment_data_path(directory: Path) -> Path:
    """The data file of the segment in ``directory`` (``table/partition/seg-N``), listed or
    retired: ``data.parquet``, else ``_data.retired``.

    Returns:
        The path (it may be renamed from the first to the second name after this returns:
        open it, and on ``FileNotFoundError`` ask again).

    Raises:
        CorruptFileError: the segment has neither file.
    """
    for name in (DATA_FILE, RETIRED_DATA_FILE):
        if (directory / name).is_file():
            return directory / name
    raise _missing(directory)
