"""Encrypted DATA_PAGE_V2 bodies in both layouts (``FileEncryption.v2_page_layout``).

* ``"arrow"`` (default; parquet-cpp/pyarrow, arrow-rs): ``DATA_PAGE(levels + values)``.
* ``"parquet-java"`` (parquet-java, so Spark): ``levels + DATA_PAGE(values)``.

Our reader reads both, under AES_GCM_V1 and AES_GCM_CTR_V1, with nullable columns (levels
present) and checksums verified. pyarrow reads the Arrow layout; on the parquet-java layout of a
nullable column it fails with an OSError (recorded below): it decrypts the whole body as one
module, taking the plaintext levels for the module length.
Spark's side is in ``tests/spark/test_spark_encryption.py``.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.feather as feather
import pytest

from streamwrite import ParquetFile, read_table
from streamwrite.crypto import EncryptionConfig, InMemoryKms, KeyWrapper
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.errors import ConfigError, EncryptionError
from streamwrite.format.aad import ModuleType
from streamwrite.format.enums import CompressionCodec, Encoding
from streamwrite.writer import write_table
from tests.crypto.test_writer_encryption import MASTER_KEYS, TABLE, WRITE_OPTIONS, _job, run_pyarrow
from workers.cipher import Algorithm, ModuleCipher
from workers.page import ChunkCrypto, build_data_page_v2

LAYOUTS = ("arrow", "parquet-java")
ALGORITHMS = ("AES_GCM_V1", "AES_GCM_CTR_V1")


def encryption(algorithm: str, layout: str, plaintext_footer: bool = False) -> FileEncryption:
    config = EncryptionConfig(
        footer_key_id="kf",
        column_keys={"a": "kc", "b": "kc", "e": "kd"},
        algorithm=algorithm,
        plaintext_footer=plaintext_footer,
    )
    return FileEncryption(
        KeyWrapper(InMemoryKms(MASTER_KEYS), config),
        footer_key_columns=("c", "d"),
        v2_page_layout=layout,
    )


def write_v2(path: Path, algorithm: str, layout: str, table: pa.Table = TABLE) -> None:
    write_table(
        table,
        path,
        encryption=encryption(algorithm, layout),
        data_page_version="2.0",
        compression="zstd",
        write_page_checksum=True,
        **WRITE_OPTIONS,
    )


def _decryption() -> DecryptionConfig:
    return DecryptionConfig.from_kms(InMemoryKms(MASTER_KEYS))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_our_reader_reads_both_layouts(tmp_path: Path, algorithm: str, layout: str) -> None:
    path = tmp_path / "f.parquet"
    write_v2(path, algorithm, layout)
    assert read_table(path, decryption=_decryption()).equals(TABLE)
    assert read_table(path, decryption=_decryption(), verify_checksums=False).equals(TABLE)


def test_layouts_differ_only_in_v2_bodies(tmp_path: Path) -> None:
    """Same keys and rows: the files differ (nullable v2 pages) but hold the same table."""
    paths = []
    for layout in LAYOUTS:
        path = tmp_path / f"{layout}.parquet"
        write_v2(path, "AES_GCM_V1", layout)
        paths.append(path)
    assert paths[0].read_bytes() != paths[1].read_bytes()
    for path in paths:
        assert read_table(path, decryption=_decryption()).equals(TABLE)


@pytest.mark.parametrize("algorithm", [Algorithm.AES_GCM_V1, Algorithm.AES_GCM_CTR_V1])
@pytest.mark.parametrize("plaintext_levels", [False, True])
def test_page_builder_layout(algorithm: Algorithm, plaintext_levels: bool) -> None:
    cipher = ModuleCipher(os.urandom(16), b"aad-prefix-and-unique", algorithm)
    crypto = ChunkCrypto(cipher, 1, 2, v2_levels_plaintext=plaintext_levels)
    levels = bytes([0x07, 0x01, 0x10])  # some RLE-hybrid bytes
    values = b"v" * 500
    page = build_data_page_v2(
        def_levels=levels,
        values=values,
        num_values=10,
        num_nulls=2,
        num_rows=10,
        encoding=Encoding.PLAIN,
        codec=CompressionCodec.UNCOMPRESSED,
        compression_level=None,
        write_crc=True,
        crypto=crypto,
        page_ordinal=3,
    )
    body = page.data[page.header_size :]
    assert len(body) == page.compressed_page_size
    assert page.uncompressed_page_size == len(levels) + len(values)
    if plaintext_levels:
        assert body[: len(levels)] == levels
        (length,) = struct.unpack_from("<I", body, len(levels))
        assert length == len(body) - len(levels) - 4
        plain, used = cipher.decrypt(ModuleType.DATA_PAGE, body[len(levels) :], 1, 2, 3)
        assert (plain, used) == (values, len(body) - len(levels))
    else:
        (length,) = struct.unpack_from("<I", body, 0)
        assert length == len(body) - 4
        plain, used = cipher.decrypt(ModuleType.DATA_PAGE, body, 1, 2, 3)
        assert (plain, used) == (levels + values, len(body))


def _flip_last_byte_of_chunk(path: Path, column: int) -> None:
    """Flips the last byte of the first row group's chunk of ``column``: inside the last page's
    values (a GCM tag), in either layout."""
    with ParquetFile(path, decryption=_decryption()) as pf:
        meta = pf.column_metadata(0, column)
    start = meta.dictionary_page_offset or meta.data_page_offset
    assert start is not None and meta.total_compressed_size is not None
    data = bytearray(path.read_bytes())
    data[start + meta.total_compressed_size - 1] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_tampered_v2_body_names_the_module(tmp_path: Path, layout: str) -> None:
    path = tmp_path / "f.parquet"
    write_v2(path, "AES_GCM_V1", layout)
    _flip_last_byte_of_chunk(path, 2)  # "c": nullable, no dictionary
    with pytest.raises(EncryptionError, match="DATA_PAGE"):
        read_table(path, decryption=_decryption(), verify_checksums=False)


def test_bad_layout_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="v2_page_layout"):
        encryption("AES_GCM_V1", "java")
    assert "v2_page_layout='parquet-java'" in repr(encryption("AES_GCM_V1", "parquet-java"))


def test_pyarrow_reads_the_arrow_layout_only(tmp_path: Path) -> None:
    expected = tmp_path / "expected.feather"
    feather.write_feather(TABLE, expected)
    jobs = []
    for algorithm in ALGORITHMS:
        for layout in LAYOUTS:
            path = tmp_path / f"{layout}-{algorithm}.parquet"
            write_v2(path, algorithm, layout)
            name = f"{layout}-{algorithm}"
            jobs.append(_job(name, path, expected, verify_checksums=True))
            jobs.append(_job(name + "-a", path, expected, columns=["a"]))
    results = run_pyarrow(tmp_path, jobs)
    for algorithm in ALGORITHMS:
        assert results[f"arrow-{algorithm}"] == "ok", results
        assert results[f"arrow-{algorithm}-a"] == "ok", results
        # "a" is required: no levels, so both layouts are the same bytes
        assert results[f"parquet-java-{algorithm}-a"] == "ok", results
        # pyarrow (26) decrypts the whole body of a page with levels as one module, so it takes
        # the levels for a length prefix: "OSError: Written ciphertext length 3478647559 plus
        # length buffer length 4 overflows int32"
        assert results[f"parquet-java-{algorithm}"].startswith("error: OSError"), results
