"""Table data skipping (issue 14 items 2, 4, 5): ``open_table(skipping=)``, the store kept at
commit and compaction, pruned reads and ``files(filters=)`` equal to full reads filtered."""

from __future__ import annotations

import functools
import io
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
from streamwrite.crypto import EncryptionConfig, InMemoryKms, KeyWrapper
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.crypto.live_keys import decryption_for
from streamwrite.errors import ConfigError, SchemaError
from streamwrite.format.txn import TXN_FILE, TxnRecord, decode_txn
from streamwrite.predicate import bind, parse_filters, to_arrow
from streamwrite.table.api import open_table
from streamwrite.table.index import build_index, drop_index, prune

HOUR_US = 3_600 * 10**6
TS = pa.timestamp("us", tz="UTC")
SCHEMA = pa.schema(
    [("ts", TS), ("symbol", pa.string()), ("order_id", pa.int64()), ("price", pa.float64())]
)
SKIPPING = {"symbol": ["valuelist", "bloom"], "order_id": ["bloom"], "price": ["minmax"]}
SYMBOLS = ["AAPL", "MSFT", "GOOG", "AMZN", "TSLA", "NVDA"]
KEYS = {"kf": bytes(range(16)), "k1": bytes(range(16, 32))}
POLICY = streamwrite.CompactionPolicy(min_small_row_groups=2, target_row_group_rows=100)
"""Merges the 25-row row groups of every sealed segment."""
EXAMPLES = int(os.environ.get("STREAMWRITE_SKIPPING_EXAMPLES", "12"))


def _run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return anyio.run(functools.partial(fn, *args, **kwargs))


def _txn(path: Path) -> TxnRecord:
    return decode_txn((path / TXN_FILE).read_bytes())


