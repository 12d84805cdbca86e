"""Automatic encoding choice: the sorted-integer shortcut decides as hashing would; the distinct
estimate that spares hashing matches its reference and agrees with hashing."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwrite.format.chunk import EncodingDecision
from streamwrite.format.enums import Encoding, Type
from streamwrite.options import MAX_DICTIONARY_RATIO, ColumnOptions, DataPageVersion
from streamwrite.testing import reference_table
from workers.choose import (
    SMALL_CHUNK_SIZE,
    apply_decision,
    choose_encodings,
    estimate_distinct,
    estimate_distinct_reference,
    sample_positions,
)
from workers.encoding.dictionary import dictionary_encode
from workers.values import BinaryValues


@given(
    st.lists(st.integers(0, 5), min_size=2, max_size=3000),
    st.integers(-(2**40), 2**40),
    st.sampled_from([Type.INT32, Type.INT64]),
)
def test_sorted_integers_choose_the_dictionary_exactly_when_hashing_would(
    steps: list[int], start: int, physical_type: Type
) -> None:
    dtype = np.int32 if physical_type == Type.INT32 else np.int64
    values = (np.int64(start % 2**30) + np.cumsum(steps)).astype(dtype)
    assert len(values) <= SMALL_CHUNK_SIZE
    choice = choose_encodings(values, physical_type, ColumnOptions(), DataPageVersion.V1)
    assert choice.fallback == Encoding.DELTA_BINARY_PACKED
    distinct, _ = dictionary_encode(values, physical_type)
    assert choice.use_dictionary == (len(distinct) <= MAX_DICTIONARY_RATIO * len(values))


# --- the distinct estimate before hashing -----------------------------------------------------


def _plain_keys(values: Any, physical_type: Type) -> list[bytes]:
    """Each value's bytes, every NaN one key (the reference's notion of equal values)."""
    if isinstance(values, BinaryValues):
        return values.to_pylist()
    arr = np.asarray(values)
    if physical_type in (Type.FLOAT, Type.DOUBLE):
        return [b"nan" if np.isnan(v) else v.tobytes() for v in arr]
    return [row.tobytes() for row in arr]


_NUMERIC_DTYPES = {Type.INT32: np.int32, Type.INT64: np.int64, Type.FLOAT: np.float32}
_NUMERIC_DTYPES[Type.DOUBLE] = np.float64


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([Type.INT32, Type.INT64, Type.FLOAT, Type.DOUBLE]),
    st.lists(st.integers(-3, 3) | st.sampled_from([0.0, -0.0, math.nan, 1e30]), max_size=300),
    st.integers(1, 64),
)
def test_estimate_distinct_of_numbers_matches_reference(
    physical_type: Type, raw: list[float], sample_size: int
) -> None:
    dtype = _NUMERIC_DTYPES[physical_type]
    if physical_type in (Type.INT32, Type.INT64):
        raw = [0 if isinstance(v, float) else v for v in raw]
    values = np.array(raw, dtype=dtype)
    sample = values[sample_positions(len(values), sample_size)]
    expected = estimate_distinct_reference(_plain_keys(sample, physical_type))
    assert estimate_distinct(values, physical_type, sample_size) == expected


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.binary(max_size=24) | st.sampled_from([b"", b"\x00", b"ab", b"a" * 16]), max_size=200
    ),
    st.integers(1, 64),
    st.booleans(),
)
def test_estimate_distinct_of_byte_strings_matches_reference(
    raw: list[bytes], sample_size: int, sliced: bool
) -> None:
    values = BinaryValues.from_pylist(raw)
    if sliced and len(raw) > 1:  # a slice whose offsets do not start at zero
        values = values[1:]
    positions = sample_positions(len(values), sample_size)
    expected = estimate_distinct_reference([values.to_pylist()[i] for i in positions])
    assert estimate_distinct(values, Type.BYTE_ARRAY, sample_size) == expected


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 20), st.lists(st.integers(0, 3), max_size=120), st.integers(1, 40))
def test_estimate_distinct_of_fixed_len_matches_reference(
    width: int, picks: list[int], sample_size: int
) -> None:
    rows = np.random.default_rng(width).integers(0, 256, (4, width), dtype=np.uint8)
    values = rows[np.array(picks, dtype=np.int64)].reshape(len(picks), width)
    positions = sample_positions(len(picks), sample_size)
    expected = estimate_distinct_reference([values[i].tobytes() for i in positions])
    got = estimate_distinct(values, Type.FIXED_LEN_BYTE_ARRAY, sample_size)
    assert got == expected


def test_a_column_whose_sample_is_all_distinct_is_never_hashed() -> None:
    ids = BinaryValues.from_pylist(
        [f"{i * 0x9E3779B97F4A7C15 % 2**64:016x}".encode() for i in range(10_000)]
    )
    choice = choose_encodings(ids, Type.BYTE_ARRAY, ColumnOptions(), DataPageVersion.V1)
    assert not choice.use_dictionary and choice.num_distinct is None  # decided unhashed
    noise = np.random.default_rng(3).normal(size=10_000)
    choice = choose_encodings(noise, Type.DOUBLE, ColumnOptions(), DataPageVersion.V1)
    assert not choice.use_dictionary and choice.num_distinct is None
    # The reference table's price (about 6,000 distinct of 10,000): decided from the sample.
    price = reference_table(10_000).column("price").to_numpy()
    choice = choose_encodings(price, Type.DOUBLE, ColumnOptions(), DataPageVersion.V1)
    assert not choice.use_dictionary and choice.num_distinct is None
    assert len(np.unique(price)) > MAX_DICTIONARY_RATIO * len(price)  # what hashing would say
    # Columns with repeats in the sample are still hashed and judged exactly.
    low = BinaryValues.from_pylist([f"v{i % 300}".encode() for i in range(10_000)])
    choice = choose_encodings(low, Type.BYTE_ARRAY, ColumnOptions(), DataPageVersion.V1)
    assert choice.use_dictionary and choice.num_distinct == 300


def test_a_long_chunk_of_values_repeated_a_few_times_each_gets_a_dictionary() -> None:
    """20k names over 200k rows: an 8192-value sample is ~80 % distinct, the chunk is 10 %
    (pyarrow's dictionary makes such a column ~30 % smaller than PLAIN)."""
    rng = np.random.default_rng(5)
    names = BinaryValues.from_pylist(
        [f"user{i:05d}".encode() for i in rng.integers(0, 20_000, 200_000)]
    )
    choice = choose_encodings(names, Type.BYTE_ARRAY, ColumnOptions(), DataPageVersion.V1)
    assert choice.use_dictionary and choice.num_distinct == len(set(names.to_pylist()))
    assert choice.dictionary is not None  # hashed once, handed to the encoder
    # Unique values of the same length are still decided without hashing.
    ids = BinaryValues.from_pylist([f"user{i:06d}".encode() for i in rng.permutation(200_000)])
    choice = choose_encodings(ids, Type.BYTE_ARRAY, ColumnOptions(), DataPageVersion.V1)
    assert not choice.use_dictionary and choice.num_distinct is None


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5000), st.integers(0, 2**32))
def test_skipping_the_hash_agrees_with_hashing_on_uniform_columns(
    num_distinct: int, seed: int
) -> None:
    # Equally frequent values: the estimate is close enough never to flip the decision
    # hashing would make, except within the margin around the threshold.
    values = np.random.default_rng(seed).integers(0, num_distinct, 10_000) * 7919 + 2**40
    choice = choose_encodings(values, Type.INT64, ColumnOptions(), DataPageVersion.V1)
    true_distinct = len(np.unique(values))
    if true_distinct <= 0.4 * len(values):
        assert choice.use_dictionary
    if true_distinct > 0.5 * len(values):
        assert not choice.use_dictionary


