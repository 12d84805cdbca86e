"""Parquet metadata structs, as dataclasses the Thrift codec encodes and decodes.

Every struct, union, field name and field id is that of apache/parquet-format
``src/main/thrift/parquet.thrift`` (names verbatim, e.g. ``SchemaElement.logicalType``); each
field declares its id and Thrift type next to it with
:func:`~streamwrite.format.thrift.plan.tfield`.
Conventions:

* every field defaults to ``None`` ("not set"), lists included; a ``required`` field must be
  set before :func:`~streamwrite.format.thrift.codec.serialize`;
* ``binary`` fields hold ``bytes``, ``string`` fields ``str``, ``list`` fields Python lists;
* enum fields hold the IntEnum member. A value newer than :mod:`~streamwrite.format.enums`
  (e.g. ``FieldRepetitionType.VECTOR = 3``) decodes to a plain ``int`` instead of failing and
  re-encodes unchanged; the annotations say ``E`` for convenience, so code reading untrusted
  files checks ``isinstance(value, E)`` before using ``.name``;
* a union (``LogicalType``, ``TimeUnit``, ``ColumnOrder``, ...) is a dataclass with one
  optional field per member, exactly one of which is set.

Not included: ``FieldRepetitionType.VECTOR``, ``VectorType``, ``LogicalType.VECTOR`` (19) and
``SchemaElement.vector_length`` (11), which are only proposed (parquet-format PR #592); as
unknown fields they are skipped when reading. The page index, Bloom filter and encryption
structs live in :mod:`~streamwrite.format.structs_index` and
:mod:`~streamwrite.format.structs_crypto` and are re-exported here, as are the enums.
"""

# tfield() returns a dataclasses.field (like field(), it is not a shared mutable default).
# ruff: noqa: RUF009

from __future__ import annotations

from dataclasses import dataclass

from streamwrite.format.enums import (
    BoundaryOrder,
    CompressionCodec,
    ConvertedType,
    EdgeInterpolationAlgorithm,
    Encoding,
    FieldRepetitionType,
    PageType,
    Type,
)
from streamwrite.format.structs_crypto import (
    AesGcmCtrV1,
    AesGcmV1,
    ColumnCryptoMetaData,
    EncryptionAlgorithm,
    EncryptionWithColumnKey,
    EncryptionWithFooterKey,
    FileCryptoMetaData,
)
from streamwrite.format.structs_index import (
    BloomFilterAlgorithm,
    BloomFilterCompression,
    BloomFilterHash,
    BloomFilterHeader,
    ColumnIndex,
    OffsetIndex,
    PageLocation,
    SplitBlockAlgorithm,
    Uncompressed,
    XxHash,
)
from streamwrite.format.thrift.plan import (
    BINARY,
    BOOL,
    DOUBLE,
    I8,
    I16,
    I32,
    I64,
    STRING,
    enum_of,
    list_of,
    struct_of,
    tfield,
    thrift_union,
)

__all__ = [
    # enums
    "BoundaryOrder",
    "CompressionCodec",
    "ConvertedType",
    "EdgeInterpolationAlgorithm",
    "Encoding",
    "FieldRepetitionType",
    "PageType",
    "Type",
    # statistics
    "BoundingBox",
    "GeospatialStatistics",
    "SizeStatistics",
    "Statistics",
    # logical types
    "BsonType",
    "DateType",
    "DecimalType",
    "EnumType",
    "Float16Type",
    "GeographyType",
    "GeometryType",
    "IntType",
    "JsonType",
    "ListType",
    "LogicalType",
    "MapType",
    "MicroSeconds",
    "MilliSeconds",
    "NanoSeconds",
    "NullType",
    "StringType",
    "TimeType",
    "TimeUnit",
    "TimestampType",
    "UUIDType",
    "VariantType",
    # schema, pages, chunks, file
    "ColumnChunk",
    "ColumnMetaData",
    "ColumnOrder",
    "DataPageHeader",
    "DataPageHeaderV2",
    "DictionaryPageHeader",
    "FileMetaData",
    "IEEE754TotalOrder",
    "IndexPageHeader",
    "Int96TimestampOrder",
    "KeyValue",
    "PageEncodingStats",
    "PageHeader",
    "RowGroup",
    "SchemaElement",
    "SortingColumn",
    "TypeDefinedOrder",
    # page index and Bloom filter (structs_index)
    "BloomFilterAlgorithm",
    "BloomFilterCompression",
    "BloomFilterHash",
    "BloomFilterHeader",
    "ColumnIndex",
    "OffsetIndex",
    "PageLocation",
    "SplitBlockAlgorithm",
    "Uncompressed",
    "XxHash",
    # encryption (structs_crypto)
    "AesGcmCtrV1",
    "AesGcmV1",
    "ColumnCryptoMetaData",
    "EncryptionAlgorithm",
    "EncryptionWithColumnKey",
    "EncryptionWithFooterKey",
    "FileCryptoMetaData",
]

