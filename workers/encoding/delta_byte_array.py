"""DELTA_BYTE_ARRAY encoding (``Encoding.DELTA_BYTE_ARRAY``), front compression.

parquet-format Encodings.md, "Delta Strings: (DELTA_BYTE_ARRAY = 7)", for BYTE_ARRAY and
FIXED_LEN_BYTE_ARRAY::

    delta-byte-array := <prefix lengths> <suffixes>
    prefix lengths   := DELTA_BINARY_PACKED(INT32 length of the prefix shared with the previous
                        value; 0 for the first value)
    suffixes         := DELTA_LENGTH_BYTE_ARRAY(each value without that prefix)

Example: "axis", "axle", "babble", "babyhood" -> DeltaEncoding(0, 2, 0, 3),
DeltaEncoding(4, 2, 6, 5), "axislebabbleyhood". FIXED_LEN_BYTE_ARRAY values store every
length too.

Encoding compares each value with the previous one 8 bytes at a time (the XOR of two unaligned
uint64 loads; its lowest set bit marks the first differing byte), word by word for the few pairs
still equal, then copies the suffixes out with one Arrow ``take``. Decoding places the suffix
bytes directly and resolves prefix bytes, which may chain back through many values, by pointer
doubling (``log2`` of the longest chain passes over the prefix bytes).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from streamwrite.errors import ConfigError, FormatError, LimitError
from workers.encoding._varint import Buffer, as_uint8
from workers.encoding.delta_binary_packed import (
    decode_delta_binary_packed,
    decode_delta_binary_packed_reference,
    encode_delta_binary_packed,
    encode_delta_binary_packed_reference,
)
from workers.encoding.delta_length_byte_array import (
    decode_delta_length_byte_array,
    decode_delta_length_byte_array_reference,
    encode_delta_length_byte_array_reference,
)
from workers.values import BinaryValues

__all__ = [
    "MAX_DECODED_SIZE",
    "decode_delta_byte_array",
    "decode_delta_byte_array_reference",
    "encode_delta_byte_array",
    "encode_delta_byte_array_reference",
]

MAX_DECODED_SIZE = 1 << 31
"""Decoded bytes one call may produce: prefixes let a few input bytes declare huge values."""

_CHUNK = 1 << 20  # words compared per numpy pass in _finish_long
_WORD_ROUNDS = 4
_MAX_LENGTH = (1 << 31) - 1


def _as_binary(values: BinaryValues | npt.NDArray[np.uint8]) -> BinaryValues:
    if isinstance(values, BinaryValues):
        return values
    arr = np.asarray(values)
    if arr.dtype != np.uint8 or arr.ndim != 2:
        raise ConfigError("FIXED_LEN_BYTE_ARRAY values must be a uint8 array (n, type_length).")
    n, width = arr.shape
    offsets = np.arange(n + 1, dtype=np.int64) * width
    return BinaryValues(offsets, np.ascontiguousarray(arr).reshape(-1))


def _load_words(
    words: npt.NDArray[np.uint64], byte_offsets: npt.NDArray[np.int64]
) -> npt.NDArray[np.uint64]:
    """The 8 little-endian bytes at each byte offset of the stream held in aligned ``words``
    (two aligned gathers, shifted and OR-ed; numpy shifts by 64 give 0)."""
    index = byte_offsets >> 3
    shift = ((byte_offsets & 7) << 3).view(np.uint64)
    low = np.take(words, index)
    low >>= shift
    index += 1
    high = np.take(words, index)
    high <<= np.uint64(64) - shift
    low |= high
    return low


def _equal_bytes(
    words: npt.NDArray[np.uint64],
    cur: npt.NDArray[np.int64],
    prev: npt.NDArray[np.int64],
    limit: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Leading equal bytes of the 8-byte words at ``cur`` and ``prev`` (at most ``limit``), and
    whether all 8 bytes were equal and more than 8 remain to compare."""
    diff = _load_words(words, cur)
    diff ^= _load_words(words, prev)
    lowest = diff & (~diff + np.uint64(1))  # the lowest differing bit alone (0 if none)
    _, exponent = np.frexp(lowest.astype(np.float64))  # exact: a power of two
    equal = np.where(diff == 0, 8, (exponent - 1) >> 3).astype(np.int64)
    return np.minimum(equal, limit), (diff == 0) & (limit > 8)


