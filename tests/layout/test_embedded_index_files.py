"""Embedded indexes in real files: the blob sits between the row groups and the page index,
each live-file snapshot finds its own, its contents are those of the data, encrypted columns
get none, compaction keeps it right, and pruning with it never drops a matching row."""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamwrite
from streamwrite.crypto import ExplicitKeys
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.errors import ConfigError, CorruptFileError
from streamwrite.format.index import KV_DATAFUSION_OFFSET, KV_INDEX_OFFSET
from streamwrite.live.file import LiveFile
from streamwrite.options import CompactionPolicy
from streamwrite.predicate import Containers, bind, parse_filters, prune, prune_fragments, to_arrow
from streamwrite.reader.embedded import EmbeddedIndex, read_embedded_index
from streamwrite.reader.file import ParquetFile
from streamwrite.table.api import open_table

EXAMPLES = int(os.environ.get("STREAMWRITE_EMBED_EXAMPLES", "25"))
INDEX = {"sym": ["distinct"], "ts": [("time_index", {"block_rows": 7})], "n": ["distinct"]}
UTC = datetime.UTC


def _table(rng: np.random.Generator, num_rows: int, null_share: float = 0.1) -> pa.Table:
    symbols = np.array(["", "a", "b", "ccc", "é", "zz"], dtype=object)[rng.integers(0, 6, num_rows)]
    mask = rng.random(num_rows) < null_share
    ts = np.sort(rng.integers(0, 10**6, num_rows))
    return pa.table(
        {
            "sym": pa.array(symbols, pa.string(), mask=mask),
            "ts": pa.array(ts, pa.timestamp("us", "UTC"), mask=rng.random(num_rows) < null_share),
            "n": pa.array(rng.integers(-5, 5, num_rows), pa.int16()),
            "x": pa.array(rng.random(num_rows)),
        }
    )


def _append_all(path: Path, batches: list[pa.Table], **options: Any) -> list[Any]:
    async def go() -> list[Any]:
        async with await LiveFile.open(path, batches[0].schema, **options) as lf:
            return [await lf.append(batch) for batch in batches]

    return anyio.run(go)


def _check_against_data(index: EmbeddedIndex, data: pa.Table, row_groups: list[int]) -> None:
    """Every recorded value set and block equals what the rows hold."""
    assert index.num_row_groups == len(row_groups)
    starts = np.concatenate([[0], np.cumsum(row_groups)])
    for column in ("sym", "n"):
        found = index.distinct(column)
        assert found is not None
        values, sets = found
        for rg, value_set in enumerate(sets):
            rows = data.column(column).slice(starts[rg], row_groups[rg])
            expected = set(pc.unique(rows).drop_null().to_pylist())
            assert value_set is not None
            assert set(value_set.to_pylist()) == expected
            assert len(value_set) == len(expected)
        assert set(values.to_pylist()) == set(
            pc.unique(data.column(column)).drop_null().to_pylist()
        )
    for rg in range(len(row_groups)):
        found_blocks = index.fragments("ts", rg)
        assert found_blocks is not None
        first_rows, stats = found_blocks
        rows = data.column("ts").slice(starts[rg], row_groups[rg])
        assert list(first_rows) == list(range(0, row_groups[rg], 7))
        for b, first in enumerate(first_rows):
            block = rows.slice(int(first), 7)
            assert stats.null_count is not None and stats.min is not None and stats.max is not None
            assert stats.null_count[b].as_py() == block.null_count
            bounds = pc.min_max(block)
            assert stats.min[b].as_py() == bounds["min"].as_py()
            assert stats.max[b].as_py() == bounds["max"].as_py()


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 2**32 - 1),
    sizes=st.lists(st.integers(1, 60), min_size=1, max_size=5),
    row_group_size=st.integers(1, 40),
)
def test_every_snapshot_finds_its_own_blob_equal_to_its_rows(
    tmp_path_factory: pytest.TempPathFactory, seed: int, sizes: list[int], row_group_size: int
) -> None:
    path = tmp_path_factory.mktemp("live") / "f"
    rng = np.random.default_rng(seed)
    batches = [_table(rng, n) for n in sizes]
    commits = _append_all(path, batches, row_group_size=row_group_size, embedded_index=INDEX)
    data = pa.concat_tables(batches)
    row_groups: list[int] = []
    done = 0
    for batch, commit in zip(batches, commits, strict=True):
        row_groups += [
            min(row_group_size, batch.num_rows - s)
            for s in range(0, batch.num_rows, row_group_size)
        ]
        done += batch.num_rows
        with ParquetFile(path, snapshot=commit.parquet_size) as pf:
            index = read_embedded_index(pf)
            assert index is not None
            assert commit.num_row_groups == len(row_groups)
            _check_against_data(index, data.slice(0, done), row_groups)
            # the blob sits after the newest row groups, before the page index and footer
            offset = int(dict(pf.metadata.metadata)[KV_INDEX_OFFSET.encode()])
            last = (pf.thrift_metadata.row_groups or [])[-1]
            last_chunk_end = max(
                (c.meta_data.data_page_offset or 0) + (c.meta_data.total_compressed_size or 0)
                for c in last.columns or []
                if c.meta_data is not None
            )
            assert last_chunk_end <= offset < pf.footer_offset
            first_index = min(c.column_index_offset or pf.footer_offset for c in last.columns or [])
            assert offset < first_index
        assert pq.read_table(path / "data.parquet").num_rows == data.num_rows  # newest


