"""``_pm`` column descriptors of nested schemas: leaf paths and both max levels, checked
against the footer's schema tree."""

from __future__ import annotations

import dataclasses
import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.arrow.schema_check import check_sidecar_columns, leaf_elements
from streamwrite.errors import CorruptFileError
from streamwrite.format.sidecar.header import encode_header, read_header
from streamwrite.layout.appender import sidecar_header
from streamwrite.options import make_write_options

SCHEMA = pa.schema(
    [
        pa.field("ts", pa.timestamp("us"), nullable=False),
        pa.field("s", pa.struct([pa.field("a", pa.int64()), pa.field("b", pa.string(), False)])),
        pa.field("l", pa.large_list(pa.field("item", pa.float64(), False))),
        pa.field("f", pa.list_(pa.int16(), 3), nullable=False),
        pa.field("m", pa.map_(pa.string(), pa.list_(pa.int32()))),
        pa.field("nn", pa.list_(pa.list_(pa.struct([pa.field("x", pa.binary())])))),
    ]
)


def test_leaf_elements_agree_with_pyarrow_and_the_schema() -> None:
    schema = arrow_to_parquet(SCHEMA)
    leaves = leaf_elements(schema.elements)
    assert leaves is not None
    table = pa.table({f.name: pa.nulls(0, f.type) for f in SCHEMA}, schema=SCHEMA)
    sink = io.BytesIO()
    pq.write_table(table, sink)
    meta = pq.ParquetFile(pa.BufferReader(sink.getvalue())).schema
    pyarrow_leaves = [
        (
            meta.column(i).path,
            meta.column(i).max_definition_level,
            meta.column(i).max_repetition_level,
        )
        for i in range(len(meta))
    ]
    ours = [(name, max_def, max_rep) for name, _, max_def, max_rep in leaves]
    assert ours == pyarrow_leaves
    assert ours == [
        (spec.name, spec.max_definition_level, spec.max_repetition_level) for spec in schema.columns
    ]


def test_sidecar_header_carries_leaf_names_and_levels() -> None:
    schema = arrow_to_parquet(SCHEMA)
    options = make_write_options([c.path_in_schema for c in schema.columns])
    header = sidecar_header(schema, options)
    decoded, _ = read_header(encode_header(header) + bytes(8))
    assert [(c.name, c.max_def_level, c.max_rep_level) for c in decoded.columns] == [
        (spec.name, spec.max_definition_level, spec.max_repetition_level) for spec in schema.columns
    ]
    assert decoded.columns[-1].name == "nn.list.element.list.element.x"
    assert decoded.columns[-1].max_rep_level == 2
    check_sidecar_columns(schema.elements, decoded, 0)


def test_a_wrong_repetition_level_in_pm_is_corrupt() -> None:
    schema = arrow_to_parquet(SCHEMA)
    header = sidecar_header(schema, make_write_options([c.path_in_schema for c in schema.columns]))
    columns = list(header.columns)
    columns[4] = dataclasses.replace(columns[4], max_rep_level=0)
    bad = dataclasses.replace(header, columns=tuple(columns))
    with pytest.raises(CorruptFileError, match="max repetition level 1 in the footer"):
        check_sidecar_columns(schema.elements, bad, 0)


def test_a_flat_pm_for_a_nested_footer_is_corrupt() -> None:
    schema = arrow_to_parquet(SCHEMA)
    flat = arrow_to_parquet(pa.schema([pa.field("ts", pa.timestamp("us"), nullable=False)]))
    header = sidecar_header(flat, make_write_options(["ts"]))
    with pytest.raises(CorruptFileError, match="_pm describes"):
        check_sidecar_columns(schema.elements, header, 0)
