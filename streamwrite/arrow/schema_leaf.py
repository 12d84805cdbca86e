"""Arrow primitive field -> Parquet leaf ``SchemaElement`` and ``ColumnSpec`` (the table in
:mod:`streamwrite.arrow.schema`'s docstring), as pyarrow (Arrow C++) writes them."""

from __future__ import annotations

import pyarrow as pa

from streamwrite.arrow.column import ColumnSpec
from streamwrite.arrow.schema_read import _CONVERTED_INT, _sort_order, field_id
from streamwrite.arrow.units import decimal_size
from streamwrite.errors import SchemaError, UnsupportedError
from streamwrite.format.enums import ConvertedType, FieldRepetitionType, Type
from streamwrite.format.structs import (
    DateType,
    DecimalType,
    Float16Type,
    IntType,
    JsonType,
    LogicalType,
    MicroSeconds,
    MilliSeconds,
    NanoSeconds,
    NullType,
    SchemaElement,
    StringType,
    TimestampType,
    TimeType,
    TimeUnit,
    UUIDType,
)

__all__ = ["column_spec", "leaf_element"]


def column_spec(index: int, field: pa.Field) -> ColumnSpec:
    """The spec of a flat column of ``field`` (its element named after the field)."""
    element = leaf_element(index, field)
    assert element.type is not None and element.repetition_type is not None
    return ColumnSpec(
        index=index,
        name=field.name,
        field=field,
        physical_type=Type(element.type),
        type_length=element.type_length,
        repetition=FieldRepetitionType(element.repetition_type),
        max_definition_level=int(element.repetition_type == FieldRepetitionType.OPTIONAL),
        sort_order=_sort_order(element),
        element=element,
    )


def leaf_element(index: int, field: pa.Field) -> SchemaElement:
    """The primitive ``SchemaElement`` of ``field`` (named after it).

    Raises:
        SchemaError: A null-typed field that is not nullable.
        UnsupportedError: A type without a Parquet mapping.
    """
    repetition = FieldRepetitionType.OPTIONAL if field.nullable else FieldRepetitionType.REQUIRED
    if pa.types.is_null(field.type) and not field.nullable:
        raise SchemaError(
            f"Column {field.name!r} (index {index}) has type null but is not nullable; "
            "a null column must be nullable."
        )
    element = _annotate(field.type, field.name, index)
    element.name = field.name
    element.repetition_type = repetition
    element.field_id = field_id(field)
    return element


