"""pyarrow-shaped views of a Parquet footer: ``ParquetFile.metadata``.

The objects here have the names, types and values of ``pyarrow.parquet.FileMetaData`` and its
parts, so code written against ``pq.ParquetFile(path).metadata`` runs unchanged::

    FileMetaData          num_rows, num_row_groups, num_columns, created_by, format_version,
     |                    serialized_size, metadata (dict of bytes), schema, row_group(i)
     +- RowGroupMetaData  num_rows, num_columns, total_byte_size, sorting_columns, column(j)
         +- ColumnChunkMetaData
             |            path_in_schema, physical_type ("INT64"), compression ("ZSTD"),
             |            encodings (tuple of names), num_values, file_offset, file_path,
             |            data_page_offset, dictionary_page_offset, has_dictionary_page,
             |            total_compressed_size, total_uncompressed_size, is_stats_set,
             |            has_offset_index, has_column_index, bloom_filter_offset/_length
             +- Statistics has_min_max, min, max (typed: datetime, str, Decimal, date...),
                          min_raw, max_raw (physical), null_count, distinct_count,
                          num_values (non-null values), physical_type

``min``/``max`` are converted as pyarrow converts them: from the Parquet logical type (not the
``ARROW:schema`` of the file), so a UTC-adjusted timestamp is a ``datetime`` in UTC, a
nanosecond timestamp raises ValueError like pyarrow's ``as_py`` without pandas, and a
FLOAT16 bound stays ``bytes``. The Thrift structs behind each view stay reachable
(``FileMetaData.thrift``, ``RowGroupMetaData.thrift``, ``ColumnChunkMetaData.thrift``) and as
``ParquetFile.thrift_metadata``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import pyarrow as pa

from streamwrite.arrow.assembly import from_physical
from streamwrite.arrow.schema import ColumnSpec, ParquetSchema, parquet_to_arrow
from streamwrite.errors import StreamwriteError
from streamwrite.format import structs as t
from streamwrite.format.enums import Type
from streamwrite.format.thrift.codec import deserialize
from streamwrite.options import SortingColumn
from streamwrite.reader.tail import _leaf_paths
from workers.cipher import FOOTER_SIGNATURE_SIZE
from workers.decode import KERNEL_ERRORS
from workers.encoding.plain import decode_plain
from workers.stats import SortOrder, decode_stat

__all__ = [
    "ColumnChunkMetaData",
    "ColumnSchema",
    "FileMetaData",
    "ParquetSchemaView",
    "RowGroupMetaData",
    "Statistics",
    "physical_value",
    "typed_value",
]


class FooterSource(Protocol):
    """What these views read of a :class:`streamwrite.ParquetFile` (it satisfies this)."""

    @property
    def thrift_metadata(self) -> t.FileMetaData: ...
    @property
    def schema_arrow(self) -> pa.Schema: ...
    @property
    def _parquet_schema(self) -> ParquetSchema: ...
    @property
    def file_size(self) -> int: ...
    @property
    def footer_offset(self) -> int: ...
    def read_bytes(self, offset: int, size: int) -> memoryview: ...
    def _column_metadata(self, i: int, column: int) -> t.ColumnMetaData: ...


_COMPRESSION_NAMES = {
    t.CompressionCodec.UNCOMPRESSED: "UNCOMPRESSED",
    t.CompressionCodec.SNAPPY: "SNAPPY",
    t.CompressionCodec.GZIP: "GZIP",
    t.CompressionCodec.LZO: "LZO",
    t.CompressionCodec.BROTLI: "BROTLI",
    t.CompressionCodec.LZ4: "LZ4_HADOOP",
    t.CompressionCodec.ZSTD: "ZSTD",
    t.CompressionCodec.LZ4_RAW: "LZ4",
}
"""pyarrow's names: parquet-cpp reads codec LZ4 (5) as LZ4_HADOOP and LZ4_RAW (7) as LZ4."""


def _enum_name(value: object) -> str:
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else f"UNKNOWN({value})"


