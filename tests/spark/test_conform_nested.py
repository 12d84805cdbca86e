"""The sink's Arrow side of nested columns, without Spark: the table schema a Spark batch of
arrays, structs and maps gets, and the casts and checks of later batches."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from streamwrite.errors import SchemaError
from streamwrite.spark import conform, table_schema_for


def _f(name: str, dtype: pa.DataType, nullable: bool = True) -> pa.Field:
    return pa.field(name, dtype, nullable=nullable)


KOLKATA = pa.timestamp("us", tz="Asia/Kolkata")

# What pyspark 4's DataFrame.toArrow() gives for array/struct/map columns (containsNull,
# valueContainsNull and nullable as Arrow nullability; list elements named "element").
SPARK_NESTED = pa.schema(
    [
        _f("id", pa.int64(), False),
        _f("ad", pa.list_(_f("element", pa.float64()))),
        _f("ats", pa.list_(_f("element", KOLKATA, False)), False),
        _f("st", pa.struct([_f("i", pa.int32(), False), _f("s", pa.large_string())]), False),
        _f(
            "m",
            pa.map_(_f("key", pa.string(), False), _f("value", pa.large_string(), False)),
            False,
        ),
        _f("aa", pa.large_list(_f("element", pa.list_(_f("element", pa.int32(), False))))),
        _f("sts", pa.struct([_f("t", KOLKATA, False)], ), False),
    ]
)  # fmt: skip

TABLE_NESTED = pa.schema(
    [
        _f("id", pa.int64()),
        _f("ad", pa.list_(_f("element", pa.float64()))),
        _f("ats", pa.list_(_f("element", pa.timestamp("us", tz="UTC")))),
        _f("st", pa.struct([_f("i", pa.int32()), _f("s", pa.string())])),
        _f("m", pa.map_(_f("key", pa.string(), False), _f("value", pa.string()))),
        _f("aa", pa.list_(_f("element", pa.list_(_f("element", pa.int32()))))),
        _f("sts", pa.struct([_f("t", pa.timestamp("us", tz="UTC"))])),
    ]
)

INSTANT = dt.datetime(2026, 11, 22, 12, 30, tzinfo=dt.UTC)


def spark_batch() -> pa.Table:
    rows = {
        "id": [0, 1, 2],
        "ad": [None, [], [1.5, None, -0.0]],
        "ats": [[INSTANT], [], [INSTANT, INSTANT]],
        "st": [{"i": 1, "s": None}, {"i": 2, "s": "b"}, {"i": 3, "s": "é"}],
        "m": [[("k", "v")], [], [("a", "1"), ("b", "2")]],
        "aa": [[[1, 2], None, []], None, []],
        "sts": [{"t": INSTANT}, {"t": INSTANT}, {"t": INSTANT}],
    }
    return pa.table(rows, schema=SPARK_NESTED)


def test_nested_table_schema_is_nullable_utc_and_narrow_at_every_level() -> None:
    schema = table_schema_for(SPARK_NESTED)
    assert schema.equals(TABLE_NESTED, check_metadata=True)
    # names stay Spark's ("element", "key", "value"): Spark reads the files back as it wrote
    assert schema.field("m").type.key_field.nullable is False


def test_a_spark_batch_conforms_to_its_nested_table_schema_without_changing_values() -> None:
    batch = spark_batch()
    out = conform(batch, table_schema_for(batch.schema))
    assert out.schema.equals(TABLE_NESTED)
    assert out.to_pylist() == batch.to_pylist()  # the same instants, in UTC


def test_conform_casts_nested_types_by_name_and_refuses_nulls_in_required_fields() -> None:
    batch = spark_batch()
    item_names = pa.schema(
        [
            field.with_type(pa.list_(_f("item", pa.float64()))) if field.name == "ad" else field
            for field in TABLE_NESTED
        ]
    )
    assert conform(batch, item_names).column("ad").to_pylist() == batch.column("ad").to_pylist()
    strict_elements = TABLE_NESTED.set(1, _f("ad", pa.list_(_f("element", pa.float64(), False))))
    with pytest.raises(SchemaError, match=r"nulls at 'ad\.element'"):
        conform(batch, strict_elements)
    strict_field = TABLE_NESTED.set(
        3, _f("st", pa.struct([_f("i", pa.int32()), _f("s", pa.string(), False)]))
    )
    with pytest.raises(SchemaError, match="st"):
        conform(batch, strict_field)
    strict_inner = TABLE_NESTED.set(
        5, _f("aa", pa.list_(_f("element", pa.list_(_f("element", pa.int32())), False)))
    )
    with pytest.raises(SchemaError, match=r"nulls at 'aa\.element'"):
        conform(batch, strict_inner)
    # a null list slot hides its elements: they are not checked
    no_null_elements = batch.set_column(
        1, "ad", pa.array([None, [], [1.5, 2.0]], SPARK_NESTED.field("ad").type)
    )
    assert conform(no_null_elements, strict_elements).num_rows == 3
