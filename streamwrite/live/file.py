"""``LiveFile``: a Parquet file that grows by commits and is readable at every committed size.

A live file is a directory holding ``data.parquet`` and its sidecar ``_pm``::

    lf = await streamwrite.LiveFile.open("trades/2026-11-22", schema)   # create or reopen
    commit = await lf.append(table)         # row groups + a new cumulative footer, fsynced
    lf.snapshots()                          # every committed version, oldest first
    streamwrite.read_table("trades/2026-11-22", snapshot=commit.parquet_size)
    await lf.close()                        # or: async with await LiveFile.open(...) as lf

Opening recovers first (:mod:`streamwrite.layout.recovery`); appends run the commit protocol of
:mod:`streamwrite.layout.appender`. Every read checks the committed footer against the XXH64
``_pm`` records for it and its schema against ``_pm`` and ``ARROW:schema``
(:mod:`streamwrite.reader.tail`); reopening checks every committed footer the same way, and
damage inside the committed prefix is a CorruptFileError that changes nothing. Encoding and
file I/O run in worker threads, so the event loop stays free; appends to one LiveFile are
serialised.

Encrypted live files (Parquet modular encryption, DESIGN sections 3 and 5)::

    lf = await LiveFile.open(path, schema, encryption=FileEncryption(KeyWrapper(kms, config)))
    lf = await LiveFile.open(path, encryption=FileEncryption(...))        # reopen, or
    lf = await LiveFile.open(path, decryption=DecryptionConfig.from_kms(kms))
    read_table(path, snapshot=commit.parquet_size, decryption=DecryptionConfig.from_kms(kms))

The file keeps one ``aad_file_unique`` and one data key per column for its life: reopening
decrypts the newest committed footer and adopts its keys (:mod:`streamwrite.crypto.live_keys`); the
settings of the file win, and ``encryption=`` contradicting them is a ConfigError. Every
committed prefix is a valid encrypted Parquet file whose row groups carry their true ordinals;
an append that would need an ordinal above 32767 raises LimitError before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa

from streamwrite.arrow.schema import ParquetSchema, arrow_to_parquet, parquet_to_arrow
from streamwrite.arrow.schema_check import check_arrow_schema, check_sidecar_columns
from streamwrite.arrow.schema_diff import schema_mismatch
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.crypto.encryption import FileEncryption, FileEncryptor
from streamwrite.crypto.live_keys import LiveKeys
from streamwrite.encode import EncodingPlanner, as_table, check_write_options, encode_row_group
from streamwrite.errors import (
    ConfigError,
    CorruptFileError,
    EncryptionError,
    StateError,
    StreamwriteError,
    StreamwriteIOError,
)
from streamwrite.format.chunk import EncodedChunk
from streamwrite.format.sidecar.codec import SidecarWriter, read_sidecar
from streamwrite.io.local import (
    ActionHook,
    LiveFileIO,
    SyncCall,
    fsync_directory,
    run_sync_round,
)
from streamwrite.layout.actions import LiveFileName, Truncate
from streamwrite.layout.appender import Appender, Commit, rebuild_sidecar
from streamwrite.layout.embedded_index import read_index_payload
from streamwrite.layout.file_writer import FileWriter
from streamwrite.layout.recovery import (
    FooterVersion,
    RecoveryPlan,
    newest_footer,
    plan_recovery,
    plan_recovery_at,
    plan_rollback,
)
from streamwrite.live.info import snapshots_from_sidecar
from streamwrite.options import BloomFilterOptions, WriteOptions, make_write_options

__all__ = [
    "Commit",
    "EncodedRowGroup",
    "LiveFile",
    "open_live_file",
    "recover",
    "recover_at",
    "sync_live_files",
]

EncodedRowGroup = tuple[Sequence[EncodedChunk], int]
"""A row group's encoded column chunks (schema order) and its row count."""


def _schema_of(version: FooterVersion) -> ParquetSchema:
    """The schema of a recovered version, cross-checked against its ``ARROW:schema``."""
    metadata = version.metadata
    check_arrow_schema(metadata.schema or [], metadata.key_value_metadata, version.footer_offset)
    try:
        return parquet_to_arrow(metadata.schema or [], metadata.key_value_metadata)
    except (StreamwriteError, ValueError) as exc:  # FormatError, UnsupportedError, bad UTF-8
        raise CorruptFileError(
            f"The schema in the footer of commit {version.seq} is damaged: {exc}",
            version.footer_offset,
        ) from exc