def physical_value(raw: bytes, physical_type: Type, type_length: int | None) -> Any:
    """One PLAIN-encoded statistics bound as pyarrow's ``min_raw``: int, float, bool or bytes."""
    if physical_type in (Type.BYTE_ARRAY, Type.FIXED_LEN_BYTE_ARRAY, Type.INT96):
        return bytes(raw)
    if physical_type == Type.BOOLEAN:
        return decode_stat(raw, SortOrder.BOOLEAN, physical_type)
    if physical_type in (Type.FLOAT, Type.DOUBLE):
        return decode_stat(raw, SortOrder.FLOAT, physical_type)
    return decode_stat(raw, SortOrder.SIGNED, physical_type)


def typed_value(raw: bytes, spec: ColumnSpec) -> Any:
    """One PLAIN-encoded statistics bound as a Python value of ``spec.field.type``.

    Returns:
        The value Arrow's ``as_py()`` gives for it (``datetime``, ``str``, ``Decimal``, ``date``,
        ``bool``, ``int``, ``float``...); ``bytes`` when the bound does not decode as that type
        (for instance a truncated UTF-8 bound).

    Raises:
        ValueError: as ``as_py()``, for a nanosecond timestamp without pandas.
    """
    data = bytes(raw)
    if spec.physical_type == Type.BYTE_ARRAY:
        data = len(data).to_bytes(4, "little") + data
    try:
        values, _ = decode_plain(data, spec.physical_type, 1, spec.type_length)
        array = from_physical(values, None, 1, spec, validate=True)
    except (StreamwriteError, pa.ArrowException, *KERNEL_ERRORS):
        return bytes(raw)
    return array[0].as_py()


class Statistics:
    """A column chunk's statistics, shaped as ``pyarrow.parquet.Statistics``."""

    def __init__(
        self,
        stats: t.Statistics,
        chunk_num_values: int,
        physical_type: Type,
        type_length: int | None,
        convert: Callable[[bytes], Any] | None,
    ) -> None:
        self.thrift = stats
        """The Thrift ``Statistics`` struct."""
        self._physical_type = physical_type
        self._type_length = type_length
        self._convert = convert
        low, high = stats.min_value, stats.max_value
        if (low is None or high is None) and physical_type not in (
            Type.BYTE_ARRAY,
            Type.FIXED_LEN_BYTE_ARRAY,
        ):
            low, high = stats.min, stats.max  # legacy fields: signed order only
        self._bounds = (low, high) if low is not None and high is not None else None
        self.null_count: int | None = stats.null_count
        self.distinct_count: int | None = stats.distinct_count
        self.num_values: int = chunk_num_values - (stats.null_count or 0)
        """Non-null values of the chunk (as pyarrow)."""

    @property
    def has_min_max(self) -> bool:
        """Both bounds are set."""
        return self._bounds is not None

    @property
    def has_null_count(self) -> bool:
        """``null_count`` is set."""
        return self.null_count is not None

    @property
    def has_distinct_count(self) -> bool:
        """``distinct_count`` is set."""
        return self.distinct_count is not None

    @property
    def physical_type(self) -> str:
        """The column's physical type name (``"INT64"``)."""
        return _enum_name(self._physical_type)

    def _raw(self, index: int) -> Any:
        if self._bounds is None:
            return None
        return physical_value(self._bounds[index], self._physical_type, self._type_length)

    def _typed(self, index: int) -> Any:
        if self._bounds is None:
            return None
        if self._convert is None:
            return self._raw(index)
        return self._convert(self._bounds[index])

    @property
    def min_raw(self) -> Any:
        """The lower bound in its physical form (int, float, bool or bytes), or None."""
        return self._raw(0)

    @property
    def max_raw(self) -> Any:
        """The upper bound in its physical form, or None."""
        return self._raw(1)

    @property
    def min(self) -> Any:
        """The lower bound as a typed Python value (see the module docstring), or None."""
        return self._typed(0)

    @property
    def max(self) -> Any:
        """The upper bound as a typed Python value, or None."""
        return self._typed(1)

    def __repr__(self) -> str:
        return (
            f"<streamwrite Statistics has_min_max={self.has_min_max} "
            f"null_count={self.null_count} num_values={self.num_values}>"
        )


