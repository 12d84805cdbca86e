from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwrite.errors import FormatError, LimitError
from streamwrite.testing.strategies import byte_array_lists, int_lists
from tests.workers._encoding_helpers import assert_rejects_or_decodes, pyarrow_file
from workers.encoding._varint import read_uleb128
from workers.encoding.delta_binary_packed import (
    decode_delta_binary_packed,
    decode_delta_binary_packed_reference,
    encode_delta_binary_packed,
    encode_delta_binary_packed_reference,
)
from workers.encoding.delta_byte_array import (
    decode_delta_byte_array,
    decode_delta_byte_array_reference,
    encode_delta_byte_array,
    encode_delta_byte_array_reference,
)
from workers.encoding.delta_length_byte_array import (
    decode_delta_length_byte_array,
    decode_delta_length_byte_array_reference,
    encode_delta_length_byte_array,
    encode_delta_length_byte_array_reference,
)
from workers.values import BinaryValues


def test_spec_delta_example_1() -> None:
    # header: block size 8, 1 miniblock, 5 values, first value 1; block: min delta 1, width 0.
    expected = bytes([8, 1, 5, 2, 2, 0])
    assert encode_delta_binary_packed(np.array([1, 2, 3, 4, 5]), 8, 1) == expected
    values, used = decode_delta_binary_packed(expected, np.int64, 5)
    assert values.tolist() == [1, 2, 3, 4, 5] and used == 6


def test_spec_delta_example_2() -> None:
    # header: 8, 1, 8 values, first 7 (zigzag 14); block: min -2 (zigzag 3), width 2,
    # then 0,0,0,3,3,3,3 (+ one padding 0) on 2 bits LSB first: 0b11000000 0b00111111.
    expected = bytes([8, 1, 8, 14, 3, 2, 0b11000000, 0b00111111])
    assert encode_delta_binary_packed(np.array([7, 5, 3, 1, 2, 3, 4, 5]), 8, 1) == expected
    values, used = decode_delta_binary_packed(expected, np.int64, 8)
    assert values.tolist() == [7, 5, 3, 1, 2, 3, 4, 5] and used == 8


def test_spec_delta_length_example() -> None:
    values = BinaryValues.from_pylist([b"Hello", b"World", b"Foobar", b"ABCDEF"])
    lengths = encode_delta_binary_packed(np.array([5, 5, 6, 6], dtype=np.int32))
    encoded = encode_delta_length_byte_array(values)
    assert encoded == lengths + b"HelloWorldFoobarABCDEF"
    decoded, used = decode_delta_length_byte_array(encoded, 4)
    assert decoded.to_pylist() == values.to_pylist() and used == len(encoded)


def test_spec_delta_strings_example() -> None:
    words = [b"axis", b"axle", b"babble", b"babyhood"]
    prefixes = encode_delta_binary_packed(np.array([0, 2, 0, 3], dtype=np.int32))
    suffix_lengths = encode_delta_binary_packed(np.array([4, 2, 6, 5], dtype=np.int32))
    expected = prefixes + suffix_lengths + b"axislebabbleyhood"
    assert encode_delta_byte_array(BinaryValues.from_pylist(words)) == expected
    decoded, used = decode_delta_byte_array(expected, 4)
    assert isinstance(decoded, BinaryValues)
    assert decoded.to_pylist() == words and used == len(expected)


def test_fixed_len_delta_strings() -> None:
    rows = np.array([[1, 2, 3], [1, 2, 4], [1, 2, 4], [9, 9, 9]], dtype=np.uint8)
    encoded = encode_delta_byte_array(rows)
    decoded, _ = decode_delta_byte_array(encoded, 4, 3)
    assert isinstance(decoded, np.ndarray) and np.array_equal(decoded, rows)
    with pytest.raises(FormatError):
        decode_delta_byte_array(encoded, 4, 2)


def test_count_must_match() -> None:
    encoded = encode_delta_binary_packed(np.arange(10, dtype=np.int32))
    with pytest.raises(FormatError):
        decode_delta_binary_packed(encoded, np.int32, 11)


@pytest.mark.parametrize("bits", [32, 64])
def test_delta_binary_packed_round_trip(bits: int) -> None:
    dtype = np.int32 if bits == 32 else np.int64

    @settings(max_examples=150, deadline=None)
    @given(int_lists(bits), st.sampled_from([(128, 4), (256, 4), (128, 1), (8, 1), (64, 2)]))
    def check(values: list[int], shape: tuple[int, int]) -> None:
        array = np.array(values, dtype=dtype)
        encoded = encode_delta_binary_packed(array, *shape)
        assert encoded == encode_delta_binary_packed_reference(values, bits, *shape)
        decoded, used = decode_delta_binary_packed(encoded + b"\x07", dtype, len(values))
        assert decoded.dtype == dtype and decoded.tolist() == values and used == len(encoded)
        assert decode_delta_binary_packed_reference(encoded, bits) == (values, used)
        trusted, _ = decode_delta_binary_packed(encoded, dtype)
        assert trusted.tolist() == values

    check()


