"""The table transaction record ``_txn`` (DESIGN sections 3 and 4), without I/O.

A table is a directory of partitions; a partition is a directory of **segments**, each a live
file (``data.parquet`` + ``_pm``) in its own subdirectory; ``_txn`` is the table's commit
point. Partition directories are named Hive-style, ``<timestamp>_<partition_by>=<value>``
(:mod:`streamwrite.layout.partitioning`), so that Spark, DuckDB, pyarrow and polars discover
the partition column; an unpartitioned table has the one partition ``sw_partition=all`` (a
directory Spark's discovery needs to look below the table path at all)::

    table/_txn
    table/_lock
    table/ts_day=2026-11-22/seg-000000/{data.parquet,_pm}       sealed (full, or merged)
    table/ts_day=2026-11-22/seg-000003/{data.parquet,_pm}       the newest: appends go here
    table/ts_day=2026-11-22/seg-000001/{_data.retired,_pm}      retired by compaction
    table/ts_day=2026-11-22/seg-000004/{_data.pending,_pm}      being merged, unpublished

Every name but the published segments' ``data.parquet`` starts with ``_`` (or ``.``) and does
not end in ``.parquet``: Spark and pyarrow skip names starting with ``_`` and ``.``, and
DuckDB's and polars' ``**/*.parquet`` globs (which do descend into such directories) match no
other file, so reading the table directory directly gives exactly the committed rows whenever
no append and no compaction swap is in flight. The data file of a segment moves one way only::

    _data.pending --(rename, before the _txn swap)--> data.parquet
    data.parquet  --(rename, after the _txn swap that retires it)--> _data.retired
    _data.retired --(deleted with its segment directory, after the grace period)

Appends go to a partition's newest segment; once it holds ``segment_row_groups`` row groups
the next row group starts a new segment, so footers (rewritten at every commit) and the dead
bytes of old footers stay bounded, and sealed segments are never written again: compaction
merges them into a new segment and swaps it in, in one ``_txn`` version. Segment numbers only
grow; a published name is never reused.

``_txn`` (format 4) is a fixed-size file of two **slots** updated in place, as LMDB's meta pages
or QuestDB's ``_txn``: version ``v`` of the record is written into slot ``v % 2``, over version
``v - 2``, and made durable with one ``fdatasync``; the slot holding version ``v - 1`` is not
touched, so a crash (or a reader racing the write) finds the new version or the previous one,
never a torn one: each slot carries a CRC32, and the newest intact slot wins. Layout (little
endian; the file is exactly ``2 * slot_size`` bytes, slot ``i`` at offset ``i * slot_size``)::

    offset  size  slot header
    0       4     magic b"SWTX"
    4       4     u32 format version (4)
    8       4     u32 slot_size (a power of two >= 4096; both slots have it)
    12      4     u32 payload_size
    16      8     u64 record version (the "version" of the payload)
    24      4     u32 CRC32 of bytes [0, 24) then the payload
    28      4     zero
    32      payload_size  the record: UTF-8 JSON, keys sorted, no spaces (below)
    ...           zeros up to slot_size

A slot whose magic, format version, slot size, payload size or CRC32 is wrong is ignored (a torn
write, or the empty slot of a new file); a file with no intact slot is a CorruptFileError. When
a record outgrows its slot (its slot holds at most ``slot_size - 32`` payload bytes), on a
table's first write, and when a format 2 or 3 table is migrated, the whole file is rewritten with
new slots (the record in slot ``version % 2``, the other slot zero) through the atomic path:
temporary file, ``fdatasync``, rename over ``_txn``, ``fsync`` of the table directory
(:func:`streamwrite.layout.table.publish_txn` decides). The record (format 4 JSON, the same
keys as format 3)::

    {
      "format": "streamwrite.txn",        "format_version": 4,
      "version": 12,                      every table commit adds one
      "schema": "<base64>",               the table's Arrow schema (as ARROW:schema)
      "timestamp": "ts" | null,           the designated timestamp column
      "partition_by": "day" | null,       hour | day | month | null (one "sw_partition=all")
      "partitions": {"ts_day=2026-11-22": [["seg-000000", 123456, 9001], ...], ...},
                                          each partition (its directory name) and its
                                          segments in row order, with the committed
                                          data.parquet size of each and the XXH64 of the
                                          Parquet footer ending there (as its _pm records
                                          it; absent where that commit recorded none);
                                          a segment in cold storage has a fourth
                                          entry: the XXH64 of its whole object (the
                                          third may then be null)
      "cold": "s3://bucket/prefix",       optional: the cold storage root (absent until
                                          a segment was tiered; no credentials)
      "retired": [["ts_day=2026-11-22/seg-000001", 1795000000.5], ...],
                                          segments replaced by compaction, and when (Unix
                                          seconds): deleted once no reader can need them
      "applied": {"job-1": 17, ...},      highest batch id committed per app id
      "dedup": ["_dedup.17", 40960],      optional: the table's dedup log and its committed
                                          size (format/dedup.py); absent until a commit
                                          carries a dedup key (such records encode exactly
                                          as without the feature)
      "schemas": [[0, "<base64>"], [7, "<base64>"]],
                                          only once a column was added (Table.add_columns):
                                          every schema the table has had, oldest first,
                                          each with the record version that published it;
                                          the last one is "schema". Absent: the table never
                                          changed its schema (its one schema is "schema")
      "skipping": {"config": {...}, "store": {...}},
                                          optional: the table's data-skipping configuration
                                          (``open_table(skipping=)``) and the state of its
                                          skipping store (streamwrite.skipping), opaque JSON
                                          here; absent while the table has none (such records
                                          encode exactly as without the feature)
      "crc32": 3735928559                 CRC32 of the record serialized without this key
    }

Schema history: a schema change only appends nullable columns, so every schema of the history
is a prefix of the next one (``Table.add_columns`` checks it; this module does not decode
schemas, it checks the versions and that the last entry is ``"schema"``). A segment keeps
the schema it was created with (a live file's schema cannot change: every committed prefix
stays a valid Parquet file), so a table's segments may have any schema of its history;
readers read each as the current schema, with nulls in the columns it lacks. ``"schemas"`` is
additive to format 4: readers that predate it ignore the key (the CRC32 covers it all the
same; they then fail on an older segment's schema rather than misread it), and a record
without it is byte for byte what they wrote.

Format version 3 wrote the same JSON record (``"format_version": 3``, indented) as the whole
``_txn`` file, replaced by rename at every commit. Format version 2 named partition directories
by their bare value (``2026-11-22``) and kept a retired segment's ``data.parquet`` in place.
Both are still read (:func:`decode_txn` takes every format; a version 2 table's directory names
are its partition names); a writer opening such a table migrates it
(``streamwrite.table.recovery``: for version 2 rename the partition directories; then publish
version 4 through the atomic path), and only version 4 is written.

Rules: a segment's live file may be ahead of ``_txn`` (its commit happened, the table's did
not): opening the table rolls it back to the recorded size, rebuilding its ``_pm`` from the
Parquet footer chain if the crash left that damaged (inside a table the ``_pm`` header is not a
commit point: it may reach the disk before its blocks). A segment whose ``data.parquet`` is
shorter than its recorded size, or whose Parquet footer there does not decode or has another
XXH64 than the one recorded, or missing, is damage. A segment directory that ``_txn`` neither
lists nor retires was never published (a crash while creating it or while compacting) and is
deleted on open; a retired segment whose data file is still ``data.parquet`` (a crash right
after the swap) is retired on open. A batch ``(app_id, batch_id)`` with
``batch_id <= applied[app_id]`` is already committed and is skipped (the exactly-once
pattern of Delta Lake's txnAppId/txnVersion).
"""

