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
    "data_page_v1_header_bytes",
    "data_page_v2_header_bytes",
    "dictionary_page_header_bytes",
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


# --- PageHeader bytes without the generic codec ---------------------------------------------
# The compact protocol of the three headers the writer makes, field by field (ids ascending, as
# ``serialize`` writes them): byte-identical to ``serialize(t.PageHeader(...))`` (tested), at a
# fraction of the cost. Headers with statistics or values outside i32 take ``serialize``.

_I32_WIRE = 5
_STRUCT_WIRE = 12
_TRUE_WIRE = 1
_FALSE_WIRE = 2
_I32_LIMIT = 1 << 31


def _put_i32(out: bytearray, delta: int, value: int) -> None:
    """Field header (``delta`` from the previous id, wire i32) and zigzag varint ``value``."""
    out.append(delta << 4 | _I32_WIRE)
    n = (value << 1) ^ (value >> 63)
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _fits_i32(*values: int) -> bool:
    return all(-_I32_LIMIT <= v < _I32_LIMIT for v in values)


def _page_header_start(
    page_type: PageType, uncompressed_page_size: int, compressed_page_size: int, crc: int | None
) -> tuple[bytearray, int]:
    """Fields 1-4 of a PageHeader; returns them and the last field id written."""
    out = bytearray()
    _put_i32(out, 1, page_type)
    _put_i32(out, 1, uncompressed_page_size)
    _put_i32(out, 1, compressed_page_size)
    if crc is None:
        return out, 3
    _put_i32(out, 1, crc)
    return out, 4


def data_page_v1_header_bytes(
    uncompressed_page_size: int,
    compressed_page_size: int,
    crc: int | None,
    num_values: int,
    encoding: Encoding,
) -> bytes:
    """``serialize`` of a DATA_PAGE PageHeader without statistics (RLE levels).

    Returns:
        The header bytes.

    Raises:
        FormatError: A value does not fit Thrift's i32 (as ``serialize``).
    """
    sizes = (uncompressed_page_size, compressed_page_size, num_values, crc or 0)
    if not _fits_i32(*sizes):
        return serialize(
            t.PageHeader(
                type=PageType.DATA_PAGE,
                uncompressed_page_size=uncompressed_page_size,
                compressed_page_size=compressed_page_size,
                crc=crc,
                data_page_header=t.DataPageHeader(
                    num_values=num_values,
                    encoding=encoding,
                    definition_level_encoding=Encoding.RLE,
                    repetition_level_encoding=Encoding.RLE,
                ),
            )
        )
    out, last = _page_header_start(
        PageType.DATA_PAGE, uncompressed_page_size, compressed_page_size, crc
    )
    out.append((5 - last) << 4 | _STRUCT_WIRE)
    _put_i32(out, 1, num_values)
    _put_i32(out, 1, encoding)
    _put_i32(out, 1, Encoding.RLE)
    _put_i32(out, 1, Encoding.RLE)
    out += b"\x00\x00"  # stop of DataPageHeader, stop of PageHeader
    return bytes(out)


def data_page_v2_header_bytes(
    uncompressed_page_size: int,
    compressed_page_size: int,
    crc: int | None,
    section: t.DataPageHeaderV2,
) -> bytes:
    """``serialize`` of a DATA_PAGE_V2 PageHeader (statistics: through ``serialize``).

    Returns:
        The header bytes.

    Raises:
        FormatError: A value does not fit Thrift's i32, or a required field is None.
    """
    fields = (
        section.num_values,
        section.num_nulls,
        section.num_rows,
        section.encoding,
        section.definition_levels_byte_length,
        section.repetition_levels_byte_length,
    )
    if (
        section.statistics is not None
        or any(v is None for v in fields)
        or not _fits_i32(uncompressed_page_size, compressed_page_size, crc or 0, *fields)  # type: ignore[arg-type]
    ):
        return serialize(
            t.PageHeader(
                type=PageType.DATA_PAGE_V2,
                uncompressed_page_size=uncompressed_page_size,
                compressed_page_size=compressed_page_size,
                crc=crc,
                data_page_header_v2=section,
            )
        )
    out, last = _page_header_start(
        PageType.DATA_PAGE_V2, uncompressed_page_size, compressed_page_size, crc
    )
    out.append((8 - last) << 4 | _STRUCT_WIRE)
    for value in fields:
        _put_i32(out, 1, value)  # type: ignore[arg-type]
    if section.is_compressed is not None:
        out.append(1 << 4 | (_TRUE_WIRE if section.is_compressed else _FALSE_WIRE))
    out += b"\x00\x00"
    return bytes(out)


