"""Staged segments: rows encoded elsewhere (Spark executors, any worker that shares the table
directory) and adopted into a table in one commit, exactly once.

Layout, in the table directory (every name starts with ``_``: no engine reading the table
sees staging, and the table's partition scan skips it)::

    table/_staging/<batch>/<attempt>/<partition>/{data.parquet,_pm}
        <batch>    staging_name(app_id, batch_id): the app id (characters outside
                   [A-Za-z0-9_.-] as "_"), 8 hex digits of its SHA-256, the batch id
        <attempt>  one writer's own directory (a Spark task attempt), unique per attempt
        <partition>  a complete live file (one commit or a few, fsynced) of the table's
                   schema, write options and encryption: a segment, not yet listed

Protocol (the writer lock is held by the one process that stages and adopts the batch, from
:meth:`Table.stage` to :meth:`Table.adopt_staged`)::

    driver   staged = table.stage(app_id, batch_id)          a picklable StagedBatch
    workers  segments = staged.write(batches, attempt)       every attempt writes its own
                                                             directory; a failed or losing
                                                             attempt's files stay unreported
    driver   table.adopt_staged(segments of exactly one attempt per piece of work, ...)
               1. (app_id, batch_id) already applied: skip (a replay), delete the staging
               2. verify each reported segment: data.parquet is exactly its size, the newest
                  commit of its _pm names that size and the footer XXH64 reported, its
                  columns are the table's (else nothing is published)
               3. rename each into <partition>/seg-N (the table's next numbers), fsync the
                  partition directories
               4. publish ONE _txn version listing them, applied[app_id] = batch_id
                  (the commit point)
               5. delete _staging/<batch> (failed, duplicate and losing attempts)

Crash rules: before step 4 nothing is committed. Opening the table (recovery, writer lock
held, so no batch is in flight) deletes ``_staging`` whole, and the existing rule deletes the
segment directories of step 3 that ``_txn`` does not list; the replayed batch stages again. After
step 4 the batch is applied: a replay is skipped, and leftover staging is deleted by the replay
or the next open. Adopted segments are sealed while the table stays open (the next append to
their partition starts a new segment), as a compacted newest segment is; after a reopen a
partition's listed newest segment takes appends, whoever wrote it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from streamwrite.arrow.partitioning import split_by_partition
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.crypto.live_keys import LiveKeys
from streamwrite.encode import EncodingPlanner, as_table, check_values, encode_row_group
from streamwrite.errors import ConfigError, CorruptFileError, StreamwriteIOError
from streamwrite.format.txn import DATA_FILE, Segment
from streamwrite.io.local import fsync_directory
from streamwrite.live.file import EncodedRowGroup, LiveFile
from streamwrite.table.evolution import segment_column_names
from streamwrite.table.execute import scan_segment

__all__ = [
    "STAGED_COMMIT_SIZE",
    "STAGING_DIR",
    "StagedBatch",
    "StagedSegment",
    "clean_staging",
    "move_staged",
    "staging_name",
    "verify_staged",
]

STAGING_DIR = "_staging"
"""The table subdirectory holding staged segments (deleted whole when a writer opens)."""
STAGED_COMMIT_SIZE = 64 * 1024 * 1024
"""Encoded bytes a staged segment holds in memory before committing them (below it, one
commit at the end: one footer and one fsync round per segment)."""
PENDING_ROW_GROUPS = 2
"""Rows waiting for a row group, over all partitions of an attempt, are at most this many
``row_group_size``: past it the partition holding the most is cut into a smaller row group."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.=+-]*")


def staging_name(app_id: str, batch_id: int) -> str:
    """The staging directory name of batch ``(app_id, batch_id)`` (module docstring).

    Returns:
        ``<app id, unsafe characters as _>-<8 hex of SHA-256(app id)>-<batch id>``.
    """
    digest = hashlib.sha256(app_id.encode()).hexdigest()[:8]
    return f"{_UNSAFE.sub('_', app_id)[:64]}-{digest}-{batch_id}"


@dataclass(frozen=True, slots=True)
class StagedSegment:
    """A segment one attempt staged: a complete live file waiting to be adopted.

    ``path`` is relative to the table directory (``_staging/<batch>/<attempt>/<partition>``);
    ``size`` the committed size of its ``data.parquet``; ``footer_xxh64`` the XXH64 of the
    footer ending there (as its ``_pm`` records it); ``num_rows`` its rows.
    """

    partition: str
    path: str
    size: int
    footer_xxh64: int | None
    num_rows: int


