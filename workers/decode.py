"""Column chunk decoder: the bytes of one column chunk -> values, definition, repetition levels.

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

Levels (:mod:`workers.decode_levels` has their layouts): a page's header ``num_values`` counts
its level entries; the values are the entries at the maximum definition level; the records are
the entries with repetition level 0 (every entry of a flat column). A column whose maximum
repetition level is 0 has no repetition levels: a V2 page's are skipped (some writers still
store a run of zeros). A level above its maximum is corrupt.

Records and pages: the spec wants every page to start a record with DATA_PAGE_V2 or a page
index, but writers split records across pages (parquet-mr before its page index, 1.11;
parquet-cpp before Arrow 12, GH-34142, V2 pages too; arrow-rs before #4327, 2023; arrow-go's V2
dictionary and V1 page-index paths until 2026, #882 and #887), and Arrow C++ and parquet-java
read those files by counting records over the whole chunk. So does this
decoder: a page may continue the previous page's record (its ``PageInfo.num_rows`` counts the
records starting in it); only the chunk's first entry must start a record. Decoding selected
pages through a page index (:mod:`workers.decode_pages`) requires each page to start one.

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
from workers.decode_levels import MAX_LEVEL, decode_levels
from workers.decode_levels import single_run as _single_run  # noqa: F401  (tests/reader)
from workers.encoding.dictionary import decode_dictionary_indices
from workers.encoding.plain import decode_plain
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
    """Where a page was found: ``offset`` absolute, ``size`` header plus body bytes.

    ``num_values`` counts the page's level entries (its header's ``num_values``), ``num_rows``
    the records that start in it (entries with repetition level 0; ``num_values`` for a flat
    column) and ``num_nulls`` the entries without a value (definition level below the maximum).
    """

    page_type: int
    offset: int
    size: int
    num_rows: int
    num_nulls: int
    num_values: int


@dataclass(frozen=True, slots=True)
class DecodedChunk:
    """A column chunk's values, levels and pages.

    ``def_levels`` (None when the maximum definition level is 0) and ``rep_levels`` (None when
    the maximum repetition level is 0) hold one level per level entry; ``values`` are the
    entries whose definition level is the maximum; ``num_rows`` counts records (entries with
    repetition level 0: rows for a flat column).

    With ``keep_dictionary`` (:func:`decode_chunk`) and every data page dictionary-encoded,
    ``values`` holds the int32 indices (checked against the dictionary) and ``dictionary`` the
    dictionary page's values: ``gather_dictionary(dictionary, values)`` are the values.
    """

    values: Any
    def_levels: npt.NDArray[np.uint8] | None
    num_rows: int
    pages: list[PageInfo]
    dictionary: Any = None
    rep_levels: npt.NDArray[np.uint8] | None = None

    @property
    def num_levels(self) -> int:
        """Level entries in the chunk (``num_rows`` for a flat column)."""
        if self.def_levels is not None:
            return int(self.def_levels.shape[0])
        if self.rep_levels is not None:
            return int(self.rep_levels.shape[0])
        return self.num_rows


@dataclass(frozen=True, slots=True)
class _Page:
    """One decoded page: ``values`` is None except for a data page; ``info`` is None for a
    page type that is skipped."""

    page_type: int | None
    values: Any
    def_levels: npt.NDArray[np.uint8] | None
    rep_levels: npt.NDArray[np.uint8] | None
    info: PageInfo | None
    end: int
    """Position in the decoder's buffer after the page."""


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
        max_repetition_level: int = 0,
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
        self.max_rep = max_repetition_level
        self.rep_width = max_repetition_level.bit_length()
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
        self, data: bytes | memoryview, count: int, encoding: int | None, v1: bool, rep: bool
    ) -> tuple[npt.NDArray[np.uint8], int]:
        """Repetition (``rep``) or definition levels and the bytes they used (encoding None:
        RLE), checked against the column's maximum."""
        width = self.rep_width if rep else self.level_width
        levels, used = decode_levels(
            data, width, count, Encoding.RLE if encoding is None else encoding, v1
        )
        maximum = self.max_rep if rep else self.max_def
        if count and int(levels.max()) > maximum:
            kind = "repetition" if rep else "definition"
            raise FormatError(
                f"A {kind} level {int(levels.max())} exceeds the column's maximum {maximum}."
            )
        return levels, used

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
    ) -> tuple[Any, npt.NDArray[np.uint8] | None, npt.NDArray[np.uint8] | None, int]:
        """The page's values, definition and repetition levels, and level entries."""
        v2 = header.type == PageType.DATA_PAGE_V2
        page = header.data_page_header_v2 if v2 else header.data_page_header
        if page is None:
            raise self.error("data page header is missing.", pos)
        count = page.num_values
        if count is None or count < 0 or count > remaining:
            raise self.error(f"page holds {count} values but the chunk has {remaining} left.", pos)
        if count > self.max_values:
            raise LimitError(
                f"{self.where}: the page at byte offset {self.chunk_offset + pos} claims "
                f"{count} values, over the limit of {self.max_values} that "
                f"max_decompressed_page_size={self.max_size} allows."
            )
        size = header.uncompressed_page_size
        def_levels = rep_levels = None
        values_data: bytes | memoryview
        if v2:
            assert isinstance(page, t.DataPageHeaderV2)
            rep_size = page.repetition_levels_byte_length or 0
            def_size = page.definition_levels_byte_length or 0
            if rep_size < 0 or def_size < 0 or rep_size + def_size > len(body):
                raise self.error("level sizes run past the page.", pos)
            # With max repetition level 0 the repetition levels say nothing (some writers
            # still store a run of zeros): they are skipped.
            if self.max_rep:
                rep_levels, _ = self.levels(body[:rep_size], count, None, v1=False, rep=True)
            if self.max_def:
                level_bytes = body[rep_size : rep_size + def_size]
                def_levels, _ = self.levels(level_bytes, count, None, v1=False, rep=False)
            values_data = body[rep_size + def_size :]
            if page.is_compressed is None or page.is_compressed:
                values_size = None if size is None else size - rep_size - def_size
                values_data = self.decompress(values_data, values_size, pos)
        else:
            assert isinstance(page, t.DataPageHeader)
            raw = self.decompress(body, size, pos)
            used = 0
            if self.max_rep:
                encoding = page.repetition_level_encoding
                rep_levels, used = self.levels(raw, count, encoding, v1=True, rep=True)
            if self.max_def:
                encoding = page.definition_level_encoding
                def_levels, size_used = self.levels(
                    memoryview(raw)[used:], count, encoding, v1=True, rep=False
                )
                used += size_used
            values_data = memoryview(raw)[used:]
        if def_levels is None:
            num_values = count
        elif self.max_def == 1:
            num_values = int(np.count_nonzero(def_levels))
        else:
            num_values = int(np.count_nonzero(def_levels == self.max_def))
        encoding = page.encoding
        if encoding is None:
            raise self.error("data page header has no encoding.", pos)
        values = self.page_values(values_data, encoding, num_values)
        return values, def_levels, rep_levels, count

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

    def page(self, pos: int, page_ordinal: int, remaining: int, dictionary_header: bool) -> _Page:
        """Decodes the page at ``pos`` of ``self.buf`` (``remaining`` level entries may
        follow). An encrypted header is decrypted as a dictionary page header when
        ``dictionary_header``."""
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
                info = PageInfo(header.type, self.chunk_offset + pos, end - pos, 0, 0, 0)
                return _Page(header.type, None, None, None, info, end)
            if header.type in _DATA_PAGES:
                values, levels, reps, count = self.data_page(header, body, pos, remaining)
                nulls = 0
                if levels is not None:
                    num_values = (
                        values.indices.shape[0]
                        if isinstance(values, _Indices)
                        else count_values(values)
                    )
                    nulls = count - num_values
                records = count if reps is None else int(np.count_nonzero(reps == 0))
                info = PageInfo(
                    header.type, self.chunk_offset + pos, end - pos, records, nulls, count
                )
                return _Page(header.type, values, levels, reps, info, end)
            # other page types (INDEX_PAGE, future ones) are skipped, as other readers do
            return _Page(header.type, None, None, None, None, end)
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

    def run(self, num_values: int) -> DecodedChunk:
        """Decodes data pages until they hold ``num_values`` level entries.

        A record may continue from one page into the next (old writers split records across
        pages; readers accept it when reading whole chunks), but the chunk's first level entry
        must start a record."""
        pos = 0
        parts: list[Any] = []
        level_parts: list[npt.NDArray[np.uint8]] = []
        rep_parts: list[npt.NDArray[np.uint8]] = []
        levels_read = 0
        pages: list[PageInfo] = []
        page_ordinal = 0
        while levels_read < num_values:
            if pos >= len(self.buf):
                raise self.error(f"chunk ends after {levels_read} of {num_values} values.", pos)
            dictionary_header = pos == 0 and self.dictionary_first
            start = pos
            page = self.page(pos, page_ordinal, num_values - levels_read, dictionary_header)
            pos = page.end
            if page.page_type != PageType.DICTIONARY_PAGE:
                page_ordinal += 1
            info = page.info
            if info is None:
                continue
            pages.append(info)
            if page.page_type != PageType.DICTIONARY_PAGE:
                reps = page.rep_levels
                if reps is not None and not rep_parts and info.num_values and reps[0] != 0:
                    raise self.error(
                        f"the chunk's first level entry has repetition level {int(reps[0])}: "
                        "it does not start a record.",
                        start,
                    )
                parts.append(page.values)
                if page.def_levels is not None:
                    level_parts.append(page.def_levels)
                if page.rep_levels is not None and info.num_values:
                    rep_parts.append(page.rep_levels)
                levels_read += info.num_values
        return self.finish(parts, level_parts, rep_parts, pages)

    def finish(
        self,
        parts: list[Any],
        level_parts: list[npt.NDArray[np.uint8]],
        rep_parts: list[npt.NDArray[np.uint8]],
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
        def_levels = _concat_levels(level_parts) if self.max_def else None
        rep_levels = _concat_levels(rep_parts) if self.max_rep else None
        rows = sum(info.num_rows for info in pages)
        return DecodedChunk(
            values=values,
            def_levels=def_levels,
            num_rows=rows,
            pages=pages,
            dictionary=dictionary,
            rep_levels=rep_levels,
        )


def _concat_levels(parts: list[npt.NDArray[np.uint8]]) -> npt.NDArray[np.uint8]:
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)


