"""ULEB128 varints, zigzag mapping and buffer helpers shared by the encoding kernels.

Byte layout (parquet-format Encodings.md, "Delta Encoding", and the LEB128 reference)::

    uleb128 := <byte with bit 7 set>* <byte with bit 7 clear>   (7 payload bits per byte, LSB first)
    zigzag(v) := (v << 1) ^ (v >> 63)                            (signed -> unsigned, 64-bit)

Decoders accept at most 10 bytes (64 payload bits); anything longer or truncated is a
:class:`~streamwrite.errors.FormatError`.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from streamwrite.errors import FormatError

__all__ = [
    "Buffer",
    "as_uint8",
    "bit_length_array",
    "encode_uleb128",
    "encode_uleb128_array",
    "read_uleb128",
    "read_zigzag",
    "zigzag_decode",
    "zigzag_encode",
]

Buffer: TypeAlias = "bytes | bytearray | memoryview | npt.NDArray[np.uint8]"
"""Anything a decoder accepts as input bytes."""

_MASK64 = (1 << 64) - 1
_POWERS_OF_TWO = np.left_shift(np.uint64(1), np.arange(64, dtype=np.uint64))


def as_uint8(buf: Buffer) -> npt.NDArray[np.uint8]:
    """View ``buf`` as a flat uint8 array without copying.

    Args:
        buf: bytes-like object or uint8 array.

    Returns:
        A one-dimensional uint8 view of the same memory.
    """
    if isinstance(buf, np.ndarray):
        return buf.reshape(-1).view(np.uint8)
    return np.frombuffer(buf, dtype=np.uint8)


def encode_uleb128(value: int) -> bytes:
    """Encode a non-negative integer below 2**64 as ULEB128.

    Args:
        value: the integer.

    Returns:
        The varint bytes.

    Raises:
        ValueError: if ``value`` is negative.
    """
    if value < 0:
        raise ValueError(f"ULEB128 cannot encode the negative value {value}.")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def read_uleb128(buf: bytes | memoryview, pos: int, what: str = "varint") -> tuple[int, int]:
    """Read one ULEB128 varint starting at ``pos``.

    Args:
        buf: the input bytes.
        pos: offset of the first varint byte.
        what: name of the field, used in error messages.

    Returns:
        ``(value, position after the varint)``.

    Raises:
        FormatError: if the varint is truncated, longer than 10 bytes or exceeds 64 bits.
    """
    result = 0
    shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise FormatError(f"The {what} varint is truncated at byte {pos} of {end}.")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if shift >= 70:
            raise FormatError(f"The {what} varint ending at byte {pos} is longer than 10 bytes.")
    if result > _MASK64:
        raise FormatError(f"The {what} varint ending at byte {pos} exceeds 64 bits.")
    return result, pos


def zigzag_encode(value: int) -> int:
    """Map a signed 64-bit integer to the unsigned zigzag form (0, -1, 1, -2 -> 0, 1, 2, 3)."""
    return ((value << 1) ^ (value >> 63)) & _MASK64


def zigzag_decode(value: int) -> int:
    """Inverse of :func:`zigzag_encode`: an unsigned 64-bit integer to a signed one."""
    return (value >> 1) ^ -(value & 1)


def read_zigzag(buf: bytes | memoryview, pos: int, what: str = "varint") -> tuple[int, int]:
    """Read one zigzag ULEB128 varint; returns ``(signed value, position after it)``.

    Raises:
        FormatError: as :func:`read_uleb128`.
    """
    raw, pos = read_uleb128(buf, pos, what)
    return zigzag_decode(raw), pos


def bit_length_array(values: npt.NDArray[np.unsignedinteger]) -> npt.NDArray[np.int64]:
    """Number of bits needed for each unsigned value (0 for 0), exact for all of uint64.

    Args:
        values: unsigned integer array.

    Returns:
        int64 array of bit lengths in ``0..64``.
    """
    return np.searchsorted(_POWERS_OF_TWO, values.astype(np.uint64), side="right").astype(np.int64)


def encode_uleb128_array(
    values: npt.NDArray[np.uint64],
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """Encode many unsigned values as ULEB128 varints at once.

    Args:
        values: uint64 array.

    Returns:
        ``(concatenated varint bytes, byte length of each varint)``.
    """
    v = values.astype(np.uint64).reshape(-1)
    lengths = np.maximum((bit_length_array(v) + 6) // 7, 1)
    shifts = np.arange(0, 70, 7, dtype=np.uint64)
    groups = ((v[:, None] >> shifts[None, :]) & np.uint64(0x7F)).astype(np.uint8)
    position = np.arange(10, dtype=np.int64)[None, :]
    groups[position < (lengths[:, None] - 1)] |= np.uint8(0x80)
    return groups[position < lengths[:, None]], lengths
