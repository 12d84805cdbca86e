"""Tiering: moving a table's settled segments to cold storage (the shell over
:mod:`streamwrite.layout.tiering`, which states the rules, the steps of a move and recovery).

::

    table = await streamwrite.open_table("ticks", schema, timestamp="ts", partition_by="day",
                                         cold_storage="s3://bucket/ticks",
                                         storage_options={...}, cold_after=3600)
    await table.tier()          # move what is due now; returns the paths moved
    async with table: ...       # or in the background, with the compactor

A round (:meth:`TableTiering.tier`) holds the table's compaction lock (no compaction runs
meanwhile, so none merges a segment being moved, and compaction never touches cold ones):
it first recovers the cold root if it was not yet (at open, or after a failed round), then
decides the moves, runs them one by one, deletes expired log objects, and sweeps retired
local copies past the grace period. What a move verifies: the object's size equals the
segment's committed size, and the XXH64 of all its bytes, read back from the store, equals
the XXH64 of the local bytes ``[0, size)`` uploaded. A move that fails before its ``_txn``
publish deletes its object (or the next round's recovery does); a publish that fails
poisons the table as any failed publish does (reopening recovers from whichever version is
on disk: an object ``_txn`` does not list is deleted then).

The background loop runs every ``compaction_interval`` seconds inside ``async with``
(after the compactor's first sleep); its errors are kept in :attr:`TableTiering.last_error`
and the next round tries again.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

import anyio
import xxhash

from streamwrite.compaction.host import CompactionHost
from streamwrite.errors import ConfigError, StreamwriteIOError
from streamwrite.format.txn import (
    DATA_FILE,
    TXN_LOG_DIR,
    TxnRecord,
    cold_object_key,
    txn_log_version,
)
from streamwrite.io.remote import ObjectStore, open_store
from streamwrite.io.segments import retire_segments
from streamwrite.layout.actions import FsyncDirectory, FsyncFile, Rename, WriteFile
from streamwrite.layout.tiering import (
    OWNER_FILE,
    OWNER_KEY,
    PartitionFacts,
    check_log,
    check_object,
    check_owner,
    cold_paths,
    due_segments,
    expired_logs,
    log_object,
    owner_marker,
    plan_cold_recovery,
    read_owner,
    retired_record,
    tiered_record,
)
from streamwrite.table.execute import run_file_actions

__all__ = [
    "HASH_CHUNK_SIZE",
    "StepHook",
    "TableTiering",
    "TieringHost",
    "check_cold_root",
    "open_tiering",
    "recover_cold",
]

StepHook = Callable[[str], None]
"""Called with each move step's name as it starts (``layout.tiering.MOVE_STEPS``)."""
HASH_CHUNK_SIZE = 8 << 20
"""Bytes read at a time to hash a local file or an object read back."""


def _file_xxh64(path: Path, size: int) -> int:
    """XXH64 of bytes ``[0, size)`` of a local file.

    Raises:
        StreamwriteIOError: the file cannot be read or is shorter than ``size``.
    """
    digest = xxhash.xxh64()
    try:
        with open(path, "rb") as f:
            remaining = size
            while remaining:
                chunk = f.read(min(remaining, HASH_CHUNK_SIZE))
                if not chunk:
                    raise StreamwriteIOError(
                        f"The segment file {str(path)!r} ends before its committed size {size}."
                    )
                digest.update(chunk)
                remaining -= len(chunk)
    except OSError as exc:
        raise StreamwriteIOError(f"Reading {str(path)!r} to upload it failed: {exc}.") from exc
    return digest.intdigest()


def _object_xxh64(store: ObjectStore, key: str, size: int) -> int:
    """XXH64 of all ``size`` bytes of an object, read back in ranges."""
    digest = xxhash.xxh64()
    for offset in range(0, size, HASH_CHUNK_SIZE):
        digest.update(store.read_range(key, offset, min(HASH_CHUNK_SIZE, size - offset)))
    return digest.intdigest()


def _upload(store: ObjectStore, key: str, local: Path, size: int) -> int:
    """Upload bytes ``[0, size)`` of ``local`` as ``key``; returns their XXH64."""
    object_xxh64 = _file_xxh64(local, size)
    store.put_file(key, local, size)
    return object_xxh64


def _log_versions(keys: list[str]) -> list[int]:
    versions = []
    for key in keys:
        version = txn_log_version(key.rsplit("/", 1)[-1])
        if version is not None and key.startswith(f"{TXN_LOG_DIR}/"):
            versions.append(version)
    return versions


