"""Nested chunks from ``encode_chunk`` in real files: pyarrow and DuckDB read them equal to the
input, and their metadata (statistics, SizeStatistics, page index) equals pyarrow's own.

The files are built by ``tests/workers/_nested_files.py`` (schema elements as pyarrow writes
them, levels from a per-value reference shredder); the readers run in a subprocess.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from io import BytesIO
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

from streamwrite.crypto import EncryptionConfig, InMemoryKms, KeyWrapper
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.format import structs as t
from streamwrite.format.enums import CompressionCodec, Encoding
from streamwrite.format.thrift.codec import deserialize
from streamwrite.options import ColumnOptions, DataPageVersion, WriteOptions
from tests.crypto.test_writer_encryption import MASTER_KEYS, _job, run_pyarrow
from tests.workers._nested_files import write_nested_file

READ_CHECK = Path(__file__).with_name("_nested_read_check.py")


def _split(values: Any, rng: np.random.Generator, num_rows: int) -> list[Any]:
    """``values`` cut into ``num_rows`` lists of 0 to 6 elements (some rows null)."""
    cuts = np.sort(rng.integers(0, len(values), num_rows - 1))
    parts = np.split(values, cuts)
    return [None if i % 17 == 5 else part.tolist() for i, part in enumerate(parts)]


def nested_table(num_rows: int, seed: int) -> pa.Table:
    """Every shape of the brief, nullable and required, with empty and null lists, null
    elements, null structs, maps with null values, NaN; records of very different sizes."""
    rng = np.random.default_rng(seed)

    def maybe(p_null: float, make: Any) -> Any:
        return None if rng.random() < p_null else make()

    def ints(n: int, p_null: float = 0.2) -> list[Any]:
        return [maybe(p_null, lambda: int(rng.integers(-1000, 1000))) for _ in range(n)]

    def words(n: int, p_null: float = 0.2) -> list[Any]:
        return [maybe(p_null, lambda: f"w{int(rng.integers(0, 60))}") for _ in range(n)]

    def length() -> int:
        return int(rng.choice([0, 1, 2, 3, 7, 40], p=[0.2, 0.3, 0.2, 0.15, 0.1, 0.05]))

    rows = range(num_rows)
    columns = {
        "l": pa.array([maybe(0.1, lambda: ints(length())) for _ in rows], pa.list_(pa.int64())),
        "s": pa.array(
            [maybe(0.15, lambda: {"a": ints(1)[0], "b": words(1)[0]}) for _ in rows],
            pa.struct([("a", pa.int64()), ("b", pa.string())]),
        ),
        "ll": pa.array(
            [
                maybe(0.1, lambda: [maybe(0.2, lambda: words(length())) for _ in range(length())])
                for _ in rows
            ],
            pa.list_(pa.list_(pa.string())),
        ),
        "m": pa.array(
            [
                maybe(0.1, lambda: [(f"k{j}", ints(1, 0.3)[0]) for j in range(length())])
                for _ in rows
            ],
            pa.map_(pa.string(), pa.int64()),
        ),
        "ld": pa.array(
            [
                maybe(0.1, lambda: [float(x) for x in rng.normal(size=length())] + [float("nan")])
                for _ in rows
            ],
            pa.large_list(pa.float64()),
        ),
        "fl": pa.array([maybe(0.2, lambda: ints(2)) for _ in rows], pa.list_(pa.int32(), 2)),
        "req": pa.array(
            [[int(x) for x in rng.integers(0, 5, length())] for _ in rows],
            pa.list_(pa.field("item", pa.int64(), nullable=False)),
        ),
        "flat": pa.array(ints(num_rows), pa.int64()),
        # never decreasing: DELTA_BINARY_PACKED; a smooth series: BYTE_STREAM_SPLIT
        "inc": pa.array(_split(np.cumsum(rng.integers(0, 1000, 3 * num_rows)), rng, num_rows)),
        "bss": pa.array(
            _split(100 + np.cumsum(rng.normal(size=3 * num_rows)) * 0.01, rng, num_rows)
        ),
    }
    schema = pa.schema(
        [pa.field(name, array.type, nullable=name != "req") for name, array in columns.items()]
    )
    return pa.table(list(columns.values()), schema=schema)


def _options(
    version: DataPageVersion, dictionary: bool, codec: CompressionCodec, **limits: Any
) -> WriteOptions:
    return WriteOptions(
        data_page_version=version,
        default_column=ColumnOptions(compression=codec, use_dictionary=dictionary),
        **limits,
    )


def _read_check(directory: Path, readers: list[str]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, str(READ_CHECK), str(directory), *readers],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0, done.stderr[-3000:]
    return lines


MATRIX = [
    (version, dictionary, codec)
    for version in (DataPageVersion.V1, DataPageVersion.V2)
    for dictionary in (True, False)
    for codec in (CompressionCodec.ZSTD, CompressionCodec.SNAPPY)
] + [(DataPageVersion.V2, True, CompressionCodec.UNCOMPRESSED)]


def test_readers_read_nested_files_equal_to_input(tmp_path: Path) -> None:
    table = nested_table(1500, seed=3)
    names = []
    for version, dictionary, codec in MATRIX:
        # small pages and dictionaries: many pages per chunk, dictionary fallback mid-chunk
        options = _options(
            version,
            dictionary,
            codec,
            data_page_size=700,
            data_page_row_limit=90,
            dictionary_page_size_limit=150,
        )
        name = f"{version.name}-{'dict' if dictionary else 'plain'}-{codec.name}"
        (tmp_path / f"{name}.parquet").write_bytes(write_nested_file(table, options, 600))
        with (
            pa.OSFile(str(tmp_path / f"{name}.arrow"), "wb") as sink,
            pa.ipc.new_file(sink, table.schema) as ipc,
        ):
            ipc.write_table(table)
        names.append(name)
    seen_encodings = set()
    for name in names:
        data = (tmp_path / f"{name}.parquet").read_bytes()
        for group in _footer(data).row_groups:
            for chunk in group.columns:
                seen_encodings.update(s.encoding for s in chunk.meta_data.encoding_stats)
    assert seen_encodings == {
        Encoding.PLAIN,
        Encoding.RLE_DICTIONARY,
        Encoding.DELTA_BINARY_PACKED,
        Encoding.DELTA_LENGTH_BYTE_ARRAY,
        Encoding.BYTE_STREAM_SPLIT,
    }
    lines = _read_check(tmp_path, ["pyarrow", "duckdb"])
    seen = {(line["file"], line["reader"]): line["problems"] for line in lines}
    for name in names:
        for reader in ("pyarrow", "duckdb"):
            assert seen.get((f"{name}.parquet", reader)) == [], (name, reader, seen.get(name))


# --- metadata equal to pyarrow's ----------------------------------------------------------------


def _footer(data: bytes) -> t.FileMetaData:
    size = struct.unpack("<i", data[-8:-4])[0]
    meta, _ = deserialize(t.FileMetaData, data[-8 - size : -8])
    return meta


def _indexes(data: bytes, chunk: t.ColumnChunk) -> tuple[t.ColumnIndex, t.OffsetIndex]:
    assert chunk.column_index_offset is not None and chunk.offset_index_offset is not None
    ci, _ = deserialize(t.ColumnIndex, data[chunk.column_index_offset :])
    oi, _ = deserialize(t.OffsetIndex, data[chunk.offset_index_offset :])
    return ci, oi


def _hist(values: list[int] | None) -> list[int] | None:
    return values or None  # pyarrow writes an empty repetition histogram when max_rep is 0


@pytest.mark.parametrize("version", [DataPageVersion.V1, DataPageVersion.V2])
@pytest.mark.parametrize("dictionary", [True, False])
def test_metadata_equals_pyarrows(version: DataPageVersion, dictionary: bool) -> None:
    # 60 records: one page per chunk in both writers, so page indexes compare entry by entry
    table = nested_table(60, seed=11)
    ours = write_nested_file(table, _options(version, dictionary, CompressionCodec.SNAPPY), 60)
    buf = BytesIO()
    pq.write_table(
        table,
        buf,
        compression="snappy",
        use_dictionary=dictionary,
        data_page_version=version.value,
        write_page_index=True,
        store_schema=True,
    )
    theirs = buf.getvalue()
    our_meta, their_meta = _footer(ours), _footer(theirs)
    assert our_meta.num_rows == their_meta.num_rows == 60
    pairs = zip(our_meta.row_groups[0].columns, their_meta.row_groups[0].columns, strict=True)
    for our_chunk, their_chunk in pairs:
        our, their = our_chunk.meta_data, their_chunk.meta_data
        where = ".".join(our.path_in_schema)
        assert our.path_in_schema == their.path_in_schema
        assert our.num_values == their.num_values, where
        ours_s, theirs_s = our.statistics, their.statistics
        assert ours_s.null_count == theirs_s.null_count, where
        assert (ours_s.min_value, ours_s.max_value) == (theirs_s.min_value, theirs_s.max_value)
        # pyarrow 26 writes no nan_count; ours counts the NaN values as for flat columns
        assert theirs_s.nan_count is None
        nans = None
        if where in ("ld.list.element", "bss.list.element"):
            flat = table.column(where.split(".")[0]).combine_chunks().flatten()
            nans = int(pc.sum(pc.is_nan(flat)).as_py())
        assert ours_s.nan_count == nans, where
        our_size, their_size = our.size_statistics, their.size_statistics
        assert our_size.definition_level_histogram == their_size.definition_level_histogram
        assert _hist(our_size.repetition_level_histogram) == _hist(
            their_size.repetition_level_histogram
        ), where
        assert (
            our_size.unencoded_byte_array_data_bytes == their_size.unencoded_byte_array_data_bytes
        ), where
        our_ci, our_oi = _indexes(ours, our_chunk)
        their_ci, their_oi = _indexes(theirs, their_chunk)
        assert [p.first_row_index for p in our_oi.page_locations] == [
            p.first_row_index for p in their_oi.page_locations
        ], where
        for name in (
            "null_pages",
            "null_counts",
            "min_values",
            "max_values",
            "definition_level_histograms",
            "repetition_level_histograms",
        ):
            assert getattr(our_ci, name) == getattr(their_ci, name), (where, name)


def test_all_null_and_empty_pages_in_the_page_index() -> None:
    """Pages whose records are all null or empty lists are null pages with their counts."""
    lists = [None] * 30 + [[]] * 30 + [[1, 2]] * 30
    table = pa.table({"l": pa.array(lists, pa.list_(pa.int64()))})
    options = _options(DataPageVersion.V2, False, CompressionCodec.UNCOMPRESSED)
    options = WriteOptions(
        data_page_version=DataPageVersion.V2,
        default_column=options.default_column,
        data_page_row_limit=30,
    )
    data = write_nested_file(table, options, 90)
    chunk = _footer(data).row_groups[0].columns[0]
    ci, oi = _indexes(data, chunk)
    assert [p.first_row_index for p in oi.page_locations] == [0, 30, 60]
    assert ci.null_pages == [True, True, False]
    assert ci.null_counts == [30, 30, 0]
    # def levels: 0 null list, 1 empty list, 2 null element, 3 element
    assert ci.definition_level_histograms == [30, 0, 0, 0, 0, 30, 0, 0, 0, 0, 0, 60]
    assert ci.repetition_level_histograms == [30, 0, 30, 0, 30, 30]
    assert pq.read_table(BytesIO(data)).column("l").to_pylist() == lists


@pytest.mark.parametrize("version", [DataPageVersion.V1, DataPageVersion.V2])
def test_pyarrow_reads_encrypted_nested_files(tmp_path: Path, version: DataPageVersion) -> None:
    """Per-leaf column keys (dotted leaf paths), several pages and row groups: the page
    ordinals and column ordinals of the AADs are pyarrow's (it authenticates every module)."""
    table = nested_table(700, seed=9).drop_columns(["ld"])  # (NaN != NaN in Table.equals)
    config = EncryptionConfig(
        footer_key_id="kf",
        column_keys={"l.list.element": "kc", "m.key_value.value": "kd", "s.b": "kc"},
        algorithm="AES_GCM_V1",
    )
    encryption = FileEncryption(
        KeyWrapper(InMemoryKms(MASTER_KEYS), config),
        footer_key_columns=("ll.list.element.list.element", "flat"),
    )
    options = _options(
        version, True, CompressionCodec.ZSTD, data_page_size=500, data_page_row_limit=60
    )
    path = tmp_path / "enc.parquet"
    path.write_bytes(write_nested_file(table, options, 300, encryption))
    expected = tmp_path / "expected.feather"
    feather.write_feather(table, expected)
    results = run_pyarrow(tmp_path, [_job("enc", path, expected, verify_checksums=True)])
    assert results == {"enc": "ok"}
