"""``verify``: walk every page of a Parquet file and check it against its metadata.

Checks, per column chunk: every page header decodes, sizes fit, CRC32s match (when present),
pages decode, the rows add up to the row group's; the chunk Statistics (``null_count``, and
``min_value``/``max_value`` under the column's sort order) bound the decoded values; the
OffsetIndex lists exactly the data pages found (offset, size including header, first row); the
ColumnIndex has one entry per data page with matching null pages and null counts; the bloom
filter header decodes, its bitset lies in the file, and every value of the chunk is found in it
(a bloom filter has no false negatives). Every problem names the absolute byte offset involved.

Encrypted files (given a :class:`~streamwrite.crypto.decryption.DecryptionConfig`): every module is
decrypted and, under AES-GCM, authenticated: the footer (or its signature), each chunk's
ColumnMetaData, page headers and pages, ColumnIndex, OffsetIndex, bloom filter header and bitset
(modules 8 and 9). A module that fails is a problem naming it (type, row group, column, page).
Page bodies of ``AES_GCM_CTR_V1`` files are CTR-encrypted and have no tag to check.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from streamwrite.arrow.schema import ColumnSpec
from streamwrite.crypto.decryption import ChunkDecryptor, DecryptionConfig
from streamwrite.errors import CorruptFileError, StreamwriteError
from streamwrite.format import structs as t
from streamwrite.format.aad import ModuleType
from streamwrite.format.enums import PageType
from streamwrite.format.thrift.codec import deserialize
from streamwrite.reader.file import ParquetFile
from streamwrite.reader.tail import Source
from workers.bloom import SplitBlockBloomFilter, hash_values
from workers.decode import KERNEL_ERRORS, DecodedChunk, PageInfo
from workers.stats import SortOrder, compute_stats, decode_stat

__all__ = ["VerifyReport", "verify_file"]

Progress = Callable[[Iterable[int], int, str], Iterator[int]]
"""Wraps an iterable of ``total`` items with a progress display named ``desc``."""

_MAX_BLOOM_FILTER_SIZE = 128 * 1024 * 1024 + 64
"""A bloom filter header plus bitset larger than this is refused (spec maximum is 128 MiB)."""


@dataclass
class VerifyReport:
    """What ``verify`` found: ``problems`` is empty for a sound file."""

    num_pages: int = 0
    num_row_groups: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems


def _data_pages(decoded: DecodedChunk) -> list[PageInfo]:
    return [p for p in decoded.pages if p.page_type != PageType.DICTIONARY_PAGE]


def _leaf_only_nulls(decoded: DecodedChunk, max_definition_level: int) -> list[int]:
    """Per data page, the entries whose leaf alone is null (definition level max - 1).

    A nested leaf's null count is the entries without a value (its parents' nulls
    included); pyarrow writes only these for dictionary-encoded nested leaves, so both counts
    are accepted for nested leaves.
    """
    levels = decoded.def_levels
    pages = _data_pages(decoded)
    if levels is None or max_definition_level == 0:
        return [0] * len(pages)
    ends = np.cumsum([page.num_values for page in pages])
    if not ends.shape[0] or ends[-1] != levels.shape[0]:
        return [-1] * len(pages)  # levels and pages disagree: accept no alternative
    leaf_null = np.concatenate([[0], np.cumsum(levels == max_definition_level - 1)])
    starts = np.concatenate([[0], ends[:-1]])
    return [int(c) for c in leaf_null[ends] - leaf_null[starts]]


def _index_bytes(
    pf: ParquetFile,
    offset: int,
    length: int | None,
    cipher: ChunkDecryptor | None,
    module_type: ModuleType,
) -> bytes | memoryview:
    """A page index structure's bytes at ``offset``, decrypted (and authenticated) if needed."""
    data = pf.read_bytes(offset, length or 0)
    if cipher is None:
        return data
    plain, used = cipher.decrypt(module_type, data)
    if used != len(data):
        raise CorruptFileError(
            f"The {module_type.name} module takes {used} of the {len(data)} bytes its "
            "length in the ColumnChunk gives.",
            offset,
        )
    return plain


