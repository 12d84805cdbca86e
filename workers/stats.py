"""Column statistics and page-index bounds (parquet.thrift ``Statistics``, ``ColumnOrder``).

``Statistics.min_value`` / ``max_value`` (and ``ColumnIndex.min_values`` / ``max_values``) hold
the PLAIN encoding of one value, *without* the 4-byte length prefix for BYTE_ARRAY::

    BOOLEAN  1 byte (0 or 1)        INT32 / FLOAT  4 bytes LE      INT64 / DOUBLE  8 bytes LE
    FIXED_LEN_BYTE_ARRAY  its type_length bytes                   BYTE_ARRAY  the bytes themselves

Rules (``TypeDefinedOrder`` in parquet.thrift ``ColumnOrder``):

* Signed integers compare as signed numbers; ``UINT_*`` / ``INT(bits, false)`` on INT32/INT64
  compare as unsigned numbers (a uint64 >= 2**63 is a negative int64 in memory).
* FLOAT/DOUBLE (and FLOAT16 = FIXED_LEN_BYTE_ARRAY(2), little-endian IEEE half): NaN is never a
  min or max (all-NaN: no min/max); a zero min is written as -0.0 and a zero max as +0.0.
* BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY (strings, binary, UUID, ...): unsigned lexicographic byte
  order; a proper prefix is smaller.
* DECIMAL stored as BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY: big-endian two's complement, compared as
  signed numbers (values of different lengths are sign-extended).
* BOOLEAN: false < true. INT96 and INTERVAL: undefined order, no min/max.
* Truncation (``max_size``, BYTE_ARRAY under unsigned byte order only): a min longer than the
  limit becomes its prefix, a max becomes its prefix with the last non-0xFF byte incremented and
  what follows dropped; both are then flagged inexact (``is_min_value_exact`` /
  ``is_max_value_exact``). A max whose prefix is all 0xFF cannot be rounded up and is kept whole.

Min/max are computed over whole arrays (numpy reductions; ``pyarrow.compute.min_max`` over a
zero-copy ``large_binary`` view of :class:`~workers.values.BinaryValues` for BYTE_ARRAY, which
compares exactly as above); only the two chosen values become Python bytes.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from streamwrite.errors import ConfigError
from streamwrite.format.enums import BoundaryOrder, Type
from workers.values import BinaryValues

__all__ = [
    "SortOrder",
    "ValueStats",
    "boundary_order",
    "compute_stats",
    "count_nans",
    "decode_stat",
]


class SortOrder(Enum):
    """How the values of a column compare (parquet.thrift ``ColumnOrder``)."""

    SIGNED = "signed"
    """INT32/INT64 (also DECIMAL, DATE, TIME, TIMESTAMP stored in them): signed numbers."""
    UNSIGNED = "unsigned"
    """INT32/INT64 with an unsigned integer logical type: unsigned numbers."""
    FLOAT = "float"
    """FLOAT/DOUBLE: IEEE 754 numbers, NaN ignored, -0.0 < +0.0 for bounds."""
    FLOAT16 = "float16"
    """FIXED_LEN_BYTE_ARRAY(2) with the Float16 logical type: as FLOAT."""
    UNSIGNED_BYTES = "unsigned_bytes"
    """BYTE_ARRAY/FIXED_LEN_BYTE_ARRAY: lexicographic unsigned bytes (strings, binary, UUID)."""
    SIGNED_BYTES = "signed_bytes"
    """DECIMAL in BYTE_ARRAY/FIXED_LEN_BYTE_ARRAY: big-endian two's complement numbers."""
    BOOLEAN = "boolean"
    """BOOLEAN: false < true."""
    UNDEFINED = "undefined"
    """INT96, INTERVAL: no order, so no min/max."""


_VALID_TYPES: dict[SortOrder, frozenset[Type]] = {
    SortOrder.SIGNED: frozenset({Type.INT32, Type.INT64}),
    SortOrder.UNSIGNED: frozenset({Type.INT32, Type.INT64}),
    SortOrder.FLOAT: frozenset({Type.FLOAT, Type.DOUBLE}),
    SortOrder.FLOAT16: frozenset({Type.FIXED_LEN_BYTE_ARRAY}),
    SortOrder.UNSIGNED_BYTES: frozenset({Type.BYTE_ARRAY, Type.FIXED_LEN_BYTE_ARRAY}),
    SortOrder.SIGNED_BYTES: frozenset({Type.BYTE_ARRAY, Type.FIXED_LEN_BYTE_ARRAY}),
    SortOrder.BOOLEAN: frozenset({Type.BOOLEAN}),
    SortOrder.UNDEFINED: frozenset(Type),
}

