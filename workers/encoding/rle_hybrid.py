"""RLE / bit-packing hybrid encoding (``Encoding.RLE``) and the bit-packing primitives.

parquet-format Encodings.md, "Run Length Encoding / Bit-Packing Hybrid (RLE = 3)"::

    rle-bit-packed-hybrid := <length> <encoded-data>     (<length> only where noted below)
    length                := byte length of <encoded-data>, 4 bytes little endian
    encoded-data          := <run>*
    run                   := <bit-packed-run> | <rle-run>
    bit-packed-run        := <bit-packed-header> <bit-packed-values>
    bit-packed-header     := uleb128(<number of 8-value groups> << 1 | 1)
    bit-packed-values     := groups * bit_width bytes, values packed LSB first
    rle-run               := <rle-header> <repeated-value>
    rle-header            := uleb128(<run length> << 1)
    repeated-value        := the value in ceil(bit_width / 8) bytes, little endian

Bit packing (LSB first): value ``i`` occupies bits ``[i * w, (i + 1) * w)`` of the byte stream,
bit 0 being the least significant bit of byte 0. The length prefix is written for data page v1
levels (:func:`encode_levels_v1`) and RLE boolean values (:func:`encode_boolean_rle`); dictionary
indices and data page v2 levels have none.

Run choice follows parquet-cpp / arrow-rs (``RleEncoder``) byte for byte: values are taken in
groups of 8 counted from the end of the previous RLE run; a group whose 8 values are equal starts
an RLE run that lasts as long as the value repeats; other groups go to bit-packed runs of at most
63 groups; a final partial group becomes an RLE run when it is all one value and no bit-packed run
is open, else it is padded with zeros into a bit-packed run.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from streamwrite.errors import ConfigError, FormatError, LimitError
from workers.encoding._varint import Buffer, as_uint8, encode_uleb128, read_uleb128

__all__ = [
    "decode_boolean_rle",
    "decode_levels_v1",
    "decode_rle_hybrid",
    "decode_rle_hybrid_reference",
    "encode_boolean_rle",
    "encode_levels_v1",
    "encode_rle_hybrid",
    "encode_rle_hybrid_reference",
    "pack_bits",
    "pack_bits_reference",
    "unpack_bits",
    "unpack_bits_reference",
]

_SMALL = 2048  # below this many values the bit-matrix path beats the 64-value word path
_MAX_GROUPS = 63  # bit-packed run length limit used by parquet-cpp and arrow-rs
_MAX_VALUES = (1 << 31) - 1


def _check_width(bit_width: int, limit: int) -> None:
    if not 0 <= bit_width <= limit:
        raise ConfigError(f"The bit width {bit_width} is outside 0..{limit}.")


def _as_u64(values: npt.ArrayLike, bit_width: int) -> npt.NDArray[np.uint64]:
    arr = np.asarray(values).reshape(-1)
    if arr.size and arr.dtype.kind not in "ub":
        if arr.dtype.kind != "i":
            raise ConfigError(f"Bit packing needs integer values, not {arr.dtype}.")
        if int(arr.min()) < 0:
            raise ConfigError(f"Bit packing needs non-negative values, found {int(arr.min())}.")
    v = arr.astype(np.uint64)
    if v.size and bit_width < 64 and int(v.max()) >> bit_width:
        raise ConfigError(f"The value {int(v.max())} does not fit in {bit_width} bits.")
    return v


def _pack_u64(v: npt.NDArray[np.uint64], bit_width: int) -> bytes:
    """Pack validated uint64 values; the output covers ``ceil(n / 8) * 8`` values."""
    n = int(v.shape[0])
    padded = (n + 7) // 8 * 8
    if bit_width == 0 or n == 0:
        return b""
    nbytes = padded * bit_width // 8
    if bit_width in (8, 16, 32, 64):
        out = np.zeros(padded, dtype=f"<u{bit_width // 8}")
        out[:n] = v
        return out.tobytes()
    if n <= _SMALL:
        shifts = np.arange(bit_width, dtype=np.uint64)
        bits = np.zeros((padded, bit_width), dtype=np.uint8)
        bits[:n] = (v[:, None] >> shifts) & np.uint64(1)
        return np.packbits(bits.reshape(-1), bitorder="little").tobytes()
    # Groups of 64 values fill exactly bit_width uint64 words; one shift-or per value position.
    groups = (n + 63) // 64
    vals = np.zeros(groups * 64, dtype=np.uint64)
    vals[:n] = v
    cols = np.ascontiguousarray(vals.reshape(groups, 64).T)
    words = np.zeros((bit_width, groups), dtype=np.uint64)
    for k in range(64):
        bit = k * bit_width
        lo, sh = divmod(bit, 64)
        words[lo] |= cols[k] << np.uint64(sh)
        if sh + bit_width > 64:
            words[lo + 1] |= cols[k] >> np.uint64(64 - sh)
    return np.ascontiguousarray(words.T).astype("<u8").tobytes()[:nbytes]


def pack_bits(values: npt.NDArray[np.unsignedinteger], bit_width: int) -> bytes:
    """Bit-pack unsigned integers LSB first, padding to a multiple of 8 values with zeros.

    Args:
        values: non-negative integers, each below ``2**bit_width``.
        bit_width: bits per value, 0..64 (0 produces no bytes).

    Returns:
        ``ceil(len(values) / 8) * bit_width`` bytes.

    Raises:
        ConfigError: if the bit width is out of range or a value does not fit in it.
    """
    _check_width(bit_width, 64)
    return _pack_u64(_as_u64(values, bit_width), bit_width)


def _unpack_u8(
    data: npt.NDArray[np.uint8], bit_width: int, num_values: int
) -> npt.NDArray[np.uint64]:
    """Unpack from a uint8 array that holds at least ``ceil(num_values * w / 8)`` bytes."""
    n = num_values
    if bit_width == 0 or n == 0:
        return np.zeros(n, dtype=np.uint64)
    padded = (n + 63) // 64 * 64
    need = padded * bit_width // 8
    raw = np.zeros(need, dtype=np.uint8)
    take = min(need, int(data.shape[0]))
    raw[:take] = data[:take]
    if bit_width in (8, 16, 32, 64):
        return raw.view(f"<u{bit_width // 8}")[:n].astype(np.uint64)
    if n <= _SMALL:
        bits = np.unpackbits(raw, bitorder="little", count=n * bit_width).reshape(n, bit_width)
        shifts = np.arange(bit_width, dtype=np.uint64)
        out: npt.NDArray[np.uint64] = np.bitwise_or.reduce(bits.astype(np.uint64) << shifts, axis=1)
        return out
    groups = padded // 64
    words = np.ascontiguousarray(raw.view("<u8").reshape(groups, bit_width).T).astype(np.uint64)
    cols = np.empty((64, groups), dtype=np.uint64)
    mask = np.uint64((1 << bit_width) - 1)
    for k in range(64):
        lo, sh = divmod(k * bit_width, 64)
        col = words[lo] >> np.uint64(sh)
        if sh + bit_width > 64:
            col |= words[lo + 1] << np.uint64(64 - sh)
        cols[k] = col & mask
    return cols.T.reshape(-1)[:n]


def unpack_bits(buf: Buffer, bit_width: int, num_values: int) -> npt.NDArray[np.unsignedinteger]:
    """Unpack ``num_values`` LSB-first bit-packed integers.

    Args:
        buf: packed bytes.
        bit_width: bits per value, 0..64.
        num_values: how many values to read.

    Returns:
        uint32 values for bit widths up to 32, else uint64.

    Raises:
        ConfigError: if the bit width is out of range.
        FormatError: if ``buf`` holds fewer than ``ceil(num_values * bit_width / 8)`` bytes.
    """
    _check_width(bit_width, 64)
    data = as_uint8(buf)
    need = (num_values * bit_width + 7) // 8
    if num_values < 0 or need > data.shape[0]:
        raise FormatError(
            f"Bit-packed data needs {need} bytes for {num_values} values of {bit_width} bits, "
            f"but only {data.shape[0]} are present."
        )
    out = _unpack_u8(data, bit_width, num_values)
    return out.astype(np.uint32) if bit_width <= 32 else out


def _rle_runs(v: npt.NDArray[np.uint64]) -> list[tuple[bool, int, int]]:
    """Split values into runs ``(is_rle, start, end)`` the way parquet-cpp's RleEncoder does."""
    n = int(v.shape[0])
    change = np.flatnonzero(v[1:] != v[:-1]) + 1
    starts = np.concatenate(([0], change))
    ends = np.concatenate((change, [n]))
    is_long = (ends - starts) >= 8
    long_starts: list[int] = starts[is_long].tolist()
    long_ends: list[int] = ends[is_long].tolist()
    runs: list[tuple[bool, int, int]] = []

    def literal(begin: int, stop: int) -> None:
        step = _MAX_GROUPS * 8
        for s in range(begin, stop, step):
            runs.append((False, s, min(s + step, stop)))

    origin = 0
    j = 0
    while True:
        found = -1
        while j < len(long_starts):
            s, e = long_starts[j], long_ends[j]
            if e > origin:
                g = origin if s <= origin else origin + (s - origin + 7) // 8 * 8
                if g + 8 <= e:
                    found = g
                    break
            j += 1
        if found < 0:
            break
        literal(origin, found)
        runs.append((True, found, long_ends[j]))
        origin = long_ends[j]
        j += 1
    full = (n - origin) // 8 * 8
    literal(origin, origin + full)
    tail = origin + full
    if tail < n:
        if (full // 8) % _MAX_GROUPS == 0 and bool(np.all(v[tail:] == v[tail])):
            runs.append((True, tail, n))
        elif full and (full // 8) % _MAX_GROUPS:
            last = runs.pop()
            runs.append((False, last[1], n))
        else:
            runs.append((False, tail, n))
    return runs


def encode_rle_hybrid(values: npt.NDArray[np.unsignedinteger], bit_width: int) -> bytes:
    """Encode values with the RLE / bit-packing hybrid, without a length prefix.

    Args:
        values: non-negative integers below ``2**bit_width``.
        bit_width: bits per value, 0..32.

    Returns:
        The ``<encoded-data>`` bytes.

    Raises:
        ConfigError: if the bit width is out of range or a value does not fit in it.
        LimitError: if there are 2**31 values or more.
    """
    _check_width(bit_width, 32)
    v = _as_u64(values, bit_width)
    n = int(v.shape[0])
    if n == 0:
        return b""
    if n > _MAX_VALUES:
        raise LimitError(f"The RLE/bit-packed hybrid encoder takes < 2**31 values, got {n}.")
    runs = _rle_runs(v)
    rle_marks = np.zeros(n + 1, dtype=np.int8)
    for is_rle, start, end in runs:
        if is_rle:
            rle_marks[start] += 1
            rle_marks[end] -= 1
    literal_values = v[np.cumsum(rle_marks[:n]) == 0]
    packed = _pack_u64(literal_values, bit_width)
    value_size = (bit_width + 7) // 8
    pieces: list[bytes] = []
    cursor = 0
    for is_rle, start, end in runs:
        if is_rle:
            pieces.append(encode_uleb128((end - start) << 1))
            pieces.append(int(v[start]).to_bytes(value_size, "little"))
        else:
            groups = (end - start + 7) // 8
            pieces.append(encode_uleb128(groups << 1 | 1))
            pieces.append(packed[cursor : cursor + groups * bit_width])
            cursor += groups * bit_width
    return b"".join(pieces)


def decode_rle_hybrid(
    buf: Buffer, bit_width: int, num_values: int
) -> tuple[npt.NDArray[np.unsignedinteger], int]:
    """Decode ``num_values`` values of the RLE / bit-packing hybrid (no length prefix).

    Args:
        buf: the encoded runs.
        bit_width: bits per value, 0..64.
        num_values: how many values to decode.

    Returns:
        ``(values, bytes consumed)``; values are uint32 for bit widths up to 32, else uint64.
        Decoding stops after the run that completes ``num_values``.

    Raises:
        ConfigError: if the bit width is out of range.
        FormatError: if the runs end before ``num_values`` values.
    """
    _check_width(bit_width, 64)
    data = as_uint8(buf)
    mv = data.data
    size = int(data.shape[0])
    dtype = np.dtype(np.uint32 if bit_width <= 32 else np.uint64)
    out: npt.NDArray[np.unsignedinteger] = np.zeros(num_values, dtype=dtype)
    value_size = (bit_width + 7) // 8
    literal_runs: list[tuple[int, int, int, int]] = []  # (out start, count, byte start, bytes)
    pos = 0
    filled = 0
    while filled < num_values:
        header, pos = read_uleb128(mv, pos, "RLE/bit-packed run header")
        if header & 1:
            groups = header >> 1
            take = min(groups * 8, num_values - filled)
            need = (take * bit_width + 7) // 8
            if pos + need > size:
                raise FormatError(
                    f"A bit-packed run at byte {pos} needs {need} bytes but {size - pos} remain."
                )
            nbytes = min(groups * bit_width, size - pos)
            literal_runs.append((filled, take, pos, nbytes))
            pos += nbytes
            filled += take
        else:
            if pos + value_size > size:
                raise FormatError(f"The RLE run value at byte {pos} is truncated.")
            value = int.from_bytes(mv[pos : pos + value_size], "little")
            pos += value_size
            take = min(header >> 1, num_values - filled)
            out[filled : filled + take] = value
            filled += take
    if literal_runs:
        chunks = []
        counts = []
        for _, take, start, nbytes in literal_runs:
            groups = (take + 7) // 8
            chunk = np.zeros(groups * bit_width, dtype=np.uint8)
            avail = min(nbytes, groups * bit_width)
            chunk[:avail] = data[start : start + avail]
            chunks.append(chunk)
            counts.append(groups * 8)
        unpacked = _unpack_u8(np.concatenate(chunks), bit_width, sum(counts)).astype(dtype)
        cursor = 0
        for (out_start, take, _, _), count in zip(literal_runs, counts, strict=True):
            out[out_start : out_start + take] = unpacked[cursor : cursor + take]
            cursor += count
    return out, pos


def encode_levels_v1(levels: npt.NDArray[np.unsignedinteger], bit_width: int) -> bytes:
    """Encode data page v1 levels: 4-byte little-endian length, then the hybrid runs.

    Returns:
        The length-prefixed bytes.

    Raises:
        ConfigError: as :func:`encode_rle_hybrid`.
    """
    body = encode_rle_hybrid(levels, bit_width)
    return len(body).to_bytes(4, "little") + body


def decode_levels_v1(
    buf: Buffer, bit_width: int, num_values: int
) -> tuple[npt.NDArray[np.unsignedinteger], int]:
    """Decode length-prefixed hybrid data (data page v1 levels).

    Returns:
        ``(values, 4 + the declared length)``.

    Raises:
        FormatError: if the prefix is truncated, declares more bytes than present, or the runs
            inside it end early.
    """
    data = as_uint8(buf)
    if data.shape[0] < 4:
        raise FormatError(f"The 4-byte RLE length prefix is truncated ({data.shape[0]} bytes).")
    length = int.from_bytes(data[:4].tobytes(), "little")
    if length > data.shape[0] - 4:
        raise FormatError(
            f"The RLE length prefix declares {length} bytes but {data.shape[0] - 4} follow it."
        )
    values, _ = decode_rle_hybrid(data[4 : 4 + length], bit_width, num_values)
    return values, 4 + length


def encode_boolean_rle(values: npt.NDArray[np.bool_]) -> bytes:
    """Encode booleans with ``Encoding.RLE``: 4-byte length prefix, bit width 1.

    Returns:
        The length-prefixed bytes.
    """
    return encode_levels_v1(np.asarray(values, dtype=np.bool_).astype(np.uint8), 1)


def decode_boolean_rle(buf: Buffer, num_values: int) -> tuple[npt.NDArray[np.bool_], int]:
    """Decode ``Encoding.RLE`` booleans.

    Returns:
        ``(bool values, bytes consumed)``.

    Raises:
        FormatError: as :func:`decode_levels_v1`.
    """
    values, used = decode_levels_v1(buf, 1, num_values)
    return values.astype(np.bool_), used


# ---------------------------------------------------------------------------------------------
# Reference implementations (per-value loops; used by the property tests only).


def pack_bits_reference(values: list[int], bit_width: int) -> bytes:
    """Pure-Python :func:`pack_bits`."""
    padded = list(values) + [0] * (-len(values) % 8)
    acc = 0
    for i, value in enumerate(padded):
        acc |= value << (i * bit_width)
    return acc.to_bytes(len(padded) * bit_width // 8, "little")


def unpack_bits_reference(buf: bytes, bit_width: int, num_values: int) -> list[int]:
    """Pure-Python :func:`unpack_bits`."""
    acc = int.from_bytes(buf, "little")
    mask = (1 << bit_width) - 1
    return [(acc >> (i * bit_width)) & mask for i in range(num_values)]


def encode_rle_hybrid_reference(values: list[int], bit_width: int) -> bytes:
    """Pure-Python :func:`encode_rle_hybrid`: a transcription of parquet-cpp's RleEncoder."""
    out = bytearray()
    value_size = (bit_width + 7) // 8
    buffered: list[int] = []
    literal: list[int] = []
    current = 0
    repeat = 0

    def flush_literal() -> None:
        out.extend(encode_uleb128(len(literal) // 8 << 1 | 1))
        out.extend(pack_bits_reference(literal, bit_width))
        literal.clear()

    def flush_repeated() -> None:
        out.extend(encode_uleb128(repeat << 1))
        out.extend(current.to_bytes(value_size, "little"))
        buffered.clear()

    def flush_buffered() -> None:
        nonlocal repeat
        if repeat >= 8:
            buffered.clear()
            if literal:
                flush_literal()
            return
        literal.extend(buffered)
        buffered.clear()
        if len(literal) // 8 + 1 >= 64:
            flush_literal()
        repeat = 0

    for value in values:
        if value == current:
            repeat += 1
            if repeat > 8:
                continue
        else:
            if repeat >= 8:
                flush_repeated()
            repeat = 1
            current = value
        buffered.append(value)
        if len(buffered) == 8:
            flush_buffered()
    if literal or repeat or buffered:
        all_repeat = not literal and (repeat == len(buffered) or not buffered)
        if repeat and all_repeat:
            flush_repeated()
        else:
            literal.extend(buffered + [0] * (-len(buffered) % 8))
            flush_literal()
    return bytes(out)


def decode_rle_hybrid_reference(
    buf: bytes, bit_width: int, num_values: int
) -> tuple[list[int], int]:
    """Pure-Python :func:`decode_rle_hybrid`."""
    out: list[int] = []
    pos = 0
    value_size = (bit_width + 7) // 8
    while len(out) < num_values:
        header, pos = read_uleb128(buf, pos, "RLE/bit-packed run header")
        if header & 1:
            count = (header >> 1) * 8
            take = min(count, num_values - len(out))
            need = (take * bit_width + 7) // 8
            if pos + need > len(buf):
                raise FormatError("A bit-packed run is truncated.")
            chunk = buf[pos : pos + (header >> 1) * bit_width]
            out.extend(unpack_bits_reference(chunk, bit_width, take))
            pos += len(chunk)
        else:
            if pos + value_size > len(buf):
                raise FormatError("An RLE run value is truncated.")
            value = int.from_bytes(buf[pos : pos + value_size], "little")
            pos += value_size
            out.extend([value] * min(header >> 1, num_values - len(out)))
    return out, pos
