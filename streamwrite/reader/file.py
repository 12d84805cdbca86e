"""Reading a Parquet file or live file: ``ParquetFile``, named as in ``pyarrow.parquet``.

The reader trusts nothing it reads: the footer length, every offset and size in the metadata
and in page headers is checked against the bytes available before it is used, decompressed
sizes are capped (``max_decompressed_page_size``), and every problem surfaces as a
:class:`~streamwrite.errors.StreamwriteError` subclass naming the absolute byte offset.

Tail of a file (parquet-format "File Format", and 7.3 "Parquet Modular Encryption")::

    ... FileMetaData footer_length (u32 LE) "PAR1"                          plaintext
    ... FileMetaData nonce(12) tag(16) footer_length (u32 LE) "PAR1"        signed plaintext footer
    ... FileCryptoMetaData footer_module footer_length (u32 LE) "PARE"      encrypted footer

Encrypted files are read with a :class:`~streamwrite.crypto.decryption.DecryptionConfig`
(``decryption=``); see :mod:`streamwrite.crypto.decryption` for the modules and their AADs.
Without it, an encrypted footer raises EncryptionError, and a plaintext-footer file reads its
plaintext columns only.

Nested columns (struct, list, large_list, fixed_size_list, map, any depth, and the legacy
list forms of other writers) are read leaf by leaf and assembled
(:func:`streamwrite.arrow.assemble.assemble`). ``columns=`` takes top-level field names, and
dotted paths through structs as pyarrow does (``columns=["s.a"]`` gives ``s`` with only that
child; paths under one field are merged).

``ParquetFile.metadata`` and ``ParquetFile.schema`` have the shape of
``pyarrow.parquet.ParquetFile(...)``'s (``streamwrite.FileMetaData``, ``ParquetSchemaView``...,
defined in :mod:`streamwrite.reader.metadata`); the Thrift ``FileMetaData`` is
``ParquetFile.thrift_metadata``. The chunk-level methods (``_chunk_range``,
``_chunk_decryptor``, ``_column_metadata``, ``_decode_column_chunk``, ``_source_chunk``,
``_parquet_schema``) are the package's own: compaction's raw copy and re-encode and
:mod:`streamwrite.reader.verify` call them. ``streamwrite.read_table`` (:mod:`streamwrite.dataset`)
dispatches on what it is given: a file or buffer, a live file, a table, or a directory.

Filtered reads (``filters=``) are planned by :mod:`streamwrite.reader.pruning` (statistics,
embedded index, bloom filters, page index -> :class:`streamwrite.ReadPlan`) and executed by
:mod:`streamwrite.reader.pruned_read` (only the pages holding kept rows, then the filter).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa

from streamwrite.arrow.assemble import assemble, leaf_ids
from streamwrite.arrow.assembly import from_physical
from streamwrite.arrow.column import FieldNode, NodeKind
from streamwrite.arrow.schema import ColumnSpec, ParquetSchema, parquet_to_arrow
from streamwrite.crypto.decryption import ChunkDecryptor, DecryptionConfig
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
from streamwrite.options import ReadOptions, public_keywords
from streamwrite.reader.metadata import FileMetaData, ParquetSchemaView
from streamwrite.reader.plan import ReadPlan
from streamwrite.reader.pruned_read import batches, filtered_tables, read_planned_row_group
from streamwrite.reader.pruning import plan_read
from streamwrite.reader.selection import select_fields
from streamwrite.reader.tail import (
    _MAX_DICTIONARY_HEADER_SIZE,
    Source,
    _Bytes,
    _needs_parquet_816_padding,
    _read_footer,
)
from workers.decode import KERNEL_ERRORS, DecodedChunk, PageInfo, concat_values, decode_chunk
from workers.jobs import SourceChunk

__all__ = ["ParquetFile"]


class ParquetFile:
    """A Parquet file opened for reading.

    Args:
        source: a path, a binary file object, the file's bytes, or a
            :class:`streamwrite.ByteSource` (bytes fetched by range, e.g. from an object store).
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
        UnsupportedError: a leaf of a logical type streamwrite does not read.
        ConfigError: a non-positive ``max_decompressed_page_size``.
    """

    @public_keywords("streamwrite.ParquetFile")
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
        self._column_metadata_cache: dict[tuple[int, int], t.ColumnMetaData] = {}
        self._metadata: FileMetaData | None = None
        try:
            self.thrift_metadata, self.footer_offset, self._decryptor = _read_footer(
                self._source, decryption
            )
            self._schema, self._paths = self._make_schema()
        except BaseException:
            self._source.close()
            raise
        self._pad_chunks = _needs_parquet_816_padding(self.thrift_metadata.created_by)

    @property
    def metadata(self) -> FileMetaData:
        """The footer, shaped as ``pyarrow.parquet.ParquetFile(...).metadata``
        (:class:`streamwrite.FileMetaData`); the Thrift ``FileMetaData`` struct is
        :attr:`thrift_metadata`."""
        if self._metadata is None:
            self._metadata = FileMetaData(self)
        return self._metadata

    def _make_schema(self) -> tuple[ParquetSchema, list[str]]:
        """The schema of the columns we read and the dotted path of every leaf column."""
        metadata = self.thrift_metadata
        if not metadata.schema:
            raise CorruptFileError("The footer has no schema.", self.footer_offset)
        try:
            schema = parquet_to_arrow(metadata.schema, metadata.key_value_metadata)
            paths = [".".join(spec.path_in_schema) for spec in schema.columns]
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

    @property
    def schema_arrow(self) -> pa.Schema:
        """The Arrow schema (restored from ``ARROW:schema`` when present)."""
        return self._schema.arrow_schema

    @property
    def schema(self) -> ParquetSchemaView:
        """The Parquet schema, shaped as ``pyarrow.parquet.ParquetFile(...).schema``
        (:class:`streamwrite.ParquetSchemaView`, also ``metadata.schema``)."""
        return self.metadata.schema

    @property
    def _parquet_schema(self) -> ParquetSchema:
        """The package's own schema of the columns read: elements and per-column specs."""
        return self._schema

    @property
    def num_row_groups(self) -> int:
        """Row groups in the file."""
        return len(self.thrift_metadata.row_groups or [])

    @property
    def encryption_algorithm(self) -> str | None:
        """``"AES_GCM_V1"`` or ``"AES_GCM_CTR_V1"`` for an encrypted file read with keys, else
        None (plaintext files, or plaintext-footer files read without keys)."""
        return None if self._decryptor is None else self._decryptor.algorithm.value

    def _select(self, columns: Sequence[str] | None) -> list[FieldNode]:
        """The top-level fields ``columns`` names (default all), pruned to the struct children
        its dotted paths name (:func:`streamwrite.reader.selection.select_fields`).

        Raises:
            SchemaError: a name is neither a field nor a path through structs.
        """
        if columns is None:
            return list(self._schema.fields)
        return select_fields(self._schema.fields, columns)

    def _columns(self, columns: Sequence[str] | None) -> list[ColumnSpec]:
        """The leaf columns of the fields ``columns`` selects (:meth:`_select`), in order."""
        return [
            self._schema.columns[leaf] for node in self._select(columns) for leaf in leaf_ids(node)
        ]

    @property
    def file_size(self) -> int:
        """Bytes of the file this object reads (a snapshot's committed size)."""
        return self._source.size

    def read_bytes(self, offset: int, size: int) -> memoryview:
        """``size`` bytes at absolute ``offset``, checked to lie inside the file."""
        return self._source.read(offset, size)

    def _chunk_range(self, i: int, spec: ColumnSpec) -> tuple[int, int]:
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
        row_groups = self.thrift_metadata.row_groups or []
        if not 0 <= i < len(row_groups):
            raise IndexError(f"Row group {i} does not exist; the file has {len(row_groups)}.")
        chunks = row_groups[i].columns or []
        if not 0 <= column < len(chunks):
            raise IndexError(f"Column {column} does not exist; the file has {len(chunks)}.")
        return chunks[column]

    def _chunk_decryptor(self, i: int, column: int) -> ChunkDecryptor | None:
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
        row_group = (self.thrift_metadata.row_groups or [])[i]
        ordinal = i if row_group.ordinal is None else row_group.ordinal
        return self._decryptor.chunk(crypto, ordinal, column, path, where)

    def _column_metadata(self, i: int, column: int) -> t.ColumnMetaData:
        """The ColumnMetaData of leaf column ``column`` in row group ``i``, decrypted from
        ``encrypted_column_metadata`` when the chunk has it.

        Raises:
            IndexError: No such row group or column.
            CorruptFileError: The chunk has no metadata, or it does not decode.
            EncryptionError: As for :meth:`_chunk_decryptor`, or the module does not decrypt.
        """
        cached = self._column_metadata_cache.get((i, column))
        if cached is not None:
            return cached
        chunk = self._chunk(i, column)
        decryptor = self._chunk_decryptor(i, column)
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
        self._column_metadata_cache[(i, column)] = meta
        return meta

    def _chunk_meta(self, i: int, spec: ColumnSpec) -> t.ColumnMetaData:
        return self._column_metadata(i, spec.index)

    def _typed_chunk_meta(self, i: int, spec: ColumnSpec) -> tuple[t.ColumnMetaData, str]:
        """The chunk's metadata, checked to have the schema's physical type, and how error
        messages name the chunk."""
        meta = self._chunk_meta(i, spec)
        where = f"Column {spec.name!r} of row group {i}"
        if meta.type != spec.physical_type:
            raise CorruptFileError(
                f"{where} has physical type {meta.type} in its metadata but "
                f"{spec.physical_type.name} in the schema.",
                self.footer_offset,
            )
        return meta, where

    def _decode_column_chunk(self, i: int, spec: ColumnSpec) -> DecodedChunk:
        """Decode the pages of column ``spec`` in row group ``i`` (physical values, levels, pages).

        Returns:
            The chunk's non-null physical values, definition levels and page list.

        Raises:
            IndexError: ``i`` is not a row group of the file.
            CorruptFileError, LimitError, UnsupportedError: as for :meth:`read_row_group`.
            EncryptionError: an encrypted chunk without keys, a wrong key, or a module that
                does not decrypt (tampered or moved); the message names the module.
        """
        meta, where = self._typed_chunk_meta(i, spec)
        cipher = self._chunk_decryptor(i, spec.index)
        num_rows = (self.thrift_metadata.row_groups or [])[i].num_rows
        if meta.num_values == 0:
            # Nothing to read: some writers give empty chunks no valid page offsets at all.
            decoded = DecodedChunk(
                values=concat_values([], spec.physical_type, spec.type_length),
                def_levels=np.zeros(0, dtype=np.uint8) if spec.max_definition_level else None,
                num_rows=0,
                pages=[],
                rep_levels=np.zeros(0, dtype=np.uint8) if spec.max_repetition_level else None,
            )
            start = self.footer_offset
        else:
            start, size = self._chunk_range(i, spec)
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
                max_repetition_level=spec.max_repetition_level,
            )
        if num_rows is not None and decoded.num_rows != num_rows:
            raise CorruptFileError(
                f"{where} has {decoded.num_rows} rows, the row group {num_rows}.", start
            )
        return decoded

    def _source_chunk(
        self, i: int, spec: ColumnSpec, row_start: int = 0, row_stop: int | None = None
    ) -> SourceChunk:
        """The bytes of column ``spec`` in row group ``i``, for a worker to decode (rows
        ``[row_start, row_stop)`` of it; default all).

        Raises:
            UnsupportedError: the chunk is encrypted (decrypt it here: :meth:`read_row_group`).
            CorruptFileError: as for :meth:`_decode_column_chunk`.
        """
        if self._chunk_decryptor(i, spec.index) is not None:
            raise UnsupportedError(f"Column {spec.name!r} of row group {i} is encrypted.")
        meta, where = self._typed_chunk_meta(i, spec)
        num_rows = (self.thrift_metadata.row_groups or [])[i].num_rows or 0
        start, size = self._chunk_range(i, spec)
        return SourceChunk(
            bytes(self._source.read(start, size)),
            start,
            meta,
            num_rows,
            row_start,
            num_rows if row_stop is None else row_stop,
            meta.dictionary_page_offset == start,
            where,
        )

    @property
    def verify_checksums(self) -> bool:
        """Whether page CRCs are checked."""
        return self._options.verify_checksums

    @property
    def max_decompressed_page_size(self) -> int:
        """The largest decompressed page accepted."""
        return self._options.max_decompressed_page_size

    def _read_column(self, spec: ColumnSpec, i: int) -> pa.Array:
        return self._to_arrow(self._decode_column_chunk(i, spec), spec, i)

    def _read_field(self, node: FieldNode, i: int) -> pa.Array:
        """The Arrow array of (selected) top-level field ``node`` in row group ``i``: a flat
        column as :meth:`_read_column`, a nested field assembled from all its leaves."""
        if node.kind is NodeKind.LEAF and node.leaf is not None:
            spec = self._schema.columns[node.leaf]
            if not spec.is_nested:
                return self._read_column(spec, i)
        specs = [self._schema.columns[leaf] for leaf in leaf_ids(node)]
        decoded = [self._decode_column_chunk(i, spec) for spec in specs]
        where = f"Field {node.name!r} of row group {i}"
        pages = decoded[0].pages
        offset = pages[0].offset if pages else self.footer_offset
        try:
            return assemble(node, decoded, self._schema.columns, validate=True)
        except CorruptFileError as exc:
            if exc.offset is not None:
                raise
            raise CorruptFileError(f"{where}: {exc}", offset) from exc
        except (UnsupportedError, LimitError):
            raise
        except StreamwriteError as exc:
            raise CorruptFileError(f"{where} does not assemble: {exc}", offset) from exc
        except MemoryError as exc:
            raise LimitError(f"{where} needs more memory than is available.") from exc
        except (*KERNEL_ERRORS, pa.ArrowException) as exc:
            raise CorruptFileError(
                f"{where} does not assemble ({type(exc).__name__}: {exc}).", offset
            ) from exc

    def _to_arrow(self, decoded: DecodedChunk, spec: ColumnSpec, i: int) -> pa.Array:
        """The Arrow array of decoded rows of column ``spec`` in row group ``i`` (checked)."""
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

    def read_row_group(
        self, i: int, columns: Sequence[str] | None = None, *, filters: object = None
    ) -> pa.Table:
        """Read row group ``i`` (only ``columns`` if given; only rows matching ``filters``, as
        :meth:`read`).

        Returns:
            The rows as a ``pyarrow.Table``.

        Raises:
            IndexError: ``i`` is not a row group of the file.
            SchemaError: ``columns`` names a column the file does not have.
            CorruptFileError, LimitError, UnsupportedError: as for the constructor.
            EncryptionError: an encrypted chunk without keys, a wrong key, or a module that
                does not decrypt (tampered or moved); the message names the module.
        """
        row_groups = self.thrift_metadata.row_groups or []
        if not 0 <= i < len(row_groups):
            raise IndexError(f"Row group {i} does not exist; the file has {len(row_groups)}.")
        if filters is not None:
            plan = plan_read(self, filters, columns, [i])
            return read_planned_row_group(self, plan, plan.row_groups[0])
        nodes = self._select(columns)
        self._prefetch_chunks(i, nodes)
        try:
            arrays = [self._read_field(node, i) for node in nodes]
        finally:
            self._source.prefetch([])  # the decoded arrays hold no prefetched byte
        lengths = {len(array) for array in arrays}
        if len(lengths) > 1:
            raise CorruptFileError(
                f"The columns of row group {i} have different row counts {sorted(lengths)}.",
                self.footer_offset,
            )
        return pa.Table.from_arrays(arrays, schema=pa.schema([node.field for node in nodes]))

    def _prefetch_chunks(self, i: int, nodes: list[FieldNode]) -> None:
        """Announce the chunks of ``nodes`` in row group ``i`` to a source fetching by ranges
        (it fetches them at once). A chunk whose range is bad is left to the read, which
        raises in column order as without prefetching."""
        if not self._source.can_prefetch:
            return
        ranges = []
        try:
            for node in nodes:
                for leaf in leaf_ids(node):
                    spec = self._schema.columns[leaf]
                    if self._chunk_meta(i, spec).num_values:
                        ranges.append(self._chunk_range(i, spec))
        except StreamwriteError:
            return
        self._source.prefetch(ranges)

    def read(self, columns: Sequence[str] | None = None, *, filters: object = None) -> pa.Table:
        """Read every row group, or with ``filters`` only the rows matching them.

        Args:
            columns: Only these columns (default all).
            filters: pyarrow's DNF (``[("x", "<", 3)]``, ``[[...], [...]]``, ops ``=``,
                ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in``, ``not in``) or a
                ``pyarrow.compute.Expression``. The result equals the full read filtered with
                it, same rows in the same order; statistics, bloom filters, the page index and
                the embedded index only skip what cannot match (:meth:`plan`).

        Returns:
            The rows as a ``pyarrow.Table`` with the file's Arrow schema.

        Raises:
            SchemaError, ConfigError: as :meth:`plan`; CorruptFileError...: as
            :meth:`read_row_group`.
        """
        schema = pa.schema([node.field for node in self._select(columns)])
        if filters is None:
            tables = [self.read_row_group(i, columns) for i in range(self.num_row_groups)]
        else:
            tables = list(filtered_tables(self, plan_read(self, filters, columns)))
        if not tables:
            return schema.empty_table()
        return pa.concat_tables(tables)

    def plan(self, filters: object, columns: Sequence[str] | None = None) -> ReadPlan:
        """What :meth:`read` with ``filters`` reads, and what it skips and why.

        Returns:
            A :class:`streamwrite.ReadPlan`: per row group kept or skipped
            (``"statistics"``, ``"embedded_index"``, ``"bloom_filter"``, ``"page_index"``) and
            the row ranges read; ``num_row_groups``, ``num_row_groups_read``, ``num_pages``,
            ``num_pages_read``, ``bytes_read``.

        Raises:
            SchemaError: the filter or ``columns`` names a column the file does not have.
            ConfigError: a filter that cannot be represented or a literal that does not
                compare with its column.
        """
        return plan_read(self, filters, columns)

    def iter_batches(
        self,
        batch_size: int = 65536,
        columns: Sequence[str] | None = None,
        row_groups: Sequence[int] | None = None,
        *,
        filters: object = None,
    ) -> Iterator[pa.RecordBatch]:
        """Read the file as record batches of ``batch_size`` rows (the last may be shorter),
        as ``pyarrow.parquet.ParquetFile.iter_batches`` (batches span row groups), holding one
        row group and one batch in memory at a time.

        Args:
            batch_size: most rows per batch.
            columns: only these columns.
            row_groups: only these row groups, in this order (default all).
            filters: only the rows matching them (as :meth:`read`).

        Returns:
            An iterator of ``pyarrow.RecordBatch``.

        Raises:
            ConfigError: a non-positive ``batch_size``.
            IndexError: a row group that does not exist.
            SchemaError, CorruptFileError...: as for :meth:`read_row_group`.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}.")
        self._select(columns)  # check the names before yielding anything
        indexes = list(range(self.num_row_groups) if row_groups is None else row_groups)
        for i in indexes:
            if not 0 <= i < self.num_row_groups:
                raise IndexError(
                    f"Row group {i} does not exist; the file has {self.num_row_groups}."
                )
        if filters is None:
            return batches((self.read_row_group(i, columns) for i in indexes), batch_size)
        plan = plan_read(self, filters, columns, indexes)  # checks the filter before yielding
        return batches(filtered_tables(self, plan), batch_size)

    def close(self) -> None:
        """Close the file if this object opened it."""
        self._source.close()

    def __enter__(self) -> ParquetFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
