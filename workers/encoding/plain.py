"""PLAIN encoding (``Encoding.PLAIN``) for every physical type.

parquet-format Encodings.md, "Plain: (PLAIN = 0)"; values are stored back to back::

    BOOLEAN               bit packed, LSB first, padded with zero bits to a whole byte
    INT32 / FLOAT         4 bytes little endian (IEEE 754 for FLOAT)
    INT64 / DOUBLE        8 bytes little endian (IEEE 754 for DOUBLE)
    INT96                 12 bytes (deprecated; decoded only)
    BYTE_ARRAY            <length: 4 bytes little endian> <length bytes>, per value
    FIXED_LEN_BYTE_ARRAY  type_length bytes per value

BYTE_ARRAY decoding is vectorised although each value's position depends on all earlier
lengths: the byte offset that would follow a value starting at ``p`` is computed for every
``p`` at once, jump tables over 2, 4 and 8 values are built by pointer doubling, a short
scalar loop walks the chain every 8 values and the gaps are filled 8 numpy steps at a time.
When all values have the first value's length a direct check replaces all of that.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from streamwrite.errors import ConfigError, FormatError
from streamwrite.format.enums import Type
from workers.encoding._varint import Buffer, as_uint8
from workers.values import BinaryValues

__all__ = ["decode_plain", "decode_plain_reference", "encode_plain", "encode_plain_reference"]

_FIXED_DTYPES: dict[Type, str] = {
    Type.INT32: "<i4",
    Type.INT64: "<i8",
    Type.FLOAT: "<f4",
    Type.DOUBLE: "<f8",
}
_JUMP = 8


def _encode_byte_array(values: BinaryValues) -> bytes:
    n = len(values)
    if n == 0:
        return b""
    lengths = values.lengths
    longest = int(lengths.max())
    if longest >= 1 << 32:
        raise ConfigError(f"A BYTE_ARRAY value of {longest} bytes exceeds 2**32 - 1.")
    base, end = int(values.offsets[0]), int(values.offsets[-1])
    if longest and int(lengths.min()) == longest:  # one length: records of (u4, V<length>)
        out = np.empty(n, dtype=np.dtype([("length", "<u4"), ("value", f"V{longest}")]))
        out["length"] = longest
        out["value"] = values.data[base:end].view(f"V{longest}")
        return out.view(np.uint8).tobytes()  # (tobytes on the records copies item by item)
    # numpy has no fast interleave of variable-length slices; Arrow's element-wise binary join
    # of the 4-byte length prefixes with the values writes exactly the PLAIN layout.
    prefixes = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(),
        n,
        [
            None,
            pa.py_buffer(np.arange(0, 4 * n + 1, 4, dtype=np.int64)),
            pa.py_buffer(lengths.astype("<u4")),
        ],
    )
    offsets = np.ascontiguousarray(values.offsets, dtype=np.int64)
    strings = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(values.data)]
    )
    joined = pc.binary_join_element_wise(prefixes, strings, pa.scalar(b"", pa.large_binary()))
    start = int(np.frombuffer(joined.buffers()[1], dtype=np.int64)[joined.offset])
    encoded: bytes = joined.buffers()[2][start : start + 4 * n + end - base].to_pybytes()
    return encoded


def encode_plain(values: npt.NDArray[np.generic] | BinaryValues, physical_type: Type) -> bytes:
    """Encode values with PLAIN.

    Args:
        values: the values in the in-memory form of :mod:`workers.values`.
        physical_type: their physical type (INT96 is not written).

    Returns:
        The encoded bytes.

    Raises:
        ConfigError: if the values do not match the physical type, or a BYTE_ARRAY value is
            longer than 2**32 - 1 bytes.
    """
    if physical_type == Type.BYTE_ARRAY:
        if not isinstance(values, BinaryValues):
            raise ConfigError("PLAIN BYTE_ARRAY values must be BinaryValues.")
        return _encode_byte_array(values)
    if isinstance(values, BinaryValues):
        raise ConfigError(f"BinaryValues cannot be written as {physical_type.name}.")
    if physical_type == Type.BOOLEAN:
        return np.packbits(values.astype(np.bool_).reshape(-1), bitorder="little").tobytes()
    if physical_type in _FIXED_DTYPES:
        return np.ascontiguousarray(values, dtype=_FIXED_DTYPES[physical_type]).tobytes()
    if physical_type == Type.FIXED_LEN_BYTE_ARRAY:
        if values.ndim != 2 or values.dtype != np.uint8:
            raise ConfigError("FIXED_LEN_BYTE_ARRAY values must be a uint8 array (n, type_length).")
        return np.ascontiguousarray(values).tobytes()
    raise ConfigError(f"PLAIN encoding of {physical_type.name} is not supported.")


def _byte_array_starts(
    data: npt.NDArray[np.uint8], num_values: int
) -> tuple[npt.NDArray[np.int64], int, int]:
    """Start offsets of ``num_values`` length-prefixed values, the end of the last one, and the
    common distance between starts when all values have one length (else 0)."""
    size = int(data.shape[0])
    if num_values == 0:
        return np.zeros(0, dtype=np.int64), 0, 0
    if num_values > size // 4:
        raise FormatError(
            f"PLAIN BYTE_ARRAY data of {size} bytes cannot hold {num_values} length prefixes."
        )
    # Fast path: every value has the length of the first one.
    first = int.from_bytes(data[:4].tobytes(), "little")
    stride = 4 + first
    if num_values * stride <= size:
        records = data[: num_values * stride].reshape(num_values, stride)
        if bool(np.all(records[:64, :4] == records[0, :4])) and bool(
            np.all(np.ascontiguousarray(records[:, :4]).view("<u4") == first)
        ):
            return np.arange(num_values, dtype=np.int64) * stride, num_values * stride, stride
    # nxt[p]: where the next value starts if one starts at p; `sentinel` marks "runs past the end".
    sentinel = size + 1
    index_dtype = np.dtype(np.int32 if size < 2**31 - 16 else np.int64)
    after = np.full(size + 2, sentinel, dtype=index_dtype)
    for a in range(4):  # the prefixes at p = a, a + 4, ...: one uint32 view per alignment
        words = (size - a) // 4
        step = np.minimum(data[a : a + 4 * words].view("<u4"), sentinel).astype(index_dtype)
        step += np.arange(a + 4, a + 4 + 4 * words, 4, dtype=index_dtype)
        np.minimum(step, sentinel, out=step)
        after[a : a + 4 * words : 4] = step
    jumps = [after]
    while 1 << (len(jumps) - 1) < _JUMP:
        jumps.append(jumps[-1][jumps[-1]])
    far = jumps[-1].data
    num_anchors = (num_values + _JUMP - 1) // _JUMP
    anchor_list = [0] * num_anchors
    pos = 0
    for i in range(num_anchors):
        anchor_list[i] = pos
        pos = far[pos]
        if pos == sentinel:
            anchor_list[i + 1 :] = [sentinel] * (num_anchors - i - 1)
            break
    steps = np.empty((_JUMP, num_anchors), dtype=np.int64)
    steps[0] = anchor_list
    step = jumps[0]
    for k in range(1, _JUMP):
        steps[k] = step[steps[k - 1]]
    starts = steps.T.reshape(-1)[:num_values]
    end = int(step[starts[-1]])
    if end == sentinel or int(starts.max()) == sentinel:
        raise FormatError(
            f"PLAIN BYTE_ARRAY data of {size} bytes ends before its {num_values} values."
        )
    return starts, end, 0


def decode_plain(
    buf: Buffer, physical_type: Type, num_values: int, type_length: int | None = None
) -> tuple[npt.NDArray[np.generic] | BinaryValues, int]:
    """Decode ``num_values`` PLAIN values.

    Args:
        buf: the encoded bytes (may continue past the values).
        physical_type: the physical type.
        num_values: how many values to decode.
        type_length: bytes per value, required for FIXED_LEN_BYTE_ARRAY.

    Returns:
        ``(values, bytes consumed)`` with values in the in-memory form of :mod:`workers.values`.

    Raises:
        ConfigError: if ``type_length`` is missing for FIXED_LEN_BYTE_ARRAY or ``num_values`` is
            negative.
        FormatError: if ``buf`` is too short for ``num_values`` values.
    """
    if num_values < 0:
        raise ConfigError(f"num_values must be non-negative, got {num_values}.")
    data = as_uint8(buf)
    size = int(data.shape[0])
    if physical_type == Type.BYTE_ARRAY:
        starts, end, stride = _byte_array_starts(data, num_values)
        if stride:
            offsets = np.arange(num_values + 1, dtype=np.int64) * (stride - 4)
            values = data[:end].reshape(num_values, stride)[:, 4:].reshape(-1)
            return BinaryValues(offsets, values), end
        lengths = np.diff(np.append(starts, end)) - 4
        offsets = np.zeros(num_values + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        keep = np.ones(end, dtype=np.bool_)
        keep[(starts[:, None] + np.arange(4)).reshape(-1)] = False
        return BinaryValues(offsets, data[:end][keep]), end
    if physical_type == Type.BOOLEAN:
        need = (num_values + 7) // 8
        width = 0
    elif physical_type in _FIXED_DTYPES:
        width = np.dtype(_FIXED_DTYPES[physical_type]).itemsize
        need = num_values * width
    elif physical_type == Type.INT96:
        width = 12
        need = num_values * width
    elif physical_type == Type.FIXED_LEN_BYTE_ARRAY:
        if type_length is None or type_length < 0:
            raise ConfigError(f"FIXED_LEN_BYTE_ARRAY needs a type_length, got {type_length}.")
        width = type_length
        need = num_values * width
    else:
        raise ConfigError(f"PLAIN decoding of {physical_type!r} is not supported.")
    if need > size:
        raise FormatError(
            f"PLAIN {physical_type.name} data needs {need} bytes for {num_values} values, "
            f"but only {size} are present."
        )
    if physical_type == Type.BOOLEAN:
        bits = np.unpackbits(data[:need], bitorder="little", count=num_values)
        return bits.astype(np.bool_), need
    if physical_type in _FIXED_DTYPES:
        dtype = np.dtype(_FIXED_DTYPES[physical_type])
        return data[:need].copy().view(dtype).astype(dtype.newbyteorder("=")), need
    return data[:need].copy().reshape(num_values, width), need


# ---------------------------------------------------------------------------------------------
# Reference implementations (per-value loops; used by the property tests only).


def encode_plain_reference(values: list[object], physical_type: Type) -> bytes:
    """Pure-Python :func:`encode_plain` over Python values (bool, int, float, bytes)."""
    import struct

    out = bytearray()
    if physical_type == Type.BOOLEAN:
        for i in range(0, len(values), 8):
            out.append(sum(1 << j for j, v in enumerate(values[i : i + 8]) if v))
        return bytes(out)
    fmt = {Type.INT32: "<i", Type.INT64: "<q", Type.FLOAT: "<f", Type.DOUBLE: "<d"}
    for value in values:
        if physical_type == Type.BYTE_ARRAY:
            assert isinstance(value, bytes)
            out += len(value).to_bytes(4, "little") + value
        elif physical_type == Type.FIXED_LEN_BYTE_ARRAY:
            assert isinstance(value, bytes)
            out += value
        else:
            out += struct.pack(fmt[physical_type], value)
    return bytes(out)


def decode_plain_reference(
    buf: bytes, physical_type: Type, num_values: int, type_length: int | None = None
) -> tuple[list[object], int]:
    """Pure-Python :func:`decode_plain`; returns Python values (bool, int, float, bytes)."""
    import struct

    out: list[object] = []
    pos = 0
    if physical_type == Type.BOOLEAN:
        need = (num_values + 7) // 8
        if need > len(buf):
            raise FormatError("PLAIN BOOLEAN data is truncated.")
        return [bool(buf[i // 8] >> (i % 8) & 1) for i in range(num_values)], need
    fmt = {Type.INT32: "<i", Type.INT64: "<q", Type.FLOAT: "<f", Type.DOUBLE: "<d"}
    for _ in range(num_values):
        if physical_type == Type.BYTE_ARRAY:
            if pos + 4 > len(buf):
                raise FormatError("PLAIN BYTE_ARRAY length is truncated.")
            length = int.from_bytes(buf[pos : pos + 4], "little")
            pos += 4
        elif physical_type in fmt:
            length = struct.calcsize(fmt[physical_type])
        elif physical_type == Type.INT96:
            length = 12
        else:
            assert type_length is not None
            length = type_length
        if pos + length > len(buf):
            raise FormatError("PLAIN value is truncated.")
        raw = bytes(buf[pos : pos + length])
        pos += length
        out.append(struct.unpack(fmt[physical_type], raw)[0] if physical_type in fmt else raw)
    return out, pos
