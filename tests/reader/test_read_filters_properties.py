"""Property tests: a pruned read equals the full read filtered with ``to_arrow``, exactly.

Random tables (NaN, -0.0, nulls, all-null runs, long strings whose bounds truncate, naive and
zoned timestamps, decimals, small and unsigned integers, dates, bools, dictionary columns), cut
into runs of one value, of nulls and of random values so that row groups and pages get every
kind of statistics; written by streamwrite (random row groups, pages of a few rows, dictionary
or not, data page v1/v2, bloom filters, truncated string statistics, sometimes encrypted) and by
pyarrow (page index, small pages, bloom filters); random filters (half of them, on a float
column, the shapes of pyarrow's traps: ``!=``/``not in`` with NaN, NOT, ``is_nan``, zero
signs). For each:

    ParquetFile.read(filters=f) == ParquetFile.read().filter(to_arrow(bind(f)))   same rows, order
    iter_batches(filters=f), read(columns, filters=f): the same rows

Examples per test: ``STREAMWRITE_READ_FILTER_EXAMPLES`` (default 60).
"""

from __future__ import annotations

import contextlib
import io
import os
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings

import streamwrite
from streamwrite.crypto import ExplicitKeys
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.errors import ConfigError
from streamwrite.predicate import Compare, Expr, IsIn, IsNan, Not, bind, to_arrow
from tests.predicate._strategies import filters, make_array, python_values
from tests.reader.test_read_filters import rows, same