def _rows(start: int, num_rows: int, hours: int = 30) -> pa.Table:
    """Rows ``order_id`` start..; a few hours each, so a day table gets two partitions; one
    symbol per block of rows (segments hold few symbols); prices a walk with NaN, -0.0 and
    nulls."""
    ids = np.arange(start, start + num_rows, dtype=np.int64)
    price = np.cumsum(np.where(ids % 2 == 0, 1.0, -0.5)) + (ids // 50) * 3.0
    price[ids % 17 == 0] = np.nan
    price[ids % 23 == 0] = -0.0
    return pa.table(
        {
            "ts": pa.array((ids * HOUR_US * hours) // 200, TS),
            "symbol": pa.array([SYMBOLS[(i // 40) % len(SYMBOLS)] for i in ids]),
            "order_id": pa.array(ids * 7919 % 100_003),
            "price": pa.array(price, mask=ids % 29 == 0),
        }
    )


async def _build(
    path: Path,
    num_batches: int,
    *,
    compact: bool = False,
    skipping: Any = SKIPPING,
    **options: Any,
) -> streamwrite.Table:
    table = await open_table(
        path,
        SCHEMA,
        timestamp="ts",
        partition_by="day",
        commit_interval=None,
        compaction_interval=None,
        row_group_size=25,
        segment_row_groups=2,
        skipping=skipping,
        **options,
    )
    for k in range(num_batches):
        await table.append(_rows(k * 60, 60))
        await table.flush()
    if compact:
        await table.compact(policy=POLICY)
    return table


def _same(a: pa.Table, b: pa.Table) -> bool:
    """Equal tables, NaN equal to NaN and -0.0 distinct from 0.0 (floats compared by bits)."""
    if not a.schema.equals(b.schema) or a.num_rows != b.num_rows:
        return False
    for name in a.column_names:
        x, y = a[name].combine_chunks(), b[name].combine_chunks()
        if pa.types.is_floating(x.type):
            if not x.is_null().equals(y.is_null()):
                return False
            bits = [
                np.asarray(pc.fill_null(v, 0.0).to_numpy(zero_copy_only=False)).view(np.int64)
                for v in (x, y)
            ]
            if not np.array_equal(bits[0], bits[1]):
                return False
        elif not x.equals(y):
            return False
    return True


def _held(record: TxnRecord) -> dict[str, int]:
    """The segments the record's skipping store holds, with the committed size of each."""
    assert record.skipping is not None
    store = record.skipping["store"]
    return {} if store is None else {name: v[1] for name, v in store["segments"].items()}


def _expected(snapshot: streamwrite.TableSnapshot, filters: Any, **kw: Any) -> pa.Table:
    full = snapshot.read(**kw)
    return full.filter(to_arrow(bind(parse_filters(filters), SCHEMA)))


def _check(
    snapshot: streamwrite.TableSnapshot,
    filters: Any,
    decryption: DecryptionConfig | None = None,
) -> None:
    expected = _expected(snapshot, filters, decryption=decryption)
    got = snapshot.read(filters=filters, decryption=decryption)
    assert _same(got, expected), (filters, got.num_rows, expected.num_rows)
    if decryption is None:  # other engines read the surviving files at committed size
        kept = snapshot.files(filters=filters)
        parts = [pq.read_table(io.BytesIO(Path(p).read_bytes()[:size])) for p, size in kept]
        read = pa.concat_tables(parts) if parts else SCHEMA.empty_table()
        filtered = read.filter(to_arrow(bind(parse_filters(filters), SCHEMA)))
        assert _same(filtered, expected.cast(filtered.schema))


_VALUES = {
    "symbol": st.sampled_from([*SYMBOLS, "ZZZ", "A", ""]),
    "order_id": st.integers(-5, 100_010),
    "price": st.sampled_from([0.0, -0.0, 1.5, 10.0, 30.0, float("nan"), -3.0, 100.0]),
    "ts": st.integers(0, 40 * HOUR_US).map(lambda us: pa.scalar(us, TS)),
}


@st.composite
def _conjunct(draw: st.DrawFn) -> tuple[str, str, Any]:
    column = draw(st.sampled_from(sorted(_VALUES)))
    op = draw(st.sampled_from(["=", "==", "!=", "<", "<=", ">", ">=", "in", "not in"]))
    if op in ("in", "not in"):
        return column, op, draw(st.lists(_VALUES[column], min_size=1, max_size=3))
    return column, op, draw(_VALUES[column])


_DNF = st.one_of(
    st.lists(_conjunct(), min_size=1, max_size=3),
    st.lists(st.lists(_conjunct(), min_size=1, max_size=2), min_size=1, max_size=3),
)


@pytest.fixture(scope="module")
def compacted_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("skip") / "t"

    async def go() -> None:
        table = await _build(path, 8, compact=True)
        await table.append(_rows(1000, 50))  # a live newest segment after the merge
        await table.close()

    _run(go)
    return path


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(filters=_DNF)
def test_pruned_read_and_files_equal_the_full_read_filtered(
    compacted_table: Path, filters: Any
) -> None:
    _check(streamwrite.read_snapshot(compacted_table), filters)


@pytest.mark.parametrize(
    "filters",
    [
        [("symbol", "==", "TSLA")],
        [("order_id", "==", 7919 * 3 % 100_003)],
        [("price", ">", 40.0)],
        pc.field("price") != pc.scalar(float("nan")),
        ~(pc.field("price") < 10.0),
        pc.field("symbol").isin(["ZZZ"]),
        pc.field("price").is_null(),
        pc.field("ts") >= pa.scalar(30 * HOUR_US, TS),
    ],
)
def test_needles_and_traps(compacted_table: Path, filters: Any) -> None:
    snapshot = streamwrite.read_snapshot(compacted_table)
    _check(snapshot, filters)


def test_needle_skips_partitions_and_segments(compacted_table: Path) -> None:
    snapshot = streamwrite.read_snapshot(compacted_table)
    late = snapshot.plan(pc.field("ts") >= pa.scalar(30 * HOUR_US, TS))
    assert late.num_partitions == 4 and late.num_partitions_read == 3  # day 0 is before
    assert late.segments_skipped.get("partition", 0) >= 1
    none = snapshot.plan([("symbol", "==", "ZZZ")])
    assert none.num_segments_read == 0
    assert set(none.segments_skipped) <= {"store", "footer"}
    assert none.segments_skipped.get("store", 0) >= 1  # the sealed ones, by the store
    everything = snapshot.plan([("order_id", ">=", 0)])
    assert everything.num_segments_read == everything.num_segments


def test_store_entries_follow_commits_and_compaction(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def go() -> None:
        table = await _build(path, 4)
        record = table.record
        held = _held(record)
        for partition, segments in record.partitions.items():
            # every segment but the newest is sealed and in the store, at its listed size
            for segment in segments[:-1]:
                assert held[f"{partition}/{segment.name}"] == segment.size
            assert f"{partition}/{segments[-1].name}" not in held
        results = await table.compact(policy=POLICY)
        assert results
        after = table.record
        held = _held(after)
        for result in results:  # the same version lists the merged entry, not the retired
            assert held[f"{result.partition}/{result.segment.name}"] == result.segment.size
            assert not any(f"{result.partition}/{n}" in held for n in result.merged)
        await table.append(_rows(5000, 80))  # grows a merged newest: its entry goes
        await table.flush()
        grown = table.record
        held = _held(grown)
        for partition, segments in grown.partitions.items():
            for segment in segments:
                name = f"{partition}/{segment.name}"
                assert held.get(name, segment.size) == segment.size
        await table.close()

    _run(go)
    snapshot = streamwrite.read_snapshot(path)
    for filters in ([("symbol", "==", "AAPL")], [("order_id", "in", [0, 7919, 15838])]):
        _check(snapshot, filters)


def test_config_is_kept_replaced_dropped_and_built(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def go() -> None:
        table = await _build(path, 3)
        await table.close()
        config = _txn(path).skipping["config"]  # type: ignore[index]
        table = await open_table(path, commit_interval=None, compaction_interval=None)
        assert table.record.skipping["config"] == config  # type: ignore[index]
        await table.close()
        table = await open_table(
            path, commit_interval=None, compaction_interval=None, skipping={"price": ["minmax"]}
        )
        assert table.record.skipping["config"] == {"price": [["minmax", {}]]}  # type: ignore[index]
        assert _held(table.record) == {}
        await table.close()

    _run(go)
    snapshot = streamwrite.read_snapshot(path)
    _check(snapshot, [("price", ">", 20.0)])
    record = build_index(path)
    assert _held(record) == dict(record.files())
    _check(streamwrite.read_snapshot(path), [("price", ">", 20.0)])
    assert prune(path, [("price", ">", 1e9)]) == []
    record = drop_index(path)
    assert record.skipping is None and not (path / "_skipping").exists()
    _check(streamwrite.read_snapshot(path), [("price", ">", 20.0)])


def test_bad_skipping_configs_are_refused(tmp_path: Path) -> None:
    for bad in ({"nope": ["minmax"]}, {"price": ["hash"]}, {"price": "minmax"}, ["price"]):
        with pytest.raises(ConfigError):
            _run(_build, tmp_path / f"t{len(str(bad))}", 0, skipping=bad)  # type: ignore[arg-type]


def test_old_snapshots_stay_right_after_compaction(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def go() -> None:
        table = await _build(path, 6)
        with table.snapshot() as old:
            before = {repr(f): old.read(filters=f) for f in ([("symbol", "==", "MSFT")],)}
            await table.compact(policy=POLICY)
            for f in ([("symbol", "==", "MSFT")],):
                assert _same(old.read(filters=f), before[repr(f)])
                _check(old, f)
            _check(table.snapshot(), [("symbol", "==", "MSFT")])
        await table.close()

    _run(go)


def test_encrypted_table_prunes_and_reads_right(tmp_path: Path) -> None:
    path = tmp_path / "t"
    # The store records master key labels as xskipper does: a KMS-wrapped configuration.
    config = EncryptionConfig(footer_key_id="kf", column_keys={"price": "k1", "symbol": "k1"})
    encryption = FileEncryption(KeyWrapper(InMemoryKms(KEYS), config))
    decryption = decryption_for(encryption)

    async def go() -> None:
        table = await _build(path, 5, compact=True, encryption=encryption)
        await table.close()

    _run(go)
    snapshot = streamwrite.read_snapshot(path)
    for filters in ([("symbol", "==", "GOOG")], [("price", "<", 5.0)], [("order_id", "!=", 3)]):
        _check(snapshot, filters, decryption)


def test_a_filter_on_an_added_column_sees_nulls_in_older_segments(tmp_path: Path) -> None:
    path = tmp_path / "t"
    venue = pa.field("venue", pa.string())

    async def go() -> None:
        table = await _build(path, 3)
        await table.add_columns([venue])
        rows = _rows(900, 60)
        await table.append(rows.append_column(venue, pa.array(["X", None] * 30)))
        await table.close()

    _run(go)
    snapshot = streamwrite.read_snapshot(path)
    wide = SCHEMA.append(venue)
    for filters in ([("venue", "==", "X")], pc.field("venue").is_null(), [("venue", "!=", "X")]):
        expected = snapshot.read().filter(to_arrow(bind(parse_filters(filters), wide)))
        assert _same(snapshot.read(filters=filters), expected)
    with pytest.raises(SchemaError):
        snapshot.read(filters=[("nope", "==", 1)])


def test_embedded_kinds_reach_every_segment_through_the_writer_option(tmp_path: Path) -> None:
    from streamwrite.reader.embedded import read_embedded_index
    from streamwrite.reader.file import ParquetFile

    path = tmp_path / "t"
    skipping = {"ts": ["time_index"], "symbol": ["distinct", "valuelist"]}

    async def go() -> None:
        table = await _build(path, 3, skipping=skipping)
        await table.close()
        table = await open_table(path, commit_interval=None, compaction_interval=None)
        await table.append(_rows(700, 30))  # reopened without skipping=: still written
        await table.close()

    _run(go)
    record = _txn(path)
    for name, size in record.files():
        with ParquetFile(path / name, snapshot=size) as pf:
            assert read_embedded_index(pf) is not None, name
    with pytest.raises(ConfigError):
        _run(_build, tmp_path / "u", 0, skipping=skipping, embedded_index={"ts": ["distinct"]})


def test_surviving_files_read_by_pyarrow_dataset_through_the_snapshot_view(
    compacted_table: Path,
) -> None:
    """The README's recipe: the surviving files, each cut at its committed size by the view."""
    import pyarrow.dataset as ds

    path = compacted_table
    filters = [("symbol", "in", ["TSLA", "ZZZ"])]  # days 1 and 2 only
    snapshot = streamwrite.read_snapshot(path)
    assert streamwrite.prune(path, filters) == snapshot.files(filters=filters)
    kept = snapshot.files(filters=filters)
    assert 0 < len(kept) < len(snapshot.files)
    with streamwrite.snapshot_filesystem(path, snapshot.version) as fs:  # the same version
        names = [os.path.relpath(os.path.dirname(p), path) + "/data.parquet" for p, _ in kept]
        dataset = ds.dataset(names, filesystem=fs, format="parquet", schema=SCHEMA)
        got = dataset.to_table(filter=pc.field("symbol").isin(["TSLA", "ZZZ"]))
    assert _same(got, _expected(snapshot, filters))


def test_a_segment_whose_pm_is_unreadable_is_read_by_the_footer_txn_names(tmp_path: Path) -> None:
    """Inside a table ``_pm`` is no commit point (state.py): a filtered read falls back to the
    footer ``_txn`` recorded, as the full read does, and filters it the same way."""
    path = tmp_path / "t"

    async def go() -> None:
        table = await _build(path, 3)
        await table.close()

    _run(go)
    name, _ = _txn(path).files()[0]
    pm = path / name / "_pm"
    pm.write_bytes(bytes(len(pm.read_bytes())))  # zeros: no header, no footer
    snapshot = streamwrite.read_snapshot(path)
    for filters in ([("symbol", "==", "AAPL")], [("price", ">", 3.0)], [("order_id", "<", 0)]):
        _check(snapshot, filters)


def test_a_partition_the_rows_moved_past_gets_its_entry(tmp_path: Path) -> None:
    """A time partition's newest segment that two commits in a row did not write is indexed
    (time-ordered appends never seal it by rollover); if it grows after all, its entry goes."""
    path = tmp_path / "t"

    async def go() -> None:
        table = await open_table(
            path,
            SCHEMA,
            timestamp="ts",
            partition_by="day",
            commit_interval=None,
            compaction_interval=None,
            row_group_size=25,
            skipping=SKIPPING,
        )
        day = 200 * 24 // 30  # rows per day in _rows
        for k in range(4):  # one day per commit: each commit writes one new partition
            await table.append(_rows(k * day, day))
            await table.flush()
        record = table.record
        held = _held(record)
        partitions = list(record.partitions)
        assert len(partitions) == 4
        for partition in partitions[:2]:  # quiet for two commits: indexed at their size
            (segment,) = record.partitions[partition]
            assert held[f"{partition}/{segment.name}"] == segment.size
        for partition in partitions[2:]:  # written by this commit or the one before
            assert not any(name.startswith(partition) for name in held)
        await table.append(_rows(10, 5))  # late rows grow the first day's segment
        await table.flush()
        first = partitions[0]
        (segment,) = table.record.partitions[first]
        assert _held(table.record).get(f"{first}/{segment.name}") is None
        for _ in range(2):  # quiet again: indexed again, sketch still whole
            await table.append(_rows(4 * day + 10 * _, 10))
            await table.flush()
        (segment,) = table.record.partitions[first]
        assert _held(table.record)[f"{first}/{segment.name}"] == segment.size
        await table.close()

    _run(go)
    snapshot = streamwrite.read_snapshot(path)
    for filters in (
        [("symbol", "==", SYMBOLS[0])],
        [("order_id", "in", [70, 7919 * 12 % 100_003])],
    ):
        _check(snapshot, filters)
    plan = snapshot.plan([("order_id", "==", 7919 * 3 % 100_003)])
    assert "store" in plan.explain()


def test_read_snapshot_takes_a_string_path(tmp_path: Path) -> None:
    """As every public entry point: a ``str`` path, not only a ``Path``."""

    async def go() -> None:
        await (await _build(tmp_path / "t", 1)).close()

    _run(go)
    snapshot = streamwrite.read_snapshot(str(tmp_path / "t"))
    assert snapshot.read(filters=[("order_id", "==", 7919)]).num_rows == 1
