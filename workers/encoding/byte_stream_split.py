"""BYTE_STREAM_SPLIT encoding (``Encoding.BYTE_STREAM_SPLIT``).

parquet-format Encodings.md, "Byte Stream Split: (BYTE_STREAM_SPLIT = 9)", for FLOAT, DOUBLE,
INT32, INT64 and FIXED_LEN_BYTE_ARRAY values of K bytes each (N values)::

    byte-stream-split := <stream 0> <stream 1> ... <stream K-1>
    stream k          := byte k (little endian) of value 0, of value 1, ..., of value N-1

Example: 3 FLOATs AA BB CC DD | 00 11 22 33 | A3 B4 C5 D6 ->
AA 00 A3 BB 11 B4 CC 22 C5 DD 33 D6. There is no header: the data ends the page.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from streamwrite.errors import ConfigError, FormatError
from streamwrite.format.enums import Type
from workers.encoding._varint import Buffer, as_uint8

__all__ = [
    "decode_byte_stream_split",
    "decode_byte_stream_split_reference",
    "encode_byte_stream_split",
    "encode_byte_stream_split_reference",
]

_DTYPES: dict[Type, str] = {
    Type.INT32: "<i4",
    Type.INT64: "<i8",
    Type.FLOAT: "<f4",
    Type.DOUBLE: "<f8",
}


def _as_matrix(values: npt.NDArray[np.generic]) -> npt.NDArray[np.uint8]:
    arr = np.asarray(values)
    if arr.dtype == np.uint8 and arr.ndim == 2:
        return arr
    if arr.ndim != 1 or arr.dtype.kind not in "if" or arr.dtype.itemsize not in (4, 8):
        raise ConfigError(
            f"BYTE_STREAM_SPLIT takes 4- or 8-byte numbers or (n, k) uint8 arrays, not "
            f"{arr.dtype} with shape {arr.shape}."
        )
    little = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<"))
    return little.view(np.uint8).reshape(arr.shape[0], arr.dtype.itemsize)


def encode_byte_stream_split(values: npt.NDArray[np.generic]) -> bytes:
    """Encode FLOAT, DOUBLE, INT32, INT64 or FIXED_LEN_BYTE_ARRAY values with BYTE_STREAM_SPLIT.

    Args:
        values: float32/float64/int32/int64 array, or uint8 array of shape (n, type_length).

    Returns:
        The K byte streams concatenated.

    Raises:
        ConfigError: for any other array.
    """
    return np.ascontiguousarray(_as_matrix(values).T).tobytes()


def decode_byte_stream_split(
    buf: Buffer, physical_type: Type, num_values: int, type_length: int | None = None
) -> tuple[npt.NDArray[np.generic], int]:
    """Decode ``num_values`` BYTE_STREAM_SPLIT values.

    Args:
        buf: the encoded bytes; only the first ``num_values * K`` are read.
        physical_type: FLOAT, DOUBLE, INT32, INT64 or FIXED_LEN_BYTE_ARRAY.
        num_values: how many values.
        type_length: bytes per value for FIXED_LEN_BYTE_ARRAY.

    Returns:
        ``(values, bytes consumed)``; FIXED_LEN_BYTE_ARRAY values as uint8 (n, type_length).

    Raises:
        ConfigError: for another physical type or a missing ``type_length``.
        FormatError: if ``buf`` is shorter than ``num_values * K`` bytes.
    """
    if physical_type in _DTYPES:
        dtype = np.dtype(_DTYPES[physical_type])
        width = dtype.itemsize
    elif physical_type == Type.FIXED_LEN_BYTE_ARRAY and type_length is not None and type_length > 0:
        width = type_length
    else:
        raise ConfigError(
            f"BYTE_STREAM_SPLIT cannot decode {physical_type!r} with type_length {type_length}."
        )
    data = as_uint8(buf)
    need = num_values * width
    if num_values < 0 or need > data.shape[0]:
        raise FormatError(
            f"BYTE_STREAM_SPLIT needs {need} bytes for {num_values} values of {width} bytes, "
            f"but {data.shape[0]} are present."
        )
    matrix = np.ascontiguousarray(data[:need].reshape(width, num_values).T)
    if physical_type in _DTYPES:
        return matrix.view(dtype).reshape(num_values).astype(dtype.newbyteorder("=")), need
    return matrix, need


# ---------------------------------------------------------------------------------------------
# Reference implementations (per-value loops; used by the property tests only).


def encode_byte_stream_split_reference(values: list[bytes]) -> bytes:
    """Pure-Python :func:`encode_byte_stream_split` over each value's little-endian bytes."""
    width = len(values[0]) if values else 0
    return bytes(values[i][k] for k in range(width) for i in range(len(values)))


def decode_byte_stream_split_reference(buf: bytes, width: int, num_values: int) -> list[bytes]:
    """Pure-Python :func:`decode_byte_stream_split`; returns each value's bytes."""
    if num_values * width > len(buf):
        raise FormatError("BYTE_STREAM_SPLIT data is truncated.")
    return [bytes(buf[k * num_values + i] for k in range(width)) for i in range(num_values)]
