"""SkippingStore: pruning never drops a segment holding a matching row (random segments and
filters against ``pyarrow.compute`` on each segment), unknown and retired segments are read,
remove/rebuild/reopen, and a crash before the table publishes the state."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from streamwrite.errors import ConfigError
from streamwrite.predicate import bind, parse_filters, to_arrow
from streamwrite.skipping.config import SkippingConfig
from streamwrite.skipping.sketch import SegmentSketch
from streamwrite.skipping.store import SkippingStore
from streamwrite.skipping.xskipper import StoreEntry, store_directory

RUNS = int(os.environ.get("STREAMWRITE_SKIPPING_RUNS", "6"))
CONFIG = SkippingConfig.parse(
    {
        "symbol": ["valuelist", ("bloom", {"ndv": 500, "fpp": 0.01})],
        "qty": [("bloom", {"ndv": 500, "fpp": 0.05}), "minmax"],
        "price": ["minmax", ("valuelist", {"ndv": 300, "fpp": 0.01})],
        "ts": ["minmax"],
        "day": ["time_index"],
    }
)
SCHEMA = pa.schema(
    [
        ("symbol", pa.string()),
        ("qty", pa.int32()),
        ("price", pa.float64()),
        ("ts", pa.timestamp("ns", "UTC")),
        ("day", pa.date32()),
    ]
)
SYMBOLS = [f"SYM{i}" for i in range(40)] + ["ümlaut", "日本", ""]


def _segment(rng: np.random.Generator, i: int) -> pa.Table:
    n = int(rng.integers(1, 40))
    kind = i % 5
    sym = rng.choice(SYMBOLS[(i % 8) * 5 : (i % 8) * 5 + 6], n).tolist()
    qty = rng.integers(-50, 50, n) + 100 * (i % 7)
    price = np.round(rng.normal(10 * (i % 4), 3, n), 1)
    if kind == 1:
        price[0] = np.nan
    if kind == 2:
        price[:] = -0.0
    ts = 10**18 + i * 3_600 * 10**9 + rng.integers(0, 3_600 * 10**9, n)
    mask = rng.random(n) < (1.0 if kind == 3 else 0.1)  # kind 3: all null
    return pa.table(
        {
            "symbol": pa.array(sym, pa.string(), mask=mask),
            "qty": pa.array(qty.astype(np.int32), pa.int32(), mask=mask),
            "price": pa.array(price, pa.float64(), mask=mask),
            "ts": pa.array(ts, pa.timestamp("ns", "UTC"), mask=mask),
            "day": pa.array(np.full(n, 20000 + i, np.int32), pa.date32()),
        }
    )


def _entries(tmp: Path, tables: list[pa.Table], start: int = 0) -> list[StoreEntry]:
    return [
        StoreEntry(
            segment=f"seg{start + i}",
            path=str(tmp / f"p{start + i}" / "data.parquet"),
            committed_size=100 + i,
            sketch=SegmentSketch.of(CONFIG, t),
            mtime_ms=1_700_000_000_000 + i,
        )
        for i, t in enumerate(tables)
    ]


def _filters(rng: np.random.Generator) -> list[object]:
    sym = str(rng.choice(SYMBOLS))
    q = int(rng.integers(-60, 700))
    p = float(np.round(rng.normal(15, 12), 1))
    t = pa.scalar(10**18 + int(rng.integers(0, 40)) * 3_600 * 10**9, pa.timestamp("ns", "UTC"))
    x = pc.field
    return [
        [("symbol", "==", sym)],
        [("symbol", "in", [sym, "SYM3", "nothing"])],
        [("symbol", "!=", sym)],
        [("symbol", "not in", [sym])],
        [("qty", "==", q)],
        [("qty", "in", [q, q + 1, 10_000_000])],
        [("qty", "<", q)],
        [("qty", ">=", q), ("symbol", "==", sym)],
        [[("qty", ">", q)], [("symbol", "==", sym)]],
        [("price", ">", p)],
        [("price", "<=", p)],
        [("price", "==", 0.0)],
        [("price", "in", [0.0, p])],
        [("price", "!=", p)],
        ~(x("price") < p),
        pc.is_nan(x("price")),
        x("price").is_null(),
        x("qty").is_valid() & (x("qty") == q),
        [("ts", ">=", t)],
        [("ts", "<", t)],
        pc.starts_with(x("symbol"), sym[:2]),
        ~(x("symbol") == sym) | (x("qty") > q),
    ]


def _check(
    store: SkippingStore, tables: dict[str, pa.Table], segments: list[str], flt: object
) -> np.ndarray:
    expr = bind(parse_filters(flt), SCHEMA)
    keep = store.prune(expr, segments)
    assert keep.shape == (len(segments),) and keep.dtype == bool
    arrow = to_arrow(expr)
    for i, name in enumerate(segments):
        if name in tables and tables[name].filter(arrow).num_rows > 0:
            assert keep[i], f"{flt!r}: segment {name} holds matching rows but was pruned"
    return keep


@pytest.mark.parametrize("seed", range(RUNS))
def test_prune_never_drops_a_matching_segment(tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    tables = [_segment(rng, i) for i in range(30)]
    store = SkippingStore.open(tmp_path, CONFIG)
    entries = _entries(tmp_path, tables)
    store.add_sealed(entries[:12])
    state = store.add_sealed(entries[12:])
    by_name = {e.segment: t for e, t in zip(entries, tables, strict=True)}
    segments = [*by_name, "live-segment"]
    pruned_any = False
    reopened = SkippingStore.open(tmp_path, CONFIG, json.loads(json.dumps(state)))
    for flt in _filters(rng):
        keep = _check(store, by_name, segments, flt)
        assert keep[-1], "a segment the store does not hold is always read"
        again = reopened.prune(bind(parse_filters(flt), SCHEMA), segments)
        assert np.array_equal(keep, again)
        pruned_any |= not keep.all()
    assert pruned_any


def test_needles_prune_and_lookup_is_small(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    tables = [_segment(rng, i) for i in range(200)]
    store = SkippingStore.open(tmp_path, CONFIG)
    entries = _entries(tmp_path, tables)
    store.add_sealed(entries)
    by_name = {e.segment: t for e, t in zip(entries, tables, strict=True)}
    names = list(by_name)
    keep = _check(store, by_name, names, [("symbol", "==", "SYM41")])
    assert keep.sum() <= 5  # no symbol SYM41 anywhere: only false positives remain
    keep = _check(store, by_name, names, [("qty", "==", 612)])
    assert keep.sum() < 60
    keep = _check(store, by_name, names, [("price", "==", float("nan"))])
    assert not keep.any()  # NaN == NaN is false in Arrow compute


def test_remove_and_rebuild(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    tables = [_segment(rng, i) for i in range(10)]
    entries = _entries(tmp_path, tables)
    store = SkippingStore.open(tmp_path, CONFIG)
    for e in entries:
        store.add_sealed([e])
    directory = store_directory(tmp_path)
    assert len([p for p in directory.iterdir() if p.name.startswith("part-")]) == 10
    published = store.state
    state = store.remove(["seg0", "seg1"])
    assert sorted(state["segments"]) == [f"seg{i}" for i in range(2, 10)]
    assert len(state["files"]) == 8

    def on_disk() -> list[str]:
        return sorted(p.name for p in directory.iterdir() if p.name.startswith("part-"))

    # until the caller publishes the new state, a crash finds the published one: its files stay
    assert on_disk() == sorted(published["files"])
    store.add_sealed([])  # the state before the last call may still be the published one
    assert set(published["files"]) <= set(on_disk())
    store.add_sealed([])  # two calls on: neither of the two newest states names them
    assert on_disk() == sorted(state["files"])
    expr = bind(parse_filters([("symbol", "==", "nothing-like-this")]), SCHEMA)
    keep = store.prune(expr, ["seg0", "seg1", "seg2", "seg3"])
    assert keep[:2].all()  # retired: unknown to the store, read
    assert not keep[2:].any()
    by_name = {e.segment: t for e, t in zip(entries, tables, strict=True)}
    new_tables = [_segment(rng, i) for i in range(10, 14)]
    merged = _entries(tmp_path, new_tables, start=10)
    state = store.rebuild(entries[2:] + merged)
    by_name.update({e.segment: t for e, t in zip(merged, new_tables, strict=True)})
    assert state["generation"] == 1 and len(state["files"]) == 1
    assert set(state["files"]) < set(on_disk())  # the replaced files wait for the next call
    for flt in _filters(rng):
        _check(store, by_name, list(by_name), flt)
    store.add_sealed([])
    assert sorted(p.name for p in (directory / "_lookup").iterdir()) == ["g0", "g1"]  # grace
    store.add_sealed([])  # collects what neither this state nor the one before names
    assert on_disk() == state["files"]
    assert sorted(p.name for p in (directory / "_lookup").iterdir()) == ["g1"]


def test_crash_before_publish_leaves_a_safe_store(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    tables = [_segment(rng, i) for i in range(8)]
    entries = _entries(tmp_path, tables)
    store = SkippingStore.open(tmp_path, CONFIG)
    published = store.add_sealed(entries[:4])
    store.add_sealed(entries[4:6])  # "crash": this state is never published
    directory = store_directory(tmp_path)
    assert len([p for p in directory.iterdir() if p.name.startswith("part-")]) == 2
    # Restart from the published state: the extra bits and file cost reads, never answers.
    after = SkippingStore.open(tmp_path, CONFIG, published)
    by_name = {e.segment: t for e, t in zip(entries, tables, strict=True)}
    names = list(by_name)
    for flt in _filters(rng):
        keep = _check(after, by_name, names, flt)
        assert keep[4:].all()  # not in the published state: read
    state = after.add_sealed(entries[4:])  # slots 4.. again, over the crashed bits
    assert sorted(p.name for p in directory.iterdir() if p.name.startswith("part-")) == sorted(
        state["files"]
    )
    for flt in _filters(rng):
        _check(after, by_name, names, flt)


def test_config_mismatch_and_foreign_sketch(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    table = _segment(rng, 0)
    store = SkippingStore.open(tmp_path, CONFIG)
    state = store.add_sealed(_entries(tmp_path, [table]))
    other = SkippingConfig.parse({"qty": ["minmax"]})
    changed = SkippingStore.open(tmp_path, other, state)
    assert changed.needs_rebuild
    expr = bind(parse_filters([("qty", "==", -(10**6))]), SCHEMA)
    assert changed.prune(expr, ["seg0"]).all()
    with pytest.raises(ConfigError, match="rebuild"):
        changed.add_sealed(
            [StoreEntry("x", str(tmp_path / "x"), 1, SegmentSketch.of(other, table), 1)]
        )
    with pytest.raises(ConfigError, match="another skipping config"):
        store.add_sealed(
            [StoreEntry("y", str(tmp_path / "y"), 1, SegmentSketch.of(other, table), 1)]
        )
    with pytest.raises(ConfigError, match="format"):
        SkippingStore.open(tmp_path, CONFIG, {"format": 99})
    assert "needs rebuild" in changed.show()
    assert "symbol: bloom (lookup slices" in store.show()


def test_remove_rewrites_a_file_with_live_rows(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from streamwrite.skipping.xskipper import ROWS_KEY

    rng = np.random.default_rng(9)
    tables = [_segment(rng, i) for i in range(6)]
    entries = _entries(tmp_path, tables)
    store = SkippingStore.open(tmp_path, CONFIG)
    (old,) = store.add_sealed(entries)["files"]
    state = store.remove(["seg1", "seg4"])
    (new,) = state["files"]
    directory = store_directory(tmp_path)
    assert new != old and (directory / old).exists()  # the published state still names it
    store.add_sealed([])
    store.add_sealed([])  # two calls on, neither of the two newest states names it
    assert not (directory / old).exists()
    rows = pq.read_table(directory / new)
    kept = [e for e in entries if e.segment not in ("seg1", "seg4")]
    assert rows.column("obj_name").to_pylist() == [f"{e.path}#{e.mtime_ms}" for e in kept]
    meta = pq.ParquetFile(directory / new).metadata.metadata
    assert json.loads(meta[ROWS_KEY.encode()]) == [[e.segment, e.committed_size] for e in kept]
    assert {v[2] for v in state["segments"].values()} == {new}


def test_a_read_only_store_prunes_alike_and_refuses_maintenance(tmp_path: Path) -> None:
    """Readers open the published state without copying it; they cannot change the store."""
    from streamwrite.errors import StateError

    rng = np.random.default_rng(11)
    tables = [_segment(rng, i) for i in range(20)]
    store = SkippingStore.open(tmp_path, CONFIG)
    entries = _entries(tmp_path, tables)
    state = store.add_sealed(entries)
    reader = SkippingStore.open(tmp_path, CONFIG, state, read_only=True)
    names = [e.segment for e in entries]
    expr = bind(parse_filters([("qty", "==", 612)]), tables[0].schema)
    assert (reader.prune(expr, names) == store.prune(expr, names)).all()
    with pytest.raises(StateError):
        reader.add_sealed(entries[:1])
    with pytest.raises(StateError):
        reader.remove(names[:1])
    assert state == reader.state  # untouched
