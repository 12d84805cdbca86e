"""The plan of a filtered read (:func:`streamwrite.reader.pruning.plan_read` makes it,
:mod:`streamwrite.reader.pruned_read` executes it): per row group, read or skipped and why,
the row ranges read and the pages read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from streamwrite.arrow.column import FieldNode
from streamwrite.arrow.schema import ColumnSpec, ParquetSchema
from streamwrite.crypto.decryption import ChunkDecryptor
from streamwrite.format import structs as t
from streamwrite.predicate import Expr, describe
from streamwrite.predicate.ranges import RowRanges
from streamwrite.reader.page_index import ChunkPages
from workers.decode import DecodedChunk

__all__ = ["ParquetFile", "ReadPlan", "RowGroupPlan", "SkipReason"]


class ParquetFile(Protocol):
    """What planning and pruned reads use of a :class:`streamwrite.ParquetFile` (its own
    chunk-level methods; a Protocol, so that this module does not import the file module)."""

    @property
    def thrift_metadata(self) -> t.FileMetaData: ...
    @property
    def footer_offset(self) -> int: ...
    @property
    def schema_arrow(self) -> pa.Schema: ...
    @property
    def num_row_groups(self) -> int: ...
    @property
    def _parquet_schema(self) -> ParquetSchema: ...
    @property
    def verify_checksums(self) -> bool: ...
    @property
    def max_decompressed_page_size(self) -> int: ...
    def read_bytes(self, offset: int, size: int) -> memoryview: ...
    def _columns(self, columns: Sequence[str] | None) -> list[ColumnSpec]: ...
    def _select(self, columns: Sequence[str] | None) -> list[FieldNode]: ...
    def _read_field(self, node: FieldNode, i: int) -> pa.Array: ...
    def _chunk(self, i: int, column: int) -> t.ColumnChunk: ...
    def _column_metadata(self, i: int, column: int) -> t.ColumnMetaData: ...
    def _typed_chunk_meta(self, i: int, spec: ColumnSpec) -> tuple[t.ColumnMetaData, str]: ...
    def _chunk_range(self, i: int, spec: ColumnSpec) -> tuple[int, int]: ...
    def _chunk_decryptor(self, i: int, column: int) -> ChunkDecryptor | None: ...
    def _read_column(self, spec: ColumnSpec, i: int) -> pa.Array: ...
    def _to_arrow(self, decoded: DecodedChunk, spec: ColumnSpec, i: int) -> pa.Array: ...


SkipReason = Literal["statistics", "embedded_index", "bloom_filter", "page_index"]
"""Why a row group is not read (the level that proved no row of it matches)."""


@dataclass(frozen=True)
class RowGroupPlan:
    """What a filtered read does with one row group.

    Attributes:
        index: The row group.
        num_rows: Its rows.
        skipped_by: None when it is read; else the level that skipped it: ``"statistics"``,
            ``"embedded_index"``, ``"bloom_filter"`` or ``"page_index"``.
        num_pages: Data pages of the columns read (from ``encoding_stats`` or the OffsetIndex;
            a chunk with neither counts one).
        num_pages_read: Data pages read.
        bytes_read: Page bytes read (dictionary pages included).
    """

    index: int
    num_rows: int
    skipped_by: SkipReason | None
    num_pages: int
    num_pages_read: int
    bytes_read: int
    _ranges: RowRanges = field(repr=False)
    _pages: dict[str, tuple[ChunkPages, npt.NDArray[np.intp]]] = field(
        default_factory=dict, repr=False, compare=False
    )
    """Per column read page by page: its pages and the indexes of those read."""

    @property
    def row_ranges(self) -> list[tuple[int, int]]:
        """The rows read, as ``[start, stop)`` pairs (all rows unless the page index or the
        embedded time index cut some; none when skipped). The filter then picks the matching
        ones."""
        return [
            (int(a), int(b)) for a, b in zip(self._ranges.starts, self._ranges.stops, strict=True)
        ]

    @property
    def num_rows_read(self) -> int:
        """Rows kept by pruning (the filter then picks the matching ones); a chunk without an
        OffsetIndex is decoded whole and cut to them."""
        return self._ranges.num_rows


@dataclass(frozen=True)
class ReadPlan:
    """A filtered read of a file (``ParquetFile.plan``): what it reads, skips and why.

    Attributes:
        columns: The top-level fields returned.
        read_columns: The columns read: the columns asked for (top-level fields or dotted
            struct paths) and then the filter's other columns.
        row_groups: One plan per row group considered, in file order.
        index_bytes_read: Bytes of bloom filters, page indexes and embedded index read to plan.
    """

    columns: tuple[str, ...]
    read_columns: tuple[str, ...]
    row_groups: tuple[RowGroupPlan, ...]
    index_bytes_read: int
    _expr: Expr | None = field(default=None, repr=False)
    _constants: Mapping[str, pa.Scalar] = field(default_factory=dict, repr=False)
    """Columns not in the file that the filter uses, with their one value."""
    _num_filter_columns: int = field(default=0, repr=False)
    """How many of ``read_columns`` (at its end) only the filter needs."""

    @property
    def filter(self) -> str | None:
        """The filter as bound to the file's schema, in SQL-ish text (None: no filter)."""
        return None if self._expr is None else describe(self._expr)

    @property
    def num_row_groups(self) -> int:
        """Row groups considered."""
        return len(self.row_groups)

    @property
    def num_row_groups_read(self) -> int:
        """Row groups read (not skipped)."""
        return sum(rg.skipped_by is None for rg in self.row_groups)

    @property
    def num_pages(self) -> int:
        """Data pages of the columns read, in every row group considered."""
        return sum(rg.num_pages for rg in self.row_groups)

    @property
    def num_pages_read(self) -> int:
        """Data pages read."""
        return sum(rg.num_pages_read for rg in self.row_groups)

    @property
    def num_rows_read(self) -> int:
        """Rows kept by pruning, before the filter picks the matching ones."""
        return sum(rg.num_rows_read for rg in self.row_groups)

    @property
    def bytes_read(self) -> int:
        """Page bytes read plus the index bytes read to plan."""
        return sum(rg.bytes_read for rg in self.row_groups) + self.index_bytes_read

    def skipped(self, reason: SkipReason) -> int:
        """Row groups skipped by ``reason``."""
        return sum(rg.skipped_by == reason for rg in self.row_groups)

    def explain(self) -> str:
        """A few lines saying what each level skipped (for ``--explain``)."""
        lines = [
            f"filter: {self.filter or 'none'}",
            f"row groups: {self.num_row_groups_read} of {self.num_row_groups} read"
            + "".join(
                f"; {self.skipped(r)} skipped by {r}"
                for r in ("statistics", "embedded_index", "bloom_filter", "page_index")
                if self.skipped(r)
            ),
            f"pages: {self.num_pages_read} of {self.num_pages} read; rows kept: "
            f"{self.num_rows_read}; bytes read: {self.bytes_read}",
        ]
        return "\n".join(lines)
