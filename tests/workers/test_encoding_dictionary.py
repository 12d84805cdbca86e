from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwrite.errors import ConfigError, FormatError
from streamwrite.format.enums import Type
from streamwrite.testing.strategies import physical_values
from tests.workers._encoding_helpers import assert_rejects_or_decodes, pyarrow_file
from workers.encoding.dictionary import (
    decode_dictionary_indices,
    decode_dictionary_indices_reference,
    dictionary_encode,
    dictionary_encode_reference,
    dictionary_lookup,
    encode_dictionary_indices,
    encode_dictionary_indices_reference,
)
from workers.encoding.plain import encode_plain
from workers.values import BinaryValues


def test_floats_by_bit_pattern() -> None:
    values = np.array([1.0, np.nan, -0.0, 0.0, np.nan, 1.0, -np.nan, -0.0])
    dictionary, indices = dictionary_encode(values, Type.DOUBLE)
    assert isinstance(dictionary, np.ndarray)
    assert dictionary.shape == (4,) and np.isnan(dictionary[1])
    assert np.signbit(dictionary[2]) and not np.signbit(dictionary[3])
    assert indices.dtype == np.int32 and indices.tolist() == [0, 1, 2, 3, 1, 0, 1, 2]


def test_first_occurrence_order_and_lookup() -> None:
    values = BinaryValues.from_pylist([b"z", b"a", b"", b"z", b"", b"q"])[1:]
    dictionary, indices = dictionary_encode(values, Type.BYTE_ARRAY)
    assert isinstance(dictionary, BinaryValues)
    assert dictionary.to_pylist() == [b"a", b"", b"z", b"q"] and indices.tolist() == [0, 1, 2, 1, 3]
    back = dictionary_lookup(dictionary, indices)
    assert isinstance(back, BinaryValues) and back.to_pylist() == values.to_pylist()
    with pytest.raises(FormatError):
        dictionary_lookup(dictionary, np.array([4], dtype=np.int32))
    with pytest.raises(FormatError):
        dictionary_lookup(np.arange(3), np.array([-1], dtype=np.int32))
    with pytest.raises(ConfigError):
        dictionary_encode(np.array([True]), Type.BOOLEAN)


def test_fixed_len_and_int96() -> None:
    rows = np.array([[1, 2], [3, 4], [1, 2], [0, 0]], dtype=np.uint8)
    dictionary, indices = dictionary_encode(rows, Type.FIXED_LEN_BYTE_ARRAY)
    assert isinstance(dictionary, np.ndarray)
    assert dictionary.tolist() == [[1, 2], [3, 4], [0, 0]] and indices.tolist() == [0, 1, 0, 2]
    stamps = np.zeros((3, 12), dtype=np.uint8)
    stamps[1, 5] = 9
    dictionary, indices = dictionary_encode(stamps, Type.INT96)
    assert dictionary.shape == (2, 12) and indices.tolist() == [0, 1, 0]


def test_indices_bit_width() -> None:
    assert encode_dictionary_indices(np.zeros(5, dtype=np.int32), 1) == bytes([0, 10])
    encoded = encode_dictionary_indices(np.array([0, 1, 2, 3, 4], dtype=np.int32), 5)
    assert encoded[0] == 3
    with pytest.raises(ConfigError):
        encode_dictionary_indices(np.array([5], dtype=np.int32), 5)
    with pytest.raises(FormatError):
        decode_dictionary_indices(bytes([33, 2, 0]), 1)


NUMERIC = [
    (Type.INT32, np.int32, physical_values(Type.INT32)),
    (Type.INT64, np.int64, physical_values(Type.INT64)),
    (Type.FLOAT, np.float32, physical_values(Type.FLOAT)),
    (Type.DOUBLE, np.float64, physical_values(Type.DOUBLE)),
]


