from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwrite.errors import FormatError
from streamwrite.format.enums import Type
from streamwrite.testing.strategies import byte_array_lists, physical_values
from tests.workers._encoding_helpers import assert_rejects_or_decodes, pyarrow_file
from workers.encoding.byte_stream_split import (
    decode_byte_stream_split,
    decode_byte_stream_split_reference,
    encode_byte_stream_split,
    encode_byte_stream_split_reference,
)
from workers.encoding.plain import (
    decode_plain,
    decode_plain_reference,
    encode_plain,
    encode_plain_reference,
)
from workers.values import BinaryValues

INT32 = physical_values(Type.INT32)
INT64 = physical_values(Type.INT64)
DOUBLES = physical_values(Type.DOUBLE)
FLOATS = physical_values(Type.FLOAT)
BLOBS = byte_array_lists(max_size=60)

NUMERIC = [
    (Type.INT32, np.int32, INT32),
    (Type.INT64, np.int64, INT64),
    (Type.FLOAT, np.float32, FLOATS),
    (Type.DOUBLE, np.float64, DOUBLES),
]


def test_spec_byte_stream_split_example() -> None:
    raw = bytes.fromhex("AABBCCDD00112233A3B4C5D6")
    values = np.frombuffer(raw, dtype="<f4")
    assert encode_byte_stream_split(values) == bytes.fromhex("AA00A3BB11B4CC22C5DD33D6")
    decoded, used = decode_byte_stream_split(
        bytes.fromhex("AA00A3BB11B4CC22C5DD33D6"), Type.FLOAT, 3
    )
    assert decoded.tobytes() == raw and used == 12


def test_plain_layouts() -> None:
    assert encode_plain(np.array([True, False, True] * 3), Type.BOOLEAN) == bytes([0b01101101, 1])
    values = BinaryValues.from_pylist([b"ab", b"", b"xyz"])
    assert encode_plain(values, Type.BYTE_ARRAY) == b"\x02\0\0\0ab\0\0\0\0\x03\0\0\0xyz"
    assert encode_plain(values[1:], Type.BYTE_ARRAY) == b"\0\0\0\0\x03\0\0\0xyz"
    int96, used = decode_plain(bytes(range(24)), Type.INT96, 2)
    assert int96.shape == (2, 12) and used == 24
    with pytest.raises(FormatError):
        decode_plain(b"\x05\0\0\0ab", Type.BYTE_ARRAY, 1)
    with pytest.raises(FormatError):
        decode_plain(b"\0" * 7, Type.INT64, 1)


@pytest.mark.parametrize(("physical_type", "dtype", "strategy"), NUMERIC)
def test_plain_numeric_round_trip(
    physical_type: Type, dtype: type, strategy: st.SearchStrategy[object]
) -> None:
    @settings(max_examples=100, deadline=None)
    @given(st.lists(strategy, max_size=100))
    def check(values: list[object]) -> None:
        array = np.array(values, dtype=dtype)
        encoded = encode_plain(array, physical_type)
        assert encoded == encode_plain_reference(array.tolist(), physical_type)
        decoded, used = decode_plain(encoded + b"zz", physical_type, len(values))
        assert decoded.tobytes() == array.tobytes() and used == len(encoded)
        reference, _ = decode_plain_reference(encoded, physical_type, len(values))
        assert encode_plain_reference(reference, physical_type) == encoded
        assert encode_byte_stream_split(array) == encode_byte_stream_split_reference(
            [array[i : i + 1].tobytes() for i in range(len(values))]
        )
        split, used = decode_byte_stream_split(
            encode_byte_stream_split(array), physical_type, len(values)
        )
        assert split.tobytes() == array.tobytes() and used == len(encoded)

    check()


