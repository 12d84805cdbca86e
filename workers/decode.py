"""Column chunk decoder: the bytes of one column chunk -> non-null values + definition levels.

Walks ``chunk := [dictionary page] data page*`` (see :mod:`workers.page` for the page layout),
checking every size against the bytes at hand before using it:

- each ``PageHeader`` is decoded with the bounded Thrift decoder;
- ``compressed_page_size`` must fit in the chunk, ``uncompressed_page_size`` must not exceed
  ``max_decompressed_page_size``, and decompression must produce exactly that many bytes;
- the CRC32 of the stored body is checked when the header has one and checking is on;
- a page may not hold more values than the chunk has left.

Every problem raises a :class:`~streamwrite.errors.CorruptFileError` carrying the absolute file
offset of the page (or a more specific FormatError/LimitError/UnsupportedError subclass).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from streamwrite.errors import (
    ChecksumError,
    CorruptFileError,
    FormatError,
    LimitError,
    UnsupportedError,
)
from streamwrite.format import structs as t
from streamwrite.format.enums import CompressionCodec, Encoding, PageType, Type
from streamwrite.format.thrift import deserialize
from workers.compression import decompress
from workers.encoding.dictionary import decode_dictionary_indices, dictionary_lookup
from workers.encoding.plain import decode_plain
from workers.encoding.rle_hybrid import decode_levels_v1, decode_rle_hybrid
from workers.encodings import decode_values
from workers.values import BinaryValues

__all__ = ["DecodedChunk", "PageInfo", "concat_values", "decode_chunk"]

_DICTIONARY_ENCODINGS = (Encoding.PLAIN_DICTIONARY, Encoding.RLE_DICTIONARY)


@dataclass(frozen=True, slots=True)
class PageInfo:
    """Where a page was found: ``offset`` absolute, ``size`` header plus body bytes."""

    page_type: int
    offset: int
    size: int
    num_rows: int
    num_nulls: int


@dataclass(frozen=True, slots=True)
class DecodedChunk:
    """A column chunk's non-null values, its definition levels (None when REQUIRED) and pages."""

    values: Any
    def_levels: npt.NDArray[np.uint8] | None
    num_rows: int
    pages: list[PageInfo]


def concat_values(parts: list[Any], physical_type: Type, type_length: int | None) -> Any:
    """Concatenate per-page values of one physical type into one array / BinaryValues."""
    if physical_type == Type.BYTE_ARRAY:
        binaries: list[BinaryValues] = parts
        if len(binaries) == 1:
            return binaries[0]
        offsets = [np.zeros(1, dtype=np.int64)]
        datas = []
        total = 0
        for b in binaries:
            start = int(b.offsets[0])
            offsets.append(b.offsets[1:] - start + total)
            datas.append(b.data[start : int(b.offsets[-1])])
            total += b.total_size
        return BinaryValues(
            np.concatenate(offsets),
            np.concatenate(datas) if datas else np.zeros(0, dtype=np.uint8),
        )
    if parts:
        return np.concatenate(parts)
    empty = {
        Type.BOOLEAN: np.zeros(0, dtype=np.bool_),
        Type.INT32: np.zeros(0, dtype=np.int32),
        Type.INT64: np.zeros(0, dtype=np.int64),
        Type.FLOAT: np.zeros(0, dtype=np.float32),
        Type.DOUBLE: np.zeros(0, dtype=np.float64),
        Type.INT96: np.zeros((0, 12), dtype=np.uint8),
    }
    if physical_type in empty:
        return empty[physical_type]
    return np.zeros((0, type_length or 0), dtype=np.uint8)


def _crc_ok(body: memoryview, crc: int) -> bool:
    return zlib.crc32(body) == (crc & 0xFFFFFFFF)


