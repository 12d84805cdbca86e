"""Arrow schema <-> Parquet schema for flat tables, matching the choices of pyarrow (Arrow C++).

Implements the type half of parquet-format ``LogicalTypes.md`` as Arrow C++ applies it
(``cpp/src/parquet/arrow/schema.cc``, ``schema_internal.cc``), so our footers look like pyarrow's.
The data half (Arrow buffers <-> physical values) lives in :mod:`streamwrite.arrow.values`.

Writing (:func:`arrow_to_parquet`), one leaf ``SchemaElement`` per Arrow field::

    Arrow type                 physical (type_length)  logicalType                  converted_type
    -------------------------  ----------------------  ---------------------------  ----------------
    null (must be nullable)    INT32                   UNKNOWN                      -
    bool                       BOOLEAN                 -                            -
    int8 / int16               INT32                   INTEGER(8|16, signed)        INT_8 / INT_16
    int32                      INT32                   -                            -
    int64                      INT64                   -                            -
    uint8 / uint16 / uint32    INT32 (uint32: bits)    INTEGER(8|16|32, unsigned)   UINT_8/16/32
    uint64                     INT64                   INTEGER(64, unsigned)        UINT_64
    float16                    FIXED_LEN_BYTE_ARRAY(2) FLOAT16                      -
    float32 / float64          FLOAT / DOUBLE          -                            -
    string, large_string,      BYTE_ARRAY              STRING                       UTF8
      string_view
    binary, large_binary,      BYTE_ARRAY              -                            -
      binary_view
    fixed_size_binary(n)       FIXED_LEN_BYTE_ARRAY(n) -                            -
    decimal32/64/128/256(p,s)  INT32 if p <= 9,        DECIMAL(s, p)                DECIMAL (+scale,
                               INT64 if p <= 18, else                                precision)
                               FIXED_LEN_BYTE_ARRAY(minimal bytes for p)
    date32, date64             INT32 (days)            DATE                         DATE
    time32(s|ms)               INT32 (ms)              TIME(false, MILLIS)          -
    time64(us|ns)              INT64                   TIME(false, MICROS|NANOS)    -
    timestamp(s|ms, tz)        INT64 (ms)              TIMESTAMP(tz set, MILLIS)    TIMESTAMP_MILLIS
    timestamp(us, tz)          INT64                   TIMESTAMP(tz set, MICROS)    TIMESTAMP_MICROS
    timestamp(ns, tz)          INT64                   TIMESTAMP(tz set, NANOS)     -
    duration(any)              INT64                   -                            -
    dictionary<T>              as T                    as T                         as T
    extension arrow.uuid       FIXED_LEN_BYTE_ARRAY(16) UUID                        -
    extension arrow.json       BYTE_ARRAY              JSON                         JSON
    other extension types      as their storage type
    list, struct, map, union.. UnsupportedError (streamwrite writes flat schemas only)

Decimals deliberately differ from pyarrow's default (always FIXED_LEN_BYTE_ARRAY); they match
pyarrow's ``store_decimal_as_integer=True``. ``PARQUET:field_id`` field metadata becomes
``field_id``. The root is ``SchemaElement(name="schema", repetition_type=REQUIRED,
num_children=...)`` as pyarrow writes it.

Reading (:func:`parquet_to_arrow`) infers each leaf's Arrow type as pyarrow does (a ``logicalType``
wins over ``converted_type``, which is first mapped to a logical type as in ``LogicalTypes.md``):
INTEGER -> (u)int8..64; DATE -> date32; TIME -> time32(ms) / time64(us|ns); TIMESTAMP ->
timestamp(unit, "UTC" if isAdjustedToUTC); INT96 -> timestamp(ns); DECIMAL on INT32 / INT64 /
FIXED_LEN_BYTE_ARRAY / BYTE_ARRAY -> decimal128 (decimal256 above precision 38); STRING -> string;
JSON -> extension arrow.json (string storage); ENUM / BSON / none on BYTE_ARRAY -> binary; UUID on
FIXED_LEN_BYTE_ARRAY(16) -> extension arrow.uuid; INTERVAL / none on FIXED_LEN_BYTE_ARRAY ->
fixed_size_binary(n); FLOAT16 -> float16; UNKNOWN -> null. (JSON and UUID give extension types as
pyarrow 26 does by default, ``arrow_extensions_enabled=True``.) When the ``ARROW:schema`` key holds
a schema with the same field names, each field whose type maps to a leaf that pyarrow would read
as the same inferred type is taken whole from it (restoring dictionaries, time zones, large and
view types, time32(s), timestamp(s), date64, durations, extension types); otherwise the inferred
type is kept, with the original time zone applied as pyarrow does.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

import pyarrow as pa

from streamwrite.arrow.column import ColumnSpec
from streamwrite.arrow.schema_read import (
    _CONVERTED_INT,
    _PHYSICAL_SORT_ORDER,
    FIELD_ID_KEY,
    _infer_type,
    _inferred_field,
    _sort_order,
)
from streamwrite.arrow.units import decimal_size
from streamwrite.errors import FormatError, SchemaError, UnsupportedError
from streamwrite.format.enums import ConvertedType, FieldRepetitionType, Type
from streamwrite.format.structs import (
    DateType,
    DecimalType,
    Float16Type,
    IntType,
    JsonType,
    KeyValue,
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

__all__ = [
    "ARROW_SCHEMA_KEY",
    "FIELD_ID_KEY",
    "ColumnSpec",
    "ParquetSchema",
    "arrow_to_parquet",
    "decode_arrow_schema",
    "encode_arrow_schema",
    "parquet_to_arrow",
]

ARROW_SCHEMA_KEY = "ARROW:schema"
"""Footer key-value key holding the base64 IPC-serialized Arrow schema."""
ROOT_NAME = "schema"


@dataclass(frozen=True, slots=True)
class ParquetSchema:
    """A flat Arrow schema with its Parquet schema.

    Attributes:
        arrow_schema: The Arrow schema.
        elements: The footer's schema: the root element first, then one element per leaf.
        columns: One :class:`ColumnSpec` per leaf, in order.
    """

    arrow_schema: pa.Schema
    elements: list[SchemaElement]
    columns: tuple[ColumnSpec, ...]

    @property
    def arrow_schema_value(self) -> str:
        """The footer's ``ARROW:schema`` value: :func:`encode_arrow_schema` of ``arrow_schema``
        (computed on each call; the file writer keeps it)."""
        return encode_arrow_schema(self.arrow_schema)


# ---------------------------------------------------------------------------------------------
# Arrow -> Parquet


def arrow_to_parquet(schema: pa.Schema) -> ParquetSchema:
    """Map a flat Arrow schema to Parquet schema elements, as pyarrow would write them.

    Args:
        schema: The Arrow schema to write.

    Returns:
        The root and leaf elements and one :class:`ColumnSpec` per field.

    Raises:
        UnsupportedError: If a field is nested (list, struct, map, union...) or its type has no
            Parquet mapping (intervals...).
        SchemaError: If a field of type null is not nullable.
    """
    columns = tuple(_column_spec(i, schema.field(i)) for i in range(len(schema)))
    root = SchemaElement(
        name=ROOT_NAME, repetition_type=FieldRepetitionType.REQUIRED, num_children=len(columns)
    )
    return ParquetSchema(schema, [root, *(c.element for c in columns)], columns)


def _column_spec(index: int, field: pa.Field) -> ColumnSpec:
    element = _leaf_element(index, field)
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


def _field_id(field: pa.Field) -> int | None:
    raw = (field.metadata or {}).get(FIELD_ID_KEY)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        return None  # pyarrow ignores an unparsable id too
    return value if 0 <= value < 2**31 else None


def _leaf_element(index: int, field: pa.Field) -> SchemaElement:
    repetition = FieldRepetitionType.OPTIONAL if field.nullable else FieldRepetitionType.REQUIRED
    if pa.types.is_null(field.type) and not field.nullable:
        raise SchemaError(
            f"Column {field.name!r} (index {index}) has type null but is not nullable; "
            "a null column must be nullable."
        )
    element = _annotate(field.type, field.name, index)
    element.name = field.name
    element.repetition_type = repetition
    element.field_id = _field_id(field)
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


# ---------------------------------------------------------------------------------------------
# Logical types: which member of the union is set, converted types as logical types


def parquet_to_arrow(
    elements: list[SchemaElement], key_value_metadata: list[KeyValue] | None
) -> ParquetSchema:
    """Map a flat Parquet schema (and the footer's ``ARROW:schema``, if any) to Arrow.

    Args:
        elements: The footer's schema elements, root first.
        key_value_metadata: The footer's key-value metadata, or ``None``.

    Returns:
        The Arrow schema (with the footer's other key-value pairs as schema metadata) and one
        :class:`ColumnSpec` per leaf, each holding the footer's own leaf element.

    Raises:
        UnsupportedError: If the schema is nested, has REPEATED leaves, or uses a logical type
            streamwrite does not read.
        FormatError: If the elements are not a valid Parquet schema (missing types, a logical
            type on a physical type it cannot annotate, a bad ``ARROW:schema`` value).
    """
    if not elements:
        raise FormatError("The footer's schema has no elements; it needs at least a root.")
    root, leaves = elements[0], elements[1:]
    for i, leaf in enumerate(leaves):
        if (leaf.num_children is not None and leaf.num_children > 0) or leaf.type is None:
            raise UnsupportedError(
                f"Column {leaf.name!r} (schema element {i + 1}) is a group; streamwrite reads "
                "flat schemas only."
            )
        if leaf.repetition_type == FieldRepetitionType.REPEATED:
            raise UnsupportedError(
                f"Column {leaf.name!r} (schema element {i + 1}) is REPEATED; streamwrite reads "
                "flat schemas only."
            )
        if leaf.type not in _PHYSICAL_SORT_ORDER or leaf.repetition_type not in (
            FieldRepetitionType.REQUIRED,
            FieldRepetitionType.OPTIONAL,
        ):
            raise FormatError(
                f"Column {leaf.name!r} (schema element {i + 1}) has physical type {leaf.type} and "
                f"repetition {leaf.repetition_type}; a leaf needs a known type and repetition."
            )
    if root.num_children != len(leaves):
        raise FormatError(
            f"The schema root says it has {root.num_children} children but {len(leaves)} "
            "elements follow it."
        )
    metadata: dict[bytes, bytes] = {}
    origin: pa.Schema | None = None
    for kv in key_value_metadata or []:
        if kv.key == ARROW_SCHEMA_KEY and kv.value is not None:
            origin = decode_arrow_schema(kv.value)
        else:
            metadata[_as_bytes(kv.key or "")] = _as_bytes(kv.value or "")
    if origin is not None:
        if origin.names != [leaf.name for leaf in leaves]:
            origin = None  # not the schema of these columns: ignore it
        else:
            metadata = dict(origin.metadata or {})  # as pyarrow: the stored schema's metadata
    columns = []
    for i, leaf in enumerate(leaves):
        inferred = _inferred_field(i, leaf)
        field = inferred if origin is None else _restore(origin.field(i), inferred, i)
        columns.append(_read_spec(i, field, leaf))
    arrow_schema = pa.schema([c.field for c in columns], metadata=metadata or None)
    return ParquetSchema(arrow_schema, list(elements), tuple(columns))


def _as_bytes(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else value.encode()


def _read_spec(index: int, field: pa.Field, leaf: SchemaElement) -> ColumnSpec:
    assert leaf.type is not None and leaf.repetition_type is not None  # checked by the caller
    repetition = FieldRepetitionType(leaf.repetition_type)
    return ColumnSpec(
        index=index,
        name=field.name,
        field=field,
        physical_type=Type(leaf.type),
        type_length=leaf.type_length,
        repetition=repetition,
        max_definition_level=int(repetition == FieldRepetitionType.OPTIONAL),
        sort_order=_sort_order(leaf),
        element=leaf,
    )


def _restore(origin: pa.Field, inferred: pa.Field, index: int) -> pa.Field:
    """Take the stored Arrow field if its mapping reads back as the inferred type."""
    metadata = dict(origin.metadata or {})
    metadata.update(inferred.metadata or {})  # the footer's field_id wins, as in pyarrow
    try:
        expected = _infer_type(index, _leaf_element(index, origin.with_nullable(True)))
    except SchemaError:
        expected = None
    if expected is not None and expected.equals(inferred.type):
        dtype = origin.type
    else:
        dtype = inferred.type
        if (
            pa.types.is_timestamp(dtype)
            and pa.types.is_timestamp(origin.type)
            and dtype.tz == "UTC"
            and origin.type.tz is not None
        ):
            dtype = pa.timestamp(dtype.unit, origin.type.tz)
    return pa.field(inferred.name, dtype, nullable=inferred.nullable, metadata=metadata or None)


# ---------------------------------------------------------------------------------------------
# ARROW:schema


def encode_arrow_schema(schema: pa.Schema) -> str:
    """The ``ARROW:schema`` footer value for a schema, byte for byte as pyarrow writes it.

    Returns:
        Base64 of the IPC-serialized schema (an encapsulated Schema message).
    """
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def decode_arrow_schema(value: str) -> pa.Schema:
    """Decode an ``ARROW:schema`` footer value.

    Returns:
        The serialized Arrow schema.

    Raises:
        FormatError: If the value is not base64 of an IPC-serialized Arrow schema.
    """
    try:
        raw = base64.b64decode(value, validate=False)
        schema = pa.ipc.read_schema(pa.py_buffer(raw))
        schema.names  # noqa: B018 - names are decoded lazily: bad UTF-8 raises here, not later
        return schema
    except (binascii.Error, ValueError, OSError, pa.ArrowException) as exc:
        raise FormatError(
            f"The footer's {ARROW_SCHEMA_KEY} value is not a base64 IPC-serialized Arrow schema "
            f"({exc})."
        ) from exc
