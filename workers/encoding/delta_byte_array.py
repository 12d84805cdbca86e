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
still equal, then copies the suffixes out with one Arrow ``take``. Decoding resolves the prefix
bytes, which may chain back through many values, by pointer doubling over the prefix bytes only
(``log2`` of the longest chain passes), then joins each value's prefix and suffix with Arrow's
``binary_join_element_wise`` (one copy of the values' bytes, in C).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from streamwrite.errors import ConfigError, FormatError, LimitError
from workers.encoding._varint import Buffer, as_uint8
from workers.encoding.delta_binary_packed import (
    decode_delta_binary_packed,
    decode_delta_binary_packed_reference,
    encode_delta_binary_packed,
    encode_delta_binary_packed_reference,
)
from workers.encoding.delta_length_byte_array import (
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
    suffix_lengths, used = decode_delta_binary_packed(data[pos:], np.int32, num_values)
    if num_values and int(suffix_lengths.min()) < 0:
        raise FormatError(
            f"DELTA_BYTE_ARRAY holds the negative suffix length {int(suffix_lengths.min())}."
        )
    pos += used
    suffix_offsets = np.zeros(num_values + 1, dtype=np.int64)
    np.cumsum(suffix_lengths, out=suffix_offsets[1:])
    suffix_size = int(suffix_offsets[-1])
    if pos + suffix_size > data.shape[0]:
        raise FormatError(
            f"DELTA_BYTE_ARRAY suffix lengths add up to {suffix_size} bytes but "
            f"{data.shape[0] - pos} follow them."
        )
    suffixes = data[pos : pos + suffix_size]
    consumed = pos + suffix_size
    prefix = prefix32.astype(np.int64)
    lengths = prefix + suffix_lengths
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
    prefix_size = int(prefix.sum())
    total = prefix_size + suffix_size
    if total > MAX_DECODED_SIZE:
        raise LimitError(
            f"DELTA_BYTE_ARRAY values would take {total} bytes, over the {MAX_DECODED_SIZE} limit."
        )
    if prefix_size == 0:
        values = BinaryValues(suffix_offsets, suffixes.copy())
    else:
        prefix_bytes, prefix_offsets = _prefix_bytes(prefix, prefix_size, suffixes, suffix_offsets)
        joined = pc.binary_join_element_wise(
            _binary(prefix_offsets, prefix_bytes),
            _binary(suffix_offsets, suffixes),
            pa.scalar(b"", pa.large_binary()),
        )
        _, offsets_buf, data_buf = joined.buffers()
        offsets = np.frombuffer(offsets_buf, dtype=np.int64)[: num_values + 1]
        values = BinaryValues(offsets - offsets[0], _owned(data_buf, int(offsets[0]), total))
    if type_length is not None:
        return values.data.reshape(num_values, type_length), consumed
    return values, consumed


def _owned(buffer: pa.Buffer, start: int, size: int) -> npt.NDArray[np.uint8]:
    """``size`` bytes of an Arrow buffer from ``start``, as a numpy array (no copy)."""
    return (
        np.frombuffer(buffer, dtype=np.uint8, count=size, offset=start)
        if size
        else (np.zeros(0, dtype=np.uint8))
    )


def _binary(offsets: npt.NDArray[np.int64], data: npt.NDArray[np.uint8]) -> pa.Array:
    """A LargeBinary Arrow array over numpy offsets and bytes (no copy)."""
    return pa.LargeBinaryArray.from_buffers(
        pa.large_binary(),
        int(offsets.shape[0]) - 1,
        [None, pa.py_buffer(np.ascontiguousarray(offsets)), pa.py_buffer(data)],
    )


def _prefix_bytes(
    prefix: npt.NDArray[np.int64],
    prefix_size: int,
    suffixes: npt.NDArray[np.uint8],
    suffix_offsets: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """The bytes of every value's shared prefix, back to back, and their offsets.

    Prefix byte ``j`` of value ``i`` is byte ``j`` of value ``i - 1``: that value's suffix byte
    ``j - prefix[i - 1]`` when ``j`` is past its own prefix, else its prefix byte ``j``, which
    chains further back. Chains are resolved by pointer doubling over the prefix bytes only
    (``log2`` of the longest chain passes), never over all the values' bytes.
    """
    prefix_offsets = np.zeros(prefix.shape[0] + 1, dtype=np.int64)
    np.cumsum(prefix, out=prefix_offsets[1:])
    has = np.flatnonzero(prefix)
    counts = prefix[has]
    owner = np.repeat(has, counts)  # value of each prefix byte (never value 0)
    j = np.arange(prefix_size, dtype=np.int64) - np.repeat(prefix_offsets[has], counts)
    parent = owner - 1
    inherited = j < prefix[parent]  # byte j of the previous value is in its prefix too
    out = np.empty(prefix_size, dtype=np.uint8)
    direct = np.flatnonzero(~inherited)
    p = parent[direct]
    out[direct] = suffixes[suffix_offsets[p] + j[direct] - prefix[p]]
    chained = np.flatnonzero(inherited)
    if chained.size:
        link = np.arange(prefix_size, dtype=np.int64)
        link[chained] = prefix_offsets[parent[chained]] + j[chained]
        active = chained[inherited[link[chained]]]
        while active.size:  # pointer doubling until every link reaches a direct byte
            link[active] = link[link[active]]
            active = active[inherited[link[active]]]
        out[chained] = out[link[chained]]
    return out, prefix_offsets


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