from __future__ import annotations

import json
import re
import struct
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from streamwrite.errors import CorruptFileError
from streamwrite.format.dedup import is_dedup_log_name

__all__ = [
    "DATA_FILE",
    "FORMAT_VERSION",
    "PENDING_DATA_FILE",
    "READABLE_FORMAT_VERSIONS",
    "RETIRED_DATA_FILE",
    "SLOT_HEADER_SIZE",
    "TXN_FILE",
    "UNPARTITIONED",
    "UNPARTITIONED_COLUMN",
    "DedupLog",
    "Retired",
    "Segment",
    "TxnRecord",
    "TXN_LOG_DIR",
    "TxnSlots",
    "cold_object_key",
    "decode_txn",
    "decode_txn_payload",
    "encode_txn",
    "encode_txn_payload",
    "encode_txn_slot",
    "read_txn_slots",
    "txn_slot_size",
    "segment_name",
    "segment_number",
    "txn_log_name",
    "txn_log_version",
]

TXN_FILE = "_txn"
UNPARTITIONED_COLUMN = "sw_partition"
"""The partition column of an unpartitioned table's one partition directory."""
UNPARTITIONED = f"{UNPARTITIONED_COLUMN}=all"
"""The one partition of an unpartitioned table (format 3; format 2 named it ``all``)."""
FORMAT = "streamwrite.txn"
FORMAT_VERSION = 4
READABLE_FORMAT_VERSIONS = (2, 3, 4)
JSON_FORMAT_VERSIONS = (2, 3)
"""Formats whose whole ``_txn`` file is the JSON record (format 4 keeps it in slots)."""
SLOT_MAGIC = b"SWTX"
SLOT_HEADER_SIZE = 32
MIN_SLOT_SIZE = 4096
MAX_SLOT_SIZE = 1 << 30
_SLOT_HEADER = struct.Struct("<4sIIIQ")
"""magic, format version, slot size, payload size, record version (the CRC32 follows)."""
_CRC = struct.Struct("<II")
DATA_FILE = "data.parquet"
"""The data file of a published (listed) segment."""
PENDING_DATA_FILE = "_data.pending"
"""The data file of a merged segment compaction is writing (no engine's listing sees it)."""
RETIRED_DATA_FILE = "_data.retired"
"""The data file of a segment compaction retired (pinned readers still read it)."""
_SEGMENT = re.compile(r"seg-(\d{6,})")
TXN_LOG_DIR = "_txn_log"
"""The directory, under the cold storage root, of the published records (:func:`txn_log_name`)."""
_TXN_LOG = re.compile(r"(\d{20})\.json")
_PARTITION = re.compile(r"[A-Za-z0-9+-][A-Za-z0-9_.=+-]*")


