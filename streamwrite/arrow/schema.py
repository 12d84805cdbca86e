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
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from streamwrite.arrow.column import ColumnSpec, FieldNode, NodeKind
from streamwrite.arrow.schema_leaf import column_spec, leaf_element
from streamwrite.arrow.schema_nested import NestedBuilder
from streamwrite.arrow.schema_read import (
    _PHYSICAL_SORT_ORDER,
    FIELD_ID_KEY,
    _infer_type,
    _inferred_field,
    _sort_order,
)
from streamwrite.arrow.schema_read_nested import NestedReader, element_trees
from streamwrite.errors import FormatError, SchemaError
from streamwrite.format.enums import FieldRepetitionType, Type
from streamwrite.format.structs import KeyValue, SchemaElement

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
    """An Arrow schema with its Parquet schema.

    Attributes:
        arrow_schema: The Arrow schema.
        elements: The footer's schema: the root element first, then the groups and leaves of
            each field, depth first (a flat schema: one element per leaf).
        columns: One :class:`ColumnSpec` per leaf, in order.
        fields: One :class:`FieldNode` per top-level Arrow field (a flat field is a LEAF node).
    """

    arrow_schema: pa.Schema
    elements: list[SchemaElement]
    columns: tuple[ColumnSpec, ...]
    fields: tuple[FieldNode, ...]

    @property
    def is_flat(self) -> bool:
        """Whether every top-level field is a primitive (one leaf column per field)."""
        return all(node.kind is NodeKind.LEAF for node in self.fields)

    def field_columns(self, index: int) -> tuple[ColumnSpec, ...]:
        """The leaf columns of top-level field ``index``, in order."""
        node = self.fields[index]
        return self.columns[node.leaf_start : node.leaf_stop]

    @property
    def arrow_schema_value(self) -> str:
        """The footer's ``ARROW:schema`` value: :func:`encode_arrow_schema` of ``arrow_schema``
        (computed on each call; the file writer keeps it)."""
        return encode_arrow_schema(self.arrow_schema)


# ---------------------------------------------------------------------------------------------
# Arrow -> Parquet


def arrow_to_parquet(schema: pa.Schema) -> ParquetSchema:
    """Map an Arrow schema to Parquet schema elements, as pyarrow would write them.

    Structs, lists (list, large_list, fixed_size_list) and maps, nested to any depth, become
    the groups of :mod:`streamwrite.arrow.schema_nested`.

    Args:
        schema: The Arrow schema to write.

    Returns:
        The root, group and leaf elements, one :class:`ColumnSpec` per leaf and one
        :class:`FieldNode` per field.

    Raises:
        UnsupportedError: If a field's type has no Parquet mapping (unions, intervals, empty
            structs, dictionaries of nested types...).
        SchemaError: If a field of type null is not nullable.
    """
    builder = NestedBuilder(column_spec)
    fields = tuple(builder.add(schema.field(i)) for i in range(len(schema)))
    root = SchemaElement(
        name=ROOT_NAME, repetition_type=FieldRepetitionType.REQUIRED, num_children=len(schema)
    )
    return ParquetSchema(schema, [root, *builder.elements], tuple(builder.columns), fields)


def flat_fields(columns: Sequence[ColumnSpec]) -> tuple[FieldNode, ...]:
    """The LEAF nodes of flat columns (one per column, named after it)."""
    return tuple(
        FieldNode(
            field=spec.field,
            kind=NodeKind.LEAF,
            def_level=spec.max_definition_level,
            rep_level=0,
            children=(),
            leaf=spec.index,
            leaf_start=spec.index,
            leaf_stop=spec.index + 1,
            path=(spec.name,),
        )
        for spec in columns
    )


# ---------------------------------------------------------------------------------------------
# Logical types: which member of the union is set, converted types as logical types


