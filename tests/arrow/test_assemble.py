"""Dremel assembly (``streamwrite.arrow.assemble``) against per-value references.

A reference shredder (per value, from the Arrow type, the Dremel paper's recursion) turns random
nested data into levels; ``assemble`` must give the input back, and equal a per-value reference
assembler (cursor per leaf, the paper's record reading). Spec examples (the Dremel paper's
document, parquet-format's nested encoding) are checked level by level, and levels that
contradict the schema raise CorruptFileError.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamwrite.arrow.assemble import assemble
from streamwrite.arrow.column import ColumnSpec, FieldNode, NodeKind
from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.arrow.values import to_physical
from streamwrite.errors import CorruptFileError
from streamwrite.testing import dremel

EXAMPLES = int(os.environ.get("STREAMWRITE_ASSEMBLE_EXAMPLES", "150"))


@dataclass(frozen=True)
class Leaf:
    values: Any
    def_levels: npt.NDArray[np.uint8] | None
    rep_levels: npt.NDArray[np.uint8] | None
    num_rows: int


# --------------------------------------------------------------------- reference shredder


def reference_shred(
    array: pa.Array, node: FieldNode, columns: tuple[ColumnSpec, ...]
) -> list[Leaf]:
    """Per value (:func:`streamwrite.testing.dremel.reference_shred`): levels and physical
    values of every leaf under ``node``."""
    specs = columns[node.leaf_start : node.leaf_stop]
    leaves = []
    for spec, ref in zip(specs, dremel.reference_shred(array, node.field), strict=True):
        assert ref.path == spec.path_in_schema
        flat = replace(spec, field=spec.field.with_nullable(True), max_definition_level=1)
        physical = to_physical(ref.values, flat).values
        leaves.append(
            Leaf(
                physical,
                np.array(ref.def_levels, np.uint8) if spec.max_definition_level else None,
                np.array(ref.rep_levels, np.uint8) if spec.max_repetition_level else None,
                len(array),
            )
        )
    return leaves


# --------------------------------------------------------------------- reference assembler


class _Cursor:
    def __init__(self, leaf: Leaf, spec: ColumnSpec, values: list[Any]) -> None:
        n = len(values) if leaf.def_levels is None and leaf.rep_levels is None else None
        self.defs = (
            list(leaf.def_levels)
            if leaf.def_levels is not None
            else [spec.max_definition_level]
            * (
                n if n is not None else len(leaf.rep_levels)  # type: ignore[arg-type]
            )
        )
        self.reps = list(leaf.rep_levels) if leaf.rep_levels is not None else [0] * len(self.defs)
        self.values = iter(values)
        self.pos = 0
        self.max_def = spec.max_definition_level


def reference_assemble(node: FieldNode, cursors: dict[int, _Cursor], num_rows: int) -> list[Any]:
    """Per value: the Python values of ``node``'s records, reading each leaf with a cursor."""

    def skip(n: FieldNode) -> None:
        for i in n.leaves:
            cursors[i].pos += 1

    def read(n: FieldNode) -> Any:
        first = cursors[n.leaf_start]
        d = first.defs[first.pos]
        if n.kind is NodeKind.LEAF:
            first.pos += 1
            return next(first.values) if d == first.max_def else None
        if d < n.def_level:
            skip(n)
            return None
        if n.kind is NodeKind.STRUCT:
            return {c.field.name: read(c) for c in n.children}
        if d < n.def_level + 1:
            skip(n)
            return []
        items = []
        while True:
            if n.kind is NodeKind.MAP:
                items.append((read(n.children[0]), read(n.children[1])))
            else:
                items.append(read(n.children[0]))
            if first.pos >= len(first.reps) or first.reps[first.pos] < n.rep_level:
                return items

    return [read(node) for _ in range(num_rows)]


def _python_leaf_values(leaf: Leaf, spec: ColumnSpec) -> list[Any]:
    from streamwrite.arrow.assembly import from_physical

    flat = replace(spec, max_definition_level=0)
    return from_physical(leaf.values, None, len(leaf.values), flat).to_pylist()


# --------------------------------------------------------------------- random types and data

_PRIMITIVES = [
    pa.int64(),
    pa.int8(),
    pa.string(),
    pa.float64(),
    pa.bool_(),
    pa.large_binary(),
    pa.timestamp("us", "UTC"),
    pa.dictionary(pa.int32(), pa.string()),
    pa.decimal128(9, 2),
]