# --------------------------------------------------------------------------- statistics


@dataclass(slots=True, kw_only=True)
class SizeStatistics:
    """Unencoded byte-array size and level histograms of a column chunk or page."""

    unencoded_byte_array_data_bytes: int | None = tfield(1, I64)
    repetition_level_histogram: list[int] | None = tfield(2, list_of(I64))
    definition_level_histogram: list[int] | None = tfield(3, list_of(I64))


@dataclass(slots=True, kw_only=True)
class BoundingBox:
    """Min/max coordinates of GEOMETRY or GEOGRAPHY values."""

    xmin: float | None = tfield(1, DOUBLE, required=True)
    xmax: float | None = tfield(2, DOUBLE, required=True)
    ymin: float | None = tfield(3, DOUBLE, required=True)
    ymax: float | None = tfield(4, DOUBLE, required=True)
    zmin: float | None = tfield(5, DOUBLE)
    zmax: float | None = tfield(6, DOUBLE)
    mmin: float | None = tfield(7, DOUBLE)
    mmax: float | None = tfield(8, DOUBLE)


@dataclass(slots=True, kw_only=True)
class GeospatialStatistics:
    """Statistics of GEOMETRY and GEOGRAPHY columns."""

    bbox: BoundingBox | None = tfield(1, struct_of(BoundingBox))
    geospatial_types: list[int] | None = tfield(2, list_of(I32))


@dataclass(slots=True, kw_only=True)
class Statistics:
    """Statistics of a column chunk or page; values are PLAIN-encoded without length prefix."""

    max: bytes | None = tfield(1, BINARY)
    min: bytes | None = tfield(2, BINARY)
    null_count: int | None = tfield(3, I64)
    distinct_count: int | None = tfield(4, I64)
    max_value: bytes | None = tfield(5, BINARY)
    min_value: bytes | None = tfield(6, BINARY)
    is_max_value_exact: bool | None = tfield(7, BOOL)
    is_min_value_exact: bool | None = tfield(8, BOOL)
    nan_count: int | None = tfield(9, I64)


# --------------------------------------------------------------------------- logical types


@dataclass(slots=True, kw_only=True)
class StringType:
    """UTF-8 BYTE_ARRAY."""


@dataclass(slots=True, kw_only=True)
class UUIDType:
    """FIXED_LEN_BYTE_ARRAY(16) holding raw UUID bytes."""


@dataclass(slots=True, kw_only=True)
class MapType:
    """MAP group annotation."""


@dataclass(slots=True, kw_only=True)
class ListType:
    """LIST group annotation."""


@dataclass(slots=True, kw_only=True)
class EnumType:
    """UTF-8 BYTE_ARRAY holding enum names."""


@dataclass(slots=True, kw_only=True)
class DateType:
    """INT32 days since the Unix epoch."""


@dataclass(slots=True, kw_only=True)
class Float16Type:
    """FIXED_LEN_BYTE_ARRAY(2) IEEE half float."""


@dataclass(slots=True, kw_only=True)
class NullType:
    """Column of nulls only (``LogicalType.UNKNOWN``)."""


@dataclass(slots=True, kw_only=True)
class DecimalType:
    """Decimal with ``scale`` and ``precision``."""

    scale: int | None = tfield(1, I32, required=True)
    precision: int | None = tfield(2, I32, required=True)


@dataclass(slots=True, kw_only=True)
class MilliSeconds:
    """Millisecond time unit."""


@dataclass(slots=True, kw_only=True)
class MicroSeconds:
    """Microsecond time unit."""


