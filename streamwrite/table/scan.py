"""Pruned reads of a table snapshot: partitions, segments, then each file's own pruning.

Levels, each three-valued ("cannot match" skips; anything unknown reads)::

    partition   the designated timestamp's partition time range [start, end) as a container
                (min = start, max = end - 1 unit, not exact: no value is proven present; no
                nulls: every row has a timestamp), pruned by streamwrite.predicate.prune
    segment     sealed segments the skipping store holds at the snapshot's committed size:
                SkippingStore.prune (minmax / valuelist / bloom, a few KB read); the others
                by their own footer (ParquetFile.plan: row group statistics, bloom filters,
                embedded index): a segment none of whose row groups can match is skipped
    row group,  ParquetFile.read(filters=) of each surviving segment (streamwrite.reader):
    page        row groups, then page index row ranges, then the filter on the rows read

Schema evolution: a segment written before ``Table.add_columns`` lacks the added columns; a
filter sees nulls there (its pruning takes such a column as all-null, its rows are read
widened to the table's schema, then filtered). The filter is always applied to the rows read
(``streamwrite.predicate.to_arrow``): pruning only decides what need not be read, so
``snapshot.read(filters=f)`` equals ``snapshot.read().filter(to_arrow(f))``.

Where segments are: every segment is opened through the snapshot
(``SnapshotView.segments``, ``TableSnapshot.open_segment``), local or in cold storage, so
every level works the same on a table read by URL: its partitions, each footer (fetched by
one ranged request), row groups and pages (only the chunks and pages read are fetched). Such
a table has no skipping store (it is local state, not published): that level keeps every
segment there.

:func:`surviving_segments` gives other engines the segments that may match, with their
committed sizes (``TableSnapshot.files(filters=)`` turns them into data files). A live
segment's ``data.parquet`` may be longer than its committed size (an append in flight writes
past it): an engine must read only its first ``committed_size`` bytes, which
:func:`streamwrite.snapshot_filesystem` does for pyarrow, DuckDB and polars (the paths of the
view are the table-relative names); a bare path is safe only while no append is in flight.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from streamwrite.arrow.evolution import widen_table
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.errors import CorruptFileError, SchemaError, StreamwriteError
from streamwrite.predicate import (
    Expr,
    arrow_path,
    bind,
    describe,
    parse_filters,
    prune,
    to_arrow,
)
from streamwrite.predicate import (
    columns as expr_columns,
)
from streamwrite.reader.file import ParquetFile
from streamwrite.reader.pruned_read import filtered_tables
from streamwrite.reader.pruning import plan_read
from streamwrite.skipping.config import SkippingConfig
from streamwrite.skipping.store import SkippingStore
from streamwrite.table.levels import all_null, partition_containers
from streamwrite.table.plans import SegmentPlan, SnapshotView, TablePlan

__all__ = [
    "SegmentOpener",
    "SegmentPlan",
    "SnapshotView",
    "TablePlan",
    "plan_snapshot",
    "read_filtered",
    "surviving_segments",
]


class SegmentOpener(Protocol):
    """Opens a snapshot's segments wherever they are (``TableSnapshot.open_segment``)."""

    def open_segment(
        self, name: str, size: int, *, decryption: DecryptionConfig | None = None
    ) -> ParquetFile: ...


def _store_keep(view: SnapshotView, expr: Expr, candidates: list[tuple[str, int]]) -> set[str]:
    """The segments of ``candidates`` the snapshot's skipping store proves cannot match: those
    it holds at the snapshot's committed size (an entry of another size describes other
    bytes). A store that cannot be opened or read (its files deleted by a configuration
    change or ``drop_index`` since this version) proves nothing."""
    value = view.record.skipping
    if not value or not value.get("store") or not isinstance(view.path, Path):
        return set()  # a table read by URL has no skipping store (it is local state)
    try:
        config = SkippingConfig.parse(value["config"], view.schema)
        if not config.store_indexes:
            return set()
        store = SkippingStore.open(view.path, config, value["store"], read_only=True)
        held = store.segments
        names = [name for name, size in candidates if held.get(name) == size]
        if not names or store.needs_rebuild:
            return set()
        verdict = store.prune(expr, names)
    except (StreamwriteError, OSError):
        return set()
    return {name for name, keep in zip(names, verdict, strict=True) if not keep}


