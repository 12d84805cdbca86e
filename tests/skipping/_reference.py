"""Per-value pure-Python reference of Spark's Murmur3_x86_32 and sketch BloomFilter (V1, V2).

Written from the Java sources (``Murmur3_x86_32``, ``BloomFilterImpl``, ``BloomFilterImplV2``),
one value at a time, to check the vectorised kernels of :mod:`streamwrite.skipping`.
"""

from __future__ import annotations

M32 = 0xFFFFFFFF


def _int32(x: int) -> int:
    x &= M32
    return x - (1 << 32) if x & 0x80000000 else x


def _rotl(x: int, r: int) -> int:
    x &= M32
    return ((x << r) | (x >> (32 - r))) & M32


def mix_k1(k: int) -> int:
    return (_rotl((k * 0xCC9E2D51) & M32, 15) * 0x1B873593) & M32


def mix_h1(h: int, k: int) -> int:
    return (_rotl((h ^ k) & M32, 13) * 5 + 0xE6546B64) & M32


def fmix(h: int, length: int) -> int:
    h ^= length
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    h ^= h >> 16
    return _int32(h)


def hash_long(v: int, seed: int) -> int:
    v &= (1 << 64) - 1
    h = mix_h1(seed & M32, mix_k1(v & M32))
    h = mix_h1(h, mix_k1(v >> 32))
    return fmix(h, 8)


def hash_bytes(b: bytes, seed: int) -> int:
    h = seed & M32
    aligned = len(b) - len(b) % 4
    for i in range(0, aligned, 4):
        h = mix_h1(h, mix_k1(int.from_bytes(b[i : i + 4], "little")))
    for i in range(aligned, len(b)):
        signed = b[i] - 256 if b[i] >= 128 else b[i]
        h = mix_h1(h, mix_k1(signed & M32))
    return fmix(h, len(b))


def positions(h1: int, h2: int, k: int, bit_size: int, version: int) -> list[int]:
    out = []
    if version == 1:
        for i in range(1, k + 1):
            c = _int32(h1 + i * h2)
            if c < 0:
                c = ~c
            out.append(c % bit_size)
    else:
        c = h1 * 2147483647
        for _ in range(k):
            c = c + h2
            c = ((c + 2**63) % 2**64) - 2**63
            out.append((~c if c < 0 else c) % bit_size)
    return out


def long_positions(v: int, k: int, bit_size: int, version: int = 1, seed: int = 0) -> list[int]:
    h1 = hash_long(v, seed if version == 2 else 0)
    return positions(h1, hash_long(v, h1), k, bit_size, version)


def bytes_positions(b: bytes, k: int, bit_size: int, version: int = 1, seed: int = 0) -> list[int]:
    h1 = hash_bytes(b, seed if version == 2 else 0)
    return positions(h1, hash_bytes(b, h1), k, bit_size, version)


def build_words(
    items: list[int] | list[bytes], k: int, num_words: int, version: int = 1, seed: int = 0
) -> list[int]:
    """The filter's words after putting ``items`` (ints as longs, bytes as binaries)."""
    words = [0] * num_words
    for item in items:
        if isinstance(item, bytes):
            pos = bytes_positions(item, k, num_words * 64, version, seed)
        else:
            pos = long_positions(item, k, num_words * 64, version, seed)
        for p in pos:
            words[p >> 6] |= 1 << (p & 63)
    return words
