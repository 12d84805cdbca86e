"""A table's published state: commits, pinned snapshots, metrics, and the ``_txn`` publish.

Pins: a snapshot taken with :meth:`streamwrite.table.core.Table.snapshot` holds a pin on each
segment it lists until :meth:`TableSnapshot.release` (or the end of its ``with`` block, or its
garbage collection). Compaction deletes a retired segment only when no pin of this process
holds it and the table's grace period (for readers in other processes, which cannot pin) has
passed since it was retired. Snapshots from :func:`read_snapshot` pin nothing.

Where a segment's data is (``layout/txn.py``): ``data.parquet`` while it is listed, then
``_data.retired`` once compaction retired it, until it is deleted. A snapshot's segments may
be retired (and their data file renamed) at any moment while it is read, and a rename never
goes back, so the reader (``streamwrite.reader.tail``) opens ``data.parquet`` first and then
the retired name: whichever it opens stays readable through the open file, even if it is
renamed or deleted afterwards. :func:`segment_data_path` answers the same question as a path
(for readers that open by name: try again on ``FileNotFoundError``).

A segment tiered to cold storage (``Segment.is_cold``) lives as an object under the cold root
``_txn`` names; a snapshot read by URL (``read_snapshot("s3://...")``) has only such segments.
:meth:`TableSnapshot.open_segment` opens either kind (``streamwrite.table.cold``); every
reader of a snapshot goes through it.
"""

from __future__ import annotations

import os
import weakref
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from streamwrite.arrow.evolution import widen_table
from streamwrite.arrow.schema import decode_arrow_schema
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.errors import CorruptFileError, SchemaError, StateError, StreamwriteIOError
from streamwrite.format.txn import (
    TXN_FILE,
    Segment,
    TxnRecord,
    cold_object_key,
)
from streamwrite.io.remote import ObjectStore
from streamwrite.io.txn import read_txn
from streamwrite.layout.table import publish_txn
from streamwrite.live.file import EncodedRowGroup, LiveFile
from streamwrite.options import CompactionPolicy
from streamwrite.reader.file import ParquetFile
from streamwrite.table.execute import run_file_actions
from streamwrite.table.paths import segment_data_path
from streamwrite.table.plans import SnapshotView, TablePlan
from streamwrite.table.remote import is_table_url, read_remote_record

__all__ = [
    "PartitionBuffer",
    "SegmentFiles",
    "PinRegistry",
    "TableCommit",
    "TableMetrics",
    "TableSettings",
    "TableSnapshot",
    "by_segment",
    "read_snapshot",
    "segment_data_path",
    "read_txn_bytes",
    "snapshot_of",
    "write_txn",
]


@dataclass(frozen=True, slots=True)
class TableCommit:
    """A table commit: ``version`` of ``_txn`` after it; ``skipped`` for a replayed batch id."""

    version: int
    num_rows: int
    partitions: dict[str, tuple[Segment, ...]]
    """Every partition's segments and their committed sizes after the commit."""
    skipped: bool = False


class PinRegistry:
    """Counts the snapshots of this process that use each segment (``partition/segment``)."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()

    def pin(self, paths: tuple[str, ...]) -> None:
        """Add one pin to each of ``paths``."""
        self._counts.update(paths)

    def unpin(self, paths: tuple[str, ...]) -> None:
        """Remove one pin from each of ``paths``."""
        self._counts.subtract(paths)
        for path in paths:
            if self._counts[path] <= 0:
                del self._counts[path]

    def is_pinned(self, path: str) -> bool:
        """True while a snapshot of this process uses segment ``path``."""
        return self._counts[path] > 0


class _Pin:
    """One snapshot's pins; releasing twice is a no-op."""

    def __init__(self, registry: PinRegistry, paths: tuple[str, ...]) -> None:
        self._registry: PinRegistry | None = registry
        self._paths = paths
        registry.pin(paths)

    def release(self) -> None:
        if self._registry is not None:
            self._registry.unpin(self._paths)
            self._registry = None