def segment_name(number: int) -> str:
    """The directory name of segment ``number`` (``seg-000042``)."""
    return f"seg-{number:06d}"


def segment_number(name: str) -> int | None:
    """The number of a segment directory name, or None for any other name."""
    match = _SEGMENT.fullmatch(name)
    return None if match is None else int(match.group(1))


@dataclass(frozen=True, slots=True)
class Segment:
    """One segment of a partition: its directory name, committed ``data.parquet`` size and
    the XXH64 of the Parquet footer ending there (as its ``_pm`` records it; None when the
    segment's commit did not record one)."""

    name: str
    size: int
    footer_xxh64: int | None = None
    object_xxh64: int | None = None
    """Set once the segment lives in cold storage (:attr:`TxnRecord.cold`): the XXH64 of all
    ``size`` bytes of its object :func:`cold_object_key` (None: on the local disk)."""

    @property
    def is_cold(self) -> bool:
        """Whether the segment's data lives in cold storage (not on the local disk)."""
        return self.object_xxh64 is not None


@dataclass(frozen=True, slots=True)
class Retired:
    """A segment compaction replaced: ``path`` (``partition/segment``) and since when
    (Unix seconds)."""

    path: str
    since: float


@dataclass(frozen=True, slots=True)
class DedupLog:
    """The table's dedup log (``_dedup.<version>``) and its committed size in bytes."""

    name: str
    size: int