@pytest.mark.parametrize(("physical_type", "dtype", "strategy"), NUMERIC)
def test_numeric_matches_reference(
    physical_type: Type, dtype: type, strategy: st.SearchStrategy[object]
) -> None:
    @settings(max_examples=100, deadline=None)
    @given(st.lists(strategy, max_size=200) | st.lists(strategy, max_size=4).map(lambda v: v * 30))
    def check(values: list[object]) -> None:
        array = np.array(values, dtype=dtype)
        canonical = array.copy()
        if array.dtype.kind == "f" and np.isnan(array).any():
            canonical[np.isnan(array)] = array[np.isnan(array)][0]
        keys = [canonical[i : i + 1].tobytes() for i in range(len(values))]
        ref_dict, ref_idx = dictionary_encode_reference(keys)
        dictionary, indices = dictionary_encode(array, physical_type)
        assert isinstance(dictionary, np.ndarray) and dictionary.dtype == array.dtype
        assert dictionary.tobytes() == b"".join(ref_dict) and indices.tolist() == ref_idx
        encoded = encode_dictionary_indices(indices, len(dictionary))
        assert encoded == encode_dictionary_indices_reference(ref_idx, len(ref_dict))
        decoded, used = decode_dictionary_indices(encoded + b"\x00", len(values))
        assert decoded.tolist() == ref_idx and used == len(encoded)
        assert decode_dictionary_indices_reference(encoded, len(values)) == (ref_idx, used)
        back = dictionary_lookup(dictionary, decoded)
        assert isinstance(back, np.ndarray) and back.tobytes() == canonical.tobytes()

    check()


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.binary(max_size=8) | st.sampled_from([b"", b"a"]), max_size=200),
    st.integers(0, 999),
)
def test_byte_array_matches_reference(values: list[bytes], seed: int) -> None:
    dictionary, indices = dictionary_encode(BinaryValues.from_pylist(values), Type.BYTE_ARRAY)
    assert isinstance(dictionary, BinaryValues)
    assert (dictionary.to_pylist(), indices.tolist()) == dictionary_encode_reference(values)
    encoded = encode_dictionary_indices(indices, len(dictionary))
    assert_rejects_or_decodes(encoded, lambda b: decode_dictionary_indices(b, len(values)), seed)
    back = dictionary_lookup(dictionary, indices)
    assert isinstance(back, BinaryValues) and back.to_pylist() == values


def test_byte_array_lookup_one_length_and_mixed() -> None:
    # One length (rows of a matrix), mixed lengths (Arrow take), all empty, on sliced buffers.
    for words in ([b"SYM001", b"SYM002", b"SYM003"], [b"a", b"bcd", b""], [b"", b"", b""]):
        dictionary = BinaryValues.from_pylist([b"skipped", *words])[1:]
        indices = np.array([2, 0, 0, 1, 2, 1], dtype=np.int32)
        back = dictionary_lookup(dictionary, indices)
        assert isinstance(back, BinaryValues)
        assert back.to_pylist() == [words[i] for i in indices.tolist()]
        empty = dictionary_lookup(dictionary, np.zeros(0, dtype=np.int32))
        assert isinstance(empty, BinaryValues) and empty.to_pylist() == []


def test_matches_pyarrow() -> None:
    rng = np.random.default_rng(3)
    ints = rng.integers(-50, 50, size=20000) * 1_000_003
    ints[5000:7000] = 12
    raw = pyarrow_file(pa.array(ints), None, dictionary=True)
    dictionary, indices = dictionary_encode(ints, Type.INT64)
    assert encode_plain(dictionary, Type.INT64) in raw
    assert encode_dictionary_indices(indices, len(dictionary)) in raw
    words = [b"w%d" % (i % 37) for i in rng.integers(0, 1000, size=5000)]
    raw = pyarrow_file(pa.array(words, pa.binary()), None, dictionary=True)
    dictionary, indices = dictionary_encode(BinaryValues.from_pylist(words), Type.BYTE_ARRAY)
    assert encode_plain(dictionary, Type.BYTE_ARRAY) in raw
    assert encode_dictionary_indices(indices, len(dictionary)) in raw


@pytest.mark.parametrize(
    ("dtype", "base", "span", "n"),
    [
        (np.int64, 0, 1000, 50_000),
        (np.int64, -(2**63), 300, 20_000),
        (np.int64, 2**63 - 5000, 5000, 30_000),
        (np.int32, -(2**31), 7, 10_000),
        (np.int32, 2**31 - 70_000, 70_000, 20_000),
        (np.int64, 10, 3, 5),
    ],
)
def test_small_range_integers_match_reference(dtype: type, base: int, span: int, n: int) -> None:
    # Integers spanning a small range take the direct-address path: check first-occurrence
    # order, including keys first seen late (the early-stopping scan must grow to reach them).
    rng = np.random.default_rng(span)
    offsets = rng.integers(0, span // 2 + 1, size=n)
    offsets[-1] = span - 1  # first seen at the very end
    offsets[n // 2] = span - 2 if span > 1 else 0
    values: np.ndarray = (np.array(offsets, dtype=np.int64) + base).astype(dtype)
    physical_type = Type.INT32 if dtype == np.int32 else Type.INT64
    dictionary, indices = dictionary_encode(values, physical_type)
    keys = [values[i : i + 1].tobytes() for i in range(n)]
    ref_dict, ref_idx = dictionary_encode_reference(keys)
    assert isinstance(dictionary, np.ndarray) and dictionary.dtype == values.dtype
    assert dictionary.tobytes() == b"".join(ref_dict)
    assert indices.dtype == np.int32 and indices.tolist() == ref_idx