class _ChunkDecoder:
    def __init__(
        self,
        buf: memoryview,
        chunk_offset: int,
        meta: t.ColumnMetaData,
        type_length: int | None,
        max_definition_level: int,
        verify_checksums: bool,
        max_decompressed_page_size: int,
    ) -> None:
        self.buf = buf
        self.chunk_offset = chunk_offset
        self.codec = meta.codec if meta.codec is not None else CompressionCodec.UNCOMPRESSED
        self.physical_type = Type(meta.type) if meta.type in Type._value2member_map_ else None
        if self.physical_type is None:
            raise CorruptFileError(f"Unknown physical type {meta.type}.", chunk_offset)
        self.type_length = type_length
        self.max_def = max_definition_level
        self.verify = verify_checksums
        self.max_size = max_decompressed_page_size
        self.dictionary: Any = None
        self.name = ".".join(meta.path_in_schema or ["?"])

    def error(self, message: str, offset: int) -> CorruptFileError:
        return CorruptFileError(f"Column {self.name!r}: {message}", self.chunk_offset + offset)

    def decompress(self, data: memoryview, size: int, offset: int) -> bytes:
        if size < 0:
            raise self.error(f"negative uncompressed page size {size}.", offset)
        if size > self.max_size:
            raise LimitError(
                f"Column {self.name!r}: a page at byte offset {self.chunk_offset + offset} "
                f"claims {size} uncompressed bytes, over the limit of {self.max_size}."
            )
        try:
            return decompress(self.codec, data, size, max_size=self.max_size)
        except UnsupportedError:
            raise
        except (FormatError, LimitError) as exc:
            raise self.error(f"page does not decompress: {exc}", offset) from exc

    def levels(self, data: bytes | memoryview, count: int, encoding: int, v1: bool) -> tuple[npt.NDArray[np.uint8], int]:
        """Definition levels and the bytes they used."""
        if encoding == Encoding.BIT_PACKED:
            size = (count + 7) // 8
            if len(data) < size:
                raise FormatError("BIT_PACKED levels run past the page.")
            bits = np.unpackbits(np.frombuffer(data[:size], dtype=np.uint8), bitorder="big")
            return bits[:count].astype(np.uint8), size
        if encoding != Encoding.RLE:
            raise FormatError(f"Unsupported definition level encoding {encoding}.")
        if v1:
            levels, used = decode_levels_v1(data, 1, count)
        else:
            levels, used = decode_rle_hybrid(data, 1, count)
        return np.asarray(levels, dtype=np.uint8), used

    def page_values(self, data: bytes | memoryview, encoding: int, count: int) -> Any:
        if encoding in _DICTIONARY_ENCODINGS:
            if self.dictionary is None:
                raise FormatError("A dictionary-encoded page comes before any dictionary page.")
            indices, _ = decode_dictionary_indices(data, count)
            return dictionary_lookup(self.dictionary, indices)
        assert self.physical_type is not None
        return decode_values(data, self.physical_type, encoding, count, self.type_length)

    def data_page(self, header: t.PageHeader, body: memoryview, offset: int, remaining: int) -> tuple[Any, npt.NDArray[np.uint8] | None, int]:
        v2 = header.type == PageType.DATA_PAGE_V2
        page = header.data_page_header_v2 if v2 else header.data_page_header
        if page is None:
            raise self.error("data page header is missing.", offset)
        num_rows = page.num_values
        if num_rows is None or num_rows < 0 or num_rows > remaining:
            raise self.error(
                f"page holds {num_rows} values but the chunk has {remaining} left.", offset
            )
        size = header.uncompressed_page_size or 0
        if v2:
            assert isinstance(page, t.DataPageHeaderV2)
            rep_size = page.repetition_levels_byte_length or 0
            def_size = page.definition_levels_byte_length or 0
            if rep_size < 0 or def_size < 0 or rep_size + def_size > len(body):
                raise self.error("level sizes run past the page.", offset)
            if rep_size:
                raise UnsupportedError(f"Column {self.name!r} has repetition levels (nested data).")
            level_bytes = body[rep_size : rep_size + def_size]
            values_raw = body[rep_size + def_size :]
            if page.is_compressed is None or page.is_compressed:
                values_raw = memoryview(
                    self.decompress(values_raw, size - rep_size - def_size, offset)
                )
            def_levels = None
            if self.max_def:
                def_levels, _ = self.levels(level_bytes, num_rows, Encoding.RLE, v1=False)
            values_data: bytes | memoryview = values_raw
        else:
            assert isinstance(page, t.DataPageHeader)
            raw = self.decompress(body, size, offset)
            def_levels = None
            used = 0
            if self.max_def:
                def_levels, used = self.levels(
                    raw, num_rows, page.definition_level_encoding or Encoding.RLE, v1=True
                )
            values_data = memoryview(raw)[used:]
        if def_levels is not None and bool(np.any(def_levels > self.max_def)):
            raise self.error("a definition level exceeds the column's maximum.", offset)
        num_values = num_rows if def_levels is None else int(np.count_nonzero(def_levels))
        values = self.page_values(values_data, page.encoding or 0, num_values)
        return values, def_levels, num_rows

    def run(self, num_rows: int) -> DecodedChunk:
        assert self.physical_type is not None
        pos = 0
        parts: list[Any] = []
        level_parts: list[npt.NDArray[np.uint8]] = []
        rows = 0
        pages: list[PageInfo] = []
        buf = self.buf
        while rows < num_rows:
            if pos >= len(buf):
                raise self.error(f"chunk ends after {rows} of {num_rows} values.", pos)
            try:
                header, body_start = deserialize(t.PageHeader, buf, pos)
            except FormatError as exc:
                raise self.error(f"unreadable page header: {exc}", pos) from exc
            size = header.compressed_page_size
            if size is None or size < 0 or body_start + size > len(buf):
                raise self.error(f"page of {size} bytes runs past the column chunk.", pos)
            body = buf[body_start : body_start + size]
            if self.verify and header.crc is not None and not _crc_ok(body, header.crc):
                raise ChecksumError(
                    f"Column {self.name!r}: page CRC32 does not match its bytes.",
                    self.chunk_offset + pos,
                )
            try:
                if header.type == PageType.DICTIONARY_PAGE:
                    dph = header.dictionary_page_header
                    if dph is None or dph.num_values is None or dph.num_values < 0:
                        raise self.error("dictionary page header is missing.", pos)
                    raw = self.decompress(body, header.uncompressed_page_size or 0, pos)
                    self.dictionary, _ = decode_plain(
                        raw, self.physical_type, dph.num_values, self.type_length
                    )
                    pages.append(
                        PageInfo(header.type, self.chunk_offset + pos, body_start + size - pos, 0, 0)
                    )
                elif header.type in (PageType.DATA_PAGE, PageType.DATA_PAGE_V2):
                    values, levels, page_rows = self.data_page(header, body, pos, num_rows - rows)
                    parts.append(values)
                    if levels is not None:
                        level_parts.append(levels)
                    rows += page_rows
                    nulls = 0 if levels is None else page_rows - int(np.count_nonzero(levels))
                    pages.append(
                        PageInfo(
                            header.type,
                            self.chunk_offset + pos,
                            body_start + size - pos,
                            page_rows,
                            nulls,
                        )
                    )
            except CorruptFileError:
                raise
            except (UnsupportedError, LimitError):
                raise
            except FormatError as exc:
                raise self.error(f"page does not decode: {exc}", pos) from exc
            pos = body_start + size
        values = concat_values(parts, self.physical_type, self.type_length)
        def_levels = None
        if self.max_def:
            def_levels = (
                np.concatenate(level_parts) if level_parts else np.zeros(0, dtype=np.uint8)
            )
        return DecodedChunk(values=values, def_levels=def_levels, num_rows=rows, pages=pages)


