"""Arrow arrays <-> Parquet physical values for one flat column (the data half of the mapping).

``to_physical`` (here) turns an Arrow array into the in-memory forms of :mod:`workers.values`
(non-null values only, in physical form) plus definition levels; ``from_physical``
(:mod:`streamwrite.arrow.assembly`) is its inverse. Both are vectorised over the Arrow buffers
(``array.buffers()``) and copy only where the forms differ:

==========================  ==================  ==============================================
Arrow type                  physical            conversion (write; read is the inverse)
==========================  ==================  ==============================================
bool                        BOOLEAN             bitmap unpacked to ``np.bool_``
int8/16, uint8/16           INT32               widened (zero/sign extension)
int32, date32               INT32               view
uint32                      INT32               bit pattern (view)
int64, duration             INT64               view
uint64                      INT64               bit pattern (view)
date64                      INT32               ``ms // 86_400_000`` (days; read: ``* 86_400_000``)
time32(s)                   INT32               ``* 1000`` (ms)
time32(ms), time64          INT32 / INT64       view
timestamp(s)                INT64               ``* 1000`` (ms)
timestamp(ms/us/ns)         INT64               view; read also accepts INT96 (Julian day + ns)
float16                     FIXED_LEN(2)        2 bytes little-endian per value
float32 / float64           FLOAT / DOUBLE      view
decimal32/64/128/256        INT32 / INT64       low 4 / 8 bytes of the little-endian value
decimal32/64/128/256        FIXED_LEN(n)        big-endian two's complement, n bytes
                            / BYTE_ARRAY        (read: sign-extended to the Arrow width)
fixed_size_binary(n), uuid  FIXED_LEN(n)        ``(rows, n)`` uint8 view
string/binary (+ large)     BYTE_ARRAY          offsets (int32 widened to int64) + data view
string_view / binary_view   BYTE_ARRAY          through a cast to the large type (copies)
dictionary<T>               as T                decoded to dense values (read: re-encoded)
null                        INT32               no values, every definition level 0
==========================  ==================  ==============================================

Nulls never reach the values: the validity bitmap becomes definition levels (1 = present, 0 =
null) and the values are compressed to the non-null ones. ``ChunkedArray`` inputs are combined
first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from streamwrite.arrow.column import ColumnSpec
from streamwrite.arrow.units import (
    INT32_MAX,
    INT_DTYPES,
    JULIAN_UNIX_EPOCH,
    MILLIS_PER_DAY,
    NANOS_PER_DAY,
    UNIT_PER_SECOND,
    decimal_size,
    resize_le,
)
from streamwrite.errors import SchemaError
from streamwrite.format.enums import FieldRepetitionType, Type
from workers.values import BinaryValues

__all__ = ["PhysicalColumn", "to_physical"]


@dataclass(frozen=True, slots=True)
class PhysicalColumn:
    """One column's data in Parquet physical form.

    Attributes:
        values: The non-null values in the form :mod:`workers.values` defines for the physical
            type (a numpy array or :class:`~workers.values.BinaryValues`).
        def_levels: uint8 definition level per row (1 present, 0 null); ``None`` for REQUIRED
            columns.
        num_rows: Number of rows, nulls included.
        null_count: Number of null rows.
    """

    values: npt.NDArray[Any] | BinaryValues
    def_levels: npt.NDArray[np.uint8] | None
    num_rows: int
    null_count: int


# ---------------------------------------------------------------------------------------------
# Arrow -> physical


def to_physical(array: pa.Array | pa.ChunkedArray, spec: ColumnSpec) -> PhysicalColumn:
    """Convert one Arrow column to physical values and definition levels.

    Args:
        array: The column data; its type must be ``spec.field.type`` (chunked arrays are combined).
        spec: The column's mapping, from :func:`streamwrite.arrow.schema.arrow_to_parquet`.

    Returns:
        The non-null values in physical form, definition levels and counts.

    Raises:
        SchemaError: If the array's type is not the column's type, a REQUIRED column holds nulls,
            or a value does not fit the physical type (a decimal beyond its precision, a seconds
            timestamp that overflows as milliseconds).
    """
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    if not array.type.equals(spec.field.type):
        raise SchemaError(
            f"Column {spec.name!r} (index {spec.index}) expects Arrow type {spec.field.type}, "
            f"got an array of type {array.type}."
        )
    num_rows = len(array)
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if isinstance(array.type, pa.BaseExtensionType):
        array = array.storage
    if pa.types.is_string_view(array.type) or pa.types.is_binary_view(array.type):
        large = pa.large_string() if pa.types.is_string_view(array.type) else pa.large_binary()
        array = array.cast(large)

    null_count = array.null_count
    valid: npt.NDArray[np.bool_] | None = None
    if pa.types.is_null(array.type):
        valid = np.zeros(num_rows, dtype=np.bool_)
        null_count = num_rows
    elif null_count:
        valid = _unpack_bits(array.buffers()[0], array.offset, num_rows)
    if spec.repetition == FieldRepetitionType.REQUIRED:
        if null_count:
            raise SchemaError(
                f"Column {spec.name!r} (index {spec.index}) is REQUIRED (not nullable) but the "
                f"array holds {null_count} null(s)."
            )
        def_levels = None
    elif valid is None:
        def_levels = np.ones(num_rows, dtype=np.uint8)
    else:
        def_levels = valid.view(np.uint8)
    values = _values_to_physical(array, spec, valid)
    return PhysicalColumn(values, def_levels, num_rows, null_count)


def _unpack_bits(buf: pa.Buffer, offset: int, count: int) -> npt.NDArray[np.bool_]:
    raw = np.frombuffer(buf, dtype=np.uint8)
    bits = np.unpackbits(raw, count=offset + count, bitorder="little")[offset:]
    return bits.view(np.bool_)


def _fixed_view(
    array: pa.Array, dtype: type[np.generic], width: int | None = None
) -> npt.NDArray[Any]:
    """The value buffer of a fixed-width array, sliced to the array (zero-copy).

    One-dimensional, or ``(rows, width)`` bytes-like rows if ``width`` is given.
    """
    n = len(array)
    buf = array.buffers()[1]
    step = 1 if width is None else width
    shape: tuple[int, ...] = (n,) if width is None else (n, width)
    if buf is None or n == 0:
        return np.zeros(shape, dtype=dtype)
    flat = np.frombuffer(buf, dtype=dtype)[array.offset * step : (array.offset + n) * step]
    return flat.reshape(shape)


def _compress(values: npt.NDArray[Any], valid: npt.NDArray[np.bool_] | None) -> npt.NDArray[Any]:
    return values if valid is None else values[valid]


def _values_to_physical(
    array: pa.Array, spec: ColumnSpec, valid: npt.NDArray[np.bool_] | None
) -> npt.NDArray[Any] | BinaryValues:
    dtype = array.type
    physical = spec.physical_type
    if pa.types.is_null(dtype):
        return np.zeros(0, dtype=np.int32)
    if pa.types.is_boolean(dtype):
        return _compress(_unpack_bits(array.buffers()[1], array.offset, len(array)), valid)
    if pa.types.is_string(dtype) or pa.types.is_binary(dtype):
        return _binary_to_physical(array, np.int32, valid)
    if pa.types.is_large_string(dtype) or pa.types.is_large_binary(dtype):
        return _binary_to_physical(array, np.int64, valid)
    if pa.types.is_decimal(dtype):
        width = dtype.byte_width
        raw = _compress(_fixed_view(array, np.uint8, width), valid)
        return _decimal_to_physical(raw, dtype.precision, spec)
    if pa.types.is_fixed_size_binary(dtype):
        return _compress(_fixed_view(array, np.uint8, dtype.byte_width), valid)
    if pa.types.is_float16(dtype):
        return _compress(_fixed_view(array, np.uint8, 2), valid)
    if pa.types.is_float32(dtype):
        return _compress(_fixed_view(array, np.float32), valid)
    if pa.types.is_float64(dtype):
        return _compress(_fixed_view(array, np.float64), valid)
    if pa.types.is_integer(dtype):
        ints = _compress(_fixed_view(array, INT_DTYPES[dtype]), valid)
        if physical == Type.INT64:
            return ints.astype(np.int64, copy=False) if ints.itemsize < 8 else ints.view(np.int64)
        if ints.dtype == np.uint32:
            return ints.view(np.int32)
        if ints.itemsize > 4:
            raise SchemaError(
                f"Column {spec.name!r} (index {spec.index}) of type {dtype} cannot be stored as "
                f"physical type {physical.name}."
            )
        return ints.astype(np.int32, copy=False)
    if pa.types.is_date32(dtype):
        return _compress(_fixed_view(array, np.int32), valid)
    if pa.types.is_date64(dtype):
        ms = _compress(_fixed_view(array, np.int64), valid)
        return _checked_int32(ms // MILLIS_PER_DAY, spec)
    if pa.types.is_time32(dtype):
        t32 = _compress(_fixed_view(array, np.int32), valid)
        return _checked_int32(t32.astype(np.int64) * 1000, spec) if dtype.unit == "s" else t32
    if pa.types.is_timestamp(dtype):
        ts = _compress(_fixed_view(array, np.int64), valid)
        if physical == Type.INT96:
            return _timestamp_to_int96(ts, dtype.unit)
        return _scale_checked(ts, 1000, spec) if dtype.unit == "s" else ts
    if pa.types.is_time64(dtype) or pa.types.is_duration(dtype):
        return _compress(_fixed_view(array, np.int64), valid)
    raise SchemaError(
        f"Column {spec.name!r} (index {spec.index}) has Arrow type {dtype}, which has no "
        "physical conversion."
    )


def _checked_int32(values: npt.NDArray[np.int64], spec: ColumnSpec) -> npt.NDArray[np.int32]:
    if values.size and (values.min() < -INT32_MAX - 1 or values.max() > INT32_MAX):
        raise SchemaError(
            f"Column {spec.name!r} (index {spec.index}) holds a value that overflows INT32 "
            f"after conversion to {spec.field.type}'s Parquet unit."
        )
    return values.astype(np.int32)


def _scale_checked(
    values: npt.NDArray[np.int64], factor: int, spec: ColumnSpec
) -> npt.NDArray[np.int64]:
    limit = np.iinfo(np.int64).max // factor
    if values.size and (values.min() < -limit or values.max() > limit):
        raise SchemaError(
            f"Column {spec.name!r} (index {spec.index}) holds a {spec.field.type} value that "
            "overflows int64 as milliseconds."
        )
    return values * factor


def _binary_to_physical(
    array: pa.Array, offset_dtype: type[np.generic], valid: npt.NDArray[np.bool_] | None
) -> BinaryValues:
    n = len(array)
    bufs = array.buffers()
    if n == 0 or bufs[1] is None:
        return BinaryValues(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.uint8))
    offsets = np.frombuffer(bufs[1], dtype=offset_dtype)[array.offset : array.offset + n + 1]
    offsets64 = offsets.astype(np.int64, copy=False)
    data = np.zeros(0, dtype=np.uint8) if bufs[2] is None else np.frombuffer(bufs[2], np.uint8)
    dense = BinaryValues(offsets64, data)
    if valid is None:
        return dense
    lengths = np.diff(offsets64)
    if not lengths[~valid].any():
        # Null slots are empty: the present values are already adjacent, keep the data buffer.
        starts = offsets64[:-1][valid]
        return BinaryValues(np.append(starts, offsets64[-1]), data)
    return dense.take(np.flatnonzero(valid))


def _timestamp_to_int96(values: npt.NDArray[np.int64], unit: str) -> npt.NDArray[np.uint8]:
    nanos = values * (1_000_000_000 // UNIT_PER_SECOND[unit])
    days, nanos_of_day = np.divmod(nanos, NANOS_PER_DAY)
    out = np.empty((values.shape[0], 12), dtype=np.uint8)
    out[:, :8] = nanos_of_day.astype("<i8").view(np.uint8).reshape(-1, 8)
    out[:, 8:] = (days + JULIAN_UNIX_EPOCH).astype("<i4").view(np.uint8).reshape(-1, 4)
    return out


# ---------------------------------------------------------------------------------------------
# Decimals: little-endian two's complement rows of the Arrow width <-> physical forms


def _limbs(raw: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint64]:
    """Little-endian rows of 4, 8, 16 or 32 bytes as (rows, limbs) uint64, sign-extended."""
    width = max(8, raw.shape[1])
    wide = resize_le(raw, width)
    assert wide is not None  # widening never loses a value
    return np.ascontiguousarray(wide).view("<u8").astype(np.uint64, copy=False)


def _within_precision(limbs: npt.NDArray[np.uint64], precision: int) -> npt.NDArray[np.bool_]:
    """Whether ``|value| < 10**precision`` for each row of two's complement limbs."""
    n, k = limbs.shape
    negative = (limbs[:, -1] >> np.uint64(63)).astype(np.bool_)
    magnitude = limbs.copy()
    if negative.any():
        neg = ~limbs[negative]
        carry = np.ones(neg.shape[0], dtype=np.uint64)
        for j in range(k):  # at most 4 limbs: a loop over limbs, not over values
            neg[:, j] += carry
            carry = carry & (neg[:, j] == 0)
        magnitude[negative] = neg
    bound = 10**precision
    less = np.zeros(n, dtype=np.bool_)
    equal = np.ones(n, dtype=np.bool_)
    for j in reversed(range(k)):
        b = np.uint64((bound >> (64 * j)) & 0xFFFF_FFFF_FFFF_FFFF)
        less |= equal & (magnitude[:, j] < b)
        equal &= magnitude[:, j] == b
    if bound >> (64 * k):  # the bound does not fit the limbs: every value is within it
        less[:] = True
    return less


