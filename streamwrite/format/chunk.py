"""The ring 1 <-> ring 2 contract: an encoded column chunk, placed anywhere in a file.

A worker (ring 2, :func:`workers.chunk.encode_chunk`; or a raw copy out of an existing file,
:func:`streamwrite.layout.raw_copy.copy_row_group`) turns one column of one row group into an
:class:`EncodedChunk`; the file writer (ring 1,
:class:`streamwrite.layout.file_writer.FileWriter`) places it and rebases its offsets. The
chunk knows nothing of where it lands::

    data := [dictionary page] data page*             offsets below count from data[0]

    meta_data.data_page_offset, meta_data.dictionary_page_offset      relative to data[0]
    offset_index.page_locations[].offset                              relative to data[0]
    column_index                                                      no offsets
    bloom_filter := BloomFilterHeader bitset | enc(header) enc(bitset)    placed by the writer

Sizes (``total_compressed_size``, page locations) count the stored bytes, encrypted pages
included. An encrypted column's pages and bloom filter arrive sealed; its ColumnMetaData and
page index stay plaintext here because their offsets change on placement (the file writer
seals them once they are final).

The encoder's settings (``workers.chunk.ChunkSettings``) stay in ring 2: they hold a
:class:`streamwrite.options.ColumnOptions`, and ``options`` ranks above ``format``.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamwrite.format import structs as t

__all__ = ["EncodedChunk"]


@dataclass(frozen=True, slots=True)
class EncodedChunk:
    """A column chunk's bytes and metadata, with offsets relative to the chunk start.

    Attributes:
        data: The pages, dictionary page first (sealed if the column is encrypted).
        meta_data: The chunk's ColumnMetaData; page offsets relative to ``data[0]``.
        column_index: The chunk's ColumnIndex, or None without a page index.
        offset_index: The chunk's OffsetIndex (page offsets relative to ``data[0]``), or None.
        bloom_filter: The serialized bloom filter, or None; the file writer places it after
            the row group's chunks.
    """

    data: bytes
    meta_data: t.ColumnMetaData
    column_index: t.ColumnIndex | None
    offset_index: t.OffsetIndex | None
    bloom_filter: bytes | None