# --- following a decision ----------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=400), st.sampled_from([1, 3, 1000]))
def test_a_dictionary_decision_is_judged_on_the_exact_distinct_count(
    raw: list[int], scale: int
) -> None:
    values = np.array(raw, dtype=np.int64) * scale
    decision = EncodingDecision(True, Encoding.PLAIN)
    choice, drift, num_distinct = apply_decision(decision, values, Type.INT64, ColumnOptions())
    distinct = len(np.unique(values))
    assert num_distinct == distinct
    # The reference rule: at most half distinct, or the dictionary is at most half of PLAIN.
    bits = max(1, (distinct - 1).bit_length())
    pays_off = distinct * 8 + len(values) * bits / 8 <= 0.5 * len(values) * 8
    expected = distinct <= MAX_DICTIONARY_RATIO * len(values) or pays_off
    assert choice.use_dictionary == expected and drift == (not expected)
    if expected:
        assert choice.dictionary is not None
        dictionary, indices = choice.dictionary
        assert np.array_equal(np.asarray(dictionary)[indices], values)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=2, max_size=400), st.booleans())
def test_a_delta_decision_reports_decreasing_or_repetitive_integers(
    steps: list[int], reverse: bool
) -> None:
    values = np.cumsum(np.array(steps, dtype=np.int64))
    if reverse:
        values = values[::-1].copy()
    decision = EncodingDecision(False, Encoding.DELTA_BINARY_PACKED)
    choice, drift, num_distinct = apply_decision(decision, values, Type.INT64, ColumnOptions())
    assert not choice.use_dictionary and choice.fallback == Encoding.DELTA_BINARY_PACKED
    decreasing = bool(np.any(values[1:] < values[:-1]))
    distinct = len(np.unique(values))
    if decreasing:
        assert drift and num_distinct is None
    else:
        assert num_distinct == distinct
        assert drift == (distinct <= MAX_DICTIONARY_RATIO * len(values))


def test_a_no_dictionary_decision_checks_cardinality_only_when_asked() -> None:
    values = np.tile(np.arange(10, dtype=np.int64) * 7919, 500)
    decision = EncodingDecision(False, Encoding.PLAIN)
    _, drift, num_distinct = apply_decision(decision, values, Type.INT64, ColumnOptions())
    assert drift and num_distinct is None  # ten values: a dictionary would pay, and was not hashed
    _, drift, _ = apply_decision(decision, values, Type.INT64, ColumnOptions(), False)
    assert not drift
