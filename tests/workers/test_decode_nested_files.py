"""Decoding nested leaves of real files: pyarrow-written tables and parquet-testing vectors.

Every leaf column chunk is decoded from the file's bytes with ``decode_chunk`` (the footer read
with our Thrift codec, the leaves' maximum levels from its schema) and compared with what the
writer meant: a per-value reference shredder (the Dremel algorithm, tests only) over the Arrow
table pyarrow reads gives each leaf's repetition levels, definition levels and values. Where
the Arrow schema does not map 1:1 onto the Parquet leaves, the values are still compared when
the leaves line up, and always the records and level entries. Page-index reads
(``decode_pages`` over pyarrow's OffsetIndex) return the levels of the pages they select.
"""

from __future__ import annotations

import itertools
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streamwrite.errors import LimitError
from streamwrite.format import structs as t
from streamwrite.format.enums import PageType
from streamwrite.format.thrift.codec import deserialize
from tests._vectors import PARQUET_TESTING
from tests.workers._decode_nested_reference import (
    LIMIT,
    as_list,
    check_file,
    decode_leaf,
    footer,
    leaves_of,
    nested_table,
    row_groups,
    same_values,
)
from workers.decode_pages import PageSlice, decode_pages

DATA = PARQUET_TESTING / "data"

PYARROW_CASES = [
    pytest.param(
        version, dictionary, codec, id=f"v{version}-{'dict' if dictionary else 'plain'}-{codec}"
    )
    for version in ("1.0", "2.0")
    for dictionary in (True, False)
    for codec in ("snappy", "zstd", "none")
]


def write(path: Path, table: pa.Table, version: str, dictionary: bool, codec: str) -> None:
    pq.write_table(
        table,
        path,
        data_page_version=version,
        use_dictionary=dictionary,
        compression=codec,
        write_page_index=True,
        data_page_size=512,
        write_batch_size=64,
        row_group_size=700,
    )


@pytest.mark.parametrize(("version", "dictionary", "codec"), PYARROW_CASES)
def test_pyarrow_nested_files_decode_to_their_levels(
    tmp_path: Path, version: str, dictionary: bool, codec: str
) -> None:
    path = tmp_path / "nested.parquet"
    table = nested_table(1500, seed=zlib.crc32(f"{version}{dictionary}{codec}".encode()))
    write(path, table, version, dictionary, codec)
    outcome = check_file(path)
    leaves = len(leaves_of(footer(path.read_bytes())))
    assert outcome.leaves == 3 * leaves  # three row groups
    assert outcome.levels_compared == outcome.values_compared == outcome.leaves
    data = path.read_bytes()
    pages = [
        p
        for i, rg in row_groups(data)
        for j, leaf in enumerate(leaves_of(footer(data)))
        for p in decode_leaf(data, rg, j, leaf)[0].pages
        if p.page_type != PageType.DICTIONARY_PAGE
    ]
    assert len(pages) > 3 * leaves  # several pages per chunk
    if version == "2.0":
        assert {p.page_type for p in pages} == {PageType.DATA_PAGE_V2}


