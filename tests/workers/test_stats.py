"""Tests for workers.stats: numpy min/max vs a sorted() reference, truncation, pyarrow interop."""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from streamwrite.errors import ConfigError
from streamwrite.format.enums import BoundaryOrder, Type
from streamwrite.testing.strategies import FLOAT_SPECIALS
from workers.stats import SortOrder, ValueStats, boundary_order, compute_stats, decode_stat
from workers.values import BinaryValues

# --- reference: decode every value to Python, sorted() with a key per order --------------------


def plain_values(values: Any, ptype: Type) -> list[bytes]:
    if isinstance(values, BinaryValues):
        return values.to_pylist()
    if ptype == Type.BOOLEAN:
        return [bytes([int(v)]) for v in values]
    if ptype == Type.FIXED_LEN_BYTE_ARRAY:
        return [row.tobytes() for row in values]
    dtype = {Type.INT32: "<i4", Type.INT64: "<i8", Type.FLOAT: "<f4", Type.DOUBLE: "<f8"}[ptype]
    return [v.tobytes() for v in np.asarray(values).astype(dtype)]


def reference(values: Any, ptype: Type, order: SortOrder) -> ValueStats:
    plain = plain_values(values, ptype)
    if order in (SortOrder.FLOAT, SortOrder.FLOAT16):
        plain = [p for p in plain if not math.isnan(decode_stat(p, order, ptype))]
    if order == SortOrder.UNDEFINED or not plain:
        return ValueStats(None, None, False, False)
    ordered = sorted(plain, key=lambda p: decode_stat(p, order, ptype))
    lo, hi = ordered[0], ordered[-1]
    if order in (SortOrder.FLOAT, SortOrder.FLOAT16):
        fmt = {Type.FLOAT: "<f", Type.DOUBLE: "<d"}.get(ptype, "<e")
        if decode_stat(lo, order, ptype) == 0:
            lo = struct.pack(fmt, -0.0)
        if decode_stat(hi, order, ptype) == 0:
            hi = struct.pack(fmt, 0.0)
    return ValueStats(lo, hi, True, True)


def assert_same(got: ValueStats, want: ValueStats, order: SortOrder, ptype: Type) -> None:
    if order == SortOrder.SIGNED_BYTES and want.min_value is not None:
        # Several encodings of one number may exist; compare the numbers.
        assert got.min_value is not None and got.max_value is not None
        assert want.max_value is not None
        assert decode_stat(got.min_value, order, ptype) == decode_stat(want.min_value, order, ptype)
        assert decode_stat(got.max_value, order, ptype) == decode_stat(want.max_value, order, ptype)
        return
    assert got == want


special_floats = st.sampled_from(FLOAT_SPECIALS)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize(
    ("ptype", "order", "dtype"),
    [
        (Type.INT32, SortOrder.SIGNED, np.int32),
        (Type.INT64, SortOrder.SIGNED, np.int64),
        (Type.INT32, SortOrder.UNSIGNED, np.int32),
        (Type.INT64, SortOrder.UNSIGNED, np.int64),
        (Type.FLOAT, SortOrder.FLOAT, np.float32),
        (Type.DOUBLE, SortOrder.FLOAT, np.float64),
        (Type.BOOLEAN, SortOrder.BOOLEAN, np.bool_),
        (Type.INT64, SortOrder.UNDEFINED, np.int64),
    ],
)
def test_numeric_matches_reference(
    ptype: Type, order: SortOrder, dtype: type[np.generic], data: st.DataObject
) -> None:
    elements: st.SearchStrategy[Any] | None = None
    if dtype in (np.float32, np.float64):
        elements = st.one_of(special_floats, st.floats(width=32 if dtype == np.float32 else 64))
    arr = data.draw(hnp.arrays(dtype, st.integers(0, 60), elements=elements))
    assert_same(compute_stats(arr, ptype, order), reference(arr, ptype, order), order, ptype)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_unsigned_extremes(dtype: type[np.signedinteger[Any]]) -> None:
    info = np.iinfo(dtype)
    arr = np.array([info.min, -1, 0, 1, info.max], dtype=dtype)  # -1 is the largest unsigned
    ptype = Type.INT32 if dtype == np.int32 else Type.INT64
    got = compute_stats(arr, ptype, SortOrder.UNSIGNED)
    assert decode_stat(got.min_value or b"", SortOrder.UNSIGNED, ptype) == 0
    assert got.max_value == b"\xff" * arr.itemsize
    signed = compute_stats(arr, ptype, SortOrder.SIGNED)
    assert signed.min_value == arr[:1].tobytes() and signed.max_value == arr[-1:].tobytes()