def _field_names(n: int) -> list[str]:
    return [f"f{i}" for i in range(n)]


def types(depth: int = 3) -> st.SearchStrategy[pa.DataType]:
    leaf = st.sampled_from(_PRIMITIVES)

    def extend(inner: st.SearchStrategy[pa.DataType]) -> st.SearchStrategy[pa.DataType]:
        field = st.tuples(inner, st.booleans())
        return st.one_of(
            field.map(lambda f: pa.list_(pa.field("item", f[0], f[1]))),
            field.map(lambda f: pa.large_list(pa.field("element", f[0], f[1]))),
            st.tuples(field, st.integers(1, 3)).map(
                lambda f: pa.list_(pa.field("item", f[0][0], f[0][1]), f[1])
            ),
            st.lists(field, min_size=1, max_size=3).map(
                lambda fs: pa.struct(
                    [
                        pa.field(n, t, nl)
                        for n, (t, nl) in zip(_field_names(len(fs)), fs, strict=True)
                    ]
                )
            ),
            st.tuples(st.sampled_from([pa.string(), pa.int32()]), field).map(
                lambda f: pa.map_(f[0], pa.field("value", f[1][0], f[1][1]))
            ),
        )

    return st.recursive(leaf, extend, max_leaves=6)


def _primitive_values(dtype: pa.DataType) -> st.SearchStrategy[Any]:
    if pa.types.is_dictionary(dtype) or pa.types.is_string(dtype):
        return st.sampled_from(["", "a", "bb", "ccc", "é"])
    if pa.types.is_large_binary(dtype):
        return st.binary(max_size=4)
    if pa.types.is_boolean(dtype):
        return st.booleans()
    if pa.types.is_float64(dtype):
        return st.floats(allow_nan=False, width=64)
    if pa.types.is_int8(dtype):
        return st.integers(-128, 127)
    if pa.types.is_int32(dtype):
        return st.integers(-(2**31), 2**31 - 1)
    if pa.types.is_timestamp(dtype):
        return st.integers(-(10**15), 10**15).map(
            lambda v: pa.scalar(v, pa.timestamp("us", "UTC")).as_py()
        )
    if pa.types.is_decimal(dtype):
        import decimal

        return st.integers(-(10**8), 10**8).map(lambda v: decimal.Decimal(v).scaleb(-2))
    return st.integers(-(2**63), 2**63 - 1)


def values(dtype: pa.DataType, nullable: bool) -> st.SearchStrategy[Any]:
    if pa.types.is_struct(dtype):
        inner: st.SearchStrategy[Any] = st.fixed_dictionaries(
            {
                dtype.field(i).name: values(dtype.field(i).type, dtype.field(i).nullable)
                for i in range(dtype.num_fields)
            }
        )
    elif pa.types.is_map(dtype):
        inner = st.lists(
            st.tuples(
                values(dtype.key_type, False), values(dtype.item_type, dtype.item_field.nullable)
            ),
            max_size=3,
        )
    elif pa.types.is_fixed_size_list(dtype):
        vf = dtype.value_field
        inner = st.lists(
            values(vf.type, vf.nullable), min_size=dtype.list_size, max_size=dtype.list_size
        )
    elif pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        vf = dtype.value_field
        inner = st.lists(values(vf.type, vf.nullable), max_size=3)
    else:
        inner = _primitive_values(dtype)
    return st.one_of(st.none(), inner) if nullable else inner


@st.composite
def nested_arrays(draw: st.DrawFn) -> tuple[pa.Field, pa.Array]:
    dtype = draw(types())
    nullable = draw(st.booleans())
    rows = draw(st.lists(values(dtype, nullable), max_size=12))
    return pa.field("c", dtype, nullable), pa.array(rows, type=dtype)


