"""``ParquetFile.metadata`` has pyarrow's shape: field by field equal to
``pyarrow.parquet.ParquetFile(path).metadata`` on the same file, over writers (streamwrite and
pyarrow), encodings, codecs, page versions and types (timestamps, strings, decimals, dates,
booleans, nulls, all-null columns)."""

from __future__ import annotations

import datetime
import decimal
import os
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.format import structs as t

CASES = int(os.environ.get("STREAMWRITE_METADATA_CASES", "12"))
"""Random tables per writer configuration."""

FILE_FIELDS = (
    "num_rows",
    "num_row_groups",
    "num_columns",
    "created_by",
    "format_version",
    "serialized_size",
    "metadata",
)
ROW_GROUP_FIELDS = ("num_rows", "num_columns", "total_byte_size")
COLUMN_FIELDS = (
    "path_in_schema",
    "physical_type",
    "compression",
    "encodings",
    "num_values",
    "total_compressed_size",
    "total_uncompressed_size",
    "data_page_offset",
    "dictionary_page_offset",
    "has_dictionary_page",
    "file_offset",
    "file_path",
    "is_stats_set",
    "has_offset_index",
    "has_column_index",
    "bloom_filter_offset",
    "bloom_filter_length",
)
STATS_FIELDS = (
    "has_min_max",
    "min",
    "max",
    "min_raw",
    "max_raw",
    "null_count",
    "has_null_count",
    "distinct_count",
    "has_distinct_count",
    "num_values",
    "physical_type",
)


def _table(rng: random.Random, num_rows: int) -> pa.Table:
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.2 else value

    base = datetime.datetime(2026, 11, 22, 9, 30)
    return pa.table(
        {
            "i64": pa.array([maybe(rng.randint(-(2**62), 2**62)) for _ in range(num_rows)]),
            "i32": pa.array([rng.randint(-50, 50) for _ in range(num_rows)], pa.int32()),
            "u16": pa.array([maybe(rng.randint(0, 60000)) for _ in range(num_rows)], pa.uint16()),
            "f64": pa.array([maybe(rng.uniform(-1e6, 1e6)) for _ in range(num_rows)]),
            "f32": pa.array([rng.uniform(-10, 10) for _ in range(num_rows)], pa.float32()),
            "flag": pa.array([maybe(rng.random() < 0.5) for _ in range(num_rows)]),
            "ts_utc": pa.array(
                [
                    maybe(base + datetime.timedelta(microseconds=rng.randint(0, 10**12)))
                    for _ in range(num_rows)
                ],
                pa.timestamp("us", tz="UTC"),
            ),
            "ts_ms": pa.array(
                [
                    base + datetime.timedelta(milliseconds=rng.randint(0, 10**9))
                    for _ in range(num_rows)
                ],
                pa.timestamp("ms"),
            ),
            "day": pa.array(
                [
                    maybe(datetime.date(2020, 1, 1) + datetime.timedelta(days=rng.randint(0, 3000)))
                    for _ in range(num_rows)
                ]
            ),
            "sym": pa.array(
                [maybe(rng.choice(["AAPL", "MSFT", "ÄÖÜ", "", "z"])) for _ in range(num_rows)]
            ),
            "blob": pa.array(
                [
                    maybe(bytes(rng.randrange(256) for _ in range(rng.randint(0, 5))))
                    for _ in range(num_rows)
                ],
                pa.binary(),
            ),
            "px": pa.array(
                [
                    maybe(decimal.Decimal(rng.randint(-(10**9), 10**9)).scaleb(-4))
                    for _ in range(num_rows)
                ],
                pa.decimal128(18, 4),
            ),
            "big": pa.array(
                [
                    decimal.Decimal(rng.randint(-(10**20), 10**20)).scaleb(-2)
                    for _ in range(num_rows)
                ],
                pa.decimal128(30, 2),
            ),
            "nothing": pa.array([None] * num_rows, pa.int64()),
        }
    )


WRITERS: dict[str, Any] = {
    "streamwrite-default": lambda table, path: streamwrite.write_table(
        table, path, row_group_size=150
    ),
    "streamwrite-zstd-delta-v2": lambda table, path: streamwrite.write_table(
        table,
        path,
        compression="zstd",
        data_page_version="2.0",
        use_dictionary=["sym"],
        column_encoding={"i64": "DELTA_BINARY_PACKED", "f64": "BYTE_STREAM_SPLIT"},
        row_group_size=200,
    ),
    "streamwrite-gzip-nodict-bloom": lambda table, path: streamwrite.write_table(
        table,
        path,
        compression="gzip",
        use_dictionary=False,
        bloom_filter_options={"sym": True},
        data_page_row_limit=37,
    ),
    "streamwrite-uncompressed-snappy-lz4": lambda table, path: streamwrite.write_table(
        table, path, compression={"i64": "none", "sym": "snappy", "f64": "lz4_raw", "px": "brotli"}
    ),
    "pyarrow-default": lambda table, path: pq.write_table(table, path, row_group_size=170),
    "pyarrow-v1-nostats": lambda table, path: pq.write_table(
        table,
        path,
        use_dictionary=False,
        compression="lz4",
        write_statistics=["i64", "sym"],
        data_page_version="1.0",
    ),
    "pyarrow-index-zstd": lambda table, path: pq.write_table(
        table,
        path,
        compression="zstd",
        write_page_index=True,
        data_page_size=512,
        column_encoding={"i32": "DELTA_BINARY_PACKED"},
        use_dictionary=["sym", "blob"],
    ),
}


