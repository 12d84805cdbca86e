"""Which footer statistics and bloom filters a filtered read trusts (``reader/statistics.py``,
``reader/bloom_probe.py``): column orders, the deprecated ``min``/``max``, INT96, unsigned
integers, truncated UTF-8 bounds, missing null counts, and bloom probes at the physical width
(int8 as INT32, decimals as FIXED_LEN_BYTE_ARRAY, dates). Each case checks both that the rows
are right and what the plan skipped, on real files (footers rewritten where a writer today
would not produce the case).
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import streamwrite
from streamwrite.format import structs as t
from streamwrite.format.thrift.codec import serialize
from streamwrite.predicate import bind, to_arrow
from tests.reader.test_read_filters import same


def _sw(table: pa.Table, **options: Any) -> bytes:
    sink = io.BytesIO()
    streamwrite.write_table(table, sink, **options)
    return sink.getvalue()


def _pa(table: pa.Table, **options: Any) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, **options)
    return sink.getvalue()


def _refooter(data: bytes, mutate: Callable[[t.FileMetaData], None]) -> bytes:
    """The file with its (plaintext) footer changed by ``mutate``."""
    pf = streamwrite.ParquetFile(data)
    metadata = pf.thrift_metadata
    mutate(metadata)
    footer = serialize(metadata)
    return data[: pf.footer_offset] + footer + len(footer).to_bytes(4, "little") + b"PAR1"


def _read(data: bytes, filters: object) -> streamwrite.ReadPlan:
    """The plan; the rows are checked against the full read filtered."""
    pf = streamwrite.ParquetFile(data)
    full = pf.read()
    assert same(pf.read(filters=filters), full.filter(to_arrow(bind(filters, full.schema))))
    return pf.plan(filters)


def _skipped(plan: streamwrite.ReadPlan) -> list[str | None]:
    return [rg.skipped_by for rg in plan.row_groups]


INTS = pa.table(
    {"x": pa.array(np.arange(40, dtype=np.int64)), "s": [f"v{i:02d}" for i in range(40)]}
)


def test_without_column_orders_only_the_signed_deprecated_bounds_count() -> None:
    """No column_orders: min_value/max_value mean nothing; the deprecated min/max (signed
    comparison) still bound a signed int64 column, never a string column."""
    data = _pa(INTS, row_group_size=10)  # pyarrow writes both min/max and min_value/max_value

    def drop_orders(m: t.FileMetaData) -> None:
        m.column_orders = None

    def drop_orders_and_legacy(m: t.FileMetaData) -> None:
        m.column_orders = None
        for rg in m.row_groups or []:
            for chunk in rg.columns or []:
                assert chunk.meta_data is not None and chunk.meta_data.statistics is not None
                chunk.meta_data.statistics.min = chunk.meta_data.statistics.max = None

    assert _skipped(_read(data, [("x", ">=", 35)])) == ["statistics"] * 3 + [None]
    assert _skipped(_read(data, [("s", ">=", "v35")])) == ["statistics"] * 3 + [None]
    unordered = _refooter(data, drop_orders)
    assert _skipped(_read(unordered, [("x", ">=", 35)])) == ["statistics"] * 3 + [None]
    assert _skipped(_read(unordered, [("s", ">=", "v35")])) == [None] * 4
    bare = _refooter(data, drop_orders_and_legacy)
    assert _skipped(_read(bare, [("x", ">=", 35)])) == [None] * 4


def test_deprecated_bounds_of_unsigned_columns_are_not_used() -> None:
    table = pa.table({"u": pa.array([1, 2, 2**63 + 5, 2**64 - 1], pa.uint64())})
    data = _pa(table, row_group_size=2)

    def legacy_only(m: t.FileMetaData) -> None:
        for rg in m.row_groups or []:
            for chunk in rg.columns or []:
                assert chunk.meta_data is not None and chunk.meta_data.statistics is not None
                stats = chunk.meta_data.statistics
                stats.min, stats.max = stats.min_value, stats.max_value
                stats.min_value = stats.max_value = None

    assert _skipped(_read(data, [("u", ">", 2**63)])) == ["statistics", None]
    assert _skipped(_read(data, [("u", "<", 10)])) == [None, "statistics"]
    assert _skipped(_read(_refooter(data, legacy_only), [("u", "<", 10)])) == [None, None]


def test_int96_timestamps_never_prune() -> None:
    table = pa.table(
        {"ts": pa.array([dt.datetime(2024, 1, d) for d in range(1, 9)], pa.timestamp("ns"))}
    )
    data = _pa(table, row_group_size=4, use_deprecated_int96_timestamps=True)
    plan = _read(data, [("ts", ">=", dt.datetime(2024, 1, 6))])
    assert plan.num_row_groups_read == 2


def test_truncated_utf8_bounds() -> None:
    """A 5-byte truncation splits a 2-byte character: the min is cut to its UTF-8 prefix (still
    a lower bound), the rounded-up max is not UTF-8 and so unknown."""
    table = pa.table({"s": ["éééé", "éééé", "ééééz", "b", "c", "d"]})
    data = _sw(table, row_group_size=3, statistics_truncate_length=5)
    assert _skipped(_read(data, [("s", "<", "a")])) == ["statistics", "statistics"]
    assert _skipped(_read(data, [("s", "==", "éééé")])) == [None, "statistics"]
    assert _skipped(_read(data, [("s", ">", "ééééé")])) == [None, "statistics"]
    assert _read(data, [("s", "!=", "éééé")]).num_row_groups_read == 2


def test_missing_null_count_means_nulls_may_exist() -> None:
    table = pa.table({"x": pa.array([1, 2, 3, 4, None, 6], pa.int64())})
    data = _sw(table, row_group_size=3, write_page_index=False)
    indexed = _sw(table, row_group_size=3)

    def drop_null_counts(m: t.FileMetaData) -> None:
        for rg in m.row_groups or []:
            for chunk in rg.columns or []:
                assert chunk.meta_data is not None and chunk.meta_data.statistics is not None
                chunk.meta_data.statistics.null_count = None

    is_null = pc.field("x").is_null()
    assert _skipped(_read(data, is_null)) == ["statistics", None]
    assert _skipped(_read(_refooter(data, drop_null_counts), is_null)) == [None, None]
    # the page index still counts the nulls of each page
    assert _skipped(_read(_refooter(indexed, drop_null_counts), is_null)) == ["page_index", None]


def _needles(table: pa.Table, column: str, present: object, absent: object, **options: Any) -> None:
    """Bloom filters on ``column``: the row group of ``present`` is read, none for ``absent``,
    though both lie inside every row group's [min, max]."""
    for data in (
        _sw(table, row_group_size=4, bloom_filter_options={column: True}, **options),
        _pa(table, row_group_size=4, bloom_filter_options={column: {}}),
    ):
        hit = _read(data, [(column, "==", present)])
        assert hit.skipped("statistics") == 0
        assert hit.num_row_groups_read == 1
        miss = _read(data, [(column, "in", [absent])])
        assert miss.skipped("bloom_filter") == 3


def test_bloom_probe_int8_is_hashed_as_int32() -> None:
    table = pa.table({"x": pa.array([0, 9, 1, 3, 0, 9, 2, 4, 0, 9, 5, 6], pa.int8())})
    _needles(table, "x", 5, 7)


def test_bloom_probe_decimal_at_its_fixed_width() -> None:
    values = ["0", "99.9999", "1.5", "2.25", "0", "99.9999", "3.125", "4", "0", "99.9999"]
    values += ["5.5", "6"]
    table = pa.table({"d": pa.array([decimal.Decimal(v) for v in values], pa.decimal128(20, 4))})
    _needles(table, "d", decimal.Decimal("3.125"), decimal.Decimal("3.1251"))


def test_bloom_probe_dates_and_strings() -> None:
    days = [0, 30, 1, 2, 0, 30, 5, 6, 0, 30, 8, 9]
    table = pa.table(
        {
            "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=k) for k in days]),
            "s": [f"k{k:02d}" for k in days],
        }
    )
    _needles(table, "d", dt.date(2024, 1, 6), dt.date(2024, 1, 5))
    _needles(table, "s", "k06", "k04")
