"""ObjectStore against a real S3 server (moto over HTTP, s3fs) and a local directory: the same
semantics on both (sizes, ranges, conditional puts, uploads of a prefix, listing, deletion),
typed errors naming the URL, and a store pickled into another process."""

from __future__ import annotations

import errno
import json
import os
import pickle
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import streamwrite
from streamwrite.errors import ConfigError, CorruptFileError, StreamwriteIOError
from streamwrite.io.range_cache import RangeCache
from streamwrite.io.remote import FetchStats, ObjectStore, RangeSource, open_store
from streamwrite.testing.s3 import S3Server

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["s3", "local"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    """An empty store: a prefix of a new bucket on the moto server, or a local directory."""
    if request.param == "s3":
        bucket = request.getfixturevalue("bucket")
        options = request.getfixturevalue("storage_options")
        return open_store(f"s3://{bucket}/cold/", options)
    return open_store(str(tmp_path / "cold"))


def test_root_urls_are_normalised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert open_store("s3://bucket/a/b/").url == "s3://bucket/a/b"
    assert open_store(f"file://{tmp_path}/x/").url == f"file://{tmp_path}/x"
    monkeypatch.chdir(tmp_path)
    local = open_store("rel/dir")
    assert local.url == f"file://{tmp_path}/rel/dir"
    assert local.full_path("a/b.json") == f"{tmp_path}/rel/dir/a/b.json"
    assert local.object_url("a/b.json") == f"file://{tmp_path}/rel/dir/a/b.json"


@pytest.mark.parametrize("url", ["", "s3://", "nosuchprotocol://x/y"])
def test_bad_roots_are_config_errors(url: str) -> None:
    with pytest.raises(ConfigError):
        open_store(url)


def test_bad_storage_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="storage_options"):
        open_store("s3://bucket/x", [("key", "v")])  # type: ignore[arg-type]


@pytest.mark.parametrize("key", ["", "/abs", "a//b", "a/../b", "./a", "a/"])
def test_bad_keys_are_config_errors(key: str) -> None:
    with pytest.raises(ConfigError, match="key"):
        open_store("s3://bucket/x").full_path(key)


def test_put_if_absent_size_and_ranges(store: ObjectStore) -> None:
    data = bytes(range(256)) * 40
    assert store.size("a/b/obj") is None
    assert store.put_if_absent("a/b/obj", data) is True
    assert store.put_if_absent("a/b/obj", b"other bytes") is False
    assert store.size("a/b/obj") == len(data)
    assert store.read_all("a/b/obj") == data
    store.stats.reset()
    assert store.read_range("a/b/obj", 1000, 300) == data[1000:1300]
    assert store.read_range("a/b/obj", len(data) - 5, 5) == data[-5:]
    assert store.read_range("a/b/obj", 7, 0) == b""
    assert (store.stats.num_requests, store.stats.num_bytes) == (2, 305)
    store.size("a/b/obj")
    store.list("a")
    assert store.stats.num_metadata_requests == 2
    assert store.stats.num_requests == 2