def _rows_matching(data: pa.Table, expr: Any, row_groups: list[int]) -> np.ndarray:
    """Per row group: does it hold a row where the filter is TRUE."""
    out = []
    start = 0
    for size in row_groups:
        out.append(data.slice(start, size).filter(to_arrow(expr)).num_rows > 0)
        start += size
    return np.array(out, dtype=bool)


_symbols = st.sampled_from(["", "a", "b", "ccc", "é", "zz", "q"])
_times = st.integers(-10, 10**6 + 10).map(
    lambda us: datetime.datetime(1970, 1, 1, tzinfo=UTC) + datetime.timedelta(microseconds=us)
)


@st.composite
def _filters(draw: st.DrawFn) -> list[Any]:
    def leaf() -> Any:
        kind = draw(st.integers(0, 4))
        if kind == 0:
            return ("sym", draw(st.sampled_from(["==", "!=", "<", ">="])), draw(_symbols))
        if kind == 1:
            return (
                "sym",
                draw(st.sampled_from(["in", "not in"])),
                draw(st.lists(_symbols, max_size=3)),
            )
        if kind == 2:
            return ("n", draw(st.sampled_from(["==", "!=", "<", ">"])), draw(st.integers(-6, 6)))
        return ("ts", draw(st.sampled_from(["<", "<=", ">", ">=", "=="])), draw(_times))

    return [
        [leaf() for _ in range(draw(st.integers(1, 2)))] for _ in range(draw(st.integers(1, 2)))
    ]


@settings(
    max_examples=EXAMPLES * 4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 2**32 - 1),
    num_rows=st.integers(1, 120),
    row_group_size=st.integers(1, 50),
    filters=_filters(),
)
def test_containers_and_fragments_never_drop_a_matching_row(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    num_rows: int,
    row_group_size: int,
    filters: list[Any],
) -> None:
    path = tmp_path_factory.mktemp("prune") / "f.parquet"
    data = _table(np.random.default_rng(seed), num_rows, null_share=0.3)
    streamwrite.write_table(data, path, row_group_size=row_group_size, embedded_index=INDEX)
    row_groups = [min(row_group_size, num_rows - s) for s in range(0, num_rows, row_group_size)]
    with ParquetFile(path) as pf:
        index = read_embedded_index(pf)
    assert index is not None
    expr = bind(parse_filters(filters), data.schema)
    kept = prune(expr, index.containers())
    holds = _rows_matching(data, expr, row_groups)
    assert not (holds & ~kept).any(), (filters, holds, kept)
    # fragments of the time index (prune_fragments): every matching row stays in the ranges
    start = 0
    for rg, size in enumerate(row_groups):
        found = index.fragments("ts", rg)
        assert found is not None
        ranges = prune_fragments(expr, {"ts": found}, size)
        truth = _row_truth(data.slice(start, size), expr)
        kept_rows = ranges.mask(size)
        assert not (truth & ~kept_rows).any(), (filters, rg)
        start += size