def _prefix_lengths(values: BinaryValues) -> npt.NDArray[np.int64]:
    """Length of the prefix each value shares with the previous one (0 for the first).

    Compares 8 bytes at a time: the XOR of the two values' next words, whose lowest set bit
    gives the first differing byte. Pairs whose first 8 bytes are equal go on word by word
    (fewer each round); pairs still equal after :data:`_WORD_ROUNDS` words are finished by one
    flat comparison of all their remaining words, in chunks.
    """
    n = len(values)
    prefix = np.zeros(n, dtype=np.int64)
    if n < 2:
        return prefix
    base = int(values.offsets[0])
    size = int(values.offsets[-1]) - base
    words = np.zeros(size // 8 + 2, dtype=np.uint64)
    words.view(np.uint8)[:size] = values.data[base : base + size]
    starts = values.offsets[:-1] - base
    lengths = values.lengths
    common = np.minimum(lengths[1:], lengths[:-1])
    who = np.flatnonzero(common)
    cur = starts[1:][who]
    prev = starts[:-1][who]
    limit = common[who]
    done = 0
    for _ in range(_WORD_ROUNDS):
        equal, more = _equal_bytes(words, cur, prev, limit)
        prefix[who + 1] = done + equal
        if not more.any():
            return prefix
        who, cur, prev, limit = who[more], cur[more] + 8, prev[more] + 8, limit[more] - 8
        done += 8
    _finish_long(words, prefix, who, cur, prev, limit, done)
    return prefix


def _finish_long(
    words: npt.NDArray[np.uint64],
    prefix: npt.NDArray[np.int64],
    who: npt.NDArray[np.int64],
    cur: npt.NDArray[np.int64],
    prev: npt.NDArray[np.int64],
    limit: npt.NDArray[np.int64],
    done: int,
) -> None:
    """Finish the pairs ``who`` (``done`` bytes equal so far, ``limit`` left to compare) with
    every remaining word at once, about :data:`_CHUNK` words per numpy pass."""
    num_words = (limit + 7) >> 3
    ends = np.cumsum(num_words)
    begin = 0
    count = int(who.shape[0])
    while begin < count:
        stop = int(np.searchsorted(ends, (int(ends[begin - 1]) if begin else 0) + _CHUNK, "right"))
        stop = min(max(begin + 1, stop), count)
        span = num_words[begin:stop]
        owner = np.repeat(np.arange(stop - begin), span)
        step = (np.arange(int(span.sum()), dtype=np.int64) - (np.cumsum(span) - span)[owner]) << 3
        equal, _ = _equal_bytes(
            words,
            cur[begin:stop][owner] + step,
            prev[begin:stop][owner] + step,
            limit[begin:stop][owner] - step,
        )
        # The first word of each pair that is not all equal ends its prefix; else the limit.
        result = done + limit[begin:stop]
        short = np.flatnonzero(equal < np.minimum(limit[begin:stop][owner] - step, 8))
        if short.size:
            first = np.ones(short.shape[0], dtype=np.bool_)
            first[1:] = owner[short[1:]] != owner[short[:-1]]
            hit = short[first]
            result[owner[hit]] = done + step[hit] + equal[hit]
        prefix[who[begin:stop] + 1] = result
        begin = stop


def _range_mask(
    size: int, starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    """Boolean mask of ``size`` positions, True inside the disjoint ranges [start, start+len)."""
    marks = np.zeros(size + 1, dtype=np.int8)
    marks[starts] += 1  # starts are distinct, and so are the ends
    marks[starts + lengths] -= 1
    return np.cumsum(marks[:size], dtype=np.int8) > 0


def encode_delta_byte_array(values: BinaryValues | npt.NDArray[np.uint8]) -> bytes:
    """Encode BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY values with DELTA_BYTE_ARRAY.

    Args:
        values: BinaryValues, or a uint8 array of shape (n, type_length).

    Returns:
        The encoded bytes.

    Raises:
        ConfigError: for another array shape, or values of 2**31 bytes or longer.
    """
    bv = _as_binary(values)
    n = len(bv)
    lengths = bv.lengths
    if n and int(lengths.max()) > _MAX_LENGTH:
        raise ConfigError(f"A BYTE_ARRAY value of {int(lengths.max())} bytes exceeds 2**31 - 1.")
    prefix = _prefix_lengths(bv)
    suffixes = _suffix_bytes(bv, prefix)
    prefix_head = encode_delta_binary_packed(prefix.astype(np.int32))
    length_head = encode_delta_binary_packed((lengths - prefix).astype(np.int32))
    return b"".join((prefix_head, length_head, suffixes))


def _suffix_bytes(values: BinaryValues, prefix: npt.NDArray[np.int64]) -> memoryview:
    """Every value's bytes after its shared prefix, concatenated.

    The values' bytes are cut into 2n contiguous pieces (prefix, suffix, prefix, ...) described
    by one Arrow offsets array; Arrow's ``take`` of the odd pieces copies the suffixes in C (a
    numpy mask over every byte costs several passes more).
    """
    n = len(values)
    if not n or not bool(prefix.any()):
        base, end = int(values.offsets[0]), int(values.offsets[-1])
        return values.data[base:end].data
    pieces = np.empty(2 * n + 1, dtype=np.int64)
    pieces[0::2] = values.offsets
    pieces[1::2] = values.offsets[:-1] + prefix
    cut = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), 2 * n, [None, pa.py_buffer(pieces), pa.py_buffer(values.data)]
    )
    taken = cut.take(pa.array(np.arange(1, 2 * n, 2, dtype=np.int64)))
    offsets_buf, data_buf = taken.buffers()[1:]
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[taken.offset : taken.offset + n + 1]
    return memoryview(data_buf)[int(offsets[0]) : int(offsets[-1])]


