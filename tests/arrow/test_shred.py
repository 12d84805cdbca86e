"""streamwrite.arrow.shred: the vectorised shredder against the per-value Dremel reference
(``streamwrite.testing.dremel``), the Dremel paper's Document example level by level, and the
input shapes a shredder gets wrong (slices, chunks, hidden ranges of null lists, null structs
over values, REQUIRED nulls). ``STREAMWRITE_HYPOTHESIS_EXAMPLES`` sets max_examples (default 60).
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.arrow.shred import LeafData, shred
from streamwrite.arrow.values import to_physical
from streamwrite.errors import SchemaError
from streamwrite.format.enums import FieldRepetitionType
from streamwrite.testing.dremel import reference_shred
from streamwrite.testing.strategies import nested_arrays, nested_schemas, nested_tables
from workers.values import BinaryValues

EXAMPLES = int(os.environ.get("STREAMWRITE_HYPOTHESIS_EXAMPLES", "60"))


def _same_values(got: Any, want: Any) -> None:
    if isinstance(want, BinaryValues):
        assert isinstance(got, BinaryValues)
        assert np.array_equal(np.diff(got.offsets), np.diff(want.offsets))
        g = got.data[got.offsets[0] : got.offsets[-1]]
        w = want.data[want.offsets[0] : want.offsets[-1]]
        assert np.array_equal(g, w)
    else:
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()


def _check(column: pa.Array | pa.ChunkedArray, field: pa.Field) -> list[LeafData]:
    schema = arrow_to_parquet(pa.schema([field]))
    node = schema.fields[0]
    got = shred(column, node, schema.columns)
    want = reference_shred(column, field)
    assert len(got) == len(want) == node.leaf_stop - node.leaf_start
    for leaf, ours, ref in zip(node.leaves, got, want, strict=True):
        spec = schema.columns[leaf]
        assert spec.path_in_schema == ref.path
        assert spec.max_definition_level == ref.max_definition_level
        assert spec.max_repetition_level == ref.max_repetition_level
        assert ours.num_rows == len(column)
        if spec.max_definition_level:
            assert ours.def_levels is not None and ours.def_levels.dtype == np.uint8
            assert ours.def_levels.tolist() == ref.def_levels
        else:
            assert ours.def_levels is None and set(ref.def_levels) <= {0}
        if spec.max_repetition_level:
            assert ours.rep_levels is not None and ours.rep_levels.dtype == np.uint8
            assert ours.rep_levels.tolist() == ref.rep_levels
        else:
            assert ours.rep_levels is None and set(ref.rep_levels) <= {0}
        required = replace(spec, repetition=FieldRepetitionType.REQUIRED)
        _same_values(ours.values, to_physical(ref.values, required).values)
    return got


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(nested_tables())
def test_shred_equals_the_reference(table: pa.Table) -> None:
    for i, field in enumerate(table.schema):
        _check(table.column(i), field)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_shred_of_arrays_and_of_their_slices_equals_the_reference(data: st.DataObject) -> None:
    schema = data.draw(nested_schemas(max_fields=1))
    field = schema.field(0)
    array = data.draw(nested_arrays(field.type, field.nullable, max_size=25))
    _check(array, field)
    start = data.draw(st.integers(0, len(array)))
    _check(array.slice(start, data.draw(st.integers(0, len(array) - start))), field)


# -- the Dremel paper's Document example (Melnik et al. 2010, figures 2 and 3) ------------------
# Repeated fields are REQUIRED lists of REQUIRED elements: the repeated group adds the paper's
# one definition level and the element adds none, so the levels are the paper's exactly.


def _required_list(item: pa.DataType) -> pa.DataType:
    return pa.list_(pa.field("element", item, nullable=False))


LANGUAGE = pa.struct([pa.field("Code", pa.string(), False), pa.field("Country", pa.string())])
NAME = pa.struct([pa.field("Language", _required_list(LANGUAGE), False), ("Url", pa.string())])
LINKS = pa.struct(
    [
        pa.field("Backward", _required_list(pa.int64()), False),
        pa.field("Forward", _required_list(pa.int64()), False),
    ]
)
DOCUMENT = pa.schema(
    [
        pa.field("DocId", pa.int64(), False),
        pa.field("Links", LINKS),
        pa.field("Name", _required_list(NAME), False),
    ]
)
R1 = {
    "DocId": 10,
    "Links": {"Backward": [], "Forward": [20, 40, 60]},
    "Name": [
        {
            "Language": [{"Code": "en-us", "Country": "us"}, {"Code": "en", "Country": None}],
            "Url": "http://A",
        },
        {"Language": [], "Url": "http://B"},
        {"Language": [{"Code": "en-gb", "Country": "gb"}], "Url": None},
    ],
}
R2 = {
    "DocId": 20,
    "Links": {"Backward": [10, 30], "Forward": [80]},
    "Name": [{"Language": [], "Url": "http://C"}],
}
PAPER_COLUMNS = {  # column: (value, r, d) rows of the paper's figure 3
    "DocId": [(10, 0, 0), (20, 0, 0)],
    "Links.Backward.list.element": [(None, 0, 1), (10, 0, 2), (30, 1, 2)],
    "Links.Forward.list.element": [(20, 0, 2), (40, 1, 2), (60, 1, 2), (80, 0, 2)],
    "Name.list.element.Language.list.element.Code": [
        ("en-us", 0, 2),
        ("en", 2, 2),
        (None, 1, 1),
        ("en-gb", 1, 2),
        (None, 0, 1),
    ],
    "Name.list.element.Language.list.element.Country": [
        ("us", 0, 3),
        (None, 2, 2),
        (None, 1, 1),
        ("gb", 1, 3),
        (None, 0, 1),
    ],
    "Name.list.element.Url": [
        ("http://A", 0, 2),
        ("http://B", 1, 2),
        (None, 1, 1),
        ("http://C", 0, 2),
    ],
}


def _python_values(values: Any) -> list[Any]:
    if isinstance(values, BinaryValues):
        return [
            values.data[a:b].tobytes().decode()
            for a, b in zip(values.offsets, values.offsets[1:], strict=False)
        ]
    return [int(v) for v in values]


def test_dremel_paper_document_levels() -> None:
    table = pa.Table.from_pylist([R1, R2], schema=DOCUMENT)
    schema = arrow_to_parquet(DOCUMENT)
    found = {}
    for i, node in enumerate(schema.fields):
        for leaf, data in zip(
            node.leaves, shred(table.column(i), node, schema.columns), strict=True
        ):
            spec = schema.columns[leaf]
            n = len(data.def_levels) if data.def_levels is not None else data.num_rows
            defs = [0] * n if data.def_levels is None else data.def_levels.tolist()
            reps = [0] * n if data.rep_levels is None else data.rep_levels.tolist()
            values = iter(_python_values(data.values))
            found[spec.name] = [
                (next(values) if d == spec.max_definition_level else None, r, d)
                for r, d in zip(reps, defs, strict=True)
            ]
    assert found == PAPER_COLUMNS
    # the paper's maximum levels (figure 3 column headers)
    levels = {c.name: (c.max_repetition_level, c.max_definition_level) for c in schema.columns}
    assert levels["Name.list.element.Language.list.element.Country"] == (2, 3)
    assert levels["Name.list.element.Language.list.element.Code"] == (2, 2)
    assert levels["Links.Backward.list.element"] == (1, 2)
    assert levels["Name.list.element.Url"] == (1, 2)


# -- input shapes ---------------------------------------------------------------------------------


def test_null_lists_hiding_ranges_and_null_structs_over_values_are_ignored() -> None:
    values = pa.array([1, 2, 3, 4, 5, 6], pa.int64())
    offsets = pa.array([0, 2, 5, 6], pa.int32())
    lists = pa.ListArray.from_arrays(offsets, values, mask=pa.array([False, True, False]))
    got = _check(lists, pa.field("l", lists.type))[0]
    assert got.def_levels.tolist() == [3, 3, 0, 3] and got.values.tolist() == [1, 2, 6]
    child = pa.array([7, None, 9], pa.int64())  # the null at slot 1 is under a null struct
    structs = pa.StructArray.from_arrays(
        [child], fields=[pa.field("a", pa.int64(), False)], mask=pa.array([False, True, False])
    )
    got = _check(structs, pa.field("s", structs.type))[0]
    assert got.def_levels.tolist() == [1, 0, 1] and got.values.tolist() == [7, 9]


def test_fixed_size_list_slots_and_sliced_maps() -> None:
    fixed = pa.array([[1, 2], None, [None, 4]], pa.list_(pa.int32(), 2)).slice(1)
    got = _check(fixed, pa.field("f", fixed.type))[0]
    assert got.def_levels.tolist() == [0, 2, 3] and got.rep_levels.tolist() == [0, 0, 1]
    maps = pa.array(
        [[("a", 1)], None, [], [("b", None), ("c", 3)]], pa.map_(pa.string(), pa.int64())
    ).slice(1)
    key, value = _check(maps, pa.field("m", maps.type))
    assert key.def_levels.tolist() == [0, 1, 2, 2] and key.rep_levels.tolist() == [0, 0, 0, 1]
    assert value.def_levels.tolist() == [0, 1, 2, 3]


def test_chunked_columns_equal_their_combined_chunks() -> None:
    field = pa.field("l", pa.large_list(pa.string()))
    chunked = pa.chunked_array(
        [
            pa.array([["a"], None], field.type),
            pa.array([], field.type),
            pa.array([[], ["b", None]], field.type),
        ]
    )
    schema = arrow_to_parquet(pa.schema([field]))
    whole = shred(chunked.combine_chunks(), schema.fields[0], schema.columns)[0]
    parts = _check(chunked, field)[0]
    assert parts.def_levels.tolist() == whole.def_levels.tolist() == [3, 0, 1, 3, 2]
    assert parts.rep_levels.tolist() == [0, 0, 0, 0, 1]
    assert bytes(parts.values.data) == b"ab" and parts.num_rows == 4


def test_dictionary_leaves_and_dictionaries_with_null_entries() -> None:
    dictionary = pa.DictionaryArray.from_arrays(
        pa.array([0, 1, 2, 0], pa.int32()), pa.array(["x", None, "z"])
    )
    lists = pa.ListArray.from_arrays(pa.array([0, 3, 4], pa.int32()), dictionary)
    got = _check(lists, pa.field("l", lists.type))[0]
    assert got.def_levels.tolist() == [3, 2, 3, 3]
    assert bytes(got.values.data) == b"xzx"


@pytest.mark.parametrize(
    ("dtype", "rows", "path"),
    [
        (pa.list_(pa.field("item", pa.int64(), False)), [[1, None]], "l.list.element"),
        (pa.struct([pa.field("a", pa.int8(), False)]), [{"a": None}], "l.a"),
        (
            pa.list_(pa.field("item", pa.struct([("b", pa.int8())]), False)),
            [[{"b": 1}, None]],
            "l.list.element",
        ),
    ],
)
def test_required_nulls_name_their_path(dtype: pa.DataType, rows: list[Any], path: str) -> None:
    field = pa.field("l", dtype)
    schema = arrow_to_parquet(pa.schema([field]))
    with pytest.raises(SchemaError, match=f"'{path}' is REQUIRED"):
        shred(pa.array(rows, dtype), schema.fields[0], schema.columns)
    with pytest.raises(SchemaError, match="REQUIRED"):
        required = arrow_to_parquet(pa.schema([field.with_nullable(False)]))
        shred(pa.array([None], dtype), required.fields[0], required.columns)


def test_flat_leaf_is_to_physical() -> None:
    column = pa.chunked_array([pa.array(["a", None]), pa.array(["ccc"])])
    schema = arrow_to_parquet(pa.schema([pa.field("s", pa.string())]))
    (got,) = shred(column, schema.fields[0], schema.columns)
    want = to_physical(column, schema.columns[0])
    assert got.rep_levels is None and got.num_rows == 3
    assert got.def_levels.tolist() == want.def_levels.tolist() == [1, 0, 1]
    _same_values(got.values, want.values)
    with pytest.raises(SchemaError, match="expects Arrow type"):
        nested = arrow_to_parquet(pa.schema([pa.field("l", pa.list_(pa.int8()))]))
        shred(pa.array([[1]], pa.list_(pa.int16())), nested.fields[0], nested.columns)
