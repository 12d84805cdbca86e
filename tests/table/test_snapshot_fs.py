"""The snapshot view (``streamwrite.snapshot_filesystem``): what it lists, the committed-size
cut, open descriptors across compaction, versions, errors. Third-party engines reading through
it run in ``tests/interop/test_snapshot_readers.py``."""

from __future__ import annotations

import datetime
import functools
import os
import pickle
import threading
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite import snapshot_filesystem
from streamwrite.compaction.policy import CompactionPolicy
from streamwrite.errors import ConfigError, CorruptFileError, StateError, StreamwriteIOError
from streamwrite.live.file import LiveFile
from streamwrite.table.api import open_table, read_snapshot

DAY_NS = 86_400 * 10**9
START_NS = 1_767_225_600_000_000_000  # 2026-01-01
SCHEMA = pa.schema([("ts", pa.timestamp("ns")), ("seq", pa.int64())])
OPTIONS: dict[str, Any] = {
    "timestamp": "ts",
    "partition_by": "day",
    "segment_row_groups": 2,
    "compaction_interval": None,
}


def _run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return anyio.run(functools.partial(fn, *args, **kwargs))


def _rows(start: int, num_rows: int) -> pa.Table:
    """Rows ``seq = start..start+num_rows-1``, alternating between two days."""
    seq = np.arange(start, start + num_rows, dtype=np.int64)
    ts = START_NS + seq * 1000 + (seq % 2) * DAY_NS
    return pa.table({"ts": pa.array(ts, pa.timestamp("ns")), "seq": seq})


async def _append(path: Path, sizes: list[int], start: int = 0, **options: Any) -> int:
    async with await open_table(path, SCHEMA, **{**OPTIONS, **options}) as table:
        first = len(table.record.applied) and table.record.applied["a"] + 1
        for i, size in enumerate(sizes):
            await table.append(_rows(start, size), app_id="a", batch_id=first + i)
            start += size
        return table.version


def _make(path: Path, sizes: list[int], start: int = 0, **options: Any) -> int:
    """Append ``sizes`` rows in as many commits; returns the table's version after them."""
    return int(_run(_append, path, sizes, start, **options))


def _seq(table: pa.Table) -> list[int]:
    return sorted(table.column("seq").to_pylist())


def _data_paths(path: Path) -> dict[str, tuple[Path, int]]:
    """View path -> (disk path, committed size), from the table API."""
    snapshot = read_snapshot(path)
    return {
        f"/{name}/data.parquet": (disk, size)
        for (name, size), disk in zip(snapshot.files, snapshot.data_files(), strict=True)
    }


@pytest.fixture
def table_path(tmp_path: Path) -> Path:
    path = tmp_path / "t"
    _make(path, [10, 20, 30, 40, 50])  # 2 partitions, segments of 2 row groups
    return path


# -- what the view shows -----------------------------------------------------------------------


def test_the_view_lists_exactly_the_committed_data_files(table_path: Path) -> None:
    expected = _data_paths(table_path)
    assert len(expected) >= 4  # both partitions rolled to a second segment or more
    with snapshot_filesystem(table_path) as fs:
        assert fs.version == read_snapshot(table_path).version
        assert fs.find("/") == sorted(expected)
        assert fs.glob("/**/*.parquet") == sorted(expected)
        assert fs.glob("**/data.parquet") == sorted(expected)
        assert fs.glob(f"{fs.protocol}:///*/*/data.parquet") == sorted(expected)
        partitions = sorted({name.split("/")[1] for name in expected})
        assert fs.ls("/", detail=False) == [f"/{p}" for p in partitions]
        everything = fs.find("/", withdirs=True)
        assert not [p for p in everything if "/_" in p or "/." in p]  # no _txn, _pm, _lock
        for view_path, (_, size) in expected.items():
            info = fs.info(view_path)
            assert info["type"] == "file" and info["size"] == size == fs.size(view_path)
            assert fs.isfile(view_path) and not fs.isdir(view_path)
            assert fs.info(f"{fs.protocol}://{view_path}") == info
            assert fs.ls(view_path) == [info]
            assert isinstance(fs.modified(view_path), datetime.datetime)
            assert fs.ukey(view_path) != fs.ukey(sorted(set(expected) - {view_path})[0])
            assert isinstance(fs.checksum(view_path), int)
        directory = fs._parent(sorted(expected)[0])
        assert fs.isdir(directory) and fs.isdir("/") and fs.exists(directory)
        assert fs.info(directory)["type"] == "directory"
        for missing in ("/_txn", f"/{partitions[0]}/nope", "/nope/x/data.parquet"):
            assert not fs.exists(missing) and not fs.isfile(missing)
            with pytest.raises(FileNotFoundError):
                fs.info(missing)
        assert not fs.exists(f"{sorted(expected)[0][: -len('data.parquet')]}_pm")


