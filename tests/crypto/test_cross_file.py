"""Modules moved between pages, columns, row groups and files under one key are refused (spec 7.3).

Every file, column and footer here is encrypted with the **same** 16-byte key, so nothing but the
module AADs (``aad_file_unique`` of the file, module type, row group, column and page ordinals)
tells the modules apart. Two files A and B hold the same rows in the same layout (PLAIN,
uncompressed, no page CRCs: equal module lengths at equal offsets); each gets its own random
``aad_file_unique``. Splicing B's bytes into A, or moving A's own modules around, must end in
:class:`~streamwrite.errors.EncryptionError` naming the module, never in data.

AES_GCM_CTR_V1 page bodies are CTR-encrypted without a tag (spec): a body alone moved between
files under the same key decrypts to the other file's values. The page CRC (on by default), which
covers the encrypted bytes, is what catches that; the test below pins it as a ChecksumError.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pytest

import streamwrite
from streamwrite.crypto import ExplicitKeys
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.errors import ChecksumError, EncryptionError
from streamwrite.format import structs as t
from streamwrite.format.aad import ModuleType
from streamwrite.format.enums import PageType
from streamwrite.reader.file import ParquetFile
from streamwrite.reader.verify import verify_file
from workers.cipher import Algorithm

KEY = bytes(range(16))
COLUMNS = ("a", "b", "c")
ROWS = 1200
OPTIONS = {
    "row_group_size": 600,  # row groups 0, 1
    "data_page_row_limit": 200,  # pages 0, 1, 2 per chunk
    "compression": "none",
    "use_dictionary": False,
    "write_page_checksum": False,  # a CRC varint would make header modules differ in length
    "bloom_filter_options": {"a": True},
}
CONFIG = DecryptionConfig(ExplicitKeys({"k": KEY}, "k", dict.fromkeys(COLUMNS, "k")))
ALGORITHMS = [Algorithm.AES_GCM_V1, Algorithm.AES_GCM_CTR_V1]


def _table(seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "a": pa.array(rng.integers(0, 1 << 40, ROWS), pa.int64()),
            "b": pa.array(rng.integers(0, 1 << 40, ROWS), pa.int64()),  # same type and size as a
            "c": pa.array(rng.normal(size=ROWS)),
        }
    )


def _encryption(algorithm: Algorithm) -> FileEncryption:
    keys = ExplicitKeys({"k": KEY}, "k", dict.fromkeys(COLUMNS, "k"))  # one key for everything
    return FileEncryption(keys, algorithm=algorithm.value)


def _write(algorithm: Algorithm, table: pa.Table, **options: object) -> bytes:
    buf = io.BytesIO()
    streamwrite.write_table(
        table, buf, encryption=_encryption(algorithm), **dict(OPTIONS, **options)
    )
    return buf.getvalue()


@dataclass(frozen=True)
class Page:
    offset: int  # header module
    header_size: int  # 4 + its length
    size: int  # header + body modules

    @property
    def body(self) -> tuple[int, int]:
        return self.offset + self.header_size, self.size - self.header_size


@dataclass(frozen=True)
class Layout:
    """Byte positions of the modules of one file."""

    data: bytes
    metadata: t.FileMetaData
    pages: dict[tuple[int, int], list[Page]]  # (row group, column) -> data pages in order
    chunks: dict[tuple[int, int], tuple[int, int]]  # (row group, column) -> (offset, size)

    def chunk(self, rg: int, col: int) -> t.ColumnChunk:
        return ((self.metadata.row_groups or [])[rg].columns or [])[col]


def _layout(data: bytes) -> Layout:
    pages: dict[tuple[int, int], list[Page]] = {}
    chunks: dict[tuple[int, int], tuple[int, int]] = {}
    with ParquetFile(data, decryption=CONFIG) as pf:
        specs = pf._parquet_schema.columns
        for rg in range(pf.num_row_groups):
            for spec in specs:
                decoded = pf._decode_column_chunk(rg, spec)
                found = []
                for p in decoded.pages:
                    assert p.page_type != PageType.DICTIONARY_PAGE
                    (length,) = struct.unpack_from("<I", data, p.offset)
                    found.append(Page(p.offset, 4 + length, p.size))
                pages[(rg, spec.index)] = found
                chunks[(rg, spec.index)] = pf._chunk_range(rg, spec)
        metadata = pf.thrift_metadata
    return Layout(data, metadata, pages, chunks)


def _splice(target: bytes, offset: int, replacement: bytes) -> bytes:
    return target[:offset] + replacement + target[offset + len(replacement) :]


@pytest.fixture(scope="module", params=ALGORITHMS, ids=lambda a: a.name)
def pair(request: pytest.FixtureRequest) -> tuple[Layout, Layout, pa.Table]:
    """Files A and B: same rows, same key, same layout, different aad_file_unique."""
    table = _table()
    a = _layout(_write(request.param, table))
    b = _layout(_write(request.param, table))
    assert a.pages == b.pages and a.chunks == b.chunks  # identical layouts
    assert a.data != b.data
    for f in (a, b):
        assert streamwrite.read_table(f.data, decryption=CONFIG).equals(table)
    return a, b, table


def _refused(data: bytes, pattern: str, columns: list[str] | None = None) -> None:
    with pytest.raises(EncryptionError, match=pattern):
        streamwrite.read_table(data, columns=columns, decryption=CONFIG)


# --- between files ---------------------------------------------------------------------------


@pytest.mark.parametrize(("rg", "col", "page"), [(0, 0, 0), (1, 2, 2), (1, 1, 1)])
def test_page_from_the_other_file_at_the_same_place(
    pair: tuple[Layout, Layout, pa.Table], rg: int, col: int, page: int
) -> None:
    a, b, _ = pair
    p = b.pages[(rg, col)][page]
    spliced = _splice(a.data, p.offset, b.data[p.offset : p.offset + p.size])
    _refused(spliced, f"DATA_PAGE_HEADER module of row group {rg}, column {col}, page {page}")


def test_page_body_from_the_other_file(pair: tuple[Layout, Layout, pa.Table]) -> None:
    """GCM: the body alone fails its tag. CTR: bodies carry no tag; with identical rows the
    body decrypts to identical values (the nonce travels with it), so nothing wrong is read."""
    a, b, table = pair
    start, size = b.pages[(1, 0)][1].body
    spliced = _splice(a.data, start, b.data[start : start + size])
    with ParquetFile(a.data, decryption=CONFIG) as pf:
        ctr = pf.encryption_algorithm == "AES_GCM_CTR_V1"
    if ctr:
        assert streamwrite.read_table(spliced, decryption=CONFIG).equals(table)
    else:
        _refused(spliced, "DATA_PAGE module of row group 1, column 0, page 1")


def test_whole_column_chunk_from_the_other_file(pair: tuple[Layout, Layout, pa.Table]) -> None:
    a, b, _ = pair
    start, size = b.chunks[(1, 2)]
    spliced = _splice(a.data, start, b.data[start : start + size])
    _refused(spliced, "module of row group 1, column 2, page 0", columns=["c"])
    # the other columns are untouched and still read
    assert streamwrite.read_table(spliced, columns=["a", "b"], decryption=CONFIG).num_rows == ROWS


def test_every_page_region_of_the_other_file(pair: tuple[Layout, Layout, pa.Table]) -> None:
    """Everything from the first page to the footer from B, A's footer kept: nothing reads."""
    a, b, _ = pair
    first = a.chunks[(0, 0)][0]
    end = len(a.data) - 8 - struct.unpack("<I", a.data[-8:-4])[0]
    spliced = a.data[:first] + b.data[first:end] + a.data[end:]
    for name in COLUMNS:
        _refused(spliced, "DATA_PAGE_HEADER module of row group 0", columns=[name])


