"""DATA_PAGE_V2 with repetition levels: ``rep def values``, lengths in the header, in both
encrypted layouts (pyarrow's: one module; parquet-java's: plaintext levels, values module)."""

from __future__ import annotations

import os
import struct

import pytest

from streamwrite.format import structs as t
from streamwrite.format.aad import ModuleType
from streamwrite.format.enums import CompressionCodec, Encoding
from streamwrite.format.thrift.codec import deserialize
from workers.cipher import Algorithm, ModuleCipher
from workers.page import ChunkCrypto, build_data_page_v2

REP = bytes.fromhex("035800")  # Name.Language.Code's levels (tests/workers/test_chunk_levels.py)
DEF = bytes.fromhex("039a01")
VALUES = b"v" * 300


def _page(crypto: ChunkCrypto | None, codec: CompressionCodec) -> tuple[t.PageHeader, bytes]:
    page = build_data_page_v2(
        rep_levels=REP,
        def_levels=DEF,
        values=VALUES,
        num_values=5,
        num_nulls=2,
        num_rows=2,
        encoding=Encoding.PLAIN,
        codec=codec,
        compression_level=None,
        write_crc=True,
        crypto=crypto,
        page_ordinal=4,
    )
    if crypto is None:
        header_obj, size = deserialize(t.PageHeader, page.data)
        assert size == page.header_size
    else:
        plain, size = crypto.cipher.decrypt(ModuleType.DATA_PAGE_HEADER, page.data, 1, 2, 4)
        assert size == page.header_size
        header_obj, _ = deserialize(t.PageHeader, plain)
    assert page.uncompressed_page_size == len(REP) + len(DEF) + len(VALUES)
    return header_obj, page.data[page.header_size :]


@pytest.mark.parametrize("codec", [CompressionCodec.UNCOMPRESSED, CompressionCodec.ZSTD])
def test_v2_body_is_rep_def_values(codec: CompressionCodec) -> None:
    header, body = _page(None, codec)
    v2 = header.data_page_header_v2
    assert (v2.num_values, v2.num_nulls, v2.num_rows) == (5, 2, 2)
    assert (v2.repetition_levels_byte_length, v2.definition_levels_byte_length) == (3, 3)
    assert body[:6] == REP + DEF  # levels are never compressed
    assert v2.is_compressed == (codec != CompressionCodec.UNCOMPRESSED)
    assert header.compressed_page_size == len(body)


@pytest.mark.parametrize("plaintext_levels", [False, True])
def test_encrypted_v2_layouts_with_rep_levels(plaintext_levels: bool) -> None:
    cipher = ModuleCipher(os.urandom(16), b"aad-prefix-and-unique", Algorithm.AES_GCM_V1)
    crypto = ChunkCrypto(cipher, 1, 2, v2_levels_plaintext=plaintext_levels)
    header, body = _page(crypto, CompressionCodec.UNCOMPRESSED)
    assert header.data_page_header_v2.repetition_levels_byte_length == len(REP)
    if plaintext_levels:
        assert body[:6] == REP + DEF
        (length,) = struct.unpack_from("<I", body, 6)
        assert length == len(body) - 6 - 4
        plain, used = cipher.decrypt(ModuleType.DATA_PAGE, body[6:], 1, 2, 4)
        assert (plain, used) == (VALUES, len(body) - 6)
    else:
        plain, used = cipher.decrypt(ModuleType.DATA_PAGE, body, 1, 2, 4)
        assert (plain, used) == (REP + DEF + VALUES, len(body))