EXAMPLES = int(os.environ.get("STREAMWRITE_READ_FILTER_EXAMPLES", "60"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
KEY = bytes(range(16))
TYPES = [
    pa.float64(),
    pa.float64(),
    pa.float32(),
    pa.float32(),
    pa.int8(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint32(),
    pa.uint64(),
    pa.string(),
    pa.large_string(),
    pa.binary(),
    pa.timestamp("ms"),
    pa.timestamp("us", "UTC"),
    pa.timestamp("ns", "Asia/Tokyo"),
    pa.decimal128(9, 2),
    pa.date32(),
    pa.bool_(),
    pa.dictionary(pa.int32(), pa.string()),
]


@st.composite
def column_values(draw: st.DrawFn, t: pa.DataType, num_rows: int) -> pa.Array:
    """``num_rows`` values in runs: nulls, one value, random picks from a small pool, sorted."""
    pool = draw(st.lists(python_values(t), min_size=1, max_size=6))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    values: list[Any] = []
    while len(values) < num_rows:
        size = int(rng.integers(1, 30))
        kind = rng.choice(["null", "same", "mixed", "mixed", "sorted"])
        if kind == "null":
            run: list[Any] = [None] * size
        elif kind == "same":
            run = [pool[int(rng.integers(len(pool)))]] * size
        else:
            run = [
                None if rng.random() < 0.2 else pool[int(k)]
                for k in rng.integers(0, len(pool), size)
            ]
            if kind == "sorted":
                present = [v for v in run if v is not None and v == v]  # no None, no NaN
                with contextlib.suppress(TypeError):
                    run = sorted(present) or run
        values += run
    return make_array(values[:num_rows], t)


@st.composite
def tables(draw: st.DrawFn) -> pa.Table:
    num_columns = draw(st.integers(1, 4))
    types = draw(st.lists(st.sampled_from(TYPES), min_size=num_columns, max_size=num_columns))
    num_rows = draw(st.integers(0, 150))
    columns = {f"c{k}": draw(column_values(t, num_rows)) for k, t in enumerate(types)}
    columns["row"] = pa.array(np.arange(num_rows, dtype=np.int64))
    return pa.table(columns)


def _bloom_columns(draw: st.DrawFn, table: pa.Table) -> list[str]:
    names = [f.name for f in table.schema if not pa.types.is_boolean(f.type)]
    return draw(st.lists(st.sampled_from(names), unique=True)) if names else []


@st.composite
def streamwrite_files(draw: st.DrawFn) -> tuple[pa.Table, bytes, DecryptionConfig | None]:
    table = draw(tables())
    options: dict[str, Any] = {
        "row_group_size": draw(st.integers(5, 60)),
        "data_page_row_limit": draw(st.integers(1, 20)),
        "use_dictionary": draw(st.booleans()),
        "data_page_version": draw(st.sampled_from(["1.0", "2.0"])),
        "statistics_truncate_length": draw(st.sampled_from([None, 3, 8])),
        "bloom_filter_options": dict.fromkeys(_bloom_columns(draw, table), True),
        "compression": draw(st.sampled_from(["none", "zstd"])),
    }
    decryption = None
    if draw(st.integers(0, 3)) == 0:
        keys = ExplicitKeys({"k": KEY}, "k", dict.fromkeys(table.column_names, "k"))
        options["encryption"] = FileEncryption(
            keys,
            algorithm=draw(st.sampled_from(["AES_GCM_V1", "AES_GCM_CTR_V1"])),
            plaintext_footer=draw(st.booleans()),
        )
        decryption = DecryptionConfig(keys)
    sink = io.BytesIO()
    streamwrite.write_table(table, sink, **options)
    return table, sink.getvalue(), decryption


@st.composite
def pyarrow_files(draw: st.DrawFn) -> tuple[pa.Table, bytes, DecryptionConfig | None]:
    table = draw(tables())
    sink = io.BytesIO()
    pq.write_table(
        table,
        sink,
        row_group_size=draw(st.integers(5, 60)),
        write_page_index=True,
        data_page_size=1,  # a page per write batch
        write_batch_size=draw(st.integers(1, 20)),
        use_dictionary=draw(st.booleans()),
        data_page_version=draw(st.sampled_from(["1.0", "2.0"])),
        bloom_filter_options={name: {} for name in _bloom_columns(draw, table)},
    )
    return table, sink.getvalue(), None


@st.composite
def trap_filters(draw: st.DrawFn, table: pa.Table) -> Expr:
    """The shapes engines get wrong (facts file section 4) on a float column, or any filter."""
    floats = [f.name for f in table.schema if pa.types.is_floating(f.type)]
    if not floats or draw(st.booleans()):
        return draw(filters(table))
    name = draw(st.sampled_from(floats))
    present = [v for v in table.column(name).to_pylist() if v is not None]
    value = draw(st.sampled_from(present)) if present else draw(python_values(pa.float64()))
    shapes: list[Expr] = [
        Compare(name, "!=", value),
        Not(IsIn(name, (value,))),
        Not(Compare(name, "<", value)),
        Not(Compare(name, "<=", value)),
        Not(Compare(name, ">=", value)),
        IsNan(name),
        Not(IsNan(name)),
        IsIn(name, (0.0,)),
        Compare(name, "==", -0.0),
        Compare(name, ">", value),
    ]
    return draw(st.sampled_from(shapes))


def _bound(expr: Expr, schema: pa.Schema) -> Expr | None:
    try:
        return bind(expr, schema)
    except ConfigError:
        return None


def _check(data: st.DataObject, made: tuple[pa.Table, bytes, DecryptionConfig | None]) -> None:
    table, raw, decryption = made
    pf = streamwrite.ParquetFile(raw, decryption=decryption)
    full = pf.read()
    assert rows(full) == rows(table)
    expr = data.draw(trap_filters(table))
    bound = _bound(expr, full.schema)
    if bound is None:  # a literal that does not compare with its column: refused, not guessed
        with pytest.raises(ConfigError):
            pf.read(filters=expr)
        return
    truth = full.filter(to_arrow(bound))
    got = pf.read(filters=expr)
    assert same(got, truth), (expr, got.column("row").to_pylist(), truth.column("row"))
    plan = pf.plan(expr)
    assert plan.num_rows_read >= truth.num_rows
    assert plan.num_pages_read <= plan.num_pages
    columns = data.draw(st.lists(st.sampled_from(table.column_names), min_size=1, unique=True))
    assert same(pf.read(columns, filters=expr), truth.select(columns))
    batch_size = data.draw(st.integers(1, 64))
    batches = list(pf.iter_batches(batch_size, columns=columns, filters=expr))
    assert all(b.num_rows == batch_size for b in batches[:-1])
    if batches:
        assert same(pa.Table.from_batches(batches), truth.select(columns))
    else:
        assert truth.num_rows == 0


@SETTINGS
@given(st.data(), streamwrite_files())
def test_pruned_read_equals_filtered_full_read_streamwrite(
    data: st.DataObject, made: tuple[pa.Table, bytes, DecryptionConfig | None]
) -> None:
    _check(data, made)


@SETTINGS
@given(st.data(), pyarrow_files())
def test_pruned_read_equals_filtered_full_read_pyarrow(
    data: st.DataObject, made: tuple[pa.Table, bytes, DecryptionConfig | None]
) -> None:
    _check(data, made)
