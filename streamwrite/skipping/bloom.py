"""Spark's sketch ``BloomFilter`` (``org.apache.spark.util.sketch``), bit-compatible.

Sizing (``BloomFilter.create(n, p)``: ``optimalNumOfBits``, ``optimalNumOfHashFunctions``)::

    num_bits  m = (long)(-n * ln(p) / (ln 2)^2)                   (truncated)
    k           = max(1, Math.round(m / n * ln 2))
    num_words   = ceil(m / 64);  bit_size = num_words * 64         (not m)

Serialized form (``writeTo``, all big-endian)::

    V1 := i32 version=1  i32 k  i32 num_words  i64 word * num_words
    V2 := i32 version=2  i32 k  i32 seed  i32 num_words  i64 word * num_words

Bit ``idx`` is bit ``idx & 63`` of word ``idx >>> 6``. Hashing (:mod:`.murmur3`), per item: a
string is its UTF-8 bytes and a binary its bytes (``hashUnsafeBytes``); an integer of any width
is widened to a long (``hashLong``)::

    V1: h1 = H(item, 0);    h2 = H(item, h1)
        for i in 1..k: c = int32(h1 + i * h2); if c < 0: c = ~c; set c % bit_size
    V2: h1 = H(item, seed); h2 = H(item, h1)
        c = int64(h1) * 2147483647
        for i in 1..k: c += h2 (int64 wrap); set (c < 0 ? ~c : c) % bit_size

Writing always produces V1 (what xskipper, built on Spark 4.0, writes); V2 is read.

xskipper stores the filter Java-serialized inside its ``BloomFilterMetaData`` object
(:meth:`SparkBloomFilter.to_java_bytes`)::

    java := PREFIX (309 bytes: stream magic ACED0005, the class descriptors of
            io.xskipper.index.metadata.BloomFilterMetaData, MetadataType and
            org.apache.spark.util.sketch.BloomFilterImpl)
            block*            (the V1 bytes cut into records of 1024 bytes, the last shorter;
                               a record of > 255 bytes is 0x7A + u32 BE length + bytes, of
                               1..255 bytes 0x77 + u8 length + bytes)
            0x78              (TC_ENDBLOCKDATA)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from streamwrite.errors import ConfigError, CorruptFileError
from streamwrite.skipping.murmur3 import ByteWords, hash_longs

__all__ = ["JAVA_PREFIX", "SparkBloomFilter", "bit_positions_bytes", "bit_positions_longs"]

JAVA_PREFIX = bytes.fromhex(
    "aced00057372002e696f2e78736b69707065722e696e6465782e6d657461646174612e426c6f6f6d46696c7465724d6574"
    "614461746100000000000000010200014c000b626c6f6f6d46696c74657274002a4c6f72672f6170616368652f737061"
    "726b2f7574696c2f736b657463682f426c6f6f6d46696c7465723b78720027696f2e78736b69707065722e696e646578"
    "2e6d657461646174612e4d6574616461746154797065603f5d1b7b76444602000078707372002c6f72672e6170616368"
    "652e737061726b2e7574696c2e736b657463682e426c6f6f6d46696c746572496d706c8303774076ceabf60300024900"
    "106e756d4861736846756e6374696f6e734c0004626974737400274c6f72672f6170616368652f737061726b2f757469"
    "6c2f736b657463682f42697441727261793b7870"
)
"""The constant head of xskipper's serialized ``BloomFilterMetaData`` (309 bytes)."""
_SUID_OFFSET = JAVA_PREFIX.index(bytes.fromhex("8303774076ceabf6"))
_BLOCK_SIZE = 1024
_INT32_MAX = 2**31 - 1

Strings: TypeAlias = pa.Array | pa.ChunkedArray | Sequence[str | bytes]


def _optimal_num_bits(ndv: int, fpp: float) -> int:
    return int(-ndv * math.log(fpp) / (math.log(2) * math.log(2)))


