"""Thrift compact codec: golden byte vectors, unknown fields, malformed input, limits."""

from __future__ import annotations

import pytest

from streamwrite.errors import ConfigError, FormatError, LimitError
from streamwrite.format import structs as t
from streamwrite.format.thrift.codec import ThriftLimits, deserialize, serialize, serialize_into


def roundtrip(obj: object, expected: bytes) -> None:
    assert serialize(obj) == expected
    decoded, end = deserialize(type(obj), expected)
    assert decoded == obj
    assert end == len(expected)


# --------------------------------------------------------------------------- golden vectors


def test_key_value() -> None:
    # field 1 (delta 1, binary) len 1 'k'; field 2 (delta 1, binary) len 1 'v'; stop
    roundtrip(t.KeyValue(key="k", value="v"), bytes.fromhex("18 01 6b  18 01 76  00"))


def test_bool_fields_live_in_the_header() -> None:
    # column_idx i32 zigzag(3)=6; descending true (type 1); nulls_first false (type 2)
    roundtrip(
        t.SortingColumn(column_idx=3, descending=True, nulls_first=False),
        bytes.fromhex("15 06  11  12  00"),
    )


def test_list_short_and_long_form() -> None:
    short = t.GeospatialStatistics(geospatial_types=list(range(14)))
    # field 2 (delta 2, list); header (14 << 4 | i32)
    roundtrip(short, bytes([0x29, 0xE5, *(2 * i for i in range(14)), 0]))
    long = t.GeospatialStatistics(geospatial_types=list(range(20)))
    # header 0xF0 | i32, then varint size 20
    roundtrip(long, bytes([0x29, 0xF5, 20, *(2 * i for i in range(20)), 0]))
    roundtrip(t.GeospatialStatistics(geospatial_types=[]), bytes([0x29, 0x05, 0]))


def test_field_id_delta_over_15_uses_long_form() -> None:
    # LogicalType.GEOGRAPHY is field 18: byte 0x0C (struct), zigzag i16 18 = 36; empty struct
    roundtrip(t.LogicalType(GEOGRAPHY=t.GeographyType()), bytes.fromhex("0c 24  00  00"))
    # delta 11 still fits the short form
    roundtrip(t.LogicalType(UNKNOWN=t.NullType()), bytes.fromhex("bc  00  00"))


def test_long_form_header_is_accepted_for_small_ids() -> None:
    obj, end = deserialize(t.LogicalType, bytes.fromhex("0c 02  00  00"))
    assert obj == t.LogicalType(STRING=t.StringType())
    assert end == 4


def test_negative_and_wide_i64_zigzag() -> None:
    roundtrip(t.Statistics(null_count=-1), bytes.fromhex("360100"))
    roundtrip(t.Statistics(null_count=300), bytes.fromhex("36 d8 04  00"))
    roundtrip(t.Statistics(null_count=-(2**63)), bytes.fromhex("36" + "ff" * 9 + "0100"))
    roundtrip(t.Statistics(null_count=2**63 - 1), bytes.fromhex("36" + "fe" + "ff" * 8 + "0100"))


def test_binary_double_i8_i16_and_bool_lists() -> None:
    roundtrip(t.Statistics(max=b"\x00\xff"), bytes.fromhex("18 02 00 ff  00"))
    roundtrip(
        t.BoundingBox(xmin=1.0, xmax=-2.5, ymin=0.0, ymax=3.0),
        bytes.fromhex(
            "17"
            "000000000000f03f"  # xmin 1.0, little endian
            "17"
            "00000000000004c0"  # xmax -2.5
            "17"
            "0000000000000000"  # ymin 0.0
            "17"
            "0000000000000840"  # ymax 3.0
            "00"
        ),
    )
    roundtrip(t.IntType(bitWidth=-8, isSigned=True), bytes.fromhex("13 f8  11  00"))
    row_group = t.RowGroup(columns=[], total_byte_size=0, num_rows=0, ordinal=-2)
    roundtrip(row_group, bytes.fromhex("19 0c  16 00  16 00  44 03  00"))  # ordinal: delta 4, i16
    index = t.ColumnIndex(
        null_pages=[True, False],
        min_values=[b"", b"a"],
        max_values=[b"", b"b"],
        boundary_order=t.BoundaryOrder.ASCENDING,
    )
    roundtrip(index, bytes.fromhex("19 21 01 02  19 28 00 01 61  19 28 00 01 62  15 02  00"))


