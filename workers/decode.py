"""Column chunk decoder: the bytes of one column chunk -> non-null values + definition levels.

Walks ``chunk := [dictionary page] data page*`` (see :mod:`workers.page` for the page layout),
checking every size against the bytes at hand before using it:

- each ``PageHeader`` is decoded with the bounded Thrift decoder;
- ``compressed_page_size`` must fit in the chunk, ``uncompressed_page_size`` must not exceed
  ``max_decompressed_page_size``, and decompression must produce exactly that many bytes;
- a page may not claim more values than ``max_decompressed_page_size // 8`` (a run-length
  encoded page of a few bytes could otherwise make the kernels allocate billions of values),
  nor more than the chunk has left;
- the CRC32 of the stored body is checked when the header has one and checking is on.

Encrypted chunks (Parquet spec 7.3, "Parquet Modular Encryption") are walked the same way, with
a :class:`PageCipher` decrypting each module in place::

    encrypted page := header_module body_module
    header_module  := GCM(DICTIONARY_PAGE_HEADER | DATA_PAGE_HEADER, page ordinal)(PageHeader)
    body_module    := GCM or CTR(DICTIONARY_PAGE | DATA_PAGE, page ordinal)(compressed body)

``compressed_page_size`` counts the framed body module; the CRC32 (if any) covers those
encrypted bytes and is checked before decrypting; decompression follows decryption. Only the
first page of a chunk with a dictionary is a dictionary page; the page ordinal counts the other
pages from 0. A decrypted header may be followed by zero padding (parquet-java). A module that
fails to decrypt raises :class:`~streamwrite.errors.EncryptionError` naming the module.

The body of an encrypted DATA_PAGE_V2 with levels has two layouts in the wild, both read
(:mod:`workers.decode_crypto`).

With ``keep_dictionary`` (compaction's merge jobs), a chunk whose data pages are all
dictionary-encoded comes back as its dictionary and the checked indices instead of the
looked-up values (:func:`workers.value_ops.merge_dictionaries` merges several). Definition
levels stored as one RLE run (a page without nulls) are read without the general decoder.

Repetition levels of a V2 page are skipped: the schema is flat (max repetition level 0), so
they carry no information (some writers still store a run of zeros).

Every problem raises a :class:`~streamwrite.errors.CorruptFileError` whose message names the
column and row group and which carries the absolute file offset of the page (or a more specific
ChecksumError / LimitError / UnsupportedError). Exceptions a kernel lets escape on malformed
bytes (IndexError, struct.error, OverflowError, ...) are turned into CorruptFileError here, at
the page, where the column and offset are known.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from streamwrite.errors import (
    ChecksumError,
    ConfigError,
    CorruptFileError,
    FormatError,
    LimitError,
    SchemaError,
    UnsupportedError,
)
from streamwrite.format import structs as t
from streamwrite.format.enums import CompressionCodec, Encoding, PageType, Type
from streamwrite.format.thrift.codec import deserialize
from workers.compression import decompress
from workers.decode_crypto import PageCipher, PageDecryption
from workers.encoding.dictionary import decode_dictionary_indices
from workers.encoding.plain import decode_plain
from workers.encoding.rle_hybrid import decode_levels_v1, decode_rle_hybrid
from workers.encodings import decode_values
from workers.value_ops import concat_values, gather_dictionary
from workers.values import count_values

__all__ = [
    "DecodedChunk",
    "PageCipher",
    "PageInfo",
    "concat_values",
    "decode_chunk",
    "max_page_values",
]

_DICTIONARY_ENCODINGS = (Encoding.PLAIN_DICTIONARY, Encoding.RLE_DICTIONARY)
_DATA_PAGES = (PageType.DATA_PAGE, PageType.DATA_PAGE_V2)
_ENCRYPTED_PAGES = (PageType.DICTIONARY_PAGE, *_DATA_PAGES)

KERNEL_ERRORS: tuple[type[Exception], ...] = (
    IndexError,
    KeyError,
    ValueError,
    TypeError,
    struct.error,
    OverflowError,
    ZeroDivisionError,
    RecursionError,
)
"""What numpy and the kernels may raise on malformed bytes; callers catch StreamwriteError
(a ValueError) before this tuple."""


def max_page_values(max_decompressed_page_size: int) -> int:
    """The most values (rows) one page may claim under a decompressed page size limit.

    Decoding ``n`` values allocates about ``8 * n`` bytes (levels, indices, values), so this
    keeps a page's decoded memory within a small multiple of the limit.
    """
    return max(max_decompressed_page_size // 8, 1024)


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
    """A column chunk's non-null values, its definition levels (None when REQUIRED) and pages.

    With ``keep_dictionary`` (:func:`decode_chunk`) and every data page dictionary-encoded,
    ``values`` holds the int32 indices (checked against the dictionary) and ``dictionary`` the
    dictionary page's values: ``gather_dictionary(dictionary, values)`` are the values.
    """

    values: Any
    def_levels: npt.NDArray[np.uint8] | None
    num_rows: int
    pages: list[PageInfo]
    dictionary: Any = None


@dataclass(frozen=True, slots=True)
class _Indices:
    """A dictionary-encoded page's indices, kept for the caller (``keep_dictionary``)."""

    indices: npt.NDArray[np.int32]