@dataclass(frozen=True, slots=True)
class TxnRecord:
    """One version of the table transaction record."""

    version: int = 0
    schema: str = ""
    timestamp: str | None = None
    partition_by: str | None = None
    partitions: dict[str, tuple[Segment, ...]] = field(default_factory=dict)
    applied: dict[str, int] = field(default_factory=dict)
    retired: tuple[Retired, ...] = ()
    schemas: tuple[tuple[int, str], ...] = ()
    """Every schema the table has had, oldest first, each with the version that published it
    (the last is :attr:`schema`); empty while the table never changed its schema."""
    format_version: int = FORMAT_VERSION
    """4; 2 or 3 for a record read from a table not migrated yet (format 2: partitions named
    by value)."""
    dedup: DedupLog | None = None
    """The dedup log and its committed size (None: no commit carried a dedup key)."""
    skipping: Mapping[str, Any] | None = None
    """The data-skipping configuration and skipping-store state (JSON objects this module does
    not interpret; None: the table has no skipping configuration)."""
    cold: str | None = None
    """The cold storage root URL (``s3://bucket/prefix``, no credentials) where cold segments
    live (:attr:`Segment.is_cold`); None: the table never tiered a segment."""

    def is_applied(self, app_id: str, batch_id: int) -> bool:
        """True when ``(app_id, batch_id)`` was committed before (or an earlier batch id)."""
        return batch_id <= self.applied.get(app_id, -1)

    def files(self) -> tuple[tuple[str, int], ...]:
        """Every segment as ``(partition/segment, committed size)``, partitions in order."""
        return tuple(
            (f"{partition}/{segment.name}", segment.size)
            for partition in sorted(self.partitions)
            for segment in self.partitions[partition]
        )

    def next(
        self,
        segments: Mapping[str, Iterable[Segment]],
        applied: Mapping[str, int] | None = None,
    ) -> TxnRecord:
        """The following version after a commit: ``segments`` are the committed sizes of the
        segments it wrote, per partition (a segment not listed yet is appended after the
        partition's others), and ``applied`` the batch ids it committed (app id -> batch
        id; one commit may carry several callers' batches)."""
        applied = {**self.applied, **(applied or {})}
        partitions = dict(self.partitions)
        for partition, written in segments.items():
            listed = list(partitions.get(partition, ()))
            index = {segment.name: i for i, segment in enumerate(listed)}
            for segment in written:
                if segment.name in index:
                    listed[index[segment.name]] = segment
                else:
                    index[segment.name] = len(listed)
                    listed.append(segment)
            partitions[partition] = tuple(listed)
        return replace(self, version=self.version + 1, partitions=partitions, applied=applied)

    def compacted(
        self, partition: str, replaced: Iterable[str], merged: Segment, now: float
    ) -> TxnRecord:
        """The following version after compaction: the segments named ``replaced`` (adjacent
        in the partition) become ``merged``, in their place, and are retired at ``now``.

        Raises:
            ValueError: ``replaced`` is empty, not listed, or not adjacent.
        """
        names = list(replaced)
        listed = list(self.partitions.get(partition, ()))
        positions = [i for i, segment in enumerate(listed) if segment.name in names]
        if (
            not names
            or len(positions) != len(names)
            or positions != list(range(positions[0], positions[0] + len(names)))
        ):
            raise ValueError(f"Segments {names} are not adjacent segments of {partition!r}.")
        listed[positions[0] : positions[-1] + 1] = [merged]
        retired = self.retired + tuple(Retired(f"{partition}/{name}", now) for name in names)
        return replace(
            self,
            version=self.version + 1,
            partitions={**self.partitions, partition: tuple(listed)},
            retired=retired,
        )

    @property
    def schema_history(self) -> tuple[tuple[int, str], ...]:
        """Every schema of the table, oldest first, with the version that published it (the
        creation counts as version 0); the last one is :attr:`schema`."""
        return self.schemas or ((0, self.schema),)

    def evolved(self, schema: str) -> TxnRecord:
        """The following version with ``schema`` (base64, as :attr:`schema`) as the table's
        schema, appended to the history."""
        version = self.version + 1
        return replace(
            self, version=version, schema=schema, schemas=(*self.schema_history, (version, schema))
        )

    def find_partition(self, name: str) -> str | None:
        """The partition ``name`` designates: a partition name (``ts_day=2026-11-22``), or
        the bare value of one (``2026-11-22``); None if there is none."""
        if name in self.partitions:
            return name
        matches = [p for p in self.partitions if p.partition("=")[2] == name]
        return matches[0] if len(matches) == 1 else None

    def renamed(self, names: Mapping[str, str]) -> TxnRecord:
        """The following version in the current format, with partitions renamed
        (``names``: old name -> new name; others keep theirs), retired paths too."""

        def rename(path: str) -> str:
            partition, _, segment = path.partition("/")
            return f"{names.get(partition, partition)}/{segment}"

        return replace(
            self,
            version=self.version + 1,
            format_version=FORMAT_VERSION,
            partitions={names.get(p, p): segments for p, segments in self.partitions.items()},
            retired=tuple(Retired(rename(r.path), r.since) for r in self.retired),
        )

    def tiered(self, path: str, object_xxh64: int, cold: str) -> TxnRecord:
        """The following version with segment ``path`` (``partition/segment``) in cold
        storage ``cold`` as an object whose bytes have XXH64 ``object_xxh64``.

        Raises:
            ValueError: ``path`` is not a listed local segment, or ``cold`` is not the
                table's cold storage.
        """
        if self.cold is not None and cold != self.cold:
            raise ValueError(f"The table's cold storage is {self.cold!r}, not {cold!r}.")
        partition, _, name = path.partition("/")
        listed = list(self.partitions.get(partition, ()))
        index = next((i for i, s in enumerate(listed) if s.name == name), None)
        if index is None or listed[index].is_cold:
            raise ValueError(f"{path!r} is not a local segment of the table.")
        listed[index] = replace(listed[index], object_xxh64=object_xxh64)
        return replace(
            self,
            version=self.version + 1,
            partitions={**self.partitions, partition: tuple(listed)},
            cold=cold,
        )

    def cold_view(self) -> TxnRecord:
        """This version with only its cold segments (partitions left without one dropped):
        what a reader that sees only the cold storage can read, published there as
        :func:`txn_log_name` (``retired``, ``dedup`` and ``skipping`` are local state and
        left out)."""
        partitions = {
            p: cold
            for p, segments in self.partitions.items()
            if (cold := tuple(s for s in segments if s.is_cold))
        }
        return replace(self, partitions=partitions, retired=(), dedup=None, skipping=None)

    def without_retired(self, paths: Iterable[str]) -> TxnRecord:
        """The following version, forgetting retired segments that were deleted."""
        gone = set(paths)
        return replace(
            self,
            version=self.version + 1,
            retired=tuple(r for r in self.retired if r.path not in gone),
        )