def test_bool_list_element_zero_reads_as_false() -> None:
    obj, _ = deserialize(t.ColumnIndex, bytes.fromhex("19 21 01 00  19 08  19 08  15 00  00"))
    assert obj.null_pages == [True, False]
    obj, _ = deserialize(t.ColumnIndex, bytes.fromhex("19 22 01 02  19 08  19 08  15 00  00"))
    assert obj.null_pages == [True, False]  # element type 2 (BOOLEAN_FALSE) accepted too


def test_empty_struct_and_serialize_into() -> None:
    assert serialize(t.StringType()) == b"\x00"
    out = bytearray(b"xy")
    serialize_into(t.KeyValue(key="k"), out)
    assert out == b"xy" + bytes.fromhex("18016b00")
    assert deserialize(t.KeyValue, out, 2) == (t.KeyValue(key="k"), len(out))
    assert deserialize(t.KeyValue, memoryview(out), 2)[0] == t.KeyValue(key="k")


def test_enums_decode_to_members_and_unknown_values_stay_ints() -> None:
    element = t.SchemaElement(name="x", type=t.Type.INT64)
    decoded, _ = deserialize(t.SchemaElement, serialize(element))
    assert decoded.type is t.Type.INT64
    future = t.SchemaElement(name="x", type=99, repetition_type=3)
    data = serialize(future)
    decoded, _ = deserialize(t.SchemaElement, data)
    assert decoded.type == 99 and type(decoded.type) is int
    assert serialize(decoded) == data
    meta = t.ColumnMetaData(
        type=t.Type.INT32,
        encodings=[t.Encoding.PLAIN, 42],
        path_in_schema=["a"],
        codec=t.CompressionCodec.ZSTD,
        num_values=1,
        total_uncompressed_size=2,
        total_compressed_size=3,
        data_page_offset=4,
    )
    decoded, _ = deserialize(t.ColumnMetaData, serialize(meta))
    assert decoded.encodings == [t.Encoding.PLAIN, 42]
    assert decoded.encodings[0] is t.Encoding.PLAIN


def test_enums_are_re_exported() -> None:
    assert t.Type.INT64 == 2
    assert t.PageType.DATA_PAGE_V2 == 3
    assert t.EdgeInterpolationAlgorithm.KARNEY == 4


# --------------------------------------------------------------------------- unknown fields

# Unknown field values, each preceded by a field header with delta 8 (ids 10, 18, ...).
UNKNOWN_VALUES = {
    "bool true": bytes([0x81]),
    "bool false": bytes([0x82]),
    "i8": bytes([0x83, 0x7F]),
    "i16": bytes([0x84, 0xFF, 0x03]),
    "i32": bytes([0x85, 0x80, 0x80, 0x04]),
    "i64": bytes([0x86, *([0xFF] * 9), 0x01]),
    "double": bytes([0x87, *range(8)]),
    "binary": bytes([0x88, 3, *b"abc"]),
    "list<i32>": bytes([0x89, 0x35, 2, 4, 6]),
    "list<bool>": bytes([0x89, 0x21, 1, 2]),
    "list<double> long": bytes([0x89, 0xF7, 15, *([0] * 8 * 15)]),
    "list<struct>": bytes([0x89, 0x2C, 0x15, 0x02, 0x00, 0x19, 0x18, 0x01, 0x61, 0x00]),
    "list<list<binary>>": bytes([0x89, 0x19, 0x28, 0x01, 0x61, 0x00]),
    "set<binary>": bytes([0x8A, 0x18, 1, *b"x"]),
    "map<binary,i32>": bytes([0x8B, 2, 0x85, 1, *b"a", 2, 1, *b"b", 4]),
    "empty map": bytes([0x8B, 0]),
    "struct": bytes([0x8C, 0x1C, 0x15, 0x02, 0x00, 0x29, 0x11, 0x01, 0x11, 0x82, 0x00]),
    "empty struct": bytes([0x8C, 0x00]),
    "long-form id": bytes([0x08, 0xD0, 0x0F, 1, *b"z"]),  # id 1000, binary
}


@pytest.mark.parametrize("name", list(UNKNOWN_VALUES))
def test_unknown_fields_are_skipped(name: str) -> None:
    # key (field 1), then an unknown field, then value (field 2) in the long form
    data = bytes.fromhex("18016b") + UNKNOWN_VALUES[name] + bytes.fromhex("08040176") + b"\x00"
    obj, end = deserialize(t.KeyValue, data + b"trailing")
    assert obj == t.KeyValue(key="k", value="v")
    assert end == len(data)