class _Scan:
    """One pass over a snapshot's segments, level by level."""

    def __init__(
        self, view: SnapshotView, filters: object, decryption: DecryptionConfig | None
    ) -> None:
        self.view = view
        schema = self.schema = view.schema
        record = view.record
        self.expr: Expr = bind(parse_filters(filters), schema)
        self.filter_columns = sorted(expr_columns(self.expr))
        self.filter_fields = {c: arrow_path(schema, c) for c in self.filter_columns}
        """Each filter column's Arrow path (a struct field: ``("s", "a")``) and field."""
        self.decryption = decryption
        self.record = record
        files = view.files
        self.partitions = sorted({name.partition("/")[0] for name, _ in files})
        keep_partition = np.ones(len(self.partitions), dtype=bool)
        bounds = partition_containers(
            self.partitions, record.timestamp, record.partition_by, schema
        )
        if bounds is not None:
            keep_partition = prune(self.expr, bounds)
        kept = {p for p, keep in zip(self.partitions, keep_partition, strict=True) if keep}
        self.num_partitions_read = len(kept)
        candidates = [(name, size) for name, size in files if name.partition("/")[0] in kept]
        by_store = _store_keep(view, self.expr, candidates)
        self.decisions: list[tuple[str, int, str | None]] = []
        for name, size in files:
            if name.partition("/")[0] not in kept:
                self.decisions.append((name, size, "partition"))
            elif name in by_store:
                self.decisions.append((name, size, "store"))
            else:
                self.decisions.append((name, size, None))

    def open(self, name: str, size: int) -> ParquetFile:
        """Segment ``name`` at committed ``size``, wherever it is (``TableSnapshot.open_segment``:
        a local live file, or a cold segment read by byte ranges)."""
        opener: SegmentOpener = self.view.segments
        return opener.open_segment(name, size, decryption=self.decryption)

    def missing(self, pf: ParquetFile) -> dict[str, pa.DataType]:
        """The filter's columns the segment lacks (added later), with their types."""
        present = set(pf.schema_arrow.names)
        return {
            c: field.type
            for c, (path, field) in self.filter_fields.items()
            if path[0] not in present
        }

    def segment(self, pf: ParquetFile, columns: list[str] | None) -> tuple[str | None, Any]:
        """The footer level: ``(skipped_by, read_plan)`` of an open segment."""
        missing = self.missing(pf)
        if missing:
            if not prune(self.expr, all_null(pf.metadata.num_rows, missing))[0]:
                return "schema", None
            return None, None
        plan = pf.plan(self.expr, columns)
        return ("footer" if plan.num_row_groups_read == 0 else None), plan

    def rows(self, pf: ParquetFile, full: pa.Schema) -> pa.Table:
        """The rows of an open segment that may match (the pages and row groups its
        statistics and indexes keep), unfiltered, as ``full``: the columns read and then
        the filter's (the caller filters every segment's rows at once: one Arrow filter
        call per read, not per segment)."""
        present = [c for c in full.names if c in pf.schema_arrow.names]
        if self.missing(pf):  # filter on a column this segment lacks: nulls there
            return widen_table(pf.read(present), full)
        plan = plan_read(pf, self.expr, present)
        tables = list(filtered_tables(pf, plan, apply_filter=False))
        if not tables:
            return full.empty_table()
        return widen_table(pa.concat_tables(tables).select(present), full)


def plan_snapshot(
    view: SnapshotView,
    filters: object,
    columns: list[str] | None = None,
    decryption: DecryptionConfig | None = None,
) -> TablePlan:
    """Returns: the :class:`TablePlan` of reading ``view`` with ``filters`` (the footers
    of the segments the partition and store levels keep are read; no data is)."""
    scan = _Scan(view, filters, decryption)
    plans: list[SegmentPlan] = []
    for name, size, skipped in scan.decisions:
        read_plan = None
        if skipped is None:
            with scan.open(name, size) as pf:
                skipped, read_plan = scan.segment(pf, columns)
        plans.append(SegmentPlan(name, size, skipped, read_plan))
    read = [p.read_plan for p in plans if p.read_plan is not None]
    skipped_by: dict[str, int] = {}
    for p in plans:
        if p.skipped_by is not None:
            skipped_by[p.skipped_by] = skipped_by.get(p.skipped_by, 0) + 1
    row_groups_skipped: dict[str, int] = {}
    for rp in read:
        for rg in rp.row_groups:
            if rg.skipped_by is not None:
                row_groups_skipped[rg.skipped_by] = row_groups_skipped.get(rg.skipped_by, 0) + 1
    return TablePlan(
        describe(scan.expr),
        view.version,
        len(scan.partitions),
        scan.num_partitions_read,
        len(plans),
        sum(1 for p in plans if p.skipped_by is None),
        skipped_by,
        sum(rp.num_row_groups for rp in read),
        sum(rp.num_row_groups_read for rp in read),
        row_groups_skipped,
        sum(rp.num_pages for rp in read),
        sum(rp.num_pages_read for rp in read),
        sum(rp.bytes_read for rp in read),
        tuple(plans),
    )


def read_filtered(
    view: SnapshotView,
    target: pa.Schema,
    filters: object,
    decryption: DecryptionConfig | None,
) -> pa.Table:
    """Returns: the rows of ``view`` that match ``filters``, as ``target``.

    Raises:
        ConfigError, SchemaError: a filter that does not parse or bind to the table's schema.
        CorruptFileError: a segment is missing or damaged.
    """
    scan = _Scan(view, filters, decryption)
    full = pa.schema(
        [
            *target,
            *(
                scan.schema.field(top)
                for top in dict.fromkeys(path[0] for path, _ in scan.filter_fields.values())
                if top not in target.names
            ),
        ]
    )
    tables: list[pa.Table] = []
    for name, size, skipped in scan.decisions:
        if skipped is not None:
            continue
        try:
            with scan.open(name, size) as pf:
                tables.append(scan.rows(pf, full))
        except SchemaError as exc:
            raise CorruptFileError(
                f"The segment {name!r} of the table {str(view.path)!r} does not fit the "
                f"table's schema: {exc}",
                0,
            ) from exc
    if not tables:
        return target.empty_table()
    rows = pa.concat_tables(tables)
    return rows.filter(to_arrow(scan.expr, rows.schema)).select(target.names)


def surviving_segments(
    view: SnapshotView, filters: object, decryption: DecryptionConfig | None
) -> list[tuple[str, int]]:
    """Returns: ``(partition/segment, committed size)`` of each segment that may hold a
    matching row (every segment when ``filters`` is None), in row order.

    Raises:
        ConfigError, SchemaError: a filter that does not parse or bind to the table's schema.
        CorruptFileError: a segment is missing or damaged.
        StreamwriteIOError: the cold storage cannot be reached.
    """
    if filters is None:
        return list(view.files)
    scan = _Scan(view, filters, decryption)
    kept: list[tuple[str, int]] = []
    for name, size, skipped in scan.decisions:
        if skipped is None:
            with scan.open(name, size) as pf:
                skipped, _ = scan.segment(pf, None)
        if skipped is None:
            kept.append((name, size))
    return kept
