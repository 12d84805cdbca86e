"""Reading Parquet types: logical and converted annotations -> Arrow types and sort orders.

The mapping follows pyarrow's (``GetArrowType``): converted types are first turned into the
logical types they stand for (LogicalTypes.md), INT96 reads as timestamp[ns], DECIMAL on INT32 /
INT64 / FIXED_LEN_BYTE_ARRAY / BYTE_ARRAY reads as decimal128 (decimal256 above precision 38),
and an annotation on a physical type it cannot apply to makes the file invalid (FormatError).
"""

from __future__ import annotations

from dataclasses import fields

import pyarrow as pa

from streamwrite.errors import FormatError, UnsupportedError
from streamwrite.format.enums import ConvertedType, FieldRepetitionType, Type
from streamwrite.format.structs import (
    BsonType,
    DateType,
    DecimalType,
    EnumType,
    IntType,
    JsonType,
    MicroSeconds,
    MilliSeconds,
    SchemaElement,
    StringType,
    TimestampType,
    TimeType,
    TimeUnit,
)
from workers.stats import SortOrder

FIELD_ID_KEY = b"PARQUET:field_id"
"""Arrow field metadata key mirrored into ``SchemaElement.field_id``."""

_CONVERTED_INT = {
    (8, True): ConvertedType.INT_8,
    (16, True): ConvertedType.INT_16,
    (32, True): ConvertedType.INT_32,
    (64, True): ConvertedType.INT_64,
    (8, False): ConvertedType.UINT_8,
    (16, False): ConvertedType.UINT_16,
    (32, False): ConvertedType.UINT_32,
    (64, False): ConvertedType.UINT_64,
}
_INT_FROM_CONVERTED = {converted: key for key, converted in _CONVERTED_INT.items()}
_ARROW_INT = {
    (8, True): pa.int8(),
    (16, True): pa.int16(),
    (32, True): pa.int32(),
    (64, True): pa.int64(),
    (8, False): pa.uint8(),
    (16, False): pa.uint16(),
    (32, False): pa.uint32(),
    (64, False): pa.uint64(),
}
_MAX_DECIMAL128_PRECISION = 38
_KNOWN_LOGICAL = frozenset(
    {"NONE", "STRING", "ENUM", "JSON", "BSON", "UUID", "FLOAT16", "DATE", "TIME", "TIMESTAMP"}
    | {"INTEGER", "DECIMAL", "INTERVAL", "GEOMETRY", "GEOGRAPHY"}
)
"""Logical types a leaf may carry: on a physical type they cannot annotate, the file is invalid."""
_PHYSICAL_SORT_ORDER: dict[int, SortOrder] = {
    Type.BOOLEAN: SortOrder.BOOLEAN,
    Type.INT32: SortOrder.SIGNED,
    Type.INT64: SortOrder.SIGNED,
    Type.INT96: SortOrder.UNDEFINED,
    Type.FLOAT: SortOrder.FLOAT,
    Type.DOUBLE: SortOrder.FLOAT,
    Type.BYTE_ARRAY: SortOrder.UNSIGNED_BYTES,
    Type.FIXED_LEN_BYTE_ARRAY: SortOrder.UNSIGNED_BYTES,
}


def _member(union: object) -> tuple[str, object] | None:
    """The (name, value) of the set member of a Thrift union dataclass, or None."""
    if union is None:
        return None
    for f in fields(union):  # type: ignore[arg-type]
        value = getattr(union, f.name)
        if value is not None:
            return f.name, value
    return None


def _unit_name(unit: TimeUnit | None) -> str | None:
    member = _member(unit)
    return None if member is None else member[0]