def test_all_unknown_fields_together() -> None:
    data = bytearray(bytes.fromhex("18016b"))
    for value in UNKNOWN_VALUES.values():
        if value[0] & 0xF0:
            data += value  # ids 10, 18, 26...: each delta is relative to the previous id
    data += b"\x00"
    obj, end = deserialize(t.KeyValue, bytes(data))
    assert obj == t.KeyValue(key="k")
    assert end == len(data)


def test_known_field_with_wrong_wire_type_is_skipped() -> None:
    # KeyValue.key sent as an i32 is skipped, so the required key is then missing
    with pytest.raises(FormatError, match=r"KeyValue\.key"):
        deserialize(t.KeyValue, bytes.fromhex("150200"))


# --------------------------------------------------------------------------- malformed input

MALFORMED: dict[str, tuple[type, bytes]] = {
    "empty": (t.KeyValue, b""),
    "no stop byte": (t.KeyValue, bytes.fromhex("18016b")),
    "string past the end": (t.KeyValue, bytes.fromhex("180561")),
    "varint over 10 bytes": (t.KeyValue, bytes.fromhex("18 01 6b  36" + " ff" * 11 + " 01  00")),
    "i32 overflow": (t.DecimalType, bytes.fromhex("15 80 80 80 80 10  00")),
    "bad wire type": (t.KeyValue, bytes.fromhex("18 01 6b  8d  00")),
    "wire type 0 in header": (t.KeyValue, bytes.fromhex("18 01 6b  10  00")),
    "bad bool element": (t.ColumnIndex, bytes.fromhex("19 21 01 05  19 08  19 08  15 00  00")),
    "list larger than buffer": (t.KeyValue, bytes.fromhex("18 01 6b  89 f5 ff ff ff ff 0f  00")),
    "invalid utf-8": (t.KeyValue, bytes.fromhex("1802fffe00")),
    "double truncated": (t.KeyValue, bytes.fromhex("18 01 6b  87 00 00")),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_input_raises_format_error(name: str) -> None:
    cls, data = MALFORMED[name]
    with pytest.raises(FormatError, match="byte"):
        deserialize(cls, data)


def test_every_truncation_raises_format_error() -> None:
    meta = t.ColumnMetaData(
        type=t.Type.BYTE_ARRAY,
        encodings=[t.Encoding.PLAIN],
        path_in_schema=["a", "b"],
        codec=t.CompressionCodec.SNAPPY,
        num_values=10**12,
        total_uncompressed_size=1,
        total_compressed_size=1,
        data_page_offset=4,
        statistics=t.Statistics(min_value=b"abc", is_min_value_exact=False),
    )
    data = serialize(meta)
    for cut in range(len(data)):
        with pytest.raises(FormatError):
            deserialize(t.ColumnMetaData, data[:cut])


def test_messages_name_struct_field_and_offset() -> None:
    with pytest.raises(FormatError, match=r"KeyValue\.value .*byte 3"):
        deserialize(t.KeyValue, bytes.fromhex("18016b1805"))
    with pytest.raises(FormatError, match=r"KeyValue\.key \(id 1\) is missing"):
        deserialize(t.KeyValue, b"\x00")
    with pytest.raises(FormatError, match=r"ColumnMetaData\.encodings"):
        # encodings sent as list<binary>
        deserialize(t.ColumnMetaData, bytes.fromhex("15 00  19 18 01 61  00"))


def test_union_with_two_members_is_rejected() -> None:
    with pytest.raises(FormatError, match="LogicalType"):
        deserialize(t.LogicalType, bytes.fromhex("1c 00  1c 00  00"))


def test_union_with_unknown_member_decodes_empty() -> None:
    # LogicalType.VECTOR (19, proposed) is unknown here: decodes, but cannot be re-encoded
    obj, _ = deserialize(t.LogicalType, bytes.fromhex("0c 26  00  00"))
    assert obj == t.LogicalType()
    with pytest.raises(FormatError, match="exactly one"):
        serialize(obj)


def test_offset_outside_buffer() -> None:
    with pytest.raises(FormatError):
        deserialize(t.KeyValue, b"\x00", 5)
    with pytest.raises(FormatError):
        deserialize(t.KeyValue, b"\x00", 1)


# --------------------------------------------------------------------------- limits


def test_deep_unknown_struct_nesting_hits_limit() -> None:
    data = bytes.fromhex("18016b") + b"\x1c" * 200 + b"\x00" * 201
    with pytest.raises(LimitError, match="nested deeper than 64"):
        deserialize(t.KeyValue, data)
    data = bytes.fromhex("18016b") + bytes([0x89]) + b"\x19" * 200
    with pytest.raises(LimitError):
        deserialize(t.KeyValue, data)


def test_known_nesting_beyond_max_depth() -> None:
    stats = t.DataPageHeader(
        num_values=1,
        encoding=t.Encoding.PLAIN,
        definition_level_encoding=t.Encoding.RLE,
        repetition_level_encoding=t.Encoding.RLE,
        statistics=t.Statistics(),
    )
    data = serialize(
        t.PageHeader(
            type=0, uncompressed_page_size=1, compressed_page_size=1, data_page_header=stats
        )
    )
    assert deserialize(t.PageHeader, data, limits=ThriftLimits(max_depth=3))[0].type == 0
    with pytest.raises(LimitError, match=r"Statistics .* deeper than 2"):
        deserialize(t.PageHeader, data, limits=ThriftLimits(max_depth=2))


def test_string_and_container_limits() -> None:
    data = serialize(t.KeyValue(key="x" * 20))
    with pytest.raises(LimitError, match=r"KeyValue\.key"):
        deserialize(t.KeyValue, data, limits=ThriftLimits(max_string_size=10))
    data = serialize(t.GeospatialStatistics(geospatial_types=list(range(100))))
    with pytest.raises(LimitError, match="geospatial_types"):
        deserialize(t.GeospatialStatistics, data, limits=ThriftLimits(max_container_size=50))


def test_huge_declared_sizes_fail_without_allocating() -> None:
    # 2**32-1 element list and string declared in a few bytes
    with pytest.raises(FormatError, match="remain"):
        deserialize(t.GeospatialStatistics, bytes.fromhex("29f5ffffffff0f00"))
    with pytest.raises(FormatError, match="remain"):
        deserialize(t.KeyValue, bytes.fromhex("18ffffffff0f00"))
    with pytest.raises(FormatError):
        deserialize(t.KeyValue, bytes.fromhex("18ffffffffff0f00"))  # over 32 bits


def test_limits_validation() -> None:
    with pytest.raises(ConfigError):
        ThriftLimits(max_depth=0)
    with pytest.raises(ConfigError):
        deserialize(int, b"\x00")


# --------------------------------------------------------------------------- encode errors


@pytest.mark.parametrize(
    ("obj", "match"),
    [
        (t.KeyValue(value="v"), r"KeyValue\.key \(id 1\) is None"),
        (t.LogicalType(), "exactly one member set, got 0"),
        (t.TimeUnit(MILLIS=t.MilliSeconds(), NANOS=t.NanoSeconds()), "MILLIS, NANOS"),
        (t.DecimalType(scale=2**31, precision=1), r"DecimalType\.scale.*out of range"),
        (t.Statistics(null_count=2**63), "out of range"),
        (t.IntType(bitWidth=128, isSigned=True), "bitWidth"),
        (t.Statistics(null_count="1"), r"Statistics\.null_count"),
        (t.Statistics(max="abc"), r"Statistics\.max.*not bytes"),
        (t.KeyValue(key=b"k"), r"KeyValue\.key"),
        (t.Statistics(is_max_value_exact=1), "not a bool"),
        (t.SchemaElement(name="a", logicalType=t.StringType()), "not a LogicalType"),
        (t.GeospatialStatistics(geospatial_types=[1, 2**40]), "out of range"),
        (t.GeospatialStatistics(geospatial_types=5), "not a list"),
    ],
)
def test_encode_errors(obj: object, match: str) -> None:
    with pytest.raises(FormatError, match=match):
        serialize(obj)


def test_nested_missing_required_field_is_reported() -> None:
    meta = t.FileMetaData(version=1, schema=[t.SchemaElement()], num_rows=0, row_groups=[])
    with pytest.raises(FormatError, match=r"SchemaElement\.name"):
        serialize(meta)


def test_serialize_into_leaves_buffer_unchanged_on_error() -> None:
    out = bytearray(b"abc")
    with pytest.raises(FormatError):
        serialize_into(t.KeyValue(key="k", value=b"v"), out)
    assert out == b"abc"