def _check_max_levels(where: str, max_definition_level: int, max_repetition_level: int) -> None:
    for kind, level in (("definition", max_definition_level), ("repetition", max_repetition_level)):
        if not 0 <= level <= MAX_LEVEL:
            raise UnsupportedError(
                f"{where}: the maximum {kind} level {level} is outside 0..{MAX_LEVEL} "
                "(a schema nested that deep is not supported)."
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
    max_repetition_level: int = 0,
) -> DecodedChunk:
    """Decode every page of one column chunk.

    Args:
        buf: the chunk's bytes, starting at its first page.
        chunk_offset: absolute file offset of ``buf[0]`` (for error messages).
        meta: the chunk's ColumnMetaData (type, codec, num_values: level entries).
        type_length: FIXED_LEN_BYTE_ARRAY width.
        max_definition_level: the leaf's maximum definition level (0 for a REQUIRED flat
            column, 1 for an OPTIONAL one).
        verify_checksums: check page CRC32s that are present.
        max_decompressed_page_size: refuse pages claiming more uncompressed bytes.
        where: how error messages name the chunk (default: ``Column 'path'``).
        cipher: decrypts the page headers and bodies of an encrypted chunk.
        dictionary_first: the chunk starts with a dictionary page (``dictionary_page_offset``
            is its start); needed to pick the first header's module type when encrypted.
        keep_dictionary: when every data page is dictionary-encoded, return the indices and
            the dictionary instead of looking the values up (:class:`DecodedChunk`).
        max_repetition_level: the leaf's maximum repetition level (its number of repeated
            ancestors; 0 for a flat column).

    Returns:
        The values (entries at the maximum definition level), the definition and repetition
        levels (one per level entry) and the records (``num_rows``). A record may continue
        from one data page into the next (written by old writers), never from before the
        chunk's first entry.

    Raises:
        CorruptFileError: damaged or inconsistent pages (ChecksumError for CRC mismatches), a
            level above its maximum, a chunk whose first level entry does not start a record.
        LimitError: a page over the size or value count limit.
        UnsupportedError: an unsupported codec (LZO), a maximum level above 255.
        EncryptionError: a page header or body module does not decrypt (the message names the
            module type, row group, column and page ordinals).
    """
    if where is None:
        where = f"Column {'.'.join(meta.path_in_schema or ['?'])!r}"
    num_values = meta.num_values
    if num_values is None or num_values < 0:
        raise CorruptFileError(f"{where}: the chunk has no valid num_values.", chunk_offset)
    if meta.type is None or meta.type not in Type._value2member_map_:
        raise CorruptFileError(f"{where}: unknown physical type {meta.type}.", chunk_offset)
    _check_max_levels(where, max_definition_level, max_repetition_level)
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
        max_repetition_level,
    )
    return decoder.run(num_values)
