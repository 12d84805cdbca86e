"""Parquet physical values -> Arrow arrays for one flat column (the read half of the mapping).

``from_physical`` is the inverse of :func:`streamwrite.arrow.values.to_physical`; the table of
conversions is in that module's docstring. Values arrive non-null and in physical form
(:mod:`workers.values`), with definition levels; nulls are scattered back by the levels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from streamwrite.arrow.column import ColumnSpec
from streamwrite.arrow.units import (
    INT32_MAX,
    INT_DTYPES,
    JULIAN_UNIX_EPOCH,
    MILLIS_PER_DAY,
    NANOS_PER_DAY,
    UNIT_PER_SECOND,
    resize_le,
    sign_fill,
)
from streamwrite.errors import FormatError
from streamwrite.format.enums import Type
from workers.values import BinaryValues

__all__ = ["from_physical"]


def _decimal_from_physical(
    values: npt.NDArray[Any] | BinaryValues, width: int, spec: ColumnSpec
) -> npt.NDArray[np.uint8]:
    """Dense little-endian rows of the Arrow decimal width from any DECIMAL physical form."""
    if isinstance(values, BinaryValues):
        le = _binary_to_le_rows(values)
    elif values.ndim == 2:  # FIXED_LEN_BYTE_ARRAY, big-endian
        le = values[:, ::-1]
    else:  # INT32 / INT64
        le = values.astype("<i8").view(np.uint8).reshape(-1, 8)
    out = resize_le(le, width)
    if out is None:
        raise FormatError(
            f"Column {spec.name!r} (index {spec.index}) holds a decimal value wider than its "
            f"Arrow type {spec.field.type}."
        )
    return np.ascontiguousarray(out)


def _binary_to_le_rows(values: BinaryValues) -> npt.NDArray[np.uint8]:
    """Variable-length big-endian two's complement values as sign-extended little-endian rows."""
    n = len(values)
    lengths = values.lengths
    width = int(lengths.max()) if n else 0
    out = np.zeros((n, width), dtype=np.uint8)
    total = int(lengths.sum())
    if total:
        owner = np.repeat(np.arange(n), lengths)
        starts = values.offsets[:-1] - values.offsets[0]
        pos_in_value = np.arange(total, dtype=np.int64) - starts[owner]
        data = values.data[int(values.offsets[0]) : int(values.offsets[-1])]
        out[owner, lengths[owner] - 1 - pos_in_value] = data
        top = np.maximum(lengths - 1, 0)
        fill = np.where(lengths > 0, sign_fill(out, top), np.uint8(0))
        pad = np.arange(width)[None, :] >= lengths[:, None]
        out[pad] = np.broadcast_to(fill[:, None], out.shape)[pad]
    return out


# ---------------------------------------------------------------------------------------------
# physical -> Arrow


def from_physical(
    values: npt.NDArray[Any] | BinaryValues,
    def_levels: npt.NDArray[Any] | None,
    num_rows: int,
    spec: ColumnSpec,
    *,
    validate: bool = False,
) -> pa.Array:
    """Build the Arrow array of one column from its physical values and definition levels.

    Args:
        values: The non-null values in the physical form of ``spec.physical_type``.
        def_levels: One definition level per row (``spec.max_definition_level`` = present), or
            ``None`` if every row is present.
        num_rows: Number of rows.
        spec: The column's mapping; the result has type ``spec.field.type``.
        validate: Run Arrow's full validation on the result (UTF-8 of strings, decimal
            precision...). Readers of untrusted files should pass ``True``.

    Returns:
        An array of ``num_rows`` rows and type ``spec.field.type``.

    Raises:
        FormatError: If the values do not match the levels, or (with ``validate``) the
            result is not valid Arrow data, such as strings that are not UTF-8.
    """
    valid: npt.NDArray[np.bool_] | None = None
    if def_levels is not None:
        if def_levels.shape[0] != num_rows:
            raise FormatError(
                f"Column {spec.name!r} (index {spec.index}) has {def_levels.shape[0]} "
                f"definition levels for {num_rows} rows."
            )
        valid = np.asarray(def_levels) == spec.max_definition_level
        if valid.all():
            valid = None
    present = num_rows if valid is None else int(np.count_nonzero(valid))
    if not pa.types.is_null(spec.field.type) and len(values) != present:
        raise FormatError(
            f"Column {spec.name!r} (index {spec.index}) has {len(values)} values for "
            f"{present} non-null rows."
        )
    result = _build_array(spec.field.type, values, valid, num_rows, present, spec)
    if validate:
        try:
            result.validate(full=True)
        except pa.ArrowInvalid as exc:
            raise FormatError(
                f"Column {spec.name!r} (index {spec.index}) decodes to invalid {spec.field.type} "
                f"data: {exc}"
            ) from exc
    return result


