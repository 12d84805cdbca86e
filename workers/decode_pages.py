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
) -> DecodedChunk:
    """Decode the chunk's prefix (its dictionary page) and the data pages ``pages``.

    Args:
        prefix: The chunk's bytes before its first data page (empty without a dictionary).
        prefix_offset: Absolute offset of ``prefix[0]`` (the chunk's start).
        pages: The data pages to decode, in file order.
        meta: The chunk's ColumnMetaData (type, codec).
        type_length: FIXED_LEN_BYTE_ARRAY width.
        max_definition_level: 0 for REQUIRED, 1 for OPTIONAL flat columns.
        verify_checksums: Check page CRC32s that are present.
        max_decompressed_page_size: Refuse pages claiming more uncompressed bytes.
        where: How error messages name the chunk.
        cipher: Decrypts the modules of an encrypted chunk.
        dictionary_first: The prefix starts with a dictionary page (selects the module type
            of the first encrypted header).

    Returns:
        The values and definition levels of the rows of ``pages``, concatenated in order
        (``num_rows`` is the sum of the pages' rows; ``pages`` lists what was decoded).

    Raises:
        CorruptFileError: A damaged page, a data page in the prefix, or a page that is not a
            data page or holds other rows than the OffsetIndex says.
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
    )
    infos: list[PageInfo] = []
    pos = 0
    while pos < len(prefix):
        pos, page_type, _, _, info = decoder.page(pos, 0, 0, pos == 0 and dictionary_first)
        if page_type in (PageType.DATA_PAGE, PageType.DATA_PAGE_V2):
            raise decoder.error(
                "a data page lies before the first page the OffsetIndex lists.", pos
            )
        if info is not None:
            infos.append(info)
    parts: list[Any] = []
    level_parts: list[npt.NDArray[np.uint8]] = []
    rows = 0
    for page in pages:
        decoder.buf = memoryview(page.data)
        decoder.chunk_offset = page.offset
        end, page_type, values, levels, info = decoder.page(0, page.ordinal, page.num_rows, False)
        if info is None or page_type not in (PageType.DATA_PAGE, PageType.DATA_PAGE_V2):
            raise decoder.error(
                f"the OffsetIndex lists page {page.ordinal} here, but this is not a data page.",
                0,
            )
        if info.num_rows != page.num_rows or end != len(page.data):
            raise decoder.error(
                f"page {page.ordinal} holds {info.num_rows} rows in {end} bytes; the OffsetIndex "
                f"says {page.num_rows} rows in {len(page.data)} bytes.",
                0,
            )
        infos.append(info)
        parts.append(values)
        if levels is not None:
            level_parts.append(levels)
        rows += info.num_rows
    return decoder.finish(parts, level_parts, rows, infos)
