"""Commit state machine of one live file (DESIGN section 3), without I/O.

A live file is a directory holding ``data.parquet`` and its sidecar ``_pm``. One commit of a
bare live file takes two sync rounds::

    1. WriteAt(data, size)   new row groups, their bloom filters and page indexes, then a new
                             FileMetaData listing every row group (key/value metadata
                             streamwrite.prev_size and streamwrite.commit_seq), length, "PAR1"
    2. WriteAt(pm, pm_size)  the new row group blocks, a new footer with the XXH64 of the
                             Parquet tail written in step 1, CRC32, trailer
    3. Fsync(data)           round 1: both files, one after the other in one thread hop
    4. Fsync(pm)
    5. WriteAt(pm, 0)        PARQUET_META_FILE_SIZE = new pm size: the commit point
    6. Fsync(pm)             round 2

(``Fsync`` runs as ``fdatasync``: every write either appends, whose new size fdatasync makes
durable, or overwrites in place; no other metadata matters.) The header is patched only once
the new blocks and the data are durable, so a crash leaves ``_pm`` naming the previous commit
(its size field still old) or this one (everything it names durable); recovery truncates the
torn tails past it. Same outcomes as the five-step protocol with a sync after each write.

Inside a table (``prepare(..., table=True)``) the ``_txn`` publish is the commit point, so the
header patch is no barrier: the actions are only the writes 1, 2 and 5, and
:attr:`PendingCommit.syncs` (``Fsync(data)``, ``Fsync(pm)``) are run by the table in one round
with every other segment of the same table commit, before the ``_txn`` record (round 2). A crash
may then leave the new ``_pm`` header durable without its blocks, or ``_pm`` durable without the
data: the table's recovery never trusts a segment's ``_pm`` beyond ``_txn``; it brings the
segment to the ``_txn`` size (:func:`streamwrite.layout.recovery.plan_recovery_at`), rebuilding
``_pm`` from the Parquet footer chain when it does not hold that version intact.

States and transitions::

    READY --prepare()--> COMMITTING --confirm()--> READY
                             |
                             +------fail()------> POISONED (every later call raises)

Offsets are counted, never read back. A failure anywhere in a commit (an fsync error above
all: the kernel may have dropped the dirty pages) poisons the machine; nothing more is
acknowledged, and reopening the file recovers to the last commit point.

Encrypted live files (the FileWriter has a FileEncryptor; DESIGN sections 3 and 5): one
``aad_file_unique`` and one data key per column for the file's whole life, the footer of step 1
is ``FileCryptoMetaData enc(FileMetaData) length "PARE"`` (or a signed plaintext footer), and
each row group carries its true ordinal. Row group ordinals are i16 in the module AADs, so
:meth:`Appender.prepare` refuses, with :class:`~streamwrite.errors.LimitError` and before any
action exists, a commit that would need an ordinal above ``MAX_ORDINAL`` (32767).

What ``_pm`` holds for an encrypted column (``ColumnChunk.crypto_metadata`` set): only the
chunk's layout, as a signed plaintext footer shows it (codec, encodings, ``num_values``, byte
range, compressed size). Its statistics (null count, min, max) are left absent and its
external bloom filter entry is ``(0, 0)`` (the bloom filter is an encrypted module, useless to
a reader without keys). Row counts, column names and types are in ``_pm`` as for any live
file. No key and no key metadata is ever written to ``_pm``. The layout of a chunk whose
ColumnMetaData is encrypted (encrypted footer, column key) is read through a
:data:`ColumnMetaOf` that decrypts ``encrypted_column_metadata``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Generic

from streamwrite.errors import (
    EncryptionError,
    LimitError,
    StateError,
)
from streamwrite.format import structs as t
from streamwrite.format.aad import MAX_ORDINAL, ModuleType
from streamwrite.format.chunk import EncodedChunk
from streamwrite.format.footer import KV_COMMIT_SEQ, KV_PREV_SIZE
from streamwrite.format.sidecar.codec import (
    FEATURE_BLOOM_FILTERS,
    FEATURE_BLOOM_FILTERS_EXTERNAL,
    ChunkRecord,
    ColumnDescriptor,
    RowGroupBlock,
    SidecarHeader,
    SidecarWriter,
    encoding_mask,
    parquet_footer_checksum,
    patch_committed_size,
)
from streamwrite.format.thrift.codec import deserialize
from streamwrite.layout.actions import Action, Fsync, LiveFileName, WriteAt
from streamwrite.layout.file_writer import FileWriter
from streamwrite.layout.ports import EncryptorPort, EncryptorT, SchemaPort
from streamwrite.layout.recovery import FooterVersion, ReadAt
from streamwrite.options import WriteOptions

__all__ = [
    "Appender",
    "AppenderState",
    "ColumnMetaOf",
    "Commit",
    "PendingCommit",
    "column_meta_from_encryptor",
    "rebuild_sidecar",
    "sidecar_header",
]

ColumnMetaOf = Callable[[t.ColumnChunk, int, int], t.ColumnMetaData]
"""``(column chunk, row group ordinal, column ordinal) -> ColumnMetaData`` of a chunk whose
ColumnMetaData is only in ``encrypted_column_metadata`` (it decrypts the module)."""

_BLOOM_HEADER_MAX_SIZE = 64

DATA = LiveFileName.DATA
PM = LiveFileName.PM


@dataclass(frozen=True, slots=True)
class Commit:
    """One committed version of a live file: the file's state right after that commit.

    ``LiveFile.append`` returns it; ``LiveFile.snapshots()`` lists one per version, oldest
    first. ``seq`` numbers the commits (0: the empty file made when the file was created);
    ``parquet_size`` is the committed size of ``data.parquet`` (a valid Parquet file, and the
    snapshot token: ``read_table(path, snapshot=commit.parquet_size)``); ``num_rows`` and
    ``num_row_groups`` count the whole file at that size.
    """

    seq: int
    parquet_size: int
    num_rows: int
    num_row_groups: int
    footer_checksum: int | None = None
    """XXH64 of the Parquet tail ending at ``parquet_size`` (FileMetaData, its length, the
    magic), as ``_pm`` records it; None for a commit made before streamwrite recorded them.
    Tables record it in ``_txn`` too."""


@dataclass(frozen=True, slots=True)
class PendingCommit:
    """The actions of one commit, in order, and the Commit they produce when all succeed."""

    actions: tuple[Action, ...]
    commit: Commit
    pm_size: int
    syncs: tuple[Action, ...] = ()
    """A table commit's sync round (run after ``actions``, with the other segments'); empty
    for a bare live file, whose ``actions`` hold both rounds."""


class AppenderState(Enum):
    READY = "ready"
    COMMITTING = "committing"
    POISONED = "poisoned"


def sidecar_header(
    schema: SchemaPort, options: WriteOptions, bloom_columns: Sequence[int] | None = None
) -> SidecarHeader:
    """The ``_pm`` header of a live file with this schema and these options.

    ``bloom_columns`` (fixed when the file is created) defaults to the columns whose options
    ask for a bloom filter.
    """
    descending = {s.column_index for s in options.sorting_columns if s.descending}
    columns = tuple(
        ColumnDescriptor(
            name=spec.name,
            physical_type=int(spec.physical_type),
            fixed_byte_len=spec.type_length or 0,
            max_def_level=spec.max_definition_level,
            max_rep_level=spec.max_repetition_level,
            flags=(int(spec.repetition) << 2) | ((1 << 4) if spec.index in descending else 0),
        )
        for spec in schema.columns
    )
    if bloom_columns is None:
        bloom_columns = [
            spec.index
            for spec in schema.columns
            if options.column(spec.name).bloom_filter is not None
        ]
    flags = (FEATURE_BLOOM_FILTERS | FEATURE_BLOOM_FILTERS_EXTERNAL) if bloom_columns else 0
    return SidecarHeader(
        columns=columns,
        sorting_columns=tuple(s.column_index for s in options.sorting_columns),
        feature_flags=flags,
        bloom_columns=tuple(sorted(bloom_columns)),
    )


def column_meta_from_encryptor(encryptor: EncryptorPort) -> ColumnMetaOf:
    """A :data:`ColumnMetaOf` decrypting with the ciphers of the file's own encryptor.

    Raises (when called):
        EncryptionError: the module does not decrypt, or the column is not encrypted.
    """

    def column_meta(column: t.ColumnChunk, row_group: int, ordinal: int) -> t.ColumnMetaData:
        cipher = encryptor.column_cipher(ordinal)
        if cipher is None or column.encrypted_column_metadata is None:
            raise EncryptionError(
                f"Column {ordinal} of row group {row_group} has no ColumnMetaData to decrypt."
            )
        plain, _ = cipher.decrypt(
            ModuleType.COLUMN_META_DATA, column.encrypted_column_metadata, row_group, ordinal
        )
        meta, _ = deserialize(t.ColumnMetaData, plain)
        return meta

    return column_meta


def _column_meta(
    column: t.ColumnChunk, row_group: int, ordinal: int, column_meta: ColumnMetaOf | None
) -> t.ColumnMetaData:
    if column.meta_data is not None:
        return column.meta_data
    if column_meta is None:
        raise EncryptionError(
            f"The ColumnMetaData of column {ordinal} in row group {row_group} is encrypted; "
            "describing it in _pm needs the file's keys."
        )
    return column_meta(column, row_group, ordinal)


def _chunk_record(column: t.ColumnChunk, meta: t.ColumnMetaData) -> ChunkRecord:
    """The ``_pm`` record of a chunk; no statistics for an encrypted column."""
    stats = None if column.crypto_metadata is not None else meta.statistics
    start = meta.dictionary_page_offset or meta.data_page_offset or 0
    return ChunkRecord(
        codec=int(meta.codec or 0),
        encodings=encoding_mask(int(e) for e in meta.encodings or []),
        num_values=meta.num_values or 0,
        byte_range_start=start,
        total_compressed=meta.total_compressed_size or 0,
        null_count=None if stats is None else stats.null_count,
        distinct_count=None,
        min_stat=None if stats is None else stats.min_value,
        max_stat=None if stats is None else stats.max_value,
        min_exact=bool(stats is None or stats.is_min_value_exact is not False),
        max_exact=bool(stats is None or stats.is_max_value_exact is not False),
    )


def _external_bloom(column: t.ColumnChunk, meta: t.ColumnMetaData, read: ReadAt) -> tuple[int, int]:
    """(offset, length) of the chunk's bloom filter bitset in data.parquet; (0, 0) if none or
    if the column is encrypted (its filter is an encrypted module).

    ``read(offset, size)`` reads data.parquet bytes (or the bytes about to be written there).
    """
    if column.crypto_metadata is not None:
        return (0, 0)
    if meta.bloom_filter_offset is None or not meta.bloom_filter_length:
        return (0, 0)
    raw = read(meta.bloom_filter_offset, min(meta.bloom_filter_length, _BLOOM_HEADER_MAX_SIZE))
    header, header_size = deserialize(t.BloomFilterHeader, raw)
    return (meta.bloom_filter_offset + header_size, header.numBytes or 0)


def _blocks(
    row_groups: Sequence[t.RowGroup],
    header: SidecarHeader,
    read: ReadAt,
    first_ordinal: int,
    column_meta: ColumnMetaOf | None = None,
) -> tuple[list[RowGroupBlock], list[tuple[int, int]]]:
    """The ``_pm`` blocks of new row groups and their external bloom entries (row-major).

    ``first_ordinal`` is the index of ``row_groups[0]`` in the file.
    """
    blocks = []
    blooms = []
    for index, row_group in enumerate(row_groups, first_ordinal):
        ordinal = index if row_group.ordinal is None else row_group.ordinal
        columns = row_group.columns or []
        metas = [_column_meta(c, ordinal, i, column_meta) for i, c in enumerate(columns)]
        blocks.append(
            RowGroupBlock(
                num_rows=row_group.num_rows or 0,
                chunks=tuple(_chunk_record(c, m) for c, m in zip(columns, metas, strict=True)),
            )
        )
        blooms += [_external_bloom(columns[i], metas[i], read) for i in header.bloom_columns]
    return blocks, blooms


def _bloom_columns(row_groups: Sequence[t.RowGroup], column_meta: ColumnMetaOf | None) -> list[int]:
    """The columns with a bloom filter in some row group (the file's bloom columns)."""
    found: set[int] = set()
    for index, rg in enumerate(row_groups):
        ordinal = index if rg.ordinal is None else rg.ordinal
        for i, column in enumerate(rg.columns or []):
            if i in found:
                continue
            meta = _column_meta(column, ordinal, i, column_meta)
            if meta.bloom_filter_offset is not None:
                found.add(i)
    return sorted(found)


def rebuild_sidecar(
    schema: SchemaPort,
    options: WriteOptions,
    versions: Sequence[FooterVersion],
    read: ReadAt,
    column_meta: ColumnMetaOf | None = None,
) -> bytes:
    """A committed ``_pm`` describing every version of a footer chain (oldest first).

    ``column_meta`` decrypts the ColumnMetaData of encrypted columns (encrypted live files).
    Each footer records the checksum of its version's Parquet tail as read now through
    ``read``: the chain walk that produced ``versions`` is what vouches for those bytes.

    Returns:
        The whole ``_pm`` file, its committed size patched in.

    Raises:
        EncryptionError: an encrypted ColumnMetaData without ``column_meta``, or one that
            does not decrypt.
    """
    newest = versions[-1].metadata.row_groups or []
    bloom_columns = _bloom_columns(newest, column_meta)
    header = sidecar_header(schema, options, bloom_columns)
    sidecar = SidecarWriter(header)
    out = bytearray(sidecar.start())
    done = 0
    unused = 0
    for i, version in enumerate(versions):
        row_groups = version.metadata.row_groups or []
        blocks, blooms = _blocks(row_groups[done:], header, read, done, column_meta)
        if i:
            unused += versions[i - 1].footer_length + 8
        tail = read(version.footer_offset, version.footer_length + 8)
        data, size = sidecar.commit(
            blocks,
            version.footer_offset,
            version.footer_length,
            unused,
            external_bloom=blooms,
            parquet_footer_checksum=parquet_footer_checksum(tail),
        )
        out += data
        out[0:8] = patch_committed_size(size)
        done = len(row_groups)
    return bytes(out)


class Appender(Generic[EncryptorT]):
    """Turns row groups into the ordered actions of a commit and tracks the committed state.

    Generic over the encryptor its :class:`FileWriter` holds (see
    :data:`streamwrite.layout.ports.EncryptorT`).
    """

    def __init__(
        self,
        writer: FileWriter[EncryptorT],
        sidecar: SidecarWriter,
        header: SidecarHeader,
        *,
        seq: int,
        pm_size: int,
        unused_bytes: int,
        footer_checksum: int | None = None,
    ) -> None:
        self.writer = writer
        self._column_meta = (
            None if writer.encryptor is None else column_meta_from_encryptor(writer.encryptor)
        )
        self.sidecar = sidecar
        self.header = header
        self.seq = seq
        self.parquet_size = writer.offset
        self.pm_size = pm_size
        self.unused_bytes = unused_bytes
        self.state = AppenderState.READY
        self._pending: PendingCommit | None = None
        self.last_commit = Commit(
            seq, writer.offset, writer.num_rows, len(writer.row_groups), footer_checksum
        )
        """The newest acknowledged commit (a failed commit never changes it)."""

    @classmethod
    def create(
        cls, schema: SchemaPort, options: WriteOptions, encryptor: EncryptorT | None = None
    ) -> tuple[Appender[EncryptorT], PendingCommit]:
        """A new, empty live file: commit 0 holds the schema and no row groups.

        ``encryptor`` (its ``aad_file_unique`` and data keys) encrypts the file for its life.

        Returns:
            The machine (COMMITTING) and the actions creating both files.
        """
        header = sidecar_header(schema, options)
        writer = FileWriter(schema, options, encryptor=encryptor)
        sidecar = SidecarWriter(header)
        appender = cls(writer, sidecar, header, seq=-1, pm_size=0, unused_bytes=0)
        magic = writer.start()
        pm_start = sidecar.start()
        pending = appender._plan([], prefix=((DATA, 0, magic), (PM, 0, pm_start)))
        return appender, pending

    def check_ready(self) -> None:
        """Raise StateError unless a commit can start (poisoned, or a commit in progress)."""
        if self.state == AppenderState.POISONED:
            raise StateError(
                "This live file failed an earlier commit and accepts nothing more; "
                "reopen it to recover to its last commit."
            )
        if self.state != AppenderState.READY:
            raise StateError("A commit is already in progress on this live file.")

    def check_row_group_capacity(self, num_row_groups: int) -> None:
        """Refuse ``num_row_groups`` more row groups if an encrypted file cannot number them.

        Raises:
            LimitError: the last new row group's ordinal would exceed ``MAX_ORDINAL`` (32767;
                ordinals are i16 in the module AADs). Nothing is planned or written.
        """
        if self.writer.encryptor is None or num_row_groups <= 0:
            return
        existing = len(self.writer.row_groups)
        last = existing + num_row_groups - 1
        if last > MAX_ORDINAL:
            raise LimitError(
                f"This encrypted live file holds {existing} row groups; appending "
                f"{num_row_groups} more needs row group ordinal {last}, but an encrypted "
                f"Parquet file holds at most {MAX_ORDINAL + 1} row groups (ordinals "
                f"0..{MAX_ORDINAL}, i16 in the module AADs). Compact the live file (rewrite it "
                "into fewer, larger row groups) or start a new one before appending more."
            )

    def prepare(
        self,
        row_groups: Sequence[tuple[Sequence[EncodedChunk], int]],
        key_value_metadata: Sequence[tuple[str, str]] = (),
        *,
        table: bool = False,
    ) -> PendingCommit:
        """Plan a commit appending ``row_groups`` (encoded chunks, row count) in order.

        ``key_value_metadata`` goes into this commit's footer only (e.g. the table's
        ``(app_id, batch_id)`` record), after streamwrite's own keys. With ``table`` the
        actions are the writes only and :attr:`PendingCommit.syncs` the sync round the table
        runs before its ``_txn`` (module docstring).

        Returns:
            The actions to run and the Commit they produce.

        Raises:
            StateError: the machine is poisoned.
            LimitError: an encrypted file would need a row group ordinal above 32767.
        """
        self.check_ready()
        self.check_row_group_capacity(len(row_groups))
        return self._plan(row_groups, prefix=(), key_value_metadata=key_value_metadata, table=table)

    def _plan(
        self,
        row_groups: Sequence[tuple[Sequence[EncodedChunk], int]],
        prefix: tuple[tuple[LiveFileName, int, bytes], ...],
        key_value_metadata: Sequence[tuple[str, str]] = (),
        table: bool = False,
    ) -> PendingCommit:
        writer = self.writer
        data_start = writer.offset  # == parquet_size, or 4 after a new file's magic
        previous_footer_size = writer.last_footer_length + 8 if self.seq >= 0 else 0
        parts = [writer.add_row_group(chunks, num_rows) for chunks, num_rows in row_groups]
        first_new = len(writer.row_groups) - len(row_groups)
        seq = self.seq + 1
        parts.append(
            writer.footer(
                (
                    (KV_PREV_SIZE, str(self.parquet_size)),
                    (KV_COMMIT_SEQ, str(seq)),
                    *key_value_metadata,
                )
            )
        )
        appended = b"".join(parts)

        def read_appended(offset: int, size: int) -> bytes:
            return appended[offset - data_start : offset - data_start + size]

        blocks, blooms = _blocks(
            writer.row_groups[first_new:], self.header, read_appended, first_new, self._column_meta
        )
        unused = self.unused_bytes + previous_footer_size
        tail_size = writer.last_footer_length + 8
        assert writer.last_footer_offset + tail_size == writer.offset  # the tail ends the file
        checksum = parquet_footer_checksum(memoryview(appended)[len(appended) - tail_size :])
        pm_bytes, pm_size = self.sidecar.commit(
            blocks,
            writer.last_footer_offset,
            writer.last_footer_length,
            unused,
            external_bloom=blooms,
            parquet_footer_checksum=checksum,
        )
        pm_start = pm_size - len(pm_bytes)
        actions: list[Action] = [WriteAt(f, off, data) for f, off, data in prefix]
        header = WriteAt(PM, 0, patch_committed_size(pm_size))
        writes = (WriteAt(DATA, data_start, appended), WriteAt(PM, pm_start, pm_bytes))
        round_1 = (Fsync(DATA), Fsync(PM))
        syncs: tuple[Action, ...] = ()
        if table:
            actions += [*writes, header]
            syncs = round_1
        else:
            actions += [*writes, *round_1, header, Fsync(PM)]
        commit = Commit(
            seq=seq,
            parquet_size=writer.offset,
            num_rows=writer.num_rows,
            num_row_groups=len(writer.row_groups),
            footer_checksum=checksum,
        )
        self.state = AppenderState.COMMITTING
        self._pending = PendingCommit(tuple(actions), commit, pm_size, syncs)
        self._pending_unused = unused
        return self._pending

    def pending_syncs(self) -> tuple[Action, ...]:
        """The sync round of the pending table commit (``prepare(..., table=True)``).

        Raises:
            StateError: no commit in progress.
        """
        if self.state != AppenderState.COMMITTING or self._pending is None:
            raise StateError("pending_syncs() without a commit in progress.")
        return self._pending.syncs

    def confirm(self) -> Commit:
        """Every action of the pending commit succeeded: it is acknowledged.

        Returns:
            The commit.
        """
        pending = self._pending
        if self.state != AppenderState.COMMITTING or pending is None:
            raise StateError("confirm() without a commit in progress.")
        self.seq = pending.commit.seq
        self.parquet_size = pending.commit.parquet_size
        self.pm_size = pending.pm_size
        self.unused_bytes = self._pending_unused
        self.state = AppenderState.READY
        self._pending = None
        self.last_commit = pending.commit
        return pending.commit

    def fail(self) -> None:
        """An action failed: poison the machine (no retry, nothing more acknowledged)."""
        self.state = AppenderState.POISONED
        self._pending = None
