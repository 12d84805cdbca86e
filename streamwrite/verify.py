"""``verify``: walk every page of a Parquet file and check it against its metadata.

Checks, per column chunk: every page header decodes, sizes fit, CRC32s match (when present),
pages decode, the rows add up to the row group's; the OffsetIndex lists exactly the data pages
found (offset, size including header, first row); the ColumnIndex has one entry per data page
with matching null pages and null counts; the bloom filter header decodes, its bitset lies in
the file, and every value of the chunk is found in it (a bloom filter has no false negatives).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from streamwrite.errors import StreamwriteError
from streamwrite.format import structs as t
from streamwrite.format.enums import PageType
from streamwrite.format.thrift import deserialize
from streamwrite.reader import ParquetFile, Source
from workers.bloom import SplitBlockBloomFilter, hash_values
from workers.decode import DecodedChunk

__all__ = ["VerifyReport", "verify_file"]


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


def _check_offset_index(pf: ParquetFile, chunk: t.ColumnChunk, decoded: DecodedChunk, where: str) -> list[str]:
    if chunk.offset_index_offset is None:
        return []
    index, _ = deserialize(
        t.OffsetIndex, pf.read_bytes(chunk.offset_index_offset, chunk.offset_index_length or 0)
    )
    data_pages = [p for p in decoded.pages if p.page_type != PageType.DICTIONARY_PAGE]
    locations = index.page_locations or []
    if len(locations) != len(data_pages):
        return [f"{where}: OffsetIndex lists {len(locations)} pages, the chunk has {len(data_pages)}."]
    problems = []
    first_row = 0
    for n, (location, page) in enumerate(zip(locations, data_pages, strict=True)):
        expected = (page.offset, page.size, first_row)
        found = (location.offset, location.compressed_page_size, location.first_row_index)
        if found != expected:
            problems.append(f"{where}: OffsetIndex page {n} is {found}, the page is {expected}.")
        first_row += page.num_rows
    return problems


def _check_column_index(pf: ParquetFile, chunk: t.ColumnChunk, decoded: DecodedChunk, where: str) -> list[str]:
    if chunk.column_index_offset is None:
        return []
    index, _ = deserialize(
        t.ColumnIndex, pf.read_bytes(chunk.column_index_offset, chunk.column_index_length or 0)
    )
    data_pages = [p for p in decoded.pages if p.page_type != PageType.DICTIONARY_PAGE]
    null_pages = index.null_pages or []
    if len(null_pages) != len(data_pages):
        return [f"{where}: ColumnIndex has {len(null_pages)} pages, the chunk has {len(data_pages)}."]
    problems = []
    for n, page in enumerate(data_pages):
        if bool(null_pages[n]) != (page.num_nulls == page.num_rows and page.num_rows > 0):
            problems.append(f"{where}: ColumnIndex null_pages[{n}] is {null_pages[n]}.")
        if index.null_counts is not None and index.null_counts[n] != page.num_nulls:
            problems.append(
                f"{where}: ColumnIndex null_counts[{n}] is {index.null_counts[n]}, "
                f"the page has {page.num_nulls} nulls."
            )
    return problems


def _check_bloom_filter(pf: ParquetFile, meta: t.ColumnMetaData, decoded: DecodedChunk, where: str) -> list[str]:
    if meta.bloom_filter_offset is None:
        return []
    available = pf.footer_offset - meta.bloom_filter_offset
    length = meta.bloom_filter_length or min(available, 64 * 1024 * 1024 + 64)
    data = pf.read_bytes(meta.bloom_filter_offset, length)
    header, end = deserialize(t.BloomFilterHeader, data)
    if header.numBytes is None or end + header.numBytes > len(data):
        return [f"{where}: bloom filter bitset runs past its bytes."]
    bloom = SplitBlockBloomFilter.from_bitset(bytes(data[end : end + header.numBytes]))
    assert meta.type is not None
    hashes = hash_values(decoded.values, t.Type(meta.type))
    missing = int(np.count_nonzero(~bloom.check_hashes(hashes)))
    if missing:
        return [f"{where}: {missing} values of the chunk are missing from its bloom filter."]
    return []


def verify_file(source: Source) -> VerifyReport:
    """Walk every page of a file and check it against the metadata.

    Returns:
        The report; a file that cannot even be opened reports that as its one problem.
    """
    report = VerifyReport()
    try:
        pf = ParquetFile(source, verify_checksums=True)
    except StreamwriteError as exc:
        report.problems.append(f"cannot open: {exc}")
        return report
    with pf:
        report.num_row_groups = pf.num_row_groups
        for i, row_group in enumerate(pf.metadata.row_groups or []):
            for spec in pf.parquet_schema.columns:
                where = f"row group {i} column {spec.name!r}"
                chunk = (row_group.columns or [])[spec.index]
                try:
                    decoded = pf.decode_column_chunk(i, spec)
                    report.num_pages += len(decoded.pages)
                    assert chunk.meta_data is not None
                    report.problems += _check_offset_index(pf, chunk, decoded, where)
                    report.problems += _check_column_index(pf, chunk, decoded, where)
                    report.problems += _check_bloom_filter(pf, chunk.meta_data, decoded, where)
                except StreamwriteError as exc:
                    report.problems.append(f"{where}: {exc}")
    return report