@dataclass(slots=True, kw_only=True)
class NanoSeconds:
    """Nanosecond time unit."""


@thrift_union
@dataclass(slots=True, kw_only=True)
class TimeUnit:
    """Union: the unit of a TIME or TIMESTAMP."""

    MILLIS: MilliSeconds | None = tfield(1, struct_of(MilliSeconds))
    MICROS: MicroSeconds | None = tfield(2, struct_of(MicroSeconds))
    NANOS: NanoSeconds | None = tfield(3, struct_of(NanoSeconds))


@dataclass(slots=True, kw_only=True)
class TimestampType:
    """INT64 timestamp."""

    isAdjustedToUTC: bool | None = tfield(1, BOOL, required=True)
    unit: TimeUnit | None = tfield(2, struct_of(TimeUnit), required=True)


@dataclass(slots=True, kw_only=True)
class TimeType:
    """INT32 (millis) or INT64 (micros, nanos) time of day."""

    isAdjustedToUTC: bool | None = tfield(1, BOOL, required=True)
    unit: TimeUnit | None = tfield(2, struct_of(TimeUnit), required=True)


@dataclass(slots=True, kw_only=True)
class IntType:
    """Integer of ``bitWidth`` 8, 16, 32 or 64 bits."""

    bitWidth: int | None = tfield(1, I8, required=True)
    isSigned: bool | None = tfield(2, BOOL, required=True)


@dataclass(slots=True, kw_only=True)
class JsonType:
    """UTF-8 BYTE_ARRAY holding JSON."""


@dataclass(slots=True, kw_only=True)
class BsonType:
    """BYTE_ARRAY holding BSON."""


@dataclass(slots=True, kw_only=True)
class VariantType:
    """Variant group annotation."""

    specification_version: int | None = tfield(1, I8)


@dataclass(slots=True, kw_only=True)
class GeometryType:
    """WKB BYTE_ARRAY with planar edges."""

    crs: str | None = tfield(1, STRING)


@dataclass(slots=True, kw_only=True)
class GeographyType:
    """WKB BYTE_ARRAY with edges interpolated by ``algorithm``."""

    crs: str | None = tfield(1, STRING)
    algorithm: EdgeInterpolationAlgorithm | None = tfield(2, enum_of(EdgeInterpolationAlgorithm))


@thrift_union
@dataclass(slots=True, kw_only=True)
class LogicalType:
    """Union: the logical type annotation of a SchemaElement (id 9 is reserved)."""

    STRING: StringType | None = tfield(1, struct_of(StringType))
    MAP: MapType | None = tfield(2, struct_of(MapType))
    LIST: ListType | None = tfield(3, struct_of(ListType))
    ENUM: EnumType | None = tfield(4, struct_of(EnumType))
    DECIMAL: DecimalType | None = tfield(5, struct_of(DecimalType))
    DATE: DateType | None = tfield(6, struct_of(DateType))
    TIME: TimeType | None = tfield(7, struct_of(TimeType))
    TIMESTAMP: TimestampType | None = tfield(8, struct_of(TimestampType))
    INTEGER: IntType | None = tfield(10, struct_of(IntType))
    UNKNOWN: NullType | None = tfield(11, struct_of(NullType))
    JSON: JsonType | None = tfield(12, struct_of(JsonType))
    BSON: BsonType | None = tfield(13, struct_of(BsonType))
    UUID: UUIDType | None = tfield(14, struct_of(UUIDType))
    FLOAT16: Float16Type | None = tfield(15, struct_of(Float16Type))
    VARIANT: VariantType | None = tfield(16, struct_of(VariantType))
    GEOMETRY: GeometryType | None = tfield(17, struct_of(GeometryType))
    GEOGRAPHY: GeographyType | None = tfield(18, struct_of(GeographyType))


@dataclass(slots=True, kw_only=True)
class SchemaElement:
    """One node of the schema tree, flattened depth first."""

    type: Type | None = tfield(1, enum_of(Type))
    type_length: int | None = tfield(2, I32)
    repetition_type: FieldRepetitionType | None = tfield(3, enum_of(FieldRepetitionType))
    name: str | None = tfield(4, STRING, required=True)
    num_children: int | None = tfield(5, I32)
    converted_type: ConvertedType | None = tfield(6, enum_of(ConvertedType))
    scale: int | None = tfield(7, I32)
    precision: int | None = tfield(8, I32)
    field_id: int | None = tfield(9, I32)
    logicalType: LogicalType | None = tfield(10, struct_of(LogicalType))