class ColumnChunkMetaData:
    """One column chunk of a row group, shaped as ``pyarrow.parquet.ColumnChunkMetaData``.

    Reading any ``ColumnMetaData`` field of an encrypted chunk without its key raises
    EncryptionError (as pyarrow refuses it).
    """

    def __init__(self, owner: FileMetaData, row_group: int, column: int) -> None:
        self._owner = owner
        self._row_group = row_group
        self._column = column
        self.thrift: t.ColumnChunk = owner._thrift_row_group(row_group).columns[column]  # type: ignore[index]
        """The Thrift ``ColumnChunk`` struct (its ``meta_data`` may be encrypted)."""

    @property
    def _meta_data(self) -> t.ColumnMetaData:
        """The Thrift ``ColumnMetaData``, decrypted when the chunk is encrypted."""
        return self._owner._file._column_metadata(self._row_group, self._column)

    @property
    def file_offset(self) -> int:
        """``ColumnChunk.file_offset`` as written (deprecated; many writers put 0)."""
        return self.thrift.file_offset or 0

    @property
    def file_path(self) -> str:
        """``ColumnChunk.file_path``, ``""`` when the chunk is in this file."""
        return self.thrift.file_path or ""

    @property
    def path_in_schema(self) -> str:
        """The dotted column path."""
        return ".".join(self._meta_data.path_in_schema or [])

    @property
    def physical_type(self) -> str:
        """``"INT64"``, ``"BYTE_ARRAY"``..."""
        return _enum_name(self._meta_data.type)

    @property
    def compression(self) -> str:
        """The codec as pyarrow names it (``"ZSTD"``, ``"UNCOMPRESSED"``...)."""
        codec = self._meta_data.codec
        return _COMPRESSION_NAMES.get(codec, _enum_name(codec))  # type: ignore[arg-type]

    @property
    def encodings(self) -> tuple[str, ...]:
        """The encodings of the chunk's pages, in footer order."""
        return tuple(_enum_name(e) for e in self._meta_data.encodings or [])

    @property
    def num_values(self) -> int:
        """Values of the chunk, nulls included."""
        return self._meta_data.num_values or 0

    @property
    def total_compressed_size(self) -> int:
        """Bytes of the chunk's pages in the file."""
        return self._meta_data.total_compressed_size or 0

    @property
    def total_uncompressed_size(self) -> int:
        """Bytes of the chunk's pages uncompressed."""
        return self._meta_data.total_uncompressed_size or 0

    @property
    def data_page_offset(self) -> int:
        """Absolute offset of the first data page."""
        return self._meta_data.data_page_offset or 0

    @property
    def dictionary_page_offset(self) -> int | None:
        """Absolute offset of the dictionary page, None without one."""
        return self._meta_data.dictionary_page_offset

    @property
    def has_dictionary_page(self) -> bool:
        """The chunk starts with a dictionary page."""
        return self._meta_data.dictionary_page_offset is not None

    @property
    def has_offset_index(self) -> bool:
        """An OffsetIndex is written for the chunk."""
        return self.thrift.offset_index_offset is not None

    @property
    def has_column_index(self) -> bool:
        """A ColumnIndex is written for the chunk."""
        return self.thrift.column_index_offset is not None

    @property
    def bloom_filter_offset(self) -> int | None:
        """Absolute offset of the bloom filter, None without one."""
        return self._meta_data.bloom_filter_offset

    @property
    def bloom_filter_length(self) -> int | None:
        """Bytes of the bloom filter (header and bitset), None when not recorded."""
        return self._meta_data.bloom_filter_length

    @property
    def is_stats_set(self) -> bool:
        """The chunk has statistics."""
        return self._meta_data.statistics is not None

    @property
    def statistics(self) -> Statistics | None:
        """The chunk's statistics, None without any."""
        meta = self._meta_data
        if meta.statistics is None:
            return None
        spec = self._owner._logical_spec(self._column)
        return Statistics(
            meta.statistics,
            meta.num_values or 0,
            meta.type,  # type: ignore[arg-type]
            self._owner.schema.column(self._column).length,
            None if spec is None else lambda raw: _pyarrow_typed(raw, spec),
        )

    @property
    def metadata(self) -> dict[bytes, bytes] | None:
        """The chunk's key-value metadata, None without any."""
        return _key_values(self._meta_data.key_value_metadata)

    def __repr__(self) -> str:
        return (
            f"<streamwrite ColumnChunkMetaData row group {self._row_group} column {self._column}>"
        )


