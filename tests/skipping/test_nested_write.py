"""The two nested shapes the store writes (struct of primitives, 3-level LIST of a primitive),
written by streamwrite's FileWriter with levels from arrow/nested.py and read back by pyarrow."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwrite.arrow.nested import leaf_levels, nested_to_parquet
from streamwrite.encode import chunk_settings
from streamwrite.errors import UnsupportedError
from streamwrite.layout.file_writer import FileWriter
from streamwrite.options import make_write_options
from workers.chunk import encode_chunk

EXAMPLES = int(os.environ.get("STREAMWRITE_HYPOTHESIS_EXAMPLES", "40"))


def _write(table: pa.Table) -> bytes:
    schema = nested_to_parquet(table.schema)
    options = make_write_options([leaf.spec.name for leaf in schema.leaves], compression="snappy")
    writer = FileWriter(schema, options)
    chunks = []
    for leaf in schema.leaves:
        levels = leaf_levels(table, leaf)
        settings_ = replace(
            chunk_settings(leaf.spec, options),
            path_in_schema=leaf.path,
            max_repetition_level=leaf.max_repetition_level,
        )
        chunks.append(
            encode_chunk(
                settings_,
                levels.values,
                levels.def_levels,
                levels.num_rows,
                rep_levels=levels.rep_levels,
            )
        )
    return writer.start() + writer.add_row_group(chunks, table.num_rows) + writer.footer()


def test_struct_list_and_flat_round_trip(tmp_path: Path) -> None:
    table = pa.table(
        {
            "name": pa.array(["a", None, "c", "d"]),
            "mm": pa.array(
                [{"min": 1, "max": 2}, None, {"min": None, "max": None}, {"min": -5, "max": 9}],
                pa.struct([("min", pa.int64()), ("max", pa.int64())]),
            ),
            "vl": pa.array([["x", "y"], [], None, ["z", None, "日本"]], pa.list_(pa.string())),
            "ts": pa.array(
                [{"min": 1, "max": 2}] * 4,
                pa.struct([("min", pa.timestamp("us", "UTC")), ("max", pa.timestamp("us", "UTC"))]),
            ),
            "blob": pa.array([b"\x00", None, b"", b"abc"]),
        }
    )
    (tmp_path / "f").write_bytes(_write(table))
    back = pq.read_table(tmp_path / "f")
    assert back.equals(table)
    meta = pq.ParquetFile(tmp_path / "f").metadata
    assert meta.row_group(0).column(3).path_in_schema == "vl.list.element"
    assert pq.ParquetFile(tmp_path / "f").schema.column(1).max_definition_level == 2
    assert pq.ParquetFile(tmp_path / "f").schema.column(3).max_repetition_level == 1


def test_sliced_input_and_deeper_nesting_refused() -> None:
    table = pa.table({"vl": pa.array([[1], [2, 3], None, [], [4]], pa.list_(pa.int32()))}).slice(
        1, 3
    )
    back = pq.read_table(pa.BufferReader(_write(table)))
    assert back.column("vl").to_pylist() == [[2, 3], None, []]
    with pytest.raises(UnsupportedError, match="in deep"):
        nested_to_parquet(pa.schema([("deep", pa.list_(pa.list_(pa.int8())))]))


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.none(), st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), max_size=6)
        ),
        min_size=1,
        max_size=40,
    ),
    st.lists(
        st.one_of(
            st.none(),
            st.tuples(st.one_of(st.none(), st.floats()), st.one_of(st.none(), st.text(max_size=5))),
        ),
        min_size=40,
        max_size=40,
    ),
)
def test_random_lists_and_structs(
    lists: list[list[int | None] | None], pairs: list[tuple[float | None, str | None] | None]
) -> None:
    n = len(lists)
    structs = [None if p is None else {"a": p[0], "b": p[1]} for p in pairs[:n]]
    table = pa.table(
        {
            "vl": pa.array(lists, pa.list_(pa.int64())),
            "s": pa.array(structs, pa.struct([("a", pa.float64()), ("b", pa.string())])),
        }
    )
    back = pq.read_table(pa.BufferReader(_write(table)))
    assert back.column("vl").to_pylist() == lists
    got = back.column("s").to_pylist()
    for g, e in zip(got, structs, strict=True):
        if e is None or g is None:
            assert g == e
        else:
            assert g["b"] == e["b"]
            assert (g["a"] == e["a"]) or (g["a"] != g["a"] and e["a"] != e["a"])
