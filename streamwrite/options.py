"""Write and read options: frozen, validated dataclasses, and every default in one place.

The public functions (``write_table``, ``ParquetWriter``, ``open_table``, ``LiveFile.open``,
``ParquetFile``) take pyarrow-style keyword arguments and turn them into these objects once,
with :func:`make_write_options`; everything below the API sees only enums and checked numbers.
Every check that needs only the options happens there, before a caller touches a file: unknown
keyword names (a ``TypeError`` naming the public function, with the closest valid name), codecs
the writer cannot write, compression levels outside the codec's range, bad types and ranges.
Checks that need the Parquet schema (an encoding that does not fit a column's physical type, a
Bloom filter on a BOOLEAN column) are :func:`streamwrite.encode.check_write_options`.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, ParamSpec, TypeVar

from streamwrite.errors import ConfigError
from streamwrite.format.enums import CompressionCodec, Encoding
from streamwrite.format.index import IndexColumnSpec, parse_embedded_index

__all__ = [
    "DEFAULT_COMPRESSION",
    "DEFAULT_DATA_PAGE_ROW_LIMIT",
    "DEFAULT_DATA_PAGE_SIZE",
    "DEFAULT_DICTIONARY_PAGE_SIZE_LIMIT",
    "DEFAULT_MAX_DECOMPRESSED_PAGE_SIZE",
    "DEFAULT_ROW_GROUP_SIZE",
    "DEFAULT_STATISTICS_TRUNCATE_LENGTH",
    "COMPRESSION_LEVELS",
    "WRITE_OPTION_NAMES",
    "BloomFilterOptions",
    "ColumnOptions",
    "ColumnPath",
    "CompactionPolicy",
    "DataPageVersion",
    "ReadOptions",
    "SortingColumn",
    "WriteOptions",
    "check_option_names",
    "check_positive_int",
    "make_write_options",
    "parse_compression",
    "public_keywords",
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
}
"""The codecs the writer writes, by their pyarrow names. LZO (and the deprecated Hadoop-framed
LZ4) are not among them: the reader reads LZ4, nothing writes either."""

COMPRESSION_LEVELS: dict[CompressionCodec, tuple[int, int]] = {
    CompressionCodec.GZIP: (0, 9),
    CompressionCodec.BROTLI: (0, 11),
    CompressionCodec.ZSTD: (-131072, 22),
    CompressionCodec.LZ4_RAW: (1, 12),
}
"""The ``compression_level`` range (inclusive) of each codec that takes one: zlib's, Brotli's,
zstd's (``ZSTD_minCLevel()`` to ``ZSTD_maxCLevel()``) and LZ4 HC's (a level selects the HC
mode). UNCOMPRESSED and SNAPPY take no level (a level for them is a ``ConfigError``, as in
pyarrow)."""

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
    embedded_index: tuple[IndexColumnSpec, ...] = ()
    """Columns with an embedded index (spec 001; :mod:`streamwrite.format.index`)."""

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

    Returns:
        The codec, one the writer can write.

    Raises:
        ConfigError: For an unknown name, or a codec the writer does not write (LZO, the
            deprecated Hadoop-framed LZ4).
    """
    if value is None:
        return CompressionCodec.UNCOMPRESSED
    if isinstance(value, CompressionCodec):
        if value in _CODEC_NAMES.values():
            return value
        use = "; use LZ4_RAW ('lz4_raw')" if value == CompressionCodec.LZ4 else ""
        raise ConfigError(
            f"Compression {value.name} cannot be written (streamwrite writes no {value.name} "
            f"pages{use}); expected one of {sorted(_CODEC_NAMES)}."
        )
    codec = _CODEC_NAMES.get(str(value).lower()) if isinstance(value, str) else None
    if codec is None:
        cannot = str(value).lower() == "lzo" if isinstance(value, str) else False
        raise ConfigError(
            f"{'Compression' if cannot else 'Unknown compression'} {value!r}"
            f"{' cannot be written (streamwrite writes no LZO pages)' if cannot else ''}; "
            f"expected one of {sorted(_CODEC_NAMES)}."
        )
    return codec


