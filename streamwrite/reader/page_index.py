"""Reading a chunk's page index: where its data pages are, and what each holds.

Layout (parquet-format PageIndex.md; the ColumnChunk gives offset and length of each)::

    ColumnIndex  := Thrift compact ColumnIndex        (encrypted: module COLUMN_INDEX)
    OffsetIndex  := Thrift compact OffsetIndex        (encrypted: module OFFSET_INDEX)
    PageLocation := offset (absolute), compressed_page_size (header included), first_row_index

The OffsetIndex is checked before it is used to read single pages: the first page starts at
row 0, first rows increase and stay below the row group's row count, and every page lies inside
the chunk after its dictionary page. A page index that fails a check, does not decode or does
not decrypt raises (CorruptFileError / EncryptionError naming the chunk and the offset).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, cast

import numpy as np
import numpy.typing as npt

from streamwrite.crypto.decryption import ChunkDecryptor
from streamwrite.errors import CorruptFileError, FormatError, LimitError
from streamwrite.format import structs as t
from streamwrite.format.aad import ModuleType
from streamwrite.format.thrift.codec import deserialize

__all__ = ["ChunkPages", "read_column_index", "read_offset_index"]

_MAX_INDEX_SIZE = 64 * 1024 * 1024
"""A ColumnIndex or OffsetIndex claiming more bytes than this is refused."""


class IndexSource(Protocol):
    """What page index reading needs of a :class:`streamwrite.ParquetFile`."""

    @property
    def footer_offset(self) -> int: ...
    def read_bytes(self, offset: int, size: int) -> memoryview: ...
    def _chunk(self, i: int, column: int) -> t.ColumnChunk: ...
    def _chunk_decryptor(self, i: int, column: int) -> ChunkDecryptor | None: ...


@dataclass(frozen=True)
class ChunkPages:
    """The data pages of one chunk, from its OffsetIndex (checked).

    Attributes:
        first_rows: Each page's first row (int64; starts at 0, increasing).
        offsets: Each page's absolute offset.
        sizes: Each page's size in bytes, header included.
        num_rows: Rows of the row group.
    """

    first_rows: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]
    num_rows: int

    @property
    def num_pages(self) -> int:
        """Data pages of the chunk."""
        return int(self.first_rows.shape[0])

    @property
    def page_rows(self) -> npt.NDArray[np.int64]:
        """Rows of each page."""
        ends = np.append(self.first_rows[1:], np.int64(self.num_rows))
        rows: npt.NDArray[np.int64] = ends - self.first_rows
        return rows

    def pages_of(
        self, starts: npt.NDArray[np.int64], stops: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.intp]:
        """Indexes of the pages holding any row of the ranges ``[starts[k], stops[k])``."""
        if starts.shape[0] == 0:
            return np.zeros(0, dtype=np.intp)
        first = np.searchsorted(self.first_rows, starts, side="right") - 1
        last = np.searchsorted(self.first_rows, stops - 1, side="right") - 1
        counts = last - first + 1
        ids = np.repeat(first - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        return np.unique(ids)


def _index_bytes(
    pf: IndexSource,
    offset: int | None,
    length: int | None,
    cipher: ChunkDecryptor | None,
    module: ModuleType,
    where: str,
) -> bytes | memoryview:
    if offset is None or length is None or length <= 0 or length > _MAX_INDEX_SIZE:
        raise CorruptFileError(f"{where}: the {module.name} has length {length}.", offset or 0)
    if offset < 4 or offset + length > pf.footer_offset:
        raise CorruptFileError(
            f"{where}: the {module.name} [{offset}, {offset + length}) lies outside the data "
            "of the file.",
            offset,
        )
    data = pf.read_bytes(offset, length)
    if cipher is None:
        return data
    plain, used = cipher.decrypt(module, data)
    if used != len(data):
        raise CorruptFileError(
            f"{where}: the {module.name} module takes {used} of the {len(data)} bytes its "
            "length in the ColumnChunk gives.",
            offset,
        )
    return plain


def read_column_index(
    pf: IndexSource, i: int, column: int, where: str
) -> tuple[t.ColumnIndex, int] | None:
    """The ColumnIndex of a chunk and its offset, or None when it has none.

    Raises:
        CorruptFileError: It lies outside the file or does not decode.
        EncryptionError: It does not decrypt.
    """
    chunk = pf._chunk(i, column)
    if chunk.column_index_offset is None:
        return None
    offset = chunk.column_index_offset
    index = _decode_index(
        pf, i, column, offset, chunk.column_index_length, ModuleType.COLUMN_INDEX, where
    )
    assert isinstance(index, t.ColumnIndex)
    return index, offset


def _decode_index(
    pf: IndexSource,
    i: int,
    column: int,
    offset: int,
    size: int | None,
    module: ModuleType,
    where: str,
) -> t.ColumnIndex | t.OffsetIndex:
    """The ColumnIndex or OffsetIndex (``module``) of a chunk at ``offset``, decrypted."""
    data = _index_bytes(pf, offset, size, pf._chunk_decryptor(i, column), module, where)
    name = "ColumnIndex" if module is ModuleType.COLUMN_INDEX else "OffsetIndex"
    struct = t.ColumnIndex if module is ModuleType.COLUMN_INDEX else t.OffsetIndex
    try:
        index, _ = deserialize(struct, data)
    except (FormatError, LimitError) as exc:
        raise CorruptFileError(f"{where}: the {name} does not decode: {exc}", offset) from exc
    return cast("t.ColumnIndex | t.OffsetIndex", index)


def read_offset_index(
    pf: IndexSource, i: int, column: int, num_rows: int, chunk_range: tuple[int, int], where: str
) -> ChunkPages | None:
    """The data pages of a chunk from its OffsetIndex, or None when it has none.

    Args:
        pf: The file.
        i: Row group.
        column: Leaf column index.
        num_rows: Rows of the row group.
        chunk_range: ``(offset, size)`` of the chunk's bytes.
        where: How error messages name the chunk.

    Raises:
        CorruptFileError: It lies outside the file, does not decode, or fails a check (module
            docstring).
        EncryptionError: It does not decrypt.
    """
    chunk = pf._chunk(i, column)
    if chunk.offset_index_offset is None:
        return None
    offset = chunk.offset_index_offset
    index = _decode_index(
        pf, i, column, offset, chunk.offset_index_length, ModuleType.OFFSET_INDEX, where
    )
    assert isinstance(index, t.OffsetIndex)
    locations = index.page_locations or []
    fields = [(loc.first_row_index, loc.offset, loc.compressed_page_size) for loc in locations]
    complete = all(None not in field for field in fields)
    table = np.array(fields if complete else [], dtype=np.int64).reshape(-1, 3)
    first_rows, offsets, sizes = table[:, 0].copy(), table[:, 1].copy(), table[:, 2].copy()
    start, size = chunk_range
    ok = (
        complete
        and len(locations) > 0
        and first_rows[0] == 0
        and bool(np.all(np.diff(first_rows) > 0))
        and int(first_rows[-1]) < max(num_rows, 1)
        and bool(np.all(sizes > 0))
        and int(offsets[0]) >= start
        and bool(np.all(offsets[1:] >= offsets[:-1] + sizes[:-1]))
        and int(offsets[-1] + sizes[-1]) <= start + size
    )
    if not ok:
        raise CorruptFileError(
            f"{where}: the OffsetIndex's {len(locations)} page locations do not describe the "
            f"chunk's pages in [{start}, {start + size}) and its {num_rows} rows.",
            offset,
        )
    return ChunkPages(first_rows, offsets, sizes, num_rows)
