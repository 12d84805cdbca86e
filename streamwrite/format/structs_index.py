"""Page index and Bloom filter structs (``parquet.thrift``; PageIndex.md, BloomFilter.md).

Field names and ids are those of apache/parquet-format ``src/main/thrift/parquet.thrift``.
Re-exported by :mod:`streamwrite.format.structs`; see :mod:`streamwrite.format.thrift` for the
field declaration helpers and the wire format.
"""

# tfield() returns a dataclasses.field (like field(), it is not a shared mutable default).
# ruff: noqa: RUF009

from __future__ import annotations

from dataclasses import dataclass

from streamwrite.format.enums import BoundaryOrder
from streamwrite.format.thrift.plan import (
    BINARY,
    BOOL,
    I32,
    I64,
    enum_of,
    list_of,
    struct_of,
    tfield,
    thrift_union,
)

__all__ = [
    "BloomFilterAlgorithm",
    "BloomFilterCompression",
    "BloomFilterHash",
    "BloomFilterHeader",
    "ColumnIndex",
    "OffsetIndex",
    "PageLocation",
    "SplitBlockAlgorithm",
    "Uncompressed",
    "XxHash",
]


@dataclass(slots=True, kw_only=True)
class PageLocation:
    """Where one data page is: absolute offset, size including header, first row."""

    offset: int | None = tfield(1, I64, required=True)
    compressed_page_size: int | None = tfield(2, I32, required=True)
    first_row_index: int | None = tfield(3, I64, required=True)


@dataclass(slots=True, kw_only=True)
class OffsetIndex:
    """Page locations of one column chunk (page index)."""

    page_locations: list[PageLocation] | None = tfield(
        1, list_of(struct_of(PageLocation)), required=True
    )
    unencoded_byte_array_data_bytes: list[int] | None = tfield(2, list_of(I64))


@dataclass(slots=True, kw_only=True)
class ColumnIndex:
    """Per-page statistics of one column chunk (page index)."""

    null_pages: list[bool] | None = tfield(1, list_of(BOOL), required=True)
    min_values: list[bytes] | None = tfield(2, list_of(BINARY), required=True)
    max_values: list[bytes] | None = tfield(3, list_of(BINARY), required=True)
    boundary_order: BoundaryOrder | None = tfield(4, enum_of(BoundaryOrder), required=True)
    null_counts: list[int] | None = tfield(5, list_of(I64))
    repetition_level_histograms: list[int] | None = tfield(6, list_of(I64))
    definition_level_histograms: list[int] | None = tfield(7, list_of(I64))
    nan_counts: list[int] | None = tfield(8, list_of(I64))


@dataclass(slots=True, kw_only=True)
class SplitBlockAlgorithm:
    """Block-based Bloom filter algorithm."""


@thrift_union
@dataclass(slots=True, kw_only=True)
class BloomFilterAlgorithm:
    """Union: the Bloom filter algorithm."""

    BLOCK: SplitBlockAlgorithm | None = tfield(1, struct_of(SplitBlockAlgorithm))


@dataclass(slots=True, kw_only=True)
class XxHash:
    """64-bit xxHash of the plain-encoded value."""


@thrift_union
@dataclass(slots=True, kw_only=True)
class BloomFilterHash:
    """Union: the Bloom filter hash function."""

    XXHASH: XxHash | None = tfield(1, struct_of(XxHash))


@dataclass(slots=True, kw_only=True)
class Uncompressed:
    """The Bloom filter bitset is not compressed."""


@thrift_union
@dataclass(slots=True, kw_only=True)
class BloomFilterCompression:
    """Union: the Bloom filter bitset compression."""

    UNCOMPRESSED: Uncompressed | None = tfield(1, struct_of(Uncompressed))


@dataclass(slots=True, kw_only=True)
class BloomFilterHeader:
    """Header written before a Bloom filter bitset."""

    numBytes: int | None = tfield(1, I32, required=True)
    algorithm: BloomFilterAlgorithm | None = tfield(
        2, struct_of(BloomFilterAlgorithm), required=True
    )
    hash: BloomFilterHash | None = tfield(3, struct_of(BloomFilterHash), required=True)
    compression: BloomFilterCompression | None = tfield(
        4, struct_of(BloomFilterCompression), required=True
    )