def decode_chunk(
    buf: bytes | memoryview,
    chunk_offset: int,
    meta: t.ColumnMetaData,
    *,
    type_length: int | None,
    max_definition_level: int,
    verify_checksums: bool,
    max_decompressed_page_size: int,
) -> DecodedChunk:
    """Decode every page of one column chunk.

    Args:
        buf: the chunk's bytes, starting at its first page.
        chunk_offset: absolute file offset of ``buf[0]`` (for error messages).
        meta: the chunk's ColumnMetaData (type, codec, num_values).
        type_length: FIXED_LEN_BYTE_ARRAY width.
        max_definition_level: 0 for REQUIRED, 1 for OPTIONAL flat columns.
        verify_checksums: check page CRC32s that are present.
        max_decompressed_page_size: refuse pages claiming more uncompressed bytes.

    Returns:
        The non-null values and the definition levels.

    Raises:
        CorruptFileError: damaged or inconsistent pages (ChecksumError for CRC mismatches).
        LimitError: a page over the size limit.
        UnsupportedError: nested data or an unsupported codec.
    """
    num_rows = meta.num_values
    if num_rows is None or num_rows < 0:
        raise CorruptFileError("Column chunk has no valid num_values.", chunk_offset)
    decoder = _ChunkDecoder(
        memoryview(buf),
        chunk_offset,
        meta,
        type_length,
        max_definition_level,
        verify_checksums,
        max_decompressed_page_size,
    )
    return decoder.run(num_rows)
