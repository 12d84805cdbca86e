"""to_arrow: a new table's inferred schema, appends into an existing schema with QuestDB's
lossless casts, new nullable columns, and the 400s for type conflicts."""

from __future__ import annotations

import pyarrow as pa
import pytest

from streamwrite.daemon.errors import BadRequestError
from streamwrite.daemon.ilp import parse_body, to_arrow
from streamwrite.errors import ConfigError

TAG = pa.dictionary(pa.int32(), pa.utf8())
TS_US = pa.timestamp("us", tz="UTC")


def table_of(
    body: bytes, schema: pa.Schema | None = None, **kwargs: object
) -> tuple[pa.Table, list[pa.Field]]:
    return to_arrow(parse_body(body, now_ns=1_000_999, **kwargs), schema)  # type: ignore[arg-type]


def test_new_table_first_seen_order_nulls_and_timestamp_last() -> None:
    body = b't,s=a x=1i 2000\nt y=2.5,x=3i,s="str" 3999\nt,k=v z=t\n'
    table, new = table_of(body)
    assert new == []
    assert table.schema == pa.schema(
        [
            pa.field("s", TAG),
            pa.field("x", pa.int64()),
            pa.field("y", pa.float64()),
            pa.field("k", TAG),
            pa.field("z", pa.bool_()),
            pa.field("timestamp", TS_US, nullable=False),
        ]
    )
    assert table.column("s").to_pylist() == ["a", "str", None]  # "str" cast into the tag column
    assert table.column("x").to_pylist() == [1, 3, None]
    assert table.column("y").to_pylist() == [None, 2.5, None]
    # ns -> us truncates toward the past; the line without a timestamp gets now_ns.
    assert table.column("timestamp").cast(pa.int64()).to_pylist() == [2, 3, 1000]


def test_timestamp_kinds_and_units() -> None:
    table, _ = table_of(b"t a=5t,b=5n,c=5m 7\n")
    assert table.schema.field("a").type == TS_US and table.schema.field("b").type == pa.timestamp(
        "ns", tz="UTC"
    )
    assert table.schema.field("c").type == TS_US
    assert table.column("c").cast(pa.int64()).to_pylist() == [5000]
    ns_table, _ = to_arrow(
        parse_body(b"t f=1 -0\n".replace(b"-0", b"1234"), now_ns=0), None, timestamp_unit="ns"
    )
    assert ns_table.column("timestamp").type == pa.timestamp("ns", tz="UTC")
    assert ns_table.column("timestamp").cast(pa.int64()).to_pylist() == [1234]


def test_field_named_timestamp_overrides_the_designated_one() -> None:
    table, _ = table_of(b"t f=1,timestamp=5t 9000\nt f=2 9000\n")
    assert table.column_names == ["f", "timestamp"]
    assert table.column("timestamp").cast(pa.int64()).to_pylist() == [5, 9]


def test_existing_schema_order_casts_and_new_columns() -> None:
    schema = pa.schema(
        [
            pa.field("timestamp", TS_US, nullable=False),
            pa.field("price", pa.float64()),
            pa.field("qty", pa.int32()),
            pa.field("when", TS_US),
            pa.field("name", pa.utf8()),
            pa.field("sym", TAG),
            pa.field("absent", pa.int64()),
        ]
    )
    body = b't,name=tagged,extra=e price=3i,qty=7i,when=5i,sym="s",more=1.5 4000\n'
    table, new = table_of(body, schema)
    assert table.schema.names == [*schema.names, "extra", "more"]
    assert new == [pa.field("extra", TAG), pa.field("more", pa.float64())]
    row = table.to_pylist()[0]
    assert (row["price"], row["qty"], row["name"], row["sym"], row["absent"], row["more"]) == (
        3.0,
        7,
        "tagged",
        "s",
        None,
        1.5,
    )
    assert table.column("when").cast(pa.int64()).to_pylist() == [5]
    assert table.column("timestamp").cast(pa.int64()).to_pylist() == [4]


@pytest.mark.parametrize(
    ("column_type", "value", "message"),
    [
        (
            pa.int64(),
            b"1.5",
            "table: t, column: c; cast error from protocol type: FLOAT to column type: LONG",
        ),
        (
            pa.float64(),
            b'"x"',
            "table: t, column: c; cast error from protocol type: STRING to column type: DOUBLE",
        ),
        (
            pa.int8(),
            b"300i",
            "table: t, column: c; cast error from protocol type: INTEGER to column type: BYTE",
        ),
        (
            pa.bool_(),
            b"1i",
            "table: t, column: c; cast error from protocol type: INTEGER to column type: BOOLEAN",
        ),
        (
            pa.utf8(),
            b"1i",
            "table: t, column: c; cast error from protocol type: INTEGER to column type: VARCHAR",
        ),
        (
            TS_US,
            b"1.5",
            "table: t, column: c; cast error from protocol type: FLOAT to column type: TIMESTAMP",
        ),
    ],
)
def test_type_conflicts_name_line_table_column_and_types(
    column_type: pa.DataType, value: bytes, message: str
) -> None:
    schema = pa.schema([pa.field("c", column_type), pa.field("timestamp", TS_US, nullable=False)])
    body = b"t c=" + (b"1i" if column_type != pa.bool_() else b"t") + b" 1\n"
    if column_type in (pa.utf8(),):
        body = b't c="ok" 1\n'
    if column_type == TS_US:
        body = b"t c=1t 1\n"
    table_of(body, schema)  # the first line fits
    with pytest.raises(BadRequestError) as info:
        table_of(body + b"t c=" + value + b" 2\n", schema)
    assert (str(info.value), info.value.line) == (message, 2)


def test_tag_into_non_string_column_and_missing_not_null() -> None:
    schema = pa.schema([pa.field("c", pa.float64()), pa.field("n", pa.int64(), nullable=False)])
    with pytest.raises(
        BadRequestError, match="cast error from protocol type: TAG to column type: DOUBLE"
    ):
        table_of(b"t,c=x n=1i\n", schema)
    with pytest.raises(BadRequestError, match="column: n is NOT NULL and missing") as info:
        table_of(b"t c=1\n", schema)
    assert info.value.line == 1


def test_new_column_kind_is_its_first_lines() -> None:
    table, _ = table_of(b"t x=2.5\nt x=1i\n")
    assert table.schema.field("x").type == pa.float64()
    assert table.column("x").to_pylist() == [2.5, 1.0]
    with pytest.raises(
        BadRequestError, match="cast error from protocol type: FLOAT to column type: LONG"
    ):
        table_of(b"t x=1i\nt x=2.5\n")


def test_batches_of_one_table_only() -> None:
    with pytest.raises(ConfigError, match="one table"):
        to_arrow(parse_body(b"a f=1\nb f=1\n", now_ns=0), None)