def _never_committed(io: LiveFileIO, keys: LiveKeys | None) -> bool:
    """True for a creation that crashed before its first commit point: ``_pm``'s size field
    is still 0 (or ``_pm`` is missing) AND ``data.parquet`` holds no complete footer. A missing
    ``_pm`` beside committed data is not this case: recovery rebuilds it.

    Raises:
        EncryptionError: the footers are encrypted and ``keys`` is None or wrong.
    """
    head = io.read(LiveFileName.PM, 0, 8)
    if len(head) == 8 and head != bytes(8):
        return False
    try:
        newest_footer(
            lambda offset, size: io.read(LiveFileName.DATA, offset, size),
            io.size(LiveFileName.DATA),
            keys,
        )
    except CorruptFileError:
        return True
    return False


def _recover(
    io: LiveFileIO, options: WriteOptions, apply: bool, keys: LiveKeys | None = None
) -> RecoveryPlan:
    """Plan recovery from the files behind ``io`` (footers opened with ``keys``), and run its
    actions if ``apply``."""
    pm_exists = io.size(LiveFileName.PM) > 0
    pm_data = io.read_all(LiveFileName.PM) if pm_exists else None

    def read(offset: int, size: int) -> bytes:
        return io.read(LiveFileName.DATA, offset, size)

    rebuild = _rebuilder(read, options, keys)
    plan = plan_recovery(io.size(LiveFileName.DATA), read, pm_data, rebuild, keys)
    if apply and plan.actions:
        io.run(plan.actions)
    return plan


def recover_at(
    path: str | Path,
    parquet_size: int,
    footer_xxh64: int | None = None,
    *,
    encryption: FileEncryption | None = None,
    decryption: DecryptionConfig | None = None,
) -> RecoveryPlan:
    """Bring the live file of a table's segment at ``path`` to exactly the version its
    ``_txn`` records (``parquet_size``, footer XXH64 ``footer_xxh64``) and return what was
    done: :func:`streamwrite.layout.recovery.plan_recovery_at` (blocking).

    Returns:
        The plan it ran.

    Raises:
        CorruptFileError: damage at or below ``parquet_size`` (nothing is changed).
        EncryptionError: an encrypted segment without keys, or keys that do not open it.
        StreamwriteIOError: the live file is open for writing elsewhere, or an action failed.
    """
    keys = LiveKeys.of(encryption, decryption)
    io = LiveFileIO(Path(path), create=False)
    try:
        pm_exists = io.size(LiveFileName.PM) > 0
        pm_data = io.read_all(LiveFileName.PM) if pm_exists else None

        def read(offset: int, size: int) -> bytes:
            return io.read(LiveFileName.DATA, offset, size)

        plan = plan_recovery_at(
            parquet_size,
            footer_xxh64,
            io.size(LiveFileName.DATA),
            read,
            pm_data,
            _rebuilder(read, WriteOptions(), keys),
            keys,
        )
        io.run(plan.actions)
        return plan
    finally:
        io.close()


def _rebuilder(
    read: Callable[[int, int], bytes], options: WriteOptions, keys: LiveKeys | None
) -> Callable[[list[FooterVersion]], bytes]:
    """Rebuilds a ``_pm`` from a footer chain read through ``read``."""

    def rebuild(versions: list[FooterVersion]) -> bytes:
        newest = versions[-1]
        schema = _schema_of(newest)
        column_meta = None
        if keys is not None and newest.crypto is not None:
            column_meta = keys.column_meta(newest.crypto, [c.name for c in schema.columns])
        return rebuild_sidecar(schema, options, versions, read, column_meta)

    return rebuild


def recover(
    path: str | Path,
    *,
    apply: bool = False,
    encryption: FileEncryption | None = None,
    decryption: DecryptionConfig | None = None,
) -> RecoveryPlan:
    """What recovery of the live file at ``path`` does (and, with ``apply``, do it).

    An encrypted live file needs its keys (``encryption=`` or ``decryption=``, as for
    :meth:`LiveFile.open`): the footer chain is decrypted to rebuild ``_pm``.

    Returns:
        The plan; ``plan.describe()`` says what it found and did.

    Raises:
        CorruptFileError: damage inside the committed prefix.
        EncryptionError: an encrypted live file without keys, or keys that do not open it.
    """
    keys = LiveKeys.of(encryption, decryption)
    directory = Path(path)
    io = LiveFileIO(directory, create=False)
    try:
        return _recover(io, WriteOptions(), apply, keys)
    finally:
        io.close()