def test_footer_of_the_other_file(pair: tuple[Layout, Layout, pa.Table]) -> None:
    """B's footer (its own aad_file_unique, decrypts fine) on A's pages: every page is refused."""
    a, b, _ = pair
    end = len(a.data) - 8 - struct.unpack("<I", a.data[-8:-4])[0]
    spliced = a.data[:end] + b.data[end:]
    with ParquetFile(spliced, decryption=CONFIG) as pf:  # the footer itself is B's, and sound
        assert pf.thrift_metadata == b.metadata
    for name in COLUMNS:
        _refused(spliced, "DATA_PAGE_HEADER module of row group 0", columns=[name])


@pytest.mark.parametrize(
    ("module_type", "offset_field", "length_field"),
    [
        (ModuleType.COLUMN_INDEX, "column_index_offset", "column_index_length"),
        (ModuleType.OFFSET_INDEX, "offset_index_offset", "offset_index_length"),
    ],
)
def test_page_index_module_from_the_other_file(
    pair: tuple[Layout, Layout, pa.Table],
    module_type: ModuleType,
    offset_field: str,
    length_field: str,
) -> None:
    a, b, _ = pair
    chunk = a.chunk(1, 1)
    offset, length = getattr(chunk, offset_field), getattr(chunk, length_field)
    other = b.chunk(1, 1)
    assert (offset, length) == (getattr(other, offset_field), getattr(other, length_field))
    spliced = _splice(a.data, offset, b.data[offset : offset + length])
    with ParquetFile(spliced, decryption=CONFIG) as pf:
        decryptor = pf._chunk_decryptor(1, 1)
        assert decryptor is not None
        with pytest.raises(EncryptionError, match=f"{module_type.name} module of row group 1"):
            decryptor.decrypt(module_type, pf.read_bytes(offset, length))
        # A's own module at its place decrypts
        with ParquetFile(a.data, decryption=CONFIG) as original:
            own = original._chunk_decryptor(1, 1)
            assert own is not None
            own.decrypt(module_type, original.read_bytes(offset, length))
    report = verify_file(spliced, decryption=CONFIG)
    assert any(module_type.name in p and "row group 1" in p for p in report.problems), report
    assert verify_file(a.data, decryption=CONFIG).ok