def parquet_to_arrow(
    elements: list[SchemaElement], key_value_metadata: list[KeyValue] | None
) -> ParquetSchema:
    """Map a Parquet schema (and the footer's ``ARROW:schema``, if any) to Arrow.

    Groups map as :mod:`streamwrite.arrow.schema_read_nested` describes (three-level and
    legacy lists, maps, structs, repeated fields); leaves as :func:`_infer_type`.

    Args:
        elements: The footer's schema elements, root first.
        key_value_metadata: The footer's key-value metadata, or ``None``.

    Returns:
        The Arrow schema (with the footer's other key-value pairs as schema metadata), one
        :class:`ColumnSpec` per leaf, each holding the footer's own leaf element, and one
        :class:`FieldNode` per top-level field.

    Raises:
        UnsupportedError: If a leaf uses a logical type streamwrite does not read.
        FormatError: If the elements are not a valid Parquet schema (missing types, a logical
            type on a physical type it cannot annotate, malformed LIST or MAP groups, a bad
            ``ARROW:schema`` value).
    """
    if not elements:
        raise FormatError("The footer's schema has no elements; it needs at least a root.")
    trees = element_trees(elements)
    metadata: dict[bytes, bytes] = {}
    origin: pa.Schema | None = None
    for kv in key_value_metadata or []:
        if kv.key == ARROW_SCHEMA_KEY and kv.value is not None:
            origin = decode_arrow_schema(kv.value)
        else:
            metadata[_as_bytes(kv.key or "")] = _as_bytes(kv.value or "")
    if origin is not None:
        if origin.names != [tree.name for tree in trees]:
            origin = None  # not the schema of these columns: ignore it
        else:
            metadata = dict(origin.metadata or {})  # as pyarrow: the stored schema's metadata
    reader = NestedReader(_read_spec)
    fields = tuple(
        reader.add(tree, None if origin is None else origin.field(i))
        for i, tree in enumerate(trees)
    )
    arrow_schema = pa.schema([node.field for node in fields], metadata=metadata or None)
    return ParquetSchema(arrow_schema, list(elements), tuple(reader.columns), fields)


def _as_bytes(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else value.encode()


def _read_spec(
    index: int,
    leaf: SchemaElement,
    path: tuple[str, ...] | None,
    max_definition_level: int,
    max_repetition_level: int,
    origin: pa.Field | None,
) -> ColumnSpec:
    """The ColumnSpec of leaf ``index`` (``path`` None for a flat top-level column)."""
    where = ".".join(path) if path is not None else leaf.name
    if leaf.type not in _PHYSICAL_SORT_ORDER or leaf.repetition_type not in (
        FieldRepetitionType.REQUIRED,
        FieldRepetitionType.OPTIONAL,
        FieldRepetitionType.REPEATED,
    ):
        raise FormatError(
            f"Column {where!r} (leaf {index}) has physical type {leaf.type} and "
            f"repetition {leaf.repetition_type}; a leaf needs a known type and repetition."
        )
    repetition = FieldRepetitionType(leaf.repetition_type)
    inferred = _inferred_field(index, leaf)
    inferred = inferred.with_nullable(repetition == FieldRepetitionType.OPTIONAL)
    field = inferred if origin is None else _restore(origin, inferred, index)
    if origin is not None:
        field = field.with_name(origin.name)
    return ColumnSpec(
        index=index,
        name=field.name if path is None else ".".join(path),
        field=field,
        physical_type=Type(leaf.type),
        type_length=leaf.type_length,
        repetition=repetition,
        max_definition_level=max_definition_level,
        sort_order=_sort_order(leaf),
        element=leaf,
        max_repetition_level=max_repetition_level,
        path=path,
    )


def _restore(origin: pa.Field, inferred: pa.Field, index: int) -> pa.Field:
    """Take the stored Arrow field if its mapping reads back as the inferred type."""
    metadata = dict(origin.metadata or {})
    metadata.update(inferred.metadata or {})  # the footer's field_id wins, as in pyarrow
    try:
        expected = _infer_type(index, leaf_element(index, origin.with_nullable(True)))
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
