"""Tests for streamwrite.arrow.schema: the Arrow <-> Parquet type mapping and value conversion.

Schema elements are compared with the ones pyarrow writes, decoded from the footer of a file
pyarrow wrote (so converted types pyarrow's own reader would derive are checked as written).
"""

from __future__ import annotations

import datetime
import decimal
import io
import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamwrite.arrow.assembly import from_physical
from streamwrite.arrow.schema import (
    ARROW_SCHEMA_KEY,
    ColumnSpec,
    arrow_to_parquet,
    decode_arrow_schema,
    encode_arrow_schema,
    parquet_to_arrow,
)
from streamwrite.arrow.values import to_physical
from streamwrite.errors import FormatError, SchemaError, UnsupportedError
from streamwrite.format.enums import ConvertedType, FieldRepetitionType, Type
from streamwrite.format.structs import (
    DecimalType,
    FileMetaData,
    KeyValue,
    LogicalType,
    SchemaElement,
)
from streamwrite.format.thrift.codec import deserialize
from streamwrite.testing.strategies import WRITABLE_TYPES, arrays
from workers.stats import SortOrder
from workers.values import BinaryValues

FLAT_TYPES = WRITABLE_TYPES


def _pyarrow_footer(table: pa.Table, **kwargs: Any) -> FileMetaData:
    buf = io.BytesIO()
    pq.write_table(table, buf, store_decimal_as_integer=True, **kwargs)
    raw = buf.getvalue()
    (size,) = struct.unpack("<i", raw[-8:-4])
    footer, _ = deserialize(FileMetaData, raw[-8 - size : -8])
    return footer


def _written(schema: pa.Schema, **kwargs: Any) -> tuple[FileMetaData, bytes]:
    buf = io.BytesIO()
    pq.write_table(schema.empty_table(), buf, store_decimal_as_integer=True, **kwargs)
    raw = buf.getvalue()
    (size,) = struct.unpack("<i", raw[-8:-4])
    footer, _ = deserialize(FileMetaData, raw[-8 - size : -8])
    return footer, raw


def _type_id(dtype: pa.DataType) -> str:
    return str(dtype)


# ------------------------------------------------------------------------- arrow_to_parquet


@pytest.mark.parametrize("nullable", [True, False], ids=["nullable", "required"])
@pytest.mark.parametrize("dtype", FLAT_TYPES, ids=_type_id)
def test_elements_match_pyarrow(dtype: pa.DataType, nullable: bool) -> None:
    schema = pa.schema([pa.field("c", dtype, nullable=nullable)])
    footer, raw = _written(schema)
    ours = arrow_to_parquet(schema)
    assert footer.schema is not None
    # Byte-identical elements: type, length, repetition, converted and logical types, scale...
    assert ours.elements == footer.schema
    # and pyarrow's own view of the column agrees.
    col = pq.ParquetFile(io.BytesIO(raw)).metadata.schema.column(0)
    spec = ours.columns[0]
    assert spec.physical_type.name == col.physical_type
    assert (spec.type_length or 0) == col.length
    element = spec.element
    if element.precision is not None:
        assert (element.precision, element.scale) == (col.precision, col.scale)
    assert spec.repetition == (
        FieldRepetitionType.OPTIONAL if nullable else FieldRepetitionType.REQUIRED
    )
    assert spec.max_definition_level == int(nullable)
    assert spec.field == schema.field(0)
    assert spec.index == 0 and spec.name == "c"


def test_decimal_physical_type_by_precision() -> None:
    schema = pa.schema(
        [
            ("d9", pa.decimal128(9, 2)),
            ("d10", pa.decimal128(10, 2)),
            ("d18", pa.decimal128(18, 2)),
            ("d19", pa.decimal128(19, 2)),
            ("d38", pa.decimal128(38, 2)),
        ]
    )
    cols = arrow_to_parquet(schema).columns
    assert [c.physical_type for c in cols] == [
        Type.INT32,
        Type.INT64,
        Type.INT64,
        Type.FIXED_LEN_BYTE_ARRAY,
        Type.FIXED_LEN_BYTE_ARRAY,
    ]
    assert [c.type_length for c in cols] == [None, None, None, 9, 16]
    assert cols[0].element.logicalType == LogicalType(DECIMAL=DecimalType(scale=2, precision=9))
    assert cols[0].element.converted_type == ConvertedType.DECIMAL
    assert [c.sort_order for c in cols] == [SortOrder.SIGNED] * 3 + [SortOrder.SIGNED_BYTES] * 2