def _roundtrip(field: pa.Field, array: pa.Array) -> tuple[pa.Array, list[Any]]:
    schema = arrow_to_parquet(pa.schema([field]))
    node = schema.fields[0]
    leaves = reference_shred(array, node, schema.columns)
    result = assemble(node, leaves, schema.columns, validate=True)
    cursors = {
        i: _Cursor(leaf, schema.columns[i], _python_leaf_values(leaf, schema.columns[i]))
        for i, leaf in zip(node.leaves, leaves, strict=True)
    }
    reference = reference_assemble(node, cursors, len(array))
    return result, reference


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nested_arrays())
def test_assemble_inverts_the_reference_shredder(case: tuple[pa.Field, pa.Array]) -> None:
    field, array = case
    result, reference = _roundtrip(field, array)
    result.validate(full=True)
    assert result.type.equals(array.type)
    assert str(result.type) == str(array.type)
    assert result.to_pylist() == array.to_pylist()
    assert reference == array.to_pylist()


# --------------------------------------------------------------------- spec examples


def _levels(values: list[int]) -> npt.NDArray[np.uint8]:
    return np.array(values, np.uint8)


def test_dremel_paper_document() -> None:
    """The Dremel paper's Document: Links.Backward / Forward, Name.Language.Code / Country,
    Name.Url, with the levels the paper gives (Figure 3)."""
    language = pa.struct([pa.field("Code", pa.string(), False), pa.field("Country", pa.string())])
    name = pa.struct([pa.field("Language", pa.list_(pa.field("element", language, False)), False),
                      pa.field("Url", pa.string())])  # fmt: skip
    field = pa.field("Name", pa.list_(pa.field("element", name, False)), False)
    schema = arrow_to_parquet(pa.schema([field]))
    node = schema.fields[0]
    # r1: Name[{Lang[{en-us, us}, {en}], Url A}, {Lang[], Url B}, {Lang[{en-gb, gb}]}]
    # r2: Name[ {Lang[], Url http://C} ]
    rows = [
        [
            {"Language": [{"Code": "en-us", "Country": "us"}, {"Code": "en", "Country": None}],
             "Url": "http://A"},
            {"Language": [], "Url": "http://B"},
            {"Language": [{"Code": "en-gb", "Country": "gb"}], "Url": None},
        ],
        [{"Language": [], "Url": "http://C"}],
    ]  # fmt: skip
    array = pa.array(rows, type=field.type)
    leaves = reference_shred(array, node, schema.columns)
    names = [c.name for c in schema.columns]
    assert names == [
        "Name.list.element.Language.list.element.Code",
        "Name.list.element.Language.list.element.Country",
        "Name.list.element.Url",
    ]
    # Figure 3 (our lists add one level per repeated group, as the paper's repeated fields)
    code, country, url = leaves
    assert code.rep_levels.tolist() == [0, 2, 1, 1, 0]  # type: ignore[union-attr]
    assert code.def_levels.tolist() == [2, 2, 1, 2, 1]  # type: ignore[union-attr]
    assert country.rep_levels.tolist() == [0, 2, 1, 1, 0]  # type: ignore[union-attr]
    assert country.def_levels.tolist() == [3, 2, 1, 3, 1]  # type: ignore[union-attr]
    assert url.rep_levels.tolist() == [0, 1, 1, 0]  # type: ignore[union-attr]
    assert url.def_levels.tolist() == [2, 2, 1, 2]  # type: ignore[union-attr]
    result = assemble(node, leaves, schema.columns, validate=True)
    assert result.to_pylist() == rows


def test_parquet_format_nested_encoding_example() -> None:
    """``[[1, None], [], None]`` of an optional list of optional int64 (column.py docstring)."""
    field = pa.field("l", pa.list_(pa.int64()))
    schema = arrow_to_parquet(pa.schema([field]))
    leaf = Leaf(np.array([1], np.int64), _levels([3, 2, 1, 0]), _levels([0, 1, 0, 0]), 3)
    result = assemble(schema.fields[0], [leaf], schema.columns, validate=True)
    assert result.to_pylist() == [[1, None], [], None]
    assert result.type == field.type


def test_fixed_size_list_null_slots_get_null_children() -> None:
    field = pa.field("f", pa.list_(pa.int32(), 2))
    schema = arrow_to_parquet(pa.schema([field]))
    leaf = Leaf(
        np.array([1, 2, 3], np.int32), _levels([0, 3, 3, 3, 2]), _levels([0, 0, 1, 0, 1]), 3
    )
    result = assemble(schema.fields[0], [leaf], schema.columns, validate=True)
    result.validate(full=True)
    assert result.to_pylist() == [None, [1, 2], [3, None]]
    assert len(result.values) == 6