def test_reads_stop_at_the_committed_size_even_with_bytes_past_it(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _make(path, [7, 9], partition_by=None, timestamp=None)
    (view_path, (disk, size)), *_ = _data_paths(path).items()
    with open(disk, "ab") as f:  # an append in flight: row group bytes, no footer yet
        f.write(b"\x15\x00torn append, no footer" * 100)
    committed = disk.read_bytes()[:size]
    with pytest.raises(pa.ArrowInvalid):  # the bare file: what engines saw during appends
        pq.read_table(disk)
    with snapshot_filesystem(path) as fs:
        assert fs.cat_file(view_path) == committed
        assert fs.cat_file(view_path, size - 10, size + 1000) == committed[-10:]
        assert fs.cat_file(view_path, -8) == committed[-8:]
        assert fs.cat_file(view_path, size, size + 10) == b""
        with fs.open(view_path) as f:
            assert f.size == size and f.read() == committed
            f.seek(size - 4)
            assert f.read(1000) == b"PAR1"
            assert f.read(10) == b""
            f.seek(size + 100)
            assert f.read(10) == b""
            f.seek(-8, 2)
            assert f.read() == committed[-8:]
            buffer = bytearray(32)
            f.seek(3)
            assert f.readinto(buffer) == 32 and bytes(buffer) == committed[3:35]
        assert fs.read_bytes(view_path) == committed
        assert _seq(pq.read_table("/", filesystem=fs)) == list(range(16))


def test_pyarrow_dataset_through_the_view_equals_read_table(table_path: Path) -> None:
    with snapshot_filesystem(table_path) as fs:
        dataset = ds.dataset("/", filesystem=fs, format="parquet")
        got = dataset.to_table()
        assert sorted(dataset.files) == fs.find("/")
        wrapped = pa.fs.PyFileSystem(pa.fs.FSSpecHandler(fs))
        assert ds.dataset("/", filesystem=wrapped, format="parquet").to_table().equals(got)
    want = streamwrite.read_table(table_path)
    assert got.sort_by("seq").equals(want.sort_by("seq"))


# -- versions ----------------------------------------------------------------------------------


def test_a_view_is_one_version_and_a_new_view_shows_the_next(table_path: Path) -> None:
    old = snapshot_filesystem(table_path)
    version = _make(table_path, [5], start=150)
    new = snapshot_filesystem(table_path)
    assert new is not old and new.protocol != old.protocol  # never fsspec's cached instance
    assert (old.version, new.version) == (version - 1, version)
    assert _seq(pq.read_table("/", filesystem=old)) == list(range(150))
    assert _seq(pq.read_table("/", filesystem=new)) == list(range(155))
    with snapshot_filesystem(table_path, version=version) as same:
        assert same.find("/") == new.find("/")
    with pytest.raises(ConfigError, match=r"only the newest _txn record \(version \d+\) is kept"):
        snapshot_filesystem(table_path, version=version - 1)
    with pytest.raises(ConfigError, match="is not committed"):
        snapshot_filesystem(table_path, version=version + 1)
    for bad in (True, "3", 1.0):
        with pytest.raises(ConfigError, match="version must be"):
            snapshot_filesystem(table_path, version=bad)  # type: ignore[arg-type]
    old.close()
    new.close()


def test_a_pinned_table_snapshot_is_shown_after_newer_commits_and_compaction(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t"
    _make(path, [10] * 6)
    policy = CompactionPolicy(grace_seconds=0, min_small_row_groups=2)

    async def go() -> None:
        async with await open_table(path, **{**OPTIONS, "compaction": policy}) as table:
            with table.snapshot() as pinned:
                await table.append(_rows(60, 10), app_id="a", batch_id=6)
                fs = snapshot_filesystem(path, version=pinned)
                assert fs.version == pinned.version < table.version
                await table.compact()
                assert table.record.retired  # pinned: retired, kept (wherever the layout puts it)
                with snapshot_filesystem(path, version=pinned) as after_compaction:
                    assert after_compaction.find("/") == fs.find("/")
                    got = ds.dataset("/", filesystem=after_compaction).to_table()
                    assert _seq(got) == list(range(60))
            # released and swept with grace 0: the old segments are deleted, the view still
            # reads them through its open descriptors
            assert await table.sweep_retired(0.0)
            assert table.record.retired == ()
            assert _seq(ds.dataset("/", filesystem=fs).to_table()) == list(range(60))
            fs.close()
            with pytest.raises(ConfigError, match="not"):
                snapshot_filesystem(tmp_path, version=table.snapshot())

    _run(go)


def test_an_open_view_reads_its_version_after_compaction_deletes_the_segments(
    table_path: Path,
) -> None:
    fs = snapshot_filesystem(table_path)
    before = set(fs.find("/"))
    want = _seq(pq.read_table("/", filesystem=fs))

    async def compact() -> None:
        policy = CompactionPolicy(grace_seconds=0, min_small_row_groups=2)
        async with await open_table(table_path, **OPTIONS, compaction=policy) as table:
            await table.compact()
            assert table.record.retired == ()  # grace 0: deleted at once

    _run(compact)
    gone = [disk for disk in (table_path / p.strip("/") for p in before) if not disk.exists()]
    assert gone  # compaction deleted (or moved) segments this view shows
    assert _seq(pq.read_table("/", filesystem=fs)) == want
    with snapshot_filesystem(table_path) as after:
        assert set(after.find("/")) != before
        assert _seq(pq.read_table("/", filesystem=after)) == want
        assert fs.version is not None and after.version is not None
        assert after.version > fs.version
    fs.close()


# -- a bare live file --------------------------------------------------------------------------


def test_a_bare_live_file_directory_shows_data_parquet_at_its_committed_size(
    tmp_path: Path,
) -> None:
    path = tmp_path / "live"

    async def go() -> int:
        async with await LiveFile.open(path, SCHEMA) as live:
            commit = await live.append(_rows(0, 12))
        return int(commit.parquet_size)

    size = _run(go)
    with open(path / "data.parquet", "ab") as f:
        f.write(b"uncommitted")
    with snapshot_filesystem(path) as fs:
        assert fs.version is None and fs.find("/") == ["/data.parquet"]
        assert fs.size("/data.parquet") == size
        assert _seq(pq.read_table("/data.parquet", filesystem=fs)) == list(range(12))
    with pytest.raises(ConfigError, match="applies to tables"):
        snapshot_filesystem(path, version=1)


# -- errors ------------------------------------------------------------------------------------


def test_bad_paths_and_damaged_tables_raise_typed_errors(table_path: Path, tmp_path: Path) -> None:
    for bad in (tmp_path / "missing", tmp_path):
        with pytest.raises(ConfigError, match="neither a table"):
            snapshot_filesystem(bad)
    (view_path, (disk, size)), *_ = _data_paths(table_path).items()
    os.truncate(disk, size - 1)
    with pytest.raises(CorruptFileError, match=f"fewer than the committed size {size}"):
        snapshot_filesystem(table_path)
    disk.unlink()
    with pytest.raises(CorruptFileError, match="lists a data file that is gone"):
        snapshot_filesystem(table_path)
    assert view_path.endswith("/data.parquet")


def test_the_view_is_read_only_and_a_closed_view_refuses_reads(table_path: Path) -> None:
    fs = snapshot_filesystem(table_path)
    view_path = fs.find("/")[0]
    for write in (
        lambda: fs.open(view_path, "wb"),
        lambda: fs.open("/new.parquet", "wb"),
        lambda: fs.rm(view_path),
        lambda: fs.mv(view_path, "/x"),
        lambda: fs.mkdir("/x"),
        lambda: fs.pipe_file("/x", b"data"),
        lambda: fs.touch(view_path),
    ):
        with pytest.raises(StreamwriteIOError, match="read-only"):
            write()
    with pytest.raises(IsADirectoryError):
        fs.open(fs._parent(view_path))
    with pytest.raises(FileNotFoundError):
        fs.open("/nope/data.parquet")
    with pytest.raises(StateError, match="cannot be pickled"):
        pickle.dumps(fs)
    handle = fs.open(view_path)
    fs.close()
    fs.close()  # idempotent
    with pytest.raises(StateError, match="is closed"):
        fs.cat_file(view_path)
    with pytest.raises(StateError, match="is closed"):
        handle.read()
    with pytest.raises(StateError, match="is closed"):
        fs.open(view_path)


def test_a_segment_swept_between_reading_txn_and_opening_sends_the_view_to_the_newer_version(
    table_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import streamwrite.table.snapshot_fs as snapshot_fs

    stale = read_snapshot(table_path)  # _txn as read just before compaction ...

    async def compact() -> None:  # ... which then retires and deletes (grace 0) its segments
        policy = CompactionPolicy(grace_seconds=0, min_small_row_groups=2)
        async with await open_table(table_path, **OPTIONS, compaction=policy) as table:
            await table.compact()

    _run(compact)
    assert not all((table_path / name).exists() for name, _ in stale.files)  # swept
    newest = read_snapshot(table_path)
    answers = iter([stale])
    monkeypatch.setattr(snapshot_fs, "read_snapshot", lambda p, **_: next(answers, newest))
    with snapshot_filesystem(table_path) as fs:
        assert fs.version == newest.version > stale.version
        assert _seq(pq.read_table("/", filesystem=fs)) == list(range(150))
    answers = iter([stale])
    with pytest.raises(ConfigError, match=f"Version {stale.version} .* is gone"):
        snapshot_filesystem(table_path, version=stale.version)


def test_a_fixed_protocol_and_bad_ones(table_path: Path) -> None:
    with snapshot_filesystem(table_path, protocol="ticks") as fs:
        assert fs.protocol == "ticks" and fs.url == "ticks://"
        assert fs.glob("ticks:///*/*/data.parquet") == fs.find("/")
        assert fs.unstrip_protocol(fs.find("/")[0]).startswith("ticks:///")
    for bad in ("", "1ticks", "my ticks", "a/b"):
        with pytest.raises(ConfigError, match="protocol must be a URL scheme"):
            snapshot_filesystem(table_path, protocol=bad)


def test_close_waits_for_reads_in_flight_and_no_read_follows_it(table_path: Path) -> None:
    fs = snapshot_filesystem(table_path)
    names = fs.find("/")
    want = {name: fs.cat_file(name) for name in names}
    wrong: list[str] = []
    refused = threading.Event()

    def read() -> None:
        for i in range(100_000):
            name = names[i % len(names)]
            try:
                if fs.cat_file(name, 0, 4096) != want[name][:4096]:
                    wrong.append(name)
            except StateError:
                refused.set()
                return

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    fs.close()
    for thread in threads:
        thread.join()
    assert wrong == [] and refused.is_set()


def test_hive_style_partition_names_are_shown_as_the_snapshot_names_them(
    table_path: Path,
) -> None:
    """The view builds its tree from the names ``TableSnapshot.files`` gives, whatever they
    are (``ts_day=2026-01-01/seg-000003`` in the Hive-style layout)."""
    from streamwrite.table.snapshot_fs import SnapshotFileSystem, _open_files

    snapshot = read_snapshot(table_path)
    entries = []
    for (name, size), disk in zip(snapshot.files, snapshot.data_files(), strict=True):
        partition, segment = name.split("/")
        day = partition.removeprefix("ts_day=")  # today's names are the bare day
        entries.append((f"/ts_day={day}/{segment}/data.parquet", size, disk))
    with SnapshotFileSystem(table_path, 1, _open_files(entries)) as fs:
        assert fs.ls("/", detail=False) == ["/ts_day=2026-01-01", "/ts_day=2026-01-02"]
        table = ds.dataset("/", filesystem=fs, format="parquet", partitioning="hive").to_table()
        assert table.column_names == ["ts", "seq", "ts_day"]
        assert _seq(table) == list(range(150))