def _optimal_k(ndv: int, num_bits: int) -> int:
    return max(1, math.floor(num_bits / ndv * math.log(2) + 0.5))


def _byte_strings(values: Strings) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
    """Non-null values as (int64 offsets, data); strings as UTF-8."""
    if not isinstance(values, pa.Array | pa.ChunkedArray):
        values = pa.array(values)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if values.null_count:
        values = pc.drop_null(values)
    if not (
        pa.types.is_string(values.type)
        or pa.types.is_large_string(values.type)
        or pa.types.is_binary(values.type)
        or pa.types.is_large_binary(values.type)
        or pa.types.is_string_view(values.type)
        or pa.types.is_binary_view(values.type)
        or pa.types.is_fixed_size_binary(values.type)
    ):
        raise ConfigError(
            f"A Spark bloom filter hashes strings or binaries here, not values of type "
            f"{values.type}."
        )
    large = values.cast(pa.large_binary())
    _, offsets_buf, data_buf = large.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[
        large.offset : large.offset + len(large) + 1
    ]
    data = (
        np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    )
    return offsets, data


def _int64s(values: Any) -> npt.NDArray[np.int64]:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        if pa.types.is_dictionary(values.type):
            values = values.dictionary_decode()
        if not pa.types.is_integer(values.type):
            raise ConfigError(
                f"A Spark bloom filter hashes integers as longs, not values of type {values.type}."
            )
        if values.null_count:
            values = pc.drop_null(values)
        if pa.types.is_uint64(values.type):
            return np.asarray(values.to_numpy(zero_copy_only=False)).view(np.int64)
        return np.asarray(values.cast(pa.int64()).to_numpy(zero_copy_only=False))
    return np.asarray(values, dtype=np.int64)


def _scatter_v1(
    h1: npt.NDArray[np.uint32], h2: npt.NDArray[np.uint32], k: int, bit_size: int
) -> npt.NDArray[np.int64]:
    i = np.arange(1, k + 1, dtype=np.uint32)
    combined = (h1[:, None] + i[None, :] * h2[:, None]).view(np.int32)  # int32 wrap
    combined = np.where(combined < 0, ~combined, combined).view(np.uint32)  # now >= 0
    if bit_size > 2**31:  # every int32 index is below it
        return combined.astype(np.int64)
    return (combined % np.uint32(bit_size)).astype(np.int64)


def _scatter_v2(
    h1: npt.NDArray[np.uint32], h2: npt.NDArray[np.uint32], k: int, bit_size: int
) -> npt.NDArray[np.int64]:
    base = h1.view(np.int32).astype(np.int64) * _INT32_MAX
    i = np.arange(1, k + 1, dtype=np.int64)
    with np.errstate(over="ignore"):
        combined = base[:, None] + i[None, :] * h2.view(np.int32).astype(np.int64)[:, None]
    combined = np.where(combined < 0, ~combined, combined)
    return combined % bit_size


def bit_positions_longs(
    values: npt.NDArray[np.int64], k: int, bit_size: int, version: int = 1, seed: int = 0
) -> npt.NDArray[np.int64]:
    """The ``(N, k)`` bit positions Spark sets for each long (``putLong``).

    Returns:
        int64 positions in ``[0, bit_size)``.
    """
    h1 = hash_longs(values, seed if version == 2 else 0)
    h2 = hash_longs(values, h1.view(np.int32))
    return (_scatter_v2 if version == 2 else _scatter_v1)(h1, h2, k, bit_size)


def bit_positions_bytes(
    offsets: npt.NDArray[np.int64],
    data: npt.NDArray[np.uint8],
    k: int,
    bit_size: int,
    version: int = 1,
    seed: int = 0,
) -> npt.NDArray[np.int64]:
    """The ``(N, k)`` bit positions Spark sets for each byte string (``putBinary``).

    Returns:
        int64 positions in ``[0, bit_size)``.
    """
    words = ByteWords(offsets, data)  # gathered once for both hashes
    h1 = words.hash(seed if version == 2 else 0)
    h2 = words.hash(h1)
    return (_scatter_v2 if version == 2 else _scatter_v1)(h1, h2, k, bit_size)


