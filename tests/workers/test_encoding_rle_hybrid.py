from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwrite.errors import ConfigError, FormatError
from tests.workers._encoding_helpers import assert_rejects_or_decodes
from workers.encoding import rle_hybrid
from workers.encoding.rle_hybrid import (
    decode_boolean_rle,
    decode_levels_v1,
    decode_rle_hybrid,
    decode_rle_hybrid_reference,
    encode_boolean_rle,
    encode_levels_v1,
    encode_rle_hybrid,
    encode_rle_hybrid_reference,
    pack_bits,
    pack_bits_reference,
    unpack_bits,
    unpack_bits_reference,
)


def test_spec_bit_packing_example() -> None:
    packed = pack_bits(np.arange(8, dtype=np.uint32), 3)
    assert packed == bytes([0b10001000, 0b11000110, 0b11111010])
    assert unpack_bits(packed, 3, 8).tolist() == list(range(8))


def test_spec_hybrid_example() -> None:
    # 8 distinct values: one bit-packed run of one group.
    encoded = encode_rle_hybrid(np.arange(8, dtype=np.uint32), 3)
    assert encoded == bytes([0b11, 0b10001000, 0b11000110, 0b11111010])


def test_rle_runs() -> None:
    assert encode_rle_hybrid(np.full(100, 5, dtype=np.uint32), 3) == bytes([0xC8, 0x01, 5])
    assert encode_rle_hybrid(np.full(300, 1, dtype=np.uint32), 9) == bytes([0xD8, 0x04, 1, 0])
    assert encode_rle_hybrid(np.zeros(0, dtype=np.uint32), 3) == b""
    assert encode_rle_hybrid(np.zeros(10, dtype=np.uint32), 0) == bytes([20])


def test_levels_and_booleans() -> None:
    levels = np.array([1, 1, 0, 1] * 10, dtype=np.uint32)
    encoded = encode_levels_v1(levels, 1)
    assert int.from_bytes(encoded[:4], "little") == len(encoded) - 4
    decoded, used = decode_levels_v1(encoded + b"tail", 1, 40)
    assert decoded.tolist() == levels.tolist() and used == len(encoded)
    flags = np.array([True, False, True] * 7)
    out, used = decode_boolean_rle(encode_boolean_rle(flags), 21)
    assert out.dtype == np.bool_ and out.tolist() == flags.tolist()


def test_bad_arguments() -> None:
    with pytest.raises(ConfigError):
        pack_bits(np.array([8], dtype=np.uint32), 3)
    with pytest.raises(ConfigError):
        encode_rle_hybrid(np.array([1], dtype=np.uint32), 33)
    with pytest.raises(FormatError):
        unpack_bits(b"\x00", 3, 8)
    with pytest.raises(FormatError):
        decode_rle_hybrid(b"\x03\x00", 3, 8)
    with pytest.raises(FormatError):
        decode_levels_v1(b"\x09\x00\x00\x00\x02", 1, 1)


@st.composite
def runs_of_values(draw: st.DrawFn) -> tuple[list[int], int]:
    width = draw(st.integers(0, 32))
    top = (1 << width) - 1
    pieces = draw(
        st.lists(
            st.tuples(
                st.integers(0, top), st.sampled_from([1, 1, 2, 3, 7, 8, 9, 15, 16, 17, 64, 600])
            ),
            max_size=30,
        )
    )
    values = [v for v, r in pieces for _ in range(r)]
    extremes = draw(st.lists(st.sampled_from([0, top]), max_size=10))
    return values + extremes, width


@settings(max_examples=300, deadline=None)
@given(runs_of_values())
def test_hybrid_matches_reference(case: tuple[list[int], int]) -> None:
    values, width = case
    array = np.array(values, dtype=np.uint64)
    encoded = encode_rle_hybrid(array, width)
    assert encoded == encode_rle_hybrid_reference(values, width)
    decoded, used = decode_rle_hybrid(encoded + b"\xff", width, len(values))
    assert decoded.tolist() == values and used == len(encoded)
    assert decode_rle_hybrid_reference(encoded, width, len(values)) == (values, len(encoded))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 64), st.integers(0, 5000), st.integers(0, 2**32))
