"""write_table / ParquetWriter with nested columns, read by pyarrow (page checksums verified).

A file read back equals its input when, for every field, the per-value Dremel reference
(``streamwrite.testing.dremel``) shreds the read column and the input column into the same
levels and the same leaf values: pyarrow does not restore a list's item name, and refuses to
write (or cast) a REQUIRED child holding nulls under a null parent, which Arrow allows and we
write, so ``Table.equals`` cannot compare every drawn table. Where pyarrow writes the table too,
our file also reads back with the schema and the values of pyarrow's own file.
``STREAMWRITE_HYPOTHESIS_EXAMPLES`` sets max_examples (default 40).
"""

from __future__ import annotations

import decimal
import io
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamwrite
from streamwrite.testing.dremel import reference_shred
from streamwrite.testing.strategies import WRITABLE_TYPES, nested_tables, write_options

EXAMPLES = int(os.environ.get("STREAMWRITE_HYPOTHESIS_EXAMPLES", "40"))


def _has_dictionary(dtype: pa.DataType) -> bool:
    if pa.types.is_dictionary(dtype):
        return True
    return any(_has_dictionary(dtype.field(i).type) for i in range(dtype.num_fields))


def _leaf_values(array: pa.Array) -> pa.Array:
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if isinstance(array.type, pa.BaseExtensionType):
        array = array.storage
    return array


PYARROW_FIXED_SIZE_LIMIT = "Expected all lists to be of size="
"""pyarrow 26 cannot read a REQUIRED fixed_size_list under a null parent, from its own files
either (it builds the null parent's slot with no elements, then refuses the list length)."""


def assert_reads_back(data: bytes, table: pa.Table) -> pa.Table | None:
    """pyarrow reads ``data`` (checksums verified) as ``table``; returns what it read (None
    when pyarrow cannot read the shape, which it cannot read from its own file either)."""
    theirs = io.BytesIO()
    ref: pa.Table | None = None
    try:
        pq.write_table(table, theirs)
        ref = pq.read_table(pa.BufferReader(theirs.getvalue()))
    except pa.ArrowNotImplementedError:  # pyarrow cannot slice views inside lists
        pass
    except pa.ArrowInvalid as exc:  # a REQUIRED child holds nulls under a null parent
        if "non-nullable" not in str(exc) and PYARROW_FIXED_SIZE_LIMIT not in str(exc):
            raise
    try:
        back = pq.read_table(pa.BufferReader(data), page_checksum_verification=True)
    except pa.ArrowInvalid as exc:
        if PYARROW_FIXED_SIZE_LIMIT in str(exc):
            return None
        raise
    assert back.num_rows == table.num_rows
    assert back.column_names == table.column_names
    for i, field in enumerate(table.schema):
        ours = reference_shred(back.column(i), back.schema.field(i))
        want = reference_shred(table.column(i), field)
        assert len(ours) == len(want)
        for got, exp in zip(ours, want, strict=True):
            assert got.def_levels == exp.def_levels, exp.path
            assert got.rep_levels == exp.rep_levels, exp.path
            got_values, exp_values = _leaf_values(got.values), _leaf_values(exp.values)
            if not exp_values.type.equals(got_values.type):  # date64 reads as date32...
                exp_values = exp_values.cast(got_values.type)
            assert got_values.equals(exp_values), exp.path
    if ref is not None:
        assert back.schema == ref.schema
        for got_column, exp_column in zip(back.columns, ref.columns, strict=True):
            if not _has_dictionary(exp_column.type):  # unused entries may differ
                assert got_column.equals(exp_column)
    return back


def _write(table: pa.Table, **options: Any) -> bytes:
    sink = io.BytesIO()
    streamwrite.write_table(table, sink, **options)
    return sink.getvalue()


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(table=nested_tables(), options=write_options())
def test_drawn_nested_tables_read_back_equal(table: pa.Table, options: dict[str, Any]) -> None:
    assert_reads_back(_write(table, **options), table)


