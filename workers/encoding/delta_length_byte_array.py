"""DELTA_LENGTH_BYTE_ARRAY encoding (``Encoding.DELTA_LENGTH_BYTE_ARRAY``) for BYTE_ARRAY.

parquet-format Encodings.md, "Delta-length byte array: (DELTA_LENGTH_BYTE_ARRAY = 6)"::

    delta-length-byte-array := <lengths> <data>
    lengths := DELTA_BINARY_PACKED(INT32 byte length of each value)
    data    := the values' bytes concatenated back to back

Example: "Hello", "World", "Foobar", "ABCDEF" -> DeltaEncoding(5, 5, 6, 6) "HelloWorldFoobarABCDEF".
"""

from __future__ import annotations

import numpy as np

from streamwrite.errors import ConfigError, FormatError
from workers.encoding._varint import Buffer, as_uint8
from workers.encoding.delta_binary_packed import (
    decode_delta_binary_packed,
    decode_delta_binary_packed_reference,
    encode_delta_binary_packed,
    encode_delta_binary_packed_reference,
)
from workers.values import BinaryValues

__all__ = [
    "decode_delta_length_byte_array",
    "decode_delta_length_byte_array_reference",
    "encode_delta_length_byte_array",
    "encode_delta_length_byte_array_reference",
]

_MAX_LENGTH = (1 << 31) - 1


def encode_delta_length_byte_array(values: BinaryValues) -> bytes:
    """Encode byte strings with DELTA_LENGTH_BYTE_ARRAY.

    Args:
        values: the byte strings.

    Returns:
        The encoded bytes.

    Raises:
        ConfigError: if a value is 2**31 bytes or longer (lengths are INT32).
    """
    lengths = values.lengths
    if len(values) and int(lengths.max()) > _MAX_LENGTH:
        raise ConfigError(f"A BYTE_ARRAY value of {int(lengths.max())} bytes exceeds 2**31 - 1.")
    head = encode_delta_binary_packed(lengths.astype(np.int32))
    body = values.data[int(values.offsets[0]) : int(values.offsets[-1])]
    return b"".join((head, np.ascontiguousarray(body).data))  # one copy of the bytes


def decode_delta_length_byte_array(buf: Buffer, num_values: int) -> tuple[BinaryValues, int]:
    """Decode ``num_values`` DELTA_LENGTH_BYTE_ARRAY values.

    Args:
        buf: the encoded bytes (may continue past the values).
        num_values: how many values the caller expects (the header must agree).

    Returns:
        ``(values, bytes consumed)``.

    Raises:
        FormatError: if a length is negative, the count disagrees, or the data is truncated.
    """
    data = as_uint8(buf)
    lengths, pos = decode_delta_binary_packed(data, np.int32, num_values)
    if num_values and int(lengths.min()) < 0:
        raise FormatError(
            f"DELTA_LENGTH_BYTE_ARRAY holds the negative length {int(lengths.min())}."
        )
    offsets = np.zeros(num_values + 1, dtype=np.int64)
    np.cumsum(lengths, dtype=np.int64, out=offsets[1:])
    total = int(offsets[-1])
    if pos + total > data.shape[0]:
        raise FormatError(
            f"DELTA_LENGTH_BYTE_ARRAY lengths add up to {total} bytes but {data.shape[0] - pos} "
            "follow them."
        )
    return BinaryValues(offsets, data[pos : pos + total].copy()), pos + total


# ---------------------------------------------------------------------------------------------
# Reference implementations (per-value loops; used by the property tests only).


def encode_delta_length_byte_array_reference(values: list[bytes]) -> bytes:
    """Pure-Python :func:`encode_delta_length_byte_array`."""
    head = encode_delta_binary_packed_reference([len(v) for v in values], 32)
    return head + b"".join(values)


def decode_delta_length_byte_array_reference(buf: bytes) -> tuple[list[bytes], int]:
    """Pure-Python :func:`decode_delta_length_byte_array`."""
    lengths, pos = decode_delta_binary_packed_reference(buf, 32)
    out = []
    for length in lengths:
        if length < 0 or pos + length > len(buf):
            raise FormatError("DELTA_LENGTH_BYTE_ARRAY data is truncated.")
        out.append(bytes(buf[pos : pos + length]))
        pos += length
    return out, pos
