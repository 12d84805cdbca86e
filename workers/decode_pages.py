"""Decoding some of a column chunk's data pages (the pages a page-index pruned read needs).

A chunk is ``[dictionary page] data page*``; its OffsetIndex gives each data page's absolute
``offset``, ``compressed_page_size`` (header included) and ``first_row_index``. To read rows in
a few pages only, the caller reads the chunk's prefix (the bytes before its first data page:
the dictionary page, if any) and the chosen pages, and this module decodes them as
:func:`workers.decode.decode_chunk` would decode the same pages inside the whole chunk::

    prefix := [dictionary page]           bytes [chunk start, first data page offset)
    page k := PageHeader body             bytes [offset_k, offset_k + compressed_page_size_k)

Every page is checked as the whole-chunk decoder checks it (sizes, CRC32, limits), and also
against the OffsetIndex: it must be a data page holding exactly the rows the OffsetIndex gives
it (the next page's ``first_row_index`` minus its own). An encrypted page is decrypted with its
true data page ordinal ``k`` in the AAD (the index of its PageLocation), never its position
among the pages read.

Rows are records: with a page index every page starts a record (parquet-format, DataPageHeader;
a column with repetition levels whose selected page begins with a level other than 0 is
corrupt), so the selected pages hold whole records, ``first_row_index`` counts records and a
page's rows are the level entries with repetition level 0 in it. Some writers broke that rule
(arrow-go #887, V1 pages with an OffsetIndex): a caller that meets this CorruptFileError can
still read the chunk whole with :func:`workers.decode.decode_chunk`, which accepts records
spanning pages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from streamwrite.errors import CorruptFileError
from streamwrite.format import structs as t
from streamwrite.format.enums import PageType, Type
from workers.decode import DecodedChunk, PageInfo, _ChunkDecoder
from workers.decode_crypto import PageCipher

__all__ = ["PageSlice", "decode_pages"]


@dataclass(frozen=True, slots=True)
class PageSlice:
    """One data page to decode.

    Attributes:
        data: The page's bytes, header included.
        offset: Absolute file offset of ``data[0]``.
        ordinal: The page's data page ordinal in its chunk (its PageLocation index).
        num_rows: Rows the OffsetIndex gives the page.
    """

    data: bytes | memoryview
    offset: int
    ordinal: int
    num_rows: int


def decode_pages(
    prefix: bytes | memoryview,
    prefix_offset: int,
    pages: Sequence[PageSlice],
    meta: t.ColumnMetaData,
    *,
    type_length: int | None,
    max_definition_level: int,
    verify_checksums: bool,
    max_decompressed_page_size: int,
    where: str,
    cipher: PageCipher | None = None,
    dictionary_first: bool = False,
    max_repetition_level: int = 0,
) -> DecodedChunk:
    """Decode the chunk's prefix (its dictionary page) and the data pages ``pages``.

    Args:
        prefix: The chunk's bytes before its first data page (empty without a dictionary).
        prefix_offset: Absolute offset of ``prefix[0]`` (the chunk's start).
        pages: The data pages to decode, in file order.
        meta: The chunk's ColumnMetaData (type, codec).
        type_length: FIXED_LEN_BYTE_ARRAY width.
        max_definition_level: The leaf's maximum definition level (0 for REQUIRED, 1 for
            OPTIONAL flat columns).
        verify_checksums: Check page CRC32s that are present.
        max_decompressed_page_size: Refuse pages claiming more uncompressed bytes.
        where: How error messages name the chunk.
        cipher: Decrypts the modules of an encrypted chunk.
        dictionary_first: The prefix starts with a dictionary page (selects the module type
            of the first encrypted header).
        max_repetition_level: The leaf's maximum repetition level (0 for a flat column).

    Returns:
        The values and levels of the records of ``pages``, concatenated in order
        (``num_rows`` is the sum of the pages' records; ``pages`` lists what was decoded).

    Raises:
        CorruptFileError: A damaged page, a data page in the prefix, a page that is not a
            data page or holds other rows than the OffsetIndex says, or one that does not
            start a record.
        LimitError, UnsupportedError, EncryptionError, ChecksumError: as
            :func:`workers.decode.decode_chunk`.
    """
    if meta.type is None or meta.type not in Type._value2member_map_:
        raise CorruptFileError(f"{where}: unknown physical type {meta.type}.", prefix_offset)
    decoder = _ChunkDecoder(
        memoryview(prefix),
        prefix_offset,
        meta,
        Type(meta.type),
        where,
        type_length,
        max_definition_level,
        verify_checksums,
        max_decompressed_page_size,
        cipher,
        dictionary_first,
        max_repetition_level=max_repetition_level,
    )
    infos: list[PageInfo] = []
    pos = 0
    while pos < len(prefix):
        start = pos
        found = decoder.page(pos, 0, 0, pos == 0 and dictionary_first)
        pos = found.end
        if found.page_type in (PageType.DATA_PAGE, PageType.DATA_PAGE_V2):
            raise decoder.error(
                "a data page lies before the first page the OffsetIndex lists.", start
            )
        if found.info is not None:
            infos.append(found.info)
    parts: list[Any] = []
    level_parts: list[npt.NDArray[np.uint8]] = []
    rep_parts: list[npt.NDArray[np.uint8]] = []
    for page in pages:
        decoder.buf = memoryview(page.data)
        decoder.chunk_offset = page.offset
        # A flat page holds one level entry per row; a nested one any number, bounded by the
        # page value limit (the records are checked below).
        remaining = decoder.max_values if max_repetition_level else page.num_rows
        found = decoder.page(0, page.ordinal, remaining, False)
        info = found.info
        if info is None or found.page_type not in (PageType.DATA_PAGE, PageType.DATA_PAGE_V2):
            raise decoder.error(
                f"the OffsetIndex lists page {page.ordinal} here, but this is not a data page.",
                0,
            )
        reps = found.rep_levels
        if reps is not None and info.num_values and reps[0] != 0:
            raise decoder.error(
                f"page {page.ordinal} starts with repetition level {int(reps[0])}, but with "
                "an OffsetIndex every page starts a record.",
                0,
            )
        if info.num_rows != page.num_rows or found.end != len(page.data):
            raise decoder.error(
                f"page {page.ordinal} holds {info.num_rows} rows in {found.end} bytes; the "
                f"OffsetIndex says {page.num_rows} rows in {len(page.data)} bytes.",
                0,
            )
        infos.append(info)
        parts.append(found.values)
        if found.def_levels is not None:
            level_parts.append(found.def_levels)
        if reps is not None:
            rep_parts.append(reps)
    return decoder.finish(parts, level_parts, rep_parts, infos)