@dataclass(frozen=True)
class StagedBatch:
    """Where and how to stage batch ``(app_id, batch_id)`` of a table (made by
    :meth:`streamwrite.Table.stage`; picklable: send it to the workers).

    Every worker writes through :meth:`write` with an attempt name of its own; the driver
    adopts what exactly one attempt of each piece of work reported
    (:meth:`streamwrite.Table.adopt_staged`).
    """

    path: str
    """The table directory (workers must see it at the same path: local or shared storage)."""
    app_id: str
    batch_id: int
    schema: pa.Schema
    timestamp: str | None
    partition_by: str | None
    write_options: dict[str, Any] = field(default_factory=dict)
    encryption: FileEncryption | None = None
    commit_size: int = STAGED_COMMIT_SIZE
    """Encoded bytes a staged segment holds in memory before it commits them."""

    @property
    def directory(self) -> str:
        """The batch's staging directory, relative to the table directory."""
        return f"{STAGING_DIR}/{staging_name(self.app_id, self.batch_id)}"

    def write(self, data: Iterable[pa.Table | pa.RecordBatch], attempt: str) -> list[StagedSegment]:
        """Encode ``data`` (tables or record batches of the table's schema) into one staged
        segment per partition its rows fall in, in the attempt's own directory, and commit
        them durably (blocking; the encoding runs in this thread, with no process pool).

        Row groups hold ``row_group_size`` rows (the table's write option), the last one of
        each segment fewer, and fewer when rows spread over many partitions (at most twice
        ``row_group_size`` rows wait, over all partitions); rows keep their order within a
        partition.

        Args:
            data: the rows, in pieces of any size.
            attempt: this attempt's directory name (letters, digits, ``_.=+-``), unique
                among the batch's attempts (a Spark task attempt id and a random suffix).

        Returns:
            The staged segments, by partition name (empty when ``data`` had no row).

        Raises:
            ConfigError: a bad ``attempt`` name, or its directory exists (reused).
            SchemaError: a piece does not have the table's schema or holds a value its
                column cannot take.
            StreamwriteIOError: a write or fsync failed.
        """
        if not isinstance(attempt, str) or not _COMPONENT.fullmatch(attempt):
            raise ConfigError(
                f"A staging attempt name is letters, digits and _.=+- (not starting with "
                f"one of _.=+-), got {attempt!r}."
            )
        writer = _StagedWriter(self, Path(self.path) / self.directory / attempt)
        try:
            for piece in data:
                writer.add(piece)
            return writer.finish()
        finally:
            writer.close()


class _StagedWriter:
    """One attempt's staged segments, one per partition (blocking)."""

    def __init__(self, batch: StagedBatch, directory: Path) -> None:
        self.batch = batch
        self.directory = directory
        self.relative = f"{batch.directory}/{directory.name}"
        if directory.exists():
            raise ConfigError(f"The staging directory {str(directory)!r} exists already.")
        self.keys = LiveKeys.of(batch.encryption, None)
        self.files: dict[str, LiveFile] = {}
        self.pending: dict[str, list[pa.Table]] = {}
        self.pending_rows: dict[str, int] = {}
        self.encoded: dict[str, list[EncodedRowGroup]] = {}
        self.encoded_size: dict[str, int] = {}
        self.num_rows: dict[str, int] = {}
        self.planners: dict[str, EncodingPlanner] = {}
        self.ordinals: dict[str, int] = {}
        self.parquet_schema: Any = None
        self.row_group_size = 0

    def _file(self, partition: str) -> LiveFile:
        live = self.files.get(partition)
        if live is None:
            live = LiveFile._open_sync(
                self.directory / partition,
                self.batch.schema,
                self.batch.write_options,
                None,
                self.keys,
                DATA_FILE,
            )
            self.files[partition] = live
            self.parquet_schema = live._schema
            self.row_group_size = live.options.row_group_size
            self.ordinals[partition] = 0
        return live

    def add(self, piece: pa.Table | pa.RecordBatch) -> None:
        table = as_table(piece, self.batch.schema, "the table")
        if not table.num_rows:
            return
        split = split_by_partition(table, self.batch.timestamp, self.batch.partition_by)
        for partition, rows in split:
            live = self._file(partition)
            check_values(rows, live._schema)
            self.pending.setdefault(partition, []).append(rows)
            self.pending_rows[partition] = self.pending_rows.get(partition, 0) + rows.num_rows
            self.num_rows[partition] = self.num_rows.get(partition, 0) + rows.num_rows
            while self.pending_rows[partition] >= self.row_group_size:
                self._cut(partition, self.row_group_size)
        # Rows spread over many partitions: bound what waits (the fullest goes first).
        while sum(self.pending_rows.values()) > PENDING_ROW_GROUPS * self.row_group_size:
            fullest = max(self.pending_rows, key=self.pending_rows.__getitem__)
            self._cut(fullest, self.pending_rows[fullest])

    def _cut(self, partition: str, size: int) -> None:
        """Encode the partition's next row group of ``size`` rows (or what is pending)."""
        rows = pa.concat_tables(self.pending[partition])
        piece, rest = rows.slice(0, size), rows.slice(size)
        self.pending[partition] = [rest] if rest.num_rows else []
        self.pending_rows[partition] = rest.num_rows
        live = self.files[partition]
        ordinal = self.ordinals[partition]
        chunks = encode_row_group(
            piece,
            live._schema,
            live.options,
            encryptor=live._encryptor,
            row_group_ordinal=ordinal,
            planner=self.planners.setdefault(partition, EncodingPlanner()),
        )
        self.ordinals[partition] = ordinal + 1
        self.encoded.setdefault(partition, []).append((chunks, piece.num_rows))
        size_now = self.encoded_size.get(partition, 0)
        size_now += sum(len(chunk.data) for chunk in chunks)
        self.encoded_size[partition] = size_now
        if size_now >= self.batch.commit_size:
            self._commit(partition)

    def _commit(self, partition: str) -> None:
        row_groups = self.encoded.pop(partition, [])
        self.encoded_size[partition] = 0
        if row_groups:
            self.files[partition]._commit_sync(row_groups, ())

    def finish(self) -> list[StagedSegment]:
        staged = []
        for partition in sorted(self.files):
            if self.pending_rows.get(partition):
                self._cut(partition, self.pending_rows[partition])
            self._commit(partition)
            commit = self.files[partition].last_commit
            staged.append(
                StagedSegment(
                    partition,
                    f"{self.relative}/{partition}",
                    commit.parquet_size,
                    commit.footer_checksum,
                    self.num_rows[partition],
                )
            )
        return staged

    def close(self) -> None:
        for live in self.files.values():
            live._io.close()
        self.files = {}