def test_float_rules() -> None:
    nan = math.nan
    assert compute_stats(np.array([nan, nan]), Type.DOUBLE, SortOrder.FLOAT).min_value is None
    got = compute_stats(np.array([nan, 0.0, 1.0, nan]), Type.DOUBLE, SortOrder.FLOAT)
    assert got.min_value == struct.pack("<d", -0.0) and got.max_value == struct.pack("<d", 1.0)
    got = compute_stats(np.array([-0.0, -3.0], dtype=np.float32), Type.FLOAT, SortOrder.FLOAT)
    assert got.max_value == struct.pack("<f", 0.0)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(special_floats, st.floats(width=16)), max_size=40))
def test_float16_matches_reference(floats: list[float]) -> None:
    mat = np.array(floats, dtype="<f2").view(np.uint8).reshape(-1, 2)
    ptype, order = Type.FIXED_LEN_BYTE_ARRAY, SortOrder.FLOAT16
    assert compute_stats(mat, ptype, order) == reference(mat, ptype, order)


binaries = st.lists(
    st.binary(max_size=12) | st.sampled_from([b"", b"\x00", b"\xff", b"\xff\xff", b"ab", b"abc"]),
    max_size=50,
)


@settings(max_examples=200, deadline=None)
@given(binaries, st.sampled_from([SortOrder.UNSIGNED_BYTES, SortOrder.SIGNED_BYTES]))
def test_byte_array_matches_reference(values: list[bytes], order: SortOrder) -> None:
    bv = BinaryValues.from_pylist(values)
    ptype = Type.BYTE_ARRAY
    assert_same(compute_stats(bv, ptype, order), reference(bv, ptype, order), order, ptype)
    if len(values) > 2:  # a slice with a non-zero first offset
        sub = bv[1:]
        assert_same(compute_stats(sub, ptype, order), reference(sub, ptype, order), order, ptype)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 24), st.data())
def test_byte_array_of_one_length_matches_reference(width: int, data: st.DataObject) -> None:
    # Values of one length take the numpy path (rows of big-endian words), others Arrow's.
    byte = st.sampled_from([0, 1, 0x7F, 0x80, 0xFF]) | st.integers(0, 255)
    rows = data.draw(st.lists(st.lists(byte, min_size=width, max_size=width), max_size=40))
    values = [bytes(row) for row in rows]
    bv = BinaryValues.from_pylist(values)
    order, ptype = SortOrder.UNSIGNED_BYTES, Type.BYTE_ARRAY
    assert_same(compute_stats(bv, ptype, order), reference(bv, ptype, order), order, ptype)
    if len(values) > 2:  # a slice with a non-zero first offset
        sub = bv[1:]
        assert_same(compute_stats(sub, ptype, order), reference(sub, ptype, order), order, ptype)
    truncated = compute_stats(bv, ptype, order, max_size=5)
    whole = reference(bv, ptype, order)
    if whole.min_value is not None and whole.max_value is not None:
        assert truncated.min_value == whole.min_value[:5]
        assert truncated.is_min_value_exact == (width <= 5)


@pytest.mark.parametrize("width", [8, 16, 24])
def test_byte_array_of_one_length_ties_on_the_first_word(width: int) -> None:
    prefix = b"\x80" * 8
    tails = [b"\x05", b"\x01", b"\xff", b"\x01", b"\x00"]
    values = [prefix + tail * (width - 8) for tail in tails] + [b"\x7f" * width]
    if width == 8:
        values = [b"\x80" * 8, b"\x80" * 8, b"\x7f" * 8]
    bv = BinaryValues.from_pylist(values)
    order, ptype = SortOrder.UNSIGNED_BYTES, Type.BYTE_ARRAY
    assert compute_stats(bv, ptype, order) == reference(bv, ptype, order)
    assert compute_stats(bv[:-1], ptype, order) == reference(bv[:-1], ptype, order)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 20), st.data(), st.sampled_from(list(SortOrder)[4:6]))
def test_fixed_len_matches_reference(width: int, data: st.DataObject, order: SortOrder) -> None:
    elements = st.sampled_from([0, 1, 0x7F, 0x80, 0xFF]) | st.integers(0, 255)
    mat = data.draw(hnp.arrays(np.uint8, (data.draw(st.integers(0, 40)), width), elements=elements))
    ptype = Type.FIXED_LEN_BYTE_ARRAY
    assert_same(compute_stats(mat, ptype, order), reference(mat, ptype, order), order, ptype)