def _row_truth(rows: pa.Table, expr: Any) -> np.ndarray:
    """Per row: is the filter TRUE (the rows ``table.filter(to_arrow(expr))`` keeps)."""
    numbered = rows.append_column("__row", pa.array(np.arange(rows.num_rows)))
    hit = numbered.filter(to_arrow(expr)).column("__row").to_numpy()
    truth = np.zeros(rows.num_rows, dtype=bool)
    truth[hit] = True
    return truth


def test_pruning_with_the_index_skips_row_groups(tmp_path: Path) -> None:
    """Not a vacuous guarantee: a needle keeps only its row group, by value set and time."""
    path = tmp_path / "f.parquet"
    data = pa.table(
        {
            "sym": pa.array(["a"] * 100 + ["b"] * 100 + ["a"] * 100),
            "ts": pa.array(range(300), pa.timestamp("us", "UTC")),
            "n": pa.array([1] * 300, pa.int16()),
        }
    )
    streamwrite.write_table(data, path, row_group_size=100, embedded_index=INDEX)
    with ParquetFile(path) as pf:
        index = read_embedded_index(pf)
    assert index is not None
    containers = index.containers()
    assert list(prune(bind(parse_filters([("sym", "==", "b")]), data.schema), containers)) == [
        False,
        True,
        False,
    ]
    moment = datetime.datetime(1970, 1, 1, tzinfo=UTC) + datetime.timedelta(microseconds=150)
    expr = bind(parse_filters([("ts", "==", moment)]), data.schema)
    assert list(prune(expr, containers)) == [False, True, False]
    found = index.fragments("ts", 1)
    assert found is not None
    first_rows, stats = found
    kept = prune(expr, Containers(len(first_rows), {"ts": stats}))
    assert list(np.flatnonzero(kept)) == [50 // 7]
    ranges = prune_fragments(expr, {"ts": found}, 100)
    assert ranges.slices() == [slice(49, 56)]  # the one block of 7 rows holding row 50


def test_reopen_continues_the_blob_and_without_the_option_writes_none(tmp_path: Path) -> None:
    path = tmp_path / "f"
    rng = np.random.default_rng(1)
    first, second, third = (_table(rng, 20) for _ in range(3))
    _append_all(path, [first], row_group_size=8, embedded_index=INDEX)
    commits = _append_all(path, [second], row_group_size=8, embedded_index=INDEX)
    with ParquetFile(path, snapshot=commits[0].parquet_size) as pf:
        index = read_embedded_index(pf)
        assert index is not None
        _check_against_data(index, pa.concat_tables([first, second]), [8, 8, 4, 8, 8, 4])
    plain = _append_all(path, [third], row_group_size=8)
    with ParquetFile(path, snapshot=plain[0].parquet_size) as pf:
        assert read_embedded_index(pf) is None  # no option: the newest footer names none
    with ParquetFile(path, snapshot=commits[0].parquet_size) as pf:
        assert read_embedded_index(pf) is not None  # the older snapshot keeps its own
    again = _append_all(path, [first], row_group_size=8, embedded_index=INDEX)
    with ParquetFile(path, snapshot=again[0].parquet_size) as pf:
        index = read_embedded_index(pf)
        assert index is not None and index.num_row_groups == 12
        found = index.distinct("sym")
        assert found is not None
        sets = found[1]
        assert [s is None for s in sets] == [True] * 9 + [False] * 3  # before: unknown
        assert index.fragments("ts", 8) is None and index.fragments("ts", 9) is not None


def test_column_types(tmp_path: Path) -> None:
    data = pa.table(
        {
            "d": pa.array([datetime.date(2026, 1, 2), None, datetime.date(1969, 12, 31)]),
            "u": pa.array([2**64 - 1, 0, 5], pa.uint64()),
            "i8": pa.array([-128, 127, None], pa.int8()),
            "dict": pa.array(["x", "y", "x"]).dictionary_encode(),
            "bin": pa.array([b"\x00", b"", None], pa.binary()),
            "ls": pa.array(["p", "q", "p"], pa.large_string()),
            "fixed": pa.array([b"ab", b"cd", b"ab"], pa.binary(2)),
            "t": pa.array([1, 2, 3], pa.time32("s")),
        }
    )
    index_option: dict[str, list[Any]] = {name: ["distinct"] for name in data.column_names}
    index_option["d"] = ["distinct", "time_index"]
    path = tmp_path / "f.parquet"
    streamwrite.write_table(data, path, row_group_size=2, embedded_index=index_option)
    with ParquetFile(path) as pf:
        index = read_embedded_index(pf)
    assert index is not None
    for name in data.column_names:
        found = index.distinct(name)
        assert found is not None, name
        for rg, value_set in enumerate(found[1]):
            rows = data.column(name).slice(2 * rg, 2)
            if pa.types.is_dictionary(rows.type):
                rows = rows.cast(rows.type.value_type)
            assert value_set is not None
            assert value_set.type == rows.type
            assert set(value_set.to_pylist()) == set(pc.unique(rows).drop_null().to_pylist())
    stats = index.containers().columns["d"]
    assert stats.min is not None and stats.min.to_pylist() == [
        datetime.date(2026, 1, 2),
        datetime.date(1969, 12, 31),
    ]
    for bad, message in [
        ({"x": ["distinct"]}, "floats"),
        ({"x": ["time_index"]}, "time_index takes"),
        ({"s": ["datafusion_distinct"]}, "UTF-8"),
    ]:
        table = pa.table({"x": [1.5], "s": pa.array([b"a"])})
        with pytest.raises(ConfigError, match=message):
            streamwrite.write_table(table, tmp_path / "bad.parquet", embedded_index=bad)


def test_over_cap_column_proves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    data = pa.table({"sym": [str(i) for i in range(50)]})
    streamwrite.write_table(
        data, path, row_group_size=10, embedded_index={"sym": [("distinct", {"max_values": 20})]}
    )
    with ParquetFile(path) as pf:
        index = read_embedded_index(pf)
    assert index is not None
    assert index.kinds() == {"sym": ["distinct (over cap)"]}
    assert index.distinct("sym") is None
    assert index.containers().columns == {}


def test_datafusion_blob_is_the_spec_form(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    data = pa.table({"category": ["foo", "bar", "foo", "baz"]})
    streamwrite.write_table(
        data, path, row_group_size=2, embedded_index={"category": ["datafusion_distinct"]}
    )
    raw = path.read_bytes()
    offset = int(pq.ParquetFile(path).metadata.metadata[KV_DATAFUSION_OFFSET.encode()])
    size = int.from_bytes(raw[offset + 4 : offset + 12], "little")
    assert raw[offset : offset + 4] == b"IDX1"
    assert raw[offset + 12 : offset + 12 + size] == b"bar\nbaz\nfoo"
    newline = tmp_path / "g.parquet"
    streamwrite.write_table(
        pa.table({"category": ["a\nb"]}),
        newline,
        embedded_index={"category": ["datafusion_distinct"]},
    )
    keys = pq.ParquetFile(newline).metadata.metadata
    assert KV_DATAFUSION_OFFSET.encode() not in keys and KV_INDEX_OFFSET.encode() in keys


KEYS = {"kf": bytes(range(16)), "k1": bytes(range(16, 32))}


@pytest.mark.parametrize("plaintext_footer", [False, True])
def test_encrypted_columns_get_no_entry(tmp_path: Path, plaintext_footer: bool) -> None:
    """The blob holds plaintext values: an encrypted column is not indexed; a plaintext
    column of an encrypted file is (its values are plaintext pages anyway)."""
    path = tmp_path / "f.parquet"
    data = pa.table({"secret": ["hidden-one", "hidden-two"], "open": ["o1", "o2"]})
    encryption = FileEncryption(
        ExplicitKeys(KEYS, "kf", {"secret": "k1"}), plaintext_footer=plaintext_footer
    )
    streamwrite.write_table(
        data,
        path,
        encryption=encryption,
        embedded_index={"secret": ["distinct"], "open": ["distinct"]},
    )
    assert b"hidden" not in path.read_bytes()
    decryption = DecryptionConfig(ExplicitKeys(KEYS, "kf", {"secret": "k1"}))
    with ParquetFile(path, decryption=decryption) as pf:
        index = read_embedded_index(pf)
        assert index is not None
        assert index.kinds() == {"open": ["distinct"]}
        assert pf.read().equals(data)


@pytest.mark.parametrize("encrypted", [False, True])
def test_compaction_keeps_a_correct_index(tmp_path: Path, encrypted: bool) -> None:
    """Raw-copied row groups carry their parts; merged ones (read physically, or through
    Arrow for an encrypted table) get theirs rebuilt from the rows."""
    path = tmp_path / "t"
    data = _table(np.random.default_rng(3), 5_300)

    def options() -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if encrypted:
            extra["encryption"] = FileEncryption(ExplicitKeys(KEYS, "kf", {"x": "k1"}))
        return {
            "segment_row_groups": 2,
            "row_group_size": 1_000,
            "compaction_interval": None,
            "embedded_index": INDEX,
            "compaction": CompactionPolicy(grace_seconds=3600),
            **extra,
        }

    # segments [100, 100] [1000, 1000] [1000, 1000] [1000, 100]: the small pair joins the
    # first full row group (re-encoded), the other full ones are copied raw (plaintext)
    sizes = [100, 100, 1000, 1000, 1000, 1000, 1000, 100]
    starts = np.cumsum([0, *sizes])
    batches = [data.slice(int(a), n) for a, n in zip(starts, sizes, strict=False)]

    async def go() -> Any:
        async with await open_table(path, data.schema, **options()) as t:
            for i, batch in enumerate(batches):
                await t.append(batch, app_id="a", batch_id=i)
            return await t.compact()

    (result,) = anyio.run(go)
    assert result.reencoded_row_groups > 0
    assert (result.raw_row_groups > 0) is not encrypted
    decryption = DecryptionConfig(ExplicitKeys(KEYS, "kf", {"x": "k1"})) if encrypted else None
    assert streamwrite.read_table(path, decryption=decryption).equals(data)
    merged = next(path.rglob(result.segment.name))
    with ParquetFile(merged, decryption=decryption) as pf:
        index = read_embedded_index(pf)
        assert index is not None
        sizes_after = [rg.num_rows or 0 for rg in pf.thrift_metadata.row_groups or []]
        _check_against_data(index, pf.read(), sizes_after)


def test_readme_snippet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's example, as written there (paths under tmp_path)."""
    monkeypatch.chdir(tmp_path)
    table = _table(np.random.default_rng(7), 1_000).rename_columns(["symbol", "ts", "n", "x"])
    # --- README ---
    import pyarrow.parquet as pq

    import streamwrite

    streamwrite.write_table(
        table,
        "trades.parquet",
        row_group_size=250,
        embedded_index={"symbol": ["distinct"], "ts": [("time_index", {"block_rows": 64})]},
    )
    offset = int(pq.ParquetFile("trades.parquet").metadata.metadata[b"streamwrite.index_offset"])
    with open("trades.parquet", "rb") as f:
        f.seek(offset)
        assert f.read(4) == b"IDX1"
    # --- end ---
    with ParquetFile(tmp_path / "trades.parquet") as pf:
        index = read_embedded_index(pf)
        assert index is not None and index.kinds() == {
            "symbol": ["distinct"],
            "ts": ["time_index"],
        }


def test_parquet_writer_takes_the_option(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    rng = np.random.default_rng(5)
    parts = [_table(rng, 30), _table(rng, 12)]
    with streamwrite.ParquetWriter(
        path, parts[0].schema, row_group_size=10, embedded_index=INDEX
    ) as writer:
        for part in parts:
            writer.write_table(part)
    with ParquetFile(path) as pf:
        index = read_embedded_index(pf)
    assert index is not None
    _check_against_data(index, pa.concat_tables(parts), [10, 10, 10, 10, 2])


def test_a_damaged_blob_or_key_is_a_corrupt_file_error(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    streamwrite.write_table(_table(np.random.default_rng(2), 20), path, embedded_index=INDEX)
    raw = bytearray(path.read_bytes())
    offset = int(pq.ParquetFile(path).metadata.metadata[KV_INDEX_OFFSET.encode()])
    bad_magic = bytearray(raw)
    bad_magic[offset + 3] = ord("9")
    (tmp_path / "magic.parquet").write_bytes(bad_magic)
    bad_size = bytearray(raw)
    bad_size[offset + 4 : offset + 12] = (1 << 40).to_bytes(8, "little")
    (tmp_path / "size.parquet").write_bytes(bad_size)
    for name, message in [("magic", "magic"), ("size", "runs into the footer")]:
        with (
            ParquetFile(tmp_path / f"{name}.parquet") as pf,
            pytest.raises(CorruptFileError, match=message),
        ):
            read_embedded_index(pf)
        assert pq.read_table(tmp_path / f"{name}.parquet").num_rows == 20  # data unaffected
