"""The cipher layer against real encrypted files from apache/parquet-testing.

The files were written by parquet-cpp (``data/*.parquet.encrypted``) and parquet-java
(``data/aes256/*``), so they are independent vectors for the module AADs, the framing and
the algorithms. Each file is taken apart by hand with our Thrift codec and
:class:`workers.cipher.ModuleCipher`:

* tail: ``len(4) "PARE"`` -> ``FileCryptoMetaData`` then the encrypted ``FOOTER`` module, or
  ``len(4) "PAR1"`` -> plaintext ``FileMetaData`` then its 28-byte signature;
* each column chunk: ``encrypted_column_metadata`` (``COLUMN_META_DATA``, column key);
* every page of every column chunk: encrypted header (``DICTIONARY_PAGE_HEADER`` or
  ``DATA_PAGE_HEADER`` with the page ordinal) then the encrypted body (``DICTIONARY_PAGE`` /
  ``DATA_PAGE``, CTR under ``AES_GCM_CTR_V1``), decompressed to the header's size;
* ``OFFSET_INDEX`` / ``COLUMN_INDEX`` modules, whose page locations must match the walk;
* Bloom filter header and bitset modules (types 8 and 9).

Decoded values are compared with what the writers' test generators put in
(parquet-cpp ``test_encryption_util.cc``: ``double_field[i] = i * 1.1111111``,
``float_field[i] = float32(i) * 1.1f``, ``int32_field[i] = i``), and row counts with the
README (50 rows per row group). Keys are listed in ``KEYS.md`` next to the data.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import pytest

from streamwrite.errors import EncryptionError
from streamwrite.format import structs as t
from streamwrite.format.aad import ModuleType
from streamwrite.format.enums import Encoding, PageType, Type
from streamwrite.format.thrift.codec import deserialize
from tests._vectors import PARQUET_TESTING
from workers.bloom import SplitBlockBloomFilter, hash_values
from workers.cipher import (
    CTR_OVERHEAD,
    GCM_OVERHEAD,
    Algorithm,
    ModuleCipher,
    resolve_algorithm,
)
from workers.compression import decompress

DATA = PARQUET_TESTING / "data"

FOOTER_KEY_128 = b"0123456789012345"
COLUMN_KEYS_128 = {b"kc1": b"1234567890123450", b"kc2": b"1234567890123451"}
FOOTER_KEY_256 = b"01234567890123456789012345678901"
COLUMN_KEYS_256 = {
    f"kc{n}".encode(): b"1234567890123456789012345678901" + str(n + 1).encode() for n in range(1, 9)
}
AAD_PREFIX = b"tester"
MAX_PAGE = 64 << 20
_T = TypeVar("_T")


@dataclass(frozen=True)
class Vector:
    path: Path
    aes256: bool = False
    aad_prefix: bytes | None = None  # supplied by the reader
    algorithm: Algorithm = Algorithm.AES_GCM_V1
    plaintext_footer: bool = False
    stored_prefix: bytes | None = None
    rows: int = 50  # per row group
    columns: int = 8
    offsets: tuple[float, float] = (0.0, 0.0)  # see _expected

    @property
    def footer_key(self) -> bytes:
        return FOOTER_KEY_256 if self.aes256 else FOOTER_KEY_128

    @property
    def column_keys(self) -> dict[bytes, bytes]:
        return COLUMN_KEYS_256 if self.aes256 else COLUMN_KEYS_128


VECTORS = [
    Vector(DATA / "encrypt_columns_and_footer.parquet.encrypted"),
    Vector(DATA / "encrypt_columns_and_footer_aad.parquet.encrypted", stored_prefix=AAD_PREFIX),
    Vector(
        DATA / "encrypt_columns_and_footer_disable_aad_storage.parquet.encrypted",
        aad_prefix=AAD_PREFIX,
    ),
    Vector(
        DATA / "encrypt_columns_and_footer_ctr.parquet.encrypted",
        algorithm=Algorithm.AES_GCM_CTR_V1,
    ),
    Vector(DATA / "encrypt_columns_plaintext_footer.parquet.encrypted", plaintext_footer=True),
    Vector(DATA / "uniform_encryption.parquet.encrypted"),
    # parquet-java 1.14, v2 pages, several data pages per chunk (page ordinals 0, 1, 2)
    Vector(
        DATA / "encrypt_columns_and_footer_bloom_filter.parquet.encrypted",
        rows=2000,
        columns=4,
        offsets=(0.5, 0.25),
    ),
    Vector(DATA / "aes256/encrypt_columns_and_footer.parquet.encrypted", aes256=True),
    Vector(
        DATA / "aes256/encrypt_columns_and_footer_disable_aad_storage.parquet.encrypted",
        aes256=True,
        aad_prefix=AAD_PREFIX,
    ),
    Vector(
        DATA / "aes256/encrypt_columns_and_footer_ctr.parquet.encrypted",
        aes256=True,
        algorithm=Algorithm.AES_GCM_CTR_V1,
    ),
    Vector(
        DATA / "aes256/encrypt_columns_plaintext_footer.parquet.encrypted",
        aes256=True,
        plaintext_footer=True,
    ),
    Vector(DATA / "aes256/uniform_encryption.parquet.encrypted", aes256=True),
]


def _id(v: Vector) -> str:
    return ("aes256/" if v.aes256 else "") + v.path.name.removesuffix(".parquet.encrypted")


@dataclass
class Chunk:
    """What the walk found in one column chunk."""

    name: str
    encrypted: bool
    column_key: bool
    meta: t.ColumnMetaData
    pages: list[tuple[int, int, t.PageHeader, bytes]] = field(default_factory=list)
    """(offset, on-disk size incl. header, header, decompressed body) per page."""
    bloom_bitset: bytes | None = None


@dataclass
class Walk:
    algorithm: Algorithm
    file_aad: bytes
    metadata: t.FileMetaData
    chunks: list[list[Chunk]]  # [row group][column]
    modules: dict[ModuleType, int]


def _tail(data: bytes) -> tuple[bytes, int]:
    magic = data[-4:]
    (length,) = struct.unpack_from("<I", data, len(data) - 8)
    return magic, len(data) - 8 - length


def walk(v: Vector) -> Walk:
    data = v.path.read_bytes()
    view = memoryview(data)
    modules: dict[ModuleType, int] = {}

    def count(mt: ModuleType) -> None:
        modules[mt] = modules.get(mt, 0) + 1

    magic, start = _tail(data)
    assert data[:4] == magic
    if magic == b"PARE":
        assert not v.plaintext_footer
        fcm, end = deserialize(t.FileCryptoMetaData, data, start)
        assert fcm.key_metadata == b"kf"
        assert fcm.encryption_algorithm is not None
        algorithm, file_aad = resolve_algorithm(fcm.encryption_algorithm, v.aad_prefix)
        footer_cipher = ModuleCipher(v.footer_key, file_aad, algorithm)
        plain, used = footer_cipher.decrypt(ModuleType.FOOTER, view[end : len(data) - 8])
        count(ModuleType.FOOTER)
        assert end + used == len(data) - 8
        metadata = _struct(t.FileMetaData, plain)
        assert metadata.encryption_algorithm is None
    else:
        assert magic == b"PAR1" and v.plaintext_footer
        metadata, end = deserialize(t.FileMetaData, data, start)
        assert end + 28 == len(data) - 8
        assert metadata.encryption_algorithm is not None
        assert metadata.footer_signing_key_metadata == b"kf"
        algorithm, file_aad = resolve_algorithm(metadata.encryption_algorithm, v.aad_prefix)
        footer_cipher = ModuleCipher(v.footer_key, file_aad, algorithm)
        footer_cipher.verify_footer(view[start:end], view[end : end + 28])
        count(ModuleType.FOOTER)
    assert algorithm is v.algorithm
    assert metadata.row_groups is not None

    chunks: list[list[Chunk]] = []
    for rg_index, rg in enumerate(metadata.row_groups):
        assert rg.ordinal in (None, rg_index)
        assert rg.columns is not None
        row: list[Chunk] = []
        for col, cc in enumerate(rg.columns):
            row.append(_walk_chunk(view, cc, rg_index, col, v, footer_cipher, count))
        chunks.append(row)
    return Walk(algorithm, file_aad, metadata, chunks, modules)


def _walk_chunk(
    view: memoryview,
    cc: t.ColumnChunk,
    rg: int,
    col: int,
    v: Vector,
    footer_cipher: ModuleCipher,
    count: Callable[[ModuleType], None],
) -> Chunk:
    crypto = cc.crypto_metadata
    cipher: ModuleCipher | None = None
    meta = cc.meta_data
    column_key = False
    if crypto is not None:
        if crypto.ENCRYPTION_WITH_COLUMN_KEY is not None:
            key_md = _n(crypto.ENCRYPTION_WITH_COLUMN_KEY.key_metadata)
            cipher = ModuleCipher(
                v.column_keys[key_md], footer_cipher_aad(footer_cipher), v.algorithm
            )
            encrypted_md = _n(cc.encrypted_column_metadata)
            plain, used = cipher.decrypt(ModuleType.COLUMN_META_DATA, encrypted_md, rg, col)
            count(ModuleType.COLUMN_META_DATA)
            assert used == len(encrypted_md)
            meta = _struct(t.ColumnMetaData, plain)
            assert meta.path_in_schema == crypto.ENCRYPTION_WITH_COLUMN_KEY.path_in_schema
            column_key = True
        else:
            assert crypto.ENCRYPTION_WITH_FOOTER_KEY is not None
            cipher = footer_cipher
    assert meta is not None
    name = ".".join(meta.path_in_schema or [])
    chunk = Chunk(name, cipher is not None, column_key, meta)

    has_dict = meta.dictionary_page_offset is not None
    pos = _n(meta.dictionary_page_offset if has_dict else meta.data_page_offset)
    end = pos + _n(meta.total_compressed_size)
    page_ordinal = 0
    first = True
    while pos < end:
        dict_page = first and has_dict
        first = False
        page_start = pos
        if cipher is None:
            header, hend = deserialize(t.PageHeader, view, pos)
            pos = hend
            body = bytes(view[pos : pos + _n(header.compressed_page_size)])
        else:
            hdr_type = (
                ModuleType.DICTIONARY_PAGE_HEADER if dict_page else ModuleType.DATA_PAGE_HEADER
            )
            plain, used = cipher.decrypt(hdr_type, view[pos:end], rg, col, page_ordinal)
            count(hdr_type)
            header = _struct(t.PageHeader, plain)
            pos += used
            body_type = ModuleType.DICTIONARY_PAGE if dict_page else ModuleType.DATA_PAGE
            module = view[pos : pos + _n(header.compressed_page_size)]
            body, used = cipher.decrypt(body_type, module, rg, col, page_ordinal)
            count(body_type)
            assert used == header.compressed_page_size
            overhead = CTR_OVERHEAD if v.algorithm is Algorithm.AES_GCM_CTR_V1 else GCM_OVERHEAD
            assert len(body) == header.compressed_page_size - overhead
            assert cipher.overhead(body_type) == overhead
        pos += _n(header.compressed_page_size)
        if dict_page:
            assert header.type == PageType.DICTIONARY_PAGE
        else:
            assert header.type in (PageType.DATA_PAGE, PageType.DATA_PAGE_V2)
            page_ordinal += 1
        chunk.pages.append((page_start, pos - page_start, header, _decompress(meta, header, body)))
    assert pos == end

    if cc.offset_index_offset is not None:
        index = _index_module(
            view,
            cc.offset_index_offset,
            cc.offset_index_length,
            cipher,
            ModuleType.OFFSET_INDEX,
            rg,
            col,
            count,
        )
        oi, _ = deserialize(t.OffsetIndex, index)
        data_pages = [(o, n) for o, n, h, _ in chunk.pages if h.type != PageType.DICTIONARY_PAGE]
        assert [(p.offset, p.compressed_page_size) for p in _n(oi.page_locations)] == data_pages
    if cc.column_index_offset is not None:
        index = _index_module(
            view,
            cc.column_index_offset,
            cc.column_index_length,
            cipher,
            ModuleType.COLUMN_INDEX,
            rg,
            col,
            count,
        )
        ci, _ = deserialize(t.ColumnIndex, index)
        assert len(_n(ci.null_pages)) == page_ordinal
    if meta.bloom_filter_offset is not None:
        assert cipher is not None
        pos = meta.bloom_filter_offset
        plain, used = cipher.decrypt(ModuleType.BLOOM_FILTER_HEADER, view[pos:], rg, col)
        count(ModuleType.BLOOM_FILTER_HEADER)
        bf = _struct(t.BloomFilterHeader, plain)
        bitset, used2 = cipher.decrypt(ModuleType.BLOOM_FILTER_BITSET, view[pos + used :], rg, col)
        count(ModuleType.BLOOM_FILTER_BITSET)
        assert len(bitset) == bf.numBytes
        if meta.bloom_filter_length is not None:
            assert used + used2 == meta.bloom_filter_length
        chunk.bloom_bitset = bitset
    return chunk


def _struct(cls: type[_T], plain: bytes) -> _T:
    """Decodes a decrypted Thrift module. parquet-java may pad module plaintexts with zero
    bytes (seen in its footer and Bloom filter headers), so the struct ends at its STOP and
    only zeros may follow."""
    obj, end = deserialize(cls, plain)
    assert not any(plain[end:]), f"non-zero bytes after a decrypted {cls.__name__}"
    return obj


def _n(value: _T | None) -> _T:
    """The value of a Thrift field the file must have set."""
    assert value is not None
    return value


def footer_cipher_aad(cipher: ModuleCipher) -> bytes:
    # the FOOTER AAD is file_aad || 0x00
    return cipher.aad(ModuleType.FOOTER)[:-1]


def _index_module(
    view: memoryview,
    offset: int,
    length: int | None,
    cipher: ModuleCipher | None,
    mt: ModuleType,
    rg: int,
    col: int,
    count: Callable[[ModuleType], None],
) -> bytes:
    assert length is not None
    module = view[offset : offset + length]
    if cipher is None:
        return bytes(module)
    plain, used = cipher.decrypt(mt, module, rg, col)
    count(mt)
    assert used == length
    return plain


def _decompress(meta: t.ColumnMetaData, header: t.PageHeader, body: bytes) -> bytes:
    v2 = header.data_page_header_v2
    codec, size = _n(meta.codec), _n(header.uncompressed_page_size)
    if v2 is not None:
        levels = _n(v2.definition_levels_byte_length) + _n(v2.repetition_levels_byte_length)
        if v2.is_compressed is False:
            out = body
        else:
            out = body[:levels] + decompress(codec, body[levels:], size - levels, max_size=MAX_PAGE)
    else:
        out = decompress(codec, body, size, max_size=MAX_PAGE)
    assert len(out) == size
    return out


@pytest.fixture(scope="module", params=VECTORS, ids=_id)
def walked(request: pytest.FixtureRequest) -> tuple[Vector, Walk]:
    v: Vector = request.param
    return v, walk(v)


def _values(chunk: Chunk, dtype: str) -> npt.NDArray[Any]:
    """First values of a required flat column: its dictionary, else its first PLAIN page
    (no levels: max definition and repetition levels are 0)."""
    _, _, header, body = chunk.pages[0]
    if header.type == PageType.DICTIONARY_PAGE:
        return np.frombuffer(body, dtype=dtype)
    if header.data_page_header_v2 is not None:
        assert header.data_page_header_v2.encoding == Encoding.PLAIN
    else:
        assert header.data_page_header is not None
        assert header.data_page_header.encoding == Encoding.PLAIN
    return np.frombuffer(body, dtype=dtype)


def _expected(v: Vector, n: int) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """Values the writers' generators produced: parquet-cpp / parquet-java encryption tests
    write ``double_field[i] = i * 1.1111111`` and ``float_field[i] = i * 1.1f``; the parquet-java
    Bloom filter test writes ``i + 0.5`` and ``i + 0.25``."""
    i = np.arange(n)
    if v.offsets != (0.0, 0.0):
        return i + v.offsets[0], (i + v.offsets[1]).astype(np.float32)
    return i * 1.1111111, i.astype(np.float32) * np.float32(1.1)


def test_every_module_decrypts(walked: tuple[Vector, Walk]) -> None:
    v, w = walked
    assert w.modules[ModuleType.FOOTER] == 1
    assert w.modules[ModuleType.DATA_PAGE_HEADER] == w.modules[ModuleType.DATA_PAGE] > 0
    assert w.modules.get(ModuleType.OFFSET_INDEX, 0) > 0
    names = [c.name for c in w.chunks[0]]
    assert "double_field" in names and "float_field" in names
    for row in w.chunks:
        for chunk in row:
            if chunk.name in ("double_field", "float_field"):
                assert chunk.encrypted
                # column keys unless the whole file uses the footer key
                assert chunk.column_key == ("uniform" not in v.path.name)
            if "uniform" in v.path.name:
                assert chunk.encrypted and not chunk.column_key
    if v.stored_prefix is not None or v.aad_prefix is not None:
        assert w.file_aad.startswith(AAD_PREFIX) and len(w.file_aad) == len(AAD_PREFIX) + 8
    else:
        assert len(w.file_aad) == 8


def test_row_counts(walked: tuple[Vector, Walk]) -> None:
    v, w = walked
    rgs = w.metadata.row_groups
    assert rgs
    assert w.metadata.num_rows == sum(_n(rg.num_rows) for rg in rgs)
    for rg, row in zip(rgs, w.chunks, strict=True):
        assert rg.num_rows == v.rows
        assert len(row) == v.columns
        for chunk in row:
            num_values = sum(
                _n((h.data_page_header_v2 or _n(h.data_page_header)).num_values)
                for _, _, h, _ in chunk.pages
                if h.type != PageType.DICTIONARY_PAGE
            )
            assert num_values == chunk.meta.num_values


def test_values_match_the_writer(walked: tuple[Vector, Walk]) -> None:
    v, w = walked
    for row in w.chunks:
        by_name = {c.name: c for c in row}
        doubles = _values(by_name["double_field"], "<f8")
        floats = _values(by_name["float_field"], "<f4")
        n = min(len(doubles), len(floats), v.rows)
        assert n >= 50
        want_doubles, want_floats = _expected(v, n)
        np.testing.assert_allclose(doubles[:n], want_doubles, rtol=1e-12)
        np.testing.assert_array_equal(floats[:n], want_floats)


def test_bloom_filter_modules() -> None:
    v = next(v for v in VECTORS if "bloom" in v.path.name)
    w = walk(v)
    assert w.modules[ModuleType.BLOOM_FILTER_HEADER] == w.modules[ModuleType.BLOOM_FILTER_BITSET]
    assert w.modules[ModuleType.BLOOM_FILTER_BITSET] >= 2
    blooms = {c.name: c.bloom_bitset for row in w.chunks for c in row if c.bloom_bitset}
    assert set(blooms) == {"double_field", "float_field"}
    # the decrypted bitsets hold the written values (XXH64 of their PLAIN bytes)
    doubles, floats = _expected(v, v.rows)
    for name, values, ptype in [
        ("double_field", doubles, Type.DOUBLE),
        ("float_field", floats, Type.FLOAT),
    ]:
        bloom = SplitBlockBloomFilter.from_bitset(blooms[name])
        assert bloom.check_hashes(hash_values(values, ptype)).all()
    # several data pages per chunk: page ordinals above 0 are in the AADs
    double_chunk = next(c for c in w.chunks[0] if c.name == "double_field")
    assert sum(h.type != PageType.DICTIONARY_PAGE for _, _, h, _ in double_chunk.pages) >= 3


@pytest.mark.parametrize("v", [v for v in VECTORS if v.aad_prefix is not None], ids=_id)
def test_missing_aad_prefix_is_refused(v: Vector) -> None:
    with pytest.raises(EncryptionError, match="supply"):
        walk(Vector(v.path, aes256=v.aes256))
    with pytest.raises(EncryptionError, match="FOOTER"):
        walk(Vector(v.path, aes256=v.aes256, aad_prefix=b"wrong"))


def test_stored_prefix_mismatch_is_refused() -> None:
    v = next(v for v in VECTORS if v.stored_prefix is not None)
    with pytest.raises(EncryptionError, match="differs"):
        walk(Vector(v.path, aad_prefix=b"other"))


@pytest.mark.parametrize("v", VECTORS[:5], ids=_id)
def test_wrong_footer_key_is_refused(v: Vector) -> None:
    data = v.path.read_bytes()
    magic, start = _tail(data)
    if magic == b"PARE":
        fcm, end = deserialize(t.FileCryptoMetaData, data, start)
        alg, aad = resolve_algorithm(_n(fcm.encryption_algorithm), v.aad_prefix)
        bad = ModuleCipher(b"x" * 16, aad, alg)
        with pytest.raises(EncryptionError, match="FOOTER"):
            bad.decrypt(ModuleType.FOOTER, data[end:-8])
    else:
        md, end = deserialize(t.FileMetaData, data, start)
        alg, aad = resolve_algorithm(_n(md.encryption_algorithm), v.aad_prefix)
        with pytest.raises(EncryptionError, match="signature"):
            ModuleCipher(b"x" * 16, aad, alg).verify_footer(data[start:end], data[end : end + 28])
        tampered = bytearray(data[start:end])
        tampered[-2] ^= 1
        good = ModuleCipher(v.footer_key, aad, alg)
        with pytest.raises(EncryptionError, match="signature"):
            good.verify_footer(bytes(tampered), data[end : end + 28])


def test_moved_page_is_refused() -> None:
    """A page header decrypted with another page's ordinal fails: the AAD binds its place."""
    v = VECTORS[0]
    w = walk(v)
    data = v.path.read_bytes()
    rg0 = w.chunks[0]
    col = next(i for i, c in enumerate(rg0) if c.name == "double_field")
    chunk = rg0[col]
    cipher = ModuleCipher(v.column_keys[b"kc1"], w.file_aad, w.algorithm)
    offset, _, _, _ = next(p for p in chunk.pages if p[2].type == PageType.DATA_PAGE)
    cipher.decrypt(ModuleType.DATA_PAGE_HEADER, data[offset:], 0, col, 0)
    for rg, c, page in [(0, col, 1), (1, col, 0), (0, col - 1, 0)]:
        with pytest.raises(EncryptionError, match="DATA_PAGE_HEADER"):
            cipher.decrypt(ModuleType.DATA_PAGE_HEADER, data[offset:], rg, c, page)
