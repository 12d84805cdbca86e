"""``streamwrite inspect`` and ``streamwrite verify``, run as real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.format import structs as t
from streamwrite.format.thrift.codec import deserialize, serialize


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streamwrite", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _table() -> pa.Table:
    n = 5000
    return pa.table(
        {
            "ts": pa.array(range(0, 3 * n, 3), pa.int64()),
            "sym": pa.array([None if i % 10 == 0 else f"S{i % 20}" for i in range(n)]),
            "px": pa.array([i / 7 for i in range(n)]),
        }
    )


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "ours.parquet"
    streamwrite.write_table(
        _table(),
        path,
        compression={"ts": "zstd", "sym": "snappy", "px": "gzip"},
        column_encoding={"ts": "DELTA_BINARY_PACKED"},
        use_dictionary=["sym"],
        data_page_row_limit=1000,
        bloom_filter_options={"sym": {"ndv": 50, "fpp": 0.01}},
    )
    return path


def _footer(data: bytes) -> t.FileMetaData:
    size = int.from_bytes(data[-8:-4], "little")
    metadata, _ = deserialize(t.FileMetaData, memoryview(data)[len(data) - 8 - size : -8])
    return metadata


def test_inspect_json(ours: Path) -> None:
    result = run("inspect", str(ours), "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["num_rows"] == 5000
    assert [c["name"] for c in info["schema"]] == ["ts", "sym", "px"]
    chunks = {c["column"]: c for c in info["row_groups"][0]["columns"]}
    assert chunks["ts"]["codec"] == "ZSTD"
    assert chunks["sym"]["codec"] == "SNAPPY"
    assert chunks["px"]["codec"] == "GZIP"
    assert "DELTA_BINARY_PACKED" in chunks["ts"]["encodings"]
    assert "RLE_DICTIONARY" in chunks["sym"]["encodings"]
    assert chunks["sym"]["bloom_filter"] and not chunks["ts"]["bloom_filter"]
    assert all(c["column_index"] and c["offset_index"] for c in chunks.values())
    assert chunks["sym"]["statistics"]["null_count"] == 500


def test_inspect_text(ours: Path) -> None:
    result = run("inspect", str(ours))
    assert result.returncode == 0, result.stderr
    assert "DELTA_BINARY_PACKED" in result.stdout and "bloom_filter" in result.stdout


def test_verify_ours(ours: Path) -> None:
    result = run("verify", str(ours))
    assert result.returncode == 0, result.stdout
    assert result.stdout.startswith("OK")


def test_verify_pyarrow_written(tmp_path: Path) -> None:
    path = tmp_path / "pyarrow.parquet"
    pq.write_table(
        _table(),
        path,
        write_page_index=True,
        write_page_checksum=True,
        bloom_filter_options={"sym": {"ndv": 50, "fpp": 0.01}},
        data_page_size=4096,
    )
    assert pq.ParquetFile(path).metadata.row_group(0).column(1).bloom_filter_offset is not None
    result = run("verify", str(path))
    assert result.returncode == 0, result.stdout


def test_verify_flipped_page_byte(ours: Path, tmp_path: Path) -> None:
    data = bytearray(ours.read_bytes())
    meta = _footer(bytes(data)).row_groups[0].columns[2].meta_data  # type: ignore[index]
    assert meta is not None and meta.data_page_offset is not None
    _, end = deserialize(t.PageHeader, memoryview(data), meta.data_page_offset)
    data[end + 5] ^= 0x40
    path = tmp_path / "flipped.parquet"
    path.write_bytes(bytes(data))
    result = run("verify", str(path))
    assert result.returncode == 1
    assert f"byte offset {meta.data_page_offset}" in result.stdout
    assert "CRC32" in result.stdout


def test_verify_wrong_offset_index(ours: Path, tmp_path: Path) -> None:
    data = bytearray(ours.read_bytes())
    chunk = _footer(bytes(data)).row_groups[0].columns[0]  # type: ignore[index]
    assert chunk.offset_index_offset is not None and chunk.offset_index_length is not None
    start, length = chunk.offset_index_offset, chunk.offset_index_length
    index, _ = deserialize(t.OffsetIndex, memoryview(data)[start : start + length])
    locations = index.page_locations or []
    locations[1].first_row_index = (locations[1].first_row_index or 0) + 1
    patched = serialize(index)
    assert len(patched) == length
    data[start : start + length] = patched
    path = tmp_path / "offset-index.parquet"
    path.write_bytes(bytes(data))
    result = run("verify", str(path))
    assert result.returncode == 1
    assert f"OffsetIndex at byte offset {start}" in result.stdout


def test_verify_bloom_filter_miss(ours: Path, tmp_path: Path) -> None:
    data = bytearray(ours.read_bytes())
    meta = _footer(bytes(data)).row_groups[0].columns[1].meta_data  # type: ignore[index]
    assert meta is not None and meta.bloom_filter_offset is not None
    header, end = deserialize(t.BloomFilterHeader, memoryview(data), meta.bloom_filter_offset)
    assert header.numBytes is not None
    data[end : end + header.numBytes] = bytes(header.numBytes)  # an empty filter
    path = tmp_path / "bloom.parquet"
    path.write_bytes(bytes(data))
    result = run("verify", str(path))
    assert result.returncode == 1
    assert f"bloom filter at byte offset {meta.bloom_filter_offset}" in result.stdout
    assert "missing" in result.stdout


def test_verify_wrong_statistics(tmp_path: Path) -> None:
    """A null_count patched in the footer (the Thrift bytes keep their length)."""
    table = pa.table({"x": pa.array([1, None, 3], pa.int64())})
    path = tmp_path / "stats.parquet"
    streamwrite.write_table(table, path)
    data = bytearray(path.read_bytes())
    metadata = _footer(bytes(data))
    size = int.from_bytes(data[-8:-4], "little")
    stats = metadata.row_groups[0].columns[0].meta_data.statistics  # type: ignore[index, union-attr]
    assert stats is not None and stats.null_count == 1
    stats.null_count = 2
    patched = serialize(metadata)
    assert len(patched) == size
    data[len(data) - 8 - size : -8] = patched
    path.write_bytes(bytes(data))
    result = run("verify", str(path))
    assert result.returncode == 1
    assert "2 nulls, the chunk has 1" in result.stdout


def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "junk.parquet"
    path.write_bytes(b"PAR1 this is not parquet")
    assert run("inspect", str(path)).returncode == 2
    result = run("verify", str(path))
    assert result.returncode == 1
    assert "byte offset" in result.stdout
    assert run("inspect", str(tmp_path / "missing.parquet")).returncode == 2