@settings(max_examples=200, deadline=None)
@given(BLOBS, st.integers(0, 1000))
def test_plain_byte_array(values: list[bytes], seed: int) -> None:
    encoded = encode_plain(BinaryValues.from_pylist(values), Type.BYTE_ARRAY)
    assert encoded == encode_plain_reference(list(values), Type.BYTE_ARRAY)
    decoded, used = decode_plain(encoded + b"\x01\x02", Type.BYTE_ARRAY, len(values))
    assert isinstance(decoded, BinaryValues)
    assert decoded.to_pylist() == values and used == len(encoded)
    assert decode_plain_reference(encoded, Type.BYTE_ARRAY, len(values)) == (values, used)
    assert_rejects_or_decodes(
        encoded, lambda b: decode_plain(b, Type.BYTE_ARRAY, len(values)), seed
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(st.booleans(), max_size=100), st.integers(1, 9), st.integers(0, 30))
def test_plain_boolean_and_fixed(flags: list[bool], width: int, n: int) -> None:
    encoded = encode_plain(np.array(flags, dtype=np.bool_), Type.BOOLEAN)
    assert encoded == encode_plain_reference(list(flags), Type.BOOLEAN)
    decoded, used = decode_plain(encoded, Type.BOOLEAN, len(flags))
    assert decoded.tolist() == flags and used == len(encoded)
    fixed = np.random.default_rng(n).integers(0, 256, size=(n, width), dtype=np.uint8)
    encoded = encode_plain(fixed, Type.FIXED_LEN_BYTE_ARRAY)
    out, used = decode_plain(encoded, Type.FIXED_LEN_BYTE_ARRAY, n, width)
    assert np.array_equal(out, fixed) and used == n * width
    split = encode_byte_stream_split(fixed)
    assert split == encode_byte_stream_split_reference([bytes(row) for row in fixed])
    back, _ = decode_byte_stream_split(split, Type.FIXED_LEN_BYTE_ARRAY, n, width)
    assert np.array_equal(back, fixed)
    assert decode_byte_stream_split_reference(split, width, n) == [bytes(row) for row in fixed]
    with pytest.raises(FormatError):
        decode_byte_stream_split(split[:-1], Type.FIXED_LEN_BYTE_ARRAY, n, width) if n else (
            decode_byte_stream_split(b"", Type.FIXED_LEN_BYTE_ARRAY, 1, width)
        )


@pytest.mark.parametrize(
    ("physical_type", "array"),
    [
        (Type.INT64, pa.array(np.random.default_rng(1).integers(-(2**63), 2**63 - 1, 5000))),
        (Type.DOUBLE, pa.array(np.random.default_rng(2).standard_normal(5000))),
        (Type.FLOAT, pa.array(np.random.default_rng(3).standard_normal(5000).astype(np.float32))),
        (Type.INT32, pa.array(np.arange(5000, dtype=np.int32))),
    ],
)
def test_matches_pyarrow_numeric(physical_type: Type, array: pa.Array) -> None:
    values = array.to_numpy()
    assert encode_plain(values, physical_type) in pyarrow_file(array, "PLAIN")
    assert encode_byte_stream_split(values) in pyarrow_file(array, "BYTE_STREAM_SPLIT")


def test_matches_pyarrow_byte_array() -> None:
    values = [b"x" * (i % 13) + bytes([i % 256]) for i in range(3000)]
    encoded = encode_plain(BinaryValues.from_pylist(values), Type.BYTE_ARRAY)
    assert encoded in pyarrow_file(pa.array(values, pa.binary()), "PLAIN")


@pytest.mark.parametrize("lengths", [[16] * 50, [0] * 9, [3, 0, 7, 3, 255, 1] * 20])
def test_plain_byte_array_slices(lengths: list[int]) -> None:
    # One-length values take the record path, others Arrow's element-wise join; both must
    # honour a slice whose offsets do not start at zero.
    rng = np.random.default_rng(len(lengths))
    values: list[bytes] = [
        rng.integers(0, 256, size=k, dtype=np.uint8).tobytes() for k in [5, *lengths, 2]
    ]
    sliced = BinaryValues.from_pylist(values)[1:-1]
    expected = encode_plain_reference(list[object](values[1:-1]), Type.BYTE_ARRAY)
    assert encode_plain(sliced, Type.BYTE_ARRAY) == expected
    decoded, used = decode_plain(expected + b"\x07", Type.BYTE_ARRAY, len(lengths))
    assert isinstance(decoded, BinaryValues) and decoded.to_pylist() == values[1:-1]
    assert used == len(expected)


def test_plain_byte_array_one_length_then_another() -> None:
    # The one-length fast path must notice a value of another length anywhere.
    for position in (0, 1, 63, 64, 150, 299):
        values = [b"abcde"] * 300
        values[position] = b"abcdef" if position % 2 else b""
        encoded = encode_plain(BinaryValues.from_pylist(values), Type.BYTE_ARRAY)
        decoded, used = decode_plain(encoded + b"\x01\x02", Type.BYTE_ARRAY, len(values))
        assert isinstance(decoded, BinaryValues)
        assert decoded.to_pylist() == values and used == len(encoded)