CORRUPT = {
    # a valid fixed_size_list slot with 1 element of 2
    "fixed_size_count": (pa.list_(pa.int32(), 2), [1], [3], [0], 1, "fixed_size_list"),
    # the first entry continues a record
    "first_rep": (pa.list_(pa.int32()), [1], [3], [1], 1, "starts with repetition"),
    # rep 1 (another element) on an entry that defines no element
    "continue_undefined": (pa.list_(pa.int32()), [1], [3, 1], [0, 1], 1, "without defining"),
    # more values than present entries
    "values": (pa.list_(pa.int32()), [1, 2], [3, 2], [0, 1], 1, "values"),
    # levels claim 2 records, the leaf 3
    "records": (pa.list_(pa.int32()), [1], [3, 1], [0, 0], 3, "records"),
}


@pytest.mark.parametrize("name", list(CORRUPT))
def test_levels_contradicting_the_schema_are_corrupt(name: str) -> None:
    dtype, present, defs, reps, num_rows, message = CORRUPT[name]
    schema = arrow_to_parquet(pa.schema([pa.field("c", dtype)]))
    leaf = Leaf(np.array(present, np.int32), _levels(defs), _levels(reps), num_rows)
    with pytest.raises(CorruptFileError, match=message):
        assemble(schema.fields[0], [leaf], schema.columns, validate=True)


def test_struct_leaves_disagreeing_are_corrupt() -> None:
    dtype = pa.struct([("a", pa.int32()), ("b", pa.int32())])
    schema = arrow_to_parquet(pa.schema([pa.field("s", dtype)]))
    a = Leaf(np.array([1], np.int32), _levels([2, 0]), None, 2)
    b = Leaf(np.array([1], np.int32), _levels([0, 2]), None, 2)  # struct null in row 0 only per a
    with pytest.raises(CorruptFileError, match="disagree"):
        assemble(schema.fields[0], [a, b], schema.columns, validate=True)
    short = Leaf(np.array([1], np.int32), _levels([2]), None, 1)
    with pytest.raises(CorruptFileError, match="records"):
        assemble(schema.fields[0], [a, short], schema.columns, validate=True)


def test_non_nullable_dictionary_child_of_a_null_struct() -> None:
    """Found by the writer -> reader round trip: a required dictionary child under a null
    struct (all values null, so an empty dictionary; ``ordered`` kept)."""
    dictionary = pa.dictionary(pa.int32(), pa.string(), ordered=True)
    dtype = pa.struct([pa.field("f0", dictionary, False)])
    schema = arrow_to_parquet(pa.schema([pa.field("c", dtype)]))
    array = pa.array([None], type=pa.struct([pa.field("f0", pa.string(), False)])).cast(dtype)
    result = assemble(
        schema.fields[0], reference_shred(array, schema.fields[0], schema.columns),
        schema.columns, validate=True,
    )  # fmt: skip
    result.validate(full=True)
    assert result.type == dtype
    assert result.to_pylist() == [None]


def test_non_nullable_children_carry_no_validity() -> None:
    """As pyarrow reads them: a required child under a null struct is zero, not null."""
    dtype = pa.struct([pa.field("e", pa.float64(), False), pa.field("d", pa.int32())])
    schema = arrow_to_parquet(pa.schema([pa.field("s", dtype)]))
    e = Leaf(np.array([1.5], np.float64), _levels([1, 0]), None, 2)
    d = Leaf(np.array([], np.int32), _levels([1, 0]), None, 2)
    result = assemble(schema.fields[0], [e, d], schema.columns, validate=True)
    assert result.to_pylist() == [{"e": 1.5, "d": None}, None]
    assert result.field("e").null_count == 0 and result.field("d").null_count == 2


def test_null_fixed_size_list_slots_of_view_elements_round_trip() -> None:
    """pyarrow has no take kernel for view types: null slots of a fixed_size_list of
    string_view get their null children through the large type (hypothesis found it)."""
    import io

    import streamwrite

    element = pa.field("x", pa.string_view(), nullable=False)
    table = pa.table({"f": pa.array([["a"], None, ["bc"]], pa.list_(element, 1))})
    buf = io.BytesIO()
    streamwrite.write_table(table, buf)
    assert streamwrite.read_table(buf.getvalue()).equals(table)
