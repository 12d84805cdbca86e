"""Round trips of random nested data: the shredders (vectorised and per-value reference) into
``assemble``, and our writer into our reader (every page version, dictionary or not, page
index, small pages and row groups, and ``iter_batches``). Whether pyarrow reads our nested
files is the writer's interop matrix (tests/interop).
"""

from __future__ import annotations

import io
import os
from dataclasses import replace

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamwrite
from streamwrite.arrow.assemble import assemble
from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.arrow.shred import LeafData, shred
from streamwrite.arrow.values import to_physical
from streamwrite.reader.file import ParquetFile
from streamwrite.testing.dremel import reference_shred
from streamwrite.testing.strategies import nested_arrays, nested_tables, nested_types

EXAMPLES = int(os.environ.get("STREAMWRITE_NESTED_ROUNDTRIP_EXAMPLES", "60"))
_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _plain_type(dtype: pa.DataType) -> pa.DataType:
    """``dtype`` with temporal leaves as integers and dictionaries decoded: values that
    ``to_pylist`` can always convert (nanoseconds and far dates cannot become datetimes)."""
    if isinstance(dtype, pa.BaseExtensionType):
        return _plain_type(dtype.storage_type)
    if pa.types.is_dictionary(dtype):
        return _plain_type(dtype.value_type)
    if pa.types.is_struct(dtype):
        return pa.struct([f.with_nullable(True).with_type(_plain_type(f.type)) for f in dtype])
    if pa.types.is_map(dtype):
        return pa.map_(
            dtype.key_field.with_type(_plain_type(dtype.key_type)),
            dtype.item_field.with_nullable(True).with_type(_plain_type(dtype.item_type)),
            keys_sorted=dtype.keys_sorted,
        )
    if pa.types.is_fixed_size_list(dtype):
        return pa.list_(
            dtype.value_field.with_nullable(True).with_type(_plain_type(dtype.value_type)),
            dtype.list_size,
        )
    if pa.types.is_large_list(dtype):
        return pa.large_list(
            dtype.value_field.with_nullable(True).with_type(_plain_type(dtype.value_type))
        )
    if pa.types.is_list(dtype):
        return pa.list_(
            dtype.value_field.with_nullable(True).with_type(_plain_type(dtype.value_type))
        )
    if pa.types.is_date32(dtype) or pa.types.is_time32(dtype):
        return pa.int32()
    if pa.types.is_temporal(dtype):
        return pa.int64()
    return dtype


def _values(data: pa.Array | pa.ChunkedArray | pa.Table) -> object:
    """Python values of ``data`` (columns of a table) for comparison."""
    if isinstance(data, pa.Table):
        return {name: _values(data.column(name)) for name in data.column_names}
    if isinstance(data, pa.ChunkedArray):
        data = data.combine_chunks() if data.num_chunks else pa.array([], data.type)
    plain = _plain_type(data.type)
    if isinstance(data.type, pa.BaseExtensionType):
        data = data.storage
    if str(plain) == str(data.type):
        return data.to_pylist()
    return data.cast(plain).to_pylist()


@st.composite
def _fields_and_arrays(draw: st.DrawFn) -> tuple[pa.Field, pa.Array]:
    dtype = draw(nested_types())
    nullable = draw(st.booleans())
    array = draw(nested_arrays(dtype, nullable, max_size=15))
    return pa.field("c", dtype, nullable), array


@_SETTINGS
@given(_fields_and_arrays())
def test_assemble_inverts_the_shredders(case: tuple[pa.Field, pa.Array]) -> None:
    field, array = case
    schema = arrow_to_parquet(pa.schema([field]))
    node = schema.fields[0]
    result = assemble(node, shred(array, node, schema.columns), schema.columns, validate=True)
    result.validate(full=True)
    assert str(result.type) == str(array.type)
    assert _values(result) == _values(array)
    # the per-value reference shredder of streamwrite.testing gives the same levels
    leaves = []
    for spec, ref in zip(
        schema.columns[node.leaf_start : node.leaf_stop], reference_shred(array, field), strict=True
    ):
        flat = replace(spec, max_definition_level=1, field=spec.field.with_nullable(True))
        values = to_physical(ref.values, flat).values
        leaves.append(
            LeafData(
                values,
                pa.array(ref.def_levels, pa.uint8()).to_numpy()
                if spec.max_definition_level
                else None,
                pa.array(ref.rep_levels, pa.uint8()).to_numpy()
                if spec.max_repetition_level
                else None,
                len(array),
            )
        )
    again = assemble(node, leaves, schema.columns, validate=True)
    assert _values(again) == _values(array)


@_SETTINGS
@given(
    nested_tables(max_rows=40),
    st.sampled_from(["1.0", "2.0"]),
    st.booleans(),
    st.booleans(),
    st.integers(1, 25),
)
def test_our_writer_to_our_reader(
    table: pa.Table, page_version: str, dictionary: bool, page_index: bool, row_group_size: int
) -> None:
    buf = io.BytesIO()
    streamwrite.write_table(
        table,
        buf,
        row_group_size=row_group_size,
        data_page_size=64,
        data_page_version=page_version,
        use_dictionary=dictionary,
        write_page_index=page_index,
    )
    raw = buf.getvalue()
    ours = streamwrite.read_table(raw)
    assert ours.schema.equals(table.schema)
    assert [str(f.type) for f in ours.schema] == [str(f.type) for f in table.schema]
    assert _values(ours) == _values(table)
    with ParquetFile(raw) as pf:
        batches = list(pf.iter_batches(batch_size=7))
        assert sum(b.num_rows for b in batches) == table.num_rows
        if batches:
            assert _values(pa.Table.from_batches(batches)) == _values(table)
