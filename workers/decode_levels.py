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
the general decoder (:func:`single_run`). Other RLE levels go through :func:`decode_level_runs`,
the RLE hybrid decoder for widths up to 8: nested levels come in many short runs (a run per
few list elements), so its loop over run headers does only the header arithmetic and collects
the runs; the values are then placed with one ``np.repeat`` and one bit unpack for all runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from streamwrite.errors import ConfigError, FormatError
from streamwrite.format.enums import Encoding

__all__ = [
    "MAX_LEVEL",
    "decode_level_runs",
    "decode_level_runs_loop",
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
    bytes). Returns the levels and the bytes used, as the general decoder would. Zero values
    are declined: the general decoder reads no run for them (0 bytes used without a prefix)."""
    view = memoryview(data)
    prefix = 4 if v1 else 0
    if len(view) < prefix + 2 or width > 8 or count == 0:
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


def _unpack_lsb_first(
    stream: npt.NDArray[np.uint8], width: int, count: int
) -> npt.NDArray[np.uint8]:
    """``count`` values of ``width`` (1..8) bits packed LSB first (the hybrid's bit packing)."""
    bits = np.unpackbits(stream, bitorder="little", count=count * width)
    if width == 1:
        return bits
    columns = bits.reshape(count, width)
    levels = columns[:, width - 1].copy()
    for j in range(width - 2, -1, -1):  # at most 7 vectorised passes
        levels <<= 1
        levels |= columns[:, j]
    return levels


_JUMP_DOUBLINGS = 4
_JUMP_RUNS = 1 << _JUMP_DOUBLINGS
_TABLE_MAX_SIZE = 1 << 30
_PROBE_RUNS = 32
_PROBE_SHARE = 8  # 32 runs over 1/8 of the bytes: under ~256 runs in all


def decode_level_runs(
    buf: bytes | memoryview, width: int, count: int
) -> tuple[npt.NDArray[np.uint8], int]:
    """Decode ``count`` values of the RLE / bit-packing hybrid (no length prefix), width 1..8.

    Equal to :func:`workers.encoding.rle_hybrid.decode_rle_hybrid` (tested), without a Python
    step per run: every byte is first read, vectorised, as if a run header of one or two
    bytes started there (a 256-entry table for one-byte headers): the values that run counts
    and where the next run would start. :func:`_walk` follows that chain from byte 0; the
    values of all runs are placed at once (:func:`_place`). Anything unusual on the chain (a
    header over 2 bytes, i.e. a run of 8192 values or more, a truncated run, too few values)
    goes to :func:`decode_level_runs_loop`, which decodes it or raises the precise error.

    Returns:
        The values (uint8) and the bytes used up to the end of the run completing ``count``.

    Raises:
        FormatError: a run header or value is truncated, a bit-packed run needs more bytes
            than remain, or the runs end before ``count`` values.
    """
    data = bytes(buf)
    size = len(data)
    if count == 0:
        return np.zeros(0, dtype=np.uint8), 0
    if size >= _TABLE_MAX_SIZE or _few_runs(data, width):  # int32 positions; loop cheaper
        return decode_level_runs_loop(data, width, count)
    padded = np.zeros(size + 2, dtype=np.uint8)
    padded[:size] = np.frombuffer(data, dtype=np.uint8)
    first = padded[:size]
    # one-byte headers (runs under 64 values or groups) by table lookup; two-byte ones fixed
    # up where the first byte has its high bit; longer headers are left to the loop
    table = np.arange(256, dtype=np.int32)
    table_steps = 1 + np.where(table & 1, (table >> 1) * width, 1)
    table_counts = np.where(table & 1, (table >> 1) << 3, table >> 1).astype(np.int32)
    next_start = table_steps.astype(np.int32)[first]
    run_counts = table_counts[first]
    multi = np.flatnonzero(first >= 0x80)
    bad = np.zeros(size, dtype=np.bool_)
    if multi.shape[0]:
        header_size, header = _two_byte_headers(padded, multi)
        half = header >> 1
        bit_packed = (header & 1).astype(np.bool_)
        next_start[multi] = header_size + np.where(bit_packed, half * width, 1)
        run_counts[multi] = np.where(bit_packed, half << 3, half)
        bad[multi] = (padded[multi + 1] >= 0x80) | (multi + 2 > size)
    next_start += np.arange(size, dtype=np.int32)
    next_start[bad] = size
    starts = _walk(next_start, run_counts, size, count)
    if starts is None or bool(bad[starts].any()):
        return decode_level_runs_loop(data, width, count)
    header_size, header = _two_byte_headers(padded, starts)
    packed = (header & 1).astype(np.bool_)
    body_start = starts + header_size
    takes = np.where(packed, (header >> 1) << 3, header >> 1).astype(np.int64)
    takes[-1] -= int(takes.sum()) - count
    last_end = int(body_start[-1]) + (int(header[-1] >> 1) * width if packed[-1] else 1)
    if packed[-1]:
        need = (int(takes[-1]) * width + 7) >> 3
        if int(body_start[-1]) + need > size:
            return decode_level_runs_loop(data, width, count)
        used = min(last_end, size)
    else:
        if int(body_start[-1]) >= size:
            return decode_level_runs_loop(data, width, count)
        used = last_end
    values = np.zeros(starts.shape[0], dtype=np.uint8)
    rle = ~packed
    values[rle] = padded[body_start[rle]]
    value_starts = np.cumsum(takes) - takes
    packed_starts = body_start[packed]
    packed_takes = takes[packed]
    packed_sizes = (packed_takes * width + 7) >> 3
    runs = np.stack((value_starts[packed], packed_takes, packed_starts, packed_sizes), axis=1)
    return _place(data, width, count, values, takes, runs), used


def _few_runs(data: bytes, width: int) -> bool:
    """Whether ``data`` likely holds few runs (long bit-packed or RLE runs: the loop costs less
    than the table's fixed ~50 numpy calls): the first ``_PROBE_RUNS`` headers, if they span
    more than ``1 / _PROBE_SHARE`` of the bytes, or end the data."""
    size = len(data)
    pos = 0
    for _ in range(_PROBE_RUNS):
        if pos >= size:
            return True
        header = data[pos]
        pos += 1
        if header & 0x80:
            if pos >= size:
                return True
            header = header & 0x7F | (data[pos] & 0x7F) << 7
            pos += 1
        pos += (header >> 1) * width if header & 1 else 1
    return pos * _PROBE_SHARE >= size


def _two_byte_headers(
    padded: npt.NDArray[np.uint8], positions: npt.NDArray[np.signedinteger[Any]]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The sizes (1 or 2) and values of the run headers at ``positions``, read as headers of
    at most two bytes (``padded`` has a byte past each position)."""
    low = padded[positions].astype(np.int64)
    more = low >= 0x80
    high = padded[positions + 1].astype(np.int64) & 0x7F
    return 1 + more, (low & 0x7F) | np.where(more, high << 7, 0)


def _walk(
    next_start: npt.NDArray[np.int32], run_counts: npt.NDArray[np.int32], size: int, count: int
) -> npt.NDArray[np.int32] | None:
    """The run starts along the chain from byte 0 up to the run completing ``count`` values
    (None if the chain ends first). ``next_start[p]`` / ``run_counts[p]``: where the run after
    a run starting at ``p`` starts and how many values it counts.

    Jumps over ``_JUMP_RUNS`` runs (next position and values) are built by three pointer
    doublings over all bytes; the Python walk takes one jump per step; the runs inside the
    jumps taken are then filled in with one gather per run position in a jump.
    """
    step = np.empty(size + 1, dtype=np.int32)  # position ``size``: the end (a fixed point)
    np.minimum(next_start, size, out=step[:size])
    step[size] = size
    step_count = np.zeros(size + 1, dtype=np.int32)
    step_count[:size] = run_counts
    jump, jump_count = step, step_count
    for _ in range(_JUMP_DOUBLINGS):
        jump_count = jump_count + jump_count[jump]
        jump = jump[jump]
    coarse: list[int] = []
    pos = filled = 0
    while pos < size:
        coarse.append(pos)
        ahead = jump_count.item(pos)
        if filled + ahead >= count:
            break
        filled += ahead
        pos = jump.item(pos)
    if not coarse:
        return None
    rows = np.empty((len(coarse), _JUMP_RUNS), dtype=np.int32)
    rows[:, 0] = coarse
    for i in range(1, _JUMP_RUNS):
        rows[:, i] = step[rows[:, i - 1]]
    chain = rows.reshape(-1)
    chain = chain[chain < size]
    done = np.cumsum(step_count[chain], dtype=np.int64)
    last = int(np.searchsorted(done, count, side="left"))
    if last == chain.shape[0]:
        return None
    return chain[: last + 1]


def decode_level_runs_loop(
    buf: bytes | memoryview, width: int, count: int
) -> tuple[npt.NDArray[np.uint8], int]:
    """Decode ``count`` values of the RLE / bit-packing hybrid (no length prefix), width 1..8.

    Equal to :func:`workers.encoding.rle_hybrid.decode_rle_hybrid` (tested) and 3-5x faster
    on many short runs: the loop over run headers only does the header arithmetic and
    collects the runs; one ``np.repeat`` and one bit unpack place the values of all runs.
    (A loop-free walk over the headers, every byte read as a would-be header and the chain
    followed by pointer doubling, was measured 3-4x slower than this loop on nested pages.)

    Returns:
        The values (uint8) and the bytes used up to the end of the run completing ``count``.

    Raises:
        FormatError: a run header or value is truncated, a bit-packed run needs more bytes
            than remain, or the runs end before ``count`` values.
    """
    data = bytes(buf)
    size = len(data)
    pos = filled = 0
    run_values: list[int] = []  # one per run (0 for a bit-packed run, filled in below)
    run_counts: list[int] = []
    packed: list[tuple[int, int, int, int]] = []  # (first value, values, byte start, bytes)
    while filled < count:
        if pos >= size:
            raise FormatError(f"The level runs end after {filled} of {count} values.")
        header = data[pos]
        pos += 1
        if header & 0x80:  # a header of more than one byte (runs over 63 values or groups)
            header &= 0x7F
            shift = 7
            while True:
                if pos >= size or shift > 63:
                    raise FormatError(f"The run header before byte {pos} is truncated.")
                byte = data[pos]
                pos += 1
                if shift == 63 and byte & 0x7F > 1:
                    raise FormatError(f"The run header ending at byte {pos} exceeds 64 bits.")
                header |= (byte & 0x7F) << shift
                if not byte & 0x80:
                    break
                shift += 7
        left = count - filled
        if header & 1:
            groups = header >> 1
            take = groups << 3
            if take > left:
                take = left
            need = (take * width + 7) >> 3
            if pos + need > size:
                raise FormatError(
                    f"A bit-packed run at byte {pos} needs {need} bytes but {size - pos} remain."
                )
            packed.append((filled, take, pos, need))
            run_values.append(0)
            pos += groups * width
            if pos > size:
                pos = size
        else:
            take = header >> 1
            if take > left:
                take = left
            if pos >= size:
                raise FormatError(f"The RLE run value at byte {pos} is truncated.")
            run_values.append(data[pos])
            pos += 1
        run_counts.append(take)
        filled += take
    runs = np.array(packed, dtype=np.int64).reshape(-1, 4)
    values = np.array(run_values, dtype=np.uint8)
    return _place(data, width, count, values, np.array(run_counts, dtype=np.int64), runs), pos


def _place(
    data: bytes,
    width: int,
    count: int,
    run_values: npt.NDArray[np.uint8],
    run_counts: npt.NDArray[np.int64],
    packed: npt.NDArray[np.int64],
) -> npt.NDArray[np.uint8]:
    """The ``count`` levels of runs with values ``run_values`` (bit-packed runs: anything)
    repeated ``run_counts`` times, the bit-packed runs ``packed`` (rows: first value, values,
    byte start, bytes) unpacked over theirs."""
    levels = np.repeat(run_values, run_counts)
    if packed.shape[0]:
        runs = packed
        takes, starts, sizes = runs[:, 1], runs[:, 2], runs[:, 3]
        # every bit-packed run but the last holds whole groups (8 values = ``width`` bytes),
        # so their bytes back to back are one bit stream of their values in order
        total_size = int(sizes.sum())
        byte_index = np.repeat(starts - (np.cumsum(sizes) - sizes), sizes)
        byte_index += np.arange(total_size, dtype=np.int64)
        stream = np.frombuffer(data, dtype=np.uint8)[byte_index]
        total = int(takes.sum())
        unpacked = _unpack_lsb_first(stream, width, total)
        if total == count:
            levels = unpacked
        else:
            value_index = np.repeat(runs[:, 0] - (np.cumsum(takes) - takes), takes)
            value_index += np.arange(total, dtype=np.int64)
            levels[value_index] = unpacked
    return levels


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
    if not v1:
        return decode_level_runs(data, width, count)
    if len(data) < 4:
        raise FormatError(f"The 4-byte RLE length prefix is truncated ({len(data)} bytes).")
    length = int.from_bytes(data[:4], "little")
    if length > len(data) - 4:
        raise FormatError(
            f"The RLE length prefix declares {length} bytes but {len(data) - 4} follow it."
        )
    levels, _ = decode_level_runs(memoryview(data)[4 : 4 + length], width, count)
    return levels, 4 + length


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
