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
"""

from __future__ import annotations

import os
import weakref
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from streamwrite.arrow.schema import decode_arrow_schema
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.errors import CorruptFileError, StreamwriteIOError
from streamwrite.format.sidecar.codec import parquet_footer_checksum
from streamwrite.format.txn import (
    DATA_FILE,
    RETIRED_DATA_FILE,
    TXN_FILE,
    Segment,
    TxnRecord,
)
from streamwrite.io.txn import read_txn
from streamwrite.layout.table import publish_txn
from streamwrite.live.file import EncodedRowGroup, LiveFile
from streamwrite.options import CompactionPolicy
from streamwrite.reader.file import ParquetFile
from streamwrite.table.execute import run_file_actions

__all__ = [
    "PartitionBuffer",
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


def _missing(directory: Path) -> CorruptFileError:
    return CorruptFileError(
        f"The segment {str(directory)!r} that the table's _txn names has no data file (neither "
        f"{DATA_FILE} nor {RETIRED_DATA_FILE}): committed data is gone. It was deleted, or a "
        "retired segment was swept after its grace period while this snapshot was read.",
        0,
    )


def segment_data_path(directory: Path) -> Path:
    """The data file of the segment in ``directory`` (``table/partition/seg-N``), listed or
    retired: ``data.parquet``, else ``_data.retired``.

    Returns:
        The path (it may be renamed from the first to the second name after this returns:
        open it, and on ``FileNotFoundError`` ask again).

    Raises:
        CorruptFileError: the segment has neither file.
    """
    for name in (DATA_FILE, RETIRED_DATA_FILE):
        if (directory / name).is_file():
            return directory / name
    raise _missing(directory)


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


@dataclass(frozen=True)
class TableSnapshot:
    """A pinned table version: each segment's live file at its committed size.

    Use it as a context manager (or call :meth:`release`) when it comes from
    :meth:`Table.snapshot`: until then compaction keeps the segments it reads.
    """

    path: Path
    version: int
    files: tuple[tuple[str, int], ...]
    """``(partition/segment, committed data.parquet size)``, in row order."""
    _pin: _Pin | None = field(default=None, compare=False, repr=False)
    footer_checksums: tuple[int | None, ...] = field(default=(), compare=False, repr=False)
    """The XXH64 ``_txn`` recorded for each segment's Parquet footer (None: not recorded;
    empty: unknown), in the order of :attr:`files`."""

    def __post_init__(self) -> None:
        if self._pin is not None:
            weakref.finalize(self, self._pin.release)

    def data_files(self) -> list[Path]:
        """The data file of each segment now (``data.parquet``, or ``_data.retired`` for a
        segment compaction retired since; read each only up to its size): see
        :func:`segment_data_path`.

        Raises:
            CorruptFileError: a segment has no data file.
        """
        return [segment_data_path(self.path / name) for name, _ in self.files]

    def read(
        self, columns: list[str] | None = None, *, decryption: DecryptionConfig | None = None
    ) -> pa.Table:
        """Returns: the rows of this version, partitions in order (``decryption`` holds the
        keys of an encrypted table).

        Raises:
            CorruptFileError: a segment is missing, or damaged (as :func:`read_table`).
        """
        tables = []
        for index, (name, size) in enumerate(self.files):
            if not (self.path / name).is_dir():
                raise _missing(self.path / name)
            # The segment as a live file: _pm's CRC, the footer's XXH64 and schema are checked
            # (its data file is data.parquet, or _data.retired once compaction retired it).
            try:
                with ParquetFile(self.path / name, snapshot=size, decryption=decryption) as segment:
                    tables.append(segment.read(columns))
            except CorruptFileError:
                table = self._read_by_txn_checksum(index, columns, decryption)
                if table is None:
                    raise
                tables.append(table)
        if not tables:
            schema = decode_arrow_schema(read_txn(self.path).schema)
            return (
                schema if columns is None else pa.schema([schema.field(c) for c in columns])
            ).empty_table()
        for (name, _), table in zip(self.files, tables, strict=True):
            if not table.schema.equals(tables[0].schema, check_metadata=False):
                raise CorruptFileError(
                    f"The segment {name!r} of the table {str(self.path)!r} has the schema "
                    f"{table.schema}, but {self.files[0][0]!r} has {tables[0].schema}: every "
                    "segment of a table has the table's schema.",
                    0,
                )
        return pa.concat_tables(tables)

    def _read_by_txn_checksum(
        self, index: int, columns: list[str] | None, decryption: DecryptionConfig | None
    ) -> pa.Table | None:
        """The rows of segment ``index`` read from its data file alone, when its ``_pm`` is
        unreadable: inside a table ``_pm`` is no commit point, so a power loss may leave its
        header naming a commit whose blocks never landed until the writer reopens the table.
        The Parquet footer at the committed size must have the XXH64 ``_txn`` recorded.

        Returns:
            The rows, or None when ``_txn`` recorded no checksum or the footer is not that one.
        """
        if index >= len(self.footer_checksums) or self.footer_checksums[index] is None:
            return None
        name, size = self.files[index]
        with open(segment_data_path(self.path / name), "rb") as f:
            tail = os.pread(f.fileno(), 8, size - 8)
            if len(tail) != 8:
                return None
            footer_size = int.from_bytes(tail[:4], "little") + 8
            if footer_size > size:
                return None
            footer = os.pread(f.fileno(), footer_size, size - footer_size)
            if parquet_footer_checksum(footer) != self.footer_checksums[index]:
                return None
            with ParquetFile(f, snapshot=size, decryption=decryption) as segment:
                return segment.read(columns)

    def release(self) -> None:
        """Let compaction delete the segments this snapshot reads (idempotent)."""
        if self._pin is not None:
            self._pin.release()

    def __enter__(self) -> TableSnapshot:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def snapshot_of(
    path: Path, record: TxnRecord, registry: PinRegistry | None = None
) -> TableSnapshot:
    """The snapshot of ``record``, pinned in ``registry`` if given."""
    files = record.files()
    pin = None if registry is None else _Pin(registry, tuple(name for name, _ in files))
    checksums = tuple(
        segment.footer_xxh64
        for partition in sorted(record.partitions)
        for segment in record.partitions[partition]
    )
    return TableSnapshot(path, record.version, files, pin, checksums)


def read_snapshot(path: Path) -> TableSnapshot:
    """The newest committed snapshot of the table at ``path`` (from its ``_txn``; no pin)."""
    return snapshot_of(path, read_txn(path))


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