def test_signed_bytes_sign_extension() -> None:
    values = [b"\xff", b"\x00\x05", b"\x80\x00", b"\x7f", b"", b"\xfe\xff\xff"]
    got = compute_stats(BinaryValues.from_pylist(values), Type.BYTE_ARRAY, SortOrder.SIGNED_BYTES)
    assert got.min_value == b"\xfe\xff\xff" and got.max_value == b"\x7f"  # -65537, 127


def test_all_null_and_prefixes() -> None:
    empty = BinaryValues.from_pylist([])
    assert compute_stats(empty, Type.BYTE_ARRAY, SortOrder.UNSIGNED_BYTES).min_value is None
    got = compute_stats(
        BinaryValues.from_pylist([b"abc", b"ab", b"", b"abd"]),
        Type.BYTE_ARRAY,
        SortOrder.UNSIGNED_BYTES,
    )
    assert got == ValueStats(b"", b"abd", True, True)
    got = compute_stats(
        BinaryValues.from_pylist([b"", b""]), Type.BYTE_ARRAY, SortOrder.UNSIGNED_BYTES
    )
    assert got == ValueStats(b"", b"", True, True)


@pytest.mark.parametrize(
    ("values", "max_size", "expected"),
    [
        ([b"abcdef", b"abzzzz"], 3, ValueStats(b"abc", b"ab{", False, False)),
        ([b"abcdef", b"ab\xff\xffzz"], 4, ValueStats(b"abcd", b"ac", False, False)),
        ([b"a", b"\xff\xff\xff\xff"], 2, ValueStats(b"a", b"\xff\xff\xff\xff", True, True)),
        ([b"abc", b"abd"], 3, ValueStats(b"abc", b"abd", True, True)),
        ([b"abcd", b"b"], 3, ValueStats(b"abc", b"b", False, True)),
    ],
)
def test_truncation(values: list[bytes], max_size: int, expected: ValueStats) -> None:
    got = compute_stats(
        BinaryValues.from_pylist(values),
        Type.BYTE_ARRAY,
        SortOrder.UNSIGNED_BYTES,
        max_size=max_size,
    )
    assert got == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=10), min_size=1, max_size=30), st.integers(1, 6))
def test_truncated_bounds_still_bound(values: list[bytes], max_size: int) -> None:
    got = compute_stats(
        BinaryValues.from_pylist(values),
        Type.BYTE_ARRAY,
        SortOrder.UNSIGNED_BYTES,
        max_size=max_size,
    )
    assert got.min_value is not None and got.max_value is not None
    assert all(got.min_value <= v <= got.max_value for v in values)
    assert len(got.min_value) <= max_size
    assert len(got.max_value) <= max_size or (
        got.is_max_value_exact and got.max_value == max(values)
    )


def test_config_errors() -> None:
    with pytest.raises(ConfigError):
        compute_stats(np.array([1]), Type.INT64, SortOrder.FLOAT)
    with pytest.raises(ConfigError):
        compute_stats(np.array([1]), Type.BYTE_ARRAY, SortOrder.UNSIGNED_BYTES)
    with pytest.raises(ConfigError):
        compute_stats(
            BinaryValues.from_pylist([b"a"]), Type.BYTE_ARRAY, SortOrder.UNSIGNED_BYTES, max_size=0
        )


