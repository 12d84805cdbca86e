"""Tables read by URL (issue 16): a reader that sees only the bucket (a moto S3 server over
HTTP) reads the newest published version, prunes, counts its bytes, and gets typed errors."""

from __future__ import annotations

import errno
import io
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.errors import ConfigError, CorruptFileError, StreamwriteIOError
from streamwrite.format.txn import cold_object_key, txn_log_name
from streamwrite.io.remote import DEFAULT_TAIL_SIZE, RANGE_CACHE, open_store
from streamwrite.reader.file import ParquetFile
from streamwrite.table.state import read_snapshot
from tests.storage._cold_tables import (
    DAY_NS,
    bucket_objects,
    tick_rows,
    tier_by_hand,
    tier_table,
    tree,
    write_table,
)

HERE = Path(__file__).resolve().parent


@pytest.fixture
def cold_table(tmp_path: Path, bucket: str, storage_options: dict[str, Any]) -> tuple[Path, str]:
    """A table of 6 commits over two day partitions (segments of 2 row groups), every
    segment moved to ``s3://<bucket>/ticks`` by ``table.tier()`` and swept locally."""
    path = tmp_path / "t"
    write_table(path, [tick_rows(500, 500 * i) for i in range(6)], segment_row_groups=2)
    url = f"s3://{bucket}/ticks"
    moved = tier_table(path, url, storage_options, segment_row_groups=2)
    assert sorted(moved) == sorted(name for name, _ in read_snapshot(path).files)
    return path, url


