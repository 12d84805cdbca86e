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
from workers.encoding._bitpack import narrow_dtype, pack_uint, unpack_uint
from workers.encoding._varint import (
    Buffer,
    as_uint8,
    encode_uleb128,
    encode_uleb128_array,
    read_uleb128,
)

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

_MAX_GROUPS = 63  # bit-packed run length limit used by parquet-cpp and arrow-rs
_MAX_VALUES = (1 << 31) - 1
_FIXED_POINT_PASSES = 8  # then the RLE run choice finishes with a scalar loop over long runs


def _check_width(bit_width: int, limit: int) -> None:
    if not 0 <= bit_width <= limit:
        raise ConfigError(f"The bit width {bit_width} is outside 0..{limit}.")


def _as_unsigned(values: npt.ArrayLike, bit_width: int) -> npt.NDArray[np.unsignedinteger]:
    """Validate values for ``bit_width`` and return them in the narrowest unsigned dtype."""
    arr = np.asarray(values).reshape(-1)
    if arr.size and arr.dtype.kind not in "ub":
        if arr.dtype.kind != "i":
            raise ConfigError(f"Bit packing needs integer values, not {arr.dtype}.")
        if int(arr.min()) < 0:
            raise ConfigError(f"Bit packing needs non-negative values, found {int(arr.min())}.")
    if arr.size and bit_width < 64 and int(arr.max()) >> bit_width:
        raise ConfigError(f"The value {int(arr.max())} does not fit in {bit_width} bits.")
    return arr.astype(narrow_dtype(bit_width), copy=False)


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
    return pack_uint(_as_unsigned(values, bit_width), bit_width).tobytes()


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
    out = unpack_uint(data, bit_width, num_values)
    return out.astype(np.uint32) if bit_width <= 32 else out


def _long_runs(v: npt.NDArray[np.unsignedinteger]) -> tuple[npt.NDArray[np.int64], ...]:
    """``(starts, ends)`` of the maximal runs of at least 8 equal values."""
    n = int(v.shape[0])
    none = np.zeros(0, dtype=np.int64)
    if n < 8:
        return none, none
    eq = v[1:] == v[:-1]
    eq = eq[:-1] & eq[1:]  # v[i:i + 3] equal
    eq = eq[:-2] & eq[2:]  # v[i:i + 5] equal
    window = eq[:-3] & eq[3:]  # v[i:i + 8] equal
    if not window.any():
        return none, none
    edges = np.diff(window.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1) + 7
    return starts, ends


