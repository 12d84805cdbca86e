"""Definition levels stored as one RLE run (pages without nulls) are read by a shortcut in
``workers.decode``; it agrees with the general decoder on every input, or declines it."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from workers.decode import _single_run
from workers.encoding.rle_hybrid import (
    decode_levels_v1,
    decode_rle_hybrid,
    encode_levels_v1,
    encode_rle_hybrid,
)

EXAMPLES = int(os.environ.get("STREAMWRITE_SINGLE_RUN_EXAMPLES", "300"))


@given(
    st.integers(1, 70_000),
    st.integers(0, 1),
    st.lists(st.integers(0, 69_999), max_size=3),
    st.booleans(),
)
@settings(max_examples=EXAMPLES, deadline=None)
def test_single_run_agrees_with_the_general_decoder(
    count: int, value: int, flips: list[int], v1: bool
) -> None:
    levels = np.full(count, value, dtype=np.uint8)
    for flip in flips:
        levels[flip % count] ^= 1  # some inputs are not one run
    data = encode_levels_v1(levels, 1) if v1 else encode_rle_hybrid(levels, 1)
    got = _single_run(data, 1, count, v1)
    want, used = decode_levels_v1(data, 1, count) if v1 else decode_rle_hybrid(data, 1, count)
    if got is None:
        assert len(np.unique(levels)) == 2 or len(data) > 10
        return
    assert np.array_equal(got[0], want) and got[1] == used


@given(st.binary(max_size=12), st.integers(0, 300), st.booleans())
@example(data=b"\x00\x00", count=0, v1=False)  # a zero-value run: the general decoder reads no run
@settings(max_examples=EXAMPLES, deadline=None)
def test_single_run_never_accepts_what_the_general_decoder_reads_otherwise(
    data: bytes, count: int, v1: bool
) -> None:
    got = _single_run(data, 1, count, v1)
    if got is None:
        return
    want, used = decode_levels_v1(data, 1, count) if v1 else decode_rle_hybrid(data, 1, count)
    assert np.array_equal(got[0], want) and got[1] == used