def test_concurrent_conditional_puts_create_once(store: ObjectStore) -> None:
    """Eight threads race to create one object: exactly one wins, and its bytes stay."""
    results: dict[int, bool] = {}

    def put(i: int) -> None:
        results[i] = store.put_if_absent("_txn_log/00000000000000000001.json", b"%d" % i)

    threads = [threading.Thread(target=put, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [i for i, created in results.items() if created]
    assert len(winners) == 1
    assert store.read_all("_txn_log/00000000000000000001.json") == b"%d" % winners[0]
    assert store.list("_txn_log") == ["_txn_log/00000000000000000001.json"]


def test_put_file_uploads_the_prefix_only(store: ObjectStore, tmp_path: Path) -> None:
    local = tmp_path / "data.parquet"
    payload = os.urandom(3 * 1024 * 1024 + 17)
    local.write_bytes(payload + b"torn tail past the committed size")
    seen: list[bytes] = []
    store.put_file("p=1/seg-000001/data.parquet", local, len(payload), on_block=seen.append)
    assert store.size("p=1/seg-000001/data.parquet") == len(payload)
    assert store.read_all("p=1/seg-000001/data.parquet") == payload
    assert b"".join(seen) == payload
    # replacing is allowed (an upload never published is overwritten by the next one)
    store.put_file("p=1/seg-000001/data.parquet", local, 10)
    assert store.read_all("p=1/seg-000001/data.parquet") == payload[:10]


def test_put_file_of_a_short_file_leaves_no_object(store: ObjectStore, tmp_path: Path) -> None:
    local = tmp_path / "short.parquet"
    local.write_bytes(b"x" * 1000)
    with pytest.raises(CorruptFileError, match="ends 24 bytes before"):
        store.put_file("seg/data.parquet", local, 1024)
    assert store.size("seg/data.parquet") is None
    assert store.list("") == []
    with pytest.raises(StreamwriteIOError, match="to upload it"):
        store.put_file("seg/data.parquet", tmp_path / "missing", 10)


def test_a_local_roots_temporary_files_are_not_listed(tmp_path: Path) -> None:
    store = open_store(str(tmp_path))
    store.put_if_absent("_txn_log/00000000000000000001.json", b"{}")
    (tmp_path / "_txn_log" / f".00000000000000000002.json.{'0' * 32}.tmp").write_bytes(b"{")
    assert store.list("_txn_log") == ["_txn_log/00000000000000000001.json"]


def test_list_and_delete(store: ObjectStore) -> None:
    keys = [
        "_txn_log/00000000000000000002.json",
        "_txn_log/00000000000000000010.json",
        "_txn/x",
        "ts_day=2026-11-22/seg-000003/data.parquet",
    ]
    for key in reversed(keys):
        assert store.put_if_absent(key, key.encode())
    assert store.list("") == sorted(keys)
    assert store.list("_txn_log") == keys[:2]
    assert store.list("_txn_log/") == keys[:2]
    assert store.list("_txn") == ["_txn/x"]
    assert store.list("nothing/here") == []
    store.delete([keys[0], "absent/key", keys[3]])
    assert store.list("") == sorted([keys[1], keys[2]])
    store.delete([])
    assert store.list("_txn_log") == [keys[1]]


def test_a_missing_object_is_a_typed_error_naming_its_url(store: ObjectStore) -> None:
    url = f"{store.url}/no/such/object"
    for call in (
        lambda: store.read_all("no/such/object"),
        lambda: store.read_range("no/such/object", 0, 10),
    ):
        with pytest.raises(StreamwriteIOError) as caught:
            call()
        assert caught.value.errno == errno.ENOENT
        assert url in str(caught.value)


def test_a_network_failure_is_a_streamwrite_io_error_naming_the_url() -> None:
    """The server stops: every call fails with StreamwriteIOError naming the object's URL
    (botocore retries cut to one attempt to keep the test short)."""
    with S3Server() as server:
        server.create_bucket("gone")
        options = {
            **server.storage_options,
            "config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 2},
        }
        store = open_store("s3://gone/prefix", options)
        assert store.put_if_absent("seg/data.parquet", b"PAR1" * 10)
        server.stop()
        url = "s3://gone/prefix/seg/data.parquet"
        calls = {
            "read_range": lambda: store.read_range("seg/data.parquet", 0, 4),
            "read_all": lambda: store.read_all("seg/data.parquet"),
            "size": lambda: store.size("seg/data.parquet"),
            "put_if_absent": lambda: store.put_if_absent("seg/data.parquet", b"x"),
        }
        for name, call in calls.items():
            with pytest.raises(StreamwriteIOError) as caught:
                call()
            assert url in str(caught.value), name
            assert caught.value.errno != errno.ENOENT, name
        with pytest.raises(StreamwriteIOError, match="s3://gone/prefix/_txn_log"):
            store.list("_txn_log")
        source = RangeSource(store, "seg/data.parquet", 40, cache=RangeCache())
        with pytest.raises(StreamwriteIOError) as caught:
            streamwrite.ParquetFile(source)
        assert url in str(caught.value) and caught.value.errno != errno.ENOENT


def test_errors_pickle() -> None:
    error = StreamwriteIOError(errno.ENOENT, "Cannot read s3://b/k: no such object.")
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), again.errno, str(again)) == (type(error), error.errno, str(error))


def test_stats_are_shared_by_the_stores_of_one_root(store: ObjectStore) -> None:
    store.put_if_absent("k", b"0123456789")
    other = open_store(store.url, store.storage_options)
    store.stats.reset()
    other.read_range("k", 2, 3)
    assert store.stats is other.stats is FetchStats.for_url(store.url)
    assert (store.stats.num_requests, store.stats.num_bytes) == (1, 3)
    store.stats.reset()
    assert (store.stats.num_requests, store.stats.num_bytes) == (0, 0)


_CHILD = """
import json, pickle, sys
store = pickle.loads(open(sys.argv[1], "rb").read())
created = store.put_if_absent("from-child", b"child bytes")
print(json.dumps({
    "url": store.url,
    "keys": store.list(""),
    "data": store.read_range("parent", 2, 5).decode(),
    "created": created,
    "requests": store.stats.num_requests,
}))
"""


def test_a_pickled_store_works_in_a_subprocess(store: ObjectStore, tmp_path: Path) -> None:
    store.put_if_absent("parent", b"parent bytes")
    store.fs  # noqa: B018 - the parent's filesystem exists; it must not travel
    pickled = tmp_path / "store.pickle"
    pickled.write_bytes(pickle.dumps(store))
    assert b"s3fs" not in pickled.read_bytes() and b"LocalFileSystem" not in pickled.read_bytes()
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(pickled)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    report: dict[str, Any] = json.loads(child.stdout)
    assert report == {
        "url": store.url,
        "keys": ["from-child", "parent"],
        "data": "rent ",
        "created": True,
        "requests": 1,
    }
    assert store.read_all("from-child") == b"child bytes"
    assert pickle.loads(pickle.dumps(store)) == store
