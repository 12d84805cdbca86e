"""SparkBloomFilter: the vectorised kernels against the per-value reference, serialization."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwrite.errors import ConfigError, CorruptFileError
from streamwrite.skipping.bloom import JAVA_PREFIX, SparkBloomFilter
from streamwrite.skipping.murmur3 import hash_bytes, hash_longs
from tests.skipping import _reference as ref

EXAMPLES = int(os.environ.get("STREAMWRITE_HYPOTHESIS_EXAMPLES", "60"))

longs = st.integers(min_value=-(2**63), max_value=2**63 - 1)
blobs = st.one_of(
    st.binary(max_size=70),
    st.text(max_size=40).map(lambda s: s.encode("utf-8")),
)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(longs, max_size=30), st.integers(-(2**31), 2**31 - 1))
def test_hash_longs_matches_reference(values: list[int], seed: int) -> None:
    got = hash_longs(np.array(values, dtype=np.int64), seed).view(np.int32)
    assert got.tolist() == [ref.hash_long(v, seed) for v in values]


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(blobs, max_size=30), st.lists(st.integers(-(2**31), 2**31 - 1), max_size=30))
def test_hash_bytes_matches_reference(values: list[bytes], seeds: list[int]) -> None:
    seed_arr = np.array(
        [seeds[i % len(seeds)] if seeds else 7 for i in range(len(values))], np.int32
    )
    offsets = np.concatenate([[0], np.cumsum([len(v) for v in values])]).astype(np.int64)
    data = np.frombuffer(b"".join(values), dtype=np.uint8)
    got = hash_bytes(offsets, data, seed_arr).view(np.int32)
    assert got.tolist() == [
        ref.hash_bytes(v, int(s)) for v, s in zip(values, seed_arr, strict=True)
    ]


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    st.lists(longs, max_size=40),
    st.lists(blobs, max_size=40),
    st.integers(1, 5000),
    st.sampled_from([0.3, 0.05, 0.01, 0.001]),
    st.sampled_from([1, 2]),
    st.integers(-(2**31), 2**31 - 1),
)
def test_filter_words_match_reference(
    ints: list[int], strs: list[bytes], ndv: int, fpp: float, version: int, seed: int
) -> None:
    bf = SparkBloomFilter.create(ndv, fpp)
    if version == 2:
        bf = SparkBloomFilter(bf.num_hash_functions, bf.words, 2, seed)
    bf.put_longs(np.array(ints, dtype=np.int64))
    bf.put_strings(pa.array(strs, pa.binary()))
    expected = ref.build_words(
        [*ints, *strs], bf.num_hash_functions, len(bf.words), version, seed if version == 2 else 0
    )
    assert bf.words.tolist() == expected
    assert bf.might_contain_longs(np.array(ints, dtype=np.int64)).all()
    assert bf.might_contain_strings(pa.array(strs, pa.binary())).all()
    again = SparkBloomFilter.from_bytes(bf.to_bytes())
    assert again == bf
    if version == 1:
        assert SparkBloomFilter.from_java_bytes(bf.to_java_bytes()) == bf


def test_sizing_matches_the_facts_for_xskipper_defaults() -> None:
    bf = SparkBloomFilter.create(100_000, 0.01)
    assert SparkBloomFilter.sizing(100_000, 0.01) == (958505, 7)
    assert len(bf.words) == 14977 and bf.bit_size == 958528
    assert len(bf.to_bytes()) == 119_828
    java = bf.to_java_bytes()
    assert len(JAVA_PREFIX) == 309
    assert java[:309] == JAVA_PREFIX
    assert java[309:314] == b"\x7a\x00\x00\x04\x00"
    assert java.count(b"\x7a\x00\x00\x04\x00") >= 117
    assert java[-23:-21] == b"\x77\x14" and java[-1:] == b"\x78"
    assert len(java) == 309 + 117 * (5 + 1024) + 2 + 20 + 1


def test_strings_utf8_and_nulls_are_skipped() -> None:
    bf = SparkBloomFilter.create(1000, 0.01)
    bf.put_strings(pa.array(["é", None, "日本", "x" * 300]))
    expected = ref.build_words(
        ["é".encode(), "日本".encode(), b"x" * 300], bf.num_hash_functions, len(bf.words)
    )
    assert bf.words.tolist() == expected
    assert bf.might_contain_strings(["é", "日本"]).all()
    assert bf.might_contain_strings(pa.array(["é"]).dictionary_encode()).all()


def test_bad_inputs_raise() -> None:
    with pytest.raises(ConfigError, match="fpp"):
        SparkBloomFilter.create(10, 1.5)
    with pytest.raises(ConfigError, match="ndv"):
        SparkBloomFilter.create(0, 0.1)
    bf = SparkBloomFilter.create(10, 0.1)
    with pytest.raises(ConfigError, match="double"):
        bf.put_strings(pa.array([1.5]))
    with pytest.raises(ConfigError, match="double"):
        bf.put_longs(pa.array([1.5]))
    with pytest.raises(CorruptFileError, match="version 3"):
        SparkBloomFilter.from_bytes(b"\x00\x00\x00\x03" + bytes(20))
    with pytest.raises(CorruptFileError, match="words"):
        SparkBloomFilter.from_bytes(bf.to_bytes()[:-1])
    with pytest.raises(CorruptFileError, match="head"):
        SparkBloomFilter.from_java_bytes(b"\xac\xed" + bytes(400))
    with pytest.raises(CorruptFileError, match="TC_ENDBLOCKDATA"):
        SparkBloomFilter.from_java_bytes(bf.to_java_bytes()[:-1])