@pytest.mark.parametrize(
    "module_type", [ModuleType.BLOOM_FILTER_HEADER, ModuleType.BLOOM_FILTER_BITSET]
)
def test_bloom_filter_module_from_the_other_file(
    pair: tuple[Layout, Layout, pa.Table], module_type: ModuleType
) -> None:
    a, b, _ = pair
    with ParquetFile(a.data, decryption=CONFIG) as pf:
        meta = pf._column_metadata(0, 0)
    offset = meta.bloom_filter_offset
    assert offset is not None
    (header_length,) = struct.unpack_from("<I", a.data, offset)
    start = offset if module_type is ModuleType.BLOOM_FILTER_HEADER else offset + 4 + header_length
    (length,) = struct.unpack_from("<I", a.data, start)
    assert b.data[start : start + 4] == a.data[start : start + 4]
    spliced = _splice(a.data, start, b.data[start : start + 4 + length])
    report = verify_file(spliced, decryption=CONFIG)
    assert any(module_type.name in p and "row group 0" in p for p in report.problems), report
    assert streamwrite.read_table(spliced, decryption=CONFIG).num_rows == ROWS  # pages untouched


# --- within one file ---------------------------------------------------------------------------


def test_pages_swapped_within_a_chunk(pair: tuple[Layout, Layout, pa.Table]) -> None:
    a, _, _ = pair
    p0, p1 = a.pages[(0, 1)][:2]
    assert p0.size == p1.size and p0.offset + p0.size == p1.offset
    one, two = a.data[p0.offset : p1.offset], a.data[p1.offset : p1.offset + p1.size]
    swapped = _splice(a.data, p0.offset, two + one)
    _refused(swapped, "DATA_PAGE_HEADER module of row group 0, column 1, page 0")


def test_page_copied_to_another_column(pair: tuple[Layout, Layout, pa.Table]) -> None:
    """Column a's page 1 over column b's page 1 (both INT64, same size, same key)."""
    a, _, _ = pair
    src, dst = a.pages[(0, 0)][1], a.pages[(0, 1)][1]
    assert src.size == dst.size
    moved = _splice(a.data, dst.offset, a.data[src.offset : src.offset + src.size])
    _refused(moved, "DATA_PAGE_HEADER module of row group 0, column 1, page 1", columns=["b"])


def test_chunk_copied_to_another_row_group(pair: tuple[Layout, Layout, pa.Table]) -> None:
    a, _, _ = pair
    (src, size), (dst, dst_size) = a.chunks[(0, 2)], a.chunks[(1, 2)]
    assert size == dst_size
    moved = _splice(a.data, dst, a.data[src : src + size])
    _refused(moved, "DATA_PAGE_HEADER module of row group 1, column 2, page 0", columns=["c"])


# --- CTR page bodies: the CRC -------------------------------------------------------------------


def test_ctr_page_body_with_other_values_is_caught_by_the_page_crc() -> None:
    """AES_GCM_CTR_V1 bodies have no tag: B's body (other values, same length) under A's
    header decrypts under the shared key. A's header is intact (GCM) and its CRC, taken over
    the encrypted body, no longer matches."""
    table_a, table_b = _table(1), _table(2)
    a = _layout(_write(Algorithm.AES_GCM_CTR_V1, table_a, write_page_checksum=True))
    b = _layout(_write(Algorithm.AES_GCM_CTR_V1, table_b, write_page_checksum=True))
    pa_, pb = a.pages[(0, 0)][0], b.pages[(0, 0)][0]
    (a_start, a_size), (b_start, b_size) = pa_.body, pb.body
    assert a_size == b_size
    spliced = _splice(a.data, a_start, b.data[b_start : b_start + b_size])
    with pytest.raises(ChecksumError):
        streamwrite.read_table(spliced, columns=["a"], decryption=CONFIG)
