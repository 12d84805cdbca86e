"""What a filtered read of a table snapshot reads, level by level: :class:`TablePlan`.

The plans (:mod:`streamwrite.table.scan` makes them) and :class:`SnapshotView`, what a scan
needs of a snapshot; apart from the scan so that the snapshot module does not import the
reader's planning through it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from streamwrite.format.txn import TxnRecord

__all__ = ["SegmentPlan", "SnapshotView", "TablePlan"]


@dataclass(frozen=True, slots=True)
class SnapshotView:
    """What a scan needs of a snapshot: where, which version, its segments and record."""

    path: Path | str
    """The table directory, or the table URL."""
    version: int
    files: Sequence[tuple[str, int]]
    """``(partition/segment, committed size)`` in row order."""
    record: TxnRecord
    schema: pa.Schema
    segments: Any
    """Opens each segment (local or cold) at its committed size: a
    :class:`streamwrite.table.scan.SegmentOpener` (the snapshot; typed there, so that this
    module does not import the reader)."""


@dataclass(frozen=True, slots=True)
class SegmentPlan:
    """One segment of a snapshot: read or skipped, and by what."""

    name: str
    """``partition/segment``."""
    committed_size: int
    skipped_by: str | None
    """None (read), ``"partition"`` (its partition's time range), ``"store"`` (the skipping
    store), ``"footer"`` (no row group of its footer can match: statistics, bloom filters,
    embedded index; :attr:`read_plan` says which), ``"schema"`` (a column it lacks is null
    there and the filter cannot hold on nulls)."""
    read_plan: Any = None
    """The segment's :class:`streamwrite.reader.pruning.ReadPlan` when its footer was read."""


@dataclass(frozen=True, slots=True)
class TablePlan:
    """What a filtered read of one snapshot reads, level by level (``streamwrite scan
    --explain``)."""

    filters: str
    """The bound filter (:func:`streamwrite.predicate.describe`)."""
    version: int
    num_partitions: int
    num_partitions_read: int
    num_segments: int
    num_segments_read: int
    segments_skipped: dict[str, int]
    """Segments skipped, by level (:attr:`SegmentPlan.skipped_by`)."""
    num_row_groups: int
    """Row groups of the segments whose footer was planned (the row groups of segments the
    partition and store levels skip are not counted: their footers are never read)."""
    num_row_groups_read: int
    row_groups_skipped: dict[str, int]
    """Row groups skipped in planned segments, by level (``statistics``, ``embedded_index``,
    ``bloom_filter``, ``page_index``: :class:`streamwrite.reader.pruning.ReadPlan`)."""
    num_pages: int
    num_pages_read: int
    bytes_read: int
    """Page bytes the read decodes plus the index bytes planning read (bloom filters, page
    indexes, embedded indexes), over the planned segments."""
    segments: tuple[SegmentPlan, ...] = field(repr=False, default=())

    def explain(self) -> str:
        """Returns: a few lines saying what each level skipped (``streamwrite scan --explain``)."""

        def by(counts: Mapping[str, int]) -> str:
            return "".join(f"; {n} skipped by {level}" for level, n in sorted(counts.items()))

        return "\n".join(
            [
                f"filter: {self.filters}",
                f"table version: {self.version}",
                f"partitions: {self.num_partitions_read} of {self.num_partitions} read"
                + (
                    f"; {self.num_partitions - self.num_partitions_read} skipped by time range"
                    if self.num_partitions_read < self.num_partitions
                    else ""
                ),
                f"segments: {self.num_segments_read} of {self.num_segments} read"
                + by(self.segments_skipped),
                f"row groups: {self.num_row_groups_read} of {self.num_row_groups} read"
                + by(self.row_groups_skipped),
                f"pages: {self.num_pages_read} of {self.num_pages} read",
                f"bytes read: {self.bytes_read}",
            ]
        )
