"""Page assembly: encoded sections -> compressed body -> [encrypted body] -> CRC -> header.

Byte layout of one page in a column chunk (parquet-format, "Data Pages"; encryption: spec 7.3,
"Parquet Modular Encryption", 5.1 and 4.4)::

    page      := PageHeader (Thrift compact) body
               | enc(PageHeader) enc(body)                 encrypted column
    v1 body   := compress( [rep levels] [def levels] values )   levels: u32 LE length + RLE hybrid
    v2 body   := [rep levels] [def levels] maybe-compress( values )   levels: RLE hybrid only
    dict body := compress( PLAIN dictionary entries )
    enc(x)    := length nonce ciphertext [tag]             see workers.cipher

In an encrypted column the body is one ``DATA_PAGE`` / ``DICTIONARY_PAGE`` module (AES-CTR under
``AES_GCM_CTR_V1``, else AES-GCM) and the header one ``DATA_PAGE_HEADER`` /
``DICTIONARY_PAGE_HEADER`` module (always AES-GCM); data page modules carry the page's ordinal
in the chunk (data pages counted from 0, the dictionary page not counted), as parquet-cpp and
parquet-java write them.

``PageHeader.crc`` is the CRC32 (zlib polynomial) of the body bytes exactly as stored, i.e.
after compression and encryption (as parquet-cpp). ``uncompressed_page_size`` counts levels +
values before compression; ``compressed_page_size`` is the stored body size (the framed module
when encrypted). In v2, ``is_compressed`` is cleared when compression would not make the values
smaller.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from streamwrite.format import structs as t
from streamwrite.format.aad import ModuleType
from streamwrite.format.enums import CompressionCodec, Encoding, PageType
from streamwrite.format.thrift.codec import serialize
from workers.cipher import ModuleCipher
from workers.compression import compress

__all__ = [
    "BuiltPage",
    "ChunkCrypto",
    "build_data_page_v1",
    "build_data_page_v2",
    "build_dictionary_page",
]


@dataclass(frozen=True, slots=True)
class ChunkCrypto:
    """How the modules of one column chunk are encrypted (picklable, key hidden in ``repr``).

    Attributes:
        cipher: The column's cipher (its column key, or the footer key).
        row_group_ordinal: The chunk's row group ordinal in the file (``RowGroup.ordinal``).
        column_ordinal: The column's leaf ordinal in the schema.
        v2_levels_plaintext: DATA_PAGE_V2 layout. False (parquet-cpp/pyarrow, arrow-rs): the
            whole body is one DATA_PAGE module. True (parquet-java, Spark): the levels stay in
            plaintext and only the (compressed) values are the DATA_PAGE module.
    """

    cipher: ModuleCipher
    row_group_ordinal: int
    column_ordinal: int
    v2_levels_plaintext: bool = False

    def encrypt(
        self, module_type: ModuleType, plaintext: bytes | bytearray, page_ordinal: int = -1
    ) -> bytes:
        """Returns: ``plaintext`` as one framed module of this chunk (see ``ModuleCipher``).

        Raises:
            LimitError: An ordinal exceeds 32767.
        """
        return self.cipher.encrypt(
            module_type, plaintext, self.row_group_ordinal, self.column_ordinal, page_ordinal
        )


@dataclass(frozen=True, slots=True)
class BuiltPage:
    """A page ready to be written: ``header + body``, with its sizes."""

    data: bytes
    header_size: int
    uncompressed_page_size: int
    compressed_page_size: int

    @property
    def uncompressed_total_size(self) -> int:
        """Header plus uncompressed body: what ``total_uncompressed_size`` sums."""
        return self.header_size + self.uncompressed_page_size


def _crc(body: bytes, enabled: bool) -> int | None:
    """CRC32 as Thrift's signed i32, or None when checksums are off."""
    if not enabled:
        return None
    value = zlib.crc32(body)
    return value - (1 << 32) if value >= (1 << 31) else value


def _seal(body: bytes, crypto: ChunkCrypto | None, dictionary: bool, page_ordinal: int) -> bytes:
    """The body as stored: itself, or its encrypted module."""
    if crypto is None:
        return body
    module = ModuleType.DICTIONARY_PAGE if dictionary else ModuleType.DATA_PAGE
    return crypto.encrypt(module, body, page_ordinal)


def _assemble(
    header: t.PageHeader, body: bytes, crypto: ChunkCrypto | None, page_ordinal: int
) -> BuiltPage:
    header_bytes = serialize(header)
    if crypto is not None:
        module = (
            ModuleType.DICTIONARY_PAGE_HEADER
            if header.type == PageType.DICTIONARY_PAGE
            else ModuleType.DATA_PAGE_HEADER
        )
        header_bytes = crypto.encrypt(module, header_bytes, page_ordinal)
    assert header.uncompressed_page_size is not None and header.compressed_page_size is not None
    return BuiltPage(
        data=header_bytes + body,
        header_size=len(header_bytes),
        uncompressed_page_size=header.uncompressed_page_size,
        compressed_page_size=header.compressed_page_size,
    )


