"""Raw copy: turn the column chunks of an existing row group back into EncodedChunks (no I/O).

Compaction places row groups of older files in a new file without decoding a page: each
column chunk of the source becomes the :class:`~streamwrite.format.chunk.EncodedChunk` the
encoder would have produced for it, and :class:`~streamwrite.layout.file_writer.FileWriter`
rebases and places it like any other. Byte ranges read per column chunk (absolute source
offsets, each checked to lie in ``[4, file_size)``; parquet-format "File Format", PageIndex.md,
BloomFilter.md)::

    chunk        := [dictionary page] data page*      [start, start + total_compressed_size)
                    start = dictionary_page_offset if set (and > 0) else data_page_offset
    column_index := ColumnIndex                       [column_index_offset, + column_index_length)
    offset_index := OffsetIndex                       [offset_index_offset, + offset_index_length)
    bloom_filter := BloomFilterHeader bitset          [bloom_filter_offset, + bloom_filter_length)
                    (without bloom_filter_length: the header is decoded and gives numBytes)

What is rebased to the chunk start (as the encoder leaves it): ``data_page_offset``,
``dictionary_page_offset`` (0 when the chunk has a dictionary page, else None; a source's 0
means "unset" and becomes None) and ``OffsetIndex.page_locations[].offset``. What is dropped
because FileWriter sets it when it places the chunk: ``bloom_filter_offset`` and
``bloom_filter_length`` (the filter travels as bytes), the ColumnChunk's ``file_offset`` and
page index offsets and lengths (never read: the chunk start comes from the ColumnMetaData),
and ``index_page_offset`` (index pages were never specified; no chunk holds one). Everything
else of the ColumnMetaData is kept as is: codec, encodings, sizes, statistics, encoding stats,
size statistics, key/value metadata. Page bytes, the ColumnIndex and the bloom filter are
copied unchanged, so page CRCs stay valid.

Only unencrypted chunks can be copied: an encrypted chunk's modules are bound to their file,
row group and column ordinals by their AADs, so the caller re-encodes it. Chunks stored in
another file (``file_path``) are not copied either. Files from parquet-mr before 1.2.9 leave
the dictionary page header out of ``total_compressed_size``
(:func:`streamwrite.reader.tail._needs_parquet_816_padding`); re-encode those too.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

from streamwrite.errors import CorruptFileError, FormatError, UnsupportedError
from streamwrite.format import structs as t
from streamwrite.format.chunk import EncodedChunk
from streamwrite.format.thrift.codec import deserialize
from streamwrite.layout.recovery import ReadAt

__all__ = ["copy_column_chunk", "copy_row_group"]

_BLOOM_HEADER_READ_SIZE = 256
"""Bytes read to decode a BloomFilterHeader whose length the metadata does not give (a header
of the spec's fields takes at most 19 bytes; the rest leaves room for unknown fields)."""
_MAGIC_SIZE = 4

_T = TypeVar("_T")


def _read(read_at: ReadAt, offset: int, size: int, file_size: int, what: str) -> bytes:
    """The ``size`` bytes at ``offset``, checked to lie between the magic and ``file_size``."""
    if offset < _MAGIC_SIZE or size < 0 or offset + size > file_size:
        raise CorruptFileError(
            f"{what} claims bytes [{offset}, {offset + size}) outside the data of the "
            f"{file_size}-byte file.",
            offset,
        )
    data = bytes(read_at(offset, size))
    if len(data) != size:
        raise CorruptFileError(
            f"{what}: a read of {size} bytes returned {len(data)} bytes.", offset
        )
    return data


def _decode(cls: type[_T], data: bytes, offset: int, what: str) -> tuple[_T, int]:
    """Decode a Thrift struct read at ``offset``; bytes that do not decode are damage there."""
    try:
        return deserialize(cls, data)
    except FormatError as exc:
        raise CorruptFileError(f"{what} does not decode: {exc}", offset) from exc


def _chunk_start(meta: t.ColumnMetaData, where: str) -> tuple[int, int | None]:
    """The chunk's first byte and its dictionary page offset (None when it has none)."""
    data_page_offset = meta.data_page_offset
    if data_page_offset is None:
        raise CorruptFileError(f"The chunk of {where} has no data_page_offset.", None)
    dictionary = meta.dictionary_page_offset
    if dictionary is None or dictionary == 0:  # some writers write 0 for "no dictionary page"
        return data_page_offset, None
    if dictionary > data_page_offset:
        raise CorruptFileError(
            f"The chunk of {where} has its dictionary page at byte offset {dictionary}, "
            f"after its first data page at {data_page_offset}.",
            dictionary,
        )
    return dictionary, dictionary


def _page_index(
    read_at: ReadAt,
    cls: type[_T],
    offset: int | None,
    length: int | None,
    file_size: int,
    what: str,
) -> _T | None:
    """A ColumnIndex or OffsetIndex at ``offset`` (``length`` bytes), or None without one."""
    if offset is None:
        return None
    if length is None:
        raise CorruptFileError(f"{what} has an offset but no length.", offset)
    index, _ = _decode(cls, _read(read_at, offset, length, file_size, what), offset, what)
    return index


def _offset_index(
    read_at: ReadAt, column: t.ColumnChunk, start: int, size: int, file_size: int, where: str
) -> t.OffsetIndex | None:
    """The chunk's OffsetIndex with page offsets relative to ``start``, or None."""
    what = f"The OffsetIndex of {where}"
    offset = column.offset_index_offset
    length = column.offset_index_length
    index = _page_index(read_at, t.OffsetIndex, offset, length, file_size, what)
    if index is None:
        return None
    locations = []
    for n, location in enumerate(index.page_locations or []):
        page_offset, page_size = location.offset, location.compressed_page_size
        if (
            page_offset is None
            or page_size is None
            or page_offset < start
            or page_size <= 0
            or page_offset + page_size > start + size
        ):
            raise CorruptFileError(
                f"{what}: page {n} at byte offset {page_offset} ({page_size} bytes) lies "
                f"outside the chunk's bytes [{start}, {start + size}).",
                offset,
            )
        locations.append(replace(location, offset=page_offset - start))
    return replace(index, page_locations=locations)


def _bloom_filter(
    read_at: ReadAt, meta: t.ColumnMetaData, file_size: int, where: str
) -> bytes | None:
    """The chunk's bloom filter (header and bitset, exactly), or None."""
    offset = meta.bloom_filter_offset
    if offset is None:
        return None
    what = f"The bloom filter of {where}"
    length = meta.bloom_filter_length
    if length is None:
        head_size = max(0, min(_BLOOM_HEADER_READ_SIZE, file_size - offset))
        data = _read(read_at, offset, head_size, file_size, what)
    else:
        data = _read(read_at, offset, length, file_size, what)
    header, header_size = _decode(t.BloomFilterHeader, data, offset, what)
    num_bytes = header.numBytes
    if num_bytes is None or num_bytes <= 0:
        raise CorruptFileError(f"{what} has a bitset of {num_bytes} bytes.", offset)
    total = header_size + num_bytes
    if length is None:
        return data[:header_size] + _read(read_at, offset + header_size, num_bytes, file_size, what)
    if total > length:
        raise CorruptFileError(
            f"{what} has a {header_size}-byte header and a {num_bytes}-byte bitset, more "
            f"than its bloom_filter_length {length}.",
            offset,
        )
    return data[:total]


def copy_column_chunk(
    read_at: ReadAt, column: t.ColumnChunk, *, file_size: int, where: str = "the column"
) -> EncodedChunk:
    """Read one unencrypted column chunk back into the form the encoder produces.

    Args:
        read_at: ``read_at(offset, size)`` returns exactly those bytes of the source file.
        column: The chunk's ColumnChunk, from the source footer.
        file_size: The source's (committed) size; every range read must lie inside it.
        where: How messages name the column (e.g. "column 2 ('price') of row group 5").

    Returns:
        The chunk's bytes, its ColumnMetaData with offsets relative to the chunk start (bloom
        filter fields cleared), its ColumnIndex and OffsetIndex (relative page offsets) when
        the source has them, and its bloom filter bytes (header and bitset) when it has one.

    Raises:
        UnsupportedError: The chunk is encrypted (``crypto_metadata`` or
            ``encrypted_column_metadata`` set) or lives in another file (``file_path``).
        CorruptFileError: No ColumnMetaData or data page offset, a dictionary page after the
            first data page, a range outside ``[4, file_size)``, a short read, a page location
            outside the chunk, or a page index or bloom filter header that does not decode.
        LimitError: A page index struct exceeds the Thrift decoder's limits.
    """
    if column.crypto_metadata is not None or column.encrypted_column_metadata is not None:
        raise UnsupportedError(
            f"The chunk of {where} is encrypted; its modules are bound to their file, so it "
            "cannot be copied raw (re-encode it)."
        )
    if column.file_path is not None:
        raise UnsupportedError(
            f"The chunk of {where} is stored in another file ({column.file_path!r}); it cannot "
            "be copied raw."
        )
    meta = column.meta_data
    if meta is None:
        raise CorruptFileError(f"The chunk of {where} has no ColumnMetaData.", None)
    start, dictionary = _chunk_start(meta, where)
    size = meta.total_compressed_size
    if size is None or size <= 0 or not start <= (meta.data_page_offset or 0) < start + size:
        raise CorruptFileError(
            f"The chunk of {where} has total_compressed_size {size}, which does not reach its "
            f"first data page at byte offset {meta.data_page_offset} from its start at {start}.",
            start,
        )
    data = _read(read_at, start, size, file_size, f"The pages of {where}")
    relative = replace(
        meta,
        data_page_offset=(meta.data_page_offset or 0) - start,
        dictionary_page_offset=None if dictionary is None else dictionary - start,
        index_page_offset=None,
        bloom_filter_offset=None,
        bloom_filter_length=None,
    )
    return EncodedChunk(
        data=data,
        meta_data=relative,
        column_index=_page_index(
            read_at,
            t.ColumnIndex,
            column.column_index_offset,
            column.column_index_length,
            file_size,
            f"The ColumnIndex of {where}",
        ),
        offset_index=_offset_index(read_at, column, start, size, file_size, where),
        bloom_filter=_bloom_filter(read_at, meta, file_size, where),
    )


def copy_row_group(read_at: ReadAt, row_group: t.RowGroup, *, file_size: int) -> list[EncodedChunk]:
    """Read every column chunk of an unencrypted row group back into EncodedChunks.

    The result goes to :meth:`FileWriter.add_row_group` with ``row_group.num_rows``, in a
    file of the same schema; no page is decoded or re-encoded.

    Args:
        read_at: ``read_at(offset, size)`` returns exactly those bytes of the source file
            (backed by a file, a buffer, or a live file's committed prefix).
        row_group: The row group, as decoded from the source footer.
        file_size: The source's (committed) size; every range read must lie inside it.

    Returns:
        One chunk per column, in the row group's column order (see :func:`copy_column_chunk`).

    Raises:
        UnsupportedError: A column chunk is encrypted, or stored in another file.
        CorruptFileError: As for :func:`copy_column_chunk`, with the offset of the damage.
        LimitError: As for :func:`copy_column_chunk`.
    """
    group = "the row group" if row_group.ordinal is None else f"row group {row_group.ordinal}"
    chunks = []
    for n, column in enumerate(row_group.columns or []):
        path = ".".join(column.meta_data.path_in_schema or []) if column.meta_data else "?"
        where = f"column {n} ({path!r}) of {group}"
        chunks.append(copy_column_chunk(read_at, column, file_size=file_size, where=where))
    return chunks
