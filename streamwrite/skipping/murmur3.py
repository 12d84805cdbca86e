"""Spark's ``Murmur3_x86_32`` (``org.apache.spark.unsafe.hash``), vectorised over numpy arrays.

Spark's variant differs from reference Murmur3 in its byte hashing, which Spark's sketch
``BloomFilter`` uses for strings and binaries (``hashUnsafeBytes``)::

    mix_k1(k)     = rotl32(k * 0xcc9e2d51, 15) * 0x1b873593
    mix_h1(h, k)  = rotl32(h ^ k, 13) * 5 + 0xe6546b64
    fmix(h, len)  = h ^= len; h ^= h >>> 16; h *= 0x85ebca6b; h ^= h >>> 13;
                    h *= 0xc2b2ae35; h ^= h >>> 16
    hash_long(v, seed)  = fmix(mix_h1(mix_h1(seed, mix_k1(low32(v))), mix_k1(high32(v))), 8)
    hash_bytes(b, seed) = h = seed
                          for each 4-byte little-endian word w of b[: len - len % 4]:
                              h = mix_h1(h, mix_k1(w))
                          for each tail byte t of b[len - len % 4:]:     # NOT standard Murmur3:
                              h = mix_h1(h, mix_k1(sign_extend_8_to_32(t)))  # a full round each
                          fmix(h, len)

All arithmetic is on uint32 and wraps (numpy arrays wrap silently). Byte strings arrive as an
Arrow-style ``(offsets, data)`` pair; the kernel visits word position ``j`` for only the values
that have a ``j``-th word (values sorted by word count, longest first, so the active ones are a
prefix), so its work is the total number of words, not ``num_values * max_words``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["hash_bytes", "hash_longs"]

_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_N = np.uint32(0xE6546B64)
_F1 = np.uint32(0x85EBCA6B)
_F2 = np.uint32(0xC2B2AE35)
_FIVE = np.uint32(5)

U32 = npt.NDArray[np.uint32]


def _rotl(x: U32, r: int) -> U32:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix_k1(k: U32) -> U32:
    return _rotl(k * _C1, 15) * _C2


def _mix_h1(h: U32, k: U32) -> U32:
    return _rotl(h ^ k, 13) * _FIVE + _N


def _fmix(h: U32, length: U32) -> U32:
    h = h ^ length
    h = h ^ (h >> np.uint32(16))
    h = h * _F1
    h = h ^ (h >> np.uint32(13))
    h = h * _F2
    return h ^ (h >> np.uint32(16))


def _as_seed(seed: int | npt.NDArray[np.int32] | U32, n: int) -> U32:
    if isinstance(seed, int):
        return np.full(n, seed & 0xFFFFFFFF, dtype=np.uint32)
    return np.ascontiguousarray(seed).astype(np.uint32, copy=True)


def hash_longs(values: npt.NDArray[np.int64], seed: int | npt.NDArray[np.int32]) -> U32:
    """``Murmur3_x86_32.hashLong`` of each value.

    Args:
        values: int64 values.
        seed: One seed for all, or one per value (int32 or uint32 bits).

    Returns:
        The hashes as uint32 (view as int32 for Java's signed ints).
    """
    bits = np.ascontiguousarray(values, dtype=np.int64).view(np.uint64)
    low = (bits & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    high = (bits >> np.uint64(32)).astype(np.uint32)
    h = _mix_h1(_as_seed(seed, len(bits)), _mix_k1(low))
    h = _mix_h1(h, _mix_k1(high))
    return _fmix(h, np.uint32(8) + np.zeros_like(h))


def hash_bytes(
    offsets: npt.NDArray[np.int64],
    data: npt.NDArray[np.uint8],
    seed: int | npt.NDArray[np.int32] | U32,
) -> U32:
    """``Murmur3_x86_32.hashUnsafeBytes`` of each byte string ``data[offsets[i]:offsets[i+1]]``.

    Args:
        offsets: ``num_values + 1`` non-decreasing int64 offsets into ``data``.
        data: The concatenated bytes.
        seed: One seed for all, or one per value.

    Returns:
        The hashes as uint32.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    n = len(offsets) - 1
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    h = _as_seed(seed, n)
    if n == 0:
        return h
    num_words = lengths >> 2
    order = np.argsort(-num_words, kind="stable")
    sorted_words = num_words[order]
    sorted_starts = starts[order]
    hs = h[order]
    # Pad so the 4-byte gathers below never read past the end.
    padded = np.zeros(len(data) + 4, dtype=np.uint32)
    padded[: len(data)] = data
    max_words = int(sorted_words[0]) if n else 0
    # active[j] = number of values with more than j words (a prefix of the sorted order).
    active = n - np.searchsorted(sorted_words[::-1], np.arange(max_words), side="right")
    for j in range(max_words):
        count = int(active[j])
        pos = sorted_starts[:count] + 4 * j
        word = (
            padded[pos]
            | (padded[pos + 1] << np.uint32(8))
            | (padded[pos + 2] << np.uint32(16))
            | (padded[pos + 3] << np.uint32(24))
        )
        hs[:count] = _mix_h1(hs[:count], _mix_k1(word))
    h[order] = hs
    tails = lengths & 3
    aligned_ends = starts + (num_words << 2)
    for t in range(3):
        (idx,) = np.nonzero(tails > t)
        if len(idx) == 0:
            break
        byte = data[aligned_ends[idx] + t].astype(np.int8).astype(np.int32).view(np.uint32)
        h[idx] = _mix_h1(h[idx], _mix_k1(byte))
    return _fmix(h, lengths.astype(np.uint32))