_PLAIN_DTYPE: dict[tuple[SortOrder, Type], str] = {
    (SortOrder.SIGNED, Type.INT32): "<i4",
    (SortOrder.SIGNED, Type.INT64): "<i8",
    (SortOrder.UNSIGNED, Type.INT32): "<u4",
    (SortOrder.UNSIGNED, Type.INT64): "<u8",
    (SortOrder.FLOAT, Type.FLOAT): "<f4",
    (SortOrder.FLOAT, Type.DOUBLE): "<f8",
}


@dataclass(frozen=True, slots=True)
class ValueStats:
    """Min/max of a page or column chunk, PLAIN-encoded as ``Statistics`` stores them.

    ``min_value``/``max_value`` are None when there is no non-null, non-NaN value (or the order
    is undefined); the ``is_*_exact`` flags are then False.
    """

    min_value: bytes | None
    max_value: bytes | None
    is_min_value_exact: bool
    is_max_value_exact: bool


_NO_STATS = ValueStats(None, None, False, False)


def compute_stats(
    values: np.ndarray | BinaryValues,
    physical_type: Type,
    order: SortOrder,
    *,
    max_size: int | None = None,
) -> ValueStats:
    """Min and max of non-null values under ``order``.

    Args:
        values: Non-null values in the in-memory form of :mod:`workers.values`.
        physical_type: The column's physical type.
        order: The column's sort order (from its logical/converted type).
        max_size: Longest BYTE_ARRAY min/max to keep (bytes); longer ones are truncated as the
            module docstring describes. None keeps them whole.

    Returns:
        The PLAIN-encoded bounds and whether each is the exact value.

    Raises:
        ConfigError: If ``order`` does not apply to ``physical_type``, ``values`` has the wrong
            form, or ``max_size`` is below 1.
    """
    if physical_type not in _VALID_TYPES[order]:
        raise ConfigError(
            f"Sort order {order.name} does not apply to physical type {physical_type.name}."
        )
    if max_size is not None and max_size < 1:
        raise ConfigError(f"Statistics max_size must be at least 1 byte, got {max_size}.")
    if isinstance(values, BinaryValues) != (physical_type == Type.BYTE_ARRAY):
        raise ConfigError(
            f"{physical_type.name} values must be "
            f"{'BinaryValues' if physical_type == Type.BYTE_ARRAY else 'a numpy array'}."
        )
    if order == SortOrder.UNDEFINED or len(values) == 0:
        return _NO_STATS
    if isinstance(values, BinaryValues):
        if order == SortOrder.UNSIGNED_BYTES:
            lo, hi = _binary_min_max(values)
            return _truncate(lo, hi, max_size)
        keys = _sign_extended(values)
        lo_i, hi_i = _lex_argmin(keys), _lex_argmax(keys)
        offs = values.offsets
        return _exact(
            values.data[offs[lo_i] : offs[lo_i + 1]].tobytes(),
            values.data[offs[hi_i] : offs[hi_i + 1]].tobytes(),
        )
    arr = np.asarray(values)
    dtype = _PLAIN_DTYPE.get((order, physical_type))
    if dtype is not None:
        arr = np.ascontiguousarray(arr).astype(dtype.replace("u", "i"), copy=False).view(dtype)
        if order == SortOrder.FLOAT:
            return _float_stats(arr, dtype)
        return _exact(arr.min().tobytes(), arr.max().tobytes())
    if order == SortOrder.BOOLEAN:
        return _exact(bytes([int(arr.min())]), bytes([int(arr.max())]))
    mat = _fixed_matrix(arr, physical_type)
    if order == SortOrder.FLOAT16:
        if mat.shape[1] != 2:
            raise ConfigError(f"FLOAT16 values must be 2 bytes wide, got {mat.shape[1]}.")
        return _float_stats(mat.view("<f2").reshape(-1), "<f2")
    if order == SortOrder.SIGNED_BYTES:
        keys = mat.copy()
        if keys.shape[1]:
            keys[:, 0] ^= 0x80
    else:
        keys = mat
    return _exact(mat[_lex_argmin(keys)].tobytes(), mat[_lex_argmax(keys)].tobytes())


def _exact(lo: bytes, hi: bytes) -> ValueStats:
    return ValueStats(lo, hi, True, True)


def _fixed_matrix(arr: npt.NDArray[Any], physical_type: Type) -> npt.NDArray[np.uint8]:
    if arr.dtype != np.uint8 or arr.ndim != 2:
        raise ConfigError(
            f"{physical_type.name} values must be a 2-D uint8 array, got {arr.dtype} "
            f"with shape {arr.shape}."
        )
    return np.ascontiguousarray(arr)