class SegmentFiles(tuple[tuple[str, int], ...]):
    """A snapshot's segments, ``(partition/segment, committed size)`` in row order (a tuple);
    called, the data files that may hold rows matching a filter:
    ``snapshot.files(filters=[("symbol", "==", "X")])``."""

    _owner: tuple[Any, ...] | None = None
    """The snapshot's fields but its pin (no reference to the snapshot: its pin is released
    when it is garbage)."""

    def __call__(
        self, filters: object = None, *, decryption: DecryptionConfig | None = None
    ) -> list[tuple[str, int]]:
        """The data file of each segment that may hold a row matching ``filters`` (every
        segment for None): the partition, skipping-store and footer levels prune.

        Returns:
            ``(data file, committed size)`` in row order: a local path, or the URL of a cold
            segment's object (``s3://bucket/prefix/partition/segment/data.parquet``). Read each
            file only up to its committed size: a live segment's file may be longer while an
            append is in flight (:func:`streamwrite.snapshot_filesystem` cuts the files for
            pyarrow, DuckDB and polars, and serves cold segments by byte ranges).

        Raises:
            ConfigError: a filter streamwrite cannot represent (an unknown function...).
            SchemaError: a filter on a column the table does not have.
            CorruptFileError: a segment is missing or damaged.
        """
        if self._owner is None:
            raise StateError("These segment files belong to no snapshot.")
        path, version, checksums, schema, record, options = self._owner
        snapshot = TableSnapshot(path, version, self, None, checksums, schema, record, options)
        if filters is None:
            return [(snapshot.segment_location(name), size) for name, size in self]
        from streamwrite.table.scan import surviving_segments

        return [
            (snapshot.segment_location(name), size)
            for name, size in surviving_segments(snapshot._view(), filters, decryption)
        ]


def _listed(record: TxnRecord, name: str, size: int) -> Segment | None:
    """The segment ``name`` (``partition/segment``) of ``record`` if it lists it at ``size``."""
    partition, _, segment = name.partition("/")
    return next(
        (s for s in record.partitions.get(partition, ()) if s.name == segment and s.size == size),
        None,
    )