def _check_indices(indices: npt.NDArray[np.integer], size: int) -> None:
    if indices.shape[0] and (int(indices.min()) < 0 or int(indices.max()) >= size):
        bad = int(indices.min()) if int(indices.min()) < 0 else int(indices.max())
        raise FormatError(f"Dictionary index {bad} is outside the dictionary of {size} values.")


def _concat_indices(parts: list[npt.NDArray[np.int32]]) -> npt.NDArray[np.int32]:
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _single_run(
    data: bytes | memoryview, width: int, count: int, v1: bool
) -> tuple[npt.NDArray[np.uint8], int] | None:
    """Levels stored as one RLE run of exactly ``count`` values (a page without nulls: the
    common case), read without the general decoder; None when they are anything else.

    ``[4-byte length, v1 only] uleb128(count << 1) value`` (value in ``ceil(width / 8)``
    bytes). Returns the levels and the bytes used, as the general decoder would."""
    view = memoryview(data)
    prefix = 4 if v1 else 0
    if len(view) < prefix + 2 or width > 8:
        return None
    size = int.from_bytes(view[:4], "little") if v1 else len(view)
    if size > len(view) - prefix or size > 6:
        return None
    header = 0
    shift = 0
    pos = prefix
    end = prefix + size
    while pos < end:
        byte = view[pos]
        header |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            break
        shift += 7
    else:
        return None
    value_size = (width + 7) // 8
    if header & 1 or header >> 1 != count or pos + value_size != end or value_size != 1:
        return None
    value = view[pos]
    if value >> width:
        return None
    return np.full(count, value, dtype=np.uint8), end if v1 else size


def _crc_ok(body: memoryview, crc: int) -> bool:
    return zlib.crc32(body) == (crc & 0xFFFFFFFF)


