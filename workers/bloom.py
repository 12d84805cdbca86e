"""Split block Bloom filters (Parquet format, section 6 "Bloom Filter"), vectorised.

Layout of the bitset (``BloomFilterHeader.numBytes`` bytes, after the Thrift header)::

    bitset := block[z]                       z = numBytes / 32, 1 <= z < 2**31
    block  := word[8]                        256 bits
    word   := u32 little-endian

Rules, straight from the spec:

* A value is hashed with XXH64 (seed 0, spec 0.1.1) over its PLAIN encoding: INT32/FLOAT 4 bytes
  LE, INT64/DOUBLE 8 bytes LE, INT96 12 bytes, FIXED_LEN_BYTE_ARRAY its bytes, BYTE_ARRAY its bytes
  *without* the 4-byte length prefix. BOOLEAN columns get no filter (Arrow refuses them too).
* ``filter_insert(h)``: block ``i = ((h >> 32) * z) >> 32``; with ``x = h & 0xFFFFFFFF``, word ``k``
  of block ``i`` gets bit ``(x * salt[k] mod 2**32) >> 27`` set, for ``k`` in 0..7.
* ``filter_check(h)``: true iff all eight of those bits are set.

Sizing follows parquet-java / Arrow (``OptimalNumOfBits``): ``m = -8 * ndv / ln(1 - fpp ** (1/8))``
bits, truncated to an integer, raised to at least 32 bytes, rounded up to a power of two and
clamped to ``max_bytes``.

Everything here works on whole arrays: XXH64 is evaluated with wrapping ``uint64`` numpy arithmetic
one 8/4/1-byte lane at a time over all values of the same length, and insertion is one
``np.bitwise_or.at`` over a ``uint32`` view of the bitset.
"""

from __future__ import annotations

import itertools
import math
from typing import Final

import numpy as np
import numpy.typing as npt
import xxhash

from streamwrite.errors import ConfigError, FormatError, UnsupportedError
from streamwrite.format.enums import Type
from workers.values import BinaryValues

__all__ = [
    "BLOOM_BLOCK_SIZE",
    "BLOOM_MAX_BYTES",
    "BLOOM_MIN_BYTES",
    "SALT",
    "SplitBlockBloomFilter",
    "hash_values",
    "optimal_num_bytes",
]

BLOOM_BLOCK_SIZE: Final = 32
"""Bytes per block (eight 32-bit words)."""
BLOOM_MIN_BYTES: Final = 32
"""Smallest bitset we size (one block), as Arrow's ``kMinimumBloomFilterBytes``."""
BLOOM_MAX_BYTES: Final = 128 * 1024 * 1024
"""Largest bitset we size by default, as Arrow's ``kMaximumBloomFilterBytes``."""
SALT: Final = (
    0x47B6137B,
    0x44974D91,
    0x8824AD5B,
    0xA2B7289D,
    0x705495C7,
    0x2DF1424B,
    0x9EFC4947,
    0x5C6BFB31,
)
"""The eight odd constants of the spec's ``mask`` operation."""

_SALT = np.array(SALT, dtype=np.uint32)
_SHIFT27 = np.uint32(27)
_ONE = np.uint32(1)
_U32_MASK = np.uint64(0xFFFFFFFF)

# XXH64 primes.
_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)
_V1_INIT = np.uint64((0x9E3779B185EBCA87 + 0xC2B2AE3D27D4EB4F) % 2**64)
_V4_INIT = np.uint64(-0x9E3779B185EBCA87 % 2**64)

# A group of same-length BYTE_ARRAY values is hashed vectorised when it holds at least this many
# values and at least length // _VECTOR_BYTES_PER_VALUE of them; smaller groups go to the xxhash
# library value by value (a vectorised lane costs a few microseconds whatever the group size).
_VECTOR_MIN_GROUP = 48
_VECTOR_BYTES_PER_VALUE = 2

U64Array = npt.NDArray[np.uint64]