def test_boundary_order() -> None:
    i64 = [struct.pack("<q", v) for v in (-5, 1, 1, 7)]
    assert boundary_order(i64, i64, SortOrder.SIGNED, Type.INT64) == BoundaryOrder.ASCENDING
    assert (
        boundary_order(i64[::-1], i64[::-1], SortOrder.SIGNED, Type.INT64)
        == BoundaryOrder.DESCENDING
    )
    # -5 as unsigned is huge: not ascending any more.
    assert boundary_order(i64, i64, SortOrder.UNSIGNED, Type.INT64) == BoundaryOrder.UNORDERED
    with_nulls = [i64[0], None, i64[3]]
    assert (
        boundary_order(with_nulls, with_nulls, SortOrder.SIGNED, Type.INT64)
        == BoundaryOrder.ASCENDING
    )
    assert boundary_order([None], [None], SortOrder.SIGNED, Type.INT64) == BoundaryOrder.UNORDERED
    s = [b"a", b"ab", b"b"]
    assert (
        boundary_order(s, s, SortOrder.UNSIGNED_BYTES, Type.BYTE_ARRAY) == BoundaryOrder.ASCENDING
    )
    assert (
        boundary_order(s, [b"z", b"c", b"d"], SortOrder.UNSIGNED_BYTES, Type.BYTE_ARRAY)
        == BoundaryOrder.UNORDERED
    )
    d = [b"\x80", b"\xff", b"\x00\x01"]
    assert boundary_order(d, d, SortOrder.SIGNED_BYTES, Type.BYTE_ARRAY) == BoundaryOrder.ASCENDING
    f = [struct.pack("<d", v) for v in (-0.0, 0.0, 2.5)]
    assert boundary_order(f, f, SortOrder.FLOAT, Type.DOUBLE) == BoundaryOrder.ASCENDING
    assert (
        boundary_order([b"\x01"], [b"\x01"], SortOrder.BOOLEAN, Type.BOOLEAN)
        == BoundaryOrder.ASCENDING
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(-100, 100), st.integers(0, 50)), max_size=8))
def test_boundary_order_reference(pages: list[tuple[int, int]]) -> None:
    mins = [struct.pack("<i", a) for a, _ in pages]
    maxs = [struct.pack("<i", a + w) for a, w in pages]
    lo = [a for a, _ in pages]
    hi = [a + w for a, w in pages]
    got = boundary_order(mins, maxs, SortOrder.SIGNED, Type.INT32)
    if not pages:
        assert got == BoundaryOrder.UNORDERED
    elif lo == sorted(lo) and hi == sorted(hi):
        assert got == BoundaryOrder.ASCENDING
    elif lo == sorted(lo, reverse=True) and hi == sorted(hi, reverse=True):
        assert got == BoundaryOrder.DESCENDING
    else:
        assert got == BoundaryOrder.UNORDERED


# --- pyarrow interop --------------------------------------------------------------------------


def encode_raw(value: Any, ptype: Type) -> bytes:
    """PLAIN bytes of a pyarrow ``Statistics.min_raw``/``max_raw`` (physical) value."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, float):
        return struct.pack("<f" if ptype == Type.FLOAT else "<d", value)
    size = 4 if ptype == Type.INT32 else 8
    return (int(value) % (1 << (8 * size))).to_bytes(size, "little")


def test_matches_pyarrow_statistics(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    i64 = rng.integers(-(2**63), 2**63 - 1, 1000, dtype=np.int64)
    u32 = rng.integers(0, 2**32, 1000, dtype=np.uint64).astype(np.uint32)
    u64 = np.array([0, 2**63, 2**64 - 1, 5], dtype=np.uint64)
    f64 = rng.normal(size=1000)
    f64[::7] = np.nan
    f64_zero = np.array([np.nan, 0.0, 3.5, -0.0, np.nan])
    f64_neg_zero_max = np.array([-1.0, -0.0, np.nan])
    strings = [f"s{v}" for v in rng.integers(0, 10**6, 1000)] + ["", "é", "\U0001f600"]
    table = pa.table(
        {
            "i64": pa.array(i64),
            "u32": pa.array(u32, pa.uint32()),
            "u64": pa.array(np.resize(u64, 1000), pa.uint64()),
            "f64": pa.array(f64),
            "f64_zero": pa.array(np.resize(f64_zero, 1000)),
            "f64_neg_zero_max": pa.array(np.resize(f64_neg_zero_max, 1000)),
            "s": pa.array(np.resize(np.array(strings, dtype=object), 1000).tolist(), pa.string()),
        }
    )
    path = tmp_path / "stats.parquet"
    pq.write_table(table, path, use_dictionary=False)
    rg = pq.ParquetFile(path).metadata.row_group(0)
    cases: list[tuple[Any, Type, SortOrder]] = [
        (i64, Type.INT64, SortOrder.SIGNED),
        (u32.view(np.int32), Type.INT32, SortOrder.UNSIGNED),
        (np.resize(u64, 1000).view(np.int64), Type.INT64, SortOrder.UNSIGNED),
        (f64, Type.DOUBLE, SortOrder.FLOAT),
        (np.resize(f64_zero, 1000), Type.DOUBLE, SortOrder.FLOAT),
        (np.resize(f64_neg_zero_max, 1000), Type.DOUBLE, SortOrder.FLOAT),
        (
            BinaryValues.from_pylist([s.encode() for s in table.column("s").to_pylist()]),
            Type.BYTE_ARRAY,
            SortOrder.UNSIGNED_BYTES,
        ),
    ]
    for j, (values, ptype, order) in enumerate(cases):
        stats = rg.column(j).statistics
        assert stats.has_min_max
        got = compute_stats(values, ptype, order)
        raw = (encode_raw(stats.min_raw, ptype), encode_raw(stats.max_raw, ptype))
        assert (got.min_value, got.max_value) == raw, table.column_names[j]