def _segment(
    name: str, size: int, footer_xxh64: int | None = None, object_xxh64: int | None = None
) -> Segment:
    return Segment(
        str(name),
        int(size),
        None if footer_xxh64 is None else int(footer_xxh64),
        None if object_xxh64 is None else int(object_xxh64),
    )


def _segment_entry(segment: Segment) -> list[Any]:
    entry: list[Any] = [segment.name, segment.size]
    if segment.object_xxh64 is not None:
        return [*entry, segment.footer_xxh64, segment.object_xxh64]
    return entry if segment.footer_xxh64 is None else [*entry, segment.footer_xxh64]


def cold_object_key(path: str) -> str:
    """The key, relative to the cold storage root, of the object holding segment ``path``
    (``partition/segment``): ``partition/segment/data.parquet``, the local layout, so that
    engines listing the bucket (``**/*.parquet``, names starting ``_`` skipped) see exactly the
    cold segments."""
    return f"{path}/{DATA_FILE}"


def txn_log_name(version: int) -> str:
    """The key, relative to the cold storage root, of the published record of ``version``
    (``_txn_log/00000000000000000012.json``: names sort as versions)."""
    return f"{TXN_LOG_DIR}/{version:020d}.json"


def txn_log_version(name: str) -> int | None:
    """The version of a :func:`txn_log_name` base name (``00000000000000000012.json``), or None
    for any other name."""
    match = _TXN_LOG.fullmatch(name)
    return None if match is None else int(match.group(1))


