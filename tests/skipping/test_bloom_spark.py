"""SparkBloomFilter against Spark itself: filters built in the JVM of the test SparkSession
(``org.apache.spark.util.sketch.BloomFilter`` through the py4j gateway), compared byte for byte.

pyspark 4.3's ``BloomFilter.create(n, fpp)`` makes a V2 filter (seed 0); xskipper, built on
Spark 4.0, writes V1. Both are compared: V1 through ``create(Version.V1, n, m, 0)``.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from streamwrite.skipping.bloom import SparkBloomFilter

CHARS = ["a", "Z", "0", " ", "é", "ß", "Ω", "日", "本", "€", "😀", "𝄞"]
EXTREME_LONGS = [0, 1, -1, 2**31 - 1, -(2**31), 2**31, 2**32 - 1, 2**32, 2**63 - 1, -(2**63)]


def _strings(num: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = [""]
    while len(out) < num:
        target = rng.randint(0, 300)
        s = ""
        while len(s.encode()) < target:
            s += rng.choice(CHARS)
        out.append(s)
    return out


def _longs(num: int, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    return EXTREME_LONGS + rng.integers(-(2**63), 2**63 - 1, num, dtype=np.int64).tolist()


def _jvm_filter(spark: Any, version: str, n: int, fpp: float, seed: int = 0) -> Any:
    sketch = spark._jvm.org.apache.spark.util.sketch
    bloom = sketch.BloomFilter
    if version == "default":
        return bloom.create(n, fpp)
    num_bits = bloom.optimalNumOfBits(n, fpp)
    return bloom.create(getattr(getattr(sketch, "BloomFilter$Version"), version), n, num_bits, seed)


def _jvm_bytes(spark: Any, jfilter: Any) -> bytes:
    out = spark._jvm.java.io.ByteArrayOutputStream()
    jfilter.writeTo(out)
    return bytes(out.toByteArray())


@pytest.mark.parametrize(("n", "fpp"), [(1000, 0.01), (300, 0.03), (100_000, 0.01), (7, 0.5)])
def test_v1_strings_and_longs_byte_identical(spark: Any, n: int, fpp: float) -> None:
    strings, longs = _strings(120, n), _longs(60, n)
    jf = _jvm_filter(spark, "V1", n, fpp)
    for s in strings:
        jf.putString(s)
    for v in longs:
        jf.putLong(v)
    ours = SparkBloomFilter.create(n, fpp)
    ours.put_strings(pa.array(strings))
    ours.put_longs(np.array(longs, dtype=np.int64))
    spark_bytes = _jvm_bytes(spark, jf)
    assert spark_bytes[:4] == b"\x00\x00\x00\x01"
    assert ours.to_bytes() == spark_bytes
    assert SparkBloomFilter.from_bytes(spark_bytes) == ours


def test_strings_of_every_length_0_to_300(spark: Any) -> None:
    strings = [
        "".join(random.Random(i).choice("abcé日😀") for _ in range(i)) for i in range(0, 301)
    ]
    strings = [s.encode()[:i].decode("utf-8", "ignore") for i, s in enumerate(strings)]
    jf = _jvm_filter(spark, "V1", 5000, 0.01)
    for s in strings:
        jf.putString(s)
    ours = SparkBloomFilter.create(5000, 0.01)
    ours.put_strings(strings)
    assert ours.to_bytes() == _jvm_bytes(spark, jf)


def test_default_create_is_what_spark_writes_and_reads_back(spark: Any) -> None:
    """pyspark 4.3's default ``create`` writes V2 (seed 0): we read it and hash like it."""
    strings, longs = _strings(80, 5), _longs(40, 5)
    jf = _jvm_filter(spark, "default", 2000, 0.02)
    for s in strings:
        jf.putString(s)
    for v in longs:
        jf.putLong(v)
    spark_bytes = _jvm_bytes(spark, jf)
    version = int.from_bytes(spark_bytes[:4], "big")
    major_minor = tuple(int(x) for x in spark.version.split(".")[:2])
    assert version == (2 if major_minor >= (4, 1) else 1), (spark.version, version)
    theirs = SparkBloomFilter.from_bytes(spark_bytes)
    assert theirs.version == version
    ours = SparkBloomFilter.create(2000, 0.02)
    ours = SparkBloomFilter(ours.num_hash_functions, ours.words, version, theirs.seed)
    ours.put_strings(strings)
    ours.put_longs(np.array(longs, dtype=np.int64))
    assert ours.to_bytes() == spark_bytes
    assert theirs.might_contain_strings(strings).all()


def test_v2_with_a_seed_byte_identical(spark: Any) -> None:
    strings, longs = _strings(60, 9), _longs(30, 9)
    jf = _jvm_filter(spark, "V2", 3000, 0.01, seed=-12345)
    for s in strings:
        jf.putString(s)
    for v in longs:
        jf.putLong(v)
    spark_bytes = _jvm_bytes(spark, jf)
    theirs = SparkBloomFilter.from_bytes(spark_bytes)
    assert (theirs.version, theirs.seed) == (2, -12345)
    ours = SparkBloomFilter.create(3000, 0.01)
    ours = SparkBloomFilter(ours.num_hash_functions, ours.words, 2, -12345)
    ours.put_strings(strings)
    ours.put_longs(np.array(longs, dtype=np.int64))
    assert ours.to_bytes() == spark_bytes


def test_spark_reads_our_bytes_and_java_serialization_blocks(spark: Any) -> None:
    strings = _strings(50, 11)
    ours = SparkBloomFilter.create(100_000, 0.01)
    ours.put_strings(strings)
    jf = spark._jvm.org.apache.spark.util.sketch.BloomFilter.readFrom(ours.to_bytes())
    assert all(jf.mightContainString(s) for s in strings[:10])
    assert jf.cardinality() == ours.cardinality()
    # Java's own ObjectOutputStream of the filter: block records after the class descriptor
    # are exactly ours (the descriptor itself differs across Spark builds, hence xskipper's
    # SUID-agnostic reader).
    out = spark._jvm.java.io.ByteArrayOutputStream()
    stream = spark._jvm.java.io.ObjectOutputStream(out)
    v1 = _jvm_filter(spark, "V1", 100_000, 0.01)
    for s in strings:
        v1.putString(s)
    stream.writeObject(v1)
    stream.flush()
    java = bytes(out.toByteArray())
    ours_java = ours.to_java_bytes()
    blocks = ours_java[309:]
    assert java.endswith(blocks)