def _pyarrow_typed(raw: bytes, spec: ColumnSpec) -> Any:
    """``typed_value`` as pyarrow's statistics give it (FLOAT16 bounds stay bytes)."""
    if pa.types.is_float16(spec.field.type):
        return bytes(raw)
    return typed_value(raw, spec)


class RowGroupMetaData:
    """One row group, shaped as ``pyarrow.parquet.RowGroupMetaData``."""

    def __init__(self, owner: FileMetaData, index: int) -> None:
        self._owner = owner
        self._index = index
        self.thrift: t.RowGroup = owner._thrift_row_group(index)
        """The Thrift ``RowGroup`` struct."""

    @property
    def num_rows(self) -> int:
        """Rows of the row group."""
        return self.thrift.num_rows or 0

    @property
    def num_columns(self) -> int:
        """Column chunks (leaf columns)."""
        return len(self.thrift.columns or [])

    @property
    def total_byte_size(self) -> int:
        """``RowGroup.total_byte_size`` (uncompressed bytes of its pages)."""
        return self.thrift.total_byte_size or 0

    @property
    def total_compressed_size(self) -> int | None:
        """``RowGroup.total_compressed_size`` when written."""
        return self.thrift.total_compressed_size

    @property
    def file_offset(self) -> int | None:
        """``RowGroup.file_offset`` when written."""
        return self.thrift.file_offset

    @property
    def sorting_columns(self) -> tuple[SortingColumn, ...]:
        """``RowGroup.sorting_columns`` as :class:`streamwrite.SortingColumn` objects (the
        shape of pyarrow's, and what ``write_table(sorting_columns=)`` takes)."""
        return tuple(
            SortingColumn(c.column_idx or 0, bool(c.descending), bool(c.nulls_first))
            for c in self.thrift.sorting_columns or ()
        )

    def column(self, j: int) -> ColumnChunkMetaData:
        """Returns: column chunk ``j``.

        Raises:
            IndexError: no such column.
        """
        if not 0 <= j < self.num_columns:
            raise IndexError(f"Column {j} does not exist; the row group has {self.num_columns}.")
        return ColumnChunkMetaData(self._owner, self._index, j)

    def __repr__(self) -> str:
        return f"<streamwrite RowGroupMetaData {self._index}: {self.num_rows} rows>"


class ColumnSchema:
    """One leaf column of the schema, shaped as ``pyarrow.parquet.ColumnSchema``."""

    def __init__(
        self,
        path: str,
        element: t.SchemaElement,
        max_definition_level: int,
        max_repetition_level: int = 0,
    ) -> None:
        self.path = path
        self.name: str = element.name or ""
        self.physical_type: str = _enum_name(element.type)
        self.length: int | None = element.type_length
        self.precision: int | None = element.precision
        self.scale: int | None = element.scale
        self.converted_type: str = (
            "NONE" if element.converted_type is None else _enum_name(element.converted_type)
        )
        self.max_definition_level = max_definition_level
        self.max_repetition_level = max_repetition_level
        self.element = element
        """The Thrift ``SchemaElement``."""

    def __repr__(self) -> str:
        return f"<streamwrite ColumnSchema {self.path} {self.physical_type}>"


class ParquetSchemaView:
    """The file's schema, shaped as ``pyarrow.parquet.ParquetSchema``."""

    def __init__(self, file: FooterSource) -> None:
        self._file = file
        elements = file.thrift_metadata.schema or []
        self._leaves = _leaf_paths(elements) if elements else []
        self.elements = elements
        """The Thrift ``SchemaElement`` list (root first)."""

    @property
    def names(self) -> list[str]:
        """The leaf column names."""
        return [element.name or "" for _, element, _ in self._leaves]

    def __len__(self) -> int:
        return len(self._leaves)

    def column(self, i: int) -> ColumnSchema:
        """Returns: leaf column ``i``.

        Raises:
            IndexError: no such column.
        """
        if not 0 <= i < len(self._leaves):
            raise IndexError(f"Column {i} does not exist; the schema has {len(self._leaves)}.")
        path, element, _ = self._leaves[i]
        columns = self._file._parquet_schema.columns
        if i < len(columns):
            spec = columns[i]
            return ColumnSchema(path, element, spec.max_definition_level, spec.max_repetition_level)
        optional = element.repetition_type == t.FieldRepetitionType.OPTIONAL
        return ColumnSchema(path, element, int(optional))

    def to_arrow_schema(self) -> pa.Schema:
        """Returns: the Arrow schema of the columns streamwrite reads."""
        return self._file.schema_arrow


