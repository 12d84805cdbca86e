"""The two nested shapes the store writes (struct of primitives, 3-level LIST of a primitive),
written as the store writes them (arrow_to_parquet, encode_row_group: shred and the chunk
encoder, FileWriter) and read back by pyarrow; and the store file's bytes pinned."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.encode import encode_row_group
from streamwrite.layout.file_writer import FileWriter
from streamwrite.options import make_write_options
from streamwrite.skipping.xskipper import write_store_file

EXAMPLES = int(os.environ.get("STREAMWRITE_HYPOTHESIS_EXAMPLES", "40"))


def _write(table: pa.Table) -> bytes:
    schema = arrow_to_parquet(table.schema)
    options = make_write_options([spec.name for spec in schema.columns], compression="snappy")
    writer = FileWriter(schema, options)
    chunks = encode_row_group(table, schema, options)
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


def test_sliced_input_and_deeper_nesting() -> None:
    table = pa.table({"vl": pa.array([[1], [2, 3], None, [], [4]], pa.list_(pa.int32()))}).slice(
        1, 3
    )
    back = pq.read_table(pa.BufferReader(_write(table)))
    assert back.column("vl").to_pylist() == [[2, 3], None, []]
    deep = pa.table(
        {"deep": pa.array([[[1, None], []], None, [None]], pa.list_(pa.list_(pa.int8())))}
    )
    assert pq.read_table(pa.BufferReader(_write(deep))).column(0).to_pylist() == [
        [[1, None], []],
        None,
        [None],
    ]


def test_store_file_bytes_unchanged_by_the_general_shredder(tmp_path: Path) -> None:
    """The digest of a store file written by the store's former two-shape writer
    (arrow/nested.py and leveled_chunk), before the general shredder replaced it."""
    table = pa.table(
        {
            "obj_name": pa.array(["a", "b", "c"]),
            "mm": pa.array(
                [{"min": 1, "max": 2}, None, {"min": None, "max": 4}],
                pa.struct([("min", pa.int64()), ("max", pa.int64())]),
            ),
            "vl": pa.ListArray.from_arrays(
                pa.array([0, 2, 2, 3], pa.int32()), pa.array(["x", None, "z"])
            ),
            "bl": pa.array([b"1", b"", None]),
        }
    )
    name, size = write_store_file(tmp_path, table, '{"type":"struct"}', [("s1", 10)])
    data = (tmp_path / name).read_bytes()
    assert size == len(data) == 1686
    digest = "85353b629b8f1d5583e6da1a67f3d9105db05a050f014a290492827ac6909fc0"
    assert hashlib.sha256(data).hexdigest() == digest


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