@dataclass(frozen=True)
class TableSnapshot:
    """A pinned table version: each segment at its committed size, on the local disk or in
    cold storage.

    Use it as a context manager (or call :meth:`release`) when it comes from
    :meth:`Table.snapshot`: until then compaction keeps the segments it reads. It pickles
    (without its pin) as its fields: a table URL or path, the record and the storage options,
    never an open client.
    """

    path: Path | str
    """The table directory, or the table URL (``s3://bucket/prefix``) for a snapshot read
    through the table's published log (:func:`read_snapshot`)."""
    version: int
    files: SegmentFiles
    """``(partition/segment, committed data.parquet size)``, in row order (a tuple; called,
    the data files that may hold rows matching a filter: :class:`SegmentFiles`)."""
    _pin: _Pin | None = field(default=None, compare=False, repr=False)
    footer_checksums: tuple[int | None, ...] = field(default=(), compare=False, repr=False)
    """The XXH64 ``_txn`` recorded for each segment's Parquet footer (None: not recorded;
    empty: unknown), in the order of :attr:`files`."""
    schema: pa.Schema | None = field(default=None, compare=False, repr=False)
    """The table's Arrow schema at this version (None: unknown, read from ``_txn`` when
    needed). A segment written before ``Table.add_columns`` lacks the added columns;
    :meth:`read` gives them nulls there."""
    record: TxnRecord | None = field(default=None, compare=False, repr=False)
    """The ``_txn`` record of this version (None: read the newest when needed)."""
    storage_options: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    """The fsspec keyword arguments (credentials, endpoint) reaching the cold storage."""

    def __post_init__(self) -> None:
        if self._pin is not None:
            weakref.finalize(self, self._pin.release)
        if not isinstance(self.path, Path) and not is_table_url(self.path):
            object.__setattr__(self, "path", Path(self.path))
        files = SegmentFiles(self.files)
        files._owner = (
            self.path,
            self.version,
            self.footer_checksums,
            self.schema,
            self.record,
            self.storage_options,
        )
        object.__setattr__(self, "files", files)

    def __reduce__(self) -> tuple[Any, ...]:
        fields = (self.footer_checksums, self.schema, self.record, self.storage_options)
        return (TableSnapshot, (self.path, self.version, tuple(self.files), None, *fields))

    @property
    def url(self) -> str | None:
        """The table URL of a snapshot read through the published log (None: a local table)."""
        return None if isinstance(self.path, Path) else self.path

    def _cold_store(self) -> ObjectStore | None:
        """Where this snapshot's cold segments are: the table URL, or the cold root its
        ``_txn`` names (None: a local table that never tiered a segment); made once."""
        cached: ObjectStore | None = self.__dict__.get("_cold_store_made")
        if cached is None:
            root = self.url or self._record().cold
            if root is None:
                return None
            cached = ObjectStore(root, self.storage_options)
            object.__setattr__(self, "_cold_store_made", cached)
        return cached

    def _record(self) -> TxnRecord:
        """The record of this version (or, unknown, the newest: segments are looked up in it
        by name and committed size)."""
        if self.record is not None:
            return self.record
        loaded: TxnRecord | None = self.__dict__.get("_loaded_record")
        if loaded is None:
            if isinstance(self.path, Path):
                loaded = read_txn(self.path, shared=True)
            else:
                loaded = read_remote_record(ObjectStore(self.path, self.storage_options))
            object.__setattr__(self, "_loaded_record", loaded)
        return loaded

    def _view(self, schema: pa.Schema | None = None) -> SnapshotView:
        """What a scan needs of this snapshot (its record read when unknown: only the
        partitioning and the skipping store's entries, each checked against the committed
        sizes of the files, are taken from it)."""
        record = self._record()
        schema = schema or self.schema or decode_arrow_schema(record.schema)
        return SnapshotView(self.path, self.version, tuple(self.files), record, schema, self)

    def _footer_xxh64(self, name: str, size: int, segment: Segment | None) -> int | None:
        if segment is not None:
            return segment.footer_xxh64
        files = tuple(self.files)
        if (name, size) in files and len(self.footer_checksums) == len(files):
            return self.footer_checksums[files.index((name, size))]
        return None

    def open_segment(
        self, name: str, size: int, *, decryption: DecryptionConfig | None = None
    ) -> ParquetFile:
        """Open segment ``name`` (``partition/segment``) at its committed ``size``, wherever
        it is: a local live file (its ``_pm`` checked, or its data file alone when the
        footer there is the one ``_txn`` recorded), or a cold segment read by byte ranges
        from the object store (its size and recorded footer XXH64 checked). A local segment
        tiered to cold storage after this snapshot was taken, and deleted locally since, is
        read from cold storage.

        Returns:
            The open :class:`ParquetFile` (close it; ``with`` works).

        Raises:
            CorruptFileError: the segment (or its object) is missing, shorter than ``size``,
                or damaged.
            StreamwriteIOError: the cold storage cannot be reached.
        """
        from streamwrite.table.cold import open_cold_segment, open_local_segment

        segment = _listed(self._record(), name, size)
        footer_xxh64 = self._footer_xxh64(name, size, segment)
        if self.url is not None or (segment is not None and segment.is_cold):
            store = self._cold_store()
            assert store is not None  # a cold segment's record names its cold root
            return open_cold_segment(store, name, size, footer_xxh64, decryption)
        return open_local_segment(
            Path(self.path), name, size, footer_xxh64, decryption, self.storage_options
        )

    def segment_location(self, name: str) -> str:
        """Where segment ``name``'s data is now: a local data file's path (``data.parquet``,
        or ``_data.retired`` once retired), or a cold segment's object URL.

        Raises:
            CorruptFileError: a local segment has no data file.
        """
        store = self._cold_store()
        if store is not None and (self.url is not None or self._is_cold(name)):
            return store.object_url(cold_object_key(name))
        return str(segment_data_path(Path(self.path) / name))

    def _is_cold(self, name: str) -> bool:
        partition, _, segment = name.partition("/")
        listed = self._record().partitions.get(partition, ())
        return any(s.name == segment and s.is_cold for s in listed)

    def plan(
        self,
        filters: object,
        columns: list[str] | None = None,
        *,
        decryption: DecryptionConfig | None = None,
    ) -> TablePlan:
        """What :meth:`read` with ``filters`` reads, level by level: partitions (their time
        range), segments (the skipping store; each footer), row groups and pages.

        Returns:
            The :class:`streamwrite.TablePlan` (footers are read, no data).

        Raises:
            ConfigError: a filter streamwrite cannot represent.
            SchemaError: a filter on a column the table does not have.
            CorruptFileError: a segment is missing or damaged.
            StreamwriteIOError: the cold storage cannot be reached.
        """
        from streamwrite.table.scan import plan_snapshot

        return plan_snapshot(self._view(), filters, columns, decryption)

    def data_files(self) -> list[Path]:
        """The local data file of each segment now (``data.parquet``, or ``_data.retired``
        for a segment compaction retired since; read each only up to its size): see
        :func:`segment_data_path`.

        Raises:
            CorruptFileError: a segment has no data file.
            StateError: a segment is in cold storage (use :meth:`segment_location`,
                :attr:`files` or :func:`streamwrite.snapshot_filesystem`).
        """
        if self.url is not None or self._record().cold is not None:
            cold = [name for name, _ in self.files if self.url is not None or self._is_cold(name)]
            if cold:
                raise StateError(
                    f"The segment {cold[0]!r} of the table {str(self.path)!r} is in cold "
                    f"storage at {self.segment_location(cold[0])}: it has no local data file "
                    "(snapshot.files() gives its URL; snapshot_filesystem serves it)."
                )
        return [segment_data_path(Path(self.path) / name) for name, _ in self.files]

    def read(
        self,
        columns: list[str] | None = None,
        *,
        filters: object = None,
        decryption: DecryptionConfig | None = None,
    ) -> pa.Table:
        """Returns: the rows of this version, partitions in order (``decryption`` holds the
        keys of an encrypted table), with the version's schema (or its ``columns``, in that
        order): a segment written before ``Table.add_columns`` has nulls in the added columns.
        With ``filters`` (pyarrow's DNF tuples, as ``pyarrow.parquet.read_table`` takes
        them, or a ``pyarrow.compute.Expression``) only the rows that match: partitions, segments,
        row groups and pages that cannot match are not read (:meth:`plan` says which), and
        the filter is applied to the rows read (a column a segment lacks is null there).
        Cold segments are read by byte ranges: their footers, then only the column chunks
        (and pages) the read needs.

        Raises:
            CorruptFileError: a segment is missing, or damaged (as :func:`read_table`), or has
                columns that are not the table's.
            SchemaError: ``columns`` (or a filter) names a column the table does not have.
            ConfigError: a filter streamwrite cannot represent.
            StreamwriteIOError: the cold storage cannot be reached.
        """
        schema = self.schema or decode_arrow_schema(self._record().schema)
        target = schema
        if columns is not None:
            unknown = [c for c in columns if schema.get_field_index(c) < 0]
            if unknown:
                raise SchemaError(
                    f"The table {str(self.path)!r} has no column {unknown[0]!r} (its columns: "
                    f"{schema.names})."
                )
            target = pa.schema([schema.field(c) for c in columns])
        if filters is not None:
            from streamwrite.table.scan import read_filtered

            return read_filtered(self._view(schema), target, filters, decryption)
        tables = []
        for name, size in self.files:
            with self.open_segment(name, size, decryption=decryption) as segment:
                table = _read_as(segment, target, columns is None)
            try:
                tables.append(widen_table(table, target))
            except SchemaError as exc:
                raise CorruptFileError(
                    f"The segment {name!r} of the table {str(self.path)!r} does not fit the "
                    f"table's schema {schema}: {exc} Every segment has a schema of the "
                    "table's history, each a prefix of the newest.",
                    0,
                ) from exc
        if not tables:
            return target.empty_table()
        return pa.concat_tables(tables)

    def release(self) -> None:
        """Let compaction delete the segments this snapshot reads (idempotent)."""
        if self._pin is not None:
            self._pin.release()

    def __enter__(self) -> TableSnapshot:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def _read_as(segment: ParquetFile, target: pa.Schema, full: bool) -> pa.Table:
    """The columns of ``target`` that ``segment`` has, all its rows (every column of it when
    ``target`` is the ``full`` table schema: widening then refuses a column the table does
    not have); widen the result to ``target`` with
    :func:`~streamwrite.arrow.evolution.widen_table`."""
    if full:
        return segment.read()
    names = set(segment.schema_arrow.names)
    present = [name for name in target.names if name in names]
    if present or not len(target):
        return segment.read(present)
    num_rows = segment.metadata.num_rows  # none of the columns: only the row count counts
    return pa.Table.from_arrays([pa.nulls(num_rows, field.type) for field in target], schema=target)