def _kinds_schema(dtype: pa.DataType) -> pa.Schema:
    """Every nesting kind over ``dtype``."""
    return pa.schema(
        {
            "l": pa.list_(pa.field("item", dtype)),
            "ll": pa.large_list(pa.field("item", dtype, nullable=False)),
            "f": pa.list_(pa.field("item", dtype), 2),
            "s": pa.struct([pa.field("a", dtype), pa.field("b", pa.list_(dtype), nullable=False)]),
            "m": pa.map_(pa.string(), pa.field("value", dtype)),
            "ls": pa.list_(pa.struct([pa.field("x", pa.list_(dtype))])),
        }
    )


TYPE_OPTIONS = [
    {"data_page_version": "1.0", "use_dictionary": True, "compression": "zstd"},
    {"data_page_version": "2.0", "use_dictionary": False, "compression": "snappy"},
    {
        "data_page_version": "2.0",
        "use_dictionary": True,
        "compression": "snappy",
        "data_page_row_limit": 3,
        "row_group_size": 7,
    },
    {
        "data_page_version": "1.0",
        "use_dictionary": False,
        "data_page_size": 64,
        "row_group_size": 9,
    },
]


TYPE_EXAMPLES = int(os.environ.get("STREAMWRITE_NESTED_TYPE_EXAMPLES", "3"))


