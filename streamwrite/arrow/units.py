"""Units and byte helpers shared by both directions of the Arrow <-> Parquet value mapping.

:mod:`streamwrite.arrow.values` (Arrow -> physical) and :mod:`streamwrite.arrow.assembly`
(physical -> Arrow) both use them; keeping them here lets the two modules not import each other.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

__all__ = [
    "INT32_MAX",
    "INT_DTYPES",
    "JULIAN_UNIX_EPOCH",
    "MILLIS_PER_DAY",
    "NANOS_PER_DAY",
    "UNIT_PER_SECOND",
    "decimal_size",
    "resize_le",
    "sign_fill",
]

JULIAN_UNIX_EPOCH = 2_440_588
"""Julian day number of 1970-01-01 (INT96 timestamps count days from the Julian epoch)."""
NANOS_PER_DAY = 86_400_000_000_000
MILLIS_PER_DAY = 86_400_000
INT32_MAX = 2**31 - 1
UNIT_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}

INT_DTYPES: dict[Any, type[np.generic]] = {
    pa.int8(): np.int8,
    pa.int16(): np.int16,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.uint8(): np.uint8,
    pa.uint16(): np.uint16,
    pa.uint32(): np.uint32,
    pa.uint64(): np.uint64,
}


def sign_fill(raw: npt.NDArray[np.uint8], top: npt.NDArray[np.intp] | int) -> npt.NDArray[Any]:
    """0xFF where the byte at column ``top`` of each row has its high bit set, else 0."""
    rows = np.arange(raw.shape[0])
    return np.where(raw[rows, top] & 0x80, np.uint8(0xFF), np.uint8(0))


def resize_le(raw: npt.NDArray[np.uint8], width: int) -> npt.NDArray[np.uint8] | None:
    """Sign-extend or truncate little-endian rows to ``width`` bytes; None if a value is lost."""
    n, length = raw.shape
    if length == width:
        return raw
    if length < width:
        out = np.empty((n, width), dtype=np.uint8)
        out[:, :length] = raw
        out[:, length:] = 0 if length == 0 else sign_fill(raw, length - 1)[:, None]
        return out
    if width == 0:
        return None if raw.any() else raw[:, :0]
    if (raw[:, width:] != sign_fill(raw, width - 1)[:, None]).any():
        return None
    return raw[:, :width]


def decimal_size(precision: int) -> int:
    """Minimal FIXED_LEN_BYTE_ARRAY length holding any unscaled value of ``precision`` digits.

    Returns:
        The smallest ``n`` with ``10**precision <= 2**(8 * n - 1)`` (LogicalTypes.md, DECIMAL).
    """
    n = 1
    while 10**precision > 2 ** (8 * n - 1):
        n += 1
    return n