def optimal_num_bytes(ndv: int, fpp: float, *, max_bytes: int = BLOOM_MAX_BYTES) -> int:
    """Bitset size for ``ndv`` distinct values at false-positive probability ``fpp``.

    Args:
        ndv: Expected number of distinct values (0 gives the minimum size).
        fpp: Target false-positive probability, strictly between 0 and 1.
        max_bytes: Upper bound on the result; a power of two, at least 32.

    Returns:
        A power of two number of bytes in ``[32, max_bytes]``, equal to what Arrow writes for the
        same ``ndv`` and ``fpp``.

    Raises:
        ConfigError: If ``fpp`` is not in (0, 1), ``ndv`` is negative or ``max_bytes`` is not a
            power of two of at least 32.
    """
    if not 0.0 < fpp < 1.0:
        raise ConfigError(f"A Bloom filter fpp must be between 0 and 1 exclusive, got {fpp!r}.")
    if ndv < 0:
        raise ConfigError(f"A Bloom filter ndv must not be negative, got {ndv}.")
    if max_bytes < BLOOM_MIN_BYTES or max_bytes & (max_bytes - 1):
        raise ConfigError(
            f"A Bloom filter max_bytes must be a power of two of at least 32, got {max_bytes}."
        )
    m = -8.0 * ndv / math.log(1.0 - fpp ** (1.0 / 8.0))
    max_bits = max_bytes * 8
    num_bits = max_bits if m > max_bits else max(int(m), BLOOM_MIN_BYTES * 8)
    num_bits = 1 << (num_bits - 1).bit_length()
    return min(num_bits, max_bits) // 8


# --- XXH64 over arrays ------------------------------------------------------------------------


def _rotl(x: U64Array, r: int) -> U64Array:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _round(acc: U64Array, lane: U64Array) -> U64Array:
    acc = acc + lane * _P2
    return _rotl(acc, 31) * _P1


def _avalanche(h: U64Array) -> U64Array:
    h = h ^ (h >> np.uint64(33))
    h = h * _P2
    h = h ^ (h >> np.uint64(29))
    h = h * _P3
    return h ^ (h >> np.uint64(32))


def _xxh64_u64(lanes: U64Array) -> U64Array:
    """XXH64 of 8-byte inputs given as their little-endian uint64 values."""
    h = np.full(lanes.shape, _P5 + np.uint64(8), dtype=np.uint64)
    h ^= _round(np.zeros_like(lanes), lanes)
    h = _rotl(h, 27) * _P1 + _P4
    return _avalanche(h)


def _xxh64_u32(lanes: npt.NDArray[np.uint32]) -> U64Array:
    """XXH64 of 4-byte inputs given as their little-endian uint32 values."""
    h = np.full(lanes.shape, _P5 + np.uint64(4), dtype=np.uint64)
    h ^= lanes.astype(np.uint64) * _P1
    h = _rotl(h, 23) * _P2 + _P3
    return _avalanche(h)


