"""Reading Parquet files: ``ParquetFile`` and ``read_table``, named as in ``pyarrow.parquet``.

The reader trusts nothing it reads: the footer length, every offset and size in the metadata
and in page headers is checked against the bytes available before it is used, decompressed
sizes are capped (``max_decompressed_page_size``), and every problem surfaces as a
:class:`~streamwrite.errors.StreamwriteError` subclass naming the absolute byte offset.

Tail of a file (parquet-format "File Format")::

    ... FileMetaData (Thrift compact) footer_length (u32 LE) magic ("PAR1"; "PARE" = encrypted)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import numpy as np
import pyarrow as pa

from streamwrite.errors import (
    ConfigError,
    CorruptFileError,
    FormatError,
    LimitError,
    SchemaError,
    StreamwriteError,
    UnsupportedError,
)
from streamwrite.format import structs as t
from streamwrite.format.sidecar import read_sidecar
from streamwrite.format.thrift import deserialize
from streamwrite.layout.actions import LiveFileName
from streamwrite.layout.txn import TXN_FILE
from streamwrite.options import ReadOptions
from streamwrite.schema import ColumnSpec, ParquetSchema, from_physical, parquet_to_arrow
from workers.decode import KERNEL_ERRORS, DecodedChunk, PageInfo, concat_values, decode_chunk

__all__ = ["ParquetFile", "read_table"]

MAGIC = b"PAR1"
ENCRYPTED_MAGIC = b"PARE"

Source = str | os.PathLike[str] | bytes | bytearray | memoryview | IO[bytes]


class _Bytes:
    """Random access to a file, a file object or an in-memory buffer, of a fixed size."""

    def __init__(self, source: Source, snapshot: int | None = None) -> None:
        self._file: IO[bytes] | None = None
        self._owned = False
        self._buffer: memoryview | None = None
        if isinstance(source, bytes | bytearray | memoryview):
            self._buffer = memoryview(source).cast("B")
            self.size = len(self._buffer)
        elif isinstance(source, str | os.PathLike):
            path = Path(source)
            if path.is_dir():  # a live file: only its committed size exists for readers
                snapshot = committed_size(path) if snapshot is None else snapshot
                path = path / LiveFileName.DATA.value
            self._file = open(path, "rb")  # noqa: SIM115
            self._owned = True
            self.size = os.fstat(self._file.fileno()).st_size
        else:
            self._file = source
            self.size = source.seek(0, os.SEEK_END)
        if snapshot is not None:
            if not 12 <= snapshot <= self.size:
                self.close()
                raise ConfigError(
                    f"Snapshot size {snapshot} is not a committed size of this "
                    f"{self.size}-byte file."
                )
            self.size = snapshot

    def read(self, offset: int, size: int) -> memoryview:
        if offset < 0 or size < 0 or offset + size > self.size:
            raise CorruptFileError(
                f"A read of {size} bytes runs past the end of the {self.size}-byte file.", offset
            )
        if self._buffer is not None:
            return self._buffer[offset : offset + size]
        assert self._file is not None
        self._file.seek(offset)
        data = self._file.read(size)
        if len(data) != size:
            raise CorruptFileError(f"Short read: {len(data)} of {size} bytes.", offset)
        return memoryview(data)

    def close(self) -> None:
        if self._owned and self._file is not None:
            self._file.close()


def committed_size(directory: Path) -> int:
    """The committed size of ``data.parquet`` in a live-file directory, from its ``_pm``.

    Raises:
        CorruptFileError: ``_pm`` is missing or unreadable (reopening the live file rebuilds it).
    """
    try:
        data = (directory / LiveFileName.PM.value).read_bytes()
    except OSError as exc:
        raise CorruptFileError(
            f"The live file {str(directory)!r} has no readable _pm: {exc}.", 0
        ) from exc
    sidecar = read_sidecar(data)
    if not sidecar.footers:
        raise CorruptFileError(f"The live file {str(directory)!r} has no commit.", 0)
    return sidecar.footers[0][1].parquet_file_size


def _read_footer(source: _Bytes) -> tuple[t.FileMetaData, int]:
    """The FileMetaData and its absolute offset."""
    if source.size < 12:
        raise CorruptFileError(
            f"A Parquet file needs at least 12 bytes, this one has {source.size}.", 0
        )
    tail = bytes(source.read(source.size - 8, 8))
    magic = tail[4:]
    if magic == ENCRYPTED_MAGIC:
        raise UnsupportedError(
            "The file has an encrypted footer (PARE magic); decryption is not supported yet."
        )
    if magic != MAGIC or bytes(source.read(0, 4)) != MAGIC:
        raise CorruptFileError(
            "The file does not start and end with the PAR1 magic.", source.size - 4
        )
    footer_size = int.from_bytes(tail[:4], "little")
    footer_offset = source.size - 8 - footer_size
    if footer_size == 0 or footer_offset < 4:
        raise CorruptFileError(
            f"Footer length {footer_size} does not fit in the {source.size}-byte file.",
            source.size - 8,
        )
    try:
        metadata, _ = deserialize(t.FileMetaData, source.read(footer_offset, footer_size))
    except FormatError as exc:
        raise CorruptFileError(
            f"The footer (FileMetaData) does not decode: {exc}", footer_offset
        ) from exc
    except KERNEL_ERRORS as exc:
        raise CorruptFileError(
            f"The footer (FileMetaData) does not decode ({type(exc).__name__}: {exc}).",
            footer_offset,
        ) from exc
    return metadata, footer_offset


def _check_not_encrypted(metadata: t.FileMetaData) -> None:
    """Raise UnsupportedError for a plaintext-footer encrypted file (footer ends in PAR1)."""
    encrypted = metadata.encryption_algorithm is not None or any(
        chunk.crypto_metadata is not None or chunk.encrypted_column_metadata is not None
        for row_group in metadata.row_groups or []
        for chunk in row_group.columns or []
    )
    if encrypted:
        raise UnsupportedError(
            "The file is encrypted (plaintext footer with encrypted columns); decryption is "
            "not supported yet."
        )


_PARQUET_816_FIXED = (1, 2, 9)
_MAX_DICTIONARY_HEADER_SIZE = 100


def _needs_parquet_816_padding(created_by: str | None) -> bool:
    """parquet-mr up to 1.2.8 left the dictionary page header out of a chunk's size.

    Readers (parquet-cpp ``ComputeColumnChunkRange``) add up to 100 bytes to such chunks.
    """
    if not created_by:
        return False
    application, _, rest = created_by.lower().partition(" version ")
    if application.strip() != "parquet-mr":
        return False
    numbers = []
    for part in rest.split("(")[0].strip().split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        numbers.append(int(digits) if digits else 0)
    numbers += [0] * (3 - len(numbers))
    return tuple(numbers) < _PARQUET_816_FIXED


class ParquetFile:
    """A Parquet file opened for reading.

    Args:
        source: a path, a binary file object, or the file's bytes.
        verify_checksums: check the CRC32 of every page that has one.
        max_decompressed_page_size: refuse pages claiming more uncompressed bytes (default
            ``DEFAULT_MAX_DECOMPRESSED_PAGE_SIZE``, 256 MiB); it also caps the values one page
            may claim at a eighth of it.

    Raises:
        CorruptFileError: the file is not valid Parquet (with the offset of the damage).
        UnsupportedError: nested schemas, encrypted files.
        ConfigError: a non-positive ``max_decompressed_page_size``.
    """

    def __init__(
        self,
        source: Source,
        *,
        verify_checksums: bool = True,
        max_decompressed_page_size: int | None = None,
        snapshot: int | None = None,
    ) -> None:
        if max_decompressed_page_size is None:
            max_decompressed_page_size = ReadOptions().max_decompressed_page_size
        if not isinstance(max_decompressed_page_size, int) or max_decompressed_page_size < 1:
            raise ConfigError(
                "max_decompressed_page_size must be a positive integer, "
                f"got {max_decompressed_page_size!r}."
            )
        self._options = ReadOptions(
            verify_checksums=verify_checksums,
            max_decompressed_page_size=max_decompressed_page_size,
        )
        self._source = _Bytes(source, snapshot)
        try:
            self.metadata, self.footer_offset = _read_footer(self._source)
            _check_not_encrypted(self.metadata)
            self._schema = self._make_schema()
        except BaseException:
            self._source.close()
            raise
        self._pad_chunks = _needs_parquet_816_padding(self.metadata.created_by)

    def _make_schema(self) -> ParquetSchema:
        metadata = self.metadata
        if not metadata.schema:
            raise CorruptFileError("The footer has no schema.", self.footer_offset)
        try:
            schema = parquet_to_arrow(metadata.schema, metadata.key_value_metadata)
        except UnsupportedError:
            raise
        except (SchemaError, FormatError) as exc:
            raise CorruptFileError(
                f"The schema in the footer is invalid: {exc}", self.footer_offset
            ) from exc
        except (*KERNEL_ERRORS, pa.ArrowException, OSError) as exc:
            # pyarrow raises a bare OSError for a damaged ARROW:schema flatbuffer; no I/O
            # happens here, so an OSError can only be about the footer's bytes.
            raise CorruptFileError(
                f"The schema in the footer is invalid ({type(exc).__name__}: {exc}).",
                self.footer_offset,
            ) from exc
        for i, row_group in enumerate(metadata.row_groups or []):
            if len(row_group.columns or []) != len(schema.columns):
                raise CorruptFileError(
                    f"Row group {i} has {len(row_group.columns or [])} column chunks for "
                    f"{len(schema.columns)} columns.",
                    self.footer_offset,
                )
        return schema

    @property
    def schema_arrow(self) -> pa.Schema:
        """The Arrow schema (restored from ``ARROW:schema`` when present)."""
        return self._schema.arrow_schema

    @property
    def parquet_schema(self) -> ParquetSchema:
        """The Parquet schema: elements and per-column specs."""
        return self._schema

    @property
    def num_row_groups(self) -> int:
        """Row groups in the file."""
        return len(self.metadata.row_groups or [])

    def _columns(self, columns: Sequence[str] | None) -> list[ColumnSpec]:
        if columns is None:
            return list(self._schema.columns)
        by_name = {spec.name: spec for spec in self._schema.columns}
        missing = [c for c in columns if c not in by_name]
        if missing:
            raise SchemaError(f"Columns {missing} are not in the file; it has {list(by_name)}.")
        return [by_name[c] for c in columns]

    def read_bytes(self, offset: int, size: int) -> memoryview:
        """``size`` bytes at absolute ``offset``, checked to lie inside the file."""
        return self._source.read(offset, size)

    def chunk_range(self, i: int, spec: ColumnSpec) -> tuple[int, int]:
        """``(offset, size)`` of the pages of column ``spec`` in row group ``i``, checked.

        Raises:
            CorruptFileError: the range does not lie between the magic and the footer.
            UnsupportedError: the chunk's metadata is encrypted.
        """
        meta = self._chunk_meta(i, spec)
        start = meta.data_page_offset
        dictionary = meta.dictionary_page_offset
        if dictionary is not None and 0 < dictionary < (start or 0):
            start = dictionary
        size = meta.total_compressed_size
        if (
            start is None
            or size is None
            or start < 4
            or size < 0
            or start + size > self.footer_offset
        ):
            end = None if start is None or size is None else start + size
            raise CorruptFileError(
                f"Column {spec.name!r} of row group {i} claims bytes [{start}, {end}) outside "
                "the data of the file.",
                self.footer_offset,
            )
        if self._pad_chunks:
            size += min(_MAX_DICTIONARY_HEADER_SIZE, self.footer_offset - (start + size))
        return start, size

    def _chunk_meta(self, i: int, spec: ColumnSpec) -> t.ColumnMetaData:
        row_groups = self.metadata.row_groups or []
        if not 0 <= i < len(row_groups):
            raise IndexError(f"Row group {i} does not exist; the file has {len(row_groups)}.")
        meta = (row_groups[i].columns or [])[spec.index].meta_data
        if meta is None:
            raise UnsupportedError(
                f"Column {spec.name!r} of row group {i} has no plaintext ColumnMetaData "
                "(encrypted); decryption is not supported yet."
            )
        return meta

    def decode_column_chunk(self, i: int, spec: ColumnSpec) -> DecodedChunk:
        """Decode the pages of column ``spec`` in row group ``i`` (physical values, levels, pages).

        Returns:
            The chunk's non-null physical values, definition levels and page list.

        Raises:
            IndexError: ``i`` is not a row group of the file.
            CorruptFileError, LimitError, UnsupportedError: as for :meth:`read_row_group`.
        """
        meta = self._chunk_meta(i, spec)
        where = f"Column {spec.name!r} of row group {i}"
        if meta.type != spec.physical_type:
            raise CorruptFileError(
                f"{where} has physical type {meta.type} in its metadata but "
                f"{spec.physical_type.name} in the schema.",
                self.footer_offset,
            )
        num_rows = (self.metadata.row_groups or [])[i].num_rows
        if meta.num_values == 0:
            # Nothing to read: some writers give empty chunks no valid page offsets at all.
            decoded = DecodedChunk(
                values=concat_values([], spec.physical_type, spec.type_length),
                def_levels=np.zeros(0, dtype=np.uint8) if spec.max_definition_level else None,
                num_rows=0,
                pages=[],
            )
            start = self.footer_offset
        else:
            start, size = self.chunk_range(i, spec)
            decoded = decode_chunk(
                self._source.read(start, size),
                start,
                meta,
                type_length=spec.type_length,
                max_definition_level=spec.max_definition_level,
                verify_checksums=self._options.verify_checksums,
                max_decompressed_page_size=self._options.max_decompressed_page_size,
                where=where,
            )
        if num_rows is not None and decoded.num_rows != num_rows:
            raise CorruptFileError(
                f"{where} has {decoded.num_rows} rows, the row group {num_rows}.", start
            )
        return decoded

    def _read_column(self, spec: ColumnSpec, i: int) -> pa.Array:
        decoded = self.decode_column_chunk(i, spec)
        pages: list[PageInfo] = decoded.pages
        offset = pages[0].offset if pages else self.footer_offset
        where = f"Column {spec.name!r} of row group {i}"
        try:
            return from_physical(
                decoded.values, decoded.def_levels, decoded.num_rows, spec, validate=True
            )
        except (UnsupportedError, LimitError):
            raise
        except StreamwriteError as exc:
            raise CorruptFileError(
                f"{where} holds values that do not fit its type {spec.field.type}: {exc}", offset
            ) from exc
        except MemoryError as exc:
            raise LimitError(f"{where} needs more memory than is available.") from exc
        except (*KERNEL_ERRORS, pa.ArrowException) as exc:
            raise CorruptFileError(
                f"{where} holds values that do not fit its type {spec.field.type} "
                f"({type(exc).__name__}: {exc}).",
                offset,
            ) from exc

    def read_row_group(self, i: int, columns: Sequence[str] | None = None) -> pa.Table:
        """Read row group ``i`` (only ``columns`` if given).

        Returns:
            The rows as a ``pyarrow.Table``.

        Raises:
            IndexError: ``i`` is not a row group of the file.
            SchemaError: ``columns`` names a column the file does not have.
            CorruptFileError, LimitError, UnsupportedError: as for the constructor.
        """
        row_groups = self.metadata.row_groups or []
        if not 0 <= i < len(row_groups):
            raise IndexError(f"Row group {i} does not exist; the file has {len(row_groups)}.")
        specs = self._columns(columns)
        arrays = [self._read_column(spec, i) for spec in specs]
        lengths = {len(array) for array in arrays}
        if len(lengths) > 1:
            raise CorruptFileError(
                f"The columns of row group {i} have different row counts {sorted(lengths)}.",
                self.footer_offset,
            )
        return pa.Table.from_arrays(arrays, schema=pa.schema([spec.field for spec in specs]))

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        """Read every row group.

        Returns:
            The rows as a ``pyarrow.Table`` with the file's Arrow schema.
        """
        specs = self._columns(columns)
        schema = pa.schema([spec.field for spec in specs])
        tables = [self.read_row_group(i, columns) for i in range(self.num_row_groups)]
        if not tables:
            return schema.empty_table()
        return pa.concat_tables(tables)

    def close(self) -> None:
        """Close the file if this object opened it."""
        self._source.close()

    def __enter__(self) -> ParquetFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def read_table(
    source: Source,
    *,
    columns: Sequence[str] | None = None,
    verify_checksums: bool = True,
    max_decompressed_page_size: int | None = None,
    snapshot: int | None = None,
) -> pa.Table:
    """Read a whole Parquet file, or a live file (a directory) at a committed snapshot.

    ``source`` is a path, a binary file object, the bytes, a live-file directory (read at
    its newest commit) or a table directory (its newest ``_txn`` version). ``snapshot`` (a
    committed ``data.parquet`` size, e.g. ``Commit.parquet_size``) reads exactly that prefix of
    a file or live file.

    Returns:
        The file's rows as a ``pyarrow.Table``.

    Raises:
        CorruptFileError: damaged file (ChecksumError for a CRC mismatch), with the offset.
        LimitError: a page over the decompressed size limit.
        UnsupportedError: nested schemas, encrypted files, LZO.
        SchemaError: ``columns`` names a column the file does not have.
        ConfigError: a non-positive ``max_decompressed_page_size``.
    """
    if isinstance(source, str | os.PathLike) and (Path(source) / TXN_FILE).is_file():
        if snapshot is not None:
            raise ConfigError("A table is pinned with Table.snapshot(), not snapshot=.")
        from streamwrite.table import read_snapshot  # the table layer sits above the reader

        return read_snapshot(Path(source)).read(None if columns is None else list(columns))
    with ParquetFile(
        source,
        verify_checksums=verify_checksums,
        max_decompressed_page_size=max_decompressed_page_size,
        snapshot=snapshot,
    ) as pf:
        return pf.read(columns)