def _logical(element: SchemaElement) -> tuple[str, object] | None:
    """The element's logical type as (union member name, struct), from ``converted_type`` if the
    ``logicalType`` is absent (``LogicalTypes.md`` backward compatibility tables)."""
    member = _member(element.logicalType)
    if member is not None or element.converted_type is None:
        return member
    try:
        converted = ConvertedType(element.converted_type)
    except ValueError:
        return f"converted type {element.converted_type}", None  # newer than this library
    millis, micros = TimeUnit(MILLIS=MilliSeconds()), TimeUnit(MICROS=MicroSeconds())
    simple: dict[ConvertedType, tuple[str, object]] = {
        ConvertedType.UTF8: ("STRING", StringType()),
        ConvertedType.ENUM: ("ENUM", EnumType()),
        ConvertedType.JSON: ("JSON", JsonType()),
        ConvertedType.BSON: ("BSON", BsonType()),
        ConvertedType.DATE: ("DATE", DateType()),
        ConvertedType.TIME_MILLIS: ("TIME", TimeType(isAdjustedToUTC=True, unit=millis)),
        ConvertedType.TIME_MICROS: ("TIME", TimeType(isAdjustedToUTC=True, unit=micros)),
        ConvertedType.TIMESTAMP_MILLIS: (
            "TIMESTAMP",
            TimestampType(isAdjustedToUTC=True, unit=millis),
        ),
        ConvertedType.TIMESTAMP_MICROS: (
            "TIMESTAMP",
            TimestampType(isAdjustedToUTC=True, unit=micros),
        ),
    }
    if converted in simple:
        return simple[converted]
    if converted in _INT_FROM_CONVERTED:
        bits, signed = _INT_FROM_CONVERTED[converted]
        return "INTEGER", IntType(bitWidth=bits, isSigned=signed)
    if converted == ConvertedType.DECIMAL:
        return "DECIMAL", DecimalType(scale=element.scale or 0, precision=element.precision)
    return converted.name, None  # INTERVAL, or the nested MAP / MAP_KEY_VALUE / LIST


def _sort_order(element: SchemaElement) -> SortOrder:
    """How statistics compare values of a leaf (parquet.thrift ``ColumnOrder``)."""
    logical = _logical(element)
    physical = element.type
    if logical is not None:
        kind, value = logical
        if kind == "INTEGER":
            assert isinstance(value, IntType)
            return SortOrder.SIGNED if value.isSigned else SortOrder.UNSIGNED
        if kind == "DECIMAL":
            if physical in (Type.INT32, Type.INT64):
                return SortOrder.SIGNED
            return SortOrder.SIGNED_BYTES
        if kind in ("DATE", "TIME", "TIMESTAMP"):
            return SortOrder.SIGNED
        if kind in ("STRING", "ENUM", "JSON", "BSON", "UUID"):
            return SortOrder.UNSIGNED_BYTES
        if kind == "FLOAT16":
            return SortOrder.FLOAT16
        return SortOrder.UNDEFINED  # UNKNOWN (null), INTERVAL, anything newer
    return _PHYSICAL_SORT_ORDER.get(physical or 0, SortOrder.UNDEFINED)


def field_id(field: pa.Field) -> int | None:
    """The ``field_id`` of a field's ``PARQUET:field_id`` metadata (None if absent or invalid)."""
    raw = (field.metadata or {}).get(FIELD_ID_KEY)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        return None  # pyarrow ignores an unparsable id too
    return value if 0 <= value < 2**31 else None


# ---------------------------------------------------------------------------------------------
# Parquet -> Arrow


def _inferred_field(index: int, leaf: SchemaElement) -> pa.Field:
    name = leaf.name or ""
    metadata = None if leaf.field_id is None else {FIELD_ID_KEY: str(leaf.field_id).encode()}
    nullable = leaf.repetition_type != FieldRepetitionType.REQUIRED
    return pa.field(name, _infer_type(index, leaf), nullable=nullable, metadata=metadata)