class TieringHost(CompactionHost, Protocol):
    """An open table, as tiering uses it (compaction's host, plus a ``_txn`` publish)."""

    async def publish_change(self, change: Callable[[TxnRecord], TxnRecord]) -> TxnRecord:
        """Publish ``change(newest record)`` as the next version; returns it."""
        ...

    async def close(self) -> None:
        """Close the table."""
        ...


class TableTiering:
    """A table's cold storage: its store, when segments are due, and the moves' state."""

    def __init__(self, store: ObjectStore, cold_after: float) -> None:
        self.store = store
        self.cold_after = cold_after
        """Seconds a settled segment's data stays untouched before it moves."""
        self.scope = anyio.CancelScope()
        """The background loop runs in it; ``Table.close`` cancels it."""
        self.last_error: Exception | None = None
        """The last error of the background loop (it keeps running)."""
        self.recovered = False
        """The cold root was recovered since the table opened (or since a round failed)."""
        self.metrics_moved = 0
        """Segments moved by this process."""
        self._superseded: dict[int, float] = {}
        """When this process first saw each log version superseded (retention)."""

    @property
    def url(self) -> str:
        """The cold storage root (normalised, no credentials): what ``_txn`` records."""
        return self.store.url

    # -- recovery ------------------------------------------------------------------------

    async def recover(self, table: TieringHost) -> None:
        """Bring the cold root back to the table's ``_txn`` (rules in
        :mod:`streamwrite.layout.tiering`): delete unpublished segment objects, retire
        lingering local copies of cold segments, put a missing log object.

        Raises:
            StreamwriteIOError: the store failed (the next round tries again).
            StateError: another table or writer uses the cold root.
        """
        store = self.store
        await self._claim(table)
        keys = await anyio.to_thread.run_sync(store.list, "")
        versions = _log_versions(keys)
        newest_log = None
        if versions:
            newest_log = await anyio.to_thread.run_sync(
                store.read_all, f"{TXN_LOG_DIR}/{max(versions):020d}.json"
            )
        record = table.record
        lingering = [p for p in sorted(cold_paths(record)) if (table.path / p).is_dir()]
        plan = plan_cold_recovery(record, keys, newest_log, lingering)
        if plan.delete_keys:
            await anyio.to_thread.run_sync(store.delete, list(plan.delete_keys))
        if plan.retire:
            await table.publish_change(lambda r: retired_record(r, plan.retire, time.time()))
            await anyio.to_thread.run_sync(retire_segments, table.path, list(plan.retire))
        if plan.put_log:
            await self._put_log(table.record)
        self.recovered = True

    async def _claim(self, table: TieringHost) -> None:
        """Claim the cold root for this table (:mod:`streamwrite.layout.tiering`,
        ownership): the owner id kept in the table directory, then the root's marker.

        Raises:
            StateError: the root's marker names another table.
            StreamwriteIOError: the store or the local file failed.
        """
        store = self.store
        local = table.path / OWNER_FILE
        found = read_owner(local.read_bytes()) if local.exists() else None
        if found is not None and found[0] == store.url:
            owner = found[1]
        else:
            owner = uuid.uuid4().hex
            lost = table.record.cold == store.url  # its own root, its owner file lost
            if lost and await anyio.to_thread.run_sync(store.size, OWNER_KEY) is not None:
                data = await anyio.to_thread.run_sync(store.read_all, OWNER_KEY)
                adopted = read_owner(data)  # adopt the root's marker
                owner = owner if adopted is None else adopted[1]
            temporary = f"{OWNER_FILE}.tmp"
            actions = (
                WriteFile(temporary, owner_marker(store.url, owner)),
                FsyncFile(temporary),
                Rename(temporary, OWNER_FILE),
                FsyncDirectory("."),
            )
            await anyio.to_thread.run_sync(run_file_actions, table.path, actions)
        marker = owner_marker(store.url, owner)
        if not await anyio.to_thread.run_sync(store.put_if_absent, OWNER_KEY, marker):
            existing = await anyio.to_thread.run_sync(store.read_all, OWNER_KEY)
            check_owner(store.url, existing, owner)

    async def _put_log(self, record: TxnRecord) -> None:
        """Put the log object of published ``record`` (conditional put; the same bytes
        there already are fine)."""
        key, data = log_object(record)
        created = await anyio.to_thread.run_sync(self.store.put_if_absent, key, data)
        if not created:
            existing = await anyio.to_thread.run_sync(self.store.read_all, key)
            check_log(self.store.full_path(key), existing, data)

    # -- deciding ------------------------------------------------------------------------

    async def _facts(self, table: TieringHost, partition: str, *, seal: bool) -> PartitionFacts:
        """What :func:`due_segments` needs of one partition (``seal``: seal its newest
        segment when it is eligible)."""
        listed = table.record.partitions.get(partition, ())
        num_cold = next((i for i, s in enumerate(listed) if not s.is_cold), len(listed))
        local, eligible = await table.eligible_segments(partition, self.cold_after, seal)
        if not local:
            return PartitionFacts(partition, num_cold)
        from streamwrite.compaction.policy import partition_status  # (keeps imports shallow)

        status = await partition_status(
            table, partition, table.settings.compaction, explicit=False, seal=False
        )
        now = time.time()

        def ages() -> dict[str, float]:
            found = {}
            for segment in local:
                try:
                    mtime = os.stat(table.path / partition / segment.name / DATA_FILE).st_mtime
                except FileNotFoundError:
                    continue
                found[segment.name] = now - mtime
            return found

        return PartitionFacts(
            partition, num_cold + eligible, status.merge, await anyio.to_thread.run_sync(ages)
        )

    async def due(self, table: TieringHost) -> tuple[str, ...]:
        """The segments to move now (a partition's newest is sealed first when it is due).

        Returns:
            ``partition/segment`` paths, in order.
        """
        partitions = sorted(table.record.partitions)
        facts = {p: await self._facts(table, p, seal=False) for p in partitions}
        due = due_segments(table.record, facts.values(), self.cold_after)
        newest = {f"{p}/{table.record.partitions[p][-1].name}" for p in partitions}
        reseal = sorted({path.split("/", 1)[0] for path in due if path in newest})
        if reseal:  # the run reaches the newest: seal it, then decide again (rows may have come)
            for partition in reseal:
                facts[partition] = await self._facts(table, partition, seal=True)
            due = due_segments(table.record, facts.values(), self.cold_after)
        return due

    # -- moving --------------------------------------------------------------------------

    async def move(self, table: TieringHost, path: str, step: StepHook) -> None:
        """Move one segment (steps in :mod:`streamwrite.layout.tiering`).

        Raises:
            StreamwriteIOError, CorruptFileError, StateError: as :meth:`Table.tier`.
        """
        store = self.store
        partition, _, name = path.partition("/")
        segment = next(s for s in table.record.partitions[partition] if s.name == name)
        size = segment.size
        key = cold_object_key(path)
        attempted = False  # the _txn publish was tried: the object may be listed now
        step("upload")
        try:
            local = table.path / partition / name / DATA_FILE
            object_xxh64 = await anyio.to_thread.run_sync(_upload, store, key, local, size)
            step("verify")
            found_size = await anyio.to_thread.run_sync(store.size, key)
            found_xxh64 = None
            if found_size == size:
                found_xxh64 = await anyio.to_thread.run_sync(_object_xxh64, store, key, size)
            check_object(store.full_path(key), size, object_xxh64, found_size, found_xxh64)
            step("publish")
            attempted = True
            record = await table.publish_change(
                lambda r: tiered_record(r, path, size, object_xxh64, store.url, time.time())
            )
        except BaseException:
            if not attempted:  # never listed: nobody can read it (else recovery decides)
                with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                    # if this fails too, the next round's (or open's) recovery deletes it
                    await anyio.to_thread.run_sync(store.delete, [key])
            raise
        self.metrics_moved += 1
        step("log")
        await self._put_log(record)
        step("retire")
        await anyio.to_thread.run_sync(retire_segments, table.path, [path])
        step("done")

    async def _retention(self, table: TieringHost) -> None:
        """Delete log objects superseded more than the grace period ago (the newest stays)."""
        keys = await anyio.to_thread.run_sync(self.store.list, TXN_LOG_DIR)
        versions = _log_versions([k if "/" in k else f"{TXN_LOG_DIR}/{k}" for k in keys])
        expired, self._superseded = expired_logs(
            versions, self._superseded, time.time(), table.settings.compaction.grace_seconds
        )
        if expired:
            await anyio.to_thread.run_sync(self.store.delete, list(expired))

    async def tier(self, table: TieringHost, hook: StepHook | None = None) -> list[str]:
        """One round (module docstring): recover if needed, move what is due, retention,
        sweep.

        Returns:
            The paths moved.
        """
        step = hook or (lambda name: None)
        moved: list[str] = []
        async with table.compaction_lock:
            try:
                if not self.recovered:
                    await self.recover(table)
                for path in await self.due(table):
                    await self.move(table, path, step)
                    moved.append(path)
                await self._retention(table)
            except BaseException:
                self.recovered = False  # a log put may be missing: the next round checks
                raise
        await table.sweep_retired(table.settings.compaction.grace_seconds)
        return moved

    async def run(self, table: TieringHost) -> None:
        """Background tiering every ``compaction_interval`` seconds while the table is open;
        errors are kept in :attr:`last_error` and the next round tries again."""
        interval = table.settings.compaction_interval
        assert interval is not None
        with self.scope:
            while True:
                await anyio.sleep(interval)
                if not table.is_open:
                    return
                try:
                    await self.tier(table)
                except Exception as exc:
                    self.last_error = exc


