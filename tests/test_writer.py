"""The single-file writer: options, page splitting, dictionary fallback, metadata, checksums."""

from __future__ import annotations

import io
import pickle
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.errors import ConfigError, SchemaError, UnsupportedError
from streamwrite.format import structs as t
from streamwrite.format.enums import Encoding, PageType
from streamwrite.format.thrift.codec import deserialize
from streamwrite.testing import reference_table
from workers.bloom import SplitBlockBloomFilter, hash_values
from workers.values import BinaryValues


def _write(table: pa.Table, **options: object) -> bytes:
    sink = io.BytesIO()
    streamwrite.write_table(table, sink, **options)
    return sink.getvalue()


def _pages(data: bytes, column: int = 0, row_group: int = 0) -> list[tuple[int, int, int]]:
    """(page_type, encoding, num_rows) of every page of one chunk, read with our decoder."""
    pf = streamwrite.ParquetFile(data)
    spec = pf._parquet_schema.columns[column]
    decoded = pf._decode_column_chunk(row_group, spec)
    chunk = pf.thrift_metadata.row_groups[row_group].columns[column].meta_data
    assert chunk is not None
    result = []
    for page in decoded.pages:
        header, _ = deserialize(t.PageHeader, bytes(pf.read_bytes(page.offset, page.size)))
        dph = header.data_page_header or header.data_page_header_v2
        encoding = dph.encoding if dph is not None else Encoding.PLAIN
        result.append((int(header.type), int(encoding), page.num_rows))
    return result


def test_reference_table_round_trips_through_pyarrow_and_back() -> None:
    table = reference_table(50_000)
    data = _write(table, row_group_size=20_000)
    assert pq.read_table(pa.BufferReader(data), page_checksum_verification=True).equals(table)
    assert streamwrite.read_table(data).equals(table)
    assert pq.ParquetFile(pa.BufferReader(data)).metadata.num_row_groups == 3


def test_automatic_encodings_follow_the_documented_rules() -> None:
    table = reference_table(60_000)
    md = pq.ParquetFile(pa.BufferReader(_write(table))).metadata.row_group(0)
    encodings = {md.column(i).path_in_schema: set(md.column(i).encodings) for i in range(7)}
    assert "DELTA_BINARY_PACKED" in encodings["ts"]  # sorted timestamps
    assert "RLE_DICTIONARY" in encodings["symbol"]  # 500 distinct
    assert "RLE_DICTIONARY" in encodings["venue"]
    assert encodings["order_id"] == {"PLAIN", "RLE"}  # unique ids: no dictionary page
    # A random walk at fixed precision: every sample looks distinct, the chunk repeats values.
    walk = 100 + np.cumsum(np.random.default_rng(1).normal(0, 0.01, 1_000_000)).round(4)
    assert len(np.unique(walk[::122])) / len(walk[::122]) > 0.5
    assert len(np.unique(walk[:8192])) / 8192 > 0.5
    md = pq.ParquetFile(pa.BufferReader(_write(pa.table({"p": walk})))).metadata
    assert "RLE_DICTIONARY" in md.row_group(0).column(0).encodings
    noise = np.random.default_rng(2).normal(0, 1, 100_000)
    md = pq.ParquetFile(pa.BufferReader(_write(pa.table({"p": noise})))).metadata
    assert "RLE_DICTIONARY" not in md.row_group(0).column(0).encodings