# -- the driver's side: verify, move, clean (blocking; the table runs them in a thread) ---------


def verify_staged(
    table_path: Path,
    staged: Iterable[StagedSegment],
    batch_directory: str,
    columns: tuple[str, ...],
) -> list[StagedSegment]:
    """Check every reported segment before anything is published (module docstring, step 2).

    Returns:
        The segments, in a stable order (partition, path).

    Raises:
        ConfigError: a path outside the batch's staging directory, a partition name that
            does not match the path, or a segment reported twice.
        CorruptFileError: a segment missing (are the workers writing to the same storage as
            the driver?), shorter or longer than reported, with another footer XXH64, or of
            other columns than the table's.
    """
    segments = sorted(staged, key=lambda s: (s.partition, s.path))
    seen: set[str] = set()
    for segment in segments:
        parts = segment.path.split("/")
        if (
            len(parts) != 4
            or "/".join(parts[:2]) != batch_directory
            or not all(_COMPONENT.fullmatch(part) for part in parts[2:])
            or parts[3] != segment.partition
        ):
            raise ConfigError(
                f"The staged segment {segment.path!r} (partition {segment.partition!r}) is not "
                f"a partition directory of an attempt under {batch_directory!r}."
            )
        if segment.path in seen:
            raise ConfigError(f"The staged segment {segment.path!r} is reported twice.")
        seen.add(segment.path)
        directory = table_path / segment.path
        found = scan_segment(directory)
        where = f"The staged segment {str(directory)!r}"
        if found.data_size is None:
            raise CorruptFileError(
                f"{where} is missing: the workers that wrote it do not share the table "
                "directory with this process, or its staging was deleted (by another writer "
                "opening the table).",
                0,
            )
        if not (found.data_size == found.committed_size == segment.size):
            raise CorruptFileError(
                f"{where} was reported at {segment.size} bytes; its data.parquet has "
                f"{found.data_size} and its _pm names {found.committed_size}.",
                0,
            )
        if found.footer_xxh64 != segment.footer_xxh64:
            raise CorruptFileError(
                f"{where}: reported footer XXH64 {segment.footer_xxh64}, its _pm records "
                f"{found.footer_xxh64}.",
                0,
            )
        own = segment_column_names(directory)
        if own != columns:
            raise CorruptFileError(
                f"{where} has the columns {list(own)}, the table has {list(columns)}.", 0
            )
    return segments


def move_staged(
    table_path: Path, moves: list[tuple[StagedSegment, str]]
) -> dict[str, list[Segment]]:
    """Rename each staged segment to ``<partition>/<name>`` (``moves``: segment and its new
    name), then fsync every directory touched (module docstring, step 3).

    Returns:
        The segments to list, per partition, in order.

    Raises:
        StreamwriteIOError: a rename or fsync failed (the segments moved so far are
            unlisted: the next open deletes them).
    """
    listed: dict[str, list[Segment]] = {}
    touched: set[Path] = set()
    try:
        for staged, name in moves:
            partition = table_path / staged.partition
            if not partition.exists():
                partition.mkdir()
                touched.add(table_path)
            os.rename(table_path / staged.path, partition / name)
            touched.add(partition)
            listed.setdefault(staged.partition, []).append(
                Segment(name, staged.size, staged.footer_xxh64)
            )
        for directory in sorted(touched, key=lambda p: len(p.parts), reverse=True):
            fsync_directory(directory)
    except OSError as exc:
        raise StreamwriteIOError(
            f"Moving staged segments into the table {str(table_path)!r} failed: {exc}."
        ) from exc
    return listed


def clean_staging(table_path: Path, batch_directory: str | None = None) -> None:
    """Delete one batch's staging directory (``batch_directory``, relative to the table), or
    all of ``_staging`` (None: what a writer opening the table does). Missing is fine."""
    target = table_path / (batch_directory or STAGING_DIR)
    if target.exists():
        shutil.rmtree(target, ignore_errors=True)
    with contextlib.suppress(OSError):  # gone, or another batch's staging is there
        (table_path / STAGING_DIR).rmdir()
