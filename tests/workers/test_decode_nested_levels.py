"""The level decoder of ``workers.decode_levels`` against the reference RLE hybrid decoder.

``decode_level_runs`` must equal ``workers.encoding.rle_hybrid.decode_rle_hybrid`` on every
input: the same values and bytes used, or a FormatError from both.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwrite.errors import FormatError
from workers.decode_levels import decode_level_runs
from workers.encoding._varint import encode_uleb128
from workers.encoding.rle_hybrid import decode_rle_hybrid, encode_rle_hybrid

EXAMPLES = int(os.environ.get("STREAMWRITE_DECODE_LEVELS_EXAMPLES", "300"))


def reference(data: bytes, width: int, count: int) -> tuple[list[int], int] | None:
    try:
        values, used = decode_rle_hybrid(data, width, count)
    except FormatError:
        return None
    return values.tolist(), used


def ours(data: bytes, width: int, count: int) -> tuple[list[int], int] | None:
    try:
        values, used = decode_level_runs(data, width, count)
    except FormatError:
        return None
    assert values.dtype == np.uint8 and values.shape == (count,)
    return values.tolist(), used


@st.composite
def level_arrays(draw: st.DrawFn) -> tuple[int, np.ndarray]:
    """Levels in runs of random lengths (short and long: both kinds of hybrid run)."""
    width = draw(st.integers(1, 8))
    runs = draw(
        st.lists(st.tuples(st.integers(0, (1 << width) - 1), st.integers(1, 40)), max_size=300)
    )
    levels = [value for value, length in runs for _ in range(length)]
    noise = draw(st.lists(st.integers(0, (1 << width) - 1), max_size=200))
    levels = levels[: len(levels) // 2] + noise + levels[len(levels) // 2 :]
    return width, np.array(levels, dtype=np.uint8)


@given(level_arrays(), st.binary(max_size=8), st.integers(0, 30))
@settings(max_examples=EXAMPLES, deadline=None)
def test_encoded_levels_decode_like_the_reference(
    case: tuple[int, np.ndarray], tail: bytes, fewer: int
) -> None:
    width, levels = case
    data = encode_rle_hybrid(levels, width) + tail
    count = max(levels.shape[0] - fewer, 0)
    want = reference(data, width, count)
    assert want is not None
    assert ours(data, width, count) == want
    assert want[0] == levels[:count].tolist()


@st.composite
def raw_runs(draw: st.DrawFn) -> tuple[int, bytes, int]:
    """Hand-made runs: RLE runs (counts from 0), bit-packed runs of any group count, headers
    in non-minimal varints, then a count within or past the values."""
    width = draw(st.integers(1, 8))
    out = bytearray()
    total = 0
    for _ in range(draw(st.integers(0, 120))):
        if draw(st.booleans()):
            groups = draw(st.integers(0, 9))
            header = encode_uleb128(groups << 1 | 1)
            body = draw(st.binary(min_size=groups * width, max_size=groups * width))
            total += groups * 8
        else:
            length = draw(st.integers(0, 70))
            header = encode_uleb128(length << 1)
            body = bytes([draw(st.integers(0, 255))])
            total += length
        if draw(st.integers(0, 9)) == 0:  # same value, one more varint byte
            header = bytes([*header[:-1], header[-1] | 0x80, 0x00])
        out += header + body
    count = draw(st.integers(0, total + 3))
    cut = draw(st.integers(0, 3))
    data = bytes(out[: len(out) - cut]) if draw(st.booleans()) else bytes(out)
    return width, data, count


@given(raw_runs())
@settings(max_examples=EXAMPLES, deadline=None)
def test_hand_made_runs_decode_like_the_reference(case: tuple[int, bytes, int]) -> None:
    width, data, count = case
    assert ours(data, width, count) == reference(data, width, count)


@given(st.integers(1, 8), st.binary(min_size=0, max_size=700), st.integers(0, 3000))
@settings(max_examples=EXAMPLES, deadline=None)
def test_random_bytes_decode_like_the_reference(width: int, data: bytes, count: int) -> None:
    assert ours(data, width, count) == reference(data, width, count)


def test_a_large_nested_stream() -> None:
    rng = np.random.default_rng(5)
    levels = np.repeat(rng.integers(0, 4, 40_000), rng.integers(1, 12, 40_000)).astype(np.uint8)
    data = encode_rle_hybrid(levels, 2)
    got, used = decode_level_runs(data, 2, levels.shape[0])
    assert np.array_equal(got, levels) and used == len(data)


@pytest.mark.parametrize(
    "header",
    [
        bytes([0x80] * 9 + [0x01]),  # 2**63: an RLE run of 2**62 values, 10 bytes
        bytes([0x81] + [0x80] * 8 + [0x01]),  # 2**63 + 1: a bit-packed run of 2**62 groups
        bytes([0x80] * 9 + [0x02]),  # over 64 bits
        bytes([0x80] * 10 + [0x00]),  # 11 bytes
        bytes([0x84, 0x80, 0x00]),  # 2 in a non-minimal 3-byte varint
    ],
)
@pytest.mark.parametrize("count", [0, 1, 5])
def test_long_run_headers_decode_like_the_reference(header: bytes, count: int) -> None:
    data = header + bytes([1, 0xFF, 0xFF])
    assert ours(data, 2, count) == reference(data, 2, count)
