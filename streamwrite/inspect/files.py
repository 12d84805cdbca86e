"""Describe and verify one Parquet file (or a live file's newest commit), and tell paths apart.

What a path is (:func:`path_kind`), checked in this order::

    TABLE       a directory holding _txn
    LIVE_FILE   a directory holding data.parquet (a live file, or a table's segment)
    PARTITION   a directory of segments (a table's partition), or a live file without
                data.parquet
    DIRECTORY   a directory of plain *.parquet files
    FILE        anything that is not a directory (whatever its bytes hold)

Statistics bounds are decoded as the column's Arrow type (from ``ARROW:schema`` when the file
has it): Python values as Arrow's ``as_py()`` gives them (``str``, ``int``, ``float``,
``bool``, ``Decimal``, ``date``, ``time``, ``bytes``), except timestamps, which are
``numpy.datetime64`` in the column's unit (nanoseconds kept; INT96 in nanoseconds). A bound
that does not decode as its type (a truncated UTF-8 bound) is the raw ``bytes``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from streamwrite.arrow.schema import ColumnSpec
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.errors import ConfigError, StreamwriteError
from streamwrite.format import structs as t
from streamwrite.format.txn import TXN_FILE
from streamwrite.inspect.live import live_file_size
from streamwrite.layout.actions import LiveFileName
from streamwrite.reader.directory import DirectoryKind, classify_directory
from streamwrite.reader.file import ParquetFile
from streamwrite.reader.metadata import typed_value
from streamwrite.reader.verify import verify_file as _verify_file

__all__ = [
    "ChunkMetadata",
    "ColumnChunkInfo",
    "ColumnInfo",
    "ColumnStatistics",
    "FileInfo",
    "PathKind",
    "Progress",
    "RowGroupInfo",
    "Verification",
    "describe_file",
    "path_kind",
    "verify_file",
]

_T = TypeVar("_T")
Progress = Callable[[Iterable[_T], int, str], Iterator[_T]]
"""Wraps an iterable of ``total`` items with a progress display named ``desc``:
``progress(items, total, desc) -> iterator`` (``tqdm`` fits)."""


def no_progress(items: Iterable[_T], total: int, desc: str) -> Iterator[_T]:
    """The :data:`Progress` that shows nothing."""
    return iter(items)


class PathKind(enum.Enum):
    """What a path holds (module docstring)."""

    FILE = "Parquet file"
    LIVE_FILE = "live file"
    TABLE = "table"
    PARTITION = "partition of a table"
    DIRECTORY = "directory of Parquet files"


def path_kind(path: str | Path) -> PathKind:
    """What ``path`` is, from the names it holds (no file is opened or created).

    Returns:
        The kind (module docstring); a path that is not a directory is a ``FILE``.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ConfigError: a directory that is none of the kinds (the message says what each
            needs), or a directory of Parquet files with a live file or table inside.
    """
    directory = Path(path)
    if not directory.exists():
        raise FileNotFoundError(f"{str(directory)!r} does not exist (no such file or directory).")
    if not directory.is_dir():
        return PathKind.FILE
    if (directory / TXN_FILE).is_file():
        return PathKind.TABLE
    if (directory / LiveFileName.DATA.value).is_file():
        return PathKind.LIVE_FILE
    kind = classify_directory(directory)  # raises a ConfigError saying what it is not
    if kind is DirectoryKind.TABLE:  # _txn is there but not a file
        raise ConfigError(f"{str(directory)!r} holds a {TXN_FILE} that is not a file.")
    return PathKind.PARTITION if kind is DirectoryKind.LIVE else PathKind.DIRECTORY


# -- describe ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ColumnInfo:
    """One leaf column of the file's schema (a nested leaf: named by its dotted path)."""

    name: str
    arrow_type: pa.DataType
    """The column's Arrow type (dictionary types as written)."""
    physical_type: str
    """The Parquet physical type's name (``INT64``, ``BYTE_ARRAY``...)."""
    type_length: int | None
    """Bytes per value of a ``FIXED_LEN_BYTE_ARRAY``, else None."""
    repetition: str
    """``REQUIRED`` or ``OPTIONAL``."""
    logical_type: str | None
    """The footer's ``LogicalType`` as text, or None."""
    max_definition_level: int = 0
    """The leaf's maximum definition level (0 or 1 for a flat column)."""
    max_repetition_level: int = 0
    """Lists and maps above the leaf (0 for a flat column or a struct field)."""