def _check_offset_index(
    pf: ParquetFile,
    chunk: t.ColumnChunk,
    decoded: DecodedChunk,
    where: str,
    cipher: ChunkDecryptor | None,
) -> list[str]:
    offset = chunk.offset_index_offset
    if offset is None:
        return []
    data = _index_bytes(pf, offset, chunk.offset_index_length, cipher, ModuleType.OFFSET_INDEX)
    index, _ = deserialize(t.OffsetIndex, data)
    at = f"{where}: OffsetIndex at byte offset {offset}"
    data_pages = _data_pages(decoded)
    locations = index.page_locations or []
    if len(locations) != len(data_pages):
        return [f"{at} lists {len(locations)} pages, the chunk has {len(data_pages)}."]
    problems = []
    first_row = 0
    for n, (location, page) in enumerate(zip(locations, data_pages, strict=True)):
        expected = (page.offset, page.size, first_row)
        found = (location.offset, location.compressed_page_size, location.first_row_index)
        if found != expected:
            problems.append(
                f"{at}: page {n} is (offset, size, first row) {found}, but the page at byte "
                f"offset {page.offset} is {expected}."
            )
        first_row += page.num_rows
    return problems


def _check_column_index(
    pf: ParquetFile,
    chunk: t.ColumnChunk,
    spec: ColumnSpec,
    decoded: DecodedChunk,
    where: str,
    cipher: ChunkDecryptor | None,
) -> list[str]:
    offset = chunk.column_index_offset
    if offset is None:
        return []
    data = _index_bytes(pf, offset, chunk.column_index_length, cipher, ModuleType.COLUMN_INDEX)
    index, _ = deserialize(t.ColumnIndex, data)
    at = f"{where}: ColumnIndex at byte offset {offset}"
    data_pages = _data_pages(decoded)
    null_pages = index.null_pages or []
    if len(null_pages) != len(data_pages):
        return [f"{at} has {len(null_pages)} pages, the chunk has {len(data_pages)}."]
    null_counts = index.null_counts
    if null_counts is not None and len(null_counts) != len(data_pages):
        return [f"{at} has {len(null_counts)} null counts for {len(data_pages)} pages."]
    problems = []
    alternative: list[tuple[int, ...]] = [()] * len(data_pages)
    if spec.is_nested:
        alternative = [(c,) for c in _leaf_only_nulls(decoded, spec.max_definition_level)]
    for n, page in enumerate(data_pages):
        if bool(null_pages[n]) != (page.num_nulls == page.num_values and page.num_values > 0):
            problems.append(
                f"{at}: null_pages[{n}] is {null_pages[n]} for the page at byte offset "
                f"{page.offset} with {page.num_nulls} nulls in {page.num_values} values."
            )
        if null_counts is not None and null_counts[n] not in (page.num_nulls, *alternative[n]):
            problems.append(
                f"{at}: null_counts[{n}] is {null_counts[n]}, the page at byte offset "
                f"{page.offset} has {page.num_nulls} nulls."
            )
    return problems


def _bloom_bitset(
    data: memoryview, cipher: ChunkDecryptor | None, at: str
) -> tuple[bytes | None, list[str]]:
    """The bitset of a bloom filter (header then bitset; two modules when encrypted)."""
    if cipher is None:
        header, end = deserialize(t.BloomFilterHeader, data)
        size = header.numBytes
        if size is None or size < 0 or end + size > len(data):
            return None, [f"{at}: its bitset of {size} bytes runs past its {len(data)} bytes."]
        return bytes(data[end : end + size]), []
    plain, end = cipher.decrypt(ModuleType.BLOOM_FILTER_HEADER, data)
    header, _ = deserialize(t.BloomFilterHeader, plain)  # zero padding may follow
    bitset, _ = cipher.decrypt(ModuleType.BLOOM_FILTER_BITSET, data[end:])
    if header.numBytes != len(bitset):
        return None, [
            f"{at}: its header says {header.numBytes} bytes, its bitset has {len(bitset)}."
        ]
    return bitset, []


def _check_bloom_filter(
    pf: ParquetFile,
    meta: t.ColumnMetaData,
    spec: ColumnSpec,
    decoded: DecodedChunk,
    where: str,
    cipher: ChunkDecryptor | None,
) -> list[str]:
    offset = meta.bloom_filter_offset
    if offset is None:
        return []
    at = f"{where}: bloom filter at byte offset {offset}"
    available = pf.footer_offset - offset
    length = meta.bloom_filter_length or min(available, _MAX_BLOOM_FILTER_SIZE)
    bitset, problems = _bloom_bitset(pf.read_bytes(offset, length), cipher, at)
    if bitset is None:
        return problems
    bloom = SplitBlockBloomFilter.from_bitset(bitset)
    hashes = hash_values(decoded.values, spec.physical_type)
    missing = int(np.count_nonzero(~bloom.check_hashes(hashes)))
    if missing:
        return [f"{at}: {missing} values of the chunk are missing from it."]
    return []