def _rle_choice(
    starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Which long runs become RLE runs: ``(rle starts, rle ends, literal origins)``.

    A long run becomes an RLE run from the first group boundary inside it (groups of 8 counted
    from the end of the previous RLE run, its origin) if 8 values still follow. Each decision
    depends on earlier ones through the origin only, so the decisions are iterated to a fixed
    point from "all accepted"; every pass settles at least one more run, and a long dependency
    chain (runs of 8-14 values in a row that just miss their group boundary, as in nested
    definition levels) is finished by the scalar loop (:func:`_rle_choice_reference`). (Fewer
    passes, and a prefix scan over the group phase, were measured slower on nested levels.)
    """
    k = int(starts.shape[0])
    accepted = np.ones(k, dtype=np.bool_)
    for _ in range(_FIXED_POINT_PASSES):
        origin = np.zeros(k, dtype=np.int64)
        if k > 1:
            origin[1:] = np.maximum.accumulate(np.where(accepted, ends, 0))[:-1]
        begin = origin + (starts - origin + 7) // 8 * 8
        decided = begin + 8 <= ends
        if np.array_equal(decided, accepted):
            return begin[accepted], ends[accepted], origin[accepted]
        accepted = decided
    rle_starts, rle_ends, origins = _rle_choice_reference(starts, ends)
    return (
        np.array(rle_starts, dtype=np.int64),
        np.array(rle_ends, dtype=np.int64),
        np.array(origins, dtype=np.int64),
    )


def _rle_choice_reference(
    starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> tuple[list[int], list[int], list[int]]:
    """Scalar :func:`_rle_choice`: one step per long run."""
    rle_starts: list[int] = []
    rle_ends: list[int] = []
    origins: list[int] = []
    cursor = 0
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        g = cursor + (s - cursor + 7) // 8 * 8
        if g + 8 <= e:
            rle_starts.append(g)
            rle_ends.append(e)
            origins.append(cursor)
            cursor = e
    return rle_starts, rle_ends, origins


def _split_literals(
    begins: npt.NDArray[np.int64], stops: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Cut the literal stretches ``[begin, stop)`` into bit-packed runs of at most 63 groups."""
    step = _MAX_GROUPS * 8
    counts = -(-(stops - begins) // step)
    owner = np.repeat(np.arange(begins.shape[0]), counts)
    first = np.cumsum(counts) - counts
    piece_starts = begins[owner] + (np.arange(owner.shape[0]) - first[owner]) * step
    return piece_starts, np.minimum(piece_starts + step, stops[owner])


def _encode_literal_only(v: npt.NDArray[np.unsignedinteger], bit_width: int) -> bytes:
    """The hybrid runs of values holding no 8 equal values in a row (no RLE run but the tail)."""
    n = int(v.shape[0])
    full = n // 8 * 8
    tail_rle = full < n and (full // 8) % _MAX_GROUPS == 0 and bool(np.all(v[full:] == v[full]))
    count = full if tail_rle else n
    packed = pack_uint(v[:count], bit_width)
    groups = (count + 7) // 8
    whole, rest = divmod(groups, _MAX_GROUPS)
    row = _MAX_GROUPS * bit_width
    body = np.empty((whole, 1 + row), dtype=np.uint8)
    body[:, 0] = _MAX_GROUPS << 1 | 1
    body[:, 1:] = packed[: whole * row].reshape(whole, row)
    pieces = [body.tobytes()]
    if rest:
        pieces += [bytes([rest << 1 | 1]), packed[whole * row :].tobytes()]
    if tail_rle:
        value_size = (bit_width + 7) // 8
        pieces += [encode_uleb128((n - full) << 1), int(v[full]).to_bytes(value_size, "little")]
    return b"".join(pieces)


def _range_mask(
    size: int, starts: npt.NDArray[np.int64], stops: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    """True inside the disjoint, sorted, non-empty ranges ``[start, stop)`` of ``size`` slots."""
    marks = np.zeros(size + 1, dtype=np.int8)
    marks[starts] = 1
    marks[stops] -= 1
    return np.cumsum(marks[:size], dtype=np.int8).view(np.bool_)


# Lane masks of the byte-lane merge in :func:`_pack_groups_narrow`.
_LANES_8 = np.uint64(0x00FF00FF00FF00FF)
_LANES_16 = np.uint64(0x0000FFFF0000FFFF)
_LANES_32 = np.uint64(0x00000000FFFFFFFF)


def _pack_groups_narrow(
    padded: npt.NDArray[np.uint8], group_starts: npt.NDArray[np.int64], bit_width: int
) -> npt.NDArray[np.uint8]:
    """Bit-pack the groups of 8 values ``padded[g:g + 8]`` for each ``g`` (width 1..8).

    Each group is read as one unaligned little-endian uint64 (byte ``j`` = value ``j``), whose
    byte lanes are merged pairwise three times (8 -> 16 -> 32 -> 64-bit lanes), leaving the
    ``8 * bit_width`` packed bits at the bottom of the word: ``bit_width`` bytes per group.
    ``padded`` holds at least 7 bytes past the last group start.
    """
    words_view = np.ndarray(
        shape=(int(padded.shape[0]) - 7,), dtype="<u8", buffer=padded, strides=(1,)
    )
    w = bit_width
    if (
        group_starts.shape[0]
        and int(group_starts[-1]) == 8 * (group_starts.shape[0] - 1)
        and (int(group_starts[0]) == 0)
    ):
        x = padded[: 8 * group_starts.shape[0]].view("<u8").copy()
    else:
        x = words_view[group_starts]
    if w < 8:
        x = (x & _LANES_8) | ((x & ~_LANES_8) >> np.uint64(8 - w))
        x = (x & _LANES_16) | ((x & ~_LANES_16) >> np.uint64(16 - 2 * w))
        x = (x & _LANES_32) | ((x & ~_LANES_32) >> np.uint64(32 - 4 * w))
    return x.view(np.uint8).reshape(-1, 8)[:, :w].reshape(-1)


def _encode_narrow(v: npt.NDArray[np.uint8], bit_width: int) -> bytes:
    """:func:`encode_rle_hybrid` for widths 1..8 (levels, small dictionaries), byte-identical.

    The run choice is the same (:func:`_long_runs`, :func:`_rle_choice`); the literal groups
    are gathered straight from their starts (no mask over all values) and packed by
    :func:`_pack_groups_narrow`; bit-packed run headers are one byte (at most 63 groups) and RLE
    headers at most 5 (fewer than 2**31 values), so the output is laid out with a handful of
    vectorised scatters: the run headers and RLE values at their offsets, the packed bytes in
    order in the bytes left between them.
    """
    n = int(v.shape[0])
    long_starts, long_ends = _long_runs(v)
    if long_starts.shape[0] == 0:
        return _encode_literal_only(v, bit_width)
    rle_starts, rle_ends, origins = _rle_choice(long_starts, long_ends)
    last = int(rle_ends[-1]) if rle_ends.shape[0] else 0
    full = last + (n - last) // 8 * 8
    if full < n and ((full - last) // 8) % _MAX_GROUPS == 0 and bool(np.all(v[full:] == v[full])):
        lit_begins = np.append(origins, last)
        lit_stops = np.append(rle_starts, full)
        rle_starts = np.append(rle_starts, full)
        rle_ends = np.append(rle_ends, n)
    else:
        lit_begins, lit_stops = np.append(origins, last), np.append(rle_starts, n)
    w = bit_width
    # stretch i (groups counted from its begin, the last one padded) precedes RLE run i
    stretch_groups = (lit_stops - lit_begins + 7) >> 3
    stretch_pieces = (stretch_groups + (_MAX_GROUPS - 1)) // _MAX_GROUPS
    num_rle = int(rle_starts.shape[0])
    num_units = int(lit_begins.shape[0]) + num_rle
    rle_lengths = rle_ends - rle_starts
    rle_headers = rle_lengths << 1
    head_sizes = 1 + (rle_headers >= 1 << 7).astype(np.int64)
    for bound in (1 << 14, 1 << 21, 1 << 28):
        head_sizes += rle_headers >= bound
    unit_sizes = np.empty(num_units, dtype=np.int64)
    unit_sizes[0::2] = stretch_pieces + stretch_groups * w
    unit_sizes[1::2] = head_sizes + 1
    unit_offsets = np.cumsum(unit_sizes) - unit_sizes
    total = int(unit_offsets[-1] + unit_sizes[-1])
    out = np.empty(total, dtype=np.uint8)
    is_meta = np.zeros(total, dtype=np.bool_)
    # bit-packed run headers: piece k of stretch i at its offset + k * (1 + 63 w)
    num_groups = int(stretch_groups.sum())
    if num_groups:
        num_pieces = int(stretch_pieces.sum())
        owner = np.repeat(np.arange(stretch_pieces.shape[0]), stretch_pieces)
        piece_index = np.arange(num_pieces) - (np.cumsum(stretch_pieces) - stretch_pieces)[owner]
        piece_offsets = unit_offsets[0::2][owner] + piece_index * (1 + _MAX_GROUPS * w)
        piece_groups = np.minimum(stretch_groups[owner] - piece_index * _MAX_GROUPS, _MAX_GROUPS)
        is_meta[piece_offsets] = True
        padded = np.zeros(n + 16, dtype=np.uint8)
        padded[:n] = v
        group_starts = np.repeat(
            lit_begins - (np.cumsum(stretch_groups) - stretch_groups) * 8, stretch_groups
        )
        group_starts += np.arange(0, 8 * num_groups, 8, dtype=np.int64)
        packed = _pack_groups_narrow(padded, group_starts, w)
    if num_rle:
        meta = np.empty((num_rle, 6), dtype=np.uint8)
        for j in range(5):
            meta[:, j] = ((rle_headers >> (7 * j)) & 0x7F) | ((head_sizes > j + 1) << 7)
        meta[np.arange(num_rle), head_sizes] = v[rle_starts]
        used = np.arange(6) <= head_sizes[:, None]
        meta_offsets = (unit_offsets[1::2][:, None] + np.arange(6))[used]
        is_meta[meta_offsets] = True
    if num_groups:
        out[~is_meta] = packed
        out[piece_offsets] = (piece_groups << 1 | 1).astype(np.uint8)
    if num_rle:
        out[meta_offsets] = meta[used]
    return out.tobytes()


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
    v = _as_unsigned(values, bit_width)
    n = int(v.shape[0])
    if n == 0:
        return b""
    if n > _MAX_VALUES:
        raise LimitError(f"The RLE/bit-packed hybrid encoder takes < 2**31 values, got {n}.")
    if 1 <= bit_width <= 8:
        return _encode_narrow(v, bit_width)
    long_starts, long_ends = _long_runs(v)
    if long_starts.shape[0] == 0:
        return _encode_literal_only(v, bit_width)
    rle_starts, rle_ends, origins = _rle_choice(long_starts, long_ends)
    # Literal stretches: before each RLE run, then after the last one (with the tail rule).
    last = int(rle_ends[-1]) if rle_ends.shape[0] else 0
    full = last + (n - last) // 8 * 8
    if full < n and ((full - last) // 8) % _MAX_GROUPS == 0 and bool(np.all(v[full:] == v[full])):
        rle_starts = np.append(rle_starts, full)
        rle_ends = np.append(rle_ends, n)
        lit_begins, lit_stops = np.append(origins, last), np.append(rle_starts[:-1], full)
    else:
        lit_begins, lit_stops = np.append(origins, last), np.append(rle_starts, n)
    keep = lit_stops > lit_begins
    lit_starts, lit_ends = _split_literals(lit_begins[keep], lit_stops[keep])
    packed = pack_uint(v[_range_mask(n, lit_starts, lit_ends)], bit_width)
    # All runs in order; headers, then the RLE value or the literal bytes.
    run_starts = np.concatenate((lit_starts, rle_starts))
    order = np.argsort(run_starts, kind="stable")
    is_rle = (np.arange(run_starts.shape[0]) >= lit_starts.shape[0])[order]
    lengths = (np.concatenate((lit_ends, rle_ends)) - run_starts)[order]
    groups = (lengths + 7) // 8
    headers = np.where(is_rle, lengths << 1, groups << 1 | 1).astype(np.uint64)
    head_bytes, head_lens = encode_uleb128_array(headers)
    value_size = (bit_width + 7) // 8
    value_sizes = np.where(is_rle, value_size, 0)
    body_sizes = np.where(is_rle, 0, groups * bit_width)
    meta_sizes = head_lens + value_sizes
    values_le = v[run_starts[order][is_rle]].astype("<u4").view(np.uint8).reshape(-1, 4)
    meta = np.zeros((is_rle.shape[0], 5 + value_size), dtype=np.uint8)
    meta_mask = np.arange(5 + value_size) < np.where(is_rle, 5 + value_size, 5)[:, None]
    meta_mask[:, :5] = np.arange(5) < head_lens[:, None]
    meta[:, 5:][is_rle] = values_le[:, :value_size]
    meta[:, :5][meta_mask[:, :5]] = head_bytes
    total = int(meta_sizes.sum() + body_sizes.sum())
    out = np.empty(total, dtype=np.uint8)
    run_offsets = np.cumsum(meta_sizes + body_sizes) - meta_sizes - body_sizes
    in_meta = _range_mask(total, run_offsets, run_offsets + meta_sizes)
    out[in_meta] = meta[meta_mask]
    out[~in_meta] = packed
    return out.tobytes()


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
        # Every bit-packed run but the last holds whole groups, so their bytes back to back are
        # one bit stream of all the literal values in order: one unpack, one placement.
        runs = np.array(literal_runs, dtype=np.int64).reshape(-1, 4)
        takes = runs[:, 1]
        stream = np.concatenate(
            [data[start : start + nbytes] for _, _, start, nbytes in literal_runs]
        )
        count = int(takes.sum())
        unpacked = unpack_uint(stream, bit_width, count)
        if count == num_values:
            out[:] = unpacked
        else:
            first = np.cumsum(takes) - takes
            out[np.repeat(runs[:, 0] - first, takes) + np.arange(count)] = unpacked
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
