"""Page assembly: encoded sections -> compressed body -> (encryption, later) -> CRC -> header.

Byte layout of one page in a column chunk (parquet-format, "Data Pages")::

    page      := PageHeader (Thrift compact) body
    v1 body   := compress( [rep levels] [def levels] values )   levels: u32 LE length + RLE hybrid
    v2 body   := [rep levels] [def levels] maybe-compress( values )   levels: RLE hybrid only
    dict body := compress( PLAIN dictionary entries )

``PageHeader.crc`` is the CRC32 (zlib polynomial) of the body bytes exactly as stored, i.e.
after compression (and, once encryption lands, after encryption). ``uncompressed_page_size``
counts levels + values before compression; ``compressed_page_size`` is the stored body size.
In v2, ``is_compressed`` is cleared when compression would not make the values smaller.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from streamwrite.format import structs as t
from streamwrite.format.enums import CompressionCodec, Encoding, PageType
from streamwrite.format.thrift import serialize
from workers.compression import compress

__all__ = ["BuiltPage", "build_data_page_v1", "build_data_page_v2", "build_dictionary_page"]


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


def _assemble(header: t.PageHeader, body: bytes) -> BuiltPage:
    header_bytes = serialize(header)
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
) -> BuiltPage:
    """A DATA_PAGE: ``levels`` already carry their 4-byte length prefixes (empty if required).

    Returns:
        The page bytes and sizes.
    """
    raw = levels + values
    body = compress(codec, raw, compression_level)
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
    return _assemble(header, body)


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
) -> BuiltPage:
    """A DATA_PAGE_V2: levels stay uncompressed and unprefixed; values are compressed if it helps.

    Returns:
        The page bytes and sizes.
    """
    compressed = values
    is_compressed = False
    if codec != CompressionCodec.UNCOMPRESSED:
        candidate = compress(codec, values, compression_level)
        if len(candidate) < len(values):
            compressed, is_compressed = candidate, True
    body = def_levels + compressed
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
    return _assemble(header, body)


def build_dictionary_page(
    *,
    values: bytes,
    num_values: int,
    codec: CompressionCodec,
    compression_level: int | None,
    write_crc: bool,
) -> BuiltPage:
    """A DICTIONARY_PAGE holding ``num_values`` PLAIN-encoded entries.

    Returns:
        The page bytes and sizes.
    """
    body = compress(codec, values, compression_level)
    header = t.PageHeader(
        type=PageType.DICTIONARY_PAGE,
        uncompressed_page_size=len(values),
        compressed_page_size=len(body),
        crc=_crc(body, write_crc),
        dictionary_page_header=t.DictionaryPageHeader(
            num_values=num_values, encoding=Encoding.PLAIN, is_sorted=False
        ),
    )
    return _assemble(header, body)