def _check_statistics(
    meta: t.ColumnMetaData, spec: ColumnSpec, decoded: DecodedChunk, where: str
) -> list[str]:
    stats = meta.statistics
    if stats is None:
        return []
    at = f"{where}: Statistics in the footer"
    problems = []
    nulls = decoded.num_levels - len(decoded.values)  # level entries without a value
    accepted = {nulls}
    if spec.is_nested:
        accepted.add(sum(_leaf_only_nulls(decoded, spec.max_definition_level)))
    if stats.null_count is not None and stats.null_count not in accepted:
        problems.append(f"{at} say {stats.null_count} nulls, the chunk has {nulls}.")
    order = spec.sort_order
    if order == SortOrder.UNDEFINED or (stats.min_value is None and stats.max_value is None):
        return problems
    actual = compute_stats(decoded.values, spec.physical_type, order)
    if actual.min_value is None or actual.max_value is None:
        return problems
    low = decode_stat(actual.min_value, order, spec.physical_type)
    high = decode_stat(actual.max_value, order, spec.physical_type)
    if stats.min_value is not None:
        bound = decode_stat(stats.min_value, order, spec.physical_type)
        if not _is_nan(bound) and bound > low:
            problems.append(f"{at}: min_value {bound!r} is above the smallest value {low!r}.")
    if stats.max_value is not None:
        bound = decode_stat(stats.max_value, order, spec.physical_type)
        if not _is_nan(bound) and bound < high:
            problems.append(f"{at}: max_value {bound!r} is below the largest value {high!r}.")
    return problems


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _run_check(check: Callable[[], list[str]], what: str, where: str) -> list[str]:
    """Run one check; metadata too damaged to check is itself a problem."""
    try:
        return check()
    except StreamwriteError as exc:
        return [f"{where}: the {what} cannot be checked: {exc}"]
    except KERNEL_ERRORS as exc:
        return [f"{where}: the {what} cannot be checked ({type(exc).__name__}: {exc})."]


def _verify_chunk(pf: ParquetFile, i: int, spec: ColumnSpec, report: VerifyReport) -> None:
    where = f"row group {i} column {spec.name!r}"
    chunk = ((pf.thrift_metadata.row_groups or [])[i].columns or [])[spec.index]
    try:
        decoded = pf._decode_column_chunk(i, spec)
        meta = pf._column_metadata(i, spec.index)  # decrypted (cached) when encrypted
        cipher = pf._chunk_decryptor(i, spec.index)
    except StreamwriteError as exc:
        report.problems.append(f"{where}: {exc}")
        return
    report.num_pages += len(decoded.pages)
    report.problems += _run_check(
        lambda: _check_statistics(meta, spec, decoded, where), "statistics", where
    )
    report.problems += _run_check(
        lambda: _check_offset_index(pf, chunk, decoded, where, cipher), "OffsetIndex", where
    )
    report.problems += _run_check(
        lambda: _check_column_index(pf, chunk, spec, decoded, where, cipher),
        "ColumnIndex",
        where,
    )
    report.problems += _run_check(
        lambda: _check_bloom_filter(pf, meta, spec, decoded, where, cipher),
        "bloom filter",
        where,
    )


def verify_file(
    source: Source,
    *,
    decryption: DecryptionConfig | None = None,
    snapshot: int | None = None,
    progress: Progress | None = None,
) -> VerifyReport:
    """Walk every page of a file and check it against the metadata.

    Args:
        source: A path, file object or the file's bytes (a live-file directory: its newest
            commit).
        decryption: Keys of an encrypted file; with them every module is authenticated.
        snapshot: Check only this committed prefix (a live file's committed size).
        progress: Wraps the iteration over row groups (``progress(items, total, desc)``),
            for a progress display.

    Returns:
        The report; a file that cannot even be opened reports that as its one problem (an
        encrypted footer without keys: "needs decryption keys"). Nested columns are checked
        leaf by leaf (null counts count level entries without a value).
    """
    report = VerifyReport()
    try:
        pf = ParquetFile(source, verify_checksums=True, decryption=decryption, snapshot=snapshot)
    except StreamwriteError as exc:
        report.problems.append(f"cannot open: {exc}")
        return report
    with pf:
        report.num_row_groups = pf.num_row_groups
        indexes: Iterable[int] = range(pf.num_row_groups)
        if progress is not None:
            indexes = progress(indexes, pf.num_row_groups, "row groups")
        for i in indexes:
            for spec in pf._parquet_schema.columns:
                _verify_chunk(pf, i, spec, report)
    return report