def decode_delta_byte_array(
    buf: Buffer, num_values: int, type_length: int | None = None
) -> tuple[BinaryValues | npt.NDArray[np.uint8], int]:
    """Decode ``num_values`` DELTA_BYTE_ARRAY values.

    Args:
        buf: the encoded bytes (may continue past the values).
        num_values: how many values the caller expects (both headers must agree).
        type_length: for FIXED_LEN_BYTE_ARRAY, the value size; every value must have it.

    Returns:
        ``(values, bytes consumed)``: BinaryValues, or uint8 (n, type_length) with ``type_length``.

    Raises:
        FormatError: if a prefix is longer than the previous value, a value has the wrong
            length, the counts disagree, or the data is truncated.
        LimitError: if the values would exceed :data:`MAX_DECODED_SIZE` bytes.
    """
    data = as_uint8(buf)
    prefix32, pos = decode_delta_binary_packed(data, np.int32, num_values)
    suffixes, used = decode_delta_length_byte_array(data[pos:], num_values)
    prefix = prefix32.astype(np.int64)
    lengths = prefix + suffixes.lengths
    if num_values:
        previous = np.concatenate(([0], lengths[:-1]))
        bad = np.flatnonzero((prefix < 0) | (prefix > previous))
        if bad.size:
            i = int(bad[0])
            raise FormatError(
                f"DELTA_BYTE_ARRAY value {i} has prefix length {int(prefix[i])} but the previous "
                f"value is {int(previous[i])} bytes long."
            )
    if type_length is not None and num_values and bool(np.any(lengths != type_length)):
        raise FormatError(f"DELTA_BYTE_ARRAY values are not all {type_length} bytes long.")
    offsets = np.zeros(num_values + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    if total > MAX_DECODED_SIZE:
        raise LimitError(
            f"DELTA_BYTE_ARRAY values would take {total} bytes, over the {MAX_DECODED_SIZE} limit."
        )
    out = np.empty(total, dtype=np.uint8)
    has = prefix > 0
    in_prefix = _range_mask(total, offsets[:-1][has], prefix[has])
    out[~in_prefix] = suffixes.data
    copied = np.flatnonzero(in_prefix)
    if copied.size:
        parent = np.arange(total, dtype=np.int64)
        parent[copied] = copied - np.repeat(previous[has], prefix[has])
        active = copied[in_prefix[parent[copied]]]
        while active.size:  # pointer doubling over the bytes whose source is still a copy
            parent[active] = parent[parent[active]]
            active = active[in_prefix[parent[active]]]
        out[copied] = out[parent[copied]]
    consumed = pos + used
    if type_length is not None:
        return out.reshape(num_values, type_length), consumed
    return BinaryValues(offsets, out), consumed


# ---------------------------------------------------------------------------------------------
# Reference implementations (per-value loops; used by the property tests only).


def encode_delta_byte_array_reference(values: list[bytes]) -> bytes:
    """Pure-Python :func:`encode_delta_byte_array`."""
    prefixes = []
    suffixes = []
    previous = b""
    for value in values:
        p = 0
        while p < min(len(value), len(previous)) and value[p] == previous[p]:
            p += 1
        prefixes.append(p)
        suffixes.append(value[p:])
        previous = value
    head = encode_delta_binary_packed_reference(prefixes, 32)
    return head + encode_delta_length_byte_array_reference(suffixes)


def decode_delta_byte_array_reference(buf: bytes) -> tuple[list[bytes], int]:
    """Pure-Python :func:`decode_delta_byte_array`."""
    prefixes, pos = decode_delta_binary_packed_reference(buf, 32)
    suffixes, used = decode_delta_length_byte_array_reference(buf[pos:])
    out = []
    previous = b""
    for p, suffix in zip(prefixes, suffixes, strict=True):
        if p < 0 or p > len(previous):
            raise FormatError("DELTA_BYTE_ARRAY prefix is longer than the previous value.")
        previous = previous[:p] + suffix
        out.append(previous)
    return out, pos + used