def open_tiering(
    cold_storage: object, storage_options: object, cold_after: object
) -> TableTiering | None:
    """Check ``open_table``'s cold-storage arguments and open the store (nothing is read
    or written: the filesystem is only made).

    Returns:
        The table's tiering, or None without ``cold_storage``.

    Raises:
        ConfigError: a bad value: ``cold_after`` not a number of seconds >= 0,
            ``storage_options`` without ``cold_storage`` or not a mapping, a URL that is not
            a string, has credentials in it, or names a scheme fsspec does not know (or
            whose package is not installed).
    """
    if (
        isinstance(cold_after, bool)
        or not isinstance(cold_after, int | float)
        or not (cold_after >= 0 and math.isfinite(cold_after))
    ):
        raise ConfigError(f"cold_after must be a number of seconds >= 0, got {cold_after!r}.")
    if cold_storage is None:
        if storage_options is not None:
            raise ConfigError("storage_options is given without cold_storage; pass both.")
        return None
    if not isinstance(cold_storage, str) or not cold_storage.strip():
        raise ConfigError(
            f"cold_storage must be a URL string such as 's3://bucket/prefix', got {cold_storage!r}."
        )
    parts = urlsplit(cold_storage)
    if parts.username is not None or parts.password is not None:
        shown = parts._replace(netloc=parts.hostname or "").geturl()
        raise ConfigError(
            f"The cold_storage URL {shown!r} carries credentials; pass them in "
            "storage_options (the URL is recorded in the table's _txn)."
        )
    if storage_options is not None and (
        not isinstance(storage_options, Mapping)
        or not all(isinstance(k, str) for k in storage_options)
    ):
        raise ConfigError(
            f"storage_options must be a mapping of keyword arguments, got "
            f"{type(storage_options).__name__}."
        )
    store = open_store(cold_storage, dict(storage_options or {}))  # ConfigError: no fsspec scheme
    try:
        store.fs  # noqa: B018  (made now: storage options the filesystem refuses fail here)
    except StreamwriteIOError as exc:
        raise ConfigError(
            f"The cold_storage {store.url!r} cannot be reached with these storage_options: {exc}"
        ) from exc
    return TableTiering(store, float(cold_after))


def check_cold_root(directory: Path, record: TxnRecord, tiering: TableTiering | None) -> None:
    """A table that moved segments keeps its cold root: reopening names the same one.

    Raises:
        ConfigError: ``tiering``'s root is another one than ``record.cold``.
    """
    if tiering is not None and record.cold is not None and record.cold != tiering.url:
        raise ConfigError(
            f"The table {str(directory)!r} keeps its cold segments in {record.cold!r}, not in "
            f"{tiering.url!r}; open it with cold_storage={record.cold!r}."
        )


async def recover_cold(table: TieringHost, tiering: TableTiering) -> None:
    """Recover the table's cold root on open (:meth:`TableTiering.recover`); when the store
    cannot be reached, the table opens anyway (its hot path needs no store) and the first
    tiering round recovers (the error is kept in ``tiering.last_error``).

    Raises:
        StateError: another table or writer uses the cold root (the table is closed).
    """
    try:
        await tiering.recover(table)
    except StreamwriteIOError as exc:
        tiering.last_error = exc
    except BaseException:
        await table.close()
        raise
