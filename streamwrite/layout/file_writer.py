"""File writer state machine: encoded column chunks in, file bytes out (no I/O).

File layout it produces (parquet-format "File Format")::

    file      := "PAR1" row_group* [index_blob [df_blob]] [page_index] footer
    row_group := column_chunk* bloom_filter*          bloom filters right after their row group
    index_blob:= "IDX1" u64 payload                   embedded index (spec 001) of every row
    df_blob   := "IDX1" u64 payload                   group so far, when options.embedded_index
                                                      (streamwrite.format.index); footer keys
                                                      streamwrite.index_offset and
                                                      distinct_index_offset name their offsets
    page_index:= column_index* offset_index*          for the row groups since the last footer
    footer    := FileMetaData (Thrift compact) footer_length (4-byte LE) "PAR1"

Offsets are counted, never asked of a file: the machine starts at ``start_offset`` (0 for a new
file) and adds the length of every piece of bytes it hands out. Column chunks arrive with
offsets relative to their own start and are rebased here: ``data_page_offset``,
``dictionary_page_offset``, ``OffsetIndex.page_locations[].offset``, plus the bloom filter and
page index offsets set on the ColumnChunk/ColumnMetaData.

A footer may be written after any row group and row groups may follow it (live files): each
footer lists every row group so far. A row group's RowGroup struct is encoded once, when the
footer that first lists it is written (its page index offsets are final then), and its bytes
are reused by every later footer, so a footer costs CPU for its new row groups only. Rules:
- ``start()`` once, before anything else, for a new file;
- ``add_row_group()`` returns the bytes to append for the row group and its bloom filters;
- ``footer()`` returns the embedded index blobs (cumulative: each footer points at its own),
  the page indexes not yet written plus the FileMetaData, length and magic.

Embedded index and encryption: the blob holds plaintext values, so an encrypted column gets
no entry (its chunks' index parts are dropped here); plaintext columns of an encrypted file
are indexed as in any file (their values are in plaintext pages anyway).

Encrypted files (``encryptor`` given; spec 7.3, DESIGN section 5)::

    file      := magic row_group* [page_index] footer        magic = "PARE" | "PAR1"
    page_index:= enc?(column_index)* enc?(offset_index)*     COLUMN_INDEX / OFFSET_INDEX modules
    footer    := FileCryptoMetaData enc(FileMetaData) length "PARE"      encrypted footer
               | FileMetaData nonce(12) tag(16) length "PAR1"           signed plaintext footer

``length`` covers everything between the page indexes and itself. Chunks arrive already
encrypted (pages and bloom filters, by the workers); here the ColumnMetaData of each encrypted
column becomes ``encrypted_column_metadata`` (see
:meth:`streamwrite.layout.ports.EncryptorPort.seal_column_chunk`, which
:class:`streamwrite.crypto.encryption.FileEncryptor` implements) once its offsets are final,
and every RowGroup carries its ``ordinal`` (at most 32767).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Generic, cast

from streamwrite.errors import ConfigError
from streamwrite.format import structs as t
from streamwrite.format.aad import ModuleType
from streamwrite.format.chunk import EncodedChunk
from streamwrite.format.footer import FORMAT_VERSION, MAGIC
from streamwrite.format.index import (
    KV_DATAFUSION_OFFSET,
    KV_INDEX_OFFSET,
    ColumnIndexPart,
    IndexPayload,
    blob,
)
from streamwrite.format.thrift.codec import Serialized, serialize
from streamwrite.layout.embedded_index import IndexBuilder
from streamwrite.layout.ports import EncryptorT, SchemaPort
from streamwrite.options import WriteOptions

__all__ = ["FileWriter"]


def _rebase(chunk: EncodedChunk, base: int) -> tuple[t.ColumnMetaData, t.OffsetIndex | None]:
    meta = replace(
        chunk.meta_data,
        data_page_offset=(chunk.meta_data.data_page_offset or 0) + base,
        dictionary_page_offset=(
            None
            if chunk.meta_data.dictionary_page_offset is None
            else chunk.meta_data.dictionary_page_offset + base
        ),
    )
    offset_index = chunk.offset_index
    if offset_index is not None:
        offset_index = replace(
            offset_index,
            page_locations=[
                replace(location, offset=(location.offset or 0) + base)
                for location in offset_index.page_locations or []
            ],
        )
    return meta, offset_index


class FileWriter(Generic[EncryptorT]):
    """Counts offsets and builds the metadata of a Parquet file being written.

    ``schema`` is the Parquet side of the file's schema and ``encryptor`` its encryption
    state (see :mod:`streamwrite.layout.ports`).
    """

    def __init__(
        self,
        schema: SchemaPort,
        options: WriteOptions,
        start_offset: int = 0,
        encryptor: EncryptorT | None = None,
    ):
        self.schema = schema
        self.options = options
        self.offset = start_offset
        self.encryptor = encryptor
        self.row_groups: list[t.RowGroup] = []
        self.num_rows = 0
        # (column chunk, column index, offset index, row group ordinal, column ordinal)
        self._pending_indexes: list[
            tuple[t.ColumnChunk, t.ColumnIndex | None, t.OffsetIndex | None, int, int]
        ] = []
        self._row_group_bytes = Serialized(t.RowGroup, b"", 0)
        self._arrow_schema = schema.arrow_schema_value
        self.last_footer_offset = 0
        self.last_footer_length = 0
        self._sorting = [
            t.SortingColumn(
                column_idx=s.column_index, descending=s.descending, nulls_first=s.nulls_first
            )
            for s in options.sorting_columns
        ] or None
        for s in options.sorting_columns:
            if not 0 <= s.column_index < len(schema.columns):
                raise ConfigError(
                    f"Sorting column index {s.column_index} is out of range for "
                    f"{len(schema.columns)} columns."
                )
        self.index = self._index_builder()
        """The embedded index (None: no column indexed)."""

    def _index_builder(self) -> IndexBuilder | None:
        ordinals = {spec.name: spec.index for spec in self.schema.columns}
        specs = [
            spec
            for spec in self.options.embedded_index
            if self.encryptor is None or self.encryptor.column_cipher(ordinals[spec.name]) is None
        ]
        if not specs:
            return None
        return IndexBuilder(specs)

    @classmethod
    def resume(
        cls,
        schema: SchemaPort,
        options: WriteOptions,
        metadata: t.FileMetaData,
        footer_offset: int,
        footer_length: int,
        encryptor: EncryptorT | None = None,
        index_payload: IndexPayload | None = None,
    ) -> FileWriter[EncryptorT]:
        """Continue a file whose last footer (``metadata``) sits at ``footer_offset``.

        An encrypted file continues with ``encryptor``, which must hold the file's own
        ``aad_file_unique`` and data keys; its row groups keep their stored (sealed) form.
        ``index_payload`` is that footer's embedded index (None: the row groups so far are
        unknown to the index the options ask for).

        Returns:
            A writer whose next bytes go right after that footer's length and magic.
        """
        writer = cls(schema, options, footer_offset + footer_length + 8, encryptor)
        writer.row_groups = list(metadata.row_groups or [])
        for row_group in writer.row_groups:
            writer._row_group_bytes += Serialized.of(row_group)
        writer.num_rows = sum(rg.num_rows or 0 for rg in writer.row_groups)
        if writer.index is not None:
            if index_payload is not None:
                writer.index.resume(index_payload, len(writer.row_groups))
            else:
                writer.index.pad(len(writer.row_groups))
        writer.last_footer_offset, writer.last_footer_length = footer_offset, footer_length
        return writer

    def _emit(self, data: bytes) -> bytes:
        self.offset += len(data)
        return data

    def start(self) -> bytes:
        """Returns: the leading magic of a new file (``PARE`` for an encrypted footer)."""
        return self._emit(MAGIC if self.encryptor is None else self.encryptor.magic)

    def add_row_group(self, chunks: Sequence[EncodedChunk], num_rows: int) -> bytes:
        """Place one row group's column chunks (in schema order) and their bloom filters.

        Returns:
            The bytes to append to the file.

        Raises:
            ConfigError: Not one chunk per column.
            LimitError: An encrypted file already holds 32768 row groups.
        """
        ordinal = len(self.row_groups)
        if self.encryptor is not None:
            self.encryptor.check_row_group_ordinal(ordinal)
        if len(chunks) != len(self.schema.columns):
            raise ConfigError(
                f"A row group needs {len(self.schema.columns)} column chunks, got {len(chunks)}."
            )
        parts: list[bytes] = []
        start = self.offset
        columns: list[t.ColumnChunk] = []
        indexes = []
        for col, chunk in enumerate(chunks):
            base = self.offset
            meta, offset_index = _rebase(chunk, base)
            parts.append(self._emit(chunk.data))
            column = t.ColumnChunk(file_offset=base, meta_data=meta)
            columns.append(column)
            indexes.append((column, chunk.column_index, offset_index, ordinal, col))
        for column, chunk in zip(columns, chunks, strict=True):
            if chunk.bloom_filter is not None:
                assert column.meta_data is not None
                column.meta_data.bloom_filter_offset = self.offset
                column.meta_data.bloom_filter_length = len(chunk.bloom_filter)
                parts.append(self._emit(chunk.bloom_filter))
        if self.encryptor is not None:
            for col, column in enumerate(columns):
                self.encryptor.seal_column_chunk(column, ordinal, col)
        self._pending_indexes.extend(indexes)
        if self.index is not None:
            index_parts: dict[str, ColumnIndexPart] = {}
            for spec, chunk in zip(self.schema.columns, chunks, strict=True):
                if chunk.index_part is not None:
                    index_parts[spec.name] = chunk.index_part
            self.index.add_row_group(index_parts)
        total_uncompressed = sum(chunk.meta_data.total_uncompressed_size or 0 for chunk in chunks)
        total_compressed = sum(len(chunk.data) for chunk in chunks)
        self.row_groups.append(
            t.RowGroup(
                columns=columns,
                total_byte_size=total_uncompressed,
                num_rows=num_rows,
                sorting_columns=self._sorting,
                file_offset=start,
                total_compressed_size=total_compressed,
                ordinal=ordinal,
            )
        )
        self.num_rows += num_rows
        return b"".join(parts)

    def _seal_index(self, module_type: ModuleType, data: bytes, rg: int, col: int) -> bytes:
        if self.encryptor is None:
            return data
        return self.encryptor.seal_index(module_type, data, rg, col)

    def _page_indexes(self) -> bytes:
        parts: list[bytes] = []
        for column, column_index, _, rg, col in self._pending_indexes:
            if column_index is not None:
                data = self._seal_index(ModuleType.COLUMN_INDEX, serialize(column_index), rg, col)
                column.column_index_offset = self.offset
                column.column_index_length = len(data)
                parts.append(self._emit(data))
        for column, _, offset_index, rg, col in self._pending_indexes:
            if offset_index is not None:
                data = self._seal_index(ModuleType.OFFSET_INDEX, serialize(offset_index), rg, col)
                column.offset_index_offset = self.offset
                column.offset_index_length = len(data)
                parts.append(self._emit(data))
        self._pending_indexes.clear()
        return b"".join(parts)

    def file_metadata(
        self, extra_key_value_metadata: Sequence[tuple[str, str]] = ()
    ) -> t.FileMetaData:
        """The FileMetaData listing every row group so far."""
        key_values = [t.KeyValue(key="ARROW:schema", value=self._arrow_schema)]
        key_values += [
            t.KeyValue(key=k, value=v)
            for k, v in (*self.options.key_value_metadata, *extra_key_value_metadata)
        ]
        return t.FileMetaData(
            version=FORMAT_VERSION,
            schema=self.schema.elements,
            num_rows=self.num_rows,
            # Serialized stands in for a RowGroup: the codec writes its bytes verbatim.
            row_groups=cast(
                "list[t.RowGroup]",
                [self._row_group_bytes, *self.row_groups[self._row_group_bytes.count :]],
            ),
            key_value_metadata=key_values,
            created_by=self.options.created_by,
            column_orders=[
                t.ColumnOrder(TYPE_ORDER=t.TypeDefinedOrder()) for _ in self.schema.columns
            ],
        )

    def footer(self, extra_key_value_metadata: Sequence[tuple[str, str]] = ()) -> bytes:
        """Page indexes not yet written, then FileMetaData, its 4-byte LE length and the magic.

        Returns:
            The bytes to append; after them the file is complete and valid.
        """
        blobs = self._index_blobs()
        if blobs:
            extra_key_value_metadata = [*extra_key_value_metadata, *blobs[1]]
        indexes = self._page_indexes()
        for row_group in self.row_groups[self._row_group_bytes.count :]:
            self._row_group_bytes += Serialized.of(row_group)
        if self.encryptor is None:
            metadata, magic = serialize(self.file_metadata(extra_key_value_metadata)), MAGIC
        else:
            metadata, magic = self.encryptor.footer_tail(
                self.file_metadata(extra_key_value_metadata)
            )
        self.last_footer_offset = self.offset  # the page indexes are already counted
        self.last_footer_length = len(metadata)
        tail = metadata + len(metadata).to_bytes(4, "little") + magic
        return (blobs[0] if blobs else b"") + indexes + self._emit(tail)

    def _index_blobs(self) -> tuple[bytes, list[tuple[str, str]]] | None:
        """The embedded index blobs of every row group so far and the footer keys naming
        them (None: no index)."""
        if self.index is None:
            return None
        keys = [(KV_INDEX_OFFSET, str(self.offset))]
        data = self._emit(blob(self.index.payload()))
        datafusion = self.index.datafusion()
        if datafusion is not None:
            keys.append((KV_DATAFUSION_OFFSET, str(self.offset)))
            data += self._emit(blob(datafusion))
        return data, keys
