"""Tests for workers.compression: round trips, size checks, bombs, deprecated LZ4 framing."""

from __future__ import annotations

import gzip
import struct

import cramjam
import numpy as np
import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwrite.errors import ConfigError, FormatError, LimitError, UnsupportedError
from streamwrite.format.enums import CompressionCodec
from tests._vectors import PARQUET_TESTING
from tests.workers._compact import read_struct
from workers.compression import compress, decompress

DATA_DIR = PARQUET_TESTING / "data"
WRITABLE = [
    CompressionCodec.UNCOMPRESSED,
    CompressionCodec.SNAPPY,
    CompressionCodec.GZIP,
    CompressionCodec.BROTLI,
    CompressionCodec.ZSTD,
    CompressionCodec.LZ4_RAW,
]
COMPRESSING = [c for c in WRITABLE if c != CompressionCodec.UNCOMPRESSED]
MAX = 1 << 24


@pytest.mark.parametrize("codec", WRITABLE)
@settings(max_examples=60, deadline=None)
@given(
    data=st.binary(max_size=5000)
    | st.builds(lambda b, n: b * n, st.binary(max_size=20), st.integers(0, 500))
)
def test_round_trip(codec: CompressionCodec, data: bytes) -> None:
    packed = compress(codec, data)
    assert decompress(codec, packed, len(data), max_size=MAX) == data


@pytest.mark.parametrize(
    "codec", [CompressionCodec.ZSTD, CompressionCodec.GZIP, CompressionCodec.LZ4_RAW]
)
@pytest.mark.parametrize("level", [1, 3, 9])
def test_levels_round_trip(codec: CompressionCodec, level: int) -> None:
    data = b"streamwrite " * 1000
    assert decompress(codec, compress(codec, data, level), len(data), max_size=MAX) == data


def test_memoryview_input() -> None:
    data = bytearray(b"abc" * 100)
    packed = compress(CompressionCodec.ZSTD, memoryview(data))
    assert decompress(CompressionCodec.ZSTD, memoryview(packed), 300, max_size=MAX) == data


def test_gzip_is_rfc1952() -> None:
    packed = compress(CompressionCodec.GZIP, b"hello")
    assert packed[:2] == b"\x1f\x8b"
    assert gzip.decompress(packed) == b"hello"


def test_gzip_multiple_members() -> None:
    data = b"first member " * 50 + b"second member " * 50
    packed = gzip.compress(data[:650]) + gzip.compress(data[650:])
    assert decompress(CompressionCodec.GZIP, packed, len(data), max_size=MAX) == data


def test_zstd_multiple_frames_and_no_content_size() -> None:
    cctx = zstandard.ZstdCompressor(write_content_size=False)
    packed = cctx.compress(b"a" * 1000) + zstandard.ZstdCompressor().compress(b"b" * 24)
    assert decompress(CompressionCodec.ZSTD, packed, 1024, max_size=MAX) == b"a" * 1000 + b"b" * 24


@pytest.mark.parametrize("codec", [CompressionCodec.LZ4, CompressionCodec.LZO])
def test_write_deprecated_codecs_unsupported(codec: CompressionCodec) -> None:
    with pytest.raises(UnsupportedError, match="LZ4_RAW"):
        compress(codec, b"x")


def test_read_lzo_unsupported() -> None:
    with pytest.raises(UnsupportedError):
        decompress(CompressionCodec.LZO, b"x", 1, max_size=MAX)


def test_bad_level_is_config_error() -> None:
    with pytest.raises(ConfigError):
        compress(CompressionCodec.ZSTD, b"x", level=1000)


@pytest.mark.parametrize("codec", [*WRITABLE, CompressionCodec.LZ4])
def test_declared_size_over_limit(codec: CompressionCodec) -> None:
    with pytest.raises(LimitError):
        decompress(codec, b"whatever", 1001, max_size=1000)


@pytest.mark.parametrize("codec", COMPRESSING)
def test_bomb_is_bounded(codec: CompressionCodec) -> None:
    # A small input that expands far past max_size while declaring a size within it.
    packed = compress(codec, bytes(50_000_000))
    assert len(packed) < 3_000_000
    with pytest.raises(FormatError):
        decompress(codec, packed, 1000, max_size=2000)