def _infer_type(index: int, leaf: SchemaElement) -> pa.DataType:
    """The Arrow type pyarrow reads a leaf as (``schema_internal.cc`` ``GetArrowType``)."""
    physical = leaf.type
    logical = _logical(leaf)
    kind, value = logical if logical is not None else ("NONE", None)
    where = f"Column {leaf.name!r} (index {index})"
    if kind == "UNKNOWN":
        return pa.null()
    if kind in ("MAP", "LIST", "MAP_KEY_VALUE"):
        raise FormatError(f"{where} is a primitive annotated {kind}; only a group can be.")
    if kind == "DECIMAL" and physical in (
        Type.INT32,
        Type.INT64,
        Type.BYTE_ARRAY,
        Type.FIXED_LEN_BYTE_ARRAY,
    ):
        assert isinstance(value, DecimalType)
        return _arrow_decimal(value, leaf, where)
    if physical == Type.BOOLEAN and kind == "NONE":
        return pa.bool_()
    if physical == Type.INT32:
        if kind == "NONE":
            return pa.int32()
        if kind == "INTEGER":
            assert isinstance(value, IntType)
            if value.bitWidth in (8, 16, 32):
                return _ARROW_INT[value.bitWidth, bool(value.isSigned)]
        if kind == "DATE":
            return pa.date32()
        if kind == "TIME" and isinstance(value, TimeType) and _unit_name(value.unit) == "MILLIS":
            return pa.time32("ms")
    if physical == Type.INT64:
        if kind == "NONE":
            return pa.int64()
        if kind == "INTEGER":
            assert isinstance(value, IntType)
            if value.bitWidth == 64:
                return _ARROW_INT[64, bool(value.isSigned)]
        if kind == "TIME" and isinstance(value, TimeType):
            unit = _unit_name(value.unit)
            if unit in ("MICROS", "NANOS"):
                return pa.time64("us" if unit == "MICROS" else "ns")
        if kind == "TIMESTAMP" and isinstance(value, TimestampType):
            unit = _unit_name(value.unit)
            if unit is not None:
                arrow_unit = {"MILLIS": "ms", "MICROS": "us", "NANOS": "ns"}[unit]
                return pa.timestamp(arrow_unit, "UTC" if value.isAdjustedToUTC else None)
    if physical == Type.INT96 and kind == "NONE":
        return pa.timestamp("ns")
    if physical == Type.FLOAT and kind == "NONE":
        return pa.float32()
    if physical == Type.DOUBLE and kind == "NONE":
        return pa.float64()
    if physical == Type.BYTE_ARRAY:
        if kind == "STRING":
            return pa.string()
        if kind == "JSON":
            return pa.json_(pa.string())  # pyarrow's default arrow_extensions_enabled=True
        if kind in ("NONE", "ENUM", "BSON", "GEOMETRY", "GEOGRAPHY"):
            return pa.binary()  # WKB; pyarrow reads these as binary too
    if physical == Type.FIXED_LEN_BYTE_ARRAY:
        length = leaf.type_length
        if length is None or length < 0:
            raise FormatError(f"{where} is FIXED_LEN_BYTE_ARRAY without a valid type_length.")
        if kind == "FLOAT16" and length == 2:
            return pa.float16()
        if kind == "UUID" and length == 16:
            return pa.uuid()  # pyarrow's default arrow_extensions_enabled=True
        if kind in ("NONE", "INTERVAL", "UUID"):
            return pa.binary(length)
    physical_name = "no type" if physical is None else _physical_name(physical)
    if kind in _KNOWN_LOGICAL:
        raise FormatError(
            f"{where} has logical type {kind}, which cannot annotate {physical_name}."
        )
    raise UnsupportedError(f"{where} has logical type {kind}, which streamwrite does not read.")


def _physical_name(physical: int) -> str:
    try:
        return Type(physical).name
    except ValueError:
        return f"physical type {physical}"


def _arrow_decimal(value: DecimalType, leaf: SchemaElement, where: str) -> pa.DataType:
    precision, scale = value.precision, value.scale or 0
    if precision is None or precision < 1 or not 0 <= scale <= precision:
        raise FormatError(f"{where} has an invalid DECIMAL(precision={precision}, scale={scale}).")
    if precision <= _MAX_DECIMAL128_PRECISION:
        return pa.decimal128(precision, scale)
    if precision > 76:
        raise UnsupportedError(f"{where} has DECIMAL precision {precision}, more than Arrow's 76.")
    return pa.decimal256(precision, scale)