def snapshot_of(
    path: Path | str,
    record: TxnRecord,
    registry: PinRegistry | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> TableSnapshot:
    """The snapshot of ``record`` (of the table at ``path``, a directory or a table URL),
    pinned in ``registry`` if given; ``storage_options`` reach its cold storage."""
    files = record.files()
    pin = None if registry is None else _Pin(registry, tuple(name for name, _ in files))
    checksums = tuple(
        segment.footer_xxh64
        for partition in sorted(record.partitions)
        for segment in record.partitions[partition]
    )
    schema = decode_arrow_schema(record.schema)
    return TableSnapshot(
        path,
        record.version,
        SegmentFiles(files),
        pin,
        checksums,
        schema,
        record,
        None if storage_options is None else dict(storage_options),
    )


def read_snapshot(
    path: str | os.PathLike[str], *, storage_options: Mapping[str, Any] | None = None
) -> TableSnapshot:
    """The newest committed snapshot of the table at ``path`` (no pin): a table directory
    (its ``_txn``; cold segments are read from the cold storage it names), or a table URL
    (``s3://bucket/prefix``, any fsspec URL: the newest version the table published there
    as ``_txn_log/<version>.json``, its cold segments only).

    Args:
        path: the table directory or URL.
        storage_options: fsspec keyword arguments (credentials, endpoint) reaching the cold
            storage or the URL.

    Returns:
        The snapshot (read it with :meth:`TableSnapshot.read`, plan it with ``plan``).

    Raises:
        CorruptFileError: the table has no readable ``_txn``, or its newest published log
            object is damaged.
        StreamwriteIOError: a URL with no published log (``errno`` ``ENOENT``), or one that
            cannot be reached.
        ConfigError: a URL no fsspec filesystem serves, or storage options that are not a
            mapping.
    """
    if is_table_url(path):
        assert isinstance(path, str)
        store = ObjectStore(path, storage_options)
        return snapshot_of(path, read_remote_record(store), None, storage_options)
    directory = Path(path)
    return snapshot_of(directory, read_txn(directory, shared=True), None, storage_options)


@dataclass
class TableMetrics:
    """Counters of one open table (read them any time)."""

    rows_appended: int = 0
    bytes_appended: int = 0
    rows_committed: int = 0
    commits: int = 0
    batches_skipped: int = 0
    last_commit_seconds: float = 0.0
    commit_seconds: list[float] = field(default_factory=list)
    encode_seconds: float = 0.0
    """Time the executor spent encoding row groups for this table (wall time of its calls)."""
    segment_seconds: float = 0.0
    """Time commits spent writing and syncing segments (data and ``_pm``)."""
    publish_seconds: float = 0.0
    """Time commits spent publishing ``_txn`` (the table's commit point)."""
    queue_depth: int = 0
    """Commits taken (encoded) and not durable yet."""
    appends_committed: int = 0
    """Appends made durable: over ``commits``, the mean group size of group commits."""
    rows_buffered: int = 0
    segments_created: int = 0
    compactions: int = 0
    compaction_errors: int = 0
    segments_deleted: int = 0
    appends_deduplicated: int = 0
    """Appends skipped for a dedup key committed within the window, or in flight."""


@dataclass
class PartitionBuffer:
    """Rows of one partition waiting for a commit: Arrow pending, then encoded."""

    pending: list[pa.Table] = field(default_factory=list)
    """Rows not cut into a row group yet (the table machine counts them)."""
    encoded: list[tuple[LiveFile, EncodedRowGroup]] = field(default_factory=list)
    """Row groups encoded for a segment (the partition's newest when they were encoded)."""


@dataclass(frozen=True, slots=True)
class TableSettings:
    """How a table commits and lays out its segments (the options of :func:`open_table`)."""

    commit_rows: int | None = None
    commit_bytes: int | None = None
    commit_interval: float | None = None
    row_group_bytes: int | None = None
    segment_row_groups: int = 128
    compaction: CompactionPolicy = field(default_factory=CompactionPolicy)
    compaction_interval: float | None = 60.0
    max_in_flight: int = 64
    """Appends accepted and not yet durable before the next append waits (backpressure)."""


def by_segment(
    row_groups: list[tuple[LiveFile, EncodedRowGroup]],
) -> list[tuple[LiveFile, list[EncodedRowGroup]]]:
    """Consecutive row groups grouped by the segment they were encoded for, in order."""
    groups: list[tuple[LiveFile, list[EncodedRowGroup]]] = []
    for live, row_group in row_groups:
        if groups and groups[-1][0] is live:
            groups[-1][1].append(row_group)
        else:
            groups.append((live, [row_group]))
    return groups


def read_txn_bytes(path: Path) -> bytes | None:
    """The bytes of the table's ``_txn`` now (None: there is none)."""
    try:
        return (path / TXN_FILE).read_bytes()
    except FileNotFoundError:
        return None


def write_txn(path: Path, record: TxnRecord) -> None:
    """Publish ``record``: the actions of :func:`streamwrite.layout.table.publish_txn` for the
    ``_txn`` there now (one slot written in place and one ``fdatasync``; or temporary file,
    fdatasync, rename, directory fsync), blocking.

    Raises:
        StreamwriteIOError: an action failed (``_txn`` is the old record or the new one).
        CorruptFileError: the ``_txn`` there has an intact slot of an unknown format version.
    """
    try:
        run_file_actions(path, publish_txn(record, read_txn_bytes(path)))
    except StreamwriteIOError as exc:
        cause = exc.__cause__ or exc
        raise StreamwriteIOError(f"Publishing {str(path / TXN_FILE)!r} failed: {cause}.") from cause
