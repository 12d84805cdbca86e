"""Tiering decisions, sans-I/O: which sealed segments move to cold storage, the records and
objects each move publishes, what recovery repairs, and which log objects expire.

A table with cold storage (``open_table(cold_storage="s3://bucket/prefix")``) keeps its hot,
growing segments on the local disk and moves settled ones to the cold root, as objects of
the bucket layout of ``format/txn.py`` (:func:`~streamwrite.format.txn.cold_object_key`,
:func:`~streamwrite.format.txn.txn_log_name`). The shell (``streamwrite.table.tiering``)
gathers the facts (directory times, what compaction would merge, which segments a writer
holds), asks this module, and runs the steps.

Which segments are due (:func:`due_segments`), per partition::

    cold prefix   the cold segments of a partition are always its first ones: a move takes
                  the first local segment, then the next, and stops at the first that is not
                  due (so compaction, which never touches cold segments, keeps merging
                  adjacent local runs)
    due           eligible (no writer appends to it or has row groups queued for it: the
                  newest only once the partition was idle for cold_after and every row
                  group it was given is committed; the shell seals it first), not in the
                  run compaction would merge now, and its data last written at least
                  cold_after seconds ago

One move, in order (:data:`MOVE_STEPS`; each a kill point of the crash tests)::

    upload    bytes [0, size) of the segment's data.parquet -> object cold_object_key(path)
              (XXH64 of those bytes computed from the local file)
    verify    the object's size is size and the XXH64 of its bytes read back is the one
              computed (check_object); otherwise the object is deleted and the move fails
    publish   _txn version V = tiered_record(): the segment listed with its object XXH64,
              _txn "cold" set, the local copy retired at the same instant (the commit point)
    log       txn_log_name(V) = the cold view of V, written with a conditional put (an
              existing object with the same bytes is fine: a retried move; other bytes:
              another writer uses this cold root, StateError)
    retire    the local data.parquet renamed to _data.retired (pinned snapshots still read
              it); swept with its directory after the compaction grace period, when no
              snapshot of this process pins it
    done

Ownership: a cold root belongs to one table. Before its first recovery or move a table
claims the root: it keeps a random owner id in its directory (``_cold_owner``, written
durably first) and puts ``_owner.json`` (:func:`owner_marker`) at the root with a
conditional put; a root whose marker names another owner is refused (StateError) before
anything there is deleted or written, so two tables given the same root by mistake never
delete or overwrite each other's objects. A table that lost its ``_cold_owner`` adopts the
marker of the root its ``_txn`` records.

Recovery (:func:`plan_cold_recovery`), given the newest ``_txn`` and a listing of the cold
root: a segment object that ``_txn`` does not list as cold was uploaded and never published
(a crash before ``publish``): delete it, and any other object in a segment directory (the
temporary file of an upload to a local root cut short); the newest log object must describe
the current cold view (a crash between ``publish`` and ``log``): else put
``txn_log_name(version)`` for the current version; a cold segment whose local directory
lingers and is not retired is retired (a new ``_txn`` version). Local ``data.parquet``
files of retired segments are renamed by the table's own recovery
(``layout/table_recovery.py``).

Retention (:func:`expired_logs`): a log object older than the newest is deleted once it was
superseded ``grace_seconds`` ago (the table's compaction grace period; the newest is always
kept). When a version was superseded is known to the process that put its successor; log
objects found at open count as superseded then. Cold segment objects are never deleted
today (compaction does not merge cold segments, so none is ever retired).

This module imports only errors and format: no I/O, no clock (``now`` is an argument).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from streamwrite.errors import CorruptFileError, StateError
from streamwrite.format.txn import (
    DATA_FILE,
    TXN_LOG_DIR,
    Retired,
    TxnRecord,
    decode_txn_payload,
    encode_txn_payload,
    segment_number,
    txn_log_name,
    txn_log_version,
)

__all__ = [
    "DEFAULT_COLD_AFTER",
    "MOVE_STEPS",
    "OWNER_FILE",
    "OWNER_KEY",
    "ColdRecoveryPlan",
    "PartitionFacts",
    "check_log",
    "check_owner",
    "check_object",
    "cold_paths",
    "due_segments",
    "expired_logs",
    "log_object",
    "owner_marker",
    "plan_cold_recovery",
    "read_owner",
    "retired_record",
    "segment_object_path",
    "tiered_record",
]

DEFAULT_COLD_AFTER = 3600.0
"""Seconds a settled segment stays local before it moves to cold storage."""
MOVE_STEPS = ("upload", "verify", "publish", "log", "retire", "done")
"""The steps of one move, in order (the shell's hook is called at the start of each)."""


@dataclass(frozen=True, slots=True)
class PartitionFacts:
    """What the shell found for one partition, for :func:`due_segments`."""

    partition: str
    eligible: int
    """How many leading segments of the partition (cold ones included) no writer holds: the
    newest counts only when the partition is idle and settled (and sealed for the move)."""
    merging: tuple[str, ...] = ()
    """The segments compaction would merge now (never moved while compaction wants them)."""
    ages: Mapping[str, float] | None = None
    """Seconds since each local segment's data was last written (absent: not due)."""


def due_segments(
    record: TxnRecord, facts: Iterable[PartitionFacts], cold_after: float
) -> tuple[str, ...]:
    """The segments to move now, as ``partition/segment`` paths, partitions in order and each
    partition's in row order (rules in the module docstring).

    Args:
        record: the newest published record.
        facts: the shell's facts of the partitions to consider.
        cold_after: seconds a segment's data must be untouched.

    Returns:
        The paths (empty: nothing is due).
    """
    due: list[str] = []
    for fact in sorted(facts, key=lambda f: f.partition):
        segments = record.partitions.get(fact.partition, ())
        ages = fact.ages or {}
        for index, segment in enumerate(segments):
            if segment.is_cold:
                continue  # the cold prefix
            if (
                index >= fact.eligible
                or segment.name in fact.merging
                or ages.get(segment.name, -1.0) < cold_after
            ):
                break
            if any(s.is_cold for s in segments[index + 1 :]):
                break  # not reached for tables this module planned: keep the prefix rule
            due.append(f"{fact.partition}/{segment.name}")
    return tuple(due)


def _split(path: str) -> tuple[str, str]:
    partition, _, name = path.partition("/")
    return partition, name


def tiered_record(
    record: TxnRecord, path: str, size: int, object_xxh64: int, cold: str, now: float
) -> TxnRecord:
    """The version that publishes a move: segment ``path`` listed in cold storage ``cold``
    with its object's XXH64, and its local copy retired at ``now`` (one version, so a crash
    never leaves a cold segment whose local copy nobody retires).

    Raises:
        StateError: ``path`` is no longer a local segment of ``size`` bytes (compaction or
            another move changed it since the upload: the object is not published), or the
            table's cold storage is another one.
    """
    partition, name = _split(path)
    listed = next((s for s in record.partitions.get(partition, ()) if s.name == name), None)
    if listed is None or listed.is_cold or listed.size != size:
        raise StateError(
            f"The segment {path!r} changed while it was moved to cold storage (the table now "
            f"lists {listed!r}; {size} bytes were uploaded); the upload is not published."
        )
    try:
        tiered = record.tiered(path, object_xxh64, cold)
    except ValueError as exc:
        raise StateError(f"Moving {path!r} to cold storage failed: {exc}") from exc
    retired = (*(r for r in record.retired if r.path != path), Retired(path, now))
    return replace(tiered, retired=retired)


def retired_record(record: TxnRecord, paths: Iterable[str], now: float) -> TxnRecord:
    """The following version with the local copies of cold segments ``paths`` retired at
    ``now`` (recovery: a cold segment whose local directory lingers unretired)."""
    known = {r.path for r in record.retired}
    added = tuple(Retired(p, now) for p in sorted(set(paths)) if p not in known)
    return replace(record, version=record.version + 1, retired=record.retired + added)


def check_object(
    url: str, size: int, object_xxh64: int, found_size: int | None, found_xxh64: int | None
) -> None:
    """Check an uploaded object (``verify``): it has ``size`` bytes and their XXH64 read back
    is ``object_xxh64`` (``found_xxh64`` None: not read, because the size was wrong).

    Raises:
        CorruptFileError: the object is missing, of another size, or of other bytes.
    """
    if found_size is None:
        raise CorruptFileError(f"The object {url!r} is missing right after its upload.", 0)
    if found_size != size:
        raise CorruptFileError(
            f"The object {url!r} has {found_size} bytes after its upload of {size} bytes.", 0
        )
    if found_xxh64 != object_xxh64:
        shown = "none" if found_xxh64 is None else f"{found_xxh64:#018x}"
        raise CorruptFileError(
            f"The object {url!r} read back has XXH64 {shown}, the {size} bytes uploaded "
            f"{object_xxh64:#018x}.",
            0,
        )


def log_object(record: TxnRecord) -> tuple[str, bytes]:
    """The log object of a published version: its key under the cold root and its bytes
    (the encoded cold view)."""
    return txn_log_name(record.version), encode_txn_payload(record.cold_view())


def check_log(url: str, existing: bytes, expected: bytes) -> None:
    """A conditional put of a log object found one there: the same bytes are a retried put;
    other bytes mean another writer publishes to this cold root.

    Raises:
        StateError: the bytes differ.
    """
    if existing != expected:
        raise StateError(
            f"The log object {url!r} exists with other contents ({len(existing)} bytes, not "
            f"the {len(expected)} of this table's version): another table or writer uses this "
            "cold storage root."
        )


OWNER_KEY = "_owner.json"
"""The cold root's owner marker (:func:`owner_marker`)."""
OWNER_FILE = "_cold_owner"
"""The table's own record of the root it owns and its owner id (:func:`owner_marker`)."""


def owner_marker(url: str, owner: str) -> bytes:
    """The bytes of an owner record: ``{"owner": ID, "url": ROOT}`` (the table's
    ``_cold_owner`` and the root's ``_owner.json`` hold the same)."""
    return json.dumps({"owner": owner, "url": url}, sort_keys=True).encode()


def read_owner(data: bytes) -> tuple[str, str] | None:
    """``(url, owner)`` of an owner record, or None when it does not parse."""
    try:
        body = json.loads(data)
        url, owner = body["url"], body["owner"]
    except (ValueError, KeyError, TypeError):
        return None
    return (url, owner) if isinstance(url, str) and isinstance(owner, str) else None


def check_owner(url: str, marker: bytes, owner: str) -> None:
    """The root's marker found by a claim must name this table's owner id.

    Raises:
        StateError: it names another owner (or does not parse).
    """
    found = read_owner(marker)
    if found is None or found[1] != owner:
        raise StateError(
            f"The cold storage root {url!r} belongs to another table (its {OWNER_KEY} names "
            f"owner {None if found is None else found[1]!r}, this table is {owner!r}); give "
            "each table its own cold_storage prefix. Nothing there was changed."
        )


def _segment_dir_key(key: str) -> list[str] | None:
    """The parts of a key inside a segment directory (``partition/seg-N/name``), else None."""
    parts = key.split("/")
    if len(parts) != 3 or parts[0][:1] in ("", "_", ".") or segment_number(parts[1]) is None:
        return None
    return parts


def segment_object_path(key: str) -> str | None:
    """The segment path (``partition/segment``) of a segment object key
    (``partition/segment/data.parquet``), or None for any other key."""
    parts = _segment_dir_key(key)
    return None if parts is None or parts[2] != DATA_FILE else f"{parts[0]}/{parts[1]}"


def cold_paths(record: TxnRecord) -> frozenset[str]:
    """The ``partition/segment`` paths of the record's cold segments."""
    return frozenset(
        f"{partition}/{segment.name}"
        for partition, segments in record.partitions.items()
        for segment in segments
        if segment.is_cold
    )


def _same_view(a: TxnRecord, b: TxnRecord) -> bool:
    """Whether two cold views list the same segments under the same schema and root."""
    return (
        a.partitions == b.partitions
        and a.schema == b.schema
        and a.schemas == b.schemas
        and a.timestamp == b.timestamp
        and a.partition_by == b.partition_by
        and a.cold == b.cold
    )


@dataclass(frozen=True, slots=True)
class ColdRecoveryPlan:
    """What recovery does to a cold root and the table (in this order)."""

    delete_keys: tuple[str, ...] = ()
    """Segment objects never published (deleted)."""
    retire: tuple[str, ...] = ()
    """Cold segments whose local directory lingers unretired (a ``_txn`` version retires
    them, :func:`retired_record`)."""
    put_log: bool = False
    """The newest log object does not describe the current cold view: put
    :func:`log_object` of the newest version (the one ``retire`` publishes, if any; retiring
    does not change the cold view)."""


def plan_cold_recovery(
    record: TxnRecord,
    keys: Iterable[str],
    newest_log: bytes | None,
    lingering: Iterable[str] = (),
) -> ColdRecoveryPlan:
    """Recovery of a table's cold root (rules in the module docstring).

    Args:
        record: the newest published record.
        keys: every object key under the cold root (relative).
        newest_log: the bytes of the newest log object (None: there is none).
        lingering: the ``partition/segment`` paths with a local directory.

    Returns:
        The plan.

    Raises:
        StateError: the cold root's newest log version is newer than the table's ``_txn``, or
            is this version with other contents (another table or writer uses the root).
    """
    keys = tuple(keys)
    cold = cold_paths(record)
    delete = tuple(  # in a segment directory, anything but a published cold segment's data
        key
        for key in keys
        if (parts := _segment_dir_key(key)) is not None
        and (parts[2] != DATA_FILE or f"{parts[0]}/{parts[1]}" not in cold)
    )
    retired = {r.path for r in record.retired}
    retire = tuple(sorted(p for p in set(lingering) if p in cold and p not in retired))
    versions = [
        v
        for key in keys
        if key.startswith(f"{TXN_LOG_DIR}/")
        and (v := txn_log_version(key[len(TXN_LOG_DIR) + 1 :])) is not None
    ]
    newest = max(versions, default=None)
    if record.cold is None:
        return ColdRecoveryPlan(delete, retire, False)
    if newest is not None and newest > record.version:
        raise StateError(
            f"The cold storage {record.cold!r} holds log version {newest}, newer than the "
            f"table's _txn version {record.version}: another table or writer uses this root."
        )
    if newest is None or newest_log is None:
        return ColdRecoveryPlan(delete, retire, True)
    if newest == record.version:
        check_log(f"{record.cold}/{txn_log_name(newest)}", newest_log, log_object(record)[1])
        return ColdRecoveryPlan(delete, retire, False)
    try:
        published = decode_txn_payload(newest_log)
    except CorruptFileError:  # a damaged log object: publish the current view after it
        return ColdRecoveryPlan(delete, retire, True)
    return ColdRecoveryPlan(delete, retire, not _same_view(published, record.cold_view()))


def expired_logs(
    versions: Iterable[int], superseded: Mapping[int, float], now: float, grace_seconds: float
) -> tuple[tuple[str, ...], dict[int, float]]:
    """The log objects to delete now (retention rules in the module docstring).

    Args:
        versions: the versions of the log objects under the cold root.
        superseded: when each version was superseded, as far as this process knows.
        now: Unix seconds.
        grace_seconds: the table's compaction grace period.

    Returns:
        The keys to delete, and the updated ``superseded`` map (versions never seen before
        count as superseded ``now``; deleted ones are dropped).
    """
    present = sorted(set(versions))
    if not present:
        return (), {}
    known = {v: superseded.get(v, now) for v in present[:-1]}
    expired = [v for v, since in known.items() if now - since >= grace_seconds]
    for version in expired:
        del known[version]
    return tuple(txn_log_name(v) for v in expired), known