def test_pack_matches_reference(width: int, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)
    if width < 64:
        values &= np.uint64((1 << width) - 1)
    packed = pack_bits(values, width)
    assert packed == pack_bits_reference(values.tolist(), width)
    assert unpack_bits(packed, width, n).tolist() == values.tolist()
    assert unpack_bits_reference(packed, width, n) == values.tolist()


@settings(max_examples=60, deadline=None)
@given(runs_of_values(), st.integers(0, 1000))
def test_malformed_hybrid(case: tuple[list[int], int], seed: int) -> None:
    values, width = case
    encoded = encode_rle_hybrid(np.array(values, dtype=np.uint64), width)
    assert_rejects_or_decodes(encoded, lambda b: decode_rle_hybrid(b, width, len(values)), seed)
    assert_rejects_or_decodes(
        encode_levels_v1(np.array(values, dtype=np.uint64), width),
        lambda b: decode_levels_v1(b, width, len(values)),
        seed,
    )


@pytest.mark.parametrize("passes", [1, 8])
@pytest.mark.parametrize("seed", range(6))
def test_hybrid_short_runs_match_reference(
    seed: int, passes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Runs of 8..14 equal values RLE-encode or not depending on where the previous RLE run
    # ended: this drives the encoder's fixed-point pass and (one pass allowed) its scalar loop.
    monkeypatch.setattr(rle_hybrid, "_FIXED_POINT_PASSES", passes)
    rng = np.random.default_rng(seed)
    lengths = rng.choice([1, 2, 5, 8, 9, 11, 13, 14, 15, 30], size=400)
    if seed % 2:
        lengths = np.where(rng.random(400) < 0.9, rng.integers(8, 15, size=400), lengths)
    width = int(rng.integers(2, 12))
    values = rng.integers(0, 1 << width, size=lengths.shape[0]).repeat(lengths).astype(np.uint32)
    encoded = encode_rle_hybrid(values, width)
    assert encoded == encode_rle_hybrid_reference(values.tolist(), width)
    decoded, used = decode_rle_hybrid(encoded, width, values.shape[0])
    assert decoded.tolist() == values.tolist() and used == len(encoded)


@pytest.mark.parametrize("width", [1, 3, 10, 17])
def test_hybrid_literal_only_large(width: int) -> None:
    rng = np.random.default_rng(width)
    for n in (63 * 8 * 5, 63 * 8 * 5 + 3, 20_003):
        values = rng.integers(0, 1 << width, size=n).astype(np.uint32)
        values[1::2] = values[0::2][: n // 2] ^ 1  # no two neighbours equal
        values[-3:] = 1
        encoded = encode_rle_hybrid(values, width)
        assert encoded == encode_rle_hybrid_reference(values.tolist(), width)


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(8, 16)), min_size=1, max_size=200))
@settings(max_examples=300, deadline=None)
def test_rle_choice_equals_the_scalar_choice(gaps_and_lengths: list[tuple[int, int]]) -> None:
    """Long runs (8-16 values: most just miss or just make their group boundary) with gaps of
    0-20 values: the fixed-point passes choose as the scalar loop, or hand over to it."""
    bounds = np.cumsum([value for pair in gaps_and_lengths for value in pair]).reshape(-1, 2)
    starts, ends = bounds[:, 0].astype(np.int64), bounds[:, 1].astype(np.int64)
    want = rle_hybrid._rle_choice_reference(starts, ends)
    got = rle_hybrid._rle_choice(starts, ends)
    assert [part.tolist() for part in got] == [list(part) for part in want]


def test_rle_choice_of_a_long_dependency_chain() -> None:
    """Runs of 9 values one apart: each decision flips the next one's group phase, a chain
    longer than the fixed-point passes (the scalar loop settles it)."""
    starts = np.arange(0, 10 * 400, 10, dtype=np.int64) + 1
    ends = starts + 9
    values = np.zeros(int(ends[-1]) + 5, dtype=np.uint8)
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        values[s:e] = 1
    assert encode_rle_hybrid(values, 1) == encode_rle_hybrid_reference(values.tolist(), 1)
    got = rle_hybrid._rle_choice(starts, ends)
    assert [part.tolist() for part in got] == [
        list(part) for part in rle_hybrid._rle_choice_reference(starts, ends)
    ]