@dataclass(frozen=True, slots=True)
class ColumnStatistics:
    """A column chunk's statistics, bounds decoded as the column's type (module docstring)."""

    null_count: int | None
    min: Any
    """The lower bound, or None when the chunk has none."""
    max: Any
    """The upper bound, or None when the chunk has none."""
    is_min_value_exact: bool | None
    is_max_value_exact: bool | None


@dataclass(frozen=True, slots=True)
class ChunkMetadata:
    """A column chunk's ``ColumnMetaData`` (decrypted when the chunk is encrypted)."""

    codec: str | None
    """The compression codec's Parquet name (``ZSTD``, ``LZ4_RAW``...)."""
    encodings: tuple[str | None, ...]
    num_values: int | None
    compressed_size: int | None
    uncompressed_size: int | None
    data_page_offset: int | None
    dictionary_page_offset: int | None
    statistics: ColumnStatistics | None
    bloom_filter_offset: int | None
    bloom_filter_length: int | None


@dataclass(frozen=True, slots=True)
class ColumnChunkInfo:
    """One column chunk of a row group."""

    column: str
    encrypted: bool
    """The chunk is encrypted (with the footer key or its column's key)."""
    metadata: ChunkMetadata | None
    """None when the chunk is encrypted and no key for it was given (or it is damaged)."""
    column_index_offset: int | None
    offset_index_offset: int | None


@dataclass(frozen=True, slots=True)
class RowGroupInfo:
    """One row group of the footer."""

    index: int
    num_rows: int | None
    total_byte_size: int | None
    total_compressed_size: int | None
    file_offset: int | None
    columns: tuple[ColumnChunkInfo, ...]


@dataclass(frozen=True, slots=True)
class FileInfo:
    """The footer of a Parquet file: schema, row groups, column chunks, typed statistics."""

    version: int | None
    created_by: str | None
    num_rows: int | None
    footer_offset: int
    """Where the footer (``FileMetaData``) starts."""
    encryption_algorithm: str | None
    """``AES_GCM_V1`` or ``AES_GCM_CTR_V1`` for an encrypted (or signed) file, else None."""
    key_value_metadata: dict[str, str | None]
    columns: tuple[ColumnInfo, ...]
    row_groups: tuple[RowGroupInfo, ...]

    @property
    def num_row_groups(self) -> int:
        """Row groups in the footer."""
        return len(self.row_groups)


def _name(value: int | None, enum_type: type[enum.IntEnum]) -> str | None:
    if value is None:
        return None
    try:
        return enum_type(value).name
    except ValueError:
        return str(value)


def _bound(raw: bytes | None, spec: ColumnSpec) -> Any:
    """A statistics bound as a typed value (module docstring); None when unset."""
    if raw is None:
        return None
    dtype = spec.field.type
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    if pa.types.is_timestamp(dtype):
        if spec.physical_type == t.Type.INT96:
            nanos = int.from_bytes(raw[:8], "little")
            days = int.from_bytes(raw[8:12], "little")
            return np.datetime64((days - 2440588) * 86_400_000_000_000 + nanos, "ns")
        return np.datetime64(int.from_bytes(raw, "little", signed=True), dtype.unit)
    try:
        return typed_value(raw, spec)
    except ValueError:
        return bytes(raw)


def _statistics(stats: t.Statistics | None, spec: ColumnSpec) -> ColumnStatistics | None:
    if stats is None:
        return None
    return ColumnStatistics(
        stats.null_count,
        _bound(stats.min_value, spec),
        _bound(stats.max_value, spec),
        stats.is_min_value_exact,
        stats.is_max_value_exact,
    )


def _chunk(pf: ParquetFile, i: int, spec: ColumnSpec, chunk: t.ColumnChunk) -> ColumnChunkInfo:
    metadata = None
    try:
        meta = pf._column_metadata(i, spec.index)
    except StreamwriteError:  # encrypted, no key for it (or damaged)
        pass
    else:
        metadata = ChunkMetadata(
            _name(meta.codec, t.CompressionCodec),
            tuple(_name(e, t.Encoding) for e in meta.encodings or []),
            meta.num_values,
            meta.total_compressed_size,
            meta.total_uncompressed_size,
            meta.data_page_offset,
            meta.dictionary_page_offset,
            _statistics(meta.statistics, spec),
            meta.bloom_filter_offset,
            meta.bloom_filter_length,
        )
    return ColumnChunkInfo(
        spec.name,
        chunk.crypto_metadata is not None,
        metadata,
        chunk.column_index_offset,
        chunk.offset_index_offset,
    )