class FileMetaData:
    """A file's footer, shaped as ``pyarrow.parquet.FileMetaData``."""

    def __init__(self, file: FooterSource) -> None:
        self._file = file
        self.thrift: t.FileMetaData = file.thrift_metadata
        """The Thrift ``FileMetaData`` struct."""
        self._logical: dict[int, ColumnSpec] | None = None

    @property
    def serialized_size(self) -> int:
        """Bytes of the FileMetaData as pyarrow counts them: without a plaintext footer's
        signature; an encrypted footer's whole module (length, nonce, ciphertext, tag)."""
        size = self._file.file_size
        footer_size = size - 8 - self._file.footer_offset
        if bytes(self._file.read_bytes(size - 4, 4)) == b"PARE":
            footer = self._file.read_bytes(self._file.footer_offset, footer_size)
            _, crypto_size = deserialize(t.FileCryptoMetaData, footer)
            return footer_size - crypto_size
        if self.thrift.encryption_algorithm is not None:
            return footer_size - FOOTER_SIGNATURE_SIZE
        return footer_size

    @property
    def num_rows(self) -> int:
        """Rows of the file."""
        return self.thrift.num_rows or 0

    @property
    def num_row_groups(self) -> int:
        """Row groups of the file."""
        return len(self.thrift.row_groups or [])

    @property
    def num_columns(self) -> int:
        """Leaf columns of the schema."""
        return len(self.schema)

    @property
    def created_by(self) -> str | None:
        """The writer's ``created_by`` string."""
        return self.thrift.created_by

    @property
    def format_version(self) -> str:
        """``"1.0"`` for version 1 footers, else ``"2.6"`` (as pyarrow reports them)."""
        return "1.0" if self.thrift.version == 1 else "2.6"

    @property
    def metadata(self) -> dict[bytes, bytes] | None:
        """The footer's key-value metadata as bytes (``b"ARROW:schema"``...), None without any."""
        return _key_values(self.thrift.key_value_metadata)

    @property
    def schema(self) -> ParquetSchemaView:
        """The Parquet schema."""
        return ParquetSchemaView(self._file)

    def _thrift_row_group(self, i: int) -> t.RowGroup:
        """Returns: the Thrift ``RowGroup`` ``i``.

        Raises:
            IndexError: no such row group.
        """
        row_groups = self.thrift.row_groups or []
        if not 0 <= i < len(row_groups):
            raise IndexError(f"Row group {i} does not exist; the file has {len(row_groups)}.")
        return row_groups[i]

    def row_group(self, i: int) -> RowGroupMetaData:
        """Returns: row group ``i``.

        Raises:
            IndexError: no such row group.
        """
        return RowGroupMetaData(self, i)

    def _logical_spec(self, column: int) -> ColumnSpec | None:
        """The column's spec with the Arrow type its Parquet logical type gives (how pyarrow
        types statistics)."""
        if self._logical is None:
            elements = self.thrift.schema or []
            try:
                specs = parquet_to_arrow(elements, None).columns
                self._logical = {spec.index: spec for spec in specs}
            except StreamwriteError:  # as the reader's own
                self._logical = {spec.index: spec for spec in self._file._parquet_schema.columns}
        return self._logical.get(column)

    def __repr__(self) -> str:
        return (
            f"<streamwrite FileMetaData\n  created_by: {self.created_by}\n"
            f"  num_columns: {self.num_columns}\n  num_rows: {self.num_rows}\n"
            f"  num_row_groups: {self.num_row_groups}\n  format_version: {self.format_version}\n"
            f"  serialized_size: {self.serialized_size}>"
        )


def _key_values(pairs: list[t.KeyValue] | None) -> dict[bytes, bytes] | None:
    if not pairs:
        return None
    return {kv.key.encode() if kv.key else b"": (kv.value or "").encode() for kv in pairs}