def _xxh64_matrix(mat: npt.NDArray[np.uint8]) -> U64Array:
    """XXH64 (seed 0) of each row of a ``(n, length)`` uint8 matrix, vectorised over rows."""
    n, length = mat.shape
    if length == 8:
        return _xxh64_u64(np.ascontiguousarray(mat).view("<u8").reshape(n).astype(np.uint64))
    if length == 4:
        return _xxh64_u32(np.ascontiguousarray(mat).view("<u4").reshape(n).astype(np.uint32))
    if length == 0:
        return _avalanche(np.full(n, _P5, dtype=np.uint64))
    padded_width = -(-length // 8) * 8
    if padded_width == length:
        padded = np.ascontiguousarray(mat)
    else:
        padded = np.zeros((n, padded_width), dtype=np.uint8)
        padded[:, :length] = mat
    words = padded.view("<u8")  # (n, padded_width // 8), little-endian lanes

    def lane(k: int) -> U64Array:
        return words[:, k].astype(np.uint64)

    pos = 0
    if length >= 32:
        v1 = np.full(n, _V1_INIT, dtype=np.uint64)
        v2 = np.full(n, _P2, dtype=np.uint64)
        v3 = np.zeros(n, dtype=np.uint64)
        v4 = np.full(n, _V4_INIT, dtype=np.uint64)
        while pos + 32 <= length:
            k = pos // 8
            v1 = _round(v1, lane(k))
            v2 = _round(v2, lane(k + 1))
            v3 = _round(v3, lane(k + 2))
            v4 = _round(v4, lane(k + 3))
            pos += 32
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        zero = np.zeros(n, dtype=np.uint64)
        for v in (v1, v2, v3, v4):
            h = (h ^ _round(zero, v)) * _P1 + _P4
    else:
        h = np.full(n, _P5, dtype=np.uint64)
    h += np.uint64(length)
    zero = np.zeros(n, dtype=np.uint64)
    while pos + 8 <= length:
        h ^= _round(zero, lane(pos // 8))
        h = _rotl(h, 27) * _P1 + _P4
        pos += 8
    if pos + 4 <= length:
        low = lane(pos // 8) & _U32_MASK  # pos is a multiple of 8 here
        h ^= low * _P1
        h = _rotl(h, 23) * _P2 + _P3
        pos += 4
    while pos < length:
        h ^= mat[:, pos].astype(np.uint64) * _P5
        h = _rotl(h, 11) * _P1
        pos += 1
    return _avalanche(h)


def _hash_binary(values: BinaryValues) -> U64Array:
    n = len(values)
    out = np.empty(n, dtype=np.uint64)
    if n == 0:
        return out
    starts = values.offsets[:-1]
    lengths = values.lengths
    # Stable sort of small integers is a radix sort in numpy: O(n) for lengths < 65536.
    keys = lengths.astype(np.uint16) if int(lengths.max()) < 1 << 16 else lengths
    order = np.argsort(keys, kind="stable")
    sorted_lengths = lengths[order]
    cuts = np.flatnonzero(np.diff(sorted_lengths)) + 1
    bounds = np.concatenate(([0], cuts, [n])).tolist()
    data = values.data
    slow: list[npt.NDArray[np.intp]] = []
    windows: npt.NDArray[np.uint8] | None = None
    for a, b in itertools.pairwise(bounds):
        idx = order[a:b]
        length = int(sorted_lengths[a])
        count = b - a
        if count < _VECTOR_MIN_GROUP or count * _VECTOR_BYTES_PER_VALUE < length:
            slow.append(idx)
            continue
        if windows is None or windows.shape[1] != length:
            windows = np.lib.stride_tricks.sliding_window_view(data, length)
        out[idx] = _xxh64_matrix(windows[starts[idx]])  # row gather: one copy per value
    if slow:
        idx = np.concatenate(slow)
        raw = memoryview(data.tobytes()) if not data.flags.c_contiguous else data.data
        s = starts[idx].tolist()
        e = values.offsets[1:][idx].tolist()
        digest = xxhash.xxh64_intdigest
        out[idx] = np.fromiter(
            (digest(raw[x:y]) for x, y in zip(s, e, strict=True)), dtype=np.uint64, count=len(s)
        )
    return out


def hash_values(values: np.ndarray | BinaryValues, physical_type: Type) -> U64Array:
    """XXH64 (seed 0) of each value's PLAIN encoding, as Bloom filters use them.

    Args:
        values: Non-null values in the in-memory form of :mod:`workers.values`.
        physical_type: The column's physical type.

    Returns:
        One ``uint64`` hash per value.

    Raises:
        UnsupportedError: For BOOLEAN (no Bloom filter is defined for it in practice).
        ConfigError: If ``values`` does not have the form ``physical_type`` needs.
    """
    if physical_type == Type.BYTE_ARRAY:
        if not isinstance(values, BinaryValues):
            raise ConfigError("BYTE_ARRAY values must be given as BinaryValues.")
        return _hash_binary(values)
    if isinstance(values, BinaryValues):
        raise ConfigError(f"BinaryValues cannot hold {physical_type.name} values.")
    if physical_type == Type.BOOLEAN:
        raise UnsupportedError("Bloom filters are not supported for BOOLEAN columns.")
    if physical_type in (Type.INT64, Type.DOUBLE):
        dtype = "<i8" if physical_type == Type.INT64 else "<f8"
        lanes = np.ascontiguousarray(values, dtype=dtype).view("<u8").astype(np.uint64)
        return _xxh64_u64(lanes)
    if physical_type in (Type.INT32, Type.FLOAT):
        dtype = "<i4" if physical_type == Type.INT32 else "<f4"
        words = np.ascontiguousarray(values, dtype=dtype).view("<u4").astype(np.uint32)
        return _xxh64_u32(words)
    if physical_type in (Type.FIXED_LEN_BYTE_ARRAY, Type.INT96):
        if values.dtype != np.uint8 or values.ndim != 2:
            raise ConfigError(
                f"{physical_type.name} values must be a 2-D uint8 array, got {values.dtype} "
                f"with shape {values.shape}."
            )
        return _xxh64_matrix(values)
    raise ConfigError(f"Unknown physical type {physical_type!r}.")


# --- the filter -------------------------------------------------------------------------------


def _block_index(hashes: U64Array, num_blocks: int) -> npt.NDArray[np.intp]:
    top = hashes >> np.uint64(32)
    return ((top * np.uint64(num_blocks)) >> np.uint64(32)).astype(np.intp)


def _masks(hashes: U64Array) -> npt.NDArray[np.uint32]:
    """The spec's ``mask``: for each hash an (8,) row of single-bit words."""
    x = (hashes & _U32_MASK).astype(np.uint32)
    bits = (x[:, None] * _SALT[None, :]) >> _SHIFT27
    masks: npt.NDArray[np.uint32] = np.left_shift(np.uint32(1), bits, dtype=np.uint32)
    return masks


class SplitBlockBloomFilter:
    """A split block Bloom filter over a zero-initialised bitset of ``num_bytes`` bytes."""

    __slots__ = ("_bitset", "_words")

    def __init__(self, num_bytes: int) -> None:
        """Create an empty filter.

        Args:
            num_bytes: Bitset size; a power of two, at least 32 and below 2**36.

        Raises:
            ConfigError: If ``num_bytes`` is not a valid bitset size.
        """
        _check_size(num_bytes, ConfigError)
        self._bitset = np.zeros(num_bytes, dtype=np.uint8)
        self._words = self._bitset.view("<u4").reshape(-1, 8)

    @classmethod
    def from_bitset(cls, data: bytes | bytearray | memoryview) -> SplitBlockBloomFilter:
        """Wrap a bitset read from a file (copied).

        Returns:
            A filter whose :attr:`bitset` equals ``data``.

        Raises:
            FormatError: If the size is not a power of two of at least 32 bytes.
        """
        size = len(memoryview(data).cast("B"))
        _check_size(size, FormatError)
        bloom = cls.__new__(cls)
        bloom._bitset = np.frombuffer(data, dtype=np.uint8).copy()
        bloom._words = bloom._bitset.view("<u4").reshape(-1, 8)
        return bloom

    @property
    def num_bytes(self) -> int:
        """Size of the bitset in bytes (``BloomFilterHeader.numBytes``)."""
        return int(self._bitset.shape[0])

    @property
    def num_blocks(self) -> int:
        """Number of 256-bit blocks (``z`` in the spec)."""
        return int(self._words.shape[0])

    @property
    def bitset(self) -> bytes:
        """The bitset as written to a file: blocks of eight little-endian uint32 words."""
        return self._bitset.tobytes()

    def insert_hashes(self, hashes: U64Array) -> None:
        """Insert XXH64 hashes (``filter_insert`` for each), vectorised."""
        h = np.asarray(hashes, dtype=np.uint64).reshape(-1)
        if h.shape[0] == 0:
            return
        blocks = _block_index(h, self.num_blocks)
        x = (h & _U32_MASK).astype(np.uint32)
        for k in range(8):  # one column of words at a time keeps temporaries at n values
            bits = (x * _SALT[k]) >> _SHIFT27
            np.bitwise_or.at(self._words[:, k], blocks, np.left_shift(_ONE, bits))

    def check_hashes(self, hashes: U64Array) -> npt.NDArray[np.bool_]:
        """``filter_check`` for each hash.

        Returns:
            A boolean array: False means the value is certainly absent.
        """
        h = np.asarray(hashes, dtype=np.uint64).reshape(-1)
        masks = _masks(h)
        words = self._words[_block_index(h, self.num_blocks)]
        result: npt.NDArray[np.bool_] = np.all((words & masks) == masks, axis=1)
        return result

    def check_hash(self, h: int) -> bool:
        """``filter_check`` for one hash.

        Returns:
            False if the value is certainly absent.
        """
        return bool(self.check_hashes(np.array([h], dtype=np.uint64))[0])


def _check_size(num_bytes: int, error: type[ConfigError] | type[FormatError]) -> None:
    if num_bytes < BLOOM_BLOCK_SIZE or num_bytes & (num_bytes - 1) or num_bytes >= 1 << 36:
        raise error(
            f"A Bloom filter bitset must be a power of two of at least 32 bytes, "
            f"got {num_bytes} bytes."
        )
