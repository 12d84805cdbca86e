"""Tables: time-partitioned live files, committed together through ``_txn``.

::

    async with await streamwrite.open_table("ticks", schema, timestamp="ts",
                                            partition_by="day", commit_rows=100_000) as table:
        await table.append(batch)                                   # buffered, committed by policy
        await table.append(batch, app_id="job-1", batch_id=17)      # committed now, exactly once
        ticket = await table.append(batch, app_id="job-1", batch_id=18, wait=False)
        await ticket.durable()                                      # pipelined: durable now
        await table.flush()                                         # commit what is buffered
    streamwrite.read_table("ticks")                                 # the newest table snapshot

Data path: ``append`` routes rows to partitions (:mod:`streamwrite.layout.partitioning`),
buffers them, and cuts a row group whenever a partition holds ``row_group_size`` rows; each
row group is encoded at once by the executor (a process pool or the inline executor), so
encoding overlaps with the commits that follow. A row group goes to its partition's newest
segment (a live file); the first row group past ``segment_row_groups`` starts a new segment
(``layout/txn.py`` shows the directory layout), which bounds footer size and dead bytes. A
commit (policy ``commit_rows``, ``commit_bytes``, ``commit_interval`` seconds, ``flush()``, or
an append with a batch id) encodes the partial row groups, commits every touched segment, then
publishes a new ``_txn`` atomically: that is the table's commit point. Inside ``async with``
commits run in a background task (the next batches encode while the previous commit writes
and fsyncs), ``commit_interval`` is honoured by a timer, and the compactor runs every
``compaction_interval`` seconds (:mod:`streamwrite.compaction`); without it, commits run
inside the calls that trigger them.

Pipelined and group commits (:mod:`streamwrite.table.pipeline`): every accepted append gets a
:class:`CommitTicket`; appends that wait together share one commit, and commits keep the order
of appends.

Cold storage (:mod:`streamwrite.table.tiering`): with ``cold_storage="s3://bucket/prefix"``
(any fsspec URL) settled segments move to object storage (``await table.tier()``, and in
the background) and the bucket holds each version that changed what is there
(``_txn_log/``), so a reader that sees only the bucket reads the table.

Failure rules: if any segment commit or the ``_txn`` publish fails, the table is poisoned
(every later call raises); reopening rolls segments that are ahead of ``_txn`` back to it and
deletes segments it never published, so a batch is either in the table once or not at all.
One process writes a table at a time (``flock`` on ``_lock``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa

from streamwrite.arrow.partitioning import check_timestamp_field
from streamwrite.arrow.schema import arrow_to_parquet, decode_arrow_schema, encode_arrow_schema
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.crypto.live_keys import decryption_for
from streamwrite.encode import check_write_options
from streamwrite.errors import ConfigError
from streamwrite.format.txn import TXN_FILE, TxnRecord, decode_txn
from streamwrite.layout.tiering import DEFAULT_COLD_AFTER
from streamwrite.options import CompactionPolicy, make_write_options
from streamwrite.pool.executor import Executor, InlineExecutor
from streamwrite.table.core import Table
from streamwrite.table.dedup import DEFAULT_DEDUP_WINDOW, DedupLogFile, check_dedup_window
from streamwrite.table.evolution import older_schema_message
from streamwrite.table.pipeline import CommitTicket
from streamwrite.table.recovery import TableLock, recover_segments
from streamwrite.table.state import (
    TableCommit,
    TableMetrics,
    TableSettings,
    TableSnapshot,
    read_snapshot,
    write_txn,
)
from streamwrite.table.tiering import TableTiering, check_cold_root, open_tiering, recover_cold

__all__ = [
    "CommitTicket",
    "Table",
    "TableCommit",
    "TableMetrics",
    "TableSnapshot",
    "open_table",
    "read_snapshot",
]

MAX_SEGMENT_ROW_GROUPS = 32767
"""Row group ordinals are i16 in encryption AADs (DESIGN section 3)."""
DEFAULT_COMMIT_INTERVAL = 1.0
"""Seconds: by default appended rows are committed (durable and visible) within about this."""


async def open_table(
    path: str | Path,
    schema: pa.Schema | None = None,
    *,
    timestamp: str | None = None,
    partition_by: str | None = None,
    executor: Executor | None = None,
    commit_rows: int | None = None,
    commit_bytes: int | None = None,
    commit_interval: float | None = DEFAULT_COMMIT_INTERVAL,
    row_group_bytes: int | None = None,
    segment_row_groups: int = 128,
    compaction: CompactionPolicy | None = None,
    compaction_interval: float | None = 60.0,
    lock_timeout: float = 0.0,
    max_in_flight: int = 64,
    encryption: FileEncryption | None = None,
    dedup_window: float = DEFAULT_DEDUP_WINDOW,
    skipping: Mapping[str, Sequence[object]] | None = None,
    cold_storage: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    cold_after: float = DEFAULT_COLD_AFTER,
    **write_options: Any,
) -> Table:
    """Create the table at ``path`` (a directory) or reopen it, recovering first.

    Args:
        path: the table directory.
        schema: required to create; checked against the table's current schema when
            reopening (after :meth:`Table.add_columns` the widened one; the error says so
            when it is an older schema of the table).
        timestamp: the designated timestamp column (rows route to partitions by it).
        partition_by: ``"hour"``, ``"day"``, ``"month"`` or None (one partition).
        executor: where encoding runs (a :class:`streamwrite.ProcessPool`); default an
            inline executor owned by the table.
        commit_rows, commit_bytes, commit_interval: commit when this many rows or bytes are
            buffered, or this many seconds passed since the last commit. By default rows
            are committed (durable, and visible to readers) within about
            ``commit_interval=1.0`` second: inside ``async with`` a timer commits them even
            when appends stop; outside it the next append, ``flush()`` or ``close()`` does.
            ``commit_interval=None`` (with no other policy) commits only on ``flush()``,
            ``close()`` or an append with a batch id.
        row_group_bytes: also cut a row group when a partition buffers this many (Arrow)
            bytes; ``row_group_size`` (rows, a write option) applies too.
        segment_row_groups: row groups per segment: the next one starts a new segment
            (1..32767). A footer lists every row group of its segment and is rewritten at
            every commit, so this bounds commit cost and the dead bytes of old footers.
        compaction: when and how partitions are compacted
            (:class:`~streamwrite.compaction.policy.CompactionPolicy`; its defaults otherwise).
        compaction_interval: seconds between background compaction rounds inside
            ``async with`` (None: only :meth:`Table.compact`).
        lock_timeout: seconds to wait for another writer (or ``streamwrite compact``) to
            close the table; 0 fails at once.
        max_in_flight: appends accepted and not yet durable (``append(..., wait=False)``
            tickets, or many tasks appending at once) before the next append waits.
        encryption: encrypts every partition (each its own live file with its own
            ``aad_file_unique``; data keys come from the key source, see
            :class:`~streamwrite.crypto.encryption.FileEncryption`). Reopening an encrypted table
            needs it again (its key source unwraps the partitions' keys).
        dedup_window: seconds an append's ``dedup_key`` is remembered after its commit
            (:meth:`Table.append`; default 15 minutes): the table keeps the keys in a log
            beside ``_txn`` (``_dedup.<version>``) and in memory (140-350 bytes a key). 0 turns
            deduplication off (keys are ignored; the log is neither read nor written).
        skipping: data skipping per column, e.g. ``{"symbol": ["valuelist", "bloom"],
            "price": ["minmax"]}``: kinds ``"minmax"``, ``"valuelist"``, ``"bloom"`` (or
            ``("bloom", {"ndv": 100_000, "fpp": 0.01})``) are kept in the table's skipping
            store (xskipper v4 under ``_skipping/``, an entry per sealed segment, maintained
            at commit and by compaction); ``"distinct"`` and ``"time_index"`` are embedded
            indexes written into every segment. Kept in ``_txn``: reopening without it keeps
            the table's; another one replaces it, with an empty store until
            :func:`streamwrite.build_index` fills it (segments not in the store are pruned by
            their footers, never wrongly).
        cold_storage: the table's cold storage root, an fsspec URL (``s3://bucket/prefix``;
            no credentials in it): settled segments move there (:meth:`Table.tier`, and in
            the background inside ``async with``, every ``compaction_interval`` seconds)
            and each ``_txn`` version that changes what is there is published there too
            (``_txn_log/``), so a reader that sees only the bucket reads the table. A
            table that moved segments keeps its root in ``_txn``; reopening it with another
            root is an error; reopening without one opens it without tiering.
        storage_options: keyword arguments of the fsspec filesystem (credentials,
            ``client_kwargs={"endpoint_url": ...}``); never stored in the table.
        cold_after: seconds a settled segment (sealed, not merged by compaction any more;
            a partition's newest once it was idle that long) waits after its last write
            before it moves (default one hour; 0: at the next round).
        write_options: as for :func:`streamwrite.write_table`.

    Returns:
        The open table; use ``async with`` for background commits and ``commit_interval``.

    Raises:
        ConfigError: bad options, no schema for a new table, a schema that does not match;
            a bad ``cold_storage`` URL (an unknown scheme, credentials in it), or another
            root than the one the table's ``_txn`` records.
        CorruptFileError: a segment is behind the table's ``_txn``, or missing; the dedup log
            ``_txn`` names is missing, short or damaged (``dedup_window=0`` opens anyway).
        EncryptionError: an encrypted partition reopened without ``encryption``.
        StreamwriteIOError: another process (or open) writes the table.
    """
    directory = Path(path)
    tiering = open_tiering(cold_storage, storage_options, cold_after)
    if schema is None and not (directory / TXN_FILE).exists():
        # Checked before anything is created: a mistyped path makes no directory or _lock.
        raise ConfigError(
            f"There is no table at {str(directory)!r} (no {TXN_FILE} file); pass a schema to "
            "create one."
        )
    for name, value in (
        ("commit_rows", commit_rows),
        ("commit_bytes", commit_bytes),
        ("row_group_bytes", row_group_bytes),
    ):
        if value is not None and value < 1:
            raise ConfigError(f"{name} must be positive, got {value!r}.")
    if commit_interval is not None and not (commit_interval > 0 and math.isfinite(commit_interval)):
        raise ConfigError(
            f"commit_interval must be a positive number of seconds, got {commit_interval!r}."
        )
    if compaction_interval is not None and not (
        compaction_interval > 0 and math.isfinite(compaction_interval)
    ):
        raise ConfigError(
            f"compaction_interval must be a positive number of seconds, got "
            f"{compaction_interval!r}."
        )
    if isinstance(max_in_flight, bool) or not isinstance(max_in_flight, int) or max_in_flight < 1:
        raise ConfigError(f"max_in_flight must be a positive integer, got {max_in_flight!r}.")
    dedup_window = check_dedup_window(dedup_window)
    if not 1 <= segment_row_groups <= MAX_SEGMENT_ROW_GROUPS:
        raise ConfigError(
            f"segment_row_groups must be 1..{MAX_SEGMENT_ROW_GROUPS}, got {segment_row_groups!r}."
        )
    settings = TableSettings(
        commit_rows,
        commit_bytes,
        commit_interval,
        row_group_bytes,
        segment_row_groups,
        compaction or CompactionPolicy(),
        compaction_interval,
        max_in_flight,
    )
    txn_path = directory / TXN_FILE
    if schema is not None and not txn_path.exists():
        check_timestamp_field(schema, timestamp, partition_by)
        # Validate before creating anything.
        parquet_schema = arrow_to_parquet(schema)
        options = make_write_options(
            [c.path_in_schema for c in parquet_schema.columns], caller="open_table", **write_options
        )
        check_write_options(parquet_schema, options)
    directory.mkdir(parents=True, exist_ok=True)
    if not (lock_timeout >= 0 and math.isfinite(lock_timeout)):
        raise ConfigError(f"lock_timeout must be a number of seconds >= 0, got {lock_timeout!r}.")
    lock = await anyio.to_thread.run_sync(TableLock, directory, lock_timeout)
    try:
        return await _open_locked(
            directory,
            schema,
            timestamp,
            partition_by,
            executor,
            settings,
            encryption,
            lock,
            write_options,
            dedup_window,
            skipping,
            tiering,
        )
    except BaseException:
        lock.release()
        raise


async def _open_locked(
    directory: Path,
    schema: pa.Schema | None,
    timestamp: str | None,
    partition_by: str | None,
    executor: Executor | None,
    settings: TableSettings,
    encryption: FileEncryption | None,
    lock: TableLock,
    write_options: dict[str, Any],
    dedup_window: float = DEFAULT_DEDUP_WINDOW,
    skipping: Mapping[str, Sequence[object]] | None = None,
    tiering: TableTiering | None = None,
) -> Table:
    txn_path = directory / TXN_FILE
    if txn_path.exists():
        record = decode_txn(await anyio.Path(txn_path).read_bytes())
        check_cold_root(directory, record, tiering)
        stored = decode_arrow_schema(record.schema)
        if schema is not None and not schema.equals(stored, check_metadata=False):
            raise ConfigError(older_schema_message(directory, record, schema))
        if (timestamp, partition_by) not in ((None, None), (record.timestamp, record.partition_by)):
            raise ConfigError(
                f"The table at {str(directory)!r} is partitioned by {record.partition_by!r} on "
                f"{record.timestamp!r}; it cannot change to {partition_by!r} on {timestamp!r}."
            )
        schema = stored
        record = await recover_segments(directory, record, schema, write_options, encryption)
    else:
        if schema is None:
            raise ConfigError(f"A new table at {str(directory)!r} needs a schema.")
        check_timestamp_field(schema, timestamp, partition_by)
        record = TxnRecord(
            schema=encode_arrow_schema(schema), timestamp=timestamp, partition_by=partition_by
        )
        await anyio.to_thread.run_sync(write_txn, directory, record)
    table_skipping = None
    if skipping is not None or record.skipping is not None:
        from streamwrite.table.skipping import TableSkipping, embedded_write_options

        decryption = None if encryption is None else decryption_for(encryption)
        table_skipping, changed = await anyio.to_thread.run_sync(
            TableSkipping.open, directory, record, schema, skipping, encryption, decryption
        )
        if table_skipping is not None:
            write_options = embedded_write_options(table_skipping.config, write_options)
            if changed:  # a new or different configuration, published with an empty store,
                # then the old store's files are deleted (no version names them any more)
                record = replace(
                    record, version=record.version + 1, skipping=table_skipping.value()
                )
                await anyio.to_thread.run_sync(write_txn, directory, record)
                await anyio.to_thread.run_sync(table_skipping.drop_old_store)
    dedup = None
    if dedup_window > 0:  # the keys within the window, the log cut to its committed size
        dedup = await anyio.to_thread.run_sync(
            DedupLogFile.open, directory, record, dedup_window, time.time()
        )
    table = Table(
        directory,
        record,
        schema,
        executor or InlineExecutor(),
        executor is None,
        settings,
        write_options,
        encryption,
        lock,
        dedup,
        table_skipping,
    )
    if tiering is not None:
        table._tiering = tiering
        await recover_cold(table, tiering)
    await table.sweep_retired()  # no snapshot of this process pins anything yet
    return table