def _body(record: TxnRecord) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "format_version": record.format_version,
        "version": record.version,
        "schema": record.schema,
        "timestamp": record.timestamp,
        "partition_by": record.partition_by,
        "partitions": {
            name: [_segment_entry(segment) for segment in segments]
            for name, segments in sorted(record.partitions.items())
        },
        "retired": [[r.path, r.since] for r in record.retired],
        "applied": dict(sorted(record.applied.items())),
    } | ({"schemas": [list(entry) for entry in record.schemas]} if record.schemas else {})


def _dumps(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def encode_txn_payload(record: TxnRecord) -> bytes:
    """Returns: the JSON record of ``record`` (what one slot holds after its header).

    Raises:
        ValueError: ``record`` is in an older format (migrate it with :meth:`TxnRecord.renamed`).
    """
    if record.format_version != FORMAT_VERSION:
        raise ValueError(
            f"A _txn record of format version {record.format_version} is never written; "
            f"migrate it to version {FORMAT_VERSION} first."
        )
    body = _body(record)
    if record.dedup is not None:  # optional: absent, the record encodes as before dedup keys
        body["dedup"] = [record.dedup.name, record.dedup.size]
    if record.skipping is not None:  # optional too: absent, the record encodes as before
        body["skipping"] = record.skipping
    if record.cold is not None:  # optional too
        body["cold"] = record.cold
    body["crc32"] = zlib.crc32(_dumps(body))
    return _dumps(body)


def txn_slot_size(payload_size: int) -> int:
    """The slot size for a new ``_txn`` file whose record has ``payload_size`` bytes: the
    smallest power of two >= 4096 holding twice the slot header and payload (room to grow
    before the next rewrite).

    Raises:
        ValueError: the record does not fit the largest slot (1 GiB).
    """
    slot_size = MIN_SLOT_SIZE
    while slot_size < 2 * (SLOT_HEADER_SIZE + payload_size):
        slot_size *= 2
    if slot_size > MAX_SLOT_SIZE:
        raise ValueError(f"A _txn record of {payload_size} bytes is too large.")
    return slot_size


def encode_txn_slot(record: TxnRecord, slot_size: int, payload: bytes | None = None) -> bytes:
    """One slot of ``slot_size`` bytes holding ``record`` (its payload, if already encoded).

    Raises:
        ValueError: the record does not fit the slot, or is in an older format.
    """
    if payload is None:
        payload = encode_txn_payload(record)
    if SLOT_HEADER_SIZE + len(payload) > slot_size:
        raise ValueError(
            f"A _txn record of {len(payload)} bytes does not fit a {slot_size}-byte slot."
        )
    head = _SLOT_HEADER.pack(SLOT_MAGIC, FORMAT_VERSION, slot_size, len(payload), record.version)
    crc = zlib.crc32(payload, zlib.crc32(head))
    slot = head + _CRC.pack(crc, 0) + payload
    return slot + bytes(slot_size - len(slot))


def encode_txn(record: TxnRecord, slot_size: int | None = None) -> bytes:
    """Returns: a whole new ``_txn`` file holding ``record`` in slot ``version % 2`` (the
    other slot zero), with slots of ``slot_size`` bytes (default :func:`txn_slot_size`).

    Raises:
        ValueError: ``record`` is in an older format (migrate it with :meth:`TxnRecord.renamed`),
            or does not fit ``slot_size``.
    """
    payload = encode_txn_payload(record)
    if slot_size is None:
        slot_size = txn_slot_size(len(payload))
    slot = encode_txn_slot(record, slot_size, payload)
    empty = bytes(slot_size)
    return slot + empty if record.version % 2 == 0 else empty + slot


@dataclass(frozen=True, slots=True)
class TxnSlots:
    """The intact slots of a format-4 ``_txn`` file (what a writer needs to update it)."""

    slot_size: int
    versions: tuple[int | None, int | None]
    """The record version in each slot (None: torn, damaged or empty)."""

    @property
    def newest(self) -> int | None:
        """The slot holding the newest version (None: no slot is intact)."""
        intact = [(v, i) for i, v in enumerate(self.versions) if v is not None]
        return max(intact)[1] if intact else None


def _slot_version(slot: memoryview, slot_size: int) -> int | None:
    """The record version of an intact slot, else None. An intact slot of another format
    version raises (a newer streamwrite wrote it)."""
    if len(slot) < SLOT_HEADER_SIZE or bytes(slot[:4]) != SLOT_MAGIC:
        return None
    _, format_version, size, payload_size, version = _SLOT_HEADER.unpack_from(slot)
    (crc, _) = _CRC.unpack_from(slot, _SLOT_HEADER.size)
    if size != slot_size or payload_size > slot_size - SLOT_HEADER_SIZE:
        return None
    payload = slot[SLOT_HEADER_SIZE : SLOT_HEADER_SIZE + payload_size]
    if zlib.crc32(payload, zlib.crc32(slot[: _SLOT_HEADER.size])) != crc:
        return None
    if format_version != FORMAT_VERSION:
        raise CorruptFileError(
            f"The table's _txn slot has format version {format_version}, not one of "
            f"{READABLE_FORMAT_VERSIONS} (a newer streamwrite wrote it?).",
            0,
        )
    return int(version)


def read_txn_slots(data: bytes) -> TxnSlots | None:
    """The slots of a ``_txn`` file in format 4; None for a file that is not (format 2 or 3
    JSON, or not a slot file at all).

    Raises:
        CorruptFileError: an intact slot of an unknown format version.
    """
    slot_size = len(data) // 2
    if (
        len(data) % 2
        or not MIN_SLOT_SIZE <= slot_size <= MAX_SLOT_SIZE
        or slot_size & (slot_size - 1)
        or SLOT_MAGIC not in (data[:4], data[slot_size : slot_size + 4])
    ):
        return None
    view = memoryview(data)
    return TxnSlots(
        slot_size,
        (_slot_version(view[:slot_size], slot_size), _slot_version(view[slot_size:], slot_size)),
    )


def decode_txn_payload(data: bytes) -> TxnRecord:
    """Parse and check one format-4 record payload (a slot's JSON, or a published
    :func:`txn_log_name` object).

    Raises:
        CorruptFileError: not a valid streamwrite format-4 record (its CRC32 included).
    """
    return _decode_json(data, (FORMAT_VERSION,))


def decode_txn(data: bytes) -> TxnRecord:
    """Parse and check a ``_txn`` file of any readable format: the newest intact slot of a
    format-4 file, or the JSON record of a format 2 or 3 file. Every reader of ``_txn`` goes
    through it.

    Returns:
        The record.

    Raises:
        CorruptFileError: not a valid, intact streamwrite transaction record (a slot file with
            no intact slot: both fail their CRC32).
    """
    if data[:1] == b"{":
        return _decode_json(data, JSON_FORMAT_VERSIONS)
    slots = read_txn_slots(data)
    if slots is None:
        raise CorruptFileError(
            f"The table's _txn record is invalid: its {len(data)} bytes are neither a JSON "
            "record nor two slots.",
            0,
        )
    newest = slots.newest
    if newest is None:
        raise CorruptFileError(
            "The table's _txn record is invalid: no slot is intact (each fails its CRC32, "
            "magic or size check).",
            0,
        )
    offset = newest * slots.slot_size
    (payload_size,) = struct.unpack_from("<I", data, offset + 12)
    start = offset + SLOT_HEADER_SIZE
    record = _decode_json(data[start : start + payload_size], (FORMAT_VERSION,))
    if record.version != slots.versions[newest]:
        raise CorruptFileError(
            f"The table's _txn slot {newest} says version {slots.versions[newest]} but holds "
            f"the record of version {record.version}.",
            offset,
        )
    return record


def _decode_json(data: bytes, formats: tuple[int, ...]) -> TxnRecord:
    try:
        body = json.loads(data)
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            raise ValueError("not a streamwrite.txn record")
        format_version = body.get("format_version")
        if format_version not in formats:
            raise ValueError(
                f"format_version {format_version!r} is not one of {formats} "
                + (
                    "(a newer streamwrite wrote it?)"
                    if format_version not in READABLE_FORMAT_VERSIONS
                    else "(here)"
                )
            )
        crc = body.pop("crc32")
        if zlib.crc32(_dumps(body)) != crc:
            raise ValueError("its CRC32 does not match")
        record = TxnRecord(
            version=int(body["version"]),
            schema=str(body["schema"]),
            timestamp=body["timestamp"],
            partition_by=body["partition_by"],
            partitions={
                str(name): tuple(_segment(*entry) for entry in segments)
                for name, segments in body["partitions"].items()
            },
            applied={str(k): int(v) for k, v in body["applied"].items()},
            retired=tuple(Retired(str(path), float(since)) for path, since in body["retired"]),
            schemas=tuple((int(v), str(schema)) for v, schema in body.get("schemas", ())),
            format_version=int(format_version),
            dedup=None if body.get("dedup") is None else DedupLog(*body["dedup"]),
            skipping=body.get("skipping"),
            cold=None if body.get("cold") is None else str(body["cold"]),
        )
        _check(record)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptFileError(f"The table's _txn record is invalid: {exc}.", 0) from exc
    return record


def _check(record: TxnRecord) -> None:
    """Names that stay inside the table directory, no negative sizes, no repeated segment."""
    if record.version < 0:
        raise ValueError("a negative version")
    for partition, segments in record.partitions.items():
        if not _PARTITION.fullmatch(partition):
            raise ValueError(f"the partition name {partition!r} is not allowed")
        names = [segment.name for segment in segments]
        if len(set(names)) != len(names) or any(segment_number(n) is None for n in names):
            raise ValueError(f"partition {partition!r} has bad or repeated segment names")
        if any(segment.size < 0 for segment in segments):
            raise ValueError(f"partition {partition!r} has a negative size")
        if any(not 0 <= (segment.footer_xxh64 or 0) < 2**64 for segment in segments):
            raise ValueError(f"partition {partition!r} has a footer checksum out of range")
        if any(not 0 <= (segment.object_xxh64 or 0) < 2**64 for segment in segments):
            raise ValueError(f"partition {partition!r} has an object checksum out of range")
        if record.cold is None and any(segment.is_cold for segment in segments):
            raise ValueError(f"partition {partition!r} has a cold segment but no cold storage")
    dedup = record.dedup
    if dedup is not None and (
        not isinstance(dedup.name, str)
        or not is_dedup_log_name(dedup.name)
        or isinstance(dedup.size, bool)
        or not isinstance(dedup.size, int)
        or dedup.size < 0
    ):
        raise ValueError(f"the dedup log entry {[dedup.name, dedup.size]!r} is not allowed")
    if record.skipping is not None and not isinstance(record.skipping, dict):
        raise ValueError(f"the skipping entry {record.skipping!r} is not a JSON object")
    if record.schemas:
        versions = [version for version, _ in record.schemas]
        if versions != sorted(set(versions)) or versions[-1] > record.version or versions[0] < 0:
            raise ValueError(f"the schema history's versions {versions} are out of order")
        if record.schemas[-1][1] != record.schema:
            raise ValueError("the schema history does not end with the table's schema")
    for retired in record.retired:
        partition, _, name = retired.path.partition("/")
        if not _PARTITION.fullmatch(partition) or segment_number(name) is None:
            raise ValueError(f"the retired path {retired.path!r} is not allowed")
    if record.format_version >= 3:
        prefix = f"{record.timestamp}_{record.partition_by}="
        for partition in record.partitions:
            if record.partition_by is None and partition != UNPARTITIONED:
                raise ValueError(f"the partition name {partition!r} of an unpartitioned table")
            if record.partition_by is not None and not partition.startswith(prefix):
                raise ValueError(f"the partition name {partition!r} does not start with {prefix}")