@settings(max_examples=60, deadline=None)
@given(int_lists(64), st.integers(0, 1000))
def test_delta_binary_packed_malformed(values: list[int], seed: int) -> None:
    encoded = encode_delta_binary_packed(np.array(values, dtype=np.int64))
    assert_rejects_or_decodes(
        encoded, lambda b: decode_delta_binary_packed(b, np.int64, len(values)), seed
    )
    assert_rejects_or_decodes(encoded, lambda b: decode_delta_binary_packed(b, np.int32), seed)


BLOBS = byte_array_lists()


@settings(max_examples=250, deadline=None)
@given(BLOBS)
def test_byte_array_encodings_round_trip(values: list[bytes]) -> None:
    binary = BinaryValues.from_pylist(values)
    dlba = encode_delta_length_byte_array(binary)
    assert dlba == encode_delta_length_byte_array_reference(values)
    decoded, used = decode_delta_length_byte_array(dlba + b"!", len(values))
    assert decoded.to_pylist() == values and used == len(dlba)
    assert decode_delta_length_byte_array_reference(dlba) == (values, used)
    dba = encode_delta_byte_array(binary)
    assert dba == encode_delta_byte_array_reference(values)
    strings, used = decode_delta_byte_array(dba + b"!", len(values))
    assert isinstance(strings, BinaryValues)
    assert strings.to_pylist() == values and used == len(dba)
    assert decode_delta_byte_array_reference(dba) == (values, used)
    if len(values) > 1:
        sliced = encode_delta_byte_array(binary[1:])
        assert sliced == encode_delta_byte_array_reference(values[1:])


@settings(max_examples=60, deadline=None)
@given(BLOBS, st.integers(0, 1000))
def test_byte_array_encodings_malformed(values: list[bytes], seed: int) -> None:
    binary = BinaryValues.from_pylist(values)
    n = len(values)
    assert_rejects_or_decodes(
        encode_delta_length_byte_array(binary), lambda b: decode_delta_length_byte_array(b, n), seed
    )
    assert_rejects_or_decodes(
        encode_delta_byte_array(binary),
        lambda b: decode_delta_byte_array(b, n),
        seed,
        errors=(LimitError,),
    )


def test_long_prefix_chain() -> None:
    values = [b"p" * 50 + bytes([i % 7]) for i in range(5000)]
    encoded = encode_delta_byte_array(BinaryValues.from_pylist(values))
    decoded, _ = decode_delta_byte_array(encoded, len(values))
    assert isinstance(decoded, BinaryValues) and decoded.to_pylist() == values


@pytest.mark.parametrize("n", [1, 2, 129, 1000, 20000])
def test_delta_binary_packed_matches_pyarrow(n: int) -> None:
    rng = np.random.default_rng(n)
    for dtype, block in ((np.int64, 256), (np.int32, 128)):
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, size=n, dtype=dtype)
        for column in (values, np.sort(values), np.cumsum(rng.integers(0, 9, n)).astype(dtype)):
            raw = pyarrow_file(pa.array(column), "DELTA_BINARY_PACKED")
            # parquet-cpp uses 128-value blocks for INT32 and 256-value blocks for INT64.
            assert encode_delta_binary_packed(column, block, 4) in raw
            assert encode_delta_binary_packed(column) in raw  # the default block is pyarrow's


def test_byte_array_encodings_match_pyarrow() -> None:
    rng = np.random.default_rng(7)
    words = sorted(
        bytes(rng.integers(97, 100, size=int(rng.integers(0, 12))).astype(np.uint8))
        for _ in range(3000)
    )
    binary = BinaryValues.from_pylist(words)
    array = pa.array(words, pa.binary())
    assert encode_delta_length_byte_array(binary) in pyarrow_file(array, "DELTA_LENGTH_BYTE_ARRAY")
    assert encode_delta_byte_array(binary) in pyarrow_file(array, "DELTA_BYTE_ARRAY")
    fixed = rng.integers(0, 3, size=(2000, 4), dtype=np.uint8)
    fixed_array = pa.array([bytes(row) for row in fixed], pa.binary(4))
    assert encode_delta_byte_array(fixed) in pyarrow_file(fixed_array, "DELTA_BYTE_ARRAY")