def _keep_bloom_columns(
    options: WriteOptions, bloom_columns: Sequence[int], schema: ParquetSchema
) -> WriteOptions:
    """Options that keep writing bloom filters for the columns the file was created with."""
    columns = dict(options.columns)
    for index in bloom_columns:
        name = schema.columns[index].name
        column = options.column(name)
        if column.bloom_filter is None:
            columns[name] = replace(column, bloom_filter=BloomFilterOptions())
    return replace(options, columns=columns)


def _resume_appender(
    plan: RecoveryPlan,
    schema: ParquetSchema,
    options: WriteOptions,
    encryptor: FileEncryptor | None,
    io: LiveFileIO,
) -> Appender[FileEncryptor]:
    """A commit state machine continuing after the plan's current (recovered) version (its
    embedded index, if the options ask for one, continues the current footer's blob)."""
    current = plan.current
    payload = None
    if options.embedded_index:
        payload = read_index_payload(
            lambda offset, size: io.read(LiveFileName.DATA, offset, size),
            current.metadata,
            current.footer_offset,
            f"{str(io.directory)!r} at size {current.footer_offset + current.footer_length + 8}",
        )
    writer = FileWriter.resume(
        schema,
        options,
        current.metadata,
        current.footer_offset,
        current.footer_length,
        encryptor,
        payload,
    )
    sidecar = SidecarWriter.resume(plan.pm_bytes, plan.pm_size)
    newest = read_sidecar(plan.pm_bytes).footers[0][1]
    return Appender(
        writer,
        sidecar,
        sidecar.header,
        seq=current.seq,
        pm_size=plan.pm_size,
        unused_bytes=newest.unused_bytes,
        footer_checksum=newest.parquet_footer_checksum,
    )


def _resume_encryptor(
    directory: Path, current: FooterVersion, schema: ParquetSchema, keys: LiveKeys | None
) -> FileEncryptor | None:
    """The encryptor continuing a reopened file (None for a plaintext one)."""
    if current.crypto is None:
        if keys is not None and keys.encryption is not None:
            raise ConfigError(
                f"The live file at {str(directory)!r} was created without encryption; a live "
                "file keeps its encryption for life, so encryption= cannot be added on reopen."
            )
        return None
    if keys is None:
        raise EncryptionError(
            f"The live file at {str(directory)!r} is encrypted (signed plaintext footer): "
            "appending to it needs its keys (encryption=FileEncryption(...) or "
            "decryption=DecryptionConfig...)."
        )
    return keys.encryptor(current, [spec.path_in_schema for spec in schema.columns])