def test_null_column_matches_pyarrow() -> None:
    schema = pa.schema([pa.field("n", pa.null())])
    footer, _ = _written(schema)
    assert arrow_to_parquet(schema).elements == footer.schema
    assert arrow_to_parquet(schema).columns[0].repetition == FieldRepetitionType.OPTIONAL


def test_root_and_field_ids_match_pyarrow() -> None:
    schema = pa.schema(
        [
            pa.field("a", pa.int64(), metadata={b"PARQUET:field_id": b"7"}),
            pa.field("b", pa.string(), nullable=False, metadata={b"other": b"x"}),
            pa.field("c", pa.float64(), metadata={b"PARQUET:field_id": b"-1"}),
        ],
        metadata={b"k": b"v"},
    )
    footer, _ = _written(schema)
    ours = arrow_to_parquet(schema)
    assert ours.elements == footer.schema
    assert ours.elements[0] == SchemaElement(
        name="schema", repetition_type=FieldRepetitionType.REQUIRED, num_children=3
    )
    assert [c.element.field_id for c in ours.columns] == [7, None, None]
    assert ours.arrow_schema is schema


@pytest.mark.parametrize(
    ("dtype", "message"),
    [
        (pa.dense_union([pa.field("x", pa.int32())]), "no Parquet mapping"),
        (pa.dictionary(pa.int32(), pa.list_(pa.int32())), "dictionary of the nested type"),
        (pa.struct([]), "struct without fields"),
        (pa.list_view(pa.int32()), "no Parquet mapping"),
        (pa.list_(pa.dense_union([pa.field("x", pa.int32())])), "no Parquet mapping"),
    ],
    ids=lambda v: str(v)[:30],
)
def test_types_without_a_parquet_group_are_unsupported(dtype: pa.DataType, message: str) -> None:
    schema = pa.schema([("ok", pa.int32()), ("nested_col", dtype)])
    with pytest.raises(UnsupportedError, match=rf"'nested_col.*{message}"):
        arrow_to_parquet(schema)


def test_unmappable_type_is_unsupported() -> None:
    with pytest.raises(UnsupportedError, match=r"'iv'.*month_day_nano_interval"):
        arrow_to_parquet(pa.schema([("iv", pa.month_day_nano_interval())]))


def test_sort_orders() -> None:
    schema = pa.schema(
        [
            ("b", pa.bool_()),
            ("i", pa.int16()),
            ("u", pa.uint32()),
            ("f", pa.float32()),
            ("h", pa.float16()),
            ("s", pa.string()),
            ("x", pa.binary(4)),
            ("t", pa.timestamp("us")),
            ("n", pa.null()),
        ]
    )
    assert [c.sort_order for c in arrow_to_parquet(schema).columns] == [
        SortOrder.BOOLEAN,
        SortOrder.SIGNED,
        SortOrder.UNSIGNED,
        SortOrder.FLOAT,
        SortOrder.FLOAT16,
        SortOrder.UNSIGNED_BYTES,
        SortOrder.UNSIGNED_BYTES,
        SortOrder.SIGNED,
        SortOrder.UNDEFINED,
    ]


# ------------------------------------------------------------------------- ARROW:schema


ARROW_SCHEMAS = [
    pa.schema([("a", pa.int32())]),
    pa.schema(
        [
            pa.field(
                "d", pa.dictionary(pa.int16(), pa.string()), metadata={b"PARQUET:field_id": b"3"}
            ),
            pa.field("t", pa.timestamp("s", "Asia/Tokyo"), nullable=False),
            pa.field("l", pa.large_string()),
            pa.field("u", pa.uuid()),
        ],
        metadata={b"k": b"v"},
    ),
    pa.schema([pa.field(f"c{i}", t) for i, t in enumerate(FLAT_TYPES)]),
]


@pytest.mark.parametrize("schema", ARROW_SCHEMAS, ids=["one", "mixed", "all"])
def test_encode_arrow_schema_is_pyarrows_value(schema: pa.Schema) -> None:
    footer, _ = _written(schema)
    assert footer.key_value_metadata is not None
    stored = {kv.key: kv.value for kv in footer.key_value_metadata}
    assert encode_arrow_schema(schema) == stored[ARROW_SCHEMA_KEY]
    decoded = decode_arrow_schema(encode_arrow_schema(schema))
    assert decoded.equals(schema, check_metadata=True)


