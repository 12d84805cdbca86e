"""Nested Arrow schemas -> Parquet schema elements, leaves and levels, equal to pyarrow's."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streamwrite.arrow.column import NodeKind
from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.format import structs as t
from streamwrite.format.thrift.codec import deserialize

_STRUCT = pa.struct(
    [
        pa.field("a", pa.int64(), metadata={"PARQUET:field_id": "7"}),
        pa.field("b", pa.string(), False),
    ]
)
SCHEMAS = {
    "list": pa.schema([("l", pa.list_(pa.float64()))]),
    "required_list_of_required": pa.schema(
        [pa.field("l", pa.list_(pa.field("x", pa.int32(), nullable=False)), nullable=False)]
    ),
    "large_list": pa.schema([("l", pa.large_list(pa.string()))]),
    "fixed_size_list": pa.schema([("l", pa.list_(pa.int16(), 3))]),
    "struct": pa.schema([pa.field("s", _STRUCT, metadata={"PARQUET:field_id": "3"})]),
    "map": pa.schema([("m", pa.map_(pa.string(), pa.int64()))]),
    "map_of_lists": pa.schema([("m", pa.map_(pa.int32(), pa.list_(pa.string())))]),
    "list_of_lists": pa.schema([("nn", pa.list_(pa.list_(pa.int8())))]),
    "list_of_structs": pa.schema([("ls", pa.list_(_STRUCT))]),
    "struct_of_everything": pa.schema(
        [
            ("x", pa.timestamp("us", "UTC")),
            (
                "s",
                pa.struct(
                    [
                        ("l", pa.list_(pa.decimal128(20, 2))),
                        ("m", pa.map_(pa.string(), _STRUCT)),
                        pa.field("inner", pa.struct([("d", pa.date32())]), nullable=False),
                    ]
                ),
            ),
            ("y", pa.dictionary(pa.int32(), pa.string())),
        ]
    ),
}


def _pyarrow_elements(schema: pa.Schema) -> list[t.SchemaElement]:
    buf = io.BytesIO()
    pq.write_table(schema.empty_table(), buf, store_decimal_as_integer=True)
    raw = buf.getvalue()
    size = int.from_bytes(raw[-8:-4], "little")
    meta, _ = deserialize(t.FileMetaData, raw[-8 - size : -8])
    return list(meta.schema or [])


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schema_elements_equal_pyarrows(name: str) -> None:
    schema = SCHEMAS[name]
    assert arrow_to_parquet(schema).elements == _pyarrow_elements(schema)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_leaf_paths_and_levels_equal_pyarrows(name: str) -> None:
    schema = SCHEMAS[name]
    buf = io.BytesIO()
    pq.write_table(schema.empty_table(), buf)
    theirs = pq.ParquetFile(io.BytesIO(buf.getvalue())).schema
    ours = arrow_to_parquet(schema)
    assert len(ours.columns) == len(theirs)
    for i, spec in enumerate(ours.columns):
        column = theirs.column(i)
        assert spec.index == i
        assert spec.name == column.path
        assert spec.path_in_schema == tuple(column.path.split("."))
        assert spec.max_definition_level == column.max_definition_level
        assert spec.max_repetition_level == column.max_repetition_level


def test_field_nodes_cover_the_leaves_in_order() -> None:
    ours = arrow_to_parquet(SCHEMAS["struct_of_everything"])
    assert [node.kind for node in ours.fields] == [NodeKind.LEAF, NodeKind.STRUCT, NodeKind.LEAF]
    s = ours.fields[1]
    assert (s.leaf_start, s.leaf_stop) == (1, 6)
    assert [child.kind for child in s.children] == [NodeKind.LIST, NodeKind.MAP, NodeKind.STRUCT]
    m = s.children[1]
    assert (m.def_level, m.rep_level) == (2, 1)
    key, value = m.children
    assert key.leaf is not None and ours.columns[key.leaf].name == "s.m.key_value.key"
    assert (key.def_level, value.def_level) == (3, 4)  # key required, value (a struct) optional
    leaves = [node for node in s.walk() if node.kind is NodeKind.LEAF]
    assert [node.leaf for node in leaves] == list(range(1, 6))
    assert ours.field_columns(1) == ours.columns[1:6]
    assert not ours.is_flat and arrow_to_parquet(pa.schema([("a", pa.int8())])).is_flat