def _parse_level(value: object, codec: CompressionCodec, column: str) -> int | None:
    """A column's ``compression_level``, checked against its codec's range."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ConfigError(f"compression_level must be an integer, got {value!r}.")
    try:
        level = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise ConfigError(f"compression_level must be an integer, got {value!r}.") from None
    bounds = COMPRESSION_LEVELS.get(codec)
    if bounds is None:
        raise ConfigError(
            f"Column {column!r} is compressed with {codec.name}, which takes no "
            f"compression_level, but compression_level={level!r} was given."
        )
    low, high = bounds
    if not low <= level <= high:
        raise ConfigError(
            f"compression_level {level!r} for column {column!r} is out of range for "
            f"{codec.name}: it takes {low} to {high}."
        )
    return level


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


ColumnPath = str | tuple[str, ...]
"""A leaf column as :func:`make_write_options` takes it: the name of a flat column, or the
``path_in_schema`` of a leaf (``("s", "a")``, ``("l", "list", "element")``)."""


@dataclass(frozen=True, slots=True)
class _LeafNames:
    """The leaf columns an option may name, and the group names that cover several leaves.

    A leaf is named by its dotted path (``s.a``, ``l.list.element``, ``m.key_value.key``); a
    group (a struct, list or map field, or a group inside one: ``s``, ``m``, ``m.key_value``)
    names every leaf under it. When several names given in one option cover a leaf, the
    longest (most specific) wins: ``{"s": "snappy", "s.a": "gzip"}``.
    """

    paths: tuple[tuple[str, ...], ...]

    @classmethod
    def of(cls, columns: Sequence[ColumnPath]) -> _LeafNames:
        return cls(tuple((c,) if isinstance(c, str) else tuple(c) for c in columns))

    @property
    def leaves(self) -> list[str]:
        return [".".join(path) for path in self.paths]

    @property
    def flat(self) -> list[str]:
        """The names of the top-level primitive columns."""
        return [path[0] for path in self.paths if len(path) == 1]

    def known(self) -> set[str]:
        """Every name an option may use: leaves and groups."""
        return {".".join(path[:i]) for path in self.paths for i in range(1, len(path) + 1)}

    @staticmethod
    def covering(path: tuple[str, ...]) -> list[str]:
        """The names covering the leaf ``path``, most specific first."""
        return [".".join(path[:i]) for i in range(len(path), 0, -1)]

    def check(self, arg_name: str, names: object) -> None:
        unknown = sorted(str(n) for n in names if n not in self.known())  # type: ignore[attr-defined]
        if unknown:
            groups = sorted(self.known() - set(self.leaves))
            also = f"; or a group, covering its leaves: {', '.join(groups)}" if groups else ""
            raise ConfigError(
                f"{arg_name} names unknown columns {unknown}; the columns are the leaf paths "
                f"{', '.join(self.leaves)}{also}."
            )


def _per_column(value: object, path: tuple[str, ...], default: object) -> object:
    """pyarrow options are either one value for every column or a dict/list naming columns.

    A name covers a leaf when it is the leaf's dotted path or that of a group above it; in a
    mapping the most specific name covering the leaf wins.
    """
    if isinstance(value, Mapping):
        for name in _LeafNames.covering(path):
            if name in value:
                return value[name]
        return default
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return any(name in value for name in _LeafNames.covering(path))
    return value


def make_write_options(
    column_names: Sequence[ColumnPath], *, caller: str = "write_table", **options: Any
) -> WriteOptions:
    """Build :class:`WriteOptions` from ``pyarrow.parquet.write_table``-style keyword arguments.

    The names are those of :data:`WRITE_OPTION_NAMES` (``row_group_size``, ``compression``,
    ``compression_level``, ``data_page_size``, ``data_page_row_limit``,
    ``dictionary_pagesize_limit``, ``data_page_version``, ``use_dictionary``,
    ``column_encoding``, ``write_statistics``, ``write_page_index``, ``write_page_checksum``,
    ``bloom_filter_options``, ``sorting_columns``, ``key_value_metadata``,
    ``statistics_truncate_length``, ``embedded_index``). Per-column arguments accept, as
    pyarrow does, a single value for every column, a mapping from column name to value, or
    (booleans) a list of the column names it applies to.

    Columns are named as in ``path_in_schema``: a flat column by its name, a leaf of a nested
    field by its dotted path (``s.a``, ``l.list.element``, ``m.key_value.key``,
    ``m.key_value.value``). The name of a struct, list or map field (or of a group inside
    one, ``m.key_value``) applies to every leaf under it; where several names cover a leaf,
    the most specific wins. ``WriteOptions.columns`` is keyed by leaf path.
    ``sorting_columns`` index leaf columns (as pyarrow's ``SortingColumn``) and must be flat
    top-level columns; ``embedded_index`` names flat top-level columns.

    Args:
        column_names: The leaf columns of the schema the options are for: names of flat
            columns or ``path_in_schema`` tuples (``ColumnSpec.path_in_schema``), in order.
        caller: The public function the keyword arguments were given to, named in the
            ``TypeError`` for an unknown name (``"write_table"``, ``"ParquetWriter"``,
            ``"open_table"``...).
        **options: The keyword arguments.

    Returns:
        The validated options.

    Raises:
        TypeError: A name that is not an option (``"write_table() got an unexpected keyword
            argument 'compresion'; did you mean 'compression'?"``).
        ConfigError: Unknown columns (the message lists the leaf paths), codecs the writer
            does not write, out-of-range levels and values, values of the wrong type, a
            sorting column that is not a flat top-level column.
    """
    check_option_names(options, caller)
    return _build_write_options(column_names, **options)


def check_option_names(
    options: Mapping[str, object], caller: str, also_accepted: Sequence[str] = ()
) -> None:
    """Refuse a keyword argument that is not a write option, as Python refuses one.

    Args:
        options: The keyword arguments given to ``caller`` beyond its own parameters.
        caller: The public function's name, as the user called it.
        also_accepted: The caller's other keyword parameters, offered as suggestions too.

    Raises:
        TypeError: For the first unknown name, naming ``caller`` and the closest valid name
            (``difflib.get_close_matches``), or every valid name when none is close.
    """
    valid = [*WRITE_OPTION_NAMES, *also_accepted]
    for name in options:
        if name in WRITE_OPTION_NAMES:
            continue
        close = difflib.get_close_matches(name, valid, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"it takes {', '.join(valid)}."
        raise TypeError(f"{caller}() got an unexpected keyword argument {name!r}; {hint}")


def check_positive_int(name: str, value: object) -> int:
    """Returns: ``value``, an ``int`` >= 1 (not a bool).

    Raises:
        ConfigError: Otherwise, naming the option ``name``.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}.")
    return value


def _bloom_options(value: object, column: str) -> BloomFilterOptions | None:
    if value is None or value is False:
        return None
    if value is True:
        return BloomFilterOptions()
    if isinstance(value, Mapping) and set(value) <= {"ndv", "fpp"}:
        try:
            ndv_value = value.get("ndv")
            if isinstance(ndv_value, float) and ndv_value.is_integer():
                ndv_value = int(ndv_value)  # 1e6
            ndv = None if ndv_value is None else operator.index(ndv_value)
            fpp = float(value.get("fpp", DEFAULT_BLOOM_FILTER_FPP))
        except (TypeError, ValueError):
            raise ConfigError(
                f"bloom_filter_options for column {column!r} needs an integer ndv and a "
                f"number fpp, got {dict(value)!r}."
            ) from None
        return BloomFilterOptions(ndv=ndv, fpp=fpp)
    raise ConfigError(
        f"bloom_filter_options for column {column!r} must be True, False or a mapping with "
        f"'ndv' and/or 'fpp', got {value!r}."
    )


def _sorting_columns(value: object, leaves: _LeafNames) -> tuple[SortingColumn, ...]:
    columns = _sorting_column_list(value)
    for s in columns:
        if not 0 <= s.column_index < len(leaves.paths):
            raise ConfigError(
                f"Sorting column index {s.column_index} is out of range for "
                f"{len(leaves.paths)} columns."
            )
        path = leaves.paths[s.column_index]
        if len(path) > 1:
            raise ConfigError(
                f"Sorting column {s.column_index} is {'.'.join(path)!r}, a leaf of the nested "
                f"field {path[0]!r}; sorting columns must be flat top-level columns "
                f"({', '.join(leaves.flat) or 'the schema has none'})."
            )
    return columns


def _flat_index_names(value: object, leaves: _LeafNames) -> object:
    """``embedded_index`` as given, after refusing a nested leaf in it (spec 001 indexes a
    flat column's values, one per row)."""
    if isinstance(value, Mapping):
        nested = {".".join(path) for path in leaves.paths if len(path) > 1}
        for name in value:
            if name in nested:
                raise ConfigError(
                    f"embedded_index names {name!r}, a leaf of a nested field, which is not a "
                    f"flat top-level column; embedded indexes take the flat columns "
                    f"({', '.join(leaves.flat) or 'the schema has none'})."
                )
    return value


def _sorting_column_list(value: object) -> tuple[SortingColumn, ...]:
    if value is None:
        return ()
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        columns = []
        for item in value:
            if isinstance(item, SortingColumn):
                columns.append(item)
            elif isinstance(getattr(item, "column_index", None), int):  # pyarrow's SortingColumn
                columns.append(
                    SortingColumn(item.column_index, bool(item.descending), bool(item.nulls_first))
                )
            else:
                break
        else:
            return tuple(columns)
    raise ConfigError(f"sorting_columns must be a list of SortingColumn, got {value!r}.")


def _build_write_options(
    column_names: Sequence[ColumnPath],
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
    embedded_index: Mapping[str, Sequence[object]] | None = None,
) -> WriteOptions:
    leaves = _LeafNames.of(column_names)
    for arg_name, arg in (
        ("compression", compression),
        ("compression_level", compression_level),
        ("column_encoding", column_encoding),
        ("bloom_filter_options", bloom_filter_options),
    ):
        if isinstance(arg, Mapping):
            leaves.check(arg_name, arg)
    for list_name, listed in (
        ("use_dictionary", use_dictionary),
        ("write_statistics", write_statistics),
    ):
        if isinstance(listed, Sequence) and not isinstance(listed, str | bytes):
            leaves.check(list_name, listed)
    if bloom_filter_options is not None and not isinstance(bloom_filter_options, Mapping):
        raise ConfigError(
            "bloom_filter_options must map column names to True or {'ndv': ..., 'fpp': ...}, "
            f"got {bloom_filter_options!r}."
        )
    if key_value_metadata is not None and not isinstance(key_value_metadata, Mapping):
        raise ConfigError(f"key_value_metadata must be a mapping, got {key_value_metadata!r}.")
    try:
        version = DataPageVersion(str(data_page_version))
    except ValueError:
        raise ConfigError(
            f"data_page_version must be '1.0' or '2.0', got {data_page_version!r}."
        ) from None
    base = WriteOptions()
    sizes = {
        "row_group_size": (row_group_size, base.row_group_size),
        "data_page_size": (data_page_size, base.data_page_size),
        "data_page_row_limit": (data_page_row_limit, base.data_page_row_limit),
        "statistics_truncate_length": (
            statistics_truncate_length,
            base.statistics_truncate_length,
        ),
    }
    checked = {
        name: default if value is None else check_positive_int(name, value)
        for name, (value, default) in sizes.items()
    }
    if dictionary_pagesize_limit is None:
        dictionary_limit = base.dictionary_page_size_limit
    elif (
        isinstance(dictionary_pagesize_limit, bool)
        or not isinstance(dictionary_pagesize_limit, int)
        or dictionary_pagesize_limit < 0
    ):
        raise ConfigError(
            f"dictionary_pagesize_limit must be an integer >= 0, got {dictionary_pagesize_limit!r}."
        )
    else:
        dictionary_limit = dictionary_pagesize_limit
    columns: dict[str, ColumnOptions] = {}
    for path in leaves.paths:
        name = ".".join(path)
        codec = parse_compression(_per_column(compression, path, "zstd"))  # type: ignore[arg-type]
        encoding_value = _per_column(column_encoding, path, None)
        encoding = None if encoding_value is None else _parse_encoding(encoding_value, name)  # type: ignore[arg-type]
        dictionary = bool(_per_column(use_dictionary, path, True))
        if encoding is not None and column_encoding is not None:
            dictionary = False  # as pyarrow: an explicit encoding turns the dictionary off
        columns[name] = ColumnOptions(
            compression=codec,
            compression_level=_parse_level(_per_column(compression_level, path, None), codec, name),
            use_dictionary=dictionary,
            encoding=encoding,
            write_statistics=bool(_per_column(write_statistics, path, True)),
            bloom_filter=_bloom_options(_per_column(bloom_filter_options or {}, path, None), name),
        )
    return replace(
        base,
        row_group_size=checked["row_group_size"],
        data_page_size=checked["data_page_size"],
        data_page_row_limit=checked["data_page_row_limit"],
        dictionary_page_size_limit=dictionary_limit,
        data_page_version=version,
        write_page_index=bool(write_page_index),
        write_page_checksum=bool(write_page_checksum),
        statistics_truncate_length=checked["statistics_truncate_length"],
        columns=columns,
        sorting_columns=_sorting_columns(sorting_columns, leaves),
        key_value_metadata=tuple((str(k), str(v)) for k, v in (key_value_metadata or {}).items()),
        embedded_index=parse_embedded_index(_flat_index_names(embedded_index, leaves), leaves.flat),
    )


WRITE_OPTION_NAMES: tuple[str, ...] = tuple(
    name for name in inspect.signature(_build_write_options).parameters if name != "column_names"
)
"""The keyword arguments :func:`make_write_options` takes (pyarrow's names)."""


_P = ParamSpec("_P")
_R = TypeVar("_R")


def public_keywords(public_name: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Check a call's arguments against the signature first, so that a misspelt keyword
    names ``public_name`` (not an internal function) and suggests the closest keyword."""

    def decorate(function: Callable[_P, _R]) -> Callable[_P, _R]:
        signature = inspect.signature(function)
        keywords = [
            name
            for name, p in signature.parameters.items()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and name != "self"
        ]

        @functools.wraps(function)
        def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                signature.bind(*args, **kwargs)
            except TypeError as exc:
                unknown = [k for k in kwargs if k not in signature.parameters]
                if not unknown:
                    raise TypeError(f"{public_name}(): {exc}") from None
                name = unknown[0]
                close = difflib.get_close_matches(name, keywords, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise TypeError(
                    f"{public_name}() got an unexpected keyword argument {name!r}.{hint} "
                    f"It takes {', '.join(keywords)}."
                ) from None
            return function(*args, **kwargs)

        return checked

    return decorate


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    """When and how a table compacts (the decisions are documented in the README, "Compaction").

    Attributes:
        dead_ratio: compact a segment whose dead bytes exceed this share of its size.
        dead_bytes: ... or exceed this many bytes.
        min_small_row_groups: compact a partition whose eligible segments hold this many
            small row groups.
        small_fraction: a row group is small below this share of ``target_row_group_rows``.
        target_row_group_rows: rows per merged row group; None: the table's row_group_size.
        max_row_groups: compact a segment holding more row groups (the AAD ordinal limit of
            encrypted files is 32767).
        idle_seconds: a partition's newest segment is eligible after no rows came for it
            this long (background compaction; ``compact()`` takes it at once).
        sort_by_timestamp: merged rows are sorted by the designated timestamp (everything is
            then re-encoded).
        grace_seconds: retired segments stay on disk this long for readers of other
            processes (readers of this process pin them, :meth:`Table.snapshot`).

    Raises:
        ConfigError: a field is out of range (the message names it).
    """

    dead_ratio: float = 0.5
    dead_bytes: int = 1 << 30
    min_small_row_groups: int = 64
    small_fraction: float = 0.5
    target_row_group_rows: int | None = None
    max_row_groups: int = 30_000
    idle_seconds: float = 60.0
    sort_by_timestamp: bool = False
    grace_seconds: float = 60.0

    def __post_init__(self) -> None:
        checks = (
            ("dead_ratio", 0 < self.dead_ratio <= 1),
            ("dead_bytes", self.dead_bytes >= 1),
            ("min_small_row_groups", self.min_small_row_groups >= 1),
            ("small_fraction", 0 < self.small_fraction <= 1),
            ("target_row_group_rows", (self.target_row_group_rows or 1) >= 1),
            ("max_row_groups", 1 <= self.max_row_groups <= 32767),
            ("idle_seconds", self.idle_seconds >= 0 and math.isfinite(self.idle_seconds)),
            ("grace_seconds", self.grace_seconds >= 0 and math.isfinite(self.grace_seconds)),
        )
        for name, ok in checks:
            if not ok:
                raise ConfigError(f"CompactionPolicy.{name} is out of range: {self!r}.")
