"""Building and dropping a table's skipping store, and pruning a table for other engines.

``streamwrite index build TABLE`` is :func:`build_index`; ``streamwrite index drop TABLE`` is
:func:`drop_index`. Both take the table's writer lock (``_lock``: no writer may commit
meanwhile) and publish a new ``_txn`` version, so readers switch atomically::

    build   (a new configuration: publish it with an empty store, delete the old store's
            files); read each segment's indexed columns at its committed size, sketch them
            (SegmentSketch), SkippingStore.rebuild (a new lookup generation; files written
            and fsynced), then publish _txn with the configuration and the store's state
            ("skipping", streamwrite.table.skipping). Every listed segment gets an entry,
            the newest of each partition too: a later commit that grows one removes its
            entry first.
    drop    publish _txn without "skipping", then delete _skipping/ (a crash in between
            leaves files no record names: harmless, deleted by the next drop or build)
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from streamwrite.arrow.schema import decode_arrow_schema
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.crypto.live_keys import decryption_for
from streamwrite.errors import ConfigError
from streamwrite.format.txn import TXN_FILE, TxnRecord
from streamwrite.io.txn import read_txn
from streamwrite.table.recovery import TableLock
from streamwrite.table.skipping import SKIPPING_DIRECTORY, TableSkipping, sketch_segment
from streamwrite.table.state import read_snapshot, write_txn

__all__ = ["build_index", "drop_index", "prune"]


def _existing(path: str | Path) -> Path:
    directory = Path(path)
    if not (directory / TXN_FILE).exists():
        raise ConfigError(f"There is no table at {str(directory)!r} (no {TXN_FILE} file).")
    return directory


def build_index(
    path: str | Path,
    skipping: Mapping[str, Sequence[object]] | None = None,
    *,
    encryption: FileEncryption | None = None,
    lock_timeout: float = 0.0,
) -> TxnRecord:
    """Build the skipping store of the table at ``path`` from its segments' rows.

    Args:
        path: the table directory.
        skipping: the configuration (as ``open_table(skipping=)``); None: the table's own.
        encryption: an encrypted table's encryption (reads its segments, encrypts the store).
        lock_timeout: seconds to wait for the table's writer to close it.

    Returns:
        The ``_txn`` record published (its ``skipping`` holds the store's state).

    Raises:
        ConfigError: no table there, no configuration (neither given nor the table's), a bad
            one.
        StreamwriteIOError: the table is open for writing elsewhere; a write failed (the old
            ``_txn`` stays).
        CorruptFileError: a segment is damaged.
    """
    directory = _existing(path)
    lock = TableLock(directory, lock_timeout)
    try:
        record = read_txn(directory)
        schema = decode_arrow_schema(record.schema)
        if skipping is None and record.skipping is None:
            raise ConfigError(
                f"The table {str(directory)!r} has no skipping configuration; give one, "
                'e.g. skipping={"symbol": ["valuelist", "bloom"]}.'
            )
        decryption: DecryptionConfig | None = (
            None if encryption is None else decryption_for(encryption)
        )
        # The table's state when the configuration is the same (rebuild starts a new lookup
        # generation beside the published one), else an empty store of the new one.
        state, changed = TableSkipping.open(
            directory, record, schema, skipping, encryption, decryption
        )
        assert state is not None
        if changed:  # publish the new configuration with an empty store, then delete the
            # old store's files (never before: a published state must find its files)
            record = replace(record, version=record.version + 1, skipping=state.value())
            write_txn(directory, record)
            state.drop_old_store()
        if state.store is not None and state.store_config is not None:
            entries = [
                state.entry(
                    name,
                    size,
                    sketch_segment(directory / name, size, state.store_config, schema, decryption),
                )
                for name, size in record.files()
            ]
            state.store.rebuild(entries)
        published = replace(record, version=record.version + 1, skipping=state.value())
        write_txn(directory, published)
        return published
    finally:
        lock.release()


def drop_index(path: str | Path, *, lock_timeout: float = 0.0) -> TxnRecord:
    """Remove the table's skipping configuration and store.

    Returns:
        The ``_txn`` record published (without ``skipping``; the old one if there was none).

    Raises:
        ConfigError: no table there.
        StreamwriteIOError: the table is open for writing elsewhere; the publish failed.
    """
    directory = _existing(path)
    lock = TableLock(directory, lock_timeout)
    try:
        record = read_txn(directory)
        if record.skipping is not None:
            record = replace(record, version=record.version + 1, skipping=None)
            write_txn(directory, record)
        shutil.rmtree(directory / SKIPPING_DIRECTORY, ignore_errors=True)
        return record
    finally:
        lock.release()


def prune(
    path: str | Path, filters: object, *, decryption: DecryptionConfig | None = None
) -> list[tuple[str, int]]:
    """The data files of the table at ``path`` (its newest snapshot) that may hold a row
    matching ``filters``, for DuckDB, pyarrow datasets and polars.

    Returns:
        ``(data file path, committed size)`` in row order. Read each file only up to its
        committed size (a live segment may be longer while an append is in flight):
        :func:`streamwrite.snapshot_filesystem` does that for the engines.

    Raises:
        ConfigError: no table there, or a filter streamwrite cannot represent.
        SchemaError: a filter on a column the table does not have.
        CorruptFileError: a segment is missing or damaged.
    """
    return read_snapshot(_existing(path)).files(filters, decryption=decryption)
