"""Reading Parquet files: ``ParquetFile`` and ``read_table``, named as in ``pyarrow.parquet``.

The reader trusts nothing it reads: the footer length, every offset and size in the metadata
and in page headers is checked against the bytes available before it is used, decompressed
sizes are capped (``max_decompressed_page_size``), and every problem surfaces as a
:class:`~streamwrite.errors.StreamwriteError` subclass naming the absolute byte offset.

Tail of a file (parquet-format "File Format", and 7.3 "Parquet Modular Encryption")::

    ... FileMetaData footer_length (u32 LE) "PAR1"                          plaintext
    ... FileMetaData nonce(12) tag(16) footer_length (u32 LE) "PAR1"        signed plaintext footer
    ... FileCryptoMetaData footer_module footer_length (u32 LE) "PARE"      encrypted footer

Encrypted files are read with a :class:`~streamwrite.decryption.DecryptionConfig`
(``decryption=``); see :mod:`streamwrite.decryption` for the modules and their AADs. Without it,
an encrypted footer raises EncryptionError, and a plaintext-footer file reads its plaintext
columns only. Files with nested columns open too: their flat top-level columns can be read
with ``columns=``; reading a nested column raises UnsupportedError.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TypeVar

import numpy as np
import pyarrow as pa

from streamwrite.decryption import ChunkDecryptor, DecryptionConfig, FileDecryptor
from streamwrite.errors import (
    ConfigError,
    CorruptFileError,
    EncryptionError,
    FormatError,
    LimitError,
    SchemaError,
    StreamwriteError,
    UnsupportedError,
)
from streamwrite.format import structs as t
from streamwrite.format.enums import FieldRepetitionType
from streamwrite.format.sidecar import read_sidecar
from streamwrite.format.thrift import deserialize
from streamwrite.layout.actions import LiveFileName
from streamwrite.layout.txn import TXN_FILE
from streamwrite.options import ReadOptions
from streamwrite.schema import ColumnSpec, ParquetSchema, from_physical, parquet_to_arrow
from workers.cipher import FOOTER_SIGNATURE_SIZE
from workers.decode import KERNEL_ERRORS, DecodedChunk, PageInfo, concat_values, decode_chunk

__all__ = ["ParquetFile", "read_table"]

MAGIC = b"PAR1"
ENCRYPTED_MAGIC = b"PARE"

Source = str | os.PathLike[str] | bytes | bytearray | memoryview | IO[bytes]
_T = TypeVar("_T")


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


def _decode_footer_struct(
    cls: type[_T], data: memoryview, what: str, offset: int
) -> tuple[_T, int]:
    try:
        return deserialize(cls, data)
    except FormatError as exc:
        raise CorruptFileError(f"The footer ({what}) does not decode: {exc}", offset) from exc
    except KERNEL_ERRORS as exc:
        raise CorruptFileError(
            f"The footer ({what}) does not decode ({type(exc).__name__}: {exc}).", offset
        ) from exc


def _read_footer(
    source: _Bytes, decryption: DecryptionConfig | None = None
) -> tuple[t.FileMetaData, int, FileDecryptor | None]:
    """The FileMetaData, the offset where the footer starts, and the file's decryptor (None
    for a plaintext file, or a plaintext-footer file read without keys).

    Raises:
        CorruptFileError: Bad magic, footer length or footer bytes.
        EncryptionError: An encrypted footer without keys, a wrong footer key or AAD prefix, a
            tampered footer or footer signature.
    """
    if source.size < 12:
        raise CorruptFileError(
            f"A Parquet file needs at least 12 bytes, this one has {source.size}.", 0
        )
    tail = bytes(source.read(source.size - 8, 8))
    magic = tail[4:]
    if magic not in (MAGIC, ENCRYPTED_MAGIC) or bytes(source.read(0, 4)) != magic:
        raise CorruptFileError(
            "The file does not start and end with the same magic (PAR1, or PARE when "
            "its footer is encrypted).",
            source.size - 4,
        )
    footer_size = int.from_bytes(tail[:4], "little")
    footer_offset = source.size - 8 - footer_size
    if footer_size == 0 or footer_offset < 4:
        raise CorruptFileError(
            f"Footer length {footer_size} does not fit in the {source.size}-byte file.",
            source.size - 8,
        )
    footer = source.read(footer_offset, footer_size)
    if magic == ENCRYPTED_MAGIC:
        if decryption is None:
            raise EncryptionError(
                "The file has an encrypted footer (PARE magic): it needs decryption keys "
                "(decryption=DecryptionConfig...)."
            )
        crypto, end = _decode_footer_struct(
            t.FileCryptoMetaData, footer, "FileCryptoMetaData", footer_offset
        )
        assert crypto.encryption_algorithm is not None  # a required field
        decryptor = FileDecryptor(decryption, crypto.encryption_algorithm, crypto.key_metadata)
        try:
            metadata = decryptor.decrypt_footer(footer[end:])
        except FormatError as exc:
            raise CorruptFileError(str(exc), footer_offset + end) from exc
        return metadata, footer_offset, decryptor
    metadata, end = _decode_footer_struct(t.FileMetaData, footer, "FileMetaData", footer_offset)
    if metadata.encryption_algorithm is None:
        return metadata, footer_offset, None
    if footer_size - end != FOOTER_SIGNATURE_SIZE:
        raise CorruptFileError(
            f"The signed plaintext footer leaves {footer_size - end} bytes after its "
            f"FileMetaData for the {FOOTER_SIGNATURE_SIZE}-byte signature.",
            footer_offset + end,
        )
    if decryption is None:
        return metadata, footer_offset, None
    decryptor = FileDecryptor(
        decryption, metadata.encryption_algorithm, metadata.footer_signing_key_metadata
    )
    decryptor.verify_footer(footer[:end], footer[end:])
    return metadata, footer_offset, decryptor


def _leaf_paths(elements: list[t.SchemaElement]) -> list[tuple[str, t.SchemaElement, bool]]:
    """Every leaf of a (possibly nested) schema in column order: its dotted path, its element,
    and whether it is a flat top-level column (a direct, non-REPEATED child of the root)."""
    leaves: list[tuple[str, t.SchemaElement, bool]] = []
    stack: list[tuple[list[int], list[str]]] = [([max(elements[0].num_children or 0, 0)], [])]
    for element in elements[1:]:
        while stack and stack[-1][0][0] == 0:
            stack.pop()
        if not stack:
            raise FormatError("The schema has more elements than its groups have children.")
        remaining, prefix = stack[-1]
        remaining[0] -= 1
        path = [*prefix, element.name or ""]
        if element.num_children:
            stack.append(([max(element.num_children, 0)], path))
        else:
            flat = len(stack) == 1 and element.repetition_type != FieldRepetitionType.REPEATED
            leaves.append((".".join(path), element, flat))
    return leaves


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
        snapshot: read only this committed prefix of the file (live files).
        decryption: keys (and AAD prefix) for an encrypted file.

    Raises:
        CorruptFileError: the file is not valid Parquet (with the offset of the damage).
        EncryptionError: an encrypted footer without ``decryption``; a wrong footer key or
            AAD prefix; a tampered footer or footer signature.
        UnsupportedError: a schema without any flat column we read.
        ConfigError: a non-positive ``max_decompressed_page_size``.
    """

    def __init__(
        self,
        source: Source,
        *,
        verify_checksums: bool = True,
        max_decompressed_page_size: int | None = None,
        snapshot: int | None = None,
        decryption: DecryptionConfig | None = None,
    ) -> None:
        if decryption is not None and not isinstance(decryption, DecryptionConfig):
            raise ConfigError(
                f"decryption must be a DecryptionConfig, not a {type(decryption).__name__}."
            )
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
        self._unsupported: UnsupportedError | None = None
        self._nested_names: frozenset[str] = frozenset()
        self._column_metadata: dict[tuple[int, int], t.ColumnMetaData] = {}
        try:
            self.metadata, self.footer_offset, self._decryptor = _read_footer(
                self._source, decryption
            )
            self._schema, self._paths = self._make_schema()
        except BaseException:
            self._source.close()
            raise
        self._pad_chunks = _needs_parquet_816_padding(self.metadata.created_by)

    def _make_schema(self) -> tuple[ParquetSchema, list[str]]:
        """The schema of the columns we read and the dotted path of every leaf column."""
        metadata = self.metadata
        if not metadata.schema:
            raise CorruptFileError("The footer has no schema.", self.footer_offset)
        try:
            try:
                schema = parquet_to_arrow(metadata.schema, metadata.key_value_metadata)
                paths = [spec.element.name or "" for spec in schema.columns]
            except UnsupportedError as exc:
                schema, paths = self._flat_projection(metadata.schema, exc)
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
            if len(row_group.columns or []) != len(paths):
                raise CorruptFileError(
                    f"Row group {i} has {len(row_group.columns or [])} column chunks for "
                    f"{len(paths)} columns.",
                    self.footer_offset,
                )
        return schema, paths

    def _flat_projection(
        self, elements: list[t.SchemaElement], exc: UnsupportedError
    ) -> tuple[ParquetSchema, list[str]]:
        """The flat top-level columns of a nested schema (the others raise ``exc`` when read)."""
        leaves = _leaf_paths(elements)
        flat = [(n, element) for n, (_, element, ok) in enumerate(leaves) if ok]
        if not flat:
            raise exc
        root = dataclasses.replace(elements[0], num_children=len(flat))
        projected = parquet_to_arrow([root, *(e for _, e in flat)], None)
        columns = tuple(
            dataclasses.replace(spec, index=n)
            for spec, (n, _) in zip(projected.columns, flat, strict=True)
        )
        flat_names = {e.name for _, e in flat}
        self._unsupported = exc
        self._nested_names = (
            frozenset(path.split(".")[0] for path, _, ok in leaves if not ok) - flat_names
        )
        schema = ParquetSchema(projected.arrow_schema, list(elements), columns)
        return schema, [path for path, _, _ in leaves]

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

    @property
    def unsupported_columns(self) -> list[str]:
        """Top-level columns of the file we cannot read (nested), not in :attr:`parquet_schema`."""
        return sorted(self._nested_names)

    @property
    def encryption_algorithm(self) -> str | None:
        """``"AES_GCM_V1"`` or ``"AES_GCM_CTR_V1"`` for an encrypted file read with keys, else
        None (plaintext files, or plaintext-footer files read without keys)."""
        return None if self._decryptor is None else self._decryptor.algorithm.value

    def _columns(self, columns: Sequence[str] | None) -> list[ColumnSpec]:
        if columns is None:
            if self._unsupported is not None:
                raise self._unsupported
            return list(self._schema.columns)
        by_name = {spec.name: spec for spec in self._schema.columns}
        if self._unsupported is not None and any(c in self._nested_names for c in columns):
            raise self._unsupported
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
            EncryptionError: the chunk's metadata is encrypted and cannot be decrypted.
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

    def _chunk(self, i: int, column: int) -> t.ColumnChunk:
        row_groups = self.metadata.row_groups or []
        if not 0 <= i < len(row_groups):
            raise IndexError(f"Row group {i} does not exist; the file has {len(row_groups)}.")
        chunks = row_groups[i].columns or []
        if not 0 <= column < len(chunks):
            raise IndexError(f"Column {column} does not exist; the file has {len(chunks)}.")
        return chunks[column]

    def chunk_decryptor(self, i: int, column: int) -> ChunkDecryptor | None:
        """The decryptor of the chunk of leaf column ``column`` in row group ``i``, or None
        when the chunk is not encrypted.

        Raises:
            IndexError: No such row group or column.
            EncryptionError: The chunk is encrypted and the file was opened without keys, or
                its key cannot be retrieved.
            UnsupportedError: External key material.
        """
        crypto = self._chunk(i, column).crypto_metadata
        if crypto is None:
            return None
        path = self._paths[column]
        where = f"Column {path!r} of row group {i}"
        if self._decryptor is None:
            raise EncryptionError(
                f"{where} is encrypted: it needs decryption keys (decryption=DecryptionConfig...)."
            )
        row_group = (self.metadata.row_groups or [])[i]
        ordinal = i if row_group.ordinal is None else row_group.ordinal
        return self._decryptor.chunk(crypto, ordinal, column, path, where)

    def column_metadata(self, i: int, column: int) -> t.ColumnMetaData:
        """The ColumnMetaData of leaf column ``column`` in row group ``i``, decrypted from
        ``encrypted_column_metadata`` when the chunk has it.

        Raises:
            IndexError: No such row group or column.
            CorruptFileError: The chunk has no metadata, or it does not decode.
            EncryptionError: As for :meth:`chunk_decryptor`, or the module does not decrypt.
        """
        cached = self._column_metadata.get((i, column))
        if cached is not None:
            return cached
        chunk = self._chunk(i, column)
        decryptor = self.chunk_decryptor(i, column)
        meta = chunk.meta_data
        if decryptor is not None and chunk.encrypted_column_metadata is not None:
            assert self._decryptor is not None  # chunk_decryptor raised otherwise
            try:
                meta = self._decryptor.column_metadata(
                    decryptor, chunk.encrypted_column_metadata, self._paths[column]
                )
            except FormatError as exc:
                raise CorruptFileError(str(exc), self.footer_offset) from exc
        if meta is None:
            raise CorruptFileError(
                f"Column {self._paths[column]!r} of row group {i} has no ColumnMetaData.",
                self.footer_offset,
            )
        self._column_metadata[(i, column)] = meta
        return meta

    def _chunk_meta(self, i: int, spec: ColumnSpec) -> t.ColumnMetaData:
        return self.column_metadata(i, spec.index)

    def decode_column_chunk(self, i: int, spec: ColumnSpec) -> DecodedChunk:
        """Decode the pages of column ``spec`` in row group ``i`` (physical values, levels, pages).

        Returns:
            The chunk's non-null physical values, definition levels and page list.

        Raises:
            IndexError: ``i`` is not a row group of the file.
            CorruptFileError, LimitError, UnsupportedError: as for :meth:`read_row_group`.
            EncryptionError: an encrypted chunk without keys, a wrong key, or a module that
                does not decrypt (tampered or moved); the message names the module.
        """
        meta = self._chunk_meta(i, spec)
        cipher = self.chunk_decryptor(i, spec.index)
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
                cipher=cipher,
                dictionary_first=meta.dictionary_page_offset == start,
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
            EncryptionError: as for :meth:`decode_column_chunk`.
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
    decryption: DecryptionConfig | None = None,
) -> pa.Table:
    """Read a whole Parquet file, or a live file (a directory) at a committed snapshot.

    ``source`` is a path, a binary file object, the bytes, a live-file directory (read at
    its newest commit) or a table directory (its newest ``_txn`` version). ``snapshot`` (a
    committed ``data.parquet`` size, e.g. ``Commit.parquet_size``) reads exactly that prefix of
    a file or live file. ``decryption`` holds the keys of an encrypted file.

    Returns:
        The file's rows as a ``pyarrow.Table``.

    Raises:
        CorruptFileError: damaged file (ChecksumError for a CRC mismatch), with the offset.
        LimitError: a page over the decompressed size limit.
        EncryptionError: an encrypted file without ``decryption`` (or an encrypted column of a
            plaintext-footer file), a wrong key or AAD prefix, a tampered or moved module.
        UnsupportedError: nested columns, external key material, LZO.
        SchemaError: ``columns`` names a column the file does not have.
        ConfigError: a non-positive ``max_decompressed_page_size``.
    """
    if isinstance(source, str | os.PathLike) and (Path(source) / TXN_FILE).is_file():
        if snapshot is not None:
            raise ConfigError("A table is pinned with Table.snapshot(), not snapshot=.")
        from streamwrite.table import read_snapshot  # the table layer sits above the reader

        return read_snapshot(Path(source)).read(
            None if columns is None else list(columns), decryption=decryption
        )
    with ParquetFile(
        source,
        verify_checksums=verify_checksums,
        max_decompressed_page_size=max_decompressed_page_size,
        snapshot=snapshot,
        decryption=decryption,
    ) as pf:
        return pf.read(columns)