def _child(mode: str, url: str, options: dict[str, Any], cwd: Path) -> pa.Table:
    """Read ``url`` in a fresh process whose cwd, HOME and TMPDIR are the empty ``cwd``."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(cwd),
        "TMPDIR": str(cwd),
        "STREAMWRITE_STORAGE_OPTIONS": json.dumps(options),
    }
    proc = subprocess.run(
        [sys.executable, str(HERE / "remote_reader.py"), mode, url],
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    return pa.ipc.open_stream(proc.stdout).read_all()


def test_a_process_that_sees_only_the_bucket_reads_what_the_writer_reads(
    cold_table: tuple[Path, str], storage_options: dict[str, Any], tmp_path: Path
) -> None:
    path, url = cold_table
    want = streamwrite.read_table(path, storage_options=storage_options)
    assert want.num_rows == 3000
    shutil.rmtree(path)  # the reader has the URL only
    empty = tmp_path / "reader"
    empty.mkdir()
    got = _child("read_table", url, storage_options, empty)
    assert got.equals(want)
    assert list(empty.iterdir()) == []  # it wrote nothing locally


def test_reads_by_url_equal_the_local_reads_in_process(
    cold_table: tuple[Path, str], storage_options: dict[str, Any]
) -> None:
    path, url = cold_table
    local = streamwrite.read_snapshot(path, storage_options=storage_options)
    remote = streamwrite.read_snapshot(url, storage_options=storage_options)
    # the log has the version of the last move; later local-only versions (the sweep of
    # retired copies) publish nothing there: the cold view did not change
    assert remote.version <= local.version and remote.url == url
    assert tuple(remote.files) == tuple(local.files)
    assert remote.read().equals(local.read())
    assert remote.read(["price", "symbol"]).equals(local.read(["price", "symbol"]))
    want = local.read().filter(pc.field("symbol") == "SYM001")
    got = streamwrite.read_table(
        url, filters=[("symbol", "==", "SYM001")], storage_options=storage_options
    )
    assert got.equals(want)
    urls = [location for location, _ in remote.files()]
    assert urls[0] == f"{url}/{cold_object_key(remote.files[0][0])}"


def test_the_newest_published_version_is_read_and_stray_names_skipped(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    path = tmp_path / "t"
    write_table(path, [tick_rows(300, 300 * i) for i in range(4)], segment_row_groups=1)
    url = f"s3://{bucket}/t"
    names = [name for name, _ in streamwrite.read_snapshot(path).files]
    tier_by_hand(path, url, storage_options, names[:1], delete_local=False)
    store = open_store(url, storage_options)
    store.put_if_absent("_txn_log/not-a-version.json", b"{}")
    store.put_if_absent("_txn_log/99999999999999999999.json.tmp", b"junk")
    first = read_snapshot(url, storage_options=storage_options)
    assert [name for name, _ in first.files] == names[:1]
    last = tier_by_hand(path, url, storage_options, names[1:], delete_local=False)
    second = read_snapshot(url, storage_options=storage_options)
    assert second.version == last.version > first.version
    assert [name for name, _ in second.files] == names
    assert second.read().equals(streamwrite.read_table(path))
    assert first.read().num_rows < second.read().num_rows  # the older version still reads


def test_a_url_snapshot_pickles_as_url_and_options(
    cold_table: tuple[Path, str], storage_options: dict[str, Any]
) -> None:
    _, url = cold_table
    snapshot = read_snapshot(url, storage_options=storage_options)
    payload = pickle.dumps(snapshot)
    assert b"aiohttp" not in payload and b"S3FileSystem" not in payload
    again = pickle.loads(payload)
    assert again == snapshot and again.storage_options == storage_options
    assert again.read().equals(snapshot.read())
    name, size = snapshot.files[0]
    with again.open_segment(name, size) as segment:
        assert segment.metadata.num_rows > 0


def test_a_one_column_read_fetches_at_most_1_2x_its_chunk_bytes(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    """Segments of ~3.3 MB: the read of one column fetches each footer's tail (one request
    of 64 KiB) and then exactly its column chunks."""
    path = tmp_path / "t"
    write_table(
        path,
        [tick_rows(200_000, 200_000 * i, num_days=1) for i in range(3)],
        segment_row_groups=4,
        row_group_size=50_000,
    )
    url = f"s3://{bucket}/big"
    assert len(tier_table(path, url, storage_options, segment_row_groups=4)) == 3
    snapshot = read_snapshot(url, storage_options=storage_options)
    store = open_store(url, storage_options)
    chunk_bytes = 0  # the price chunks of every row group, as pyarrow's metadata says
    object_bytes = 0
    for name, size in snapshot.files:
        object_bytes += size
        metadata = pq.ParquetFile(io.BytesIO(store.read_all(cold_object_key(name)))).metadata
        index = metadata.schema.to_arrow_schema().get_field_index("price")
        for i in range(metadata.num_row_groups):
            chunk_bytes += metadata.row_group(i).column(index).total_compressed_size
    RANGE_CACHE.clear()
    stats = store.stats
    stats.reset()
    got = streamwrite.read_table(url, columns=["price"], storage_options=storage_options)
    fetched, num_requests = stats.num_bytes, stats.num_requests
    assert got.num_rows == 600_000
    assert got.equals(snapshot.read().select(["price"]))
    ratio = fetched / chunk_bytes
    tail_bytes = sum(min(size, DEFAULT_TAIL_SIZE) for _, size in snapshot.files)
    print(
        f"\none-column read: {fetched} bytes in {num_requests} requests for "
        f"{chunk_bytes} chunk bytes ({ratio:.3f}x; {(fetched - tail_bytes) / chunk_bytes:.3f}x "
        f"without the {len(snapshot.files)} tail requests of {tail_bytes} bytes) of "
        f"{object_bytes} object bytes"
    )
    assert ratio <= 1.2
    assert fetched < object_bytes / 3


def test_pruning_skips_segments_by_partition_and_footer_on_a_url(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    path = tmp_path / "t"
    batches = []
    for i in range(4):  # qty ranges that do not overlap between commits (one segment each)
        batch = tick_rows(400, 400 * i)
        batches.append(batch.set_column(3, "qty", pa.array(range(i * 1000, i * 1000 + 400))))
    write_table(path, batches, segment_row_groups=1)
    url = f"s3://{bucket}/t"
    assert len(tier_table(path, url, storage_options, segment_row_groups=1)) == 8
    snapshot = read_snapshot(url, storage_options=storage_options)
    assert len(snapshot.files) == 8  # 4 commits x 2 day partitions

    stats = open_store(url, storage_options).stats
    RANGE_CACHE.clear()
    stats.reset()
    plan = snapshot.plan([("qty", ">=", 3000)])
    assert plan.segments_skipped == {"footer": 6}
    assert plan.num_segments_read == 2
    assert stats.num_requests == 8  # one footer request per segment, no data
    first_ns = pc.min(snapshot.read(["ts"]).column("ts")).value
    next_day = pa.scalar(first_ns - first_ns % DAY_NS + DAY_NS, pa.timestamp("ns"))
    by_partition = snapshot.plan([("ts", "<", next_day)])
    assert by_partition.segments_skipped == {"partition": 4}
    assert snapshot.files([("qty", ">=", 3000)]) == [
        (snapshot.segment_location(s.name), s.committed_size)
        for s in plan.segments
        if s.skipped_by is None
    ]
    want = streamwrite.read_table(path).filter(pc.field("qty") >= 3000)
    assert snapshot.read(filters=[("qty", ">=", 3000)]).equals(want)


@pytest.mark.parametrize("engine", ["pyarrow", "duckdb"])
def test_engines_read_a_url_table_through_the_snapshot_filesystem(
    cold_table: tuple[Path, str], storage_options: dict[str, Any], tmp_path: Path, engine: str
) -> None:
    path, url = cold_table
    want = streamwrite.read_table(path, storage_options=storage_options).sort_by("order_id")
    empty = tmp_path / "reader"
    empty.mkdir()
    got = _child(engine, url, storage_options, empty).sort_by("order_id")
    assert got.num_rows == want.num_rows
    for name in ("order_id", "price", "qty", "symbol"):
        assert got.column(name).to_pylist() == want.column(name).to_pylist(), name
    assert list(empty.iterdir()) == []


def test_the_snapshot_filesystem_of_a_url_lists_the_cold_segments_at_their_sizes(
    cold_table: tuple[Path, str], storage_options: dict[str, Any]
) -> None:
    _, url = cold_table
    snapshot = read_snapshot(url, storage_options=storage_options)
    with streamwrite.snapshot_filesystem(url, storage_options=storage_options) as fs:
        assert fs.version == snapshot.version
        listed = {info["name"]: info["size"] for info in fs.find("/", detail=True).values()}
        assert listed == {f"/{name}/data.parquet": size for name, size in snapshot.files}
        name, size = snapshot.files[0]
        whole = fs.cat_file(f"/{name}/data.parquet")
        assert len(whole) == size and whole[-4:] == b"PAR1"
        assert fs.cat_file(f"/{name}/data.parquet", size - 4, size + 10) == b"PAR1"
    with pytest.raises(ConfigError, match="not published"):
        streamwrite.snapshot_filesystem(url, 10**6, storage_options=storage_options)


def test_a_missing_log_is_a_typed_error(
    bucket: str, storage_options: dict[str, Any], tmp_path: Path
) -> None:
    url = f"s3://{bucket}/nothing-here"
    with pytest.raises(StreamwriteIOError, match="not a streamwrite table") as info:
        streamwrite.read_table(url, storage_options=storage_options)
    assert info.value.errno == errno.ENOENT
    with pytest.raises(StreamwriteIOError, match="not a streamwrite table"):
        streamwrite.snapshot_filesystem(url, storage_options=storage_options)
    with pytest.raises(StreamwriteIOError, match="not a streamwrite table"):
        read_snapshot(f"file://{tmp_path}/none")


def test_a_damaged_log_object_is_a_typed_error(
    cold_table: tuple[Path, str], storage_options: dict[str, Any]
) -> None:
    _, url = cold_table
    store = open_store(url, storage_options)
    newest = read_snapshot(url, storage_options=storage_options).version
    key = txn_log_name(newest + 1)
    good = store.read_all(txn_log_name(newest))
    store.put_if_absent(key, good[: len(good) // 2])  # truncated
    with pytest.raises(CorruptFileError, match="is damaged"):
        streamwrite.read_table(url, storage_options=storage_options)
    store.delete([key])
    at = good.index(b'"partitions":') + 30
    flipped = good[:at] + bytes([good[at] ^ 1]) + good[at + 1 :]  # one bit: the CRC32 fails
    store.put_if_absent(key, flipped)
    with pytest.raises(CorruptFileError, match="is damaged"):
        read_snapshot(url, storage_options=storage_options)
    store.delete([key])
    store.put_if_absent(key, good)  # intact, but holds another version than its name says
    with pytest.raises(CorruptFileError, match=f"not {newest + 1}"):
        read_snapshot(url, storage_options=storage_options)


def test_an_object_shorter_than_the_record_says_is_a_typed_error(
    cold_table: tuple[Path, str], storage_options: dict[str, Any]
) -> None:
    _, url = cold_table
    store = open_store(url, storage_options)
    snapshot = read_snapshot(url, storage_options=storage_options)
    name, size = snapshot.files[1]
    key = cold_object_key(name)
    data = store.read_all(key)
    store.delete([key])
    store.put_if_absent(key, data[: size // 2])
    RANGE_CACHE.clear()
    with pytest.raises(CorruptFileError, match="fewer than"):
        snapshot.read()
    store.delete([key])
    RANGE_CACHE.clear()
    with pytest.raises(CorruptFileError, match="is missing"):
        snapshot.read()
    damaged = bytearray(data)
    damaged[-20] ^= 0xFF  # inside the footer: its XXH64 is not the recorded one
    store.put_if_absent(key, bytes(damaged))
    RANGE_CACHE.clear()
    with pytest.raises(CorruptFileError, match="_txn recorded"):
        snapshot.read(["price"])


def test_readers_touch_nothing_local_nor_in_the_bucket(
    cold_table: tuple[Path, str], storage_options: dict[str, Any], tmp_path: Path
) -> None:
    path, url = cold_table
    store = open_store(url, storage_options)
    objects = bucket_objects(store)
    files = tree(tmp_path)
    streamwrite.read_table(url, storage_options=storage_options)
    streamwrite.read_table(path, storage_options=storage_options)
    read_snapshot(url, storage_options=storage_options).plan([("qty", ">", 10)])
    with streamwrite.snapshot_filesystem(path, storage_options=storage_options) as fs:
        for name in fs.find("/"):
            with ParquetFile(fs.cat_file(name)) as pf:
                assert pf.metadata.num_rows > 0
    assert tree(tmp_path) == files
    assert bucket_objects(store) == objects