def build_data_page_v1(
    *,
    levels: bytes,
    values: bytes,
    num_values: int,
    encoding: Encoding,
    codec: CompressionCodec,
    compression_level: int | None,
    write_crc: bool,
    statistics: t.Statistics | None = None,
    crypto: ChunkCrypto | None = None,
    page_ordinal: int = 0,
) -> BuiltPage:
    """A DATA_PAGE: ``levels`` already carry their 4-byte length prefixes (empty if required).

    ``crypto`` encrypts the body and header as the ``page_ordinal``-th data page of the chunk.

    Returns:
        The page bytes and sizes.

    Raises:
        LimitError: ``page_ordinal`` or the chunk's ordinals exceed 32767 (encrypted only).
    """
    raw = levels + values
    body = _seal(compress(codec, raw, compression_level), crypto, False, page_ordinal)
    header = t.PageHeader(
        type=PageType.DATA_PAGE,
        uncompressed_page_size=len(raw),
        compressed_page_size=len(body),
        crc=_crc(body, write_crc),
        data_page_header=t.DataPageHeader(
            num_values=num_values,
            encoding=encoding,
            definition_level_encoding=Encoding.RLE,
            repetition_level_encoding=Encoding.RLE,
            statistics=statistics,
        ),
    )
    return _assemble(header, body, crypto, page_ordinal)


def build_data_page_v2(
    *,
    def_levels: bytes,
    values: bytes,
    num_values: int,
    num_nulls: int,
    num_rows: int,
    encoding: Encoding,
    codec: CompressionCodec,
    compression_level: int | None,
    write_crc: bool,
    statistics: t.Statistics | None = None,
    crypto: ChunkCrypto | None = None,
    page_ordinal: int = 0,
) -> BuiltPage:
    """A DATA_PAGE_V2: levels stay uncompressed and unprefixed; values are compressed if it helps.

    ``crypto`` encrypts the header and the body as the ``page_ordinal``-th data page of the
    chunk: the whole body (levels and values) as one module, or, with
    ``crypto.v2_levels_plaintext`` (parquet-java's layout), the values only after plaintext
    levels. ``compressed_page_size`` and the CRC32 cover the stored bytes either way.

    Returns:
        The page bytes and sizes.

    Raises:
        LimitError: ``page_ordinal`` or the chunk's ordinals exceed 32767 (encrypted only).
    """
    compressed = values
    is_compressed = False
    if codec != CompressionCodec.UNCOMPRESSED:
        candidate = compress(codec, values, compression_level)
        if len(candidate) < len(values):
            compressed, is_compressed = candidate, True
    if crypto is not None and crypto.v2_levels_plaintext:
        body = def_levels + _seal(compressed, crypto, False, page_ordinal)
    else:
        body = _seal(def_levels + compressed, crypto, False, page_ordinal)
    header = t.PageHeader(
        type=PageType.DATA_PAGE_V2,
        uncompressed_page_size=len(def_levels) + len(values),
        compressed_page_size=len(body),
        crc=_crc(body, write_crc),
        data_page_header_v2=t.DataPageHeaderV2(
            num_values=num_values,
            num_nulls=num_nulls,
            num_rows=num_rows,
            encoding=encoding,
            definition_levels_byte_length=len(def_levels),
            repetition_levels_byte_length=0,
            is_compressed=is_compressed,
            statistics=statistics,
        ),
    )
    return _assemble(header, body, crypto, page_ordinal)


def build_dictionary_page(
    *,
    values: bytes,
    num_values: int,
    codec: CompressionCodec,
    compression_level: int | None,
    write_crc: bool,
    crypto: ChunkCrypto | None = None,
) -> BuiltPage:
    """A DICTIONARY_PAGE holding ``num_values`` PLAIN-encoded entries.

    ``crypto`` encrypts the body and header (dictionary modules carry no page ordinal).

    Returns:
        The page bytes and sizes.
    """
    body = _seal(compress(codec, values, compression_level), crypto, True, -1)
    header = t.PageHeader(
        type=PageType.DICTIONARY_PAGE,
        uncompressed_page_size=len(values),
        compressed_page_size=len(body),
        crc=_crc(body, write_crc),
        dictionary_page_header=t.DictionaryPageHeader(
            num_values=num_values, encoding=Encoding.PLAIN, is_sorted=False
        ),
    )
    return _assemble(header, body, crypto, -1)