def test_explicit_encoding_wins_and_invalid_ones_are_config_errors() -> None:
    table = pa.table({"i": pa.array(range(1000), pa.int64()), "s": ["x"] * 1000})
    data = _write(table, column_encoding={"i": "BYTE_STREAM_SPLIT", "s": "DELTA_BYTE_ARRAY"})
    md = pq.ParquetFile(pa.BufferReader(data)).metadata.row_group(0)
    assert "BYTE_STREAM_SPLIT" in md.column(0).encodings
    assert "DELTA_BYTE_ARRAY" in md.column(1).encodings
    assert pq.read_table(pa.BufferReader(data)).equals(table)
    with pytest.raises(ConfigError, match="DELTA_BINARY_PACKED cannot encode column 's'"):
        _write(table, column_encoding={"s": "DELTA_BINARY_PACKED"})
    with pytest.raises(ConfigError, match="Unknown encoding"):
        _write(table, column_encoding={"s": "FANCY"})
    with pytest.raises(ConfigError, match="unknown columns"):
        _write(table, column_encoding={"nope": "PLAIN"})
    with pytest.raises(ConfigError, match="Unknown compression"):
        _write(table, compression="zip")
    with pytest.raises(ConfigError, match="data_page_version"):
        _write(table, data_page_version="3.0")
    with pytest.raises(ConfigError, match="'lzo' cannot be written"):
        _write(table, compression="lzo")


def test_pages_respect_the_row_limit_and_the_byte_size() -> None:
    table = pa.table({"v": pa.array(np.arange(10_000, dtype=np.int64))})
    pages = _pages(_write(table, column_encoding={"v": "PLAIN"}, data_page_row_limit=1000))
    assert [rows for _, _, rows in pages] == [1000] * 10
    pages = _pages(_write(table, column_encoding={"v": "PLAIN"}, data_page_size=8 * 500))
    assert [rows for _, _, rows in pages] == [500] * 20
    strings = pa.table({"s": ["x" * 96] * 1000})  # 100 PLAIN bytes each
    pages = _pages(_write(strings, use_dictionary=False, data_page_size=1000))
    assert [rows for _, _, rows in pages] == [10] * 100


def test_dictionary_falls_back_for_the_rest_of_the_chunk_at_its_byte_limit() -> None:
    low = [f"v{i % 50}" for i in range(8000)]
    high = [f"unique-{i}" for i in range(2000)]
    table = pa.table({"s": low + high})
    data = _write(table, dictionary_pagesize_limit=2000, data_page_row_limit=1000)
    pages = _pages(data)
    kinds = [(page_type, encoding) for page_type, encoding, _ in pages]
    assert kinds[0] == (PageType.DICTIONARY_PAGE, Encoding.PLAIN)
    assert (PageType.DATA_PAGE, Encoding.RLE_DICTIONARY) in kinds
    assert kinds[-1] == (PageType.DATA_PAGE, Encoding.PLAIN)
    # The dictionary part is a prefix: once the fallback starts, no dictionary page follows.
    first_plain = kinds.index((PageType.DATA_PAGE, Encoding.PLAIN))
    assert all(k == (PageType.DATA_PAGE, Encoding.PLAIN) for k in kinds[first_plain:])
    assert pq.read_table(pa.BufferReader(data), page_checksum_verification=True).equals(table)
    assert streamwrite.read_table(data).equals(table)
    md = streamwrite.ParquetFile(data).thrift_metadata.row_groups[0].columns[0].meta_data
    stats = {(s.page_type, s.encoding): s.count for s in md.encoding_stats}
    assert stats[(PageType.DICTIONARY_PAGE, Encoding.PLAIN)] == 1
    assert stats[(PageType.DATA_PAGE, Encoding.RLE_DICTIONARY)] >= 1


def test_nullable_columns_with_all_null_pages() -> None:
    values = [None] * 3000 + list(range(3000))
    table = pa.table({"v": pa.array(values, pa.int64())})
    for version in ("1.0", "2.0"):
        data = _write(table, data_page_version=version, data_page_row_limit=1000)
        assert pq.read_table(pa.BufferReader(data), page_checksum_verification=True).equals(table)
        pf = streamwrite.ParquetFile(data)
        chunk = pf.thrift_metadata.row_groups[0].columns[0]
        index, _ = deserialize(
            t.ColumnIndex, pf.read_bytes(chunk.column_index_offset, chunk.column_index_length)
        )
        assert index.null_pages == [True] * 3 + [False] * 3
        assert index.null_counts == [1000] * 3 + [0] * 3
        assert index.boundary_order == t.BoundaryOrder.ASCENDING
        assert index.definition_level_histograms[:2] == [1000, 0]