def test_decode_arrow_schema_rejects_garbage() -> None:
    with pytest.raises(FormatError, match=ARROW_SCHEMA_KEY):
        decode_arrow_schema("not base64 at all!")
    with pytest.raises(FormatError):
        decode_arrow_schema("AAAA")


# ------------------------------------------------------------------------- parquet_to_arrow


@pytest.mark.parametrize("dtype", FLAT_TYPES, ids=_type_id)
def test_parquet_to_arrow_infers_like_pyarrow(dtype: pa.DataType) -> None:
    """Without ARROW:schema our inferred types are pyarrow's."""
    schema = pa.schema([pa.field("c", dtype), pa.field("r", dtype, nullable=False)])
    footer, raw = _written(schema, store_schema=False)
    assert footer.schema is not None
    ours = parquet_to_arrow(footer.schema, footer.key_value_metadata)
    theirs = pq.read_schema(io.BytesIO(raw))
    assert ours.arrow_schema.equals(theirs, check_metadata=True)
    assert ours.elements == footer.schema
    assert [c.element for c in ours.columns] == footer.schema[1:]


@pytest.mark.parametrize("dtype", FLAT_TYPES, ids=_type_id)
def test_parquet_to_arrow_restores_the_stored_schema(dtype: pa.DataType) -> None:
    """With ARROW:schema every flat type comes back exactly (pyarrow restores fewer)."""
    schema = pa.schema(
        [
            pa.field("c", dtype, metadata={b"PARQUET:field_id": b"11", b"x": b"y"}),
            pa.field("r", dtype, nullable=False),
        ],
        metadata={b"k": b"v"},
    )
    footer, _ = _written(schema)
    assert footer.schema is not None
    ours = parquet_to_arrow(footer.schema, footer.key_value_metadata)
    assert ours.arrow_schema.equals(schema, check_metadata=True)
    specs = arrow_to_parquet(schema).columns
    for read, written in zip(ours.columns, specs, strict=True):
        assert read.field.equals(written.field, check_metadata=True)
        assert read.sort_order == written.sort_order
        assert read.physical_type == written.physical_type


def test_parquet_to_arrow_default_decimals_from_pyarrow() -> None:
    """pyarrow's default FIXED_LEN_BYTE_ARRAY decimals read back to the stored type."""
    schema = pa.schema([("a", pa.decimal128(5, 2)), ("b", pa.decimal32(4, 1))])
    buf = io.BytesIO()
    pq.write_table(schema.empty_table(), buf)
    raw = buf.getvalue()
    (size,) = struct.unpack("<i", raw[-8:-4])
    footer, _ = deserialize(FileMetaData, raw[-8 - size : -8])
    assert footer.schema is not None
    ours = parquet_to_arrow(footer.schema, footer.key_value_metadata)
    assert ours.arrow_schema.equals(schema)
    assert [c.physical_type for c in ours.columns] == [Type.FIXED_LEN_BYTE_ARRAY] * 2


def test_parquet_to_arrow_ignores_mismatched_arrow_schema() -> None:
    footer, _ = _written(pa.schema([("a", pa.timestamp("s", "Asia/Tokyo"))]))
    assert footer.schema is not None and footer.key_value_metadata is not None
    other = encode_arrow_schema(pa.schema([("b", pa.int64())]))
    kv = [KeyValue(key=ARROW_SCHEMA_KEY, value=other), KeyValue(key="k", value="v")]
    ours = parquet_to_arrow(footer.schema, kv)
    assert ours.arrow_schema == pa.schema([("a", pa.timestamp("ms", "UTC"))])
    assert ours.arrow_schema.metadata == {b"k": b"v"}


def test_parquet_to_arrow_applies_time_zone_of_coerced_timestamps() -> None:
    schema = pa.schema([("a", pa.timestamp("ns", "Asia/Tokyo"))])
    footer, raw = _written(schema, coerce_timestamps="us", allow_truncated_timestamps=True)
    assert footer.schema is not None
    ours = parquet_to_arrow(footer.schema, footer.key_value_metadata)
    assert ours.arrow_schema.field(0).type == pa.timestamp("us", "Asia/Tokyo")
    assert ours.arrow_schema.equals(pq.read_schema(io.BytesIO(raw)))


