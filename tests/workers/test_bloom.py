"""Tests for workers.bloom: XXH64 kernel, split block filter vs the spec pseudocode, interop."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from streamwrite.errors import ConfigError, FormatError, UnsupportedError
from streamwrite.format.enums import Type
from tests._vectors import PARQUET_TESTING
from tests.workers._compact import read_struct
from workers.bloom import SALT, SplitBlockBloomFilter, hash_values, optimal_num_bytes
from workers.values import BinaryValues

DATA_DIR = PARQUET_TESTING / "data"
M32 = 0xFFFFFFFF


# --- reference implementation, straight from the spec pseudocode -------------------------------


def ref_insert(bitset: bytearray, h: int) -> None:
    z = len(bitset) // 32
    i = ((h >> 32) * z) >> 32
    x = h & M32
    for k in range(8):
        bit = ((x * SALT[k]) & M32) >> 27
        word = int.from_bytes(bitset[i * 32 + 4 * k : i * 32 + 4 * k + 4], "little")
        word |= 1 << bit
        bitset[i * 32 + 4 * k : i * 32 + 4 * k + 4] = word.to_bytes(4, "little")


def ref_check(bitset: bytes, h: int) -> bool:
    z = len(bitset) // 32
    i = ((h >> 32) * z) >> 32
    x = h & M32
    for k in range(8):
        bit = ((x * SALT[k]) & M32) >> 27
        word = int.from_bytes(bitset[i * 32 + 4 * k : i * 32 + 4 * k + 4], "little")
        if not word >> bit & 1:
            return False
    return True


# --- hashing ----------------------------------------------------------------------------------

u64s = st.integers(0, 2**64 - 1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=150), max_size=300), st.sampled_from([1, 5, 30, 200]))
def test_hash_byte_array_matches_xxhash(values: list[bytes], repeat: int) -> None:
    # Repetition makes same-length groups big enough to take the vectorised path.
    values = values * repeat
    got = hash_values(BinaryValues.from_pylist(values), Type.BYTE_ARRAY)
    assert got.dtype == np.uint64
    assert got.tolist() == [xxhash.xxh64_intdigest(v) for v in values]


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 80), st.integers(0, 200), st.data())
def test_hash_fixed_len_matches_xxhash(width: int, n: int, data: st.DataObject) -> None:
    mat = data.draw(hnp.arrays(np.uint8, (n, width)))
    got = hash_values(mat, Type.FIXED_LEN_BYTE_ARRAY)
    assert got.tolist() == [xxhash.xxh64_intdigest(row.tobytes()) for row in mat]


@pytest.mark.parametrize(
    ("ptype", "dtype"),
    [
        (Type.INT32, np.int32),
        (Type.INT64, np.int64),
        (Type.FLOAT, np.float32),
        (Type.DOUBLE, np.float64),
    ],
)
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_hash_numeric_matches_xxhash(
    ptype: Type, dtype: type[np.generic], data: st.DataObject
) -> None:
    arr = data.draw(hnp.arrays(dtype, st.integers(0, 100)))
    got = hash_values(arr, ptype)
    assert got.tolist() == [
        xxhash.xxh64_intdigest(v.astype(v.dtype.newbyteorder("<")).tobytes()) for v in arr
    ]


def test_hash_int96_and_slices() -> None:
    mat = np.arange(12 * 7, dtype=np.uint8).reshape(7, 12)
    assert hash_values(mat, Type.INT96).tolist() == [
        xxhash.xxh64_intdigest(r.tobytes()) for r in mat
    ]
    values = BinaryValues.from_pylist([b"a", b"bb", b"ccc", b"dd"] * 100)[3:250]
    assert hash_values(values, Type.BYTE_ARRAY).tolist() == [
        xxhash.xxh64_intdigest(v) for v in values.to_pylist()
    ]


def test_hash_boolean_unsupported() -> None:
    with pytest.raises(UnsupportedError):
        hash_values(np.array([True]), Type.BOOLEAN)


def test_hash_wrong_form() -> None:
    with pytest.raises(ConfigError):
        hash_values(np.array([1], dtype=np.int64), Type.BYTE_ARRAY)


# --- sizing -----------------------------------------------------------------------------------


def test_optimal_num_bytes() -> None:
    assert optimal_num_bytes(0, 0.05) == 32
    assert optimal_num_bytes(1000, 0.01) == 2048  # m = 9685 bits -> 16384 bits
    assert optimal_num_bytes(1000, 0.05) == 1024
    assert optimal_num_bytes(10**12, 0.01) == 128 * 1024 * 1024
    assert optimal_num_bytes(10**9, 0.01, max_bytes=1 << 20) == 1 << 20
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ConfigError):
            optimal_num_bytes(10, bad)
    with pytest.raises(ConfigError):
        optimal_num_bytes(10, 0.1, max_bytes=100)


@given(st.integers(0, 10**8), st.floats(1e-6, 0.99))
def test_optimal_num_bytes_is_power_of_two(ndv: int, fpp: float) -> None:
    size = optimal_num_bytes(ndv, fpp)
    assert size >= 32 and size & (size - 1) == 0
    assert size * 8 >= min(-8 * ndv / np.log(1 - fpp ** (1 / 8)) - 1, 128 * 1024 * 1024 * 8)


# --- the filter vs the reference --------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(st.lists(u64s, max_size=400), st.sampled_from([32, 64, 256, 4096]))
def test_insert_matches_reference(hashes: list[int], num_bytes: int) -> None:
    bloom = SplitBlockBloomFilter(num_bytes)
    bloom.insert_hashes(np.array(hashes, dtype=np.uint64))
    ref = bytearray(num_bytes)
    for h in hashes:
        ref_insert(ref, h)
    assert bloom.bitset == bytes(ref)
    assert bloom.check_hashes(np.array(hashes, dtype=np.uint64)).all()


@settings(max_examples=50, deadline=None)
@given(st.lists(u64s, max_size=100), st.lists(u64s, max_size=100))
def test_check_matches_reference(inserted: list[int], probes: list[int]) -> None:
    bloom = SplitBlockBloomFilter(64)
    bloom.insert_hashes(np.array(inserted, dtype=np.uint64))
    expected = [ref_check(bloom.bitset, h) for h in probes]
    assert bloom.check_hashes(np.array(probes, dtype=np.uint64)).tolist() == expected
    assert [bloom.check_hash(h) for h in probes] == expected


def test_false_positive_rate_near_target() -> None:
    ndv, fpp = 20_000, 0.01
    bloom = SplitBlockBloomFilter(optimal_num_bytes(ndv, fpp))
    rng = np.random.default_rng(1)
    bloom.insert_hashes(hash_values(rng.integers(0, 2**62, ndv), Type.INT64))
    probes = hash_values(rng.integers(2**62, 2**63 - 1, 100_000), Type.INT64)
    assert bloom.check_hashes(probes).mean() < fpp


@pytest.mark.parametrize("size", [0, 16, 48, 100])
def test_bad_sizes(size: int) -> None:
    with pytest.raises(ConfigError):
        SplitBlockBloomFilter(size)
    with pytest.raises(FormatError):
        SplitBlockBloomFilter.from_bitset(bytes(size))


def test_from_bitset_round_trip() -> None:
    bloom = SplitBlockBloomFilter(128)
    bloom.insert_hashes(np.array([1, 2**63 + 5], dtype=np.uint64))
    copy = SplitBlockBloomFilter.from_bitset(memoryview(bloom.bitset))
    assert copy.bitset == bloom.bitset and copy.num_blocks == 4 and copy.num_bytes == 128


# --- interop ----------------------------------------------------------------------------------


def _read_bloom(raw: bytes, pos: int) -> bytes:
    """A BloomFilterHeader at ``pos`` followed by its bitset: return the bitset."""
    header, end = read_struct(raw, pos)
    return raw[end : end + header[1]]


def test_parquet_testing_xxhash_filter() -> None:
    raw = (DATA_DIR / "bloom_filter.xxhash.bin").read_bytes()
    bitset = _read_bloom(raw, 0)
    assert len(bitset) == 1024 and raw.endswith(bitset)
    bloom = SplitBlockBloomFilter.from_bitset(bitset)
    words = BinaryValues.from_pylist([b"hello", b"parquet", b"bloom", b"filter"])
    hashes = hash_values(words, Type.BYTE_ARRAY)
    assert all(bloom.check_hash(int(h)) for h in hashes)
    absent = hash_values(BinaryValues.from_pylist([b"nope", b"absent", b"Hello"]), Type.BYTE_ARRAY)
    assert not bloom.check_hashes(absent).any()
    ours = SplitBlockBloomFilter(len(bitset))
    ours.insert_hashes(hashes)
    assert ours.bitset == bitset


def test_pyarrow_written_filters(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    ints = rng.integers(-(2**63), 2**63 - 1, 5000, dtype=np.int64)
    strings = [f"value-{i}-{'x' * (i % 37)}" for i in rng.integers(0, 10**9, 5000)]
    table = pa.table({"i": ints, "s": strings})
    path = tmp_path / "bloom.parquet"
    pq.write_table(table, path, bloom_filter_options={"i": {"ndv": 5000, "fpp": 0.01}, "s": True})
    raw = path.read_bytes()
    rg = pq.ParquetFile(path).metadata.row_group(0)
    columns: list[tuple[np.ndarray | BinaryValues, Type, int, float]] = [
        (ints, Type.INT64, 5000, 0.01),
        (BinaryValues.from_pylist([s.encode() for s in strings]), Type.BYTE_ARRAY, 5000, 0.05),
    ]
    for j, (values, ptype, ndv, fpp) in enumerate(columns):
        col = rg.column(j)
        bitset = _read_bloom(raw, col.bloom_filter_offset)
        # pyarrow sizes by min(ndv, rows in the row group); the default ndv is 1048576.
        assert len(bitset) == optimal_num_bytes(ndv, fpp)
        hashes = hash_values(values, ptype)
        assert SplitBlockBloomFilter.from_bitset(bitset).check_hashes(hashes).all()
        ours = SplitBlockBloomFilter(len(bitset))
        ours.insert_hashes(hashes)
        assert ours.bitset == bitset