def test_checksums_are_verified_by_pyarrow() -> None:
    table = pa.table({"v": pa.array(np.arange(1000, dtype=np.int64) * 7919)})
    data = bytearray(_write(table, compression="none", use_dictionary=False))
    pq.read_table(pa.BufferReader(bytes(data)), page_checksum_verification=True)
    md = streamwrite.ParquetFile(bytes(data)).thrift_metadata.row_groups[0].columns[0].meta_data
    data[md.data_page_offset + 40] ^= 0x01  # inside the first page's values
    with pytest.raises(OSError, match="CRC"):
        pq.read_table(pa.BufferReader(bytes(data)), page_checksum_verification=True)
    no_crc = _write(table, write_page_checksum=False)
    header, _ = deserialize(
        t.PageHeader,
        no_crc,
        streamwrite.ParquetFile(no_crc)
        .thrift_metadata.row_groups[0]
        .columns[0]
        .meta_data.data_page_offset,
    )
    assert header.crc is None


@pytest.mark.parametrize(
    ("array", "arrow_type"),
    [
        ([*range(-50, 50), None], pa.int64()),
        ([0, 1, 2**32 - 1, None], pa.uint32()),
        ([0, 2**63, 2**64 - 1], pa.uint64()),
        ([1.5, float("nan"), -0.0, 3.25, None], pa.float64()),
        (["b", "", "a\u00e9", "zz", None], pa.string()),
        ([True, False, None], pa.bool_()),
    ],
)
def test_statistics_equal_pyarrow_statistics(array: list[object], arrow_type: pa.DataType) -> None:
    table = pa.table({"v": pa.array(array, arrow_type)})
    ours = pq.ParquetFile(pa.BufferReader(_write(table))).metadata.row_group(0).column(0).statistics
    sink = io.BytesIO()
    pq.write_table(table, sink)
    theirs = (
        pq.ParquetFile(pa.BufferReader(sink.getvalue())).metadata.row_group(0).column(0).statistics
    )
    assert (ours.min, ours.max, ours.null_count) == (theirs.min, theirs.max, theirs.null_count)


def test_long_byte_array_statistics_are_truncated_and_still_bound_the_values() -> None:
    values = ["a" * 100, "b" * 100 + "z", "b" * 200]
    data = _write(pa.table({"v": values}), statistics_truncate_length=16)
    stats = (
        streamwrite.ParquetFile(data).thrift_metadata.row_groups[0].columns[0].meta_data.statistics
    )
    assert stats.min_value == b"a" * 16 and stats.is_min_value_exact is False
    assert stats.max_value == b"b" * 15 + b"c" and stats.is_max_value_exact is False
    assert all(stats.min_value <= v.encode() <= stats.max_value for v in values)


def test_bloom_filters_hold_every_value_and_are_sized_from_ndv() -> None:
    ids = [f"id-{i}" for i in range(5000)]
    table = pa.table({"id": ids, "n": pa.array(range(5000), pa.int64())})
    data = _write(table, bloom_filter_options={"id": {"ndv": 5000, "fpp": 0.01}, "n": True})
    pf = streamwrite.ParquetFile(data)
    meta = pf.thrift_metadata.row_groups[0].columns[0].meta_data
    raw = bytes(pf.read_bytes(meta.bloom_filter_offset, meta.bloom_filter_length))
    header, end = deserialize(t.BloomFilterHeader, raw)
    assert header.numBytes == 8192  # 5000 values at 1%: 6 KiB of bits, rounded up to 2**13
    bloom = SplitBlockBloomFilter.from_bitset(raw[end:])
    present = hash_values(BinaryValues.from_pylist([s.encode() for s in ids]), t.Type.BYTE_ARRAY)
    assert bloom.check_hashes(present).all()
    absent = hash_values(
        BinaryValues.from_pylist([f"no-{i}".encode() for i in range(5000)]), t.Type.BYTE_ARRAY
    )
    assert bloom.check_hashes(absent).mean() < 0.03
    assert pf.thrift_metadata.row_groups[0].columns[1].meta_data.bloom_filter_offset is not None
    assert pq.read_table(pa.BufferReader(data)).equals(table)
    with pytest.raises(ConfigError, match=r"'b'.*BOOLEAN"):
        _write(pa.table({"b": [True]}), bloom_filter_options={"b": True})