class _ChunkDecoder(PageDecryption):
    def __init__(
        self,
        buf: memoryview,
        chunk_offset: int,
        meta: t.ColumnMetaData,
        physical_type: Type,
        where: str,
        type_length: int | None,
        max_definition_level: int,
        verify_checksums: bool,
        max_decompressed_page_size: int,
        cipher: PageCipher | None = None,
        dictionary_first: bool = False,
        keep_dictionary: bool = False,
    ) -> None:
        self.buf = buf
        self.keep_dictionary = keep_dictionary
        self.cipher = cipher
        self.dictionary_first = dictionary_first
        self.chunk_offset = chunk_offset
        self.codec = meta.codec if meta.codec is not None else CompressionCodec.UNCOMPRESSED
        self.physical_type = physical_type
        self.where = where
        self.type_length = type_length
        self.max_def = max_definition_level
        self.level_width = max_definition_level.bit_length()
        self.verify = verify_checksums
        self.max_size = max_decompressed_page_size
        self.max_values = max_page_values(max_decompressed_page_size)
        self.dictionary: Any = None

    def decompress(self, data: memoryview, size: int | None, pos: int) -> bytes | memoryview:
        if size is None or size < 0:
            raise self.error(f"invalid uncompressed page size {size}.", pos)
        if size > self.max_size:
            raise LimitError(
                f"{self.where}: the page at byte offset {self.chunk_offset + pos} claims {size} "
                f"uncompressed bytes, over the limit of {self.max_size} "
                "(max_decompressed_page_size)."
            )
        if self.codec == CompressionCodec.UNCOMPRESSED:
            if len(data) != size:
                raise self.error(
                    f"uncompressed page holds {len(data)} bytes, its header says {size}.", pos
                )
            return data  # no copy
        if size == 0 and len(data) == 0:
            return b""  # an empty page (some writers do not compress nothing)
        try:
            return decompress(self.codec, data, size, max_size=self.max_size)
        except (UnsupportedError, LimitError):
            raise
        except (FormatError, ConfigError) as exc:
            raise self.error(f"page does not decompress: {exc}", pos) from exc

    def levels(
        self, data: bytes | memoryview, count: int, encoding: int, v1: bool
    ) -> tuple[npt.NDArray[np.uint8], int]:
        """Definition levels and the bytes they used."""
        width = self.level_width
        if encoding == Encoding.BIT_PACKED:
            size = (count * width + 7) // 8
            if len(data) < size:
                raise FormatError("BIT_PACKED levels run past the page.")
            bits = np.unpackbits(np.frombuffer(data[:size], dtype=np.uint8), bitorder="big")
            return bits[:count].astype(np.uint8), size
        if encoding != Encoding.RLE:
            raise FormatError(f"Unsupported definition level encoding {encoding}.")
        single = _single_run(data, width, count, v1)
        if single is not None:
            return single
        if v1:
            levels, used = decode_levels_v1(data, width, count)
        else:
            levels, used = decode_rle_hybrid(data, width, count)
        return levels.astype(np.uint8, copy=False), used

    def page_values(self, data: bytes | memoryview, encoding: int, count: int) -> Any:
        if encoding in _DICTIONARY_ENCODINGS:
            if self.dictionary is None:
                raise FormatError("A dictionary-encoded page comes before any dictionary page.")
            indices, _ = decode_dictionary_indices(data, count)
            _check_indices(indices, count_values(self.dictionary))
            if self.keep_dictionary:
                return _Indices(indices)
            return gather_dictionary(self.dictionary, indices)
        return decode_values(data, self.physical_type, encoding, count, self.type_length)

    def data_page(
        self, header: t.PageHeader, body: memoryview, pos: int, remaining: int
    ) -> tuple[Any, npt.NDArray[np.uint8] | None, int]:
        v2 = header.type == PageType.DATA_PAGE_V2
        page = header.data_page_header_v2 if v2 else header.data_page_header
        if page is None:
            raise self.error("data page header is missing.", pos)
        num_rows = page.num_values
        if num_rows is None or num_rows < 0 or num_rows > remaining:
            raise self.error(
                f"page holds {num_rows} values but the chunk has {remaining} left.", pos
            )
        if num_rows > self.max_values:
            raise LimitError(
                f"{self.where}: the page at byte offset {self.chunk_offset + pos} claims "
                f"{num_rows} values, over the limit of {self.max_values} that "
                f"max_decompressed_page_size={self.max_size} allows."
            )
        size = header.uncompressed_page_size
        def_levels = None
        values_data: bytes | memoryview
        if v2:
            assert isinstance(page, t.DataPageHeaderV2)
            rep_size = page.repetition_levels_byte_length or 0
            def_size = page.definition_levels_byte_length or 0
            if rep_size < 0 or def_size < 0 or rep_size + def_size > len(body):
                raise self.error("level sizes run past the page.", pos)
            # A flat column has max repetition level 0: its repetition levels say nothing.
            level_bytes = body[rep_size : rep_size + def_size]
            values_data = body[rep_size + def_size :]
            if page.is_compressed is None or page.is_compressed:
                values_size = None if size is None else size - rep_size - def_size
                values_data = self.decompress(values_data, values_size, pos)
            if self.max_def:
                def_levels, _ = self.levels(level_bytes, num_rows, Encoding.RLE, v1=False)
        else:
            assert isinstance(page, t.DataPageHeader)
            raw = self.decompress(body, size, pos)
            used = 0
            if self.max_def:
                encoding = page.definition_level_encoding
                def_levels, used = self.levels(
                    raw, num_rows, Encoding.RLE if encoding is None else encoding, v1=True
                )
            values_data = memoryview(raw)[used:]
        if def_levels is None:
            num_values = num_rows
        else:
            if num_rows and int(def_levels.max()) > self.max_def:
                raise self.error("a definition level exceeds the column's maximum.", pos)
            num_values = int(np.count_nonzero(def_levels))
        encoding = page.encoding
        if encoding is None:
            raise self.error("data page header has no encoding.", pos)
        values = self.page_values(values_data, encoding, num_values)
        return values, def_levels, num_rows

    def dictionary_page(self, header: t.PageHeader, body: memoryview, pos: int) -> None:
        if self.dictionary is not None:
            raise self.error("a second dictionary page follows the first.", pos)
        dph = header.dictionary_page_header
        if dph is None or dph.num_values is None or dph.num_values < 0:
            raise self.error("dictionary page header is missing or invalid.", pos)
        raw = self.decompress(body, header.uncompressed_page_size, pos)
        if dph.num_values > max(8 * len(raw), self.max_values):
            raise self.error(
                f"dictionary page claims {dph.num_values} values in {len(raw)} bytes.", pos
            )
        self.dictionary, _ = decode_plain(raw, self.physical_type, dph.num_values, self.type_length)

    def page(
        self, pos: int, page_ordinal: int, remaining: int, dictionary_header: bool
    ) -> tuple[int, int | None, Any, npt.NDArray[np.uint8] | None, PageInfo | None]:
        """Decodes the page at ``pos`` of ``self.buf`` (``remaining`` rows may follow).

        Returns ``(next_pos, page_type, values, def_levels, info)``: ``info`` is None for a
        page type that is skipped; ``values`` is None except for a data page. An encrypted
        header is decrypted as a dictionary page header when ``dictionary_header``."""
        buf = self.buf
        if self.cipher is not None:
            header, body_start = self.decrypt_header(pos, page_ordinal, dictionary_header)
        else:
            try:
                header, body_start = deserialize(t.PageHeader, buf, pos)
            except FormatError as exc:
                raise self.error(f"unreadable page header: {exc}", pos) from exc
        size = header.compressed_page_size
        if size is None or size < 0 or body_start + size > len(buf):
            raise self.error(f"page of {size} bytes runs past the column chunk.", pos)
        body = buf[body_start : body_start + size]
        encrypted = self.cipher is not None and header.type in _ENCRYPTED_PAGES
        if self.verify and header.crc is not None and not _crc_ok(body, header.crc):
            if encrypted:  # a failed GCM tag names the module; CTR bodies have none
                also = "; its CRC32 does not match either"
                self.decrypt_body(header, body, pos, page_ordinal, also)
            raise ChecksumError(
                f"{self.where}: page CRC32 does not match its bytes.", self.chunk_offset + pos
            )
        if encrypted:
            body = self.decrypt_body(header, body, pos, page_ordinal)
        end = body_start + size
        try:
            if header.type == PageType.DICTIONARY_PAGE:
                self.dictionary_page(header, body, pos)
                info = PageInfo(header.type, self.chunk_offset + pos, end - pos, 0, 0)
                return end, header.type, None, None, info
            if header.type in _DATA_PAGES:
                values, levels, page_rows = self.data_page(header, body, pos, remaining)
                nulls = 0
                if levels is not None:
                    count = (
                        values.indices.shape[0]
                        if isinstance(values, _Indices)
                        else count_values(values)
                    )
                    nulls = page_rows - count
                info = PageInfo(header.type, self.chunk_offset + pos, end - pos, page_rows, nulls)
                return end, header.type, values, levels, info
            # other page types (INDEX_PAGE, future ones) are skipped, as other readers do
            return end, header.type, None, None, None
        except (CorruptFileError, UnsupportedError, LimitError):
            raise
        except (FormatError, ConfigError, SchemaError) as exc:
            raise self.error(f"page does not decode: {exc}", pos) from exc
        except MemoryError as exc:
            raise LimitError(
                f"{self.where}: the page at byte offset {self.chunk_offset + pos} needs "
                "more memory than is available."
            ) from exc
        except KERNEL_ERRORS as exc:
            raise self.error(f"page does not decode ({type(exc).__name__}: {exc}).", pos) from exc

    def run(self, num_rows: int) -> DecodedChunk:
        pos = 0
        parts: list[Any] = []
        level_parts: list[npt.NDArray[np.uint8]] = []
        rows = 0
        pages: list[PageInfo] = []
        page_ordinal = 0
        while rows < num_rows:
            if pos >= len(self.buf):
                raise self.error(f"chunk ends after {rows} of {num_rows} values.", pos)
            dictionary_header = pos == 0 and self.dictionary_first
            pos, page_type, values, levels, info = self.page(
                pos, page_ordinal, num_rows - rows, dictionary_header
            )
            if page_type != PageType.DICTIONARY_PAGE:
                page_ordinal += 1
            if info is None:
                continue
            pages.append(info)
            if page_type != PageType.DICTIONARY_PAGE:
                parts.append(values)
                if levels is not None:
                    level_parts.append(levels)
                rows += info.num_rows
        return self.finish(parts, level_parts, rows, pages)

    def finish(
        self,
        parts: list[Any],
        level_parts: list[npt.NDArray[np.uint8]],
        rows: int,
        pages: list[PageInfo],
    ) -> DecodedChunk:
        """The decoded chunk from the data pages' values and levels."""
        dictionary = None
        if parts and all(isinstance(part, _Indices) for part in parts):
            dictionary = self.dictionary
            values = _concat_indices([part.indices for part in parts])
        else:
            values = concat_values(
                [
                    gather_dictionary(self.dictionary, part.indices)
                    if isinstance(part, _Indices)
                    else part
                    for part in parts
                ],
                self.physical_type,
                self.type_length,
            )
        def_levels = None
        if self.max_def:
            if len(level_parts) == 1:
                def_levels = level_parts[0]
            else:
                def_levels = (
                    np.concatenate(level_parts) if level_parts else np.zeros(0, dtype=np.uint8)
                )
        return DecodedChunk(
            values=values, def_levels=def_levels, num_rows=rows, pages=pages, dictionary=dictionary
        )


