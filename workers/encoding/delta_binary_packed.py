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

The encoder matches parquet-cpp (pyarrow) byte for byte with the default 128 values per block
and 4 miniblocks. It also accepts other block shapes whose miniblocks hold a multiple of 8 values
(the spec's examples use blocks of 8); the decoder accepts the same, up to 2**20 values a block.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from streamwrite.errors import ConfigError, FormatError
from workers.encoding._bitpack import pack_uint, unpack_uint
from workers.encoding._varint import (
    Buffer,
    as_uint8,
    bit_length_array,
    encode_uleb128,
    encode_uleb128_array,
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
    block_size: int = 128,
    num_miniblocks: int = 4,
) -> bytes:
    """Encode int32 or int64 values with DELTA_BINARY_PACKED.

    Args:
        values: the values.
        block_size: values per block (the spec requires a multiple of 128 in files).
        num_miniblocks: miniblocks per block (the spec requires multiples of 32 values in each).

    Returns:
        The encoded bytes.

    Raises:
        ConfigError: for another dtype, or a block shape whose miniblocks are not a multiple of
            8 values.
    """
    arr = np.asarray(values)
    signed, unsigned = _int_dtypes(arr.dtype)
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
    padded = np.full(num_blocks * block_size, np.iinfo(signed).max, dtype=signed)
    padded[:num_deltas] = (u[1:] - u[:-1]).view(signed)
    mins = padded.reshape(num_blocks, block_size).min(axis=1)
    rel = padded.view(unsigned).reshape(num_blocks, block_size) - mins.view(unsigned)[:, None]
    rel.reshape(-1)[num_deltas:] = 0
    rel_mb = rel.reshape(num_blocks * num_miniblocks, miniblock_size)
    widths = bit_length_array(rel_mb.max(axis=1))

    mins64 = mins.astype(np.int64)
    zigzag = ((mins64 << 1) ^ (mins64 >> 63)).view(np.uint64)
    min_bytes, min_lens = encode_uleb128_array(zigzag)
    data_sizes = (widths * (miniblock_size // 8)).reshape(num_blocks, num_miniblocks)
    block_sizes = min_lens + num_miniblocks + data_sizes.sum(axis=1)
    block_starts = len(header) + np.concatenate(([0], np.cumsum(block_sizes)[:-1]))
    out = np.empty(len(header) + int(block_sizes.sum()), dtype=np.uint8)
    out[: len(header)] = np.frombuffer(header, dtype=np.uint8)
    min_starts = np.concatenate(([0], np.cumsum(min_lens)[:-1]))
    within = np.arange(min_bytes.shape[0], dtype=np.int64) - np.repeat(min_starts, min_lens)
    out[np.repeat(block_starts, min_lens) + within] = min_bytes
    width_starts = block_starts + min_lens
    width_pos = width_starts[:, None] + np.arange(num_miniblocks, dtype=np.int64)
    out[width_pos] = widths.reshape(num_blocks, num_miniblocks).astype(np.uint8)
    data_starts = (
        (width_starts + num_miniblocks)[:, None] + np.cumsum(data_sizes, axis=1) - data_sizes
    )
    data_starts = data_starts.reshape(-1)
    for width in np.unique(widths[widths > 0]).tolist():
        rows = np.flatnonzero(widths == width)
        packed = pack_uint(rel_mb[rows].reshape(-1), width)
        row_bytes = width * miniblock_size // 8
        dst = data_starts[rows][:, None] + np.arange(row_bytes, dtype=np.int64)
        out[dst] = packed.reshape(rows.shape[0], row_bytes)
    return out.tobytes()


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
    mins: list[int] = []
    rows: list[int] = []
    row_widths: list[int] = []
    row_offsets: list[int] = []
    remaining = num_deltas
    for block in range(num_blocks):
        min_delta, pos = read_zigzag(mv, pos, "DELTA_BINARY_PACKED min delta")
        mins.append(min_delta & _MASK64)
        if pos + num_miniblocks > size:
            raise FormatError(f"DELTA_BINARY_PACKED bit widths at byte {pos} are truncated.")
        widths = bytes(mv[pos : pos + num_miniblocks])
        pos += num_miniblocks
        used = min(num_miniblocks, -(-min(remaining, block_size) // miniblock_size))
        for i in range(used):
            width = widths[i]
            nbytes = width * miniblock_size // 8
            if width > 64 or pos + nbytes > size:
                raise FormatError(
                    f"DELTA_BINARY_PACKED miniblock at byte {pos} (bit width {width}) is invalid "
                    f"or truncated in {size} bytes."
                )
            rows.append(block * num_miniblocks + i)
            row_widths.append(width)
            row_offsets.append(pos)
            pos += nbytes
        remaining -= block_size
    rel = np.zeros((num_blocks * num_miniblocks, miniblock_size), dtype=np.uint64)
    rows_arr = np.array(rows, dtype=np.int64)
    widths_arr = np.array(row_widths, dtype=np.int64)
    offsets_arr = np.array(row_offsets, dtype=np.int64)
    for width in np.unique(widths_arr[widths_arr > 0]).tolist():
        sel = np.flatnonzero(widths_arr == width)
        row_bytes = width * miniblock_size // 8
        raw = data[offsets_arr[sel][:, None] + np.arange(row_bytes, dtype=np.int64)]
        unpacked = unpack_uint(raw.reshape(-1), width, sel.shape[0] * miniblock_size)
        rel[rows_arr[sel]] = unpacked.reshape(sel.shape[0], miniblock_size)
    deltas = rel.reshape(num_blocks, block_size) + np.array(mins, dtype=np.uint64)[:, None]
    out = np.empty(total, dtype=np.uint64)
    out[0] = first & _MASK64
    np.cumsum(deltas.reshape(-1)[:num_deltas], dtype=np.uint64, out=out[1:])
    out[1:] += np.uint64(first & _MASK64)
    return out.astype(unsigned).view(signed), pos


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