def _build_array(
    dtype: pa.DataType,
    values: npt.NDArray[Any] | BinaryValues,
    valid: npt.NDArray[np.bool_] | None,
    n: int,
    present: int,
    spec: ColumnSpec,
) -> pa.Array:
    if pa.types.is_null(dtype):
        return pa.nulls(n)
    if pa.types.is_dictionary(dtype):
        dense = _build_array(dtype.value_type, values, valid, n, present, spec)
        encoded = pc.dictionary_encode(dense)
        try:
            indices = encoded.indices.cast(dtype.index_type)
        except pa.ArrowInvalid as exc:
            raise FormatError(
                f"Column {spec.name!r} (index {spec.index}) has more distinct values than its "
                f"dictionary index type {dtype.index_type} can number."
            ) from exc
        return pa.DictionaryArray.from_arrays(indices, encoded.dictionary, ordered=dtype.ordered)
    if isinstance(dtype, pa.BaseExtensionType):
        storage = _build_array(dtype.storage_type, values, valid, n, present, spec)
        return pa.ExtensionArray.from_storage(dtype, storage)
    if pa.types.is_string_view(dtype) or pa.types.is_binary_view(dtype):
        large = pa.large_string() if pa.types.is_string_view(dtype) else pa.large_binary()
        return _build_array(large, values, valid, n, present, spec).cast(dtype)
    validity = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    null_count = n - present
    if isinstance(values, BinaryValues):
        if pa.types.is_decimal(dtype):
            dense = _scatter(_decimal_from_physical(values, dtype.byte_width, spec), valid, n)
            return pa.Array.from_buffers(dtype, n, [validity, pa.py_buffer(dense)], null_count)
        return _build_binary(dtype, values, valid, n, validity, null_count, spec)
    dense = _scatter(_values_from_physical(dtype, values, spec), valid, n)
    if pa.types.is_boolean(dtype):
        data = pa.py_buffer(np.packbits(dense.view(np.uint8), bitorder="little"))
    else:
        data = pa.py_buffer(np.ascontiguousarray(dense))
    return pa.Array.from_buffers(dtype, n, [validity, data], null_count)


def _scatter(
    values: npt.NDArray[Any], valid: npt.NDArray[np.bool_] | None, n: int
) -> npt.NDArray[Any]:
    """Spread non-null values over ``n`` slots, zero-filling the null ones."""
    if valid is None:
        return values
    dense = np.zeros((n, *values.shape[1:]), dtype=values.dtype)
    dense[valid] = values
    return dense


def _values_from_physical(
    dtype: pa.DataType, values: npt.NDArray[Any], spec: ColumnSpec
) -> npt.NDArray[Any]:
    """Non-null physical values converted to the Arrow type's buffer dtype and unit."""
    if pa.types.is_boolean(dtype):
        return values.astype(np.bool_, copy=False)
    if pa.types.is_integer(dtype):
        target = np.dtype(INT_DTYPES[dtype])
        if values.dtype.itemsize == target.itemsize:
            return values.view(target)
        return values.astype(target)
    if pa.types.is_decimal(dtype):
        return _decimal_from_physical(values, dtype.byte_width, spec)
    if pa.types.is_float16(dtype) or pa.types.is_fixed_size_binary(dtype):
        return np.ascontiguousarray(values, dtype=np.uint8)
    if pa.types.is_float32(dtype):
        return values.astype(np.float32, copy=False)
    if pa.types.is_float64(dtype):
        return values.astype(np.float64, copy=False)
    if pa.types.is_date32(dtype):
        return values.astype(np.int32, copy=False)
    if pa.types.is_date64(dtype):
        return values.astype(np.int64) * MILLIS_PER_DAY
    if pa.types.is_time32(dtype):
        ms = values.astype(np.int32, copy=False)
        return ms // 1000 if dtype.unit == "s" else ms
    if pa.types.is_timestamp(dtype):
        if spec.physical_type == Type.INT96:
            return _int96_to_timestamp(values, dtype.unit)
        ts = values.astype(np.int64, copy=False)
        return ts // 1000 if dtype.unit == "s" else ts
    if pa.types.is_time64(dtype) or pa.types.is_duration(dtype):
        return values.astype(np.int64, copy=False)
    raise FormatError(
        f"Column {spec.name!r} (index {spec.index}) of Arrow type {dtype} cannot be read from "
        f"physical type {spec.physical_type.name}."
    )


def _int96_to_timestamp(values: npt.NDArray[np.uint8], unit: str) -> npt.NDArray[np.int64]:
    rows = np.ascontiguousarray(values, dtype=np.uint8)
    nanos_of_day = rows[:, :8].copy().view("<i8").reshape(-1).astype(np.int64)
    # The Julian day is unsigned, and the arithmetic wraps in int64, as pyarrow's.
    julian_day = rows[:, 8:].copy().view("<u4").reshape(-1).astype(np.int64)
    nanos = (julian_day - JULIAN_UNIX_EPOCH) * NANOS_PER_DAY + nanos_of_day
    return nanos // (1_000_000_000 // UNIT_PER_SECOND[unit])


def _build_binary(
    dtype: pa.DataType,
    values: BinaryValues,
    valid: npt.NDArray[np.bool_] | None,
    n: int,
    validity: pa.Buffer | None,
    null_count: int,
    spec: ColumnSpec,
) -> pa.Array:
    large = pa.types.is_large_string(dtype) or pa.types.is_large_binary(dtype)
    if not (large or pa.types.is_string(dtype) or pa.types.is_binary(dtype)):
        raise FormatError(
            f"Column {spec.name!r} (index {spec.index}) of Arrow type {dtype} cannot be read from "
            "physical type BYTE_ARRAY."
        )
    base = int(values.offsets[0])
    data = values.data[base : int(values.offsets[-1])]
    if valid is None:
        offsets = values.offsets - base
    else:
        lengths = np.zeros(n, dtype=np.int64)
        lengths[valid] = values.lengths
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
    if not large:
        if data.shape[0] > INT32_MAX:
            raise FormatError(
                f"Column {spec.name!r} (index {spec.index}) holds {data.shape[0]} bytes of "
                f"values, more than {dtype} can address; read it as the large type."
            )
        offsets = offsets.astype(np.int32)
    buffers = [validity, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(data))]
    return pa.Array.from_buffers(dtype, n, buffers, null_count)
