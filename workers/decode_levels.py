"""Repetition and definition levels of a data page (parquet-format "Nested Encoding").

A column whose leaf has maximum repetition level ``R`` and maximum definition level ``D`` stores
one repetition level (when ``R > 0``) and one definition level (when ``D > 0``) per level entry,
each ``bit_width(max)`` bits wide (``bit_width(x) = x.bit_length()``)::

    DATA_PAGE (v1) body, decompressed := [rep_levels] [def_levels] values
        levels := RLE:        u32 LE byte length, RLE/bit-packing hybrid runs
                | BIT_PACKED: ceil(num_values * width / 8) bytes, no length (deprecated)
    DATA_PAGE_V2 body := rep_levels def_levels values   (levels never compressed; their byte
        lengths are ``repetition_levels_byte_length`` / ``definition_levels_byte_length``;
        both RLE hybrid without the length prefix)

BIT_PACKED (parquet-format Encodings.md, "Bit-packed (Deprecated)") packs the values from the
most significant bit to the least significant one: value ``i`` is bits ``[i * w, (i + 1) * w)``
of the byte stream read MSB first, its own bits MSB first. For ``w = 3`` the values 0..7 are
``00000101 00111001 01110111``. (The RLE hybrid's bit-packed runs are LSB first.)

Levels stored as one RLE run (a page without nulls, or of one-element lists) are read without
the general decoder (:func:`single_run`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from streamwrite.errors import ConfigError, FormatError
from streamwrite.format.enums import Encoding
from workers.encoding.rle_hybrid import decode_levels_v1, decode_rle_hybrid

__all__ = [
    "MAX_LEVEL",
    "decode_levels",
    "record_bounds",
    "single_run",
    "unpack_bit_packed_levels",
]

MAX_LEVEL = 255
"""Levels are held as uint8: a schema nested deeper than this is refused."""


def single_run(
    data: bytes | memoryview, width: int, count: int, v1: bool
) -> tuple[npt.NDArray[np.uint8], int] | None:
    """Levels stored as one RLE run of exactly ``count`` values, or None for anything else.

    ``[4-byte length, v1 only] uleb128(count << 1) value`` (value in ``ceil(width / 8)``
    bytes). Returns the levels and the bytes used, as the general decoder would."""
    view = memoryview(data)
    prefix = 4 if v1 else 0
    if len(view) < prefix + 2 or width > 8:
        return None
    size = int.from_bytes(view[:4], "little") if v1 else len(view)
    if size > len(view) - prefix or size > 6:
        return None
    header = 0
    shift = 0
    pos = prefix
    end = prefix + size
    while pos < end:
        byte = view[pos]
        header |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            break
        shift += 7
    else:
        return None
    value_size = (width + 7) // 8
    if header & 1 or header >> 1 != count or pos + value_size != end or value_size != 1:
        return None
    value = view[pos]
    if value >> width:
        return None
    return np.full(count, value, dtype=np.uint8), end if v1 else size


def unpack_bit_packed_levels(
    data: bytes | memoryview, width: int, count: int
) -> tuple[npt.NDArray[np.uint8], int]:
    """Decode ``count`` BIT_PACKED (MSB first) levels of ``width`` bits (0..8).

    Returns:
        The levels and the bytes they take (``ceil(count * width / 8)``).

    Raises:
        FormatError: the page holds fewer bytes than the levels need.
    """
    size = (count * width + 7) // 8
    if len(data) < size:
        raise FormatError(
            f"BIT_PACKED levels need {size} bytes for {count} values of {width} bits, "
            f"but {len(data)} remain in the page."
        )
    if width == 0:
        return np.zeros(count, dtype=np.uint8), 0
    stream = np.frombuffer(data, dtype=np.uint8, count=size)
    bits = np.unpackbits(stream, bitorder="big", count=count * width)
    if width == 1:
        return bits, size
    columns = bits.reshape(count, width)
    levels = columns[:, 0].copy()
    for j in range(1, width):  # at most 8 vectorised passes
        levels <<= 1
        levels |= columns[:, j]
    return levels, size


def decode_levels(
    data: bytes | memoryview, width: int, count: int, encoding: int, v1: bool
) -> tuple[npt.NDArray[np.uint8], int]:
    """Decode ``count`` levels of ``width`` bits at the start of ``data``.

    Args:
        data: the bytes from the levels' start (v1: the decompressed body from there).
        width: the bit width of the column's maximum level (1..8).
        count: level entries in the page.
        encoding: the header's level encoding (RLE or BIT_PACKED; v2 pages are always RLE).
        v1: a data page v1 (RLE levels carry a 4-byte length prefix).

    Returns:
        The levels (uint8; not checked against the maximum) and the bytes they used.

    Raises:
        FormatError: an unsupported encoding, or runs that end early.
    """
    if encoding == Encoding.BIT_PACKED:
        return unpack_bit_packed_levels(data, width, count)
    if encoding != Encoding.RLE:
        raise FormatError(f"Unsupported level encoding {encoding}.")
    single = single_run(data, width, count, v1)
    if single is not None:
        return single
    if v1:
        levels, used = decode_levels_v1(data, width, count)
    else:
        levels, used = decode_rle_hybrid(data, width, count)
    return levels.astype(np.uint8, copy=False), used


def record_bounds(
    rep_levels: npt.NDArray[np.uint8] | None,
    def_levels: npt.NDArray[np.uint8] | None,
    max_definition_level: int,
    num_levels: int,
    start: int,
    stop: int,
) -> tuple[int, int, int, int]:
    """Where records ``[start, stop)`` of a column chunk lie in its levels and values.

    A record is the level entries from one entry with repetition level 0 up to the next
    (``rep_levels`` None: one entry per record); the values are the entries at the maximum
    definition level (``def_levels`` None: every entry).

    Returns:
        ``(level_start, level_stop, value_start, value_stop)``: slice the levels with the first
        two, the values with the last two.

    Raises:
        ConfigError: ``0 <= start <= stop <= records`` does not hold.
    """
    starts = None if rep_levels is None else np.flatnonzero(rep_levels == 0)
    num_records = num_levels if starts is None else int(starts.shape[0])
    if not 0 <= start <= stop <= num_records:
        raise ConfigError(
            f"Records [{start}, {stop}) are not within the chunk's {num_records} records."
        )
    if starts is None:
        level_start, level_stop = start, stop
    else:
        level_start = int(starts[start]) if start < num_records else num_levels
        level_stop = int(starts[stop]) if stop < num_records else num_levels
    if def_levels is None:
        return level_start, level_stop, level_start, level_stop
    defined = def_levels[:level_stop] == max_definition_level
    value_start = int(np.count_nonzero(defined[:level_start]))
    value_stop = value_start + int(np.count_nonzero(defined[level_start:]))
    return level_start, level_stop, value_start, value_stop