def test_sorting_columns_key_value_metadata_and_created_by() -> None:
    table = pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    data = _write(
        table,
        sorting_columns=[streamwrite.SortingColumn(0, descending=True, nulls_first=True)],
        key_value_metadata={"source": "feed-a"},
    )
    md = pq.ParquetFile(pa.BufferReader(data)).metadata
    assert md.row_group(0).sorting_columns == (
        pq.SortingColumn(0, descending=True, nulls_first=True),
    )
    assert md.metadata[b"source"] == b"feed-a"
    assert md.created_by.startswith("streamwrite version")
    with pytest.raises(ConfigError, match="out of range"):
        _write(table, sorting_columns=[streamwrite.SortingColumn(5)])


def test_size_statistics_count_unencoded_bytes_and_levels() -> None:
    table = pa.table({"s": ["ab", None, "cde", None, ""]})
    meta = streamwrite.ParquetFile(_write(table)).thrift_metadata.row_groups[0].columns[0].meta_data
    assert meta.size_statistics.unencoded_byte_array_data_bytes == 5
    assert meta.size_statistics.definition_level_histogram == [2, 3]


def test_empty_table_and_table_of_nulls() -> None:
    empty = pa.table({"a": pa.array([], pa.int64()), "s": pa.array([], pa.string())})
    data = _write(empty)
    assert pq.read_table(pa.BufferReader(data)).equals(empty)
    assert streamwrite.read_table(data).equals(empty)
    nulls = pa.table({"a": pa.array([None] * 100, pa.int64())})
    assert pq.read_table(pa.BufferReader(_write(nulls))).equals(nulls)


def test_unions_are_unsupported_and_schema_mismatch_is_a_schema_error(tmp_path: Path) -> None:
    union = pa.UnionArray.from_sparse(pa.array([0], pa.int8()), [pa.array([1])])
    with pytest.raises(UnsupportedError, match="'u'"):
        _write(pa.table({"u": union}))
    with streamwrite.ParquetWriter(tmp_path / "f.parquet", pa.schema([("a", pa.int64())])) as w:
        with pytest.raises(SchemaError):
            w.write_table(pa.table({"b": [1]}))
        w.write_table(pa.table({"a": [1, 2]}))
        w.write_batch(pa.record_batch({"a": [3]}))
    assert pq.read_table(tmp_path / "f.parquet")["a"].to_pylist() == [1, 2, 3]


def test_jobs_pickle_and_give_byte_identical_chunks() -> None:
    from streamwrite.arrow.schema import arrow_to_parquet
    from streamwrite.arrow.values import to_physical
    from streamwrite.encode import chunk_settings
    from streamwrite.options import make_write_options
    from workers.jobs import EncodeChunkJob, run_job

    table = reference_table(5000)
    schema = arrow_to_parquet(table.schema)
    options = make_write_options(table.column_names, bloom_filter_options={"order_id": True})
    for spec, column in zip(schema.columns, table.columns, strict=True):
        physical = to_physical(column, spec)
        job = EncodeChunkJob(
            chunk_settings(spec, options), physical.values, physical.def_levels, physical.num_rows
        )
        inline = run_job(job)
        pooled = pickle.loads(pickle.dumps(run_job(pickle.loads(pickle.dumps(job)))))
        assert pooled.data == inline.data
        assert pooled.meta_data == inline.meta_data
        assert pooled.bloom_filter == inline.bloom_filter