def _leaf(**kwargs: Any) -> SchemaElement:
    kwargs.setdefault("repetition_type", FieldRepetitionType.OPTIONAL)
    return SchemaElement(name="c", **kwargs)


def _root(n: int) -> SchemaElement:
    return SchemaElement(name="schema", num_children=n)


@pytest.mark.parametrize(
    ("leaf", "expected"),
    [
        (_leaf(type=Type.INT96), pa.timestamp("ns")),
        (
            _leaf(type=Type.INT64, converted_type=ConvertedType.TIMESTAMP_MILLIS),
            pa.timestamp("ms", "UTC"),
        ),
        (
            _leaf(type=Type.INT64, converted_type=ConvertedType.TIMESTAMP_MICROS),
            pa.timestamp("us", "UTC"),
        ),
        (_leaf(type=Type.INT32, converted_type=ConvertedType.TIME_MILLIS), pa.time32("ms")),
        (_leaf(type=Type.INT64, converted_type=ConvertedType.TIME_MICROS), pa.time64("us")),
        (_leaf(type=Type.INT32, converted_type=ConvertedType.UINT_8), pa.uint8()),
        (_leaf(type=Type.INT32, converted_type=ConvertedType.UINT_32), pa.uint32()),
        (_leaf(type=Type.INT64, converted_type=ConvertedType.UINT_64), pa.uint64()),
        (_leaf(type=Type.INT32, converted_type=ConvertedType.INT_16), pa.int16()),
        (_leaf(type=Type.INT32, converted_type=ConvertedType.DATE), pa.date32()),
        (_leaf(type=Type.BYTE_ARRAY, converted_type=ConvertedType.UTF8), pa.string()),
        (_leaf(type=Type.BYTE_ARRAY, converted_type=ConvertedType.ENUM), pa.binary()),
        (_leaf(type=Type.BYTE_ARRAY, converted_type=ConvertedType.JSON), pa.json_()),
        (_leaf(type=Type.BYTE_ARRAY, converted_type=ConvertedType.BSON), pa.binary()),
        (_leaf(type=Type.BYTE_ARRAY), pa.binary()),
        (
            _leaf(
                type=Type.FIXED_LEN_BYTE_ARRAY,
                type_length=12,
                converted_type=ConvertedType.INTERVAL,
            ),
            pa.binary(12),
        ),
        (
            _leaf(
                type=Type.BYTE_ARRAY, converted_type=ConvertedType.DECIMAL, precision=20, scale=3
            ),
            pa.decimal128(20, 3),
        ),
        (
            _leaf(type=Type.INT32, converted_type=ConvertedType.DECIMAL, precision=4, scale=1),
            pa.decimal128(4, 1),
        ),
        (
            _leaf(
                type=Type.FIXED_LEN_BYTE_ARRAY,
                type_length=20,
                logicalType=LogicalType(DECIMAL=DecimalType(scale=0, precision=45)),
            ),
            pa.decimal256(45, 0),
        ),
        (_leaf(type=Type.BOOLEAN, repetition_type=FieldRepetitionType.REQUIRED), pa.bool_()),
    ],
    ids=lambda v: str(v) if isinstance(v, pa.DataType) else "",
)
def test_parquet_to_arrow_annotations(leaf: SchemaElement, expected: pa.DataType) -> None:
    ours = parquet_to_arrow([_root(1), leaf], None)
    assert ours.arrow_schema.field(0).type == expected
    assert ours.columns[0].field.nullable == (leaf.repetition_type == FieldRepetitionType.OPTIONAL)


def test_parquet_to_arrow_reads_nested_and_rejects_invalid() -> None:
    group = SchemaElement(name="g", num_children=1, repetition_type=FieldRepetitionType.OPTIONAL)
    inner = _leaf(type=Type.INT32)
    read = parquet_to_arrow([_root(1), group, inner], None)
    assert read.arrow_schema.field("g").type == pa.struct([("c", pa.int32())])
    assert read.columns[0].name == "g.c"
    repeated = _leaf(type=Type.INT32, repetition_type=FieldRepetitionType.REPEATED)
    read = parquet_to_arrow([_root(1), repeated], None)
    assert read.arrow_schema.field("c").type == pa.list_(pa.field("c", pa.int32(), False))
    assert not read.arrow_schema.field("c").nullable
    with pytest.raises(FormatError, match="STRING"):
        parquet_to_arrow(
            [_root(1), _leaf(type=Type.INT32, converted_type=ConvertedType.UTF8)], None
        )
    with pytest.raises(FormatError, match="known type"):
        parquet_to_arrow([_root(1), _leaf(type=42)], None)
    with pytest.raises(FormatError, match="known type"):
        parquet_to_arrow([_root(1), _leaf(type=Type.INT32, repetition_type=None)], None)
    with pytest.raises(FormatError, match="children"):
        parquet_to_arrow([_root(2), _leaf(type=Type.INT32)], None)
    with pytest.raises(FormatError, match="LIST"):
        parquet_to_arrow(
            [_root(1), _leaf(type=Type.INT32, converted_type=ConvertedType.LIST)], None
        )