class SparkBloomFilter:
    """A Spark sketch bloom filter: ``num_hash_functions`` and ``words`` (uint64 bits).

    Attributes:
        num_hash_functions: k.
        words: The bit array, ``bit_size // 64`` uint64 words (bit ``i`` = bit ``i & 63`` of
            word ``i >> 6``).
        version: 1 or 2 (the hashing scheme; writing always uses V1's layout for V1).
        seed: The V2 seed (0 for V1).
    """

    def __init__(
        self,
        num_hash_functions: int,
        words: npt.NDArray[np.uint64],
        version: int = 1,
        seed: int = 0,
    ) -> None:
        if num_hash_functions < 1 or len(words) < 1:
            raise ConfigError(
                f"A Spark bloom filter needs at least one hash function and one word, not "
                f"k={num_hash_functions} with {len(words)} words."
            )
        if version not in (1, 2):
            raise ConfigError(f"Spark bloom filter version {version} is unknown (1 or 2).")
        self.num_hash_functions = num_hash_functions
        self.words = np.ascontiguousarray(words, dtype=np.uint64)
        self.version = version
        self.seed = seed

    @classmethod
    def create(cls, ndv: int, fpp: float) -> SparkBloomFilter:
        """An empty V1 filter sized as ``BloomFilter.create(ndv, fpp)`` sizes it in Spark.

        Raises:
            ConfigError: ``ndv`` not positive or ``fpp`` not in (0, 1).
        """
        m, k = cls.sizing(ndv, fpp)
        return cls(k, np.zeros((m + 63) // 64, dtype=np.uint64))

    @staticmethod
    def sizing(ndv: int, fpp: float) -> tuple[int, int]:
        """Returns: ``(num_bits m, num_hash_functions k)`` of Spark's ``create(ndv, fpp)``.

        Raises:
            ConfigError: ``ndv`` not positive or ``fpp`` not in (0, 1).
        """
        if not isinstance(ndv, int) or isinstance(ndv, bool) or ndv <= 0:
            raise ConfigError(f"A bloom filter's ndv must be a positive integer, not {ndv!r}.")
        if not isinstance(fpp, float | int) or not 0.0 < float(fpp) < 1.0:
            raise ConfigError(f"A bloom filter's fpp must be in (0, 1), not {fpp!r}.")
        m = _optimal_num_bits(ndv, float(fpp))
        if m <= 0:
            raise ConfigError(f"ndv={ndv}, fpp={fpp} gives no bits for a bloom filter.")
        return m, _optimal_k(ndv, m)

    @property
    def bit_size(self) -> int:
        """Bits in the filter (``num_words * 64``)."""
        return len(self.words) * 64

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, SparkBloomFilter)
            and self.num_hash_functions == other.num_hash_functions
            and self.version == other.version
            and self.seed == other.seed
            and np.array_equal(self.words, other.words)
        )

    def __hash__(self) -> int:
        return hash((self.num_hash_functions, self.version, self.seed, self.words.tobytes()))

    def __repr__(self) -> str:
        return (
            f"SparkBloomFilter(version={self.version}, k={self.num_hash_functions}, "
            f"bit_size={self.bit_size}, bits_set={self.cardinality()})"
        )

    def cardinality(self) -> int:
        """Returns: the number of bits set."""
        return int(np.bitwise_count(self.words).sum())

    def positions_longs(self, values: Any) -> npt.NDArray[np.int64]:
        """Returns: the ``(N, k)`` bit positions of non-null integers (widened to long)."""
        return bit_positions_longs(
            _int64s(values), self.num_hash_functions, self.bit_size, self.version, self.seed
        )

    def positions_strings(self, values: Strings) -> npt.NDArray[np.int64]:
        """Returns: the ``(N, k)`` bit positions of non-null strings (UTF-8) or binaries."""
        offsets, data = _byte_strings(values)
        return bit_positions_bytes(
            offsets, data, self.num_hash_functions, self.bit_size, self.version, self.seed
        )

    def set_positions(self, positions: npt.NDArray[np.int64]) -> None:
        """Set the bits at ``positions`` (any shape)."""
        flat = positions.ravel()
        if len(flat) * 32 < self.bit_size:  # few: ufunc.at
            np.bitwise_or.at(
                self.words, flat >> 6, np.left_shift(np.uint64(1), (flat & 63).astype(np.uint64))
            )
            return
        # many: a bit per flag, packed LSB first into little-endian words (bit i of word w is
        # flag 64 * w + i), then OR-ed in
        flags = np.zeros(self.bit_size, dtype=np.bool_)
        flags[flat] = True
        packed = np.packbits(flags, bitorder="little").view("<u8")
        self.words |= packed.astype(np.uint64, copy=False)

    def test_positions(self, positions: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """Returns: per row of ``(N, k)`` positions, whether all its bits are set."""
        bits = (self.words[positions >> 6] >> (positions & 63).astype(np.uint64)) & np.uint64(1)
        return np.asarray(bits.astype(bool).all(axis=-1))

    def put_longs(self, values: Any) -> None:
        """``putLong`` of each non-null integer (an int64 numpy array or an Arrow integer array).

        Raises:
            ConfigError: An Arrow array that is not of an integer type.
        """
        self.set_positions(self.positions_longs(values))

    def put_strings(self, values: Strings) -> None:
        """``putString`` (UTF-8) / ``putBinary`` of each non-null value.

        Raises:
            ConfigError: Values that are not strings or binaries.
        """
        self.set_positions(self.positions_strings(values))

    def might_contain_longs(self, values: Any) -> npt.NDArray[np.bool_]:
        """Returns: ``mightContainLong`` of each non-null integer."""
        return self.test_positions(self.positions_longs(values))

    def might_contain_strings(self, values: Strings) -> npt.NDArray[np.bool_]:
        """Returns: ``mightContainString`` / ``mightContainBinary`` of each non-null value."""
        return self.test_positions(self.positions_strings(values))

    def merge(self, other: SparkBloomFilter) -> None:
        """``mergeInPlace``: OR in a compatible filter's bits.

        Raises:
            ConfigError: The filters differ in size, k, version or seed.
        """
        if (
            other.bit_size != self.bit_size
            or other.num_hash_functions != self.num_hash_functions
            or other.version != self.version
            or other.seed != self.seed
        ):
            raise ConfigError(f"Cannot merge {other!r} into {self!r}: they are not compatible.")
        self.words |= other.words

    # -- serialization ---------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """Returns: Spark's ``writeTo`` bytes (V1, or V2 for a V2 filter)."""
        num_words = len(self.words).to_bytes(4, "big")
        head = (
            (1).to_bytes(4, "big") + self.num_hash_functions.to_bytes(4, "big") + num_words
            if self.version == 1
            else (2).to_bytes(4, "big")
            + self.num_hash_functions.to_bytes(4, "big")
            + (self.seed & 0xFFFFFFFF).to_bytes(4, "big")
            + num_words
        )
        return head + self.words.astype(">u8").tobytes()

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> SparkBloomFilter:
        """Parse Spark's ``writeTo`` bytes (V1 or V2).

        Raises:
            CorruptFileError: An unknown version, or a length that does not match the header.
        """
        raw = bytes(data)
        if len(raw) < 12:
            raise CorruptFileError(f"A Spark bloom filter of {len(raw)} bytes is truncated.")
        version = int.from_bytes(raw[0:4], "big", signed=True)
        k = int.from_bytes(raw[4:8], "big", signed=True)
        if version == 1:
            seed, head = 0, 12
        elif version == 2:
            if len(raw) < 16:
                raise CorruptFileError(f"A V2 Spark bloom filter of {len(raw)} bytes is truncated.")
            seed, head = int.from_bytes(raw[8:12], "big", signed=True), 16
        else:
            raise CorruptFileError(
                f"Spark bloom filter version {version} is unknown (expected 1 or 2)."
            )
        num_words = int.from_bytes(raw[head - 4 : head], "big", signed=True)
        if num_words < 1 or len(raw) != head + 8 * num_words or k < 1:
            raise CorruptFileError(
                f"A V{version} Spark bloom filter header says k={k}, {num_words} words, but "
                f"{len(raw)} bytes hold {max(0, (len(raw) - head) / 8)} words."
            )
        words = np.frombuffer(raw, dtype=">u8", offset=head, count=num_words).astype(np.uint64)
        return cls(k, words, version, seed)

    def to_java_bytes(self) -> bytes:
        """Returns: xskipper's Java-serialized ``BloomFilterMetaData`` holding this V1 filter.

        Raises:
            ConfigError: The filter is V2 (xskipper's stored class is ``BloomFilterImpl``).
        """
        if self.version != 1:
            raise ConfigError("xskipper stores V1 filters (BloomFilterImpl); this one is V2.")
        payload = self.to_bytes()
        parts = [JAVA_PREFIX]
        for start in range(0, len(payload), _BLOCK_SIZE):
            block = payload[start : start + _BLOCK_SIZE]
            if len(block) > 255:
                parts.append(b"\x7a" + len(block).to_bytes(4, "big"))
            else:
                parts.append(b"\x77" + bytes([len(block)]))
            parts.append(block)
        parts.append(b"\x78")
        return b"".join(parts)

    @classmethod
    def from_java_bytes(cls, data: bytes | bytearray | memoryview) -> SparkBloomFilter:
        """Parse xskipper's Java-serialized ``BloomFilterMetaData`` (any class SUIDs).

        Raises:
            CorruptFileError: Not that object stream, or damaged block records.
        """
        raw = bytes(data)
        suid = slice(_SUID_OFFSET, _SUID_OFFSET + 8)
        head = raw[: len(JAVA_PREFIX)]
        if len(raw) < len(JAVA_PREFIX) + 1 or (
            head[: suid.start] != JAVA_PREFIX[: suid.start]
            or head[suid.stop :] != JAVA_PREFIX[suid.stop :]
        ):
            raise CorruptFileError(
                "The bytes are not xskipper's serialized BloomFilterMetaData holding a "
                "BloomFilterImpl (the Java object stream head differs)."
            )
        pos = len(JAVA_PREFIX)
        blocks: list[bytes] = []
        while pos < len(raw) and raw[pos] != 0x78:
            tag = raw[pos]
            if tag == 0x77 and pos + 2 <= len(raw):
                size, pos = raw[pos + 1], pos + 2
            elif tag == 0x7A and pos + 5 <= len(raw):
                size, pos = int.from_bytes(raw[pos + 1 : pos + 5], "big"), pos + 5
            else:
                raise CorruptFileError(
                    f"Byte {pos} of a serialized bloom filter is 0x{tag:02x}, not a block record."
                )
            if pos + size > len(raw):
                raise CorruptFileError(
                    f"A block record at byte {pos} of a serialized bloom filter is truncated."
                )
            blocks.append(raw[pos : pos + size])
            pos += size
        if pos >= len(raw):
            raise CorruptFileError("A serialized bloom filter ends without TC_ENDBLOCKDATA.")
        return cls.from_bytes(b"".join(blocks))

    @classmethod
    def union(cls, filters: Iterable[SparkBloomFilter]) -> SparkBloomFilter | None:
        """Returns: the OR of compatible filters, or None for none."""
        result: SparkBloomFilter | None = None
        for f in filters:
            if result is None:
                result = cls(f.num_hash_functions, f.words.copy(), f.version, f.seed)
            else:
                result.merge(f)
        return result