@pytest.mark.parametrize("dtype", WRITABLE_TYPES, ids=str)
@settings(max_examples=TYPE_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_leaf_type_in_every_nesting_reads_back(
    dtype: pa.DataType, data: st.DataObject
) -> None:
    table = data.draw(nested_tables(_kinds_schema(dtype), min_rows=10, max_rows=20))
    for options in TYPE_OPTIONS:
        written = _write(table, **options)
        assert_reads_back(written, table)
        meta = pq.ParquetFile(pa.BufferReader(written)).metadata
        if "row_group_size" in options:
            assert meta.num_row_groups == -(-table.num_rows // options["row_group_size"])


def test_many_pages_and_row_groups_cut_at_record_starts() -> None:
    values = [[[i, None], [], None] if i % 3 else None for i in range(3000)]
    dtype = pa.list_(pa.list_(pa.int64()))
    table = pa.table({"n": pa.array(values, dtype), "i": pa.array(range(3000), pa.int64())})
    for version in ("1.0", "2.0"):
        data = _write(
            table,
            data_page_version=version,
            data_page_row_limit=100,
            row_group_size=1000,
            use_dictionary=False,
            compression="zstd",
        )
        assert_reads_back(data, table)
        meta = pq.ParquetFile(pa.BufferReader(data)).metadata
        assert meta.num_row_groups == 3
        column = meta.row_group(0).column(0)
        assert column.path_in_schema == "n.list.element.list.element"
        pages = pq.ParquetFile(pa.BufferReader(data)).metadata.row_group(0).column(0)
        assert pages.num_values == sum(max(1, 3 if i % 3 else 1) for i in range(1000)) + sum(
            1 for i in range(1000) if i % 3
        )


def test_parquet_writer_batches_and_required_nulls_refused_before_writing() -> None:
    dtype = pa.struct([pa.field("a", pa.list_(pa.field("item", pa.int32(), False)))])
    good = pa.table({"s": pa.array([{"a": [1, 2]}, None, {"a": None}], dtype)})
    bad = pa.table({"s": pa.array([{"a": [1]}, {"a": [None]}], dtype)})
    sink = io.BytesIO()
    with streamwrite.ParquetWriter(sink, good.schema) as writer:
        writer.write_table(good)
        with pytest.raises(streamwrite.SchemaError, match=r"'s\.a\.list\.element' is REQUIRED"):
            writer.write_table(pa.concat_tables([good, bad]), row_group_size=1)
        writer.write_table(good)
    back = assert_reads_back(sink.getvalue(), pa.concat_tables([good, good]))
    assert back is not None and pq.ParquetFile(pa.BufferReader(sink.getvalue())).num_row_groups == 2


def test_embedded_index_on_a_nested_column_is_a_config_error() -> None:
    table = pa.table({"s": pa.array([{"a": 1}], pa.struct([("a", pa.int64())])), "t": [1]})
    with pytest.raises(streamwrite.ConfigError, match="not a flat top-level column"):
        _write(table, embedded_index={"s.a": ["distinct"]})
    with pytest.raises(streamwrite.ConfigError, match="does not have"):
        _write(table, embedded_index={"s": ["distinct"]})
    data = _write(table, embedded_index={"t": ["distinct"]})  # a flat column beside it
    assert_reads_back(data, table)


def test_embedded_index_parts_go_to_the_flat_column_leaf_after_nested_fields() -> None:
    from streamwrite.arrow.schema import arrow_to_parquet
    from streamwrite.encode import encode_row_group, index_part
    from streamwrite.options import make_write_options

    dtype = pa.struct([("a", pa.int64()), ("b", pa.list_(pa.string()))])
    table = pa.table(
        {"s": pa.array([{"a": 1, "b": ["x"]}, None], dtype), "t": [5, 7], "u": ["p", "q"]}
    )
    schema = arrow_to_parquet(table.schema)
    names = [c.name for c in schema.columns]
    options = make_write_options(names, embedded_index={"t": ["distinct"], "u": ["distinct"]})
    chunks = encode_row_group(table, schema, options)
    assert [tuple(c.meta_data.path_in_schema) for c in chunks] == [
        ("s", "a"),
        ("s", "b", "list", "element"),
        ("t",),
        ("u",),
    ]
    assert [c.index_part is not None for c in chunks] == [False, False, True, True]
    by_spec = {spec.name: spec for spec in options.embedded_index}
    assert chunks[2].index_part == index_part(table.column("t"), by_spec["t"])
    assert chunks[3].index_part == index_part(table.column("u"), by_spec["u"])


class _Point(pa.ExtensionType):
    def __init__(self) -> None:
        super().__init__(pa.struct([("x", pa.float64()), ("y", pa.float64())]), "test.point")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> _Point:
        return cls()


def test_extension_of_a_nested_storage_type_is_written_as_its_storage() -> None:
    storage = pa.array([{"x": 1.0, "y": None}, None, {"x": 3.0, "y": 4.0}], _Point().storage_type)
    points = pa.ExtensionArray.from_storage(_Point(), storage)
    table = pa.table({"p": points, "lp": pa.array([[1], None, []], pa.list_(pa.int8()))})
    back = pq.read_table(pa.BufferReader(_write(table)), page_checksum_verification=True)
    assert back.column("p").to_pylist() == storage.to_pylist()


def test_a_nested_value_beyond_its_type_is_refused_before_any_row_group() -> None:
    wide = pa.array([decimal.Decimal("1.00"), decimal.Decimal("123456.00")], pa.decimal128(12, 2))
    beyond = pa.Array.from_buffers(pa.decimal128(5, 2), 2, wide.buffers())  # 123456.00 > 5 digits
    lists = pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), beyond)
    table = pa.table({"i": [1, 2], "d": lists})
    sink = io.BytesIO()
    with streamwrite.ParquetWriter(sink, table.schema) as writer:
        with pytest.raises(streamwrite.SchemaError, match=r"'d\.list\.element'"):
            writer.write_table(table, row_group_size=1)
        writer.write_table(table.slice(0, 0))
    assert pq.ParquetFile(pa.BufferReader(sink.getvalue())).metadata.num_row_groups == 0