# ------------------------------------------------------------------------- values: helpers


def _spec(dtype: pa.DataType, nullable: bool = True) -> ColumnSpec:
    return arrow_to_parquet(pa.schema([pa.field("c", dtype, nullable=nullable)])).columns[0]


def _stored_spec(dtype: pa.DataType, nullable: bool = True) -> ColumnSpec:
    """The spec a reader gets back from our own footer (elements + ARROW:schema)."""
    schema = pa.schema([pa.field("c", dtype, nullable=nullable)])
    written = arrow_to_parquet(schema)
    kv = [KeyValue(key=ARROW_SCHEMA_KEY, value=encode_arrow_schema(schema))]
    return parquet_to_arrow(written.elements, kv).columns[0]


def _roundtrip(array: pa.Array, spec: ColumnSpec) -> pa.Array:
    phys = to_physical(array, spec)
    assert phys.num_rows == len(array)
    assert phys.null_count == array.null_count
    assert len(phys.values) == len(array) - array.null_count
    if spec.repetition == FieldRepetitionType.REQUIRED:
        assert phys.def_levels is None
    else:
        assert phys.def_levels is not None
        assert phys.def_levels.shape == (len(array),)
    _check_physical_form(phys.values, spec)
    out = from_physical(phys.values, phys.def_levels, phys.num_rows, spec, validate=True)
    out.validate(full=True)
    return out


def _check_physical_form(values: Any, spec: ColumnSpec) -> None:
    """Values have the in-memory form workers.values defines for the physical type."""
    t = spec.physical_type
    if t == Type.BYTE_ARRAY:
        assert isinstance(values, BinaryValues)
        assert values.offsets.dtype == np.int64
        assert values.data.dtype == np.uint8
        return
    expected = {
        Type.BOOLEAN: np.bool_,
        Type.INT32: np.int32,
        Type.INT64: np.int64,
        Type.FLOAT: np.float32,
        Type.DOUBLE: np.float64,
        Type.INT96: np.uint8,
        Type.FIXED_LEN_BYTE_ARRAY: np.uint8,
    }[t]
    assert values.dtype == expected
    if t == Type.FIXED_LEN_BYTE_ARRAY:
        assert values.ndim == 2 and values.shape[1] == spec.type_length
    elif t == Type.INT96:
        assert values.ndim == 2 and values.shape[1] == 12
    else:
        assert values.ndim == 1


# ------------------------------------------------------------------------- values: round trip

ROUNDTRIP_TYPES = [t for t in FLAT_TYPES]