# --------------------------------------------------------------------------- pages


@dataclass(slots=True, kw_only=True)
class DataPageHeader:
    """Header of a v1 data page."""

    num_values: int | None = tfield(1, I32, required=True)
    encoding: Encoding | None = tfield(2, enum_of(Encoding), required=True)
    definition_level_encoding: Encoding | None = tfield(3, enum_of(Encoding), required=True)
    repetition_level_encoding: Encoding | None = tfield(4, enum_of(Encoding), required=True)
    statistics: Statistics | None = tfield(5, struct_of(Statistics))


@dataclass(slots=True, kw_only=True)
class IndexPageHeader:
    """Header of an index page (never specified, no fields)."""


@dataclass(slots=True, kw_only=True)
class DictionaryPageHeader:
    """Header of a dictionary page."""

    num_values: int | None = tfield(1, I32, required=True)
    encoding: Encoding | None = tfield(2, enum_of(Encoding), required=True)
    is_sorted: bool | None = tfield(3, BOOL)


@dataclass(slots=True, kw_only=True)
class DataPageHeaderV2:
    """Header of a v2 data page; ``is_compressed`` absent means true."""

    num_values: int | None = tfield(1, I32, required=True)
    num_nulls: int | None = tfield(2, I32, required=True)
    num_rows: int | None = tfield(3, I32, required=True)
    encoding: Encoding | None = tfield(4, enum_of(Encoding), required=True)
    definition_levels_byte_length: int | None = tfield(5, I32, required=True)
    repetition_levels_byte_length: int | None = tfield(6, I32, required=True)
    is_compressed: bool | None = tfield(7, BOOL)
    statistics: Statistics | None = tfield(8, struct_of(Statistics))


@dataclass(slots=True, kw_only=True)
class PageHeader:
    """Header before every page; exactly one ``*_header`` is set, matching ``type``."""

    type: PageType | None = tfield(1, enum_of(PageType), required=True)
    uncompressed_page_size: int | None = tfield(2, I32, required=True)
    compressed_page_size: int | None = tfield(3, I32, required=True)
    crc: int | None = tfield(4, I32)
    data_page_header: DataPageHeader | None = tfield(5, struct_of(DataPageHeader))
    index_page_header: IndexPageHeader | None = tfield(6, struct_of(IndexPageHeader))
    dictionary_page_header: DictionaryPageHeader | None = tfield(7, struct_of(DictionaryPageHeader))
    data_page_header_v2: DataPageHeaderV2 | None = tfield(8, struct_of(DataPageHeaderV2))


# --------------------------------------------------------------------------- chunks and file


@dataclass(slots=True, kw_only=True)
class KeyValue:
    """One key/value metadata pair."""

    key: str | None = tfield(1, STRING, required=True)
    value: str | None = tfield(2, STRING)


@dataclass(slots=True, kw_only=True)
class SortingColumn:
    """Sort order of one leaf column within a row group."""

    column_idx: int | None = tfield(1, I32, required=True)
    descending: bool | None = tfield(2, BOOL, required=True)
    nulls_first: bool | None = tfield(3, BOOL, required=True)


@dataclass(slots=True, kw_only=True)
class PageEncodingStats:
    """Number of pages of one type with one encoding."""

    page_type: PageType | None = tfield(1, enum_of(PageType), required=True)
    encoding: Encoding | None = tfield(2, enum_of(Encoding), required=True)
    count: int | None = tfield(3, I32, required=True)