def describe_file(
    path: str | Path, *, decryption: DecryptionConfig | None = None, snapshot: int | None = None
) -> FileInfo:
    """Read the footer of a Parquet file (a live-file directory: its newest commit, or the
    commit of ``snapshot`` bytes).

    Args:
        path: a Parquet file or a live-file directory.
        decryption: keys of an encrypted file; chunks whose key is missing are described
            without their metadata.
        snapshot: a committed size of the live file to describe instead of the newest.

    Returns:
        The footer's schema, row groups and column chunks, statistics as typed values.

    Raises:
        CorruptFileError: no valid footer.
        EncryptionError: an encrypted footer without its key, or a wrong key.
        OSError: the file cannot be read.
    """
    with ParquetFile(path, decryption=decryption, snapshot=snapshot) as pf:
        md = pf.thrift_metadata
        specs = pf._parquet_schema.columns
        columns = tuple(
            ColumnInfo(
                spec.name,
                spec.field.type,
                spec.physical_type.name,
                spec.type_length,
                spec.repetition.name,
                None if spec.element.logicalType is None else repr(spec.element.logicalType),
                spec.max_definition_level,
                spec.max_repetition_level,
            )
            for spec in specs
        )
        row_groups = tuple(
            RowGroupInfo(
                i,
                rg.num_rows,
                rg.total_byte_size,
                rg.total_compressed_size,
                rg.file_offset,
                tuple(_chunk(pf, i, spec, (rg.columns or [])[spec.index]) for spec in specs),
            )
            for i, rg in enumerate(md.row_groups or [])
        )
        return FileInfo(
            md.version,
            md.created_by,
            md.num_rows,
            pf.footer_offset,
            pf.encryption_algorithm,
            {kv.key: kv.value for kv in md.key_value_metadata or [] if kv.key is not None},
            columns,
            row_groups,
        )


# -- verify --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Verification:
    """What :func:`verify_file` (or :func:`~streamwrite.inspect.verify_table`) checked and
    found; ``problems`` is empty for a sound file."""

    num_row_groups: int
    num_pages: int
    problems: tuple[str, ...]
    """Complete sentences, each naming the byte offset (and module) involved."""
    notes: tuple[str, ...] = ()
    """What was seen and is no problem (a table: bytes a writer may be appending)."""

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems


def _torn_tail(directory: Path) -> list[str]:
    """The live file's bytes past its last commit, as a problem."""
    size = live_file_size(directory)
    if not size.uncommitted_bytes:
        return []
    return [
        f"data.parquet holds {size.uncommitted_bytes} bytes past its last commit (at byte "
        f"{size.committed_size}): a writer is appending, or a crash left a torn tail; other "
        f"readers cannot open the bare file until it is cut. Run: streamwrite recover "
        f"{directory} --apply"
    ]


def verify_file(
    path: str | Path,
    *,
    decryption: DecryptionConfig | None = None,
    snapshot: int | None = None,
    progress: Progress[int] | None = None,
) -> Verification:
    """Walk every page of a Parquet file and check it against its metadata: page headers,
    CRC32s, page decoding, row counts, statistics, page index, bloom filters and (with keys)
    every encryption module's authentication.

    A live-file directory is checked at its newest commit (or at ``snapshot`` bytes); without
    ``snapshot``, bytes of ``data.parquet`` past the newest commit are a problem too (a
    crash left them, or a writer is appending: readers of the bare file fail on them).

    Args:
        path: a Parquet file or a live-file directory.
        decryption: keys of an encrypted file.
        snapshot: check only this committed prefix of a live file.
        progress: wraps the iteration over row groups (a progress display).

    Returns:
        What was checked and the problems found; a file that cannot be opened reports that as
        its one problem.

    Raises:
        CorruptFileError: a live file's ``_pm`` is missing or damaged (its tail cannot be
            told from its commits).
        ConfigError: ``path`` is a table's partition (segments inside, no ``_pm``).
    """
    source = Path(path)
    report = _verify_file(source, decryption=decryption, snapshot=snapshot, progress=progress)
    problems = list(report.problems)
    if snapshot is None and source.is_dir():
        problems = _torn_tail(source) + problems
    return Verification(report.num_row_groups, report.num_pages, tuple(problems))


for _export in __all__:  # documented and pickled as streamwrite.inspect.NAME (anyio's style)
    if getattr(globals()[_export], "__module__", None) == __name__:
        globals()[_export].__module__ = "streamwrite.inspect"
