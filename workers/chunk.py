"""Column chunk encoder: one column's values for one row group -> position-independent bytes.

Output layout (offsets relative to the chunk start; the file writer rebases them)::

    chunk := [dictionary page] data page*           (pages as in workers.page)

The chunk is cut into a dictionary part and a fallback part (rules in :mod:`workers.choose`):
the dictionary holds distinct values in first-occurrence order, so when its PLAIN size would
pass ``dictionary_page_size_limit`` the chunk is cut at the first value whose entry does not
fit; the rows before the cut are RLE_DICTIONARY pages, the rows from the cut on are pages of the
fallback encoding. Each part is split into pages of at most ``data_page_row_limit`` rows and
about ``data_page_size`` encoded bytes (estimated before compression from the value widths).
Each RLE_DICTIONARY page takes the bit width of its own largest index (at least 1), so the
early pages of a chunk, which use only the first entries, are narrower.

Rows are records: a nested leaf (``max_repetition_level > 0``) has level entries, records
starting at repetition level 0 (:mod:`workers.levels`). Every cut (pages, the dictionary
fallback) falls on a record start, so a record never spans two pages; a record whose values
cross the dictionary cut goes whole to the fallback part. Counts follow parquet-format::

    DataPageHeader.num_values     level entries of the page
    DataPageHeaderV2.num_values   level entries; num_nulls entries below max_def; num_rows records
    ColumnMetaData.num_values     level entries of the chunk
    Statistics.null_count         entries below max_def (null and empty lists count, as pyarrow)
    OffsetIndex.first_row_index   records before the page
    SizeStatistics / ColumnIndex  level histograms: definition (max_def > 0), repetition
                                  (max_rep > 0), one per chunk, concatenated per page

Alongside the bytes it returns the ColumnMetaData (with ``data_page_offset`` and
``dictionary_page_offset`` relative to the chunk), chunk Statistics, SizeStatistics,
PageEncodingStats, the ColumnIndex, the OffsetIndex (relative ``offset``s) and the serialized
bloom filter (BloomFilterHeader + bitset) of the chunk's distinct values.

Encrypted columns (``crypto`` given; spec 7.3): every page is sealed as in :mod:`workers.page`
with its data page ordinal, and the bloom filter becomes two modules,
``enc(BloomFilterHeader) enc(bitset)`` (``BLOOM_FILTER_HEADER`` and ``BLOOM_FILTER_BITSET``,
AES-GCM). Sizes and page locations count the stored (encrypted) bytes. The ColumnMetaData and
the page index stay plaintext here: their offsets are rebased by the file writer, which
encrypts them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from streamwrite.format import structs as t
from streamwrite.format.aad import ModuleType
from streamwrite.format.chunk import ChunkObservation, EncodedChunk, EncodingDecision
from streamwrite.format.enums import Encoding, PageType, Type
from streamwrite.format.thrift.codec import serialize
from streamwrite.options import ColumnOptions, DataPageVersion
from workers.bloom import SplitBlockBloomFilter, hash_values, optimal_num_bytes
from workers.choose import apply_decision, choose_encodings
from workers.encoding.dictionary import dictionary_encode, encode_dictionary_indices
from workers.encoding.plain import encode_plain
from workers.encodings import check_encoding, encode_values
from workers.levels import PageLevels, RecordMap, page_levels, record_map
from workers.page import (
    BuiltPage,
    ChunkCrypto,
    build_data_page_v1,
    build_data_page_v2,
    build_dictionary_page,
)
from workers.stats import SortOrder, ValueStats, boundary_order, compute_stats, count_nans
from workers.values import BinaryValues, count_values

__all__ = ["ChunkCrypto", "ChunkSettings", "EncodedChunk", "encode_chunk"]

_FIXED_WIDTH = {Type.INT32: 4, Type.INT64: 8, Type.INT96: 12, Type.FLOAT: 4, Type.DOUBLE: 8}


@dataclass(frozen=True, slots=True)
class ChunkSettings:
    """Everything about a column that the encoder needs (picklable).

    It stays in ring 2 while :class:`~streamwrite.format.chunk.EncodedChunk`, the encoder's
    output, is in ``format``: it holds a :class:`~streamwrite.options.ColumnOptions`, and
    ``options`` ranks above ``format``.
    """

    path_in_schema: tuple[str, ...]
    physical_type: Type
    type_length: int | None
    max_definition_level: int
    sort_order: SortOrder
    column: ColumnOptions
    data_page_size: int
    data_page_row_limit: int
    dictionary_page_size_limit: int
    data_page_version: DataPageVersion
    write_page_index: bool
    write_page_checksum: bool
    statistics_truncate_length: int
    max_repetition_level: int = 0
    """Repetition levels are written (and ``encode_chunk`` takes them) when above 0."""
    dictionary_typed: bool = False
    """The Arrow column is dictionary-typed: pyarrow reads only PLAIN/dictionary pages into it."""
    decision: EncodingDecision | None = None
    """The encoding decided earlier for this column (the planner's), or None to analyse the
    chunk's values (:func:`workers.choose.choose_encodings`)."""
    check_cardinality: bool = True
    """With a no-dictionary ``decision``: estimate the distinct count on a sample to report
    drift towards a dictionary (the planner asks only every few chunks)."""


def _take(values: Any, index: npt.NDArray[np.intp]) -> Any:
    return values.take(index) if isinstance(values, BinaryValues) else values[index]


def _plain_entry_sizes(values: Any, settings: ChunkSettings) -> npt.NDArray[np.int64]:
    """PLAIN-encoded bytes of each value (BOOLEAN counts a byte; only used for sizing)."""
    if isinstance(values, BinaryValues):
        return values.lengths + 4
    width = _FIXED_WIDTH.get(settings.physical_type, settings.type_length or 1)
    return np.full(count_values(values), width, dtype=np.int64)


class _PageSplitter:
    """Cuts a record range into pages by record count and estimated encoded value bytes.

    Pages end only at record starts (``records`` maps records to values), so a record never
    spans two pages; a page holds at least one record.
    """

    def __init__(self, settings: ChunkSettings, records: RecordMap):
        self._settings = settings
        self._records = records

    def split(
        self, row_start: int, row_stop: int, value_sizes: npt.NDArray[np.int64] | float
    ) -> list[tuple[int, int]]:
        """Record ranges of the pages; ``value_sizes`` is one bytes-per-value figure or per
        value."""
        records = self._records
        limit_bytes = self._settings.data_page_size
        cum = None
        if isinstance(value_sizes, np.ndarray):
            cum = np.zeros(value_sizes.shape[0] + 1, dtype=np.int64)
            np.cumsum(value_sizes, out=cum[1:])
            base = records.value_of(row_start)
        pages = []
        row = row_start
        while row < row_stop:
            first_value = records.value_of(row)
            if cum is None:
                width = float(value_sizes)
                value_stop = first_value + max(1, int(limit_bytes / width) if width else 1 << 62)
            else:
                local = first_value - base
                fit = int(np.searchsorted(cum, cum[local] + limit_bytes, side="right")) - 1
                value_stop = base + max(fit, local + 1)
            end = min(row + self._settings.data_page_row_limit, row_stop)
            if value_stop < records.value_of(row_stop):
                # (When every remaining value fits, so do the records without values after.)
                end = min(end, max(records.row_at_or_before_value(value_stop), row + 1))
            pages.append((row, end))
            row = end
        return pages


def _statistics(stats: ValueStats, null_count: int, nan_count: int | None) -> t.Statistics:
    return t.Statistics(
        null_count=null_count,
        nan_count=nan_count,
        min_value=stats.min_value,
        max_value=stats.max_value,
        is_min_value_exact=stats.is_min_value_exact if stats.min_value is not None else None,
        is_max_value_exact=stats.is_max_value_exact if stats.max_value is not None else None,
    )


def _bloom_filter(
    distinct: Any, settings: ChunkSettings, crypto: ChunkCrypto | None
) -> bytes | None:
    options = settings.column.bloom_filter
    if options is None:
        return None
    hashes = np.unique(hash_values(distinct, settings.physical_type))
    # Sized for the distinct values seen, capped by the declared ndv (pyarrow caps by rows).
    seen = max(1, int(hashes.shape[0]))
    ndv = seen if options.ndv is None else min(options.ndv, seen)
    bloom = SplitBlockBloomFilter(optimal_num_bytes(ndv, options.fpp))
    bloom.insert_hashes(hashes)
    bitset = bloom.bitset
    header = t.BloomFilterHeader(
        numBytes=len(bitset),
        algorithm=t.BloomFilterAlgorithm(BLOCK=t.SplitBlockAlgorithm()),
        hash=t.BloomFilterHash(XXHASH=t.XxHash()),
        compression=t.BloomFilterCompression(UNCOMPRESSED=t.Uncompressed()),
    )
    if crypto is not None:
        return crypto.encrypt(ModuleType.BLOOM_FILTER_HEADER, serialize(header)) + crypto.encrypt(
            ModuleType.BLOOM_FILTER_BITSET, bitset
        )
    return serialize(header) + bitset


class _ChunkBuilder:
    """Accumulates pages and their page-index entries; ``finish()`` makes the EncodedChunk."""

    def __init__(self, settings: ChunkSettings) -> None:
        self.settings = settings
        self.parts: list[bytes] = []
        self.size = 0
        self.total_uncompressed_size = 0
        self.dictionary_page_offset: int | None = None
        self.data_page_offset: int | None = None
        self.encoding_counts: dict[tuple[PageType, Encoding], int] = {}
        self.locations: list[t.PageLocation] = []
        self.page_stats: list[ValueStats | None] = []
        self.page_null_counts: list[int] = []
        self.page_null_flags: list[bool] = []
        self.page_byte_array_sizes: list[int] = []
        self.page_def_histograms: list[int] = []
        self.page_rep_histograms: list[int] = []

    def add(self, page: BuiltPage, page_type: PageType, encoding: Encoding) -> int:
        offset = self.size
        self.parts.append(page.data)
        self.size += len(page.data)
        self.total_uncompressed_size += page.uncompressed_total_size
        key = (page_type, encoding)
        self.encoding_counts[key] = self.encoding_counts.get(key, 0) + 1
        return offset

    def add_data_page(
        self,
        page: BuiltPage,
        encoding: Encoding,
        first_row: int,
        stats: ValueStats | None,
        levels: PageLevels,
        byte_array_size: int,
    ) -> None:
        page_type = (
            PageType.DATA_PAGE_V2
            if self.settings.data_page_version == DataPageVersion.V2
            else PageType.DATA_PAGE
        )
        offset = self.add(page, page_type, encoding)
        if self.data_page_offset is None:
            self.data_page_offset = offset
        self.locations.append(
            t.PageLocation(
                offset=offset, compressed_page_size=len(page.data), first_row_index=first_row
            )
        )
        self.page_stats.append(stats)
        self.page_null_counts.append(levels.num_entries - levels.num_values)
        self.page_null_flags.append(levels.num_values == 0)
        self.page_byte_array_sizes.append(byte_array_size)
        self.page_def_histograms.extend(levels.def_histogram)
        self.page_rep_histograms.extend(levels.rep_histogram)


def _index_range(page_indices: npt.NDArray[np.int32], num_entries: int) -> int:
    """The dictionary size a page's index bit width is taken from: one past its largest index.

    Entries are in first-occurrence order, so early pages of a chunk use only the first
    entries and take narrower indices (pyarrow narrows by the dictionary's size when the page
    is cut; a page's own largest index narrows as far). Never below 2 entries (width 1) unless
    the dictionary has one entry: width 0 only where pyarrow writes it too.
    """
    if num_entries <= 2 or page_indices.shape[0] == 0:
        return num_entries
    return min(num_entries, max(2, int(page_indices.max()) + 1))


def _data_page(
    settings: ChunkSettings,
    value_bytes: bytes,
    levels: PageLevels,
    encoding: Encoding,
    crypto: ChunkCrypto | None,
    page_ordinal: int,
) -> BuiltPage:
    column = settings.column
    if settings.data_page_version == DataPageVersion.V2:
        return build_data_page_v2(
            rep_levels=levels.rep_section,
            def_levels=levels.def_section,
            values=value_bytes,
            num_values=levels.num_entries,
            num_nulls=levels.num_entries - levels.num_values,
            num_rows=levels.num_rows,
            encoding=encoding,
            codec=column.compression,
            compression_level=column.compression_level,
            write_crc=settings.write_page_checksum,
            crypto=crypto,
            page_ordinal=page_ordinal,
        )
    return build_data_page_v1(
        levels=levels.rep_section + levels.def_section,
        values=value_bytes,
        num_values=levels.num_entries,
        encoding=encoding,
        codec=column.compression,
        compression_level=column.compression_level,
        write_crc=settings.write_page_checksum,
        crypto=crypto,
        page_ordinal=page_ordinal,
    )


def encode_chunk(
    settings: ChunkSettings,
    values: Any,
    def_levels: npt.NDArray[np.uint8] | None,
    num_rows: int,
    crypto: ChunkCrypto | None = None,
    dictionary: tuple[Any, npt.NDArray[np.int32]] | None = None,
    rep_levels: npt.NDArray[np.uint8] | None = None,
) -> EncodedChunk:
    """Encode one column chunk.

    Args:
        settings: the column's physical type, levels, options and page limits.
        values: the values of the level entries whose definition level is
            ``settings.max_definition_level``, in the :mod:`workers.values` form.
        def_levels: one definition level per level entry (None when
            ``max_definition_level`` is 0).
        num_rows: records in the chunk (level entries with repetition level 0).
        crypto: the column's cipher and the chunk's row group and column ordinals, when the
            column is encrypted.
        dictionary: ``dictionary_encode(values)`` when the caller has it already (compaction
            merges the source chunks' dictionaries); used if a dictionary is chosen.
        rep_levels: one repetition level per level entry (None when
            ``max_repetition_level`` is 0).

    Returns:
        The chunk bytes with its metadata, page index and bloom filter (pages and bloom
        filter encrypted when ``crypto`` is given).

    Raises:
        ConfigError: an explicitly chosen encoding that cannot encode this column.
        FormatError: the levels disagree with ``num_rows`` or with the values.
        LimitError: an encrypted chunk with more than 32768 data pages or an ordinal above
            32767.
    """
    column = settings.column
    ptype = settings.physical_type
    name = ".".join(settings.path_in_schema)
    if column.encoding is not None:
        check_encoding(column.encoding, ptype, name)
    num_values = count_values(values)
    if settings.max_repetition_level == 0:
        rep_levels = None
    elif rep_levels is None:  # every level entry is a record (checked by record_map)
        num_entries = num_values if def_levels is None else int(def_levels.shape[0])
        rep_levels = np.zeros(num_entries, dtype=np.uint8)
    records = record_map(
        num_rows, num_values, def_levels, rep_levels, settings.max_definition_level, name
    )
    splitter = _PageSplitter(settings, records)
    builder = _ChunkBuilder(settings)
    num_distinct: int | None = None
    drift = False
    if settings.decision is None:
        choice = choose_encodings(
            values, ptype, column, settings.data_page_version, settings.dictionary_typed
        )
        num_distinct = choice.num_distinct
    else:
        choice, drift, num_distinct = apply_decision(
            settings.decision, values, ptype, column, settings.check_cardinality
        )
    fallback = choice.fallback
    truncate = settings.statistics_truncate_length
    want_stats = column.write_statistics

    # Dictionary part: records [0, dict_rows) use entries [0, num_entries) of the dictionary.
    dict_rows = 0
    num_entries = 0
    index_width = 0.0
    indices: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
    distinct: Any = None
    if choice.use_dictionary:
        distinct, indices = choice.dictionary or dictionary or dictionary_encode(values, ptype)
        entry_sizes = _plain_entry_sizes(distinct, settings)
        num_entries = int(
            np.searchsorted(np.cumsum(entry_sizes), settings.dictionary_page_size_limit, "right")
        )
        num_entries = min(num_entries, count_values(distinct))
        cut_value = (
            num_values
            if num_entries == count_values(distinct)
            else int(np.argmax(indices >= num_entries))
        )
        if num_entries > 0 and cut_value > 0:
            if cut_value == num_values:
                dict_rows = num_rows
            else:
                # The cut falls on a record start: a record whose values cross it goes whole
                # to the fallback part, and the dictionary page keeps the entries used before.
                dict_rows = records.row_at_or_before_value(cut_value)
                used_values = records.value_of(dict_rows)
                if used_values == 0:
                    dict_rows = 0
                elif used_values < cut_value:
                    num_entries = int(indices[:used_values].max()) + 1
        if dict_rows > 0:
            page = build_dictionary_page(
                values=encode_plain(distinct[:num_entries], ptype),
                num_values=num_entries,
                codec=column.compression,
                compression_level=column.compression_level,
                write_crc=settings.write_page_checksum,
                crypto=crypto,
            )
            builder.dictionary_page_offset = builder.add(
                page, PageType.DICTIONARY_PAGE, Encoding.PLAIN
            )
            index_width = max(1, (num_entries - 1).bit_length()) / 8.0
        num_distinct = count_values(distinct)
        drift = drift or (settings.decision is not None and dict_rows < num_rows)  # overflowed

    parts: list[tuple[int, int, Encoding | None]] = []
    if dict_rows > 0:
        parts.append((0, dict_rows, None))
    if dict_rows < num_rows or num_rows == 0:
        parts.append((dict_rows, num_rows, fallback))

    for row_start, row_stop, encoding in parts:
        if encoding is None:
            sizes: npt.NDArray[np.int64] | float = index_width
        elif isinstance(values, BinaryValues):
            first, last = records.value_of(row_start), records.value_of(row_stop)
            sizes = _plain_entry_sizes(values[first:last], settings)
        else:
            sizes = float(_FIXED_WIDTH.get(ptype, settings.type_length or 1))
        ranges = splitter.split(row_start, row_stop, sizes) if row_stop > row_start else [(0, 0)]
        for r0, r1 in ranges:
            v0, v1 = records.value_of(r0), records.value_of(r1)
            e0, e1 = records.entry_of(r0), records.entry_of(r1)
            page_values = values[v0:v1]
            if encoding is None:
                page_indices = indices[v0:v1]
                value_bytes = encode_dictionary_indices(
                    page_indices, _index_range(page_indices, num_entries)
                )
                page_encoding = Encoding.RLE_DICTIONARY
            else:
                value_bytes = encode_values(page_values, ptype, encoding)
                page_encoding = encoding
            levels = page_levels(
                None if def_levels is None else def_levels[e0:e1],
                None if rep_levels is None else rep_levels[e0:e1],
                settings.max_definition_level,
                settings.max_repetition_level,
                r1 - r0,
                v1 - v0,
                settings.data_page_version != DataPageVersion.V2,
            )
            page = _data_page(
                settings,
                value_bytes,
                levels,
                page_encoding,
                crypto,
                len(builder.locations),  # the data page ordinal
            )
            stats = None
            if want_stats:
                # A dictionary page's bounds are those of the entries it uses: far fewer values.
                if encoding is not None:
                    page_stats_values = page_values
                elif r0 == 0 and r1 == dict_rows:
                    # The one page of the dictionary part uses every entry (first-occurrence
                    # order puts the entries of rows [0, dict_rows) first).
                    page_stats_values = distinct[:num_entries]
                else:
                    used = np.flatnonzero(np.bincount(indices[v0:v1], minlength=1))
                    page_stats_values = _take(distinct, used)
                stats = compute_stats(
                    page_stats_values, ptype, settings.sort_order, max_size=truncate
                )
            byte_array_size = page_values.total_size if isinstance(page_values, BinaryValues) else 0
            builder.add_data_page(page, page_encoding, r0, stats, levels, byte_array_size)

    # Chunk bounds: over the distinct values when the dictionary covers the whole chunk; a
    # chunk of one data page has that page's bounds (computed over the same values).
    stats_values = distinct if dict_rows == num_rows and distinct is not None else values
    decision = settings.decision
    observed = ChunkObservation(
        decision=choice.decision if decision is None else decision,
        analysed=decision is None,
        drift=drift,
        num_values=num_values,
        num_distinct=num_distinct,
    )
    return _finish(
        settings,
        builder,
        values,
        stats_values,
        records.num_entries,
        num_values,
        distinct,
        crypto,
        observed,
    )


def _finish(
    settings: ChunkSettings,
    builder: _ChunkBuilder,
    values: Any,
    stats_values: Any,
    num_level_entries: int,
    num_values: int,
    distinct: Any,
    crypto: ChunkCrypto | None,
    observed: ChunkObservation,
) -> EncodedChunk:
    ptype = settings.physical_type
    null_count = num_level_entries - num_values
    statistics = None
    if settings.column.write_statistics:
        page_stats = builder.page_stats
        if len(page_stats) == 1 and page_stats[0] is not None:
            chunk_stats = page_stats[0]
        else:
            chunk_stats = compute_stats(
                stats_values,
                ptype,
                settings.sort_order,
                max_size=settings.statistics_truncate_length,
            )
        nans = count_nans(values, ptype, settings.sort_order)
        statistics = _statistics(chunk_stats, null_count, nans)
    max_def = settings.max_definition_level
    max_rep = settings.max_repetition_level
    is_byte_array = ptype == Type.BYTE_ARRAY
    size_statistics = t.SizeStatistics(
        unencoded_byte_array_data_bytes=(
            sum(builder.page_byte_array_sizes) if is_byte_array else None
        ),
        repetition_level_histogram=(
            _sum_histograms(builder.page_rep_histograms, max_rep) if max_rep > 0 else None
        ),
        definition_level_histogram=(
            _sum_histograms(builder.page_def_histograms, max_def) if max_def > 0 else None
        ),
    )
    encodings: list[Encoding] = []
    for _, encoding in builder.encoding_counts:
        if encoding not in encodings:
            encodings.append(encoding)
    if (max_def > 0 or max_rep > 0) and Encoding.RLE not in encodings:
        encodings.append(Encoding.RLE)
    meta = t.ColumnMetaData(
        type=ptype,
        encodings=encodings,
        path_in_schema=list(settings.path_in_schema),
        codec=settings.column.compression,
        num_values=num_level_entries,
        total_uncompressed_size=builder.total_uncompressed_size,
        total_compressed_size=builder.size,
        data_page_offset=builder.data_page_offset or 0,
        dictionary_page_offset=builder.dictionary_page_offset,
        statistics=statistics,
        encoding_stats=[
            t.PageEncodingStats(page_type=page_type, encoding=encoding, count=count)
            for (page_type, encoding), count in builder.encoding_counts.items()
        ],
        size_statistics=size_statistics,
    )
    column_index = None
    offset_index = None
    if settings.write_page_index:
        offset_index = t.OffsetIndex(
            page_locations=builder.locations,
            unencoded_byte_array_data_bytes=(
                builder.page_byte_array_sizes if is_byte_array else None
            ),
        )
        column_index = _column_index(settings, builder)
    if distinct is None and settings.column.bloom_filter is not None:
        distinct = values
    bloom = _bloom_filter(distinct, settings, crypto) if distinct is not None else None
    return EncodedChunk(
        data=b"".join(builder.parts),
        meta_data=meta,
        column_index=column_index,
        offset_index=offset_index,
        bloom_filter=bloom,
        observed=observed,
    )


def _sum_histograms(per_page: list[int], max_level: int) -> list[int]:
    """The chunk's level histogram: the pages' histograms (concatenated) added up."""
    if len(per_page) == max_level + 1:
        return list(per_page)
    sums = np.asarray(per_page, dtype=np.int64).reshape(-1, max_level + 1).sum(axis=0)
    return [int(c) for c in sums]


def _column_index(settings: ChunkSettings, builder: _ChunkBuilder) -> t.ColumnIndex | None:
    """The ColumnIndex, or None when a non-null page has no bounds (all NaN, no statistics)."""
    if not settings.column.write_statistics or settings.sort_order == SortOrder.UNDEFINED:
        return None
    mins: list[bytes | None] = []
    maxs: list[bytes | None] = []
    for stats, is_null in zip(builder.page_stats, builder.page_null_flags, strict=True):
        if is_null:
            mins.append(None)
            maxs.append(None)
            continue
        if stats is None or stats.min_value is None or stats.max_value is None:
            return None
        mins.append(stats.min_value)
        maxs.append(stats.max_value)
    return t.ColumnIndex(
        null_pages=list(builder.page_null_flags),
        min_values=[b"" if m is None else m for m in mins],
        max_values=[b"" if m is None else m for m in maxs],
        boundary_order=boundary_order(mins, maxs, settings.sort_order, settings.physical_type),
        null_counts=list(builder.page_null_counts),
        repetition_level_histograms=(
            list(builder.page_rep_histograms) if settings.max_repetition_level > 0 else None
        ),
        definition_level_histograms=(
            list(builder.page_def_histograms) if settings.max_definition_level > 0 else None
        ),
    )