@pytest.mark.parametrize(("version", "dictionary", "codec"), PYARROW_CASES[::3])
def test_page_index_reads_select_whole_records(
    tmp_path: Path, version: str, dictionary: bool, codec: str
) -> None:
    """Every other page of each nested chunk, read through pyarrow's OffsetIndex, decodes to
    exactly those pages' entries of the whole chunk; the pages' records and nulls are what
    pyarrow's OffsetIndex and ColumnIndex say."""
    path = tmp_path / "nested.parquet"
    write(path, nested_table(1500, seed=7), version, dictionary, codec)
    data = path.read_bytes()
    leaves = leaves_of(footer(data))
    checked = 0
    for i, rg in row_groups(data):
        for j, leaf in enumerate(leaves):
            whole, meta, start = decode_leaf(data, rg, j, leaf)
            column = (rg.columns or [])[j]
            assert column.offset_index_offset is not None
            index, _ = deserialize(
                t.OffsetIndex,
                data[
                    column.offset_index_offset : column.offset_index_offset
                    + (column.offset_index_length or 0)
                ],
            )
            locations = index.page_locations or []
            firsts = [loc.first_row_index or 0 for loc in locations] + [rg.num_rows or 0]
            data_pages = [p for p in whole.pages if p.page_type != PageType.DICTIONARY_PAGE]
            assert len(data_pages) == len(locations)
            assert [p.num_rows for p in data_pages] == [
                b - a for a, b in itertools.pairwise(firsts)
            ]
            assert column.column_index_offset is not None
            column_index, _ = deserialize(
                t.ColumnIndex,
                data[
                    column.column_index_offset : column.column_index_offset
                    + (column.column_index_length or 0)
                ],
            )
            # pyarrow's page null counts are the entries below the maximum definition level
            assert column_index.null_counts == [p.num_nulls for p in data_pages]
            assert column_index.null_pages == [p.num_nulls == p.num_values for p in data_pages]
            bounds = np.concatenate([[0], np.cumsum([p.num_values for p in data_pages])])
            chosen = list(range(i % 2, len(locations), 2))
            slices = []
            for k in chosen:
                loc = locations[k]
                offset, size = loc.offset or 0, loc.compressed_page_size or 0
                slices.append(
                    PageSlice(data[offset : offset + size], offset, k, firsts[k + 1] - firsts[k])
                )
            prefix_end = (locations[0].offset or 0) if locations else start
            got = decode_pages(
                data[start:prefix_end],
                start,
                slices,
                meta,
                type_length=leaf.type_length,
                max_definition_level=leaf.max_def,
                max_repetition_level=leaf.max_rep,
                verify_checksums=True,
                max_decompressed_page_size=LIMIT,
                where=f"Column {'.'.join(leaf.path)!r} of row group {i}",
                dictionary_first=meta.dictionary_page_offset == start,
            )
            entries = np.concatenate(
                [np.arange(bounds[k], bounds[k + 1]) for k in chosen] or [np.zeros(0, np.int64)]
            ).astype(np.int64)
            if leaf.max_def:
                assert whole.def_levels is not None and got.def_levels is not None
                assert np.array_equal(got.def_levels, whole.def_levels[entries])
            if leaf.max_rep:
                assert whole.rep_levels is not None and got.rep_levels is not None
                assert np.array_equal(got.rep_levels, whole.rep_levels[entries])
                assert int(got.rep_levels[0]) == 0 if entries.size else True
            defined = (
                np.ones(whole.num_levels, bool)
                if whole.def_levels is None
                else whole.def_levels == leaf.max_def
            )
            first_value = np.cumsum(defined) - defined
            want_values = as_list(whole.values)
            kept = [want_values[int(first_value[e])] for e in entries if defined[e]]
            assert same_values(as_list(got.values), kept)
            assert got.num_rows == sum(firsts[k + 1] - firsts[k] for k in chosen)
            checked += leaf.max_rep > 0
    assert checked > 0


# --- parquet-testing ------------------------------------------------------------------------

NESTED_VECTORS = {
    # "pyarrow": compared with the reference shredder over pyarrow's table; "records": pyarrow
    # cannot read it, records and level entries are checked; "limit": over the page limit.
    "datapage_v2.snappy.parquet": "pyarrow",
    "incorrect_map_schema.parquet": "records",  # pyarrow: map keys must be required
    "large_string_map.brotli.parquet": "limit",  # a 1 GiB dictionary page
    "list_columns.parquet": "pyarrow",
    "map_no_value.parquet": "pyarrow",
    "nested_lists.snappy.parquet": "pyarrow",
    "nested_maps.snappy.parquet": "pyarrow",
    "nested_structs.rust.parquet": "pyarrow",
    "nonnullable.impala.parquet": "pyarrow",
    "null_list.parquet": "pyarrow",
    "nullable.impala.parquet": "pyarrow",
    "nulls.snappy.parquet": "pyarrow",
    "old_list_structure.parquet": "pyarrow",
    "repeated_no_annotation.parquet": "pyarrow",
    "repeated_primitive_no_list.parquet": "pyarrow",
}