def _compare(ours: Any, theirs: Any, fields: tuple[str, ...], where: str) -> None:
    for name in fields:
        try:
            expected = getattr(theirs, name)
        except ValueError as exc:  # nanosecond timestamps without pandas: both refuse
            with pytest.raises(ValueError):
                getattr(ours, name)
            del exc
            continue
        assert getattr(ours, name) == expected, f"{where}.{name}"


def _compare_files(path: Path) -> None:
    theirs = pq.ParquetFile(path).metadata
    with streamwrite.ParquetFile(path) as pf:
        ours = pf.metadata
        _compare(ours, theirs, FILE_FIELDS, "file")
        assert ours.schema.names == theirs.schema.names
        for j in range(theirs.num_columns):
            assert ours.schema.column(j).path == theirs.schema.column(j).path
            assert ours.schema.column(j).physical_type == theirs.schema.column(j).physical_type
        for i in range(theirs.num_row_groups):
            rg, their_rg = ours.row_group(i), theirs.row_group(i)
            _compare(rg, their_rg, ROW_GROUP_FIELDS, f"row_group({i})")
            for j in range(their_rg.num_columns):
                where = f"row_group({i}).column({j})"
                column, their_column = rg.column(j), their_rg.column(j)
                _compare(column, their_column, COLUMN_FIELDS, where)
                if their_column.statistics is None:
                    assert column.statistics is None, where
                else:
                    assert column.statistics is not None, where
                    _compare(column.statistics, their_column.statistics, STATS_FIELDS, where)
        with pytest.raises(IndexError):
            ours.row_group(theirs.num_row_groups)
        assert isinstance(pf.thrift_metadata, t.FileMetaData)
        assert ours.thrift is pf.thrift_metadata
        assert ours.row_group(0).column(0).thrift is pf.thrift_metadata.row_groups[0].columns[0]  # type: ignore[index]


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_metadata_equals_pyarrow_field_by_field(writer: str, tmp_path: Path) -> None:
    rng = random.Random(writer)
    for case in range(CASES):
        table = _table(rng, rng.choice([1, 7, 300, 555]))
        path = tmp_path / f"{case}.parquet"
        WRITERS[writer](table, path)
        _compare_files(path)


def test_nanosecond_and_typed_bounds(tmp_path: Path) -> None:
    """Typed bounds as pyarrow gives them, named values checked (not only equal to pyarrow)."""
    path = tmp_path / "typed.parquet"
    streamwrite.write_table(
        pa.table(
            {
                "ts": pa.array(
                    [datetime.datetime(2026, 11, 22, 9, 30, 0, 1)], pa.timestamp("us", tz="UTC")
                ),
                "s": ["héllo"],
                "d": pa.array([decimal.Decimal("12.3400")], pa.decimal128(9, 4)),
                "day": [datetime.date(2026, 11, 22)],
                "ns": pa.array([5], pa.timestamp("ns")),
                "null": pa.array([None], pa.string()),
            }
        ),
        path,
    )
    with streamwrite.ParquetFile(path) as pf:
        rg = pf.metadata.row_group(0)
        stats = {
            rg.column(j).path_in_schema: rg.column(j).statistics for j in range(rg.num_columns)
        }
    assert stats["ts"].min == datetime.datetime(2026, 11, 22, 9, 30, 0, 1, tzinfo=datetime.UTC)
    assert stats["s"].max == "héllo" and stats["s"].max_raw == "héllo".encode()
    assert stats["d"].min == decimal.Decimal("12.3400")
    assert stats["day"].min == datetime.date(2026, 11, 22)
    assert stats["ns"].min_raw == 5
    try:  # as pyarrow's as_py(): a pandas Timestamp with pandas installed, else ValueError
        expected = pa.scalar(5, pa.timestamp("ns")).as_py()
    except ValueError:
        with pytest.raises(ValueError):
            stats["ns"].min  # noqa: B018
    else:
        assert stats["ns"].min == expected and type(stats["ns"].min) is type(expected)
    assert not stats["null"].has_min_max and stats["null"].min is None
    assert stats["null"].null_count == 1 and stats["null"].num_values == 0
    _compare_files(path)