def test_zstd_bomb_without_content_size() -> None:
    cctx = zstandard.ZstdCompressor(write_content_size=False)
    packed = cctx.compress(bytes(100_000_000))
    with pytest.raises(FormatError, match="more than"):
        decompress(CompressionCodec.ZSTD, packed, 1 << 20, max_size=1 << 20)


@pytest.mark.parametrize("codec", [*WRITABLE])
@pytest.mark.parametrize("delta", [-1, 1])
def test_wrong_declared_size(codec: CompressionCodec, delta: int) -> None:
    data = bytes(range(256)) * 8
    with pytest.raises(FormatError):
        decompress(codec, compress(codec, data), len(data) + delta, max_size=MAX)


@pytest.mark.parametrize("codec", [*COMPRESSING, CompressionCodec.LZ4])
def test_garbage(codec: CompressionCodec) -> None:
    with pytest.raises(FormatError, match=codec.name):
        decompress(codec, b"\xff\x00garbage that is not compressed data" * 3, 100, max_size=MAX)


@pytest.mark.parametrize("codec", COMPRESSING)
def test_truncated(codec: CompressionCodec) -> None:
    data = bytes(range(256)) * 40
    packed = compress(codec, data)
    with pytest.raises(FormatError):
        decompress(codec, packed[: len(packed) // 2], len(data), max_size=MAX)


# --- deprecated LZ4 (Hadoop framing) -------------------------------------------------------


def _hadoop_frame(chunks: list[bytes]) -> bytes:
    out = b""
    for chunk in chunks:
        block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        out += struct.pack(">II", len(chunk), len(block)) + block
    return out


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=2000), min_size=1, max_size=5))
def test_lz4_hadoop_frames(chunks: list[bytes]) -> None:
    data = b"".join(chunks)
    assert decompress(CompressionCodec.LZ4, _hadoop_frame(chunks), len(data), max_size=MAX) == data


def test_lz4_fallback_raw_block_and_frame() -> None:
    data = b"parquet-cpp wrote raw blocks once " * 30
    raw = bytes(cramjam.lz4.compress_block(data, store_size=False))
    frame = bytes(cramjam.lz4.compress(data))
    assert decompress(CompressionCodec.LZ4, raw, len(data), max_size=MAX) == data
    assert decompress(CompressionCodec.LZ4, frame, len(data), max_size=MAX) == data


@pytest.mark.parametrize(
    "name",
    [
        "hadoop_lz4_compressed.parquet",
        "hadoop_lz4_compressed_larger.parquet",
        "non_hadoop_lz4_compressed.parquet",
    ],
)
def test_lz4_files(name: str) -> None:
    path = DATA_DIR / name
    raw = path.read_bytes()
    md = pq.ParquetFile(path).metadata
    table = pq.read_table(path)
    pages = 0
    for j in range(md.num_columns):
        col = md.row_group(0).column(j)
        start = col.dictionary_page_offset or col.data_page_offset
        end = start + col.total_compressed_size
        pos = start
        chunk_out = b""
        while pos < end:
            header, pos = read_struct(raw, pos)
            uncompressed, compressed = header[2], header[3]
            page = decompress(
                CompressionCodec.LZ4, raw[pos : pos + compressed], uncompressed, max_size=MAX
            )
            assert len(page) == uncompressed
            chunk_out += page
            pos += compressed
            pages += 1
        assert pos == end
        first = table.column(j)[0].as_py()
        if isinstance(first, str):
            assert first.encode() in chunk_out
    assert pages >= md.num_columns


def test_zstd_is_safe_from_several_threads() -> None:
    """Regression: one cached ZstdCompressor shared by threads failed ("Src size is
    incorrect") when a table's compaction encoded beside its ingest."""
    import threading

    rng = np.random.default_rng(7)
    pages = [rng.integers(0, 50, 20_000 + i, dtype=np.int64).tobytes() for i in range(8)]
    errors: list[BaseException] = []

    def work(page: bytes) -> None:
        try:
            for _ in range(40):
                packed = compress(CompressionCodec.ZSTD, page)
                back = decompress(CompressionCodec.ZSTD, packed, len(page), max_size=len(page))
                assert back == page
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(page,)) for page in pages]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[0]