def _deltas_of_width(width: int, count: int, rng: np.random.Generator) -> list[int]:
    """``count`` int64 values whose deltas minus their minimum need exactly ``width`` bits."""
    top = (1 << width) - 1
    rel = [int(x) for x in rng.integers(0, 1 << max(width - 1, 0), size=count, dtype=np.uint64)]
    rel[count // 2] = top  # one delta at the top of the width
    values = [int(rng.integers(-(1 << 62), 1 << 62))]
    base = int(rng.integers(-(1 << 63), 1 << 63))
    for r in rel:
        x = (values[-1] + base + r) & ((1 << 64) - 1)
        values.append(x - (1 << 64) if x >> 63 else x)
    return values


@pytest.mark.parametrize("width", range(65))
def test_delta_binary_packed_every_bit_width(width: int) -> None:
    # Miniblocks of each width 0..64 (65..64 straddle a ninth byte when unaligned), behind a
    # miniblock of another width so that the packed data starts at every bit offset.
    rng = np.random.default_rng(width)
    values = _deltas_of_width(width, 300, rng) + _deltas_of_width(max(width - 3, 0), 200, rng)
    for shape in ((128, 4), (256, 4), (8, 1), (64, 2)):
        encoded = encode_delta_binary_packed_reference(values, 64, *shape)
        decoded, used = decode_delta_binary_packed(encoded + b"\xff", np.int64, len(values))
        assert decoded.tolist() == values and used == len(encoded)
        assert encode_delta_binary_packed(np.array(values, dtype=np.int64), *shape) == encoded
    narrow = [((v & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000 for v in values]
    if width <= 32:
        encoded = encode_delta_binary_packed_reference(narrow, 32)
        decoded32, _ = decode_delta_binary_packed(encoded, np.int32, len(narrow))
        assert decoded32.tolist() == narrow


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_delta_binary_packed_extremes(dtype: type[np.signedinteger[Any]]) -> None:
    # Deltas of max - min and min - max wrap; the min delta's zigzag varint takes 10 bytes
    # (int64) and the bit width is the full type width.
    info = np.iinfo(dtype)
    bits = np.dtype(dtype).itemsize * 8

    def wrap(x: int) -> int:
        x &= (1 << bits) - 1
        return x - (1 << bits) if x >> (bits - 1) else x

    cases = [
        [],
        [int(info.min)],
        [int(info.max)],
        [int(info.min), int(info.max)] * 70,
        [int(info.max), int(info.min)] * 70 + [0],
        [0, int(info.max), int(info.min), -1, 1] * 60,
        # One delta throughout (encoded without packing), wrapping and not, at block edges.
        [7] * 300,
        [5, 5],
        [int(info.min), int(info.max)],
        [wrap(k * int(info.max)) for k in range(4 * bits + 1)],
        [wrap(-3 * k) for k in range(4 * bits * 3 + 1)],
        [wrap(int(info.min) + k) for k in range(1000)],
    ]
    for values in cases:
        array = np.array(values, dtype=dtype)
        encoded = encode_delta_binary_packed(array)  # parquet-cpp's blocks: 128 or 256 values
        assert encoded == encode_delta_binary_packed_reference(values, bits, 4 * bits)
        decoded, used = decode_delta_binary_packed(encoded, dtype, len(values))
        assert decoded.tolist() == values and used == len(encoded)


def test_delta_binary_packed_rejects_bad_headers() -> None:
    values = np.arange(0, 3000, 7, dtype=np.int64)
    encoded = bytearray(encode_delta_binary_packed(values))
    header = 0
    for _ in range(4):  # block size, miniblocks, count, first value
        _, header = read_uleb128(bytes(encoded), header)
    too_wide = bytearray(encoded)
    too_wide[header + 1] = 65  # first block: min delta 7 is one varint byte, then the widths
    with pytest.raises(FormatError, match="bit width 65"):
        decode_delta_binary_packed(bytes(too_wide) + bytes(4000), np.int64, len(values))
    with pytest.raises(FormatError, match="truncated"):
        decode_delta_binary_packed(bytes(too_wide), np.int64, len(values))
    long_varint = bytearray(encoded[:header]) + b"\x80" * 11 + bytes(encoded[header + 1 :])
    with pytest.raises(FormatError, match="longer than 10 bytes"):
        decode_delta_binary_packed(bytes(long_varint) + bytes(4000), np.int64, len(values))
    with pytest.raises(FormatError, match=r"truncated|ends before|cannot hold"):
        decode_delta_binary_packed(bytes(encoded[:-1]), np.int64, len(values))


def test_delta_byte_array_prefixes_at_word_boundaries() -> None:
    # Shared prefixes of every length around the 8-byte words the encoder compares (and past
    # its word-by-word rounds), against values that are shorter, equal, longer or empty.
    rng = np.random.default_rng(11)
    values: list[bytes] = [b""]
    for shared in [*range(0, 42), 63, 64, 65, 200, 1000]:
        stem = bytes(rng.integers(0, 256, size=shared, dtype=np.uint8))
        for tail in (b"", b"\x00", b"\x01\x02", bytes(range(9)), bytes(30)):
            values += [stem + tail, stem + bytes([255]) + tail, stem, b"", stem + tail + tail]
    values += [b"q" * 5000, b"q" * 5000, b"q" * 4999 + b"r", b""]
    for chunk in (values, values[1:], values[::-1]):
        encoded = encode_delta_byte_array(BinaryValues.from_pylist(chunk))
        assert encoded == encode_delta_byte_array_reference(chunk)
        decoded, used = decode_delta_byte_array(encoded, len(chunk))
        assert isinstance(decoded, BinaryValues)
        assert decoded.to_pylist() == chunk and used == len(encoded)
