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
Arrow-style ``(offsets, data)`` pair; :class:`ByteWords` groups the values by byte length and
gathers each group's bytes once into a ``(values, words)`` matrix (one fancy index per group), so
the hash is one vectorised round per word column of each group, and a bloom filter's two hashes
(``h1``, then ``h2`` seeded with it) share the gather. Its work is the total number of words.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["ByteWords", "hash_bytes", "hash_longs"]

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


class ByteWords:
    """Byte strings cut into the words the hash reads, once for any number of seeds: per
    distinct byte length, the values of that length as a ``(count, words)`` uint32 matrix of
    little-endian words and a ``(count, tail)`` matrix of sign-extended tail bytes."""

    def __init__(self, offsets: npt.NDArray[np.int64], data: npt.NDArray[np.uint8]) -> None:
        offsets = np.asarray(offsets, dtype=np.int64)
        starts = offsets[:-1]
        self.lengths = offsets[1:] - starts
        self.num_values = len(self.lengths)
        self.groups: list[tuple[npt.NDArray[np.intp], U32, U32]] = []
        if not self.num_values:
            return
        data = np.asarray(data, dtype=np.uint8)
        order = np.argsort(self.lengths, kind="stable")
        sorted_lengths = self.lengths[order]
        cuts = np.flatnonzero(np.diff(sorted_lengths)) + 1
        for members in np.split(order, cuts):
            length = int(self.lengths[members[0]])
            if length:  # one gather of every byte of this group's values
                block = data[starts[members][:, None] + np.arange(length)]
            else:
                block = np.zeros((len(members), 0), dtype=np.uint8)
            num_words = length >> 2
            words = np.ascontiguousarray(block[:, : num_words * 4]).view("<u4")
            tail = block[:, num_words * 4 :].view(np.int8).astype(np.int32).view(np.uint32)
            self.groups.append((members, words.astype(np.uint32, copy=False), tail))

    def hash(self, seed: int | npt.NDArray[np.int32] | U32) -> U32:
        """Returns: ``hashUnsafeBytes`` of each value with ``seed`` (one, or one per value)."""
        seeds = _as_seed(seed, self.num_values)
        h = np.empty(self.num_values, dtype=np.uint32)
        for members, words, tail in self.groups:
            hs = seeds[members]
            for j in range(words.shape[1]):
                hs = _mix_h1(hs, _mix_k1(words[:, j]))
            for j in range(tail.shape[1]):
                hs = _mix_h1(hs, _mix_k1(tail[:, j]))
            h[members] = hs
        return _fmix(h, self.lengths.astype(np.uint32))


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
    return ByteWords(offsets, data).hash(seed)