def test_encrypted_nested_files_read_by_pyarrow(tmp_path: Path) -> None:
    """Per-leaf column keys named by dotted path (footer encrypted and plaintext, v1 and v2
    pages, several row groups): pyarrow with the KMS reads the file equal to the input."""
    from pyarrow import feather

    from tests.crypto.test_writer_encryption import Case, _job, run_pyarrow

    element = pa.field("element", pa.string())
    table = pa.table(
        {
            "l": pa.array([["a", None], None, [], ["b"]] * 50, pa.list_(element)),
            "s": pa.array(
                [{"x": 1, "y": [1.5]}, None, {"x": None, "y": []}, {"x": 4, "y": None}] * 50,
                pa.struct([("x", pa.int64()), ("y", pa.list_(pa.field("element", pa.float64())))]),
            ),
            "m": pa.array(
                [[("k", 1)], [], None, [("a", None)]] * 50, pa.map_(pa.string(), pa.int32())
            ),
        }
    )
    expected = tmp_path / "expected.feather"
    feather.write_feather(table, expected)
    keys = {"l.list.element": "kc", "s.y.list.element": "kd", "m.key_value.value": "kc"}
    jobs = []
    for pf in (False, True):
        for version in ("1.0", "2.0"):
            case = Case(
                f"nested-{pf}-{version}",
                plaintext_footer=pf,
                column_keys=keys,
                footer_key_columns=("s.x", "m.key_value.key"),
                page_version=version,
            )
            encryption, _ = case.encryption()
            path = tmp_path / f"{case.name}.parquet"
            streamwrite.write_table(
                table,
                path,
                encryption=encryption,
                data_page_version=version,
                row_group_size=70,
                data_page_row_limit=16,
            )
            jobs.append(_job(case.name, path, expected, verify_checksums=True))
    results = run_pyarrow(tmp_path, jobs)
    assert results == {job["name"]: "ok" for job in jobs}


def test_readme_nested_snippet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    # --- README: nested columns
    import pyarrow as pa

    import streamwrite

    table = pa.table(
        {
            "tags": pa.array([["a", "b"], [], None], pa.list_(pa.string())),
            "point": pa.array(
                [{"x": 1.0, "y": 2.0}, None, {"x": 3.0, "y": None}],
                pa.struct([("x", pa.float64()), ("y", pa.float64())]),
            ),
            "attrs": pa.array([[("k", "v")], None, []], pa.map_(pa.string(), pa.string())),
        }
    )
    # options name leaf columns by their dotted Parquet path
    streamwrite.write_table(
        table,
        "nested.parquet",
        column_encoding={"point.x": "BYTE_STREAM_SPLIT"},
        bloom_filter_options={"tags.list.element": True},
    )
    # --- end
    meta = pq.ParquetFile("nested.parquet").metadata
    paths = [meta.row_group(0).column(i).path_in_schema for i in range(meta.num_columns)]
    assert paths == [
        "tags.list.element",
        "point.x",
        "point.y",
        "attrs.key_value.key",
        "attrs.key_value.value",
    ]
    assert "BYTE_STREAM_SPLIT" in meta.row_group(0).column(1).encodings
    assert meta.row_group(0).column(0).bloom_filter_offset is not None
    assert (
        pq.read_table("nested.parquet").column("point").to_pylist()
        == table.column("point").to_pylist()
    )


def test_the_encoding_planner_keeps_a_nested_leafs_decision() -> None:
    from streamwrite.arrow.schema import arrow_to_parquet
    from streamwrite.encode import EncodingPlanner, encode_row_group
    from streamwrite.options import make_write_options

    table = pa.table({"l": pa.array([[i, i + 1] for i in range(1000)], pa.list_(pa.int64()))})
    schema = arrow_to_parquet(table.schema)
    options = make_write_options([c.name for c in schema.columns])
    planner = EncodingPlanner()
    for _ in range(3):
        encode_row_group(table, schema, options, planner=planner)
    assert planner.decision(("l", "list", "element")) is not None
    assert planner.num_analysed == 1  # the first chunk only: the others followed its decision
    assert planner.settings(schema.columns[0], options).decision is not None