@dataclass(slots=True, kw_only=True)
class ColumnMetaData:
    """Metadata of one column chunk; ``*_offset`` fields are absolute file offsets."""

    type: Type | None = tfield(1, enum_of(Type), required=True)
    encodings: list[Encoding] | None = tfield(2, list_of(enum_of(Encoding)), required=True)
    path_in_schema: list[str] | None = tfield(3, list_of(STRING), required=True)
    codec: CompressionCodec | None = tfield(4, enum_of(CompressionCodec), required=True)
    num_values: int | None = tfield(5, I64, required=True)
    total_uncompressed_size: int | None = tfield(6, I64, required=True)
    total_compressed_size: int | None = tfield(7, I64, required=True)
    key_value_metadata: list[KeyValue] | None = tfield(8, list_of(struct_of(KeyValue)))
    data_page_offset: int | None = tfield(9, I64, required=True)
    index_page_offset: int | None = tfield(10, I64)
    dictionary_page_offset: int | None = tfield(11, I64)
    statistics: Statistics | None = tfield(12, struct_of(Statistics))
    encoding_stats: list[PageEncodingStats] | None = tfield(
        13, list_of(struct_of(PageEncodingStats))
    )
    bloom_filter_offset: int | None = tfield(14, I64)
    bloom_filter_length: int | None = tfield(15, I32)
    size_statistics: SizeStatistics | None = tfield(16, struct_of(SizeStatistics))
    geospatial_statistics: GeospatialStatistics | None = tfield(17, struct_of(GeospatialStatistics))


@dataclass(slots=True, kw_only=True)
class ColumnChunk:
    """One column chunk of a row group; ``file_offset`` is required (write 0)."""

    file_path: str | None = tfield(1, STRING)
    file_offset: int | None = tfield(2, I64, required=True)
    meta_data: ColumnMetaData | None = tfield(3, struct_of(ColumnMetaData))
    offset_index_offset: int | None = tfield(4, I64)
    offset_index_length: int | None = tfield(5, I32)
    column_index_offset: int | None = tfield(6, I64)
    column_index_length: int | None = tfield(7, I32)
    crypto_metadata: ColumnCryptoMetaData | None = tfield(8, struct_of(ColumnCryptoMetaData))
    encrypted_column_metadata: bytes | None = tfield(9, BINARY)


@dataclass(slots=True, kw_only=True)
class RowGroup:
    """One row group: its column chunks, sizes and row count."""

    columns: list[ColumnChunk] | None = tfield(1, list_of(struct_of(ColumnChunk)), required=True)
    total_byte_size: int | None = tfield(2, I64, required=True)
    num_rows: int | None = tfield(3, I64, required=True)
    sorting_columns: list[SortingColumn] | None = tfield(4, list_of(struct_of(SortingColumn)))
    file_offset: int | None = tfield(5, I64)
    total_compressed_size: int | None = tfield(6, I64)
    ordinal: int | None = tfield(7, I16)


@dataclass(slots=True, kw_only=True)
class TypeDefinedOrder:
    """Order defined by the logical or physical type."""


@dataclass(slots=True, kw_only=True)
class IEEE754TotalOrder:
    """IEEE 754 totalOrder for FLOAT, DOUBLE and FLOAT16."""


@dataclass(slots=True, kw_only=True)
class Int96TimestampOrder:
    """Chronological order of INT96 timestamps."""


@thrift_union
@dataclass(slots=True, kw_only=True)
class ColumnOrder:
    """Union: the order of a leaf column's min/max statistics."""

    TYPE_ORDER: TypeDefinedOrder | None = tfield(1, struct_of(TypeDefinedOrder))
    IEEE_754_TOTAL_ORDER: IEEE754TotalOrder | None = tfield(2, struct_of(IEEE754TotalOrder))
    INT96_TIMESTAMP_ORDER: Int96TimestampOrder | None = tfield(3, struct_of(Int96TimestampOrder))


@dataclass(slots=True, kw_only=True)
class FileMetaData:
    """The footer: schema, row groups and file-level metadata."""

    version: int | None = tfield(1, I32, required=True)
    schema: list[SchemaElement] | None = tfield(2, list_of(struct_of(SchemaElement)), required=True)
    num_rows: int | None = tfield(3, I64, required=True)
    row_groups: list[RowGroup] | None = tfield(4, list_of(struct_of(RowGroup)), required=True)
    key_value_metadata: list[KeyValue] | None = tfield(5, list_of(struct_of(KeyValue)))
    created_by: str | None = tfield(6, STRING)
    column_orders: list[ColumnOrder] | None = tfield(7, list_of(struct_of(ColumnOrder)))
    encryption_algorithm: EncryptionAlgorithm | None = tfield(8, struct_of(EncryptionAlgorithm))
    footer_signing_key_metadata: bytes | None = tfield(9, BINARY)