def _float_stats(arr: npt.NDArray[Any], dtype: str) -> ValueStats:
    lo = np.fmin.reduce(arr)  # NaN-ignoring; NaN only if every value is NaN
    if np.isnan(lo):
        return _NO_STATS
    hi = np.fmax.reduce(arr)
    if lo == 0:
        lo = -np.abs(lo)
    if hi == 0:
        hi = np.abs(hi)
    return _exact(np.array([lo], dtype=dtype).tobytes(), np.array([hi], dtype=dtype).tobytes())


def _binary_min_max(values: BinaryValues) -> tuple[bytes, bytes]:
    """Unsigned lexicographic min/max: values of one length (ids, codes, symbols) as rows of
    big-endian words in numpy; otherwise via Arrow over a zero-copy large_binary view."""
    offsets = values.offsets
    lengths = np.diff(offsets)
    width = int(lengths[0])
    if width and int(lengths.min()) == width == int(lengths.max()):
        start, stop = int(offsets[0]), int(offsets[-1])
        rows = values.data[start:stop].reshape(-1, width)  # values of one length are adjacent
        if width % 8:  # zero padding at the end keeps the order of values of one length
            padded = np.zeros((rows.shape[0], width + 8 - width % 8), dtype=np.uint8)
            padded[:, :width] = rows
            words = padded.view(">u8")
        else:
            words = rows.view(">u8")  # big-endian words compare as the bytes do
        lo_i, hi_i = _word_extreme(words, np.argmin), _word_extreme(words, np.argmax)
        return rows[lo_i].tobytes(), rows[hi_i].tobytes()
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    data = np.ascontiguousarray(values.data)
    if data.shape[0] == 0:
        data = np.zeros(1, dtype=np.uint8)  # Arrow wants a buffer even for all-empty values
    arr = pa.Array.from_buffers(
        pa.large_binary(), len(values), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    result = pc.min_max(arr)
    return result["min"].as_py(), result["max"].as_py()


def _truncate(lo: bytes, hi: bytes, max_size: int | None) -> ValueStats:
    lo_exact = hi_exact = True
    if max_size is not None:
        if len(lo) > max_size:
            lo, lo_exact = lo[:max_size], False
        if len(hi) > max_size:
            prefix = hi[:max_size].rstrip(b"\xff")
            if prefix:
                hi, hi_exact = prefix[:-1] + bytes([prefix[-1] + 1]), False
    return ValueStats(lo, hi, lo_exact, hi_exact)


def _sign_extended(values: BinaryValues) -> npt.NDArray[np.uint8]:
    """Big-endian two's complement values right-aligned to one width, sign bit flipped.

    Rows then compare as unsigned byte strings exactly as the numbers compare.
    """
    n = len(values)
    lengths = values.lengths
    width = max(int(lengths.max()), 1)
    starts = values.offsets[:-1]
    nonempty = lengths > 0
    negative = np.zeros(n, dtype=bool)
    negative[nonempty] = values.data[starts[nonempty]] >= 0x80
    keys = np.where(negative[:, None], np.uint8(0xFF), np.uint8(0)).astype(np.uint8)
    keys = np.repeat(keys, width, axis=1)
    total = int(lengths.sum())
    if total:
        owner = np.repeat(np.arange(n), lengths)
        pos = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        keys[owner, width - lengths[owner] + pos] = values.data[
            values.offsets[0] : values.offsets[-1]
        ]
    keys[:, 0] ^= 0x80
    return keys


def _lex_extreme(keys: npt.NDArray[np.uint8], pick: Callable[[npt.NDArray[Any]], Any]) -> int:
    """Row index of the lexicographically smallest/largest row (``pick`` is min or max).

    Works 8 bytes at a time as big-endian uint64 words, keeping only the rows tied so far.
    """
    n, width = keys.shape
    if width and width % 8 == 0 and keys.strides[1] == 1:
        words = keys.view(">u8")  # rows already whole words: no copy
    else:
        padded_width = max(-(-width // 8) * 8, 8)
        padded = np.zeros((n, padded_width), dtype=np.uint8)
        padded[:, :width] = keys
        words = padded.view(">u8")
    candidates = np.arange(n)
    for k in range(words.shape[1]):
        column = words[candidates, k]
        candidates = candidates[column == pick(column)]
        if candidates.shape[0] == 1:
            break
    return int(candidates[0])


def _word_extreme(words: npt.NDArray[Any], arg: Callable[[npt.NDArray[Any]], Any]) -> int:
    """Row index of the smallest/largest row of big-endian words (``arg`` is argmin/argmax):
    the first word decides unless rows tie on it (then only the tied rows go on)."""
    first = words[:, 0]
    best = int(arg(first))
    if words.shape[1] == 1:
        return best
    tied = np.flatnonzero(first == first[best])
    if tied.shape[0] == 1:
        return best
    rest = words[tied, 1:]
    order = np.lexsort(rest.T[::-1])  # ascending by the remaining words, first word first
    return int(tied[order[0] if arg is np.argmin else order[-1]])


def _lex_argmin(keys: npt.NDArray[np.uint8]) -> int:
    return _lex_extreme(keys, np.min)


def _lex_argmax(keys: npt.NDArray[np.uint8]) -> int:
    return _lex_extreme(keys, np.max)


def count_nans(
    values: np.ndarray | BinaryValues, physical_type: Type, order: SortOrder
) -> int | None:
    """``Statistics.nan_count`` (field 9) of non-null values: how many are NaN.

    Args:
        values: Non-null values in the in-memory form of :mod:`workers.values`.
        physical_type: The column's physical type.
        order: The column's sort order.

    Returns:
        The number of NaN values for FLOAT, DOUBLE and FLOAT16 columns (readers use it to
        know a chunk holds no NaN: without it they must assume NaN may be present); None for
        every other column.
    """
    if order == SortOrder.FLOAT and physical_type in (Type.FLOAT, Type.DOUBLE):
        arr = np.asarray(values)
        return int(np.count_nonzero(np.isnan(arr))) if arr.shape[0] else 0
    if order == SortOrder.FLOAT16 and not isinstance(values, BinaryValues):
        mat = np.asarray(values)
        if mat.ndim != 2 or mat.shape[1] != 2 or mat.dtype != np.uint8:
            return None
        halves = np.ascontiguousarray(mat).view("<u2").reshape(-1)
        # IEEE half NaN: exponent all ones, mantissa not zero.
        return int(np.count_nonzero((halves & 0x7FFF) > 0x7C00))
    return None


# --- decoding single bounds (page index, tests) -----------------------------------------------


def decode_stat(plain: bytes, order: SortOrder, physical_type: Type) -> Any:
    """A Python value that compares like ``plain`` under ``order``.

    Args:
        plain: One PLAIN-encoded min or max.
        order: The column's sort order.
        physical_type: The column's physical type.

    Returns:
        An int, float, bool or bytes; comparing two results compares the values.

    Raises:
        ConfigError: If ``order`` is UNDEFINED (such values do not compare).
    """
    if order == SortOrder.SIGNED:
        return int.from_bytes(plain, "little", signed=True)
    if order == SortOrder.UNSIGNED:
        return int.from_bytes(plain, "little", signed=False)
    if order == SortOrder.FLOAT:
        return struct.unpack("<f" if physical_type == Type.FLOAT else "<d", plain)[0]
    if order == SortOrder.FLOAT16:
        return struct.unpack("<e", plain)[0]
    if order == SortOrder.SIGNED_BYTES:
        return int.from_bytes(plain, "big", signed=True)
    if order == SortOrder.BOOLEAN:
        return plain != b"\x00"
    if order == SortOrder.UNSIGNED_BYTES:
        return plain
    raise ConfigError(f"Values of sort order {order.name} cannot be compared.")


def boundary_order(
    mins: Sequence[bytes | None],
    maxs: Sequence[bytes | None],
    order: SortOrder,
    physical_type: Type,
) -> BoundaryOrder:
    """``ColumnIndex.boundary_order`` for pages with these bounds.

    Args:
        mins: Each page's PLAIN-encoded min, None for a page with no non-null value.
        maxs: Each page's max, likewise.
        order: The column's sort order.
        physical_type: The column's physical type.

    Returns:
        ASCENDING if the mins and the maxs of the non-null pages are each non-decreasing,
        else DESCENDING if each is non-increasing, else UNORDERED (also for no non-null page
        or an undefined order, as Arrow does).

    Raises:
        ConfigError: If ``mins`` and ``maxs`` differ in length.
    """
    if len(mins) != len(maxs):
        raise ConfigError(f"Got {len(mins)} page mins but {len(maxs)} page maxs.")
    if order == SortOrder.UNDEFINED:
        return BoundaryOrder.UNORDERED
    pages = [(a, b) for a, b in zip(mins, maxs, strict=True) if a is not None and b is not None]
    if not pages:
        return BoundaryOrder.UNORDERED
    if len(pages) == 1:
        return BoundaryOrder.ASCENDING  # one page is in order (no pair to compare)
    lo = [decode_stat(a, order, physical_type) for a, _ in pages]
    hi = [decode_stat(b, order, physical_type) for _, b in pages]
    pairs = [*itertools.pairwise(lo), *itertools.pairwise(hi)]
    if all(a <= b for a, b in pairs):
        return BoundaryOrder.ASCENDING
    if all(a >= b for a, b in pairs):
        return BoundaryOrder.DESCENDING
    return BoundaryOrder.UNORDERED
