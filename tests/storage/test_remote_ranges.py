"""ParquetFile(RangeSource(...)) against a real S3 server (moto over HTTP, s3fs) and a local
directory: what a read fetches (the tail, then exactly the column chunks it needs), the bounded
range cache, typed errors for missing and short objects, and round trips of every column type
equal to the local read."""

from __future__ import annotations

import errno
import io
import os
import pickle
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamwrite
from streamwrite.errors import CorruptFileError, StreamwriteIOError
from streamwrite.io.range_cache import RangeCache
from streamwrite.io.remote import DEFAULT_TAIL_SIZE, ObjectStore, RangeSource, open_store
from streamwrite.testing.data import reference_table
from streamwrite.testing.s3 import S3Server
from streamwrite.testing.strategies import WRITABLE_TYPES, nested_tables, tables

REPO = Path(__file__).resolve().parents[2]
NUM_EXAMPLES = int(os.environ.get("STREAMWRITE_REMOTE_EXAMPLES", "12"))


@pytest.fixture(params=["s3", "local"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    if request.param == "s3":
        bucket = request.getfixturevalue("bucket")
        options = request.getfixturevalue("storage_options")
        return open_store(f"s3://{bucket}/cold", options)
    return open_store(str(tmp_path / "cold"))


@pytest.fixture(scope="module")
def module_store(s3_server: S3Server) -> Iterator[ObjectStore]:
    """One bucket for the hypothesis tests (function-scoped fixtures do not mix with them)."""
    name = f"ranges-{uuid.uuid4().hex[:12]}"
    s3_server.create_bucket(name)
    yield open_store(f"s3://{name}/cold", s3_server.storage_options)


@pytest.fixture(scope="module")
def local_store(tmp_path_factory: pytest.TempPathFactory) -> ObjectStore:
    return open_store(str(tmp_path_factory.mktemp("cold")))


def _parquet(table: pa.Table, writer: str, **options: Any) -> bytes:
    sink = io.BytesIO()
    if writer == "pyarrow":
        pq.write_table(table, sink, **options)
    else:
        streamwrite.write_table(table, sink, **options)
    return sink.getvalue()


def _chunk_ranges(data: bytes, column: str) -> list[tuple[int, int]]:
    """``(offset, size)`` of each column chunk of ``column``, from pyarrow's metadata."""
    metadata = pq.ParquetFile(pa.BufferReader(data)).metadata
    index = metadata.schema.names.index(column)
    ranges = []
    for i in range(metadata.num_row_groups):
        chunk = metadata.row_group(i).column(index)
        start = chunk.data_page_offset
        if chunk.has_dictionary_page and 0 < chunk.dictionary_page_offset < start:
            start = chunk.dictionary_page_offset
        ranges.append((start, chunk.total_compressed_size))
    return ranges


@pytest.mark.parametrize("writer", ["streamwrite", "pyarrow"])
def test_a_one_column_read_fetches_the_footer_and_its_chunks_only(
    store: ObjectStore, writer: str
) -> None:
    """Seven columns, eight row groups: opening fetches the tail in one request; reading
    ``price`` fetches each of its chunks once, exactly (nothing else), so the bytes fetched
    are at most the chunk bytes (<= 1.2x asked) plus the footer request."""
    table = reference_table(240_000)
    data = _parquet(table, writer, row_group_size=30_000)
    store.put_if_absent("seg/data.parquet", data)
    ranges = _chunk_ranges(data, "price")
    chunk_size = sum(size for _, size in ranges)
    tail_offset = len(data) - DEFAULT_TAIL_SIZE
    assert len(ranges) == 8 and all(offset + size <= tail_offset for offset, size in ranges)
    store.stats.reset()
    pf = streamwrite.ParquetFile(RangeSource(store, "seg/data.parquet", len(data), cache=None))
    footer = (store.stats.num_requests, store.stats.num_bytes)
    assert footer == (1, DEFAULT_TAIL_SIZE)  # the footer (< 64 KiB) came with the tail
    store.stats.reset()
    got = pf.read(["price"])
    assert got.equals(table.select(["price"]))
    fetched = (store.stats.num_requests, store.stats.num_bytes)
    assert fetched == (len(ranges), chunk_size)
    assert fetched[1] <= 1.2 * chunk_size
    print(
        f"\n{writer} {store.url.split(':')[0]}: object {len(data)} B, one column's chunks "
        f"{chunk_size} B in {len(ranges)} chunks; fetched footer {footer[1]} B in {footer[0]} "
        f"request + chunks {fetched[1]} B in {fetched[0]} requests = "
        f"{fetched[1] / chunk_size:.3f}x the chunk bytes; total "
        f"{(footer[1] + fetched[1]) / len(data):.3f} of the object"
    )


def test_the_footer_is_fetched_once_per_process(store: ObjectStore) -> None:
    """Planning and reading open the object twice: the second open makes no request
    (the process-wide cache), and reading the rest of the tail is free too."""
    data = _parquet(reference_table(50_000), "streamwrite", row_group_size=10_000)
    key = f"seg-{uuid.uuid4().hex}/data.parquet"
    store.put_if_absent(key, data)
    store.stats.reset()
    first = streamwrite.ParquetFile(RangeSource(store, key, len(data)))
    assert store.stats.num_requests == 1
    second = streamwrite.ParquetFile(RangeSource(store, key, len(data)))
    assert store.stats.num_requests == 1
    assert second.metadata.num_rows == first.metadata.num_rows == 50_000


def test_a_footer_longer_than_the_tail_widens_it_once(store: ObjectStore) -> None:
    """300 columns in 12 row groups: the footer is longer than the 64 KiB tail; opening
    fetches the tail and then the rest of the footer (2 requests), and the widened tail is
    what the cache keeps."""
    rng = np.random.default_rng(1)
    table = pa.table({f"c{i:03d}": rng.integers(0, 1000, 1200) for i in range(300)})
    data = _parquet(table, "streamwrite", row_group_size=100)
    footer_size = int.from_bytes(data[-8:-4], "little")
    assert footer_size + 8 > DEFAULT_TAIL_SIZE
    store.put_if_absent("wide/data.parquet", data)
    cache = RangeCache()
    store.stats.reset()
    pf = streamwrite.ParquetFile(RangeSource(store, "wide/data.parquet", len(data), cache=cache))
    assert store.stats.num_requests == 2
    assert store.stats.num_bytes == footer_size + 8
    assert len(cache) == 1 and cache.size == footer_size + 8
    again = streamwrite.ParquetFile(RangeSource(store, "wide/data.parquet", len(data), cache=cache))
    assert store.stats.num_requests == 2
    assert again.read(["c299"]).equals(table.select(["c299"]))
    assert pf.read(["c007"]).equals(table.select(["c007"]))


def test_the_cache_is_bounded_and_evicts_least_recently_used(store: ObjectStore) -> None:
    """Six objects' 64 KiB tails through a cache of three tails' budget: it never holds more
    than its budget, evicts the oldest, and an evicted footer is fetched again."""
    cache = RangeCache(max_size=3 * DEFAULT_TAIL_SIZE)
    sizes = {}
    for i in range(6):
        data = _parquet(reference_table(20_000, seed=i), "pyarrow")
        sizes[i] = len(data)
        store.put_if_absent(f"seg-{i}/data.parquet", data)
    store.stats.reset()
    for i in range(6):
        streamwrite.ParquetFile(RangeSource(store, f"seg-{i}/data.parquet", sizes[i], cache=cache))
        assert cache.size <= cache.max_size
    assert store.stats.num_requests == 6
    assert len(cache) == 3 and cache.num_evictions == 3
    streamwrite.ParquetFile(RangeSource(store, "seg-5/data.parquet", sizes[5], cache=cache))
    assert store.stats.num_requests == 6  # still cached
    streamwrite.ParquetFile(RangeSource(store, "seg-0/data.parquet", sizes[0], cache=cache))
    assert store.stats.num_requests == 7  # evicted: fetched again, evicting seg-3
    assert cache.size <= cache.max_size and cache.num_evictions == 4
    streamwrite.ParquetFile(RangeSource(store, "seg-5/data.parquet", sizes[5], cache=cache))
    assert store.stats.num_requests == 7


def test_range_cache_rules() -> None:
    cache = RangeCache(max_size=100, max_range_size=30)
    a, b = ("s3://b", "a", 1000), ("s3://b", "b", 1000)
    assert cache.put(a, 0, b"x" * 30)
    assert not cache.put(a, 100, b"y" * 31)  # longer than max_range_size
    assert cache.put(a, 900, b"t" * 60, tail=True)  # a tail is kept anyway
    assert cache.get(a, 905, 10) == (900, b"t" * 60)
    assert cache.get(a, 29, 2) is None  # crosses the end of the range at 0
    assert cache.get(b, 0, 1) is None  # another object
    assert cache.put(b, 0, b"z" * 20)  # 110 bytes > 100: evicts the LRU range (a, 0)
    assert cache.size == 80 and cache.get(a, 0, 1) is None and cache.num_evictions == 1
    assert not cache.put(a, 0, b"w" * 101, tail=True)  # over the whole budget
    cache.discard(a, 900)
    assert (cache.size, len(cache)) == (20, 1)
    cache.clear()
    assert (cache.size, len(cache), cache.num_hits) == (0, 0, 0)


def test_a_missing_object_is_a_typed_error_naming_its_url(store: ObjectStore) -> None:
    with pytest.raises(StreamwriteIOError) as caught:
        streamwrite.ParquetFile(RangeSource(store, "gone/data.parquet", 5000, cache=None))
    assert caught.value.errno == errno.ENOENT
    assert f"{store.url}/gone/data.parquet" in str(caught.value)


@pytest.mark.parametrize("missing_size", [100, 200_000])
def test_a_short_object_is_a_corrupt_file_error(store: ObjectStore, missing_size: int) -> None:
    """The object lost its last bytes: within the tail's reach (a short response), or more
    than the tail (the range starts past its end: the server refuses the range)."""
    data = _parquet(reference_table(30_000), "streamwrite")
    assert len(data) > missing_size + DEFAULT_TAIL_SIZE
    store.put_if_absent("short/data.parquet", data[:-missing_size])
    with pytest.raises(CorruptFileError, match="fewer than the") as caught:
        streamwrite.ParquetFile(
            RangeSource(store, "short/data.parquet", len(data), cache=RangeCache())
        )
    assert f"{store.url}/short/data.parquet has {len(data) - missing_size} bytes" in str(
        caught.value
    )


def test_reads_past_the_size_and_damaged_tails_are_corrupt_file_errors(
    store: ObjectStore,
) -> None:
    data = _parquet(reference_table(1000), "streamwrite")
    store.put_if_absent("ok/data.parquet", data)
    source = RangeSource(store, "ok/data.parquet", len(data), cache=RangeCache())
    with pytest.raises(CorruptFileError, match="runs past the end"):
        source.read(len(data) - 4, 5)
    store.put_if_absent("bad/data.parquet", data[:-1] + b"X")
    with pytest.raises(CorruptFileError, match="magic"):
        streamwrite.ParquetFile(RangeSource(store, "bad/data.parquet", len(data)))


def test_the_leading_magic_is_checked_when_the_tail_holds_it(store: ObjectStore) -> None:
    """A small object comes whole with the tail: its leading magic is checked for free."""
    data = _parquet(reference_table(100), "streamwrite")
    assert len(data) < DEFAULT_TAIL_SIZE
    store.put_if_absent("head/data.parquet", b"XXXX" + data[4:])
    store.stats.reset()
    with pytest.raises(CorruptFileError, match="magic"):
        streamwrite.ParquetFile(RangeSource(store, "head/data.parquet", len(data)))
    assert store.stats.num_requests == 1


def test_snapshot_still_cuts_a_ranged_source(store: ObjectStore) -> None:
    """A live file's committed prefix: ``snapshot=`` reads the Parquet file ending there."""
    first = _parquet(reference_table(1000), "streamwrite")
    store.put_if_absent("live/data.parquet", first + b"\0" * 100_000)
    pf = streamwrite.ParquetFile(
        RangeSource(store, "live/data.parquet", len(first) + 100_000, cache=RangeCache()),
        snapshot=len(first),
    )
    assert pf.read().equals(reference_table(1000))


ALL_TYPES = pa.schema(
    [pa.field(f"t{i:02d}", dtype) for i, dtype in enumerate(WRITABLE_TYPES)]
    + [
        pa.field("list", pa.list_(pa.int32())),
        pa.field("struct", pa.struct([("a", pa.int64()), ("b", pa.string())])),
        pa.field("map", pa.map_(pa.string(), pa.float64())),
    ]
)


@settings(
    max_examples=NUM_EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
@given(
    table=nested_tables(ALL_TYPES, min_rows=1, max_rows=120),
    row_group_size=st.integers(1, 50),
    writer=st.sampled_from(["streamwrite", "pyarrow"]),
    remote=st.booleans(),
)
def test_every_column_type_round_trips(
    module_store: ObjectStore,
    local_store: ObjectStore,
    table: pa.Table,
    row_group_size: int,
    writer: str,
    remote: bool,
) -> None:
    """Every writable flat type and list/struct/map columns, written by streamwrite or
    pyarrow in several row groups, read through a RangeSource (S3 or a local directory):
    equal to the local read of the same bytes."""
    store = module_store if remote else local_store
    data = _parquet(table, writer, row_group_size=row_group_size)
    key = f"types/{uuid.uuid4().hex}/data.parquet"
    store.put_if_absent(key, data)
    ranged = streamwrite.ParquetFile(RangeSource(store, key, len(data), tail_size=1024))
    local = streamwrite.ParquetFile(data)
    assert ranged.num_row_groups == local.num_row_groups
    assert ranged.schema_arrow == local.schema_arrow
    assert ranged.read().equals(local.read())
    assert ranged.read(["struct", "t05"]).equals(local.read(["struct", "t05"]))
    assert ranged.read_row_group(0).equals(local.read_row_group(0))


@settings(
    max_examples=NUM_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    table=st.one_of(tables(max_rows=300), nested_tables(max_rows=200)),
    row_group_size=st.integers(1, 120),
)
def test_random_tables_round_trip_through_s3(
    module_store: ObjectStore, table: pa.Table, row_group_size: int
) -> None:
    """Drawn schemas (flat and nested), tiny tails and a tiny cache: every read path of the
    plan (tail, widened tail, cached and fetched ranges) gives the local read."""
    data = _parquet(table, "streamwrite", row_group_size=row_group_size)
    key = f"h/{uuid.uuid4().hex}/data.parquet"
    module_store.put_if_absent(key, data)
    remote = streamwrite.ParquetFile(
        RangeSource(module_store, key, len(data), tail_size=256, cache=RangeCache(4096))
    )
    assert remote.read().equals(streamwrite.ParquetFile(data).read())


_CHILD = """
import pickle, sys
import streamwrite
source = pickle.loads(open(sys.argv[1], "rb").read())
pf = streamwrite.ParquetFile(source)
table = pf.read(["qty"])
print(source.store.stats.num_requests, table.num_rows, sum(table.column("qty").to_pylist()))
"""


def test_a_pickled_range_source_reads_in_a_subprocess(store: ObjectStore, tmp_path: Path) -> None:
    table = reference_table(20_000)
    data = _parquet(table, "pyarrow", row_group_size=5000)
    store.put_if_absent("child/data.parquet", data)
    pickled = tmp_path / "source.pickle"
    pickled.write_bytes(pickle.dumps(RangeSource(store, "child/data.parquet", len(data))))
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(pickled)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    qty = table.column("qty").to_pylist()
    assert child.stdout.split() == ["5", "20000", str(sum(qty))]


def test_a_filtered_read_fetches_only_the_pages_it_plans(store: ObjectStore) -> None:
    """Statistics and the page index (inside the tail here) prune to one row group and one
    page per column: the read fetches at most the bytes its plan names, and equals the local
    filtered read."""
    num_rows = 200_000
    rng = np.random.default_rng(3)
    table = pa.table(
        {
            "x": np.arange(num_rows, dtype=np.int64),
            "y": rng.normal(size=num_rows),
            "s": [f"sym{i % 50:03d}" for i in range(num_rows)],
        }
    )
    data = _parquet(
        table,
        "streamwrite",
        row_group_size=20_000,
        data_page_row_limit=1000,
        write_page_index=True,
        bloom_filter_options={"s": True},
    )
    store.put_if_absent("filtered/data.parquet", data)
    filters = [("x", ">=", 55_000), ("x", "<", 55_100)]
    store.stats.reset()
    pf = streamwrite.ParquetFile(
        RangeSource(store, "filtered/data.parquet", len(data), cache=RangeCache())
    )
    plan = pf.plan(filters, columns=["y"])
    assert store.stats.num_requests == 1  # the tail holds footer and page indexes
    assert (plan.num_row_groups_read, plan.num_pages_read) == (1, 2)
    store.stats.reset()
    got = pf.read(["y"], filters=filters)
    assert got.equals(streamwrite.ParquetFile(data).read(["y"], filters=filters))
    assert got.num_rows == 100
    assert store.stats.num_requests == 2
    assert 0 < store.stats.num_bytes <= plan.bytes_read


@pytest.mark.parametrize("writer", ["streamwrite", "pyarrow"])
def test_a_full_read_makes_one_request_per_row_group(store: ObjectStore, writer: str) -> None:
    """The reader announces each row group's chunks (prefetch): touching chunks merge into
    one request, and no byte is fetched twice (the tail's share of the last row group is not
    fetched again)."""
    table = reference_table(240_000)
    data = _parquet(table, writer, row_group_size=30_000)
    store.put_if_absent("full/data.parquet", data)
    store.stats.reset()
    source = RangeSource(store, "full/data.parquet", len(data), cache=RangeCache())
    pf = streamwrite.ParquetFile(source)
    assert pf.read().equals(table)
    assert store.stats.num_requests == 1 + pf.num_row_groups
    assert store.stats.num_bytes == len(data) - 4  # all but the leading magic, once
    assert not source.holds(4, 10)  # a row group's prefetched bytes are released after it


def test_a_chunk_running_into_the_tail_fetches_only_what_the_tail_lacks(
    store: ObjectStore,
) -> None:
    """The last column's last chunk starts before the tail and ends inside it: the read
    fetches the bytes before the tail, once; the tail stays as fetched."""
    table = reference_table(60_000)
    data = _parquet(table, "streamwrite", row_group_size=30_000)
    store.put_if_absent("cross/data.parquet", data)
    offset, size = _chunk_ranges(data, "order_id")[-1]
    tail_offset = len(data) - DEFAULT_TAIL_SIZE
    assert offset < tail_offset < offset + size
    cache = RangeCache()
    pf = streamwrite.ParquetFile(RangeSource(store, "cross/data.parquet", len(data), cache=cache))
    store.stats.reset()
    assert pf.read_row_group(1, ["order_id"]).equals(table.slice(30_000).select(["order_id"]))
    assert (store.stats.num_requests, store.stats.num_bytes) == (1, tail_offset - offset)
    # kept: the tail as fetched, and the chunk (under 1 MiB)
    assert (len(cache), cache.size) == (2, DEFAULT_TAIL_SIZE + size)


class _CountingSource:
    """The README's ByteSource: any object with ``size``, ``read`` and ``close``."""

    def __init__(self, data: bytes) -> None:
        self.data, self.size = data, len(data)
        self.reads: list[tuple[int, int]] = []

    def read(self, offset: int, size: int) -> bytes:
        self.reads.append((offset, size))
        return self.data[offset : offset + size]

    def close(self) -> None:
        pass


def test_any_byte_source_is_read_by_parquet_file_and_read_table() -> None:
    table = reference_table(5000)
    data = _parquet(table, "streamwrite", row_group_size=1000)
    source = _CountingSource(data)
    assert isinstance(source, streamwrite.ByteSource)
    pf = streamwrite.ParquetFile(source)
    assert (0, 4) in source.reads  # no verify_head attribute: the leading magic is checked
    assert pf.read(["qty"]).equals(table.select(["qty"]))
    assert streamwrite.read_table(_CountingSource(data), columns=["ts"]).equals(
        table.select(["ts"])
    )
    with pytest.raises(CorruptFileError, match="magic"):
        streamwrite.ParquetFile(_CountingSource(b"XXXX" + data[4:]))
    short = _CountingSource(data)
    short.read = lambda offset, size: data[offset : offset + size - 1]  # type: ignore[method-assign]
    with pytest.raises(CorruptFileError, match="Short read"):
        streamwrite.ParquetFile(short)
