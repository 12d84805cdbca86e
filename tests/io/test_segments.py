"""The durable file moves of segments (:mod:`streamwrite.io.segments`) on real directories.

* ``publish_pending``: ``_data.pending`` -> ``data.parquet``, bytes unchanged; without a pending
  file it raises StreamwriteIOError naming the path and changes nothing.
* ``retire_segments``: ``data.parquet`` -> ``_data.retired`` for each listed segment; a second
  call (recovery finishing an interrupted retire) changes nothing.
* ``delete_segment``: the directory and everything in it is gone; a missing one is no error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from streamwrite.errors import StreamwriteIOError
from streamwrite.format.txn import DATA_FILE, PENDING_DATA_FILE, RETIRED_DATA_FILE
from streamwrite.io.segments import delete_segment, publish_pending, retire_segments


def _segment(root: Path, name: str, data_file: str, payload: bytes) -> Path:
    directory = root / "p" / name
    directory.mkdir(parents=True)
    (directory / data_file).write_bytes(payload)
    (directory / "_pm").write_bytes(b"sidecar")
    return directory


def test_publish_pending_gives_the_data_file_its_published_name(tmp_path: Path) -> None:
    directory = _segment(tmp_path, "seg-000003", PENDING_DATA_FILE, b"PAR1 merged PAR1")
    publish_pending(directory)
    assert sorted(p.name for p in directory.iterdir()) == sorted([DATA_FILE, "_pm"])
    assert (directory / DATA_FILE).read_bytes() == b"PAR1 merged PAR1"


def test_publish_pending_without_a_pending_file_raises_and_changes_nothing(
    tmp_path: Path,
) -> None:
    directory = _segment(tmp_path, "seg-000003", DATA_FILE, b"old")
    with pytest.raises(StreamwriteIOError, match=f"Renaming .*{PENDING_DATA_FILE}.* failed"):
        publish_pending(directory)
    assert (directory / DATA_FILE).read_bytes() == b"old"


def test_retire_segments_is_idempotent(tmp_path: Path) -> None:
    first = _segment(tmp_path, "seg-000000", DATA_FILE, b"a")
    second = _segment(tmp_path, "seg-000001", DATA_FILE, b"b")
    kept = _segment(tmp_path, "seg-000002", DATA_FILE, b"c")
    retire_segments(tmp_path, ["p/seg-000000"])
    assert not (first / DATA_FILE).exists() and (first / RETIRED_DATA_FILE).read_bytes() == b"a"
    retire_segments(tmp_path, ["p/seg-000000", "p/seg-000001"])  # the first is done already
    assert (first / RETIRED_DATA_FILE).read_bytes() == b"a"
    assert (second / RETIRED_DATA_FILE).read_bytes() == b"b"
    assert (kept / DATA_FILE).read_bytes() == b"c" and not (kept / RETIRED_DATA_FILE).exists()


def test_delete_segment_removes_the_directory(tmp_path: Path) -> None:
    directory = _segment(tmp_path, "seg-000000", RETIRED_DATA_FILE, b"a")
    delete_segment(directory)
    assert not directory.exists() and (tmp_path / "p").is_dir()
    delete_segment(directory)  # gone already: nothing to do
    delete_segment(tmp_path / "p")  # a whole partition
    assert not (tmp_path / "p").exists()
