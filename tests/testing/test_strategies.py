"""streamwrite.testing.strategies: what it draws, the writer writes and every reader reads back.

The round trip is the strategies' contract (module docstring: "every value is one the writer
must accept"): a table of any drawn schema, written with any drawn options, reads back equal
through streamwrite, and pyarrow reads it as it reads its own file of that table (pyarrow maps
a few types differently on read, date64 to date32 for one).
``STREAMWRITE_STRATEGY_EXAMPLES`` sets max_examples (default 40).
"""

from __future__ import annotations

import io
import os
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st

import streamwrite
from streamwrite.testing.strategies import (
    WRITABLE_TYPES,
    arrays,
    record_batches,
    schemas,
    tables,
    write_options,
)

EXAMPLES = int(os.environ.get("STREAMWRITE_STRATEGY_EXAMPLES", "40"))


def _same(out: pa.Table, table: pa.Table) -> None:
    """Equal values and types; a dictionary column is compared decoded (unused entries go)."""
    assert out.schema == table.schema
    for name in table.column_names:
        got, want = out.column(name).combine_chunks(), table.column(name).combine_chunks()
        if pa.types.is_dictionary(want.type):
            got, want = got.dictionary_decode(), want.dictionary_decode()
        assert got.equals(want), name


@settings(max_examples=EXAMPLES)
@given(table=tables(), options=write_options())
def test_drawn_tables_round_trip_with_drawn_options(
    table: pa.Table, options: dict[str, Any]
) -> None:
    sink = io.BytesIO()
    streamwrite.write_table(table, sink, **options)
    data = sink.getvalue()
    _same(streamwrite.read_table(data), table)
    theirs = io.BytesIO()
    pq.write_table(table, theirs)
    _same(
        pq.read_table(pa.BufferReader(data), page_checksum_verification=True),
        pq.read_table(pa.BufferReader(theirs.getvalue())),
    )


@settings(max_examples=EXAMPLES)
@given(batch=record_batches(max_rows=10))
def test_record_batches_have_the_drawn_schema(batch: pa.RecordBatch) -> None:
    batch.validate(full=True)
    assert [f.name for f in batch.schema] == [f"c{i}" for i in range(batch.num_columns)]
    for field, column in zip(batch.schema, batch.columns, strict=True):
        assert column.type == field.type
        assert field.nullable or column.null_count == 0


@settings(max_examples=EXAMPLES)
@given(data=st.data(), schema=schemas(min_columns=2, max_columns=3))
def test_tables_of_a_given_schema_keep_it(data: st.DataObject, schema: pa.Schema) -> None:
    table = data.draw(tables(schema, min_rows=3, max_rows=5))
    table.validate(full=True)
    assert table.schema == schema and 3 <= table.num_rows <= 5


@pytest.mark.parametrize("dtype", WRITABLE_TYPES, ids=str)
def test_arrays_reach_offsets_nulls_and_all_null(dtype: pa.DataType) -> None:
    """The cases writers get wrong are drawn for every type: a non-zero offset with nulls, a
    column of only nulls, and a required column (no nulls at all)."""
    once = settings(max_examples=500, database=None, phases=[Phase.generate, Phase.shrink])
    sliced = find(
        arrays(dtype, min_size=1), lambda a: a.offset > 0 and a.null_count > 0, settings=once
    )
    assert sliced.type == dtype
    all_null = find(arrays(dtype, min_size=2), lambda a: a.null_count == len(a), settings=once)
    assert all_null.type == dtype
    required = find(arrays(dtype, nullable=False), lambda a: len(a) > 0, settings=once)
    assert required.null_count == 0


def test_dictionary_arrays_with_more_values_than_their_index_type_reaches() -> None:
    """int8 indices reach 127 values: a drawn column with more folds them (it used to raise
    'Integer value 128 not in range' in the nested round trips)."""
    from streamwrite.testing.strategies import _make_array

    dtype = pa.dictionary(pa.int8(), pa.large_string())
    values = [None if i % 7 == 0 else f"v{i}" for i in range(400)]
    array = _make_array(dtype, values)
    assert array.type == dtype and len(array) == 400
    assert array.null_count == sum(v is None for v in values)
    assert len(array.dictionary) == 127
