"""Write and read options: frozen, validated dataclasses, and every default in one place.

The public functions (``write_table``, ``ParquetFile``) take pyarrow-style keyword arguments and
turn them into these objects once, with :func:`make_write_options`; everything below the API
sees only enums and checked numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum

from streamwrite.errors import ConfigError
from streamwrite.format.enums import CompressionCodec, Encoding

__all__ = [
    "DEFAULT_COMPRESSION",
    "DEFAULT_DATA_PAGE_ROW_LIMIT",
    "DEFAULT_DATA_PAGE_SIZE",
    "DEFAULT_DICTIONARY_PAGE_SIZE_LIMIT",
    "DEFAULT_MAX_DECOMPRESSED_PAGE_SIZE",
    "DEFAULT_ROW_GROUP_SIZE",
    "DEFAULT_STATISTICS_TRUNCATE_LENGTH",
    "BloomFilterOptions",
    "ColumnOptions",
    "DataPageVersion",
    "ReadOptions",
    "SortingColumn",
    "WriteOptions",
    "make_write_options",
    "parse_compression",
]

CREATED_BY = "streamwrite version 0.1.0"

DEFAULT_ROW_GROUP_SIZE = 1024 * 1024
"""Rows per row group, as pyarrow."""
DEFAULT_DATA_PAGE_SIZE = 1024 * 1024
"""Target encoded bytes per data page, as pyarrow."""
DEFAULT_DATA_PAGE_ROW_LIMIT = 20_000
"""Most rows in one data page, as pyarrow and parquet-java."""
DEFAULT_DICTIONARY_PAGE_SIZE_LIMIT = 1024 * 1024
"""Most PLAIN-encoded bytes in a dictionary page before the chunk falls back."""
DEFAULT_STATISTICS_TRUNCATE_LENGTH = 64
"""Byte-array statistics and page-index bounds are truncated to this many bytes."""
DEFAULT_COMPRESSION = CompressionCodec.ZSTD
DEFAULT_BLOOM_FILTER_FPP = 0.05
DEFAULT_MAX_DECOMPRESSED_PAGE_SIZE = 256 * 1024 * 1024
"""The reader refuses pages that claim to decompress to more than this."""
DICTIONARY_SAMPLE_SIZE = 8192
"""Values sampled to decide whether a column is worth dictionary encoding."""
MAX_DICTIONARY_RATIO = 0.5
"""Above this share of distinct values in the sample, a column is not dictionary encoded."""

_CODEC_NAMES = {
    "none": CompressionCodec.UNCOMPRESSED,
    "uncompressed": CompressionCodec.UNCOMPRESSED,
    "snappy": CompressionCodec.SNAPPY,
    "gzip": CompressionCodec.GZIP,
    "brotli": CompressionCodec.BROTLI,
    "zstd": CompressionCodec.ZSTD,
    "lz4": CompressionCodec.LZ4_RAW,
    "lz4_raw": CompressionCodec.LZ4_RAW,
    "lzo": CompressionCodec.LZO,
}

_VALUE_ENCODINGS = {
    Encoding.PLAIN,
    Encoding.RLE,
    Encoding.DELTA_BINARY_PACKED,
    Encoding.DELTA_LENGTH_BYTE_ARRAY,
    Encoding.DELTA_BYTE_ARRAY,
    Encoding.BYTE_STREAM_SPLIT,
}


class DataPageVersion(Enum):
    """Data page header version: ``"1.0"`` (DATA_PAGE) or ``"2.0"`` (DATA_PAGE_V2)."""

    V1 = "1.0"
    V2 = "2.0"


@dataclass(frozen=True, slots=True)
class BloomFilterOptions:
    """Split-block bloom filter for one column, sized from ``ndv`` distinct values and ``fpp``.

    ``ndv=None`` sizes the filter from the distinct values actually seen in each column chunk.
    """

    ndv: int | None = None
    fpp: float = DEFAULT_BLOOM_FILTER_FPP

    def __post_init__(self) -> None:
        if not 0.0 < self.fpp < 1.0:
            raise ConfigError(f"Bloom filter fpp must be in (0, 1), got {self.fpp!r}.")
        if self.ndv is not None and self.ndv < 1:
            raise ConfigError(f"Bloom filter ndv must be positive, got {self.ndv!r}.")


@dataclass(frozen=True, slots=True)
class SortingColumn:
    """Rows of each row group are sorted by this column (as ``pyarrow.parquet.SortingColumn``)."""

    column_index: int
    descending: bool = False
    nulls_first: bool = False


@dataclass(frozen=True, slots=True)
class ColumnOptions:
    """How one column is encoded. ``encoding=None`` lets the writer choose per chunk."""

    compression: CompressionCodec = DEFAULT_COMPRESSION
    compression_level: int | None = None
    use_dictionary: bool = True
    encoding: Encoding | None = None
    write_statistics: bool = True
    bloom_filter: BloomFilterOptions | None = None


@dataclass(frozen=True, slots=True)
class WriteOptions:
    """Everything the writer needs to know, validated once."""

    row_group_size: int = DEFAULT_ROW_GROUP_SIZE
    data_page_size: int = DEFAULT_DATA_PAGE_SIZE
    data_page_row_limit: int = DEFAULT_DATA_PAGE_ROW_LIMIT
    dictionary_page_size_limit: int = DEFAULT_DICTIONARY_PAGE_SIZE_LIMIT
    data_page_version: DataPageVersion = DataPageVersion.V1
    write_page_index: bool = True
    write_page_checksum: bool = True
    statistics_truncate_length: int = DEFAULT_STATISTICS_TRUNCATE_LENGTH
    default_column: ColumnOptions = ColumnOptions()
    columns: Mapping[str, ColumnOptions] = field(default_factory=dict)
    sorting_columns: tuple[SortingColumn, ...] = ()
    key_value_metadata: tuple[tuple[str, str], ...] = ()
    created_by: str = CREATED_BY

    def __post_init__(self) -> None:
        for name in ("row_group_size", "data_page_size", "data_page_row_limit"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}.")
        if self.dictionary_page_size_limit < 0:
            raise ConfigError(
                "dictionary_page_size_limit must not be negative, "
                f"got {self.dictionary_page_size_limit!r}."
            )
        if self.statistics_truncate_length < 1:
            raise ConfigError(
                "statistics_truncate_length must be positive, "
                f"got {self.statistics_truncate_length!r}."
            )

    def column(self, name: str) -> ColumnOptions:
        """The options of column ``name`` (the defaults when it has no entry of its own)."""
        return self.columns.get(name, self.default_column)


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """Reader safety and checking settings."""

    verify_checksums: bool = True
    max_decompressed_page_size: int = DEFAULT_MAX_DECOMPRESSED_PAGE_SIZE


def parse_compression(value: str | CompressionCodec | None) -> CompressionCodec:
    """Turn a pyarrow-style codec name (``"zstd"``, ``"snappy"``, ``None``...) into the enum.

    Raises:
        ConfigError: for an unknown name.
    """
    if value is None:
        return CompressionCodec.UNCOMPRESSED
    if isinstance(value, CompressionCodec):
        return value
    try:
        return _CODEC_NAMES[str(value).lower()]
    except KeyError:
        raise ConfigError(
            f"Unknown compression {value!r}; expected one of {sorted(_CODEC_NAMES)}."
        ) from None


def _parse_encoding(value: str | Encoding, column: str) -> Encoding:
    try:
        encoding = value if isinstance(value, Encoding) else Encoding[str(value).upper()]
    except KeyError:
        raise ConfigError(f"Unknown encoding {value!r} for column {column!r}.") from None
    if encoding not in _VALUE_ENCODINGS:
        raise ConfigError(
            f"Encoding {encoding.name} cannot be chosen for column {column!r}; dictionary "
            "encoding is chosen with use_dictionary, the others are "
            f"{sorted(e.name for e in _VALUE_ENCODINGS)}."
        )
    return encoding


def _per_column(value: object, column: str, default: object) -> object:
    """pyarrow options are either one value for every column or a dict/list naming columns."""
    if isinstance(value, Mapping):
        return value.get(column, default)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return column in value
    return value


def make_write_options(
    column_names: Sequence[str],
    *,
    row_group_size: int | None = None,
    compression: str | CompressionCodec | Mapping[str, str | None] | None = "zstd",
    compression_level: int | Mapping[str, int] | None = None,
    data_page_size: int | None = None,
    data_page_row_limit: int | None = None,
    dictionary_pagesize_limit: int | None = None,
    data_page_version: str = "1.0",
    use_dictionary: bool | Sequence[str] = True,
    column_encoding: str | Mapping[str, str] | None = None,
    write_statistics: bool | Sequence[str] = True,
    write_page_index: bool = True,
    write_page_checksum: bool = True,
    bloom_filter_options: Mapping[str, Mapping[str, float] | bool] | None = None,
    sorting_columns: Sequence[SortingColumn] | None = None,
    key_value_metadata: Mapping[str, str] | None = None,
    statistics_truncate_length: int | None = None,
) -> WriteOptions:
    """Build :class:`WriteOptions` from ``pyarrow.parquet.write_table``-style arguments.

    Per-column arguments accept, as pyarrow does, a single value for every column, a mapping
    from column name to value, or (booleans) a list of the column names it applies to.

    Returns:
        The validated options.

    Raises:
        ConfigError: for unknown names, columns or out-of-range values.
    """
    known = set(column_names)
    for arg_name, arg in (
        ("compression", compression),
        ("compression_level", compression_level),
        ("column_encoding", column_encoding),
        ("bloom_filter_options", bloom_filter_options),
    ):
        if isinstance(arg, Mapping):
            unknown = set(arg) - known
            if unknown:
                raise ConfigError(f"{arg_name} names unknown columns {sorted(unknown)}.")
    try:
        version = DataPageVersion(str(data_page_version))
    except ValueError:
        raise ConfigError(
            f"data_page_version must be '1.0' or '2.0', got {data_page_version!r}."
        ) from None
    columns: dict[str, ColumnOptions] = {}
    for name in column_names:
        codec = parse_compression(_per_column(compression, name, "zstd"))  # type: ignore[arg-type]
        level = _per_column(compression_level, name, None)
        encoding_value = _per_column(column_encoding, name, None)
        bloom_value = (bloom_filter_options or {}).get(name)
        bloom = None
        if bloom_value is True:
            bloom = BloomFilterOptions()
        elif isinstance(bloom_value, Mapping):
            bloom = BloomFilterOptions(
                ndv=int(bloom_value["ndv"]) if "ndv" in bloom_value else None,
                fpp=float(bloom_value.get("fpp", DEFAULT_BLOOM_FILTER_FPP)),
            )
        encoding = None if encoding_value is None else _parse_encoding(encoding_value, name)  # type: ignore[arg-type]
        dictionary = bool(_per_column(use_dictionary, name, True))
        if encoding is not None and column_encoding is not None:
            dictionary = False  # as pyarrow: an explicit encoding turns the dictionary off
        columns[name] = ColumnOptions(
            compression=codec,
            compression_level=None if level is None else int(level),  # type: ignore[call-overload]
            use_dictionary=dictionary,
            encoding=encoding,
            write_statistics=bool(_per_column(write_statistics, name, True)),
            bloom_filter=bloom,
        )
    base = WriteOptions()
    return replace(
        base,
        row_group_size=row_group_size if row_group_size is not None else base.row_group_size,
        data_page_size=data_page_size if data_page_size is not None else base.data_page_size,
        data_page_row_limit=(
            data_page_row_limit if data_page_row_limit is not None else base.data_page_row_limit
        ),
        dictionary_page_size_limit=(
            dictionary_pagesize_limit
            if dictionary_pagesize_limit is not None
            else base.dictionary_page_size_limit
        ),
        data_page_version=version,
        write_page_index=write_page_index,
        write_page_checksum=write_page_checksum,
        statistics_truncate_length=(
            statistics_truncate_length
            if statistics_truncate_length is not None
            else base.statistics_truncate_length
        ),
        columns=columns,
        sorting_columns=tuple(sorting_columns or ()),
        key_value_metadata=tuple((str(k), str(v)) for k, v in (key_value_metadata or {}).items()),
    )