@pytest.mark.parametrize("nullable", [True, False], ids=["nullable", "required"])
@pytest.mark.parametrize("dtype", ROUNDTRIP_TYPES, ids=_type_id)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_values_roundtrip(dtype: pa.DataType, nullable: bool, data: st.DataObject) -> None:
    array = data.draw(arrays(dtype, nullable))
    spec = _spec(dtype, nullable)
    out = _roundtrip(array, spec)
    assert out.type == dtype
    _assert_same(out, array)
    # A reader of our footer gets the same field and the same values back.
    stored = _stored_spec(dtype, nullable)
    assert stored.field.equals(spec.field)
    back = from_physical(*_physical_args(array, spec), stored, validate=True)
    _assert_same(back, array)
    # Chunked input gives the same physical column.
    chunked = pa.chunked_array([array[: len(array) // 2], array[len(array) // 2 :]], type=dtype)
    _assert_same(_roundtrip(chunked, spec), array)


def _assert_same(out: pa.Array, array: pa.Array) -> None:
    """Equal values and type; a dictionary is rebuilt from the values (unused entries go)."""
    assert out.type == array.type
    if pa.types.is_dictionary(array.type):
        assert out.dictionary_decode().equals(array.dictionary_decode())
    else:
        assert out.equals(array)


def _physical_args(array: pa.Array, spec: ColumnSpec) -> tuple[Any, Any, int]:
    phys = to_physical(array, spec)
    return phys.values, phys.def_levels, phys.num_rows


def test_null_type_roundtrip() -> None:
    spec = _spec(pa.null())
    for array in (pa.nulls(5), pa.nulls(0), pa.nulls(9).slice(3)):
        phys = to_physical(array, spec)
        assert phys.null_count == len(array)
        assert phys.def_levels is not None and not phys.def_levels.any()
        assert from_physical(phys.values, phys.def_levels, len(array), spec).equals(array)


# ------------------------------------------------------------------------- values: specifics


def test_physical_forms_of_scaled_types() -> None:
    ts = pa.array([1, None, -2], pa.timestamp("s"))
    assert to_physical(ts, _spec(ts.type)).values.tolist() == [1000, -2000]
    t32 = pa.array([1, 86399], pa.int32()).view(pa.time32("s"))
    assert to_physical(t32, _spec(t32.type)).values.tolist() == [1000, 86_399_000]
    d64 = pa.array([86_400_000 * 3, -86_400_000], pa.int64()).view(pa.date64())
    assert to_physical(d64, _spec(d64.type)).values.tolist() == [3, -1]
    u32 = pa.array([0, 2**32 - 1], pa.uint32())
    assert to_physical(u32, _spec(u32.type)).values.tolist() == [0, -1]
    u64 = pa.array([2**64 - 1], pa.uint64())
    assert to_physical(u64, _spec(u64.type)).values.tolist() == [-1]
    f16 = pa.array(np.array([1.0, -2.0], dtype=np.float16))
    assert (
        to_physical(f16, _spec(f16.type)).values.tobytes()
        == np.array([1.0, -2.0], dtype="<f2").tobytes()
    )


def test_decimal_physical_forms() -> None:
    values = [decimal.Decimal("-1.00"), decimal.Decimal("3.14"), None]
    d32 = pa.array(values, pa.decimal128(5, 2))
    assert to_physical(d32, _spec(d32.type)).values.tolist() == [-100, 314]
    d64 = pa.array(values, pa.decimal128(12, 2))
    assert to_physical(d64, _spec(d64.type)).values.tolist() == [-100, 314]
    flba = pa.array(values, pa.decimal128(20, 2))  # 9 bytes, big-endian two's complement
    got = to_physical(flba, _spec(flba.type)).values
    assert [bytes(row) for row in got] == [
        (-100).to_bytes(9, "big", signed=True),
        (314).to_bytes(9, "big", signed=True),
    ]


def test_decimal_from_byte_array_and_wide_flba() -> None:
    leaf = _leaf(type=Type.BYTE_ARRAY, converted_type=ConvertedType.DECIMAL, precision=20, scale=0)
    spec = parquet_to_arrow([_root(1), leaf], None).columns[0]
    ints = [0, -1, 255, -128, 10**20 - 1, -(10**19)]
    encoded = [b"", b"\xff", b"\x00\xff", b"\x80"] + [
        v.to_bytes(9, "big", signed=True) for v in ints[4:]
    ]
    out = from_physical(BinaryValues.from_pylist(encoded), None, len(ints), spec, validate=True)
    assert out.to_pylist() == [decimal.Decimal(v) for v in ints]
    # and we write it back in minimal fixed width bytes
    phys = to_physical(out, spec)
    assert isinstance(phys.values, BinaryValues)
    assert [int.from_bytes(b, "big", signed=True) for b in phys.values.to_pylist()] == ints
    # A FIXED_LEN_BYTE_ARRAY wider than the Arrow type needs is sign-truncated on read.
    wide = _leaf(
        type=Type.FIXED_LEN_BYTE_ARRAY,
        type_length=20,
        converted_type=ConvertedType.DECIMAL,
        precision=5,
        scale=0,
    )
    spec = parquet_to_arrow([_root(1), wide], None).columns[0]
    rows = np.array([list((-5).to_bytes(20, "big", signed=True))], dtype=np.uint8)
    assert from_physical(rows, None, 1, spec).to_pylist() == [decimal.Decimal(-5)]


def test_decimal_out_of_precision_is_a_schema_error() -> None:
    for dtype in (
        pa.decimal128(5, 0),
        pa.decimal128(15, 0),
        pa.decimal128(25, 0),
        pa.decimal256(50, 0),
    ):
        big = 10**dtype.precision
        bad = pa.Array.from_buffers(
            dtype,
            2,
            [
                None,
                pa.py_buffer(
                    b"".join(v.to_bytes(dtype.byte_width, "little", signed=True) for v in (1, -big))
                ),
            ],
        )
        with pytest.raises(SchemaError, match=r"'c'.*precision"):
            to_physical(bad, _spec(dtype))
        ok = pa.Array.from_buffers(
            dtype,
            2,
            [
                None,
                pa.py_buffer(
                    b"".join(
                        v.to_bytes(dtype.byte_width, "little", signed=True)
                        for v in (big - 1, 1 - big)
                    )
                ),
            ],
        )
        assert _roundtrip(ok, _spec(dtype)).equals(ok)


def test_int96_timestamps() -> None:
    spec = parquet_to_arrow([_root(1), _leaf(type=Type.INT96)], None).columns[0]
    stamps = [
        datetime.datetime(2000, 1, 1),
        datetime.datetime(1969, 12, 31, 23, 59, 59, 999999),
        datetime.datetime(2262, 4, 11),
    ]
    expected = pa.array(stamps, pa.timestamp("ns"))
    rows = np.zeros((1, 12), dtype=np.uint8)
    rows[0, 8:] = np.frombuffer(struct.pack("<i", 2_451_545), np.uint8)  # 2000-01-01
    assert from_physical(rows, None, 1, spec).to_pylist() == [stamps[0]]
    phys = to_physical(expected, spec)
    assert phys.values.shape == (3, 12)
    assert bytes(phys.values[0]) == rows.tobytes()
    assert from_physical(phys.values, phys.def_levels, 3, spec).equals(expected)


def test_strings_with_nonempty_null_slots() -> None:
    # Null slots that still cover bytes in the data buffer (legal Arrow) are dropped.
    offsets = np.array([0, 2, 5, 6], dtype=np.int32)
    validity = np.packbits(np.array([1, 0, 1], dtype=bool), bitorder="little")
    arr = pa.Array.from_buffers(
        pa.string(), 3, [pa.py_buffer(validity), pa.py_buffer(offsets), pa.py_buffer(b"abXYZc")]
    )
    phys = to_physical(arr, _spec(pa.string()))
    assert isinstance(phys.values, BinaryValues)
    assert phys.values.to_pylist() == [b"ab", b"c"]
    assert _roundtrip(arr, _spec(pa.string())).equals(arr)


def test_strings_zero_copy_without_nulls() -> None:
    arr = pa.array(["abc", "de"] * 10, pa.large_string()).slice(3, 5)
    phys = to_physical(arr, _spec(arr.type))
    assert isinstance(phys.values, BinaryValues)
    assert np.shares_memory(phys.values.data, np.frombuffer(arr.buffers()[2], np.uint8))
    assert phys.values.to_pylist() == [s.encode() for s in arr.to_pylist()]


def test_nan_survives() -> None:
    arr = pa.array([float("nan"), None, 1.0], pa.float64())
    out = _roundtrip(arr, _spec(arr.type))
    assert np.isnan(out[0].as_py()) and out[1].as_py() is None and out[2].as_py() == 1.0


def test_errors() -> None:
    with pytest.raises(SchemaError, match=r"'c'.*REQUIRED.*1 null"):
        to_physical(pa.array([1, None], pa.int64()), _spec(pa.int64(), nullable=False))
    with pytest.raises(SchemaError, match=r"'c'.*expects Arrow type int64"):
        to_physical(pa.array([1], pa.int32()), _spec(pa.int64()))
    with pytest.raises(SchemaError, match="overflows"):
        to_physical(pa.array([2**62], pa.timestamp("s")), _spec(pa.timestamp("s")))
    with pytest.raises(FormatError, match="UTF8"):
        from_physical(
            BinaryValues.from_pylist([b"\xff"]), None, 1, _spec(pa.string()), validate=True
        )
    with pytest.raises(FormatError, match="values for"):
        from_physical(np.zeros(2, np.int64), None, 3, _spec(pa.int64()))
    with pytest.raises(FormatError, match="dictionary index"):
        spec = _spec(pa.dictionary(pa.int8(), pa.int64()))
        from_physical(np.arange(300, dtype=np.int64), None, 300, spec)
