"""Nested Parquet schemas -> Arrow (``parquet_to_arrow``), against pyarrow's own reading.

Without ``ARROW:schema`` our inferred schema equals ``pyarrow.parquet.read_schema`` (list types
compare equal whatever their item names; field names are compared separately where they matter).
With it, we restore exactly the Arrow schema written (item names, large and fixed-size lists,
map field names and ``keys_sorted``, dictionaries and extension types at the leaves), where
pyarrow restores less. Leaves are named by their dotted path with the levels pyarrow gives them.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streamwrite.arrow.column import NodeKind
from streamwrite.arrow.schema import arrow_to_parquet, parquet_to_arrow
from streamwrite.errors import FormatError
from streamwrite.format import structs as t
from streamwrite.format.enums import ConvertedType, FieldRepetitionType, Type
from streamwrite.format.thrift.codec import deserialize
from tests._vectors import PARQUET_TESTING

_STRUCT = pa.struct(
    [
        pa.field("a", pa.int64(), metadata={"PARQUET:field_id": "7"}),
        pa.field("b", pa.string(), False),
    ]
)
SCHEMAS = {
    "list": pa.schema([("l", pa.list_(pa.float64()))]),
    "list_item_named_item": pa.schema([("l", pa.list_(pa.field("item", pa.int64())))]),
    "required_list_of_required": pa.schema(
        [pa.field("l", pa.list_(pa.field("x", pa.int32(), nullable=False)), nullable=False)]
    ),
    "large_list": pa.schema([("l", pa.large_list(pa.string()))]),
    "fixed_size_list": pa.schema([("l", pa.list_(pa.int16(), 3))]),
    "struct": pa.schema([pa.field("s", _STRUCT, metadata={"PARQUET:field_id": "3"})]),
    "map": pa.schema([("m", pa.map_(pa.string(), pa.int64()))]),
    "map_sorted": pa.schema([("m", pa.map_(pa.int32(), pa.string(), keys_sorted=True))]),
    "map_of_lists": pa.schema([("m", pa.map_(pa.int32(), pa.list_(pa.string())))]),
    "list_of_lists": pa.schema([("nn", pa.list_(pa.large_list(pa.int8())))]),
    "list_of_structs": pa.schema([("ls", pa.list_(_STRUCT))]),
    "list_of_maps": pa.schema([("lm", pa.list_(pa.map_(pa.string(), pa.float32())))]),
    "dictionary_leaves": pa.schema(
        [("s", pa.struct([("d", pa.dictionary(pa.int32(), pa.string())), ("t", pa.string())]))]
    ),
    "tz_and_views": pa.schema(
        [
            ("l", pa.list_(pa.timestamp("ms", "Europe/Paris"))),
            ("v", pa.struct([("sv", pa.string_view()), ("lb", pa.large_binary())])),
        ]
    ),
    "extension_leaf": pa.schema([("l", pa.list_(pa.uuid()))]),
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


def _footer(raw: bytes) -> t.FileMetaData:
    size = int.from_bytes(raw[-8:-4], "little")
    meta, _ = deserialize(t.FileMetaData, memoryview(raw)[len(raw) - 8 - size : -8])
    return meta


def _pyarrow_file(schema: pa.Schema, *, store_schema: bool) -> bytes:
    buf = io.BytesIO()
    table = _empty(schema)
    pq.write_table(table, buf, store_decimal_as_integer=True, store_schema=store_schema)
    return buf.getvalue()


def _empty(schema: pa.Schema) -> pa.Table:
    """An empty table of ``schema`` (``empty_table`` cannot make lists of extension types)."""
    return pa.Table.from_arrays([_empty_array(f.type) for f in schema], schema=schema)


def _empty_array(dtype: pa.DataType) -> pa.Array:
    if isinstance(dtype, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(dtype, _empty_array(dtype.storage_type))
    if pa.types.is_list(dtype) and isinstance(dtype.value_type, pa.BaseExtensionType):
        return pa.ListArray.from_arrays(
            pa.array([0], pa.int32()), _empty_array(dtype.value_type), type=dtype
        )
    return pa.array([], dtype)


def _type_text(dtype: pa.DataType, *, map_entries: bool = True) -> str:
    """The type with every field name in it (``equals`` ignores list item names).

    pyarrow names a map's entries field after the map's group (``('m')``); Python cannot make
    such a type, so we keep Arrow's default ``entries`` and compare without it.
    """
    text = str(dtype)
    return text if map_entries else re.sub(r" \('[^']*'\)>", ">", text)


def _check_leaves(raw: bytes, schema_read: object) -> None:
    pyarrow_schema = pq.ParquetFile(io.BytesIO(raw)).schema
    columns = schema_read.columns  # type: ignore[attr-defined]
    assert len(columns) == len(pyarrow_schema)
    for i, spec in enumerate(columns):
        theirs = pyarrow_schema.column(i)
        assert spec.name == theirs.path
        assert spec.path_in_schema == tuple(theirs.path.split("."))
        assert spec.max_definition_level == theirs.max_definition_level
        assert spec.max_repetition_level == theirs.max_repetition_level
    for node in schema_read.fields:  # type: ignore[attr-defined]
        for sub in node.walk():
            if sub.kind is NodeKind.LEAF:
                assert sub.leaf is not None
                assert columns[sub.leaf].max_definition_level == sub.def_level
                assert columns[sub.leaf].max_repetition_level == sub.rep_level


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_inferred_schema_equals_pyarrows(name: str) -> None:
    raw = _pyarrow_file(SCHEMAS[name], store_schema=False)
    meta = _footer(raw)
    ours = parquet_to_arrow(list(meta.schema or []), meta.key_value_metadata)
    theirs = pq.read_schema(io.BytesIO(raw))
    assert ours.arrow_schema.equals(theirs), (ours.arrow_schema, theirs)
    mine = _type_text(pa.struct(list(ours.arrow_schema)), map_entries=False)
    assert mine == _type_text(pa.struct(list(theirs)), map_entries=False)
    _check_leaves(raw, ours)


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_arrow_schema_restores_the_types_written(name: str) -> None:
    schema = SCHEMAS[name]
    raw = _pyarrow_file(schema, store_schema=True)
    meta = _footer(raw)
    ours = parquet_to_arrow(list(meta.schema or []), meta.key_value_metadata)
    assert ours.arrow_schema.equals(schema, check_metadata=True)
    for mine, given in zip(ours.arrow_schema, schema, strict=True):
        assert _type_text(mine.type) == _type_text(given.type)  # item and map field names
    # pyarrow restores at least the same types (compared as .equals, item names aside)
    assert ours.arrow_schema.equals(pq.read_schema(io.BytesIO(raw))) or name in {
        "dictionary_leaves",
        "tz_and_views",
        "extension_leaf",
        "list_item_named_item",
    }
    _check_leaves(raw, ours)
    # and our own writer's elements read back to the same tree
    written = arrow_to_parquet(schema)
    again = parquet_to_arrow(
        written.elements, [t.KeyValue(key="ARROW:schema", value=written.arrow_schema_value)]
    )
    assert again.arrow_schema.equals(schema)
    assert [c.name for c in again.columns] == [c.name for c in written.columns]
    assert again.fields == tuple(_strip(n) for n in again.fields)


def _strip(node: object) -> object:
    return node


def test_mismatched_arrow_schema_falls_back_to_inferred_types() -> None:
    written = arrow_to_parquet(pa.schema([("l", pa.large_list(pa.int64()))]))
    other = arrow_to_parquet(pa.schema([("l", pa.large_list(pa.string()))]))
    read = parquet_to_arrow(
        written.elements, [t.KeyValue(key="ARROW:schema", value=other.arrow_schema_value)]
    )
    assert read.arrow_schema.field("l").type == pa.large_list(pa.int64())  # list kind kept
    struct_written = arrow_to_parquet(pa.schema([("s", pa.struct([("a", pa.int64())]))]))
    struct_other = arrow_to_parquet(pa.schema([("s", pa.struct([("b", pa.int64())]))]))
    read = parquet_to_arrow(
        struct_written.elements,
        [t.KeyValue(key="ARROW:schema", value=struct_other.arrow_schema_value)],
    )
    assert read.arrow_schema.field("s").type == pa.struct([("a", pa.int64())])


def _element(name: str, **kwargs: object) -> t.SchemaElement:
    return t.SchemaElement(name=name, **kwargs)  # type: ignore[arg-type]


REQ, OPT, REP = (
    FieldRepetitionType.REQUIRED,
    FieldRepetitionType.OPTIONAL,
    FieldRepetitionType.REPEATED,
)


def _legacy(children: list[t.SchemaElement], top: int = 1) -> list[t.SchemaElement]:
    return [_element("schema", repetition_type=REQ, num_children=top), *children]


LEGACY = {
    # two-level list: repeated primitive inside a LIST group
    "two_level": (
        _legacy(
            [
                _element(
                    "l", repetition_type=OPT, num_children=1, converted_type=ConvertedType.LIST
                ),
                _element("x", repetition_type=REP, type=Type.INT32),
            ]
        ),
        pa.list_(pa.field("x", pa.int32(), False)),
        [(2, 1)],
    ),
    "array_name": (
        _legacy(
            [
                _element(
                    "l", repetition_type=OPT, num_children=1, converted_type=ConvertedType.LIST
                ),
                _element("array", repetition_type=REP, num_children=1),
                _element("a", repetition_type=OPT, type=Type.INT64),
            ]
        ),
        pa.list_(pa.field("array", pa.struct([("a", pa.int64())]), False)),
        [(3, 1)],
    ),
    "tuple_name": (
        _legacy(
            [
                _element(
                    "l", repetition_type=REQ, num_children=1, converted_type=ConvertedType.LIST
                ),
                _element("l_tuple", repetition_type=REP, num_children=1),
                _element("a", repetition_type=REQ, type=Type.INT64),
            ]
        ),
        pa.list_(pa.field("l_tuple", pa.struct([pa.field("a", pa.int64(), False)]), False)),
        [(1, 1)],
    ),
    "two_children": (
        _legacy(
            [
                _element(
                    "l", repetition_type=OPT, num_children=1, converted_type=ConvertedType.LIST
                ),
                _element("pair", repetition_type=REP, num_children=2),
                _element("a", repetition_type=OPT, type=Type.INT64),
                _element("b", repetition_type=REQ, type=Type.DOUBLE),
            ]
        ),
        pa.list_(
            pa.field(
                "pair", pa.struct([("a", pa.int64()), pa.field("b", pa.float64(), False)]), False
            )
        ),
        [(3, 1), (2, 1)],
    ),
    "repeated_primitive": (
        _legacy([_element("r", repetition_type=REP, type=Type.INT32)]),
        pa.list_(pa.field("r", pa.int32(), False)),
        [(1, 1)],
    ),
    "repeated_group": (
        _legacy(
            [
                _element("g", repetition_type=REP, num_children=1),
                _element("a", repetition_type=OPT, type=Type.INT32),
            ]
        ),
        pa.list_(pa.field("g", pa.struct([("a", pa.int32())]), False)),
        [(2, 1)],
    ),
    "map_key_value": (
        _legacy(
            [
                _element(
                    "m",
                    repetition_type=OPT,
                    num_children=1,
                    converted_type=ConvertedType.MAP_KEY_VALUE,
                ),
                _element("map", repetition_type=REP, num_children=2),
                _element("key", repetition_type=REQ, type=Type.INT32),
                _element("value", repetition_type=OPT, type=Type.INT32),
            ]
        ),
        pa.map_(pa.int32(), pa.int32()),
        [(2, 1), (3, 1)],
    ),
}


@pytest.mark.parametrize("name", list(LEGACY))
def test_legacy_forms(name: str) -> None:
    elements, dtype, levels = LEGACY[name]
    read = parquet_to_arrow(elements, None)
    field = read.arrow_schema.field(0)
    assert field.type.equals(dtype)
    assert _type_text(field.type) == _type_text(dtype)
    assert [(c.max_definition_level, c.max_repetition_level) for c in read.columns] == levels


@pytest.mark.parametrize(
    "elements",
    [
        _legacy(
            [
                _element(
                    "l", repetition_type=OPT, num_children=2, converted_type=ConvertedType.LIST
                ),
                _element("a", repetition_type=REP, type=Type.INT32),
                _element("b", repetition_type=REP, type=Type.INT32),
            ]
        ),
        _legacy(
            [
                _element(
                    "l", repetition_type=OPT, num_children=1, converted_type=ConvertedType.LIST
                ),
                _element("a", repetition_type=OPT, type=Type.INT32),
            ]
        ),
        _legacy(
            [
                _element(
                    "m", repetition_type=OPT, num_children=1, converted_type=ConvertedType.MAP
                ),
                _element("kv", repetition_type=REP, num_children=2),
                _element("key", repetition_type=OPT, type=Type.INT32),
                _element("value", repetition_type=OPT, type=Type.INT32),
            ]
        ),
        _legacy([_element("s", repetition_type=OPT, num_children=3)]),
    ],
    ids=["list_two_children", "list_not_repeated", "map_optional_key", "group_short"],
)
def test_malformed_groups_raise_format_error(elements: list[t.SchemaElement]) -> None:
    with pytest.raises(FormatError):
        parquet_to_arrow(elements, None)


NESTED_VECTORS = sorted(
    p.name
    for p in (PARQUET_TESTING / "data").glob("*.parquet")
    if any(
        e.num_children or e.repetition_type == REP
        for e in (_footer(p.read_bytes()).schema or [])[1:]
    )
)


@pytest.mark.parametrize("name", NESTED_VECTORS)
def test_parquet_testing_schemas_equal_pyarrows(name: str) -> None:
    path: Path = PARQUET_TESTING / "data" / name
    raw = path.read_bytes()
    meta = _footer(raw)
    try:
        theirs = pq.read_schema(path)
    except (pa.ArrowException, OSError):
        with pytest.raises(FormatError):
            parquet_to_arrow(list(meta.schema or []), meta.key_value_metadata)
        return
    ours = parquet_to_arrow(list(meta.schema or []), meta.key_value_metadata)
    assert ours.arrow_schema.remove_metadata().equals(theirs.remove_metadata()), (
        ours.arrow_schema,
        theirs,
    )
    _check_leaves(raw, ours)