def _annotate(dtype: pa.DataType, name: str, index: int) -> SchemaElement:
    """The type part of a leaf element (physical type, length, logical and converted types)."""
    if pa.types.is_dictionary(dtype):
        return _annotate(dtype.value_type, name, index)
    if isinstance(dtype, pa.BaseExtensionType):
        if dtype.extension_name == "arrow.uuid":
            return SchemaElement(
                type=Type.FIXED_LEN_BYTE_ARRAY,
                type_length=16,
                logicalType=LogicalType(UUID=UUIDType()),
            )
        if dtype.extension_name == "arrow.json":
            return SchemaElement(
                type=Type.BYTE_ARRAY,
                converted_type=ConvertedType.JSON,
                logicalType=LogicalType(JSON=JsonType()),
            )
        return _annotate(dtype.storage_type, name, index)
    if pa.types.is_null(dtype):
        return SchemaElement(type=Type.INT32, logicalType=LogicalType(UNKNOWN=NullType()))
    if pa.types.is_boolean(dtype):
        return SchemaElement(type=Type.BOOLEAN)
    if pa.types.is_integer(dtype):
        return _annotate_int(dtype)
    if pa.types.is_float16(dtype):
        return SchemaElement(
            type=Type.FIXED_LEN_BYTE_ARRAY,
            type_length=2,
            logicalType=LogicalType(FLOAT16=Float16Type()),
        )
    if pa.types.is_float32(dtype):
        return SchemaElement(type=Type.FLOAT)
    if pa.types.is_float64(dtype):
        return SchemaElement(type=Type.DOUBLE)
    if (
        pa.types.is_string(dtype)
        or pa.types.is_large_string(dtype)
        or pa.types.is_string_view(dtype)
    ):
        return SchemaElement(
            type=Type.BYTE_ARRAY,
            converted_type=ConvertedType.UTF8,
            logicalType=LogicalType(STRING=StringType()),
        )
    if (
        pa.types.is_binary(dtype)
        or pa.types.is_large_binary(dtype)
        or pa.types.is_binary_view(dtype)
    ):
        return SchemaElement(type=Type.BYTE_ARRAY)
    if pa.types.is_decimal(dtype):
        return _annotate_decimal(dtype.precision, dtype.scale)
    if pa.types.is_fixed_size_binary(dtype):
        return SchemaElement(type=Type.FIXED_LEN_BYTE_ARRAY, type_length=dtype.byte_width)
    if pa.types.is_date32(dtype) or pa.types.is_date64(dtype):
        return SchemaElement(
            type=Type.INT32,
            converted_type=ConvertedType.DATE,
            logicalType=LogicalType(DATE=DateType()),
        )
    if pa.types.is_time32(dtype):
        time = TimeType(isAdjustedToUTC=False, unit=TimeUnit(MILLIS=MilliSeconds()))
        return SchemaElement(type=Type.INT32, logicalType=LogicalType(TIME=time))
    if pa.types.is_time64(dtype):
        unit = (
            TimeUnit(NANOS=NanoSeconds()) if dtype.unit == "ns" else TimeUnit(MICROS=MicroSeconds())
        )
        time = TimeType(isAdjustedToUTC=False, unit=unit)
        return SchemaElement(type=Type.INT64, logicalType=LogicalType(TIME=time))
    if pa.types.is_timestamp(dtype):
        return _annotate_timestamp(dtype)
    if pa.types.is_duration(dtype):
        return SchemaElement(type=Type.INT64)
    if pa.types.is_nested(dtype) or pa.types.is_union(dtype) or pa.types.is_run_end_encoded(dtype):
        raise UnsupportedError(
            f"Column {name!r} (index {index}) has the nested type {dtype}; streamwrite writes "
            "flat schemas only."
        )
    raise UnsupportedError(
        f"Column {name!r} (index {index}) has Arrow type {dtype}, which has no Parquet mapping."
    )


def _annotate_int(dtype: pa.DataType) -> SchemaElement:
    bits = dtype.bit_width
    signed = pa.types.is_signed_integer(dtype)
    physical = Type.INT64 if bits == 64 else Type.INT32
    if signed and bits in (32, 64):
        return SchemaElement(type=physical)  # implied by the physical type, as pyarrow writes
    return SchemaElement(
        type=physical,
        converted_type=_CONVERTED_INT[bits, signed],
        logicalType=LogicalType(INTEGER=IntType(bitWidth=bits, isSigned=signed)),
    )


def _annotate_decimal(precision: int, scale: int) -> SchemaElement:
    if precision <= 9:
        physical, length = Type.INT32, None
    elif precision <= 18:
        physical, length = Type.INT64, None
    else:
        physical, length = Type.FIXED_LEN_BYTE_ARRAY, decimal_size(precision)
    return SchemaElement(
        type=physical,
        type_length=length,
        converted_type=ConvertedType.DECIMAL,
        scale=scale,
        precision=precision,
        logicalType=LogicalType(DECIMAL=DecimalType(scale=scale, precision=precision)),
    )


def _annotate_timestamp(dtype: pa.DataType) -> SchemaElement:
    adjusted = dtype.tz is not None
    if dtype.unit in ("s", "ms"):
        unit, converted = TimeUnit(MILLIS=MilliSeconds()), ConvertedType.TIMESTAMP_MILLIS
    elif dtype.unit == "us":
        unit, converted = TimeUnit(MICROS=MicroSeconds()), ConvertedType.TIMESTAMP_MICROS
    else:
        unit, converted = TimeUnit(NANOS=NanoSeconds()), None
    return SchemaElement(
        type=Type.INT64,
        converted_type=converted,
        logicalType=LogicalType(TIMESTAMP=TimestampType(isAdjustedToUTC=adjusted, unit=unit)),
    )