def decode_chunk(
    buf: bytes | memoryview,
    chunk_offset: int,
    meta: t.ColumnMetaData,
    *,
    type_length: int | None,
    max_definition_level: int,
    verify_checksums: bool,
    max_decompressed_page_size: int,
    where: str | None = None,
    cipher: PageCipher | None = None,
    dictionary_first: bool = False,
    keep_dictionary: bool = False,
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
        where: how error messages name the chunk (default: ``Column 'path'``).
        cipher: decrypts the page headers and bodies of an encrypted chunk.
        dictionary_first: the chunk starts with a dictionary page (``dictionary_page_offset``
            is its start); needed to pick the first header's module type when encrypted.
        keep_dictionary: when every data page is dictionary-encoded, return the indices and
            the dictionary instead of looking the values up (:class:`DecodedChunk`).

    Returns:
        The non-null values and the definition levels.

    Raises:
        CorruptFileError: damaged or inconsistent pages (ChecksumError for CRC mismatches).
        LimitError: a page over the size or value count limit.
        UnsupportedError: an unsupported codec (LZO).
        EncryptionError: a page header or body module does not decrypt (the message names the
            module type, row group, column and page ordinals).
    """
    if where is None:
        where = f"Column {'.'.join(meta.path_in_schema or ['?'])!r}"
    num_rows = meta.num_values
    if num_rows is None or num_rows < 0:
        raise CorruptFileError(f"{where}: the chunk has no valid num_values.", chunk_offset)
    if meta.type is None or meta.type not in Type._value2member_map_:
        raise CorruptFileError(f"{where}: unknown physical type {meta.type}.", chunk_offset)
    decoder = _ChunkDecoder(
        memoryview(buf),
        chunk_offset,
        meta,
        Type(meta.type),
        where,
        type_length,
        max_definition_level,
        verify_checksums,
        max_decompressed_page_size,
        cipher,
        dictionary_first,
        keep_dictionary,
    )
    return decoder.run(num_rows)
