"""Dictionary encoding (``Encoding.RLE_DICTIONARY``; ``PLAIN_DICTIONARY`` reads the same).

parquet-format Encodings.md, "Dictionary Encoding (PLAIN_DICTIONARY = 2 and RLE_DICTIONARY = 8)"::

    dictionary page  := PLAIN(dictionary values)
    data page values := <bit width: 1 byte, 0..32> <RLE/bit-packed hybrid indices, no length>
    bit width        := bits needed for (number of dictionary values - 1)

:func:`dictionary_encode` keeps the dictionary in first-occurrence order, so a writer can cut a
column chunk where the dictionary would outgrow its byte limit. It hashes with
``pyarrow.compute.dictionary_encode`` (a hash table in first-occurrence order; numpy only offers
sorting with ``np.unique``, which is slower and needs a reorder). Integers spanning a small
range (at most ``4 * n`` and 2**22 values) skip hashing: a direct-address table indexed by
``value - min`` gives counts, first occurrences and ranks at memory speed. Floats are hashed by bit
pattern, with every NaN rewritten to the first NaN's pattern first: NaNs share one entry while
-0.0 and +0.0 stay apart.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from streamwrite.errors import ConfigError, FormatError
from streamwrite.format.enums import Type
from workers.encoding._varint import Buffer, as_uint8
from workers.encoding.rle_hybrid import (
    decode_rle_hybrid,
    decode_rle_hybrid_reference,
    encode_rle_hybrid,
    encode_rle_hybrid_reference,
)
from workers.values import BinaryValues

__all__ = [
    "decode_dictionary_indices",
    "decode_dictionary_indices_reference",
    "dictionary_encode",
    "dictionary_encode_reference",
    "dictionary_lookup",
    "encode_dictionary_indices",
    "encode_dictionary_indices_reference",
]

_NUMERIC: dict[Type, tuple[str, str]] = {
    Type.INT32: ("<i4", "<u4"),
    Type.INT64: ("<i8", "<u8"),
    Type.FLOAT: ("<f4", "<u4"),
    Type.DOUBLE: ("<f8", "<u8"),
}
_MAX_TABLE = 1 << 22  # direct-address tables for integer dictionaries: at most 16 MiB of int32


def _first_occurrence(keys: npt.NDArray[np.integer], size: int, m: int) -> npt.NDArray[np.intp]:
    """The ``m`` distinct keys (each in ``0..size - 1``) in first-occurrence order.

    Scans growing chunks (x8 each time) and stops as soon as all ``m`` keys have been seen,
    which for low cardinality is within the first few thousand values.
    """
    n = int(keys.shape[0])
    positions = np.full(size, n, dtype=np.intp)
    done = 0
    chunk = max(1024, 8 * m)
    while done < n:
        stop = min(n, done + chunk)
        np.minimum.at(positions, keys[done:stop], np.arange(done, stop, dtype=np.intp))
        done = stop
        chunk *= 8
        if done < n and int(np.count_nonzero(positions < n)) == m:
            break
    return keys[np.sort(positions[positions < n])].astype(np.intp)


def _encode_small_range(
    arr: npt.NDArray[np.signedinteger],
) -> tuple[npt.NDArray[np.signedinteger], npt.NDArray[np.int32]] | None:
    """Dictionary-encode integers spanning a small range with direct-address tables, or None.

    Replaces hashing by ``bincount`` (how many distinct values), a first-occurrence scan that
    stops early when every value has been seen, and one gather through a rank table.
    """
    n = int(arr.shape[0])
    if n == 0:
        return None
    lo, hi = int(arr.min()), int(arr.max())
    size = hi - lo + 1
    if size > min(_MAX_TABLE, max(1 << 16, 4 * n)):
        return None
    keys = arr - arr.dtype.type(lo)  # in 0..size - 1, no overflow
    m = int(np.count_nonzero(np.bincount(keys, minlength=size)))
    ordered = _first_occurrence(keys, size, m)
    rank = np.zeros(size, dtype=np.int32)
    rank[ordered] = np.arange(m, dtype=np.int32)
    dictionary = (ordered + lo).astype(arr.dtype)
    return dictionary, rank[keys]


def _hash_encode(array: pa.Array) -> tuple[pa.Array, npt.NDArray[np.int32]]:
    encoded = array.dictionary_encode()
    indices = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int32)
    return encoded.dictionary, indices


def _encode_binary(values: BinaryValues) -> tuple[BinaryValues, npt.NDArray[np.int32]]:
    n = len(values)
    offsets = np.ascontiguousarray(values.offsets, dtype=np.int64)
    array = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(values.data)]
    )
    dictionary, indices = _hash_encode(array)
    m = len(dictionary)
    _, offsets_buf, data_buf = dictionary.buffers()
    dict_offsets = np.frombuffer(offsets_buf, dtype=np.int64)[
        dictionary.offset : dictionary.offset + m + 1
    ]
    base, end = int(dict_offsets[0]), int(dict_offsets[-1])
    data = (
        np.frombuffer(data_buf, dtype=np.uint8)[base:end].copy()
        if end > base
        else np.zeros(0, np.uint8)
    )
    return BinaryValues(dict_offsets - base, data), indices


def dictionary_encode(
    values: npt.NDArray[np.generic] | BinaryValues, physical_type: Type
) -> tuple[npt.NDArray[np.generic] | BinaryValues, npt.NDArray[np.int32]]:
    """Split values into a first-occurrence-ordered dictionary and int32 indices into it.

    Args:
        values: the values in the in-memory form of :mod:`workers.values`.
        physical_type: any physical type but BOOLEAN.

    Returns:
        ``(dictionary values, indices)`` with ``dictionary[indices] == values`` (NaNs aside).

    Raises:
        ConfigError: for BOOLEAN or values that do not match the physical type.
    """
    if physical_type == Type.BYTE_ARRAY:
        if not isinstance(values, BinaryValues):
            raise ConfigError("BYTE_ARRAY values must be BinaryValues.")
        return _encode_binary(values)
    if isinstance(values, BinaryValues):
        raise ConfigError(f"BinaryValues cannot be dictionary encoded as {physical_type.name}.")
    if physical_type in (Type.FIXED_LEN_BYTE_ARRAY, Type.INT96):
        if values.ndim != 2 or values.dtype != np.uint8:
            raise ConfigError(f"{physical_type.name} values must be a uint8 array (n, length).")
        n, width = values.shape
        flat = BinaryValues(
            np.arange(n + 1, dtype=np.int64) * width, np.ascontiguousarray(values).reshape(-1)
        )
        dictionary, indices = _encode_binary(flat)
        return dictionary.data.reshape(len(dictionary), width), indices
    if physical_type not in _NUMERIC:
        raise ConfigError(f"Dictionary encoding of {physical_type.name} is not supported.")
    value_dtype, key_dtype = _NUMERIC[physical_type]
    arr = np.ascontiguousarray(values, dtype=value_dtype).reshape(-1)
    if physical_type in (Type.INT32, Type.INT64):
        small = _encode_small_range(arr.astype(value_dtype[1:], copy=False))
        if small is not None:
            return small
    keys = arr.view(key_dtype)
    if physical_type in (Type.FLOAT, Type.DOUBLE):
        nan = np.isnan(arr)
        if nan.any():
            keys = keys.copy()
            keys[nan] = keys[int(np.argmax(nan))]
    dictionary, indices = _hash_encode(pa.array(keys.astype(key_dtype[1:])))
    dict_keys = np.asarray(dictionary.to_numpy(zero_copy_only=False))
    return dict_keys.astype(key_dtype).view(value_dtype).astype(value_dtype[1:]), indices


def _bit_width(num_dictionary_values: int) -> int:
    return max(num_dictionary_values - 1, 0).bit_length()


def encode_dictionary_indices(
    indices: npt.NDArray[np.integer], num_dictionary_values: int
) -> bytes:
    """Encode dictionary indices for a data page: bit width byte, then hybrid runs.

    Args:
        indices: non-negative indices below ``num_dictionary_values``.
        num_dictionary_values: entries in the dictionary.

    Returns:
        The encoded bytes.

    Raises:
        ConfigError: if an index is out of range or the bit width would exceed 32.
    """
    width = _bit_width(num_dictionary_values)
    idx = np.asarray(indices)
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= num_dictionary_values):
        raise ConfigError(
            f"Dictionary indices {int(idx.min())}..{int(idx.max())} fall outside a dictionary "
            f"of {num_dictionary_values} values."
        )
    return bytes([width]) + encode_rle_hybrid(idx.astype(np.uint32), width)


def decode_dictionary_indices(buf: Buffer, num_values: int) -> tuple[npt.NDArray[np.int32], int]:
    """Decode ``num_values`` dictionary indices of a data page.

    Returns:
        ``(int32 indices, bytes consumed)``; the indices are not checked against a dictionary
        here (:func:`dictionary_lookup` does that).

    Raises:
        FormatError: if the bit width byte is missing or above 32, or the runs end early.
    """
    data = as_uint8(buf)
    if num_values == 0:
        return np.zeros(0, dtype=np.int32), min(1, int(data.shape[0]))
    if data.shape[0] < 1:
        raise FormatError("Dictionary indices lack their bit width byte.")
    width = int(data[0])
    if width > 32:
        raise FormatError(f"Dictionary indices declare bit width {width}, above 32.")
    values, used = decode_rle_hybrid(data[1:], width, num_values)
    return values.view(np.int32), 1 + used


def dictionary_lookup(
    dictionary_values: npt.NDArray[np.generic] | BinaryValues, indices: npt.NDArray[np.integer]
) -> npt.NDArray[np.generic] | BinaryValues:
    """Replace indices by dictionary values.

    Returns:
        The values, in the dictionary's in-memory form.

    Raises:
        FormatError: if an index is negative or not below the dictionary length.
    """
    size = len(dictionary_values)
    idx = np.asarray(indices).astype(np.int64)
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= size):
        bad = int(idx.min()) if int(idx.min()) < 0 else int(idx.max())
        raise FormatError(f"Dictionary index {bad} is outside the dictionary of {size} values.")
    if isinstance(dictionary_values, BinaryValues):
        return _take_binary(dictionary_values, idx)
    return dictionary_values[idx]


def _take_binary(values: BinaryValues, indices: npt.NDArray[np.int64]) -> BinaryValues:
    """``values[indices]``: rows of a matrix when all values have one length, else Arrow's
    ``take`` (one memcpy per value, in C)."""
    lengths = values.lengths
    width = int(lengths[0]) if lengths.shape[0] else 0
    if width and int(lengths.min()) == width == int(lengths.max()):
        base = int(values.offsets[0])
        rows = values.data[base : base + width * len(values)].reshape(-1, width)
        data = np.take(rows, indices, axis=0).reshape(-1)
        return BinaryValues(np.arange(indices.shape[0] + 1, dtype=np.int64) * width, data)
    offsets = np.ascontiguousarray(values.offsets, dtype=np.int64)
    array = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(),
        len(values),
        [None, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(values.data))],
    )
    taken = array.take(pa.array(indices))
    n = len(taken)
    _, offsets_buf, data_buf = taken.buffers()
    new_offsets = np.frombuffer(offsets_buf, dtype=np.int64)[taken.offset : taken.offset + n + 1]
    data = np.zeros(0, np.uint8) if data_buf is None else np.frombuffer(data_buf, dtype=np.uint8)
    return BinaryValues(new_offsets, data)


# ---------------------------------------------------------------------------------------------
# Reference implementations (per-value loops; used by the property tests only).


def dictionary_encode_reference(values: list[bytes]) -> tuple[list[bytes], list[int]]:
    """Pure-Python :func:`dictionary_encode` over each value's bytes (floats: NaN-canonical)."""
    seen: dict[bytes, int] = {}
    dictionary: list[bytes] = []
    indices: list[int] = []
    for value in values:
        if value not in seen:
            seen[value] = len(dictionary)
            dictionary.append(value)
        indices.append(seen[value])
    return dictionary, indices


def encode_dictionary_indices_reference(indices: list[int], num_dictionary_values: int) -> bytes:
    """Pure-Python :func:`encode_dictionary_indices`."""
    width = _bit_width(num_dictionary_values)
    return bytes([width]) + encode_rle_hybrid_reference(indices, width)


def decode_dictionary_indices_reference(buf: bytes, num_values: int) -> tuple[list[int], int]:
    """Pure-Python :func:`decode_dictionary_indices`."""
    if num_values == 0:
        return [], min(1, len(buf))
    if not buf or buf[0] > 32:
        raise FormatError("Dictionary indices have no valid bit width byte.")
    values, used = decode_rle_hybrid_reference(buf[1:], buf[0], num_values)
    return values, 1 + used
