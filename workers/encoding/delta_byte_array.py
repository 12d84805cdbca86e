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

Encoding compares each value with the previous one over their common length, in chunks of a few
million byte pairs. Decoding places the suffix bytes directly and resolves prefix bytes, which may
chain back through many values, by pointer doubling (``log2`` of the longest chain passes over the
prefix bytes).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

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
    encode_delta_length_byte_array,
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

_CHUNK = 1 << 22


def _as_binary(values: BinaryValues | npt.NDArray[np.uint8]) -> BinaryValues:
    if isinstance(values, BinaryValues):
        return values
    arr = np.asarray(values)
    if arr.dtype != np.uint8 or arr.ndim != 2:
        raise ConfigError("FIXED_LEN_BYTE_ARRAY values must be a uint8 array (n, type_length).")
    n, width = arr.shape
    offsets = np.arange(n + 1, dtype=np.int64) * width
    return BinaryValues(offsets, np.ascontiguousarray(arr).reshape(-1))


def _prefix_lengths(values: BinaryValues) -> npt.NDArray[np.int64]:
    """Length of the prefix each value shares with the previous one (0 for the first)."""
    n = len(values)
    prefix = np.zeros(n, dtype=np.int64)
    if n < 2:
        return prefix
    starts = values.offsets[:-1]
    lengths = values.lengths
    common = np.minimum(lengths[1:], lengths[:-1])
    ends = np.cumsum(common)
    begin = 0
    while begin < n - 1:
        limit = (int(ends[begin - 1]) if begin else 0) + _CHUNK
        stop = min(max(begin + 1, int(np.searchsorted(ends, limit, "right"))), n - 1)
        span = common[begin:stop]
        total = int(span.sum())
        result = span.copy()
        if total:
            owner = np.repeat(np.arange(stop - begin), span)
            seg = np.cumsum(span) - span
            j = np.arange(total, dtype=np.int64) - seg[owner]
            cur = values.data[starts[begin + 1 : stop + 1][owner] + j]
            prev = values.data[starts[begin:stop][owner] + j]
            mismatch = np.flatnonzero(cur != prev)
            if mismatch.size:
                who = owner[mismatch]
                first = np.ones(who.shape[0], dtype=np.bool_)
                first[1:] = who[1:] != who[:-1]
                result[who[first]] = j[mismatch[first]]
        prefix[begin + 1 : stop + 1] = result
        begin = stop
    return prefix


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
    prefix = _prefix_lengths(bv)
    base = int(bv.offsets[0])
    total = bv.total_size
    starts = bv.offsets[:-1] - base
    has = prefix > 0
    in_prefix = _range_mask(total, starts[has], prefix[has])
    suffix_data = bv.data[base : base + total][~in_prefix]
    suffix_offsets = np.zeros(len(bv) + 1, dtype=np.int64)
    np.cumsum(bv.lengths - prefix, out=suffix_offsets[1:])
    head = encode_delta_binary_packed(prefix.astype(np.int32))
    return head + encode_delta_length_byte_array(BinaryValues(suffix_offsets, suffix_data))


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