def _decimal_to_physical(
    raw: npt.NDArray[np.uint8], precision: int, spec: ColumnSpec
) -> npt.NDArray[Any] | BinaryValues:
    limbs = _limbs(raw)
    ok = _within_precision(limbs, precision)
    if not ok.all():
        first = int(np.flatnonzero(~ok)[0])
        raise SchemaError(
            f"Column {spec.name!r} (index {spec.index}) holds a decimal value outside precision "
            f"{precision} (the {first}-th non-null value)."
        )
    physical = spec.physical_type
    if physical == Type.INT64:
        return limbs[:, 0].view(np.int64)
    if physical == Type.INT32:
        return limbs[:, 0].view(np.int64).astype(np.int32)
    size = spec.type_length if physical == Type.FIXED_LEN_BYTE_ARRAY else decimal_size(precision)
    assert size is not None
    fitted = resize_le(raw, size)
    if fitted is None:
        raise SchemaError(
            f"Column {spec.name!r} (index {spec.index}) holds a decimal value that does not fit "
            f"in {size} bytes."
        )
    big_endian = np.ascontiguousarray(fitted[:, ::-1])
    if physical == Type.FIXED_LEN_BYTE_ARRAY:
        return big_endian
    offsets = np.arange(big_endian.shape[0] + 1, dtype=np.int64) * size
    return BinaryValues(offsets, big_endian.reshape(-1))
