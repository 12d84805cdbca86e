"""Filters on struct fields: ``("s.a", ">", 3)`` and ``pc.field("s", "a")`` bind to the struct
leaf, filter rows as pyarrow does, and prune containers with the leaf's statistics (those a
Parquet writer records for the leaf ``s.a``: pyarrow's, read from a real file). Filters that
name values inside lists or maps are refused with the reason."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from streamwrite.errors import ConfigError, SchemaError
from streamwrite.predicate import Compare, Containers, IsNull, bind, parse_filters, prune, to_arrow
from tests.predicate._support import writer_stats

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field(
            "s",
            pa.struct(
                [
                    pa.field("a", pa.int32()),
                    pa.field("inner", pa.struct([pa.field("x", pa.string())])),
                ]
            ),
        ),
        pa.field("l", pa.list_(pa.int64())),
        pa.field("m", pa.map_(pa.string(), pa.int64())),
        pa.field("ls", pa.list_(pa.struct([pa.field("y", pa.int8())]))),
        pa.field("dot.ted", pa.int64()),
    ]
)


def _table(num_rows: int, seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    structs = [
        None
        if rng.random() < 0.15
        else {
            "a": None if rng.random() < 0.2 else int(v),
            "inner": None if rng.random() < 0.2 else {"x": f"x{v % 13}"},
        }
        for v in rng.integers(-50, 50, num_rows)
    ]
    return pa.table(
        [
            pa.array(np.arange(num_rows)),
            pa.array(structs, SCHEMA.field("s").type),
            pa.array([[i] for i in range(num_rows)], pa.list_(pa.int64())),
            pa.array([[("k", i)] for i in range(num_rows)], SCHEMA.field("m").type),
            pa.array([[{"y": 1}]] * num_rows, SCHEMA.field("ls").type),
            pa.array(np.arange(num_rows)),
        ],
        schema=SCHEMA,
    )


def test_dnf_and_expression_name_the_same_struct_leaf() -> None:
    dnf = bind([("s.a", ">", 3)], SCHEMA)
    expression = bind(pc.field("s", "a") > 3, SCHEMA)
    assert dnf == expression == Compare("s.a", ">", pa.scalar(3, pa.int32()))
    assert parse_filters(pc.field("s", "inner", "x") == "x1") == Compare(
        "s.inner.x", "==", pa.scalar("x1")
    )
    # a top-level name holding a dot is that column, exactly
    assert bind([("dot.ted", "<", 2)], SCHEMA) == Compare("dot.ted", "<", pa.scalar(2, pa.int64()))


@pytest.mark.parametrize(
    "filters",
    [
        [("s.a", ">", 3)],
        [("s.a", "in", [1, 2, 3, 40])],
        [("s.inner.x", "==", "x3")],
        [("s.a", "<", 0), ("id", ">=", 100)],
        pc.field("s", "a") <= -10,
        pc.field("s", "inner", "x").isin(["x1", "x2"]) | pc.field("s", "a").is_null(),
        pc.field("s").is_null(),
        ~(pc.field("s", "a") > 0),
    ],
)
def test_rows_filter_as_pyarrow_filters(filters: object) -> None:
    table = _table(500)
    expr = bind(filters, SCHEMA)
    got = table.filter(to_arrow(expr, table.schema))
    if isinstance(filters, pc.Expression):
        expected = table.filter(filters)
    else:
        expected = pq.filters_to_expression(filters)  # pyarrow's own reading of the DNF
        flat = table.flatten().flatten()  # s.a, s.inner.x as columns of the dotted names
        mask = flat.filter(expected).column("id")
        expected = table.filter(pc.is_in(table.column("id"), mask))
    assert got.equals(expected)


def _file_containers(table: pa.Table, row_group_size: int, leaf: str) -> Containers:
    """The statistics pyarrow writes for ``leaf`` in each row group (a real file)."""
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=row_group_size)
    meta = pq.ParquetFile(pa.BufferReader(sink.getvalue())).metadata
    index = next(
        i for i in range(meta.num_columns) if meta.row_group(0).column(i).path_in_schema == leaf
    )
    chunks = []
    for rg in range(meta.num_row_groups):
        stats = meta.row_group(rg).column(index).statistics
        chunks.append((stats.min, stats.max, stats.null_count))
    # the leaf's values per row group, as the reader of the leaf sees them (one per row)
    values = table.flatten().flatten().column(leaf)
    arrays = [
        values.slice(start, row_group_size).combine_chunks()
        for start in range(0, table.num_rows, row_group_size)
    ]
    stats = writer_stats(arrays)
    assert stats.min is not None and stats.max is not None and stats.null_count is not None
    # the struct leaf's statistics in pyarrow's file are those of its per-row values
    assert [(a, b, int(n)) for a, b, n in chunks] == [
        (stats.min[i].as_py(), stats.max[i].as_py(), stats.null_count[i].as_py())
        for i in range(len(arrays))
    ]
    return Containers(len(arrays), {leaf: stats})


@pytest.mark.parametrize(
    "filters", [[("s.a", ">", 45)], [("s.a", "==", -50)], [("s.inner.x", "==", "x0")]]
)
def test_struct_leaf_statistics_prune_row_groups(filters: object) -> None:
    rows = _table(2000)
    expr = bind(filters, SCHEMA)
    assert isinstance(expr, Compare)
    leaf = expr.column
    # sorted by the leaf so that row groups have narrow ranges
    table = rows.take(pc.sort_indices(rows.flatten().flatten().column(leaf)))
    containers = _file_containers(table, 200, leaf)
    keep = prune(expr, containers)
    assert not keep.all()  # something is pruned
    matches = table.filter(to_arrow(expr, table.schema)).column("id").to_pylist()
    for group in range(containers.num_containers):
        ids = table.column("id").slice(group * 200, 200).to_pylist()
        if set(ids) & set(matches):
            assert keep[group], group  # never a row group holding a match


@pytest.mark.parametrize(
    ("filters", "why"),
    [
        ([("l.list.element", "==", 1)], "inside the list column 'l'"),
        ([("l.item", "==", 1)], "inside the list column 'l'"),
        (pc.field("m", "key") == "k", "inside the map column 'm'"),
        ([("m.key_value.value", ">", 1)], "inside the map column 'm'"),
        ([("ls.list.element.y", "==", 1)], "inside the list column 'ls'"),
        ([("s", "==", 1)], "only is_null takes a struct"),
        ([("l", "in", [1])], "only is_null takes a struct, list or map"),
    ],
)
def test_list_and_map_leaves_are_refused_saying_why(filters: object, why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        bind(filters, SCHEMA)


def test_is_null_of_a_whole_nested_column_is_allowed() -> None:
    assert bind(pc.field("l").is_null(), SCHEMA) == IsNull("l")


def test_unknown_struct_field_lists_the_columns() -> None:
    with pytest.raises(SchemaError, match=r"'s\.b'.*columns: id, s, l, m, ls, dot\.ted"):
        bind([("s.b", "==", 1)], SCHEMA)