class LiveFile:
    """A live Parquet file opened for appending (create with :meth:`open`)."""

    def __init__(
        self,
        directory: Path,
        io: LiveFileIO,
        appender: Appender[FileEncryptor],
        schema: ParquetSchema,
        options: WriteOptions,
        recovery: RecoveryPlan | None,
        keys: LiveKeys | None = None,
    ) -> None:
        self.path = directory
        self._io = io
        self._appender = appender
        self._keys = keys
        self._schema = schema
        self.options = options
        self.recovery = recovery
        """What recovery found when the file was reopened (None for a new file)."""
        self._lock = anyio.Lock()
        self._closed = False
        self._planner = EncodingPlanner()  # each column's encoding decided once, re-sampled

    @classmethod
    async def open(
        cls,
        path: str | Path,
        schema: pa.Schema | None = None,
        *,
        encryption: FileEncryption | None = None,
        decryption: DecryptionConfig | None = None,
        **write_options: Any,
    ) -> LiveFile:
        """Create the live file at ``path`` (a directory), or reopen it after recovering.

        ``write_options`` are those of :func:`streamwrite.write_table`; they apply to the
        appends of this session. The bloom filter columns are fixed when the file is created:
        a reopened file keeps writing filters for them (default fpp when not given again).

        ``encryption`` encrypts a new file (Parquet modular encryption) with one
        ``aad_file_unique`` and one data key per column for its life. Reopening an encrypted
        file needs its keys: ``encryption`` (its key source unwraps the file's key metadata) or
        ``decryption``; the file's algorithm, footer mode, AAD prefix and data keys are kept.

        Returns:
            The open live file; its :attr:`recovery` says what recovery did.

        Raises:
            ConfigError: a new file without a schema, a schema that differs from the file's,
                ``encryption`` for a plaintext file or contradicting an encrypted one's.
            CorruptFileError: damage inside the committed prefix.
            EncryptionError: an encrypted file without keys, or keys that do not open it.
            StreamwriteError: the file is open for writing elsewhere.
        """
        return await open_live_file(
            path, schema, encryption=encryption, decryption=decryption, **write_options
        )

    @classmethod
    def _open_sync(
        cls,
        directory: Path,
        schema: pa.Schema | None,
        write_options: dict[str, Any],
        hook: ActionHook | None,
        keys: LiveKeys | None,
        data_file: str,
    ) -> LiveFile:
        exists = (directory / data_file).exists()
        if not exists:  # checked before anything is created
            if schema is None:
                raise ConfigError(f"A new live file at {str(directory)!r} needs a schema.")
            parquet_schema = arrow_to_parquet(schema)
            options = make_write_options(
                [c.path_in_schema for c in parquet_schema.columns],
                caller="LiveFile.open",
                **write_options,
            )
            check_write_options(parquet_schema, options)
            directory.mkdir(parents=True, exist_ok=True)
        io = LiveFileIO(directory, create=True, hook=hook, data_file=data_file)
        try:
            if exists and not _never_committed(io, keys):
                return cls._reopen(directory, io, schema, write_options, keys)
            # New, or a creation that crashed before its first commit point: start over.
            if schema is None:
                raise ConfigError(f"A new live file at {str(directory)!r} needs a schema.")
            if keys is not None and keys.encryption is None:
                raise ConfigError(
                    f"A new live file at {str(directory)!r} is encrypted with encryption=, "
                    "not decryption=."
                )
            encryption = None if keys is None else keys.encryption
            io.run([Truncate(LiveFileName.DATA, 0), Truncate(LiveFileName.PM, 0)])
            return cls._create(directory, io, schema, write_options, encryption, keys)
        except BaseException:
            io.close()
            raise

    @classmethod
    def _create(
        cls,
        directory: Path,
        io: LiveFileIO,
        schema: pa.Schema | None,
        write_options: dict[str, Any],
        encryption: FileEncryption | None,
        keys: LiveKeys | None,
    ) -> LiveFile:
        assert schema is not None
        parquet_schema = arrow_to_parquet(schema)
        options = make_write_options(
            [c.path_in_schema for c in parquet_schema.columns],
            caller="LiveFile.open",
            **write_options,
        )
        encryptor = (
            None
            if encryption is None
            else encryption._open_file([spec.path_in_schema for spec in parquet_schema.columns])
        )
        appender, pending = Appender.create(parquet_schema, options, encryptor)
        io.run(pending.actions)
        fsync_directory(directory)
        appender.confirm()
        return cls(directory, io, appender, parquet_schema, options, None, keys)

    @classmethod
    def _reopen(
        cls,
        directory: Path,
        io: LiveFileIO,
        schema: pa.Schema | None,
        write_options: dict[str, Any],
        keys: LiveKeys | None,
    ) -> LiveFile:
        plan = _recover(io, WriteOptions(), apply=True, keys=keys)
        current = plan.current
        parquet_schema = _schema_of(current)
        sidecar_header = read_sidecar(plan.pm_bytes).header
        check_sidecar_columns(current.metadata.schema or [], sidecar_header, current.footer_offset)
        encryptor = _resume_encryptor(directory, current, parquet_schema, keys)
        if schema is not None and not schema.equals(
            parquet_schema.arrow_schema, check_metadata=False
        ):
            first = schema_mismatch(parquet_schema.arrow_schema, schema, "the live file")
            raise ConfigError(
                f"{first or 'The schema given differs.'} The live file at {str(directory)!r} "
                f"has schema {parquet_schema.arrow_schema}, not {schema}."
            )
        options = make_write_options(
            [c.path_in_schema for c in parquet_schema.columns],
            caller="LiveFile.open",
            **write_options,
        )
        check_write_options(parquet_schema, options)
        options = _keep_bloom_columns(options, sidecar_header.bloom_columns, parquet_schema)
        appender = _resume_appender(plan, parquet_schema, options, encryptor, io)
        return cls(directory, io, appender, parquet_schema, options, plan, keys)

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of the file."""
        return self._schema.arrow_schema

    @property
    def _encryptor(self) -> FileEncryptor | None:
        """The file's encryption state (None for a plaintext file).

        Row groups encoded elsewhere for :meth:`commit_encoded` use it and their true
        ordinals: ``row_group_jobs(..., encryptor=lf._encryptor, row_group_ordinal=n)`` with
        ``n`` counting on from ``last_commit.num_row_groups``.
        """
        return self._appender.writer.encryptor

    @property
    def last_commit(self) -> Commit:
        """The newest acknowledged commit."""
        return self._appender.last_commit

    def _check_open(self) -> None:
        if self._closed:
            raise StateError(f"The live file {str(self.path)!r} is closed.")

    async def append(self, data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch]) -> Commit:
        """Append rows as one or more row groups and commit them durably.

        Returns:
            The commit (file totals right after it).

        Raises:
            SchemaError: the data's schema differs from the file's.
            LimitError: an encrypted file would need a row group ordinal above 32767 (nothing
                is written; compact the file first).
            StreamwriteIOError: a write or fsync failed; the LiveFile is then poisoned and
                every later append, commit or rollback raises StateError (reads of what was
                committed still work). Reopen it to recover to the last commit.
        """
        self._check_open()
        table = as_table(data, self.schema, "the live file")
        async with self._lock:
            row_groups = await anyio.to_thread.run_sync(self._encode_sync, table)
            return await anyio.to_thread.run_sync(self._commit_sync, row_groups, ())

    def _encode_sync(self, table: pa.Table) -> list[EncodedRowGroup]:
        size = self.options.row_group_size
        starts = range(0, table.num_rows, size)
        appender = self._appender
        appender.check_ready()
        appender.check_row_group_capacity(len(starts))  # before encoding anything
        first = len(appender.writer.row_groups)
        return [
            (
                encode_row_group(
                    table.slice(start, size),
                    self._schema,
                    self.options,
                    encryptor=appender.writer.encryptor,
                    row_group_ordinal=first + i,
                    planner=self._planner,
                ),
                min(size, table.num_rows - start),
            )
            for i, start in enumerate(starts)
        ]

    async def commit_encoded(
        self,
        row_groups: Sequence[EncodedRowGroup],
        key_value_metadata: Sequence[tuple[str, str]] = (),
    ) -> Commit:
        """Commit row groups encoded elsewhere (by a process pool), in order, as one commit.

        ``key_value_metadata`` is recorded in this commit's footer only. For an encrypted
        file, the row groups must have been encoded with :attr:`encryptor` and the ordinals
        they take here.

        Returns:
            The commit.

        Raises:
            LimitError: as for :meth:`append`.
            StreamwriteIOError: as for :meth:`append`.
        """
        self._check_open()
        async with self._lock:
            return await anyio.to_thread.run_sync(self._commit_sync, row_groups, key_value_metadata)

    async def _write_encoded(
        self,
        row_groups: Sequence[EncodedRowGroup],
        key_value_metadata: Sequence[tuple[str, str]] = (),
    ) -> Commit:
        """A table's commit of row groups encoded elsewhere, without its syncs: the data, the
        ``_pm`` blocks and the ``_pm`` header are written; the commit stays pending until
        :func:`sync_live_files` makes it durable in the table's sync round (the table's
        ``_txn`` is the commit point: :mod:`streamwrite.layout.appender`).

        Returns:
            The commit it will be once synced (its size and footer checksum go into ``_txn``).

        Raises:
            LimitError: as for :meth:`append`.
            StreamwriteIOError: a write failed (the file is poisoned).
        """
        self._check_open()
        async with self._lock:
            return await anyio.to_thread.run_sync(self._write_sync, row_groups, key_value_metadata)

    def _write_sync(
        self, row_groups: Sequence[EncodedRowGroup], key_value_metadata: Sequence[tuple[str, str]]
    ) -> Commit:
        appender = self._appender
        pending = appender.prepare(row_groups, key_value_metadata, table=True)
        try:
            self._io.run(pending.actions)
        except BaseException:
            appender.fail()
            raise
        return pending.commit

    def _pending_sync_calls(self) -> list[SyncCall]:
        """The sync round of the commit :meth:`_write_encoded` left pending."""
        try:
            return self._io.sync_calls(self._appender.pending_syncs())
        except BaseException:
            self._appender.fail()
            raise

    def _commit_sync(
        self, row_groups: Sequence[EncodedRowGroup], key_value_metadata: Sequence[tuple[str, str]]
    ) -> Commit:
        appender = self._appender
        pending = appender.prepare(row_groups, key_value_metadata)
        try:
            self._io.run(pending.actions)
        except BaseException:
            appender.fail()
            raise
        return appender.confirm()

    async def rollback(self, parquet_size: int) -> Commit:
        """Make the committed snapshot of size ``parquet_size`` the newest again.

        The table layer uses it to undo partition commits its ``_txn`` never published. The
        commit point moves back first (``_pm`` header), then both files are truncated; a crash
        in between leaves a torn tail that recovery removes.

        Returns:
            The commit that is now the newest.

        Raises:
            ConfigError: ``parquet_size`` is not a committed size of this file.
            StreamwriteIOError: as for :meth:`append`.
        """
        self._check_open()
        async with self._lock:
            return await anyio.to_thread.run_sync(self._rollback_sync, parquet_size)

    def _rollback_sync(self, parquet_size: int) -> Commit:
        appender = self._appender
        appender.check_ready()  # a poisoned file must be reopened first
        pm_data = self._io.read(LiveFileName.PM, 0, appender.pm_size)
        actions = plan_rollback(pm_data, parquet_size)
        try:
            self._io.run(actions)
            plan = _recover(self._io, self.options, apply=True, keys=self._keys)
        except BaseException:
            appender.fail()
            raise
        self._appender = _resume_appender(
            plan, self._schema, self.options, appender.writer.encryptor, self._io
        )
        return self.last_commit

    def snapshots(self) -> list[Commit]:
        """Every committed version, oldest first, from the ``_pm`` footer chain.

        Returns:
            One :class:`~streamwrite.Commit` per version (the first, ``seq`` 0, is the empty
            file); the last equals :attr:`last_commit`.
        """
        self._check_open()
        return snapshots_from_sidecar(self._io.read(LiveFileName.PM, 0, self._appender.pm_size))

    async def close(self) -> None:
        """Close the files (every acknowledged commit is already durable)."""
        if not self._closed:
            self._closed = True
            self._io.close()

    async def __aenter__(self) -> LiveFile:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


def sync_live_files(files: Sequence[LiveFile], extra: Sequence[SyncCall] = ()) -> list[Commit]:
    """The sync round of a table commit (blocking; run it in a worker thread): make the
    commits :meth:`LiveFile._write_encoded` left pending in ``files`` durable (``fdatasync`` of
    each ``data.parquet`` and ``_pm``, all at once: :func:`streamwrite.io.local.run_sync_round`)
    and acknowledge them. ``extra`` calls join the round (the table's dedup log).

    Returns:
        The commits, one per file.

    Raises:
        StreamwriteIOError: a sync failed; every file of the round is poisoned (and the table
            with them): none of their commits is acknowledged.
    """
    calls: list[SyncCall] = []
    try:
        for live in files:
            calls += live._pending_sync_calls()
        failed = run_sync_round([*calls, *extra])
        if failed:
            raise StreamwriteIOError(
                f"The sync round of a table commit failed: {'; '.join(failed)}."
            )
    except BaseException:
        for live in files:
            live._appender.fail()
        raise
    return [live._appender.confirm() for live in files]


async def open_live_file(
    path: str | Path,
    schema: pa.Schema | None = None,
    *,
    encryption: FileEncryption | None = None,
    decryption: DecryptionConfig | None = None,
    action_hook: ActionHook | None = None,
    data_file: str = LiveFileName.DATA.value,
    **write_options: Any,
) -> LiveFile:
    """:meth:`LiveFile.open` with two settings of the package's own (not exported).

    ``action_hook`` is called before each file action (tests raise from it to fail a commit
    between two actions); ``data_file`` names the data file in the directory (a table's pending
    segment writes ``_data.pending``, renamed to ``data.parquet`` just before it is published).

    Returns:
        The open live file, as :meth:`LiveFile.open`.

    Raises:
        ConfigError, CorruptFileError, EncryptionError, StreamwriteError: as :meth:`LiveFile.open`.
    """
    directory = Path(path)
    keys = LiveKeys.of(encryption, decryption)
    return await anyio.to_thread.run_sync(
        LiveFile._open_sync, directory, schema, write_options, action_hook, keys, data_file
    )