def test_every_nested_vector_is_listed() -> None:
    """The vectors above are every parquet-testing file with a nested leaf."""
    nested = set()
    for path in sorted(DATA.glob("*.parquet")):
        try:
            meta = footer(path.read_bytes())
        except Exception:
            continue
        if meta.schema is None:
            continue
        if any(len(leaf.path) > 1 or leaf.max_rep for leaf in leaves_of(meta)):
            nested.add(path.name)
    assert nested == set(NESTED_VECTORS)


@pytest.mark.parametrize("name", sorted(NESTED_VECTORS))
def test_nested_vector_decodes_like_pyarrow(name: str) -> None:
    kind = NESTED_VECTORS[name]
    if kind == "limit":
        with pytest.raises(LimitError, match="max_decompressed_page_size"):
            check_file(DATA / name, reference=False)
        return
    outcome = check_file(DATA / name, reference=kind == "pyarrow")
    assert outcome.leaves > 0
    if kind == "pyarrow":
        assert outcome.levels_compared == outcome.values_compared == outcome.leaves


# --- other writers ----------------------------------------------------------------------------


@pytest.mark.parametrize("writer", ["duckdb-v1", "duckdb-v2", "polars"])
def test_other_writers_nested_files_decode_to_their_levels(tmp_path: Path, writer: str) -> None:
    """DuckDB and polars write the same nested table (their own mapping of its types);
    every leaf decodes to the levels and values of pyarrow's reading of their file."""
    import duckdb
    import polars as pl

    table = nested_table(800, seed=11)
    path = tmp_path / f"{writer}.parquet"
    if writer == "polars":
        frame = pl.from_arrow(table.drop_columns(["m"]))  # polars has no map type
        assert isinstance(frame, pl.DataFrame)
        frame.write_parquet(path, data_page_size=512, compression="zstd")
    else:
        table = table.drop_columns(["fsl"])  # see test_duckdb_fixed_size_list_null_slots
        con = duckdb.connect()
        con.register("t", table)
        version = "V2" if writer.endswith("v2") else "V1"
        con.execute(
            f"COPY t TO '{path}' (FORMAT parquet, COMPRESSION snappy, "
            f"PARQUET_VERSION {version}, ROW_GROUP_SIZE 300)"
        )
        con.close()
    outcome = check_file(path)
    assert outcome.leaves >= len(leaves_of(footer(path.read_bytes())))
    assert outcome.levels_compared == outcome.values_compared == outcome.leaves


def test_duckdb_fixed_size_list_null_slots(tmp_path: Path) -> None:
    """DuckDB writes a null fixed_size_list slot of size 3 as three entries ``rep 0 1 1``,
    ``def 0 0 0`` (a null list with repeated entries, which pyarrow refuses to read: "Length
    spanned by list offsets larger than values array"). The decoder returns those levels as
    stored; what they mean is the assembly's business."""
    import duckdb

    values = [[1, 2, 3], None, [4, None, 6]]
    table = pa.table({"fsl": pa.array(values, pa.list_(pa.int32(), 3))})
    path = tmp_path / "duckdb_fsl.parquet"
    con = duckdb.connect()
    con.register("t", table)
    con.execute(f"COPY t TO '{path}' (FORMAT parquet)")
    con.close()
    data = path.read_bytes()
    meta = footer(data)
    (leaf,) = leaves_of(meta)
    assert (leaf.max_def, leaf.max_rep) == (3, 1)
    decoded, _, _ = decode_leaf(data, (meta.row_groups or [])[0], 0, leaf)
    assert decoded.rep_levels is not None and decoded.def_levels is not None
    assert decoded.rep_levels.tolist() == [0, 1, 1] * 3
    assert decoded.def_levels.tolist() == [3, 3, 3, 0, 0, 0, 3, 2, 3]
    assert as_list(decoded.values) == [1, 2, 3, 4, 6]
    assert decoded.num_rows == 3
