"""Tables read by URL: the newest ``_txn`` version a table published to its cold storage.

A reader that sees only the object store (another machine, a Spark executor) finds a
consistent snapshot of the table there. The table's cold root is the table URL::

    <url>/_txn_log/00000000000000000011.json       the cold view of _txn version 11
    <url>/_txn_log/00000000000000000012.json       the cold view of version 12 (the newest)
    <url>/ts_day=2026-11-22/seg-000003/data.parquet  a cold segment, exactly its size

Each log object is ``encode_txn_payload(record.cold_view())`` of one ``_txn`` version
(:mod:`streamwrite.format.txn`): immutable, written whole by a conditional put (S3's
``If-None-Match: *``; a local root links a complete temporary file into place), so a reader
never sees one half-written. Rules of :func:`read_remote_record`:

- **Newest version.** The reader lists ``_txn_log/`` and takes the highest version among the
  names that parse (:func:`~streamwrite.format.txn.txn_log_version`; any other name, such as a
  local root's temporary ``.<name>.<uuid>.tmp``, is skipped).
- **Damage is an error, never a silent fallback.** The newest object must decode
  (:func:`~streamwrite.format.txn.decode_txn_payload`: format, CRC32, names) and hold the
  version its name says; otherwise :class:`~streamwrite.errors.CorruptFileError` naming the
  object's URL. Reading an older version instead would hide damage and show rows that the
  table replaced since.
- **A listed object vanished** (retention deleted it after a newer version appeared and its
  grace period passed): list again, a few times.
- **No log object** under the URL: it is not a table (or it never tiered a segment):
  :class:`~streamwrite.errors.StreamwriteIOError` with ``errno`` ``ENOENT``.

The record lists only cold segments (the cold view): what the URL can serve. Its segments are
read at their recorded sizes from ``cold_object_key(partition/segment)`` under the URL
(:mod:`streamwrite.table.cold`). Nothing local is read or written.
"""

from __future__ import annotations

import errno
import re

from streamwrite.errors import ConfigError, CorruptFileError, StreamwriteIOError
from streamwrite.format.txn import (
    TXN_LOG_DIR,
    TxnRecord,
    decode_txn_payload,
    txn_log_name,
    txn_log_version,
)
from streamwrite.io.remote import ObjectStore

__all__ = ["LIST_ATTEMPTS", "is_table_url", "newest_log_version", "read_remote_record"]

LIST_ATTEMPTS = 3
"""How many times the log is listed again when its newest object vanished before it was read."""
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")


def is_table_url(location: object) -> bool:
    """Whether ``location`` is a table URL (a string ``scheme://...``: ``s3://bucket/t``,
    ``file:///abs/t``, any fsspec scheme), read through its published log, rather than a local
    table directory (a path, or a string without a scheme)."""
    return isinstance(location, str) and _URL.match(location) is not None


def newest_log_version(store: ObjectStore) -> int | None:
    """The highest version among the log object names under ``store`` (None: no log object).

    Raises:
        StreamwriteIOError: the listing failed.
    """
    versions = [
        version
        for key in store.list(TXN_LOG_DIR)
        if "/" not in key[len(TXN_LOG_DIR) + 1 :]
        and (version := txn_log_version(key.rpartition("/")[2])) is not None
    ]
    return max(versions, default=None)


def _decode(store: ObjectStore, key: str, version: int, data: bytes) -> TxnRecord:
    try:
        record = decode_txn_payload(data)
    except CorruptFileError as exc:
        raise CorruptFileError(
            f"The log object {store.object_url(key)} of the table {store.url} is damaged: "
            f"{exc.message}",
            exc.offset,
        ) from exc
    if record.version != version:
        raise CorruptFileError(
            f"The log object {store.object_url(key)} of the table {store.url} holds the "
            f"record of version {record.version}, not {version}.",
            0,
        )
    return record


def _no_table(store: ObjectStore) -> StreamwriteIOError:
    return StreamwriteIOError(
        errno.ENOENT,
        f"{store.url} is not a streamwrite table: it has no {TXN_LOG_DIR}/ objects (a table "
        "publishes its versions there once it tiers a segment to cold storage).",
    )


def read_remote_record(store: ObjectStore, version: int | None = None) -> TxnRecord:
    """The newest record the table at ``store``'s root published (module docstring: rules),
    or the record of ``version`` while its log object is kept.

    Returns:
        The record of the cold view of that version (cold segments only).

    Raises:
        StreamwriteIOError: no log object under the root (``errno`` ``ENOENT``: not a table,
            or one that never tiered a segment), or the store cannot be reached.
        CorruptFileError: the log object does not decode or holds another version.
        ConfigError: ``version`` is not published (or retention deleted it).
    """
    if version is not None:
        key = txn_log_name(version)
        try:
            return _decode(store, key, version, store.read_all(key))
        except StreamwriteIOError as exc:
            if exc.errno != errno.ENOENT:
                raise
            newest = newest_log_version(store)
            if newest is None:
                raise _no_table(store) from exc
            raise ConfigError(
                f"Version {version} of the table {store.url} is not published there (the "
                f"newest is {newest}; retention deletes older ones after the grace period)."
            ) from exc
    for _ in range(LIST_ATTEMPTS):
        newest = newest_log_version(store)
        if newest is None:
            raise _no_table(store)
        key = txn_log_name(newest)
        try:
            data = store.read_all(key)
        except StreamwriteIOError as exc:
            if exc.errno == errno.ENOENT:
                continue  # deleted by retention after a newer one appeared: list again
            raise
        return _decode(store, key, newest, data)
    raise StreamwriteIOError(
        f"The newest log object of the table {store.url} vanished {LIST_ATTEMPTS} times "
        "between listing and reading it (retention with a grace period of 0 s?); try again."
    )