def test_lz4_hadoop_codec_is_named(tmp_path: Path) -> None:
    """Codec 5 (Hadoop-framed LZ4): pyarrow says "UNKNOWN", streamwrite names it."""
    from streamwrite.format.thrift.codec import deserialize, serialize

    path = tmp_path / "lz4.parquet"
    streamwrite.write_table(pa.table({"a": [1, 2]}), path, compression="lz4")
    data = bytearray(path.read_bytes())
    size = int.from_bytes(data[-8:-4], "little")
    footer, _ = deserialize(t.FileMetaData, bytes(data[-8 - size : -8]))
    footer.row_groups[0].columns[0].meta_data.codec = t.CompressionCodec.LZ4  # type: ignore[index, union-attr]
    data[-8 - size : -8] = serialize(footer)
    path.write_bytes(bytes(data))
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == "UNKNOWN"
    with streamwrite.ParquetFile(path) as pf:
        assert pf.metadata.row_group(0).column(0).compression == "LZ4_HADOOP"


@pytest.mark.parametrize("plaintext_footer", [False, True])
@pytest.mark.parametrize("algorithm", ["AES_GCM_V1", "AES_GCM_CTR_V1"])
def test_metadata_of_encrypted_files_equals_pyarrow(
    tmp_path: Path, plaintext_footer: bool, algorithm: str
) -> None:
    """pyarrow-encrypted files (encrypted or signed plaintext footer), both read with keys."""
    import pyarrow.parquet.encryption as pe

    from streamwrite.crypto import InMemoryKms
    from streamwrite.crypto.decryption import DecryptionConfig
    from tests.crypto.test_keys import _PyarrowKms
    from tests.reader.test_decryption import MASTER_KEYS, _write_pyarrow

    path = tmp_path / "enc.parquet"
    _write_pyarrow(
        path, double=True, plaintext_footer=plaintext_footer, algorithm=algorithm, row_group_size=60
    )
    factory = pe.CryptoFactory(lambda _cfg: _PyarrowKms(InMemoryKms(MASTER_KEYS), []))
    props = factory.file_decryption_properties(pe.KmsConnectionConfig())
    theirs = pq.ParquetFile(path, decryption_properties=props).metadata
    with streamwrite.ParquetFile(
        path, decryption=DecryptionConfig.from_kms(InMemoryKms(MASTER_KEYS))
    ) as pf:
        ours = pf.metadata
        _compare(ours, theirs, FILE_FIELDS, "file")
        assert ours.num_row_groups > 1
        for i in range(theirs.num_row_groups):
            for j in range(theirs.num_columns):
                column, their_column = ours.row_group(i).column(j), theirs.row_group(i).column(j)
                _compare(column, their_column, COLUMN_FIELDS, f"row_group({i}).column({j})")
                if their_column.statistics is not None:
                    assert column.statistics is not None
                    _compare(column.statistics, their_column.statistics, STATS_FIELDS, "stats")
    if plaintext_footer:  # without keys: the footer reads, encrypted chunks refuse
        with streamwrite.ParquetFile(path) as pf:
            assert pf.metadata.num_rows == theirs.num_rows
            with pytest.raises(streamwrite.EncryptionError):
                pf.metadata.row_group(0).column(0).statistics  # noqa: B018


def test_sorting_columns_and_schema_have_pyarrows_shape(tmp_path: Path) -> None:
    """``RowGroupMetaData.sorting_columns`` gives ``streamwrite.SortingColumn`` objects (the
    shape of pyarrow's, and what ``write_table(sorting_columns=)`` takes), not Thrift structs;
    ``ParquetFile.schema`` is the pyarrow-shaped schema, as ``pq.ParquetFile(...).schema``."""
    path = tmp_path / "sorted.parquet"
    sorting = [streamwrite.SortingColumn(1, descending=True, nulls_first=True)]
    sorting.append(streamwrite.SortingColumn(0))
    table = pa.table({"a": [1, 2, 3], "b": ["z", "y", None]})
    streamwrite.write_table(table, path, sorting_columns=sorting)
    theirs = pq.ParquetFile(path)
    with streamwrite.ParquetFile(path) as pf:
        ours = pf.metadata.row_group(0).sorting_columns
        assert ours == tuple(sorting)
        assert [(c.column_index, c.descending, c.nulls_first) for c in ours] == [
            (c.column_index, c.descending, c.nulls_first)
            for c in theirs.metadata.row_group(0).sorting_columns
        ]
        assert isinstance(pf.schema, streamwrite.ParquetSchemaView)
        assert pf.schema.names == theirs.schema.names
        assert [pf.schema.column(j).path for j in range(len(pf.schema))] == [
            theirs.schema.column(j).path for j in range(len(theirs.schema))
        ]
        assert pf.schema.to_arrow_schema() == pf.schema_arrow
