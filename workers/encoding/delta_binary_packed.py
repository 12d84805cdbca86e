"""DELTA_BINARY_PACKED encoding (``Encoding.DELTA_BINARY_PACKED``) for INT32 and INT64.

parquet-format Encodings.md, "Delta Encoding (DELTA_BINARY_PACKED = 5)"::

    delta-binary-packed := <header> <block>*
    header    := uleb128(block size in values) uleb128(miniblocks per block)
                 uleb128(total value count) zigzag-uleb128(first value)
    block     := zigzag-uleb128(min delta) <bit width: 1 byte>{miniblocks per block} <miniblock>*
    miniblock := (delta - min delta) of (block size / miniblocks) values, bit packed LSB first
                 with the miniblock's bit width (padded to a full miniblock with zero bits)

Deltas are taken between consecutive values (the first delta of a block uses the last value of
the previous block); there are ``total value count - 1`` of them. In the last block, miniblocks
holding no delta have bit width 0 and no bytes. All arithmetic wraps, done in the unsigned domain
(uint32 for INT32, uint64 for INT64), so the extreme values round trip.

The encoder matches parquet-cpp (pyarrow) byte for byte with its defaults: 4 miniblocks of
blocks of 128 values for INT32 and 256 values for INT64 (fewer block headers to write and
read, and about 1% smaller). It also accepts other block shapes whose miniblocks hold a multiple
of 8 values (the spec's examples use blocks of 8); the decoder accepts the same, up to 2**20
values a block.

Encoding is width-agnostic, without a loop over bit widths: the whole output is laid out as
fields in file order, one row per block (min delta varint as two little-endian integers, the
bit widths, the deltas minus the block's min), each with its bit count; a cumulative sum gives
every field's bit offset, and the fields are added (their bits are disjoint, so adding is
OR-ing) into uint64 words, low part into the word holding their first bit and high part into
the next one, by ``np.add.at``.

Decoding walks the block headers with one Python step per block (a block's size depends on its
varint and widths), then works on all values at once: the min delta varints are decoded as a
(blocks, 10) byte matrix, and every value is read from the little-endian bit stream with two
aligned uint64 gathers (its first word shifted right, OR the next word shifted left) and a mask,
whatever its miniblock's width; a cumulative sum in uint64 finishes it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from streamwrite.errors import ConfigError, FormatError
from workers.encoding._varint import (
    Buffer,
    as_uint8,
    bit_length_array,
    encode_uleb128,
    read_uleb128,
    read_zigzag,
    zigzag_encode,
)

__all__ = [
    "decode_delta_binary_packed",
    "decode_delta_binary_packed_reference",
    "encode_delta_binary_packed",
    "encode_delta_binary_packed_reference",
]

_MASK64 = (1 << 64) - 1
_MAX_BLOCK_SIZE = 1 << 20
_MAX_VALUES = (1 << 31) - 1
_UNPACK_VALUES = 1 << 16
_SEVENS = np.arange(0, 70, 7, dtype=np.uint64)
_EIGHTS = np.arange(0, 64, 8, dtype=np.uint64)
_TEN = np.arange(10)


def _check_shape(block_size: int, num_miniblocks: int, error: type[Exception]) -> int:
    if not 0 < block_size <= _MAX_BLOCK_SIZE or num_miniblocks <= 0:
        raise error(
            f"DELTA_BINARY_PACKED block size {block_size} with {num_miniblocks} miniblocks is "
            f"invalid (block size 1..{_MAX_BLOCK_SIZE}, at least one miniblock)."
        )
    miniblock_size, rest = divmod(block_size, num_miniblocks)
    if rest or miniblock_size % 8:
        raise error(
            f"DELTA_BINARY_PACKED block size {block_size} does not split into {num_miniblocks} "
            "miniblocks of a multiple of 8 values."
        )
    return miniblock_size


def _int_dtypes(
    dtype: np.dtype[Any],
) -> tuple[type[np.signedinteger[Any]], type[np.unsignedinteger[Any]]]:
    if dtype == np.int32:
        return np.int32, np.uint32
    if dtype == np.int64:
        return np.int64, np.uint64
    raise ConfigError(f"DELTA_BINARY_PACKED handles int32 and int64 values, not {dtype}.")


def encode_delta_binary_packed(
    values: npt.NDArray[np.int32] | npt.NDArray[np.int64],
    block_size: int | None = None,
    num_miniblocks: int = 4,
) -> bytes:
    """Encode int32 or int64 values with DELTA_BINARY_PACKED.

    Args:
        values: the values.
        block_size: values per block (the spec requires a multiple of 128 in files); ``None``
            uses parquet-cpp's choice, 128 for int32 and 256 for int64.
        num_miniblocks: miniblocks per block (the spec requires multiples of 32 values in each).

    Returns:
        The encoded bytes.

    Raises:
        ConfigError: for another dtype, or a block shape whose miniblocks are not a multiple of
            8 values.
    """
    arr = np.asarray(values)
    signed, unsigned = _int_dtypes(arr.dtype)
    if block_size is None:
        block_size = 256 if signed is np.int64 else 128
    miniblock_size = _check_shape(block_size, num_miniblocks, ConfigError)
    v = np.ascontiguousarray(arr, dtype=signed).reshape(-1)
    n = int(v.shape[0])
    header = b"".join(
        [
            encode_uleb128(block_size),
            encode_uleb128(num_miniblocks),
            encode_uleb128(n),
            encode_uleb128(zigzag_encode(int(v[0]) if n else 0)),
        ]
    )
    if n <= 1:
        return header
    u = v.view(unsigned)
    num_deltas = n - 1
    num_blocks = -(-num_deltas // block_size)
    m = num_miniblocks
    deltas = np.empty(num_blocks * block_size, dtype=unsigned)
    np.subtract(u[1:], u[:-1], out=deltas[:num_deltas])
    step = deltas[0]
    if bool((deltas[:num_deltas] == step).all()):  # one delta: every bit width is 0
        zigzag = zigzag_encode(int(step.view(signed)))
        return header + (encode_uleb128(zigzag) + bytes(m)) * num_blocks
    deltas[num_deltas:] = deltas[(num_blocks - 1) * block_size]  # a real delta: min unchanged
    mins = deltas.view(signed).reshape(num_blocks, block_size).min(axis=1)
    rel = deltas.reshape(num_blocks, block_size)
    rel -= mins.view(unsigned)[:, None]
    rel.reshape(-1)[num_deltas:] = 0
    widths = bit_length_array(rel.reshape(num_blocks * m, miniblock_size).max(axis=1))
    mins64 = mins.astype(np.int64)
    low, high, varint_size = _varint_fields(((mins64 << 1) ^ (mins64 >> 63)).view(np.uint64))
    # The whole encoding as fields in file order, one row per block: the min delta varint
    # (bytes 0-7, then 8-9), the m bit widths, the block_size deltas; values and bit counts.
    row = 2 + m + block_size
    fields = np.empty((num_blocks, row), dtype=np.uint64)
    fields[:, 0] = low
    fields[:, 1] = high
    fields[:, 2 : 2 + m] = widths.reshape(num_blocks, m)
    fields[:, 2 + m :] = rel
    bits = np.empty((num_blocks, row), dtype=np.int64)
    bits[:, 0] = 8 * np.minimum(varint_size, 8)
    bits[:, 1] = 8 * varint_size - bits[:, 0]
    bits[:, 2 : 2 + m] = 8
    bits[:, 2 + m :].reshape(num_blocks, m, miniblock_size)[...] = widths.reshape(num_blocks, m, 1)
    offsets = np.cumsum(bits.reshape(-1))
    size = len(header) + int(offsets[-1]) // 8
    offsets -= bits.reshape(-1)
    offsets += 8 * len(header)
    words = np.zeros(size // 8 + 2, dtype="<u8")
    _pack_fields(words, offsets, fields.reshape(-1))
    out = words.view(np.uint8)
    out[: len(header)] = np.frombuffer(header, dtype=np.uint8)
    return out[:size].tobytes()


def _varint_fields(
    values: npt.NDArray[np.uint64],
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
    """ULEB128 of each value as little-endian integers: ``(bytes 0-7, bytes 8-9, byte count)``."""
    size = np.maximum((bit_length_array(values) + 6) // 7, 1)
    groups = (values[:, None] >> _SEVENS[None, :]) & np.uint64(0x7F)
    groups |= (_TEN[None, :] < size[:, None] - 1).astype(np.uint64) << np.uint64(7)
    groups[:, :8] <<= _EIGHTS[None, :]
    low: npt.NDArray[np.uint64] = np.bitwise_or.reduce(groups[:, :8], axis=1)
    high = groups[:, 8] | (groups[:, 9] << np.uint64(8))
    return low, high, size


def _pack_fields(
    words: npt.NDArray[np.uint64],
    offsets: npt.NDArray[np.int64],
    values: npt.NDArray[np.uint64],
) -> None:
    """Add each value into the little-endian bit stream ``words`` at its bit offset.

    The values must occupy disjoint bit ranges over zero bits (each below the next one's
    offset), so adding is OR-ing: every value adds its low part, shifted to its offset, to its
    first word and its high part (0 unless it straddles) to the next word, by ``np.add.at``
    (which has a fast path, unlike ``np.bitwise_or.at``). Slices of about 64k values stay in
    cache.
    """
    for first in range(0, int(values.shape[0]), _UNPACK_VALUES):
        offset = offsets[first : first + _UNPACK_VALUES]
        value = values[first : first + _UNPACK_VALUES]
        index = offset >> 6
        shift = (offset & 63).view(np.uint64)
        np.add.at(words, index, value << shift)
        index += 1
        shift = np.uint64(64) - shift
        np.add.at(words, index, value >> shift)


def decode_delta_binary_packed(
    buf: Buffer, dtype: npt.DTypeLike, num_values: int | None = None
) -> tuple[npt.NDArray[np.int32] | npt.NDArray[np.int64], int]:
    """Decode DELTA_BINARY_PACKED values.

    Args:
        buf: the encoded bytes (may continue past the encoded values).
        dtype: ``np.int32`` (INT32) or ``np.int64`` (INT64).
        num_values: the value count the caller expects; the header must declare exactly this.
            ``None`` trusts the header (bounded by what the buffer can hold).

    Returns:
        ``(values, bytes consumed)``, consumed ending after the last miniblock holding values.

    Raises:
        ConfigError: for another dtype.
        FormatError: if the header is invalid, declares another count, or the data is truncated.
    """
    signed, unsigned = _int_dtypes(np.dtype(dtype))
    data = as_uint8(buf)
    mv = data.data
    size = int(data.shape[0])
    block_size, pos = read_uleb128(mv, 0, "DELTA_BINARY_PACKED block size")
    num_miniblocks, pos = read_uleb128(mv, pos, "DELTA_BINARY_PACKED miniblock count")
    total, pos = read_uleb128(mv, pos, "DELTA_BINARY_PACKED value count")
    first, pos = read_zigzag(mv, pos, "DELTA_BINARY_PACKED first value")
    miniblock_size = _check_shape(block_size, num_miniblocks, FormatError)
    if num_values is not None and total != num_values:
        raise FormatError(
            f"The DELTA_BINARY_PACKED header declares {total} values where {num_values} are "
            "expected."
        )
    if total > _MAX_VALUES:
        raise FormatError(f"The DELTA_BINARY_PACKED header declares {total} values (> 2**31 - 1).")
    if total == 0:
        return np.zeros(0, dtype=signed), pos
    num_deltas = total - 1
    num_blocks = -(-num_deltas // block_size)
    if num_blocks * (1 + num_miniblocks) > size - pos:
        raise FormatError(
            f"DELTA_BINARY_PACKED data of {size} bytes cannot hold the {num_blocks} blocks its "
            f"header's {total} values need."
        )
    if num_blocks == 0:
        return np.array([first & _MASK64], dtype=np.uint64).astype(unsigned).view(signed), pos
    last_deltas = num_deltas - (num_blocks - 1) * block_size
    last_used = -(-last_deltas // miniblock_size)
    starts, width_starts, end = _scan_blocks(
        mv, pos, num_blocks, num_miniblocks, miniblock_size // 8, last_used
    )
    if end > size:
        raise FormatError(
            f"DELTA_BINARY_PACKED data of {size} bytes ends before its last miniblock (byte {end})."
        )
    start_arr = np.array(starts, dtype=np.int64)
    width_arr = np.array(width_starts, dtype=np.int64)
    mins = _read_min_deltas(data, start_arr, width_arr)
    widths = data[width_arr[:, None] + np.arange(num_miniblocks)].astype(np.int64)
    widths[-1, last_used:] = 0
    if int(widths.max()) > 64:
        block, mini = divmod(int(np.argmax(widths > 64)), num_miniblocks)
        raise FormatError(
            f"DELTA_BINARY_PACKED block {block} declares bit width {int(widths[block, mini])} "
            f"for miniblock {mini} (at most 64)."
        )
    sizes = widths * (miniblock_size // 8)
    data_starts = (width_arr + num_miniblocks)[:, None] + np.cumsum(sizes, axis=1) - sizes
    out = np.empty(1 + num_blocks * block_size, dtype=np.uint64)
    out[0] = first & _MASK64
    _unpack_rows(
        _as_words(data, end),
        data_starts.reshape(-1) * 8,
        widths.reshape(-1),
        miniblock_size,
        out[1:],
    )
    out[1:].reshape(num_blocks, block_size)[...] += mins[:, None]
    values = out[:total]
    np.cumsum(values, out=values)
    if unsigned is np.uint64:
        return values.view(signed), end
    return values.astype(unsigned).view(signed), end


def _read_min_deltas(
    data: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], stops: npt.NDArray[np.int64]
) -> npt.NDArray[np.uint64]:
    """The blocks' zigzag varint min deltas in ``data[starts[i]:stops[i]]``, as wrapped uint64.

    Raises:
        FormatError: if a varint is longer than 10 bytes or exceeds 64 bits.
    """
    lengths = stops - starts
    if int(lengths.max()) > 10:
        block = int(np.argmax(lengths > 10))
        raise FormatError(
            f"The min delta varint of DELTA_BINARY_PACKED block {block} at byte "
            f"{int(starts[block])} is longer than 10 bytes."
        )
    width = int(lengths.max())
    index = np.minimum(starts[:, None] + np.arange(width), data.shape[0] - 1)
    raw = data[index].astype(np.uint64) & np.uint64(0x7F)
    raw[np.arange(width)[None, :] >= lengths[:, None]] = 0
    if width == 10 and int(raw[:, 9].max()) > 1:
        block = int(np.argmax(raw[:, 9] > 1))
        raise FormatError(
            f"The min delta varint of DELTA_BINARY_PACKED block {block} at byte "
            f"{int(starts[block])} exceeds 64 bits."
        )
    raw <<= np.arange(0, 7 * width, 7, dtype=np.uint64)[None, :]
    zigzag: npt.NDArray[np.uint64] = np.bitwise_or.reduce(raw, axis=1)
    return (zigzag >> np.uint64(1)) ^ (np.uint64(0) - (zigzag & np.uint64(1)))


def _scan_blocks(
    mv: memoryview,
    pos: int,
    num_blocks: int,
    num_miniblocks: int,
    bytes_per_width: int,
    last_used: int,
) -> tuple[list[int], list[int], int]:
    """Walk the block headers: each block's start, the start of its bit widths, and the end.

    One Python step per block (not per value): a block's size depends on its min delta's varint
    length and its widths, so the block starts form a chain. The caller validates the bounds,
    varint lengths and widths, vectorised.

    Raises:
        FormatError: if a block header runs past the end of ``mv``.
    """
    starts = [0] * num_blocks
    width_starts = [0] * num_blocks
    m = num_miniblocks
    block = 0
    try:
        for block in range(num_blocks - 1):
            starts[block] = pos
            while mv[pos] > 127:
                pos += 1
            pos += 1
            width_starts[block] = pos
            pos += m + sum(mv[pos : pos + m]) * bytes_per_width
        block = num_blocks - 1
        starts[block] = pos
        while mv[pos] > 127:
            pos += 1
        pos += 1
        width_starts[block] = pos
        pos += m + sum(mv[pos : pos + last_used]) * bytes_per_width
    except IndexError:
        raise FormatError(
            f"DELTA_BINARY_PACKED block {block} starting at byte {starts[block]} is truncated "
            f"in {len(mv)} bytes."
        ) from None
    return starts, width_starts, pos


def _as_words(data: npt.NDArray[np.uint8], end: int) -> npt.NDArray[np.uint64]:
    """``data[:end]`` copied into little-endian uint64 words, with at least 8 zero bytes after."""
    words = np.zeros(end // 8 + 2, dtype="<u8")
    words.view(np.uint8)[:end] = data[:end]
    return words


def _unpack_rows(
    words: npt.NDArray[np.uint64],
    bit_starts: npt.NDArray[np.int64],
    widths: npt.NDArray[np.int64],
    row_size: int,
    out: npt.NDArray[np.uint64],
) -> None:
    """Unpack rows of ``row_size`` values, row ``r`` packed with ``widths[r]`` bits from bit
    ``bit_starts[r]`` of the little-endian bit stream ``words``, into ``out`` (rows * row_size).

    Each value is the word holding its first bit shifted right, OR the next word shifted left
    (numpy shifts by the word size give 0), masked to its width: two aligned gathers per value,
    in slices of about 64k values to stay in cache. With widths up to 32 and under 2**31 bits
    the words are uint32 and the offsets int32 (half the memory traffic).
    """
    narrow = int(widths.max(initial=0)) <= 32 and int(words.shape[0]) < 1 << 25
    word_type = np.uint32 if narrow else np.uint64
    offset_type = np.int32 if narrow else np.int64
    stream = words.view(word_type)
    word_bits = 32 if narrow else 64
    log_bits = word_bits.bit_length() - 1
    starts: npt.NDArray[np.signedinteger[Any]] = bit_starts.astype(offset_type)
    row_widths: npt.NDArray[np.signedinteger[Any]] = widths.astype(offset_type)
    positions: npt.NDArray[np.signedinteger[Any]] = np.arange(row_size, dtype=offset_type)
    masks = np.uint64(0xFFFFFFFFFFFFFFFF) >> (np.uint64(64) - widths.astype(np.uint64))
    masks = masks.astype(word_type)
    full = word_type(word_bits)
    step = max(1, _UNPACK_VALUES // row_size)
    for first in range(0, int(widths.shape[0]), step):
        rows = slice(first, first + step)
        bit = starts[rows, None] + positions[None, :] * row_widths[rows, None]
        index = (bit >> log_bits).reshape(-1)
        shift: npt.NDArray[Any] = (bit & (word_bits - 1)).astype(word_type).reshape(-1)
        value = np.take(stream, index)
        value >>= shift
        index += 1
        high = np.take(stream, index)
        high <<= np.subtract(full, shift)
        value |= high
        chunk = out[first * row_size : (first + step) * row_size].reshape(-1, row_size)
        np.bitwise_and(value.reshape(-1, row_size), masks[rows, None], out=chunk)


# ---------------------------------------------------------------------------------------------
# Reference implementations (per-value loops; used by the property tests only).


def encode_delta_binary_packed_reference(
    values: list[int], bits: int, block_size: int = 128, num_miniblocks: int = 4
) -> bytes:
    """Pure-Python :func:`encode_delta_binary_packed` for ``bits``-wide signed integers."""
    from workers.encoding.rle_hybrid import pack_bits_reference

    mask = (1 << bits) - 1
    miniblock_size = block_size // num_miniblocks

    def signed(x: int) -> int:
        x &= mask
        return x - (1 << bits) if x >> (bits - 1) else x

    out = bytearray()
    out += encode_uleb128(block_size) + encode_uleb128(num_miniblocks)
    out += encode_uleb128(len(values)) + encode_uleb128(zigzag_encode(values[0] if values else 0))
    deltas = [signed(values[i] - values[i - 1]) for i in range(1, len(values))]
    for start in range(0, len(deltas), block_size):
        block = deltas[start : start + block_size]
        min_delta = min(block)
        out += encode_uleb128(zigzag_encode(min_delta))
        widths = []
        bodies = []
        for m in range(num_miniblocks):
            mini = [
                (d - min_delta) & mask for d in block[m * miniblock_size : (m + 1) * miniblock_size]
            ]
            if not mini:
                widths.append(0)
                continue
            width = max(mini).bit_length()
            widths.append(width)
            bodies.append(pack_bits_reference(mini + [0] * (miniblock_size - len(mini)), width))
        out += bytes(widths) + b"".join(bodies)
    return bytes(out)


def decode_delta_binary_packed_reference(buf: bytes, bits: int) -> tuple[list[int], int]:
    """Pure-Python :func:`decode_delta_binary_packed` for ``bits``-wide signed integers."""
    from workers.encoding.rle_hybrid import unpack_bits_reference

    mask = (1 << bits) - 1
    block_size, pos = read_uleb128(buf, 0)
    num_miniblocks, pos = read_uleb128(buf, pos)
    total, pos = read_uleb128(buf, pos)
    first, pos = read_zigzag(buf, pos)
    _check_shape(block_size, num_miniblocks, FormatError)
    miniblock_size = block_size // num_miniblocks
    if total == 0:
        return [], pos
    out = [first & mask]
    while len(out) < total:
        min_delta, pos = read_zigzag(buf, pos)
        widths = buf[pos : pos + num_miniblocks]
        if len(widths) < num_miniblocks:
            raise FormatError("DELTA_BINARY_PACKED bit widths are truncated.")
        pos += num_miniblocks
        for width in widths:
            if len(out) >= total:
                break
            nbytes = width * miniblock_size // 8
            if width > 64 or pos + nbytes > len(buf):
                raise FormatError("DELTA_BINARY_PACKED miniblock is invalid or truncated.")
            for rel in unpack_bits_reference(buf[pos : pos + nbytes], width, miniblock_size):
                if len(out) < total:
                    out.append((out[-1] + min_delta + rel) & mask)
            pos += nbytes
    return [x - (1 << bits) if x >> (bits - 1) else x for x in out], pos
