"""How column values of each physical type are held in memory by the kernels.

=====================  ===============================================================
physical type          in-memory form
=====================  ===============================================================
BOOLEAN                ``np.ndarray[bool]``, shape (n,)
INT32 / INT64          ``np.ndarray[int32 / int64]``, shape (n,)
INT96                  ``np.ndarray[uint8]``, shape (n, 12) (read only, deprecated)
FLOAT / DOUBLE         ``np.ndarray[float32 / float64]``, shape (n,)
FIXED_LEN_BYTE_ARRAY   ``np.ndarray[uint8]``, shape (n, type_length)
BYTE_ARRAY             :class:`BinaryValues` (Arrow-style offsets + data)
=====================  ===============================================================

Only non-null values are held: nulls live in definition levels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

__all__ = ["BinaryValues", "ColumnValues", "count_values"]


@dataclass(frozen=True, slots=True)
class BinaryValues:
    """Variable-length byte strings: value ``i`` is ``data[offsets[i]:offsets[i + 1]]``.

    ``offsets`` is int64 with ``len(self) + 1`` entries, non-decreasing; ``offsets[0]`` need not
    be zero (a slice of a larger buffer keeps its offsets).
    """

    offsets: npt.NDArray[np.int64]
    data: npt.NDArray[np.uint8]

    def __len__(self) -> int:
        return int(self.offsets.shape[0]) - 1

    @property
    def lengths(self) -> npt.NDArray[np.int64]:
        """Length in bytes of each value."""
        return np.diff(self.offsets)

    @property
    def total_size(self) -> int:
        """Bytes of value data, without any length prefixes."""
        return int(self.offsets[-1] - self.offsets[0])

    def __getitem__(self, index: slice) -> BinaryValues:
        """A zero-copy slice of whole values (``step`` must be 1)."""
        start, stop, step = index.indices(len(self))
        if step != 1:
            raise ValueError("BinaryValues slices must be contiguous.")
        stop = max(start, stop)
        return BinaryValues(self.offsets[start : stop + 1], self.data)

    def take(self, indices: npt.NDArray[np.integer]) -> BinaryValues:
        """Gather values by index into a new compact buffer (vectorised)."""
        starts = self.offsets[:-1][indices]
        lengths = (self.offsets[1:][indices] - starts).astype(np.int64)
        new_offsets = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
        np.cumsum(lengths, out=new_offsets[1:])
        total = int(new_offsets[-1])
        if total == 0:
            return BinaryValues(new_offsets, np.zeros(0, dtype=np.uint8))
        # Position i of the output reads data[starts[k] + (i - new_offsets[k])] for its value k.
        owner = np.repeat(np.arange(lengths.shape[0]), lengths)
        src = np.arange(total, dtype=np.int64) - new_offsets[:-1][owner] + starts[owner]
        return BinaryValues(new_offsets, self.data[src])

    def to_pylist(self) -> list[bytes]:
        """The values as Python bytes (tests and reference implementations only)."""
        raw = self.data.tobytes()
        offs = self.offsets.tolist()
        return [raw[offs[i] : offs[i + 1]] for i in range(len(self))]

    @classmethod
    def from_pylist(cls, values: list[bytes]) -> BinaryValues:
        """Build from Python bytes (tests and reference implementations only)."""
        lengths = np.fromiter((len(v) for v in values), dtype=np.int64, count=len(values))
        offsets = np.zeros(len(values) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.frombuffer(b"".join(values), dtype=np.uint8).copy()
        return cls(offsets, data)


ColumnValues: TypeAlias = "np.ndarray | BinaryValues"


def count_values(values: np.ndarray | BinaryValues) -> int:
    """How many values ``values`` holds, whatever its physical form."""
    return len(values) if isinstance(values, BinaryValues) else int(values.shape[0])