def dictionary_page_header_bytes(
    uncompressed_page_size: int, compressed_page_size: int, crc: int | None, num_values: int
) -> bytes:
    """``serialize`` of a DICTIONARY_PAGE PageHeader (PLAIN, ``is_sorted`` False).

    Returns:
        The header bytes.

    Raises:
        FormatError: A value does not fit Thrift's i32.
    """
    if not _fits_i32(uncompressed_page_size, compressed_page_size, crc or 0, num_values):
        return serialize(
            t.PageHeader(
                type=PageType.DICTIONARY_PAGE,
                uncompressed_page_size=uncompressed_page_size,
                compressed_page_size=compressed_page_size,
                crc=crc,
                dictionary_page_header=t.DictionaryPageHeader(
                    num_values=num_values, encoding=Encoding.PLAIN, is_sorted=False
                ),
            )
        )
    out, last = _page_header_start(
        PageType.DICTIONARY_PAGE, uncompressed_page_size, compressed_page_size, crc
    )
    out.append((7 - last) << 4 | _STRUCT_WIRE)
    _put_i32(out, 1, num_values)
    _put_i32(out, 1, Encoding.PLAIN)
    out.append(1 << 4 | _FALSE_WIRE)  # is_sorted = false
    out += b"\x00\x00"
    return bytes(out)


def _assemble(
    header_bytes: bytes,
    dictionary: bool,
    body: bytes,
    uncompressed_page_size: int,
    crypto: ChunkCrypto | None,
    page_ordinal: int,
) -> BuiltPage:
    if crypto is not None:
        module = ModuleType.DICTIONARY_PAGE_HEADER if dictionary else ModuleType.DATA_PAGE_HEADER
        header_bytes = crypto.encrypt(module, header_bytes, page_ordinal)
    return BuiltPage(
        data=header_bytes + body,
        header_size=len(header_bytes),
        uncompressed_page_size=uncompressed_page_size,
        compressed_page_size=len(body),
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
    """A DATA_PAGE: ``levels`` (repetition then definition levels) already carry their 4-byte
    length prefixes (empty for a flat REQUIRED column); ``num_values`` counts level entries.

    ``crypto`` encrypts the body and header as the ``page_ordinal``-th data page of the chunk.

    Returns:
        The page bytes and sizes.

    Raises:
        LimitError: ``page_ordinal`` or the chunk's ordinals exceed 32767 (encrypted only).
    """
    raw = levels + values if levels else values
    body = _seal(compress(codec, raw, compression_level), crypto, False, page_ordinal)
    crc = _crc(body, write_crc)
    if statistics is None:
        header = data_page_v1_header_bytes(len(raw), len(body), crc, num_values, encoding)
    else:
        header = serialize(
            t.PageHeader(
                type=PageType.DATA_PAGE,
                uncompressed_page_size=len(raw),
                compressed_page_size=len(body),
                crc=crc,
                data_page_header=t.DataPageHeader(
                    num_values=num_values,
                    encoding=encoding,
                    definition_level_encoding=Encoding.RLE,
                    repetition_level_encoding=Encoding.RLE,
                    statistics=statistics,
                ),
            )
        )
    return _assemble(header, False, body, len(raw), crypto, page_ordinal)


def build_data_page_v2(
    *,
    rep_levels: bytes = b"",
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

    The body is ``rep_levels def_levels values``; ``num_values`` counts level entries,
    ``num_nulls`` those without a value and ``num_rows`` the records.

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
    levels = rep_levels + def_levels if rep_levels else def_levels
    if crypto is not None and crypto.v2_levels_plaintext:
        body = levels + _seal(compressed, crypto, False, page_ordinal)
    else:
        body = _seal(levels + compressed, crypto, False, page_ordinal)
    uncompressed_page_size = len(levels) + len(values)
    header = data_page_v2_header_bytes(
        uncompressed_page_size,
        len(body),
        _crc(body, write_crc),
        t.DataPageHeaderV2(
            num_values=num_values,
            num_nulls=num_nulls,
            num_rows=num_rows,
            encoding=encoding,
            definition_levels_byte_length=len(def_levels),
            repetition_levels_byte_length=len(rep_levels),
            is_compressed=is_compressed,
            statistics=statistics,
        ),
    )
    return _assemble(header, False, body, uncompressed_page_size, crypto, page_ordinal)


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
    header = dictionary_page_header_bytes(len(values), len(body), _crc(body, write_crc), num_values)
    return _assemble(header, True, body, len(values), crypto, -1)
