"""The dedup log of a table (``_dedup.<version>``), without I/O: idempotent appends' keys.

An append may carry a **dedup key** (8..64 bytes, e.g. a digest of a request's token, table and
body): a key committed within the table's dedup window makes a later append with the same key
write nothing (:mod:`streamwrite.layout.dedup` decides). The keys cannot live in ``_txn`` (its
record is rewritten at every commit, and a window holds ~90k keys at 100 appends/s over 15
minutes), so each table keeps an append-only log beside it; ``_txn`` records the log's name and
committed size (``"dedup": [name, size]``, :mod:`streamwrite.format.txn`), so that a key is in
the committed log exactly when its rows are in the committed table. Bytes past the recorded
size are a torn or unpublished tail: cut on open, never read. Layout (little endian)::

    file    header record*
    header  4   magic b"SWDD"
            4   u32 format version (1)
    record  8   u64 txn version      the _txn version of the commit that carried the keys
            8   f64 unix seconds     the writer's wall clock at that commit
            4   u32 num_keys         >= 1
            1   u8 key_size          8..64; a commit whose keys differ in size writes one
                                     record per size
            num_keys * key_size      the keys, concatenated
            4   u32 CRC32 of the record's bytes before it

A log is named after the ``_txn`` version of the commit that started it (``_dedup.17``): the
name starts with ``_``, so no engine listing the table directory reads it, and readers of the
table never need it. Rotation (a new log: the header, then the old log's records copied
verbatim from the oldest one still within the window to its end, then the commit's own)
writes the new file whole, syncs it and the table directory, publishes ``_txn`` naming it,
then deletes the old log; a log ``_txn`` does not name is deleted when the table is opened.
A key may appear in several records (committed again past the window): the last one counts.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from streamwrite.errors import CorruptFileError

__all__ = [
    "DEDUP_FORMAT_VERSION",
    "DEDUP_HEADER",
    "MAX_KEY_SIZE",
    "MIN_KEY_SIZE",
    "RECORD_OVERHEAD_SIZE",
    "DedupRecord",
    "decode_dedup_log",
    "dedup_log_name",
    "encode_dedup_records",
    "is_dedup_log_name",
]

DEDUP_MAGIC = b"SWDD"
DEDUP_FORMAT_VERSION = 1
DEDUP_HEADER = struct.pack("<4sI", DEDUP_MAGIC, DEDUP_FORMAT_VERSION)
"""The first bytes of every dedup log."""
MIN_KEY_SIZE = 8
MAX_KEY_SIZE = 64
_RECORD_HEAD = struct.Struct("<QdIB")
"""txn version, unix seconds, num_keys, key_size."""
_CRC = struct.Struct("<I")
RECORD_OVERHEAD_SIZE = _RECORD_HEAD.size + _CRC.size
"""Bytes of a record besides its keys."""
_NAME = re.compile(r"_dedup\.(\d{1,19})")


def dedup_log_name(version: int) -> str:
    """The name of a dedup log started by the commit of ``_txn`` version ``version``."""
    return f"_dedup.{version}"


def is_dedup_log_name(name: str) -> bool:
    """True for a file name :func:`dedup_log_name` makes."""
    return _NAME.fullmatch(name) is not None


@dataclass(frozen=True, slots=True)
class DedupRecord:
    """One record of a dedup log: the keys a commit carried (all ``key_size`` bytes long,
    concatenated in ``keys``)."""

    version: int
    unix_seconds: float
    key_size: int
    keys: bytes
    offset: int = 0
    """Where the record starts in its log."""

    @property
    def encoded_size(self) -> int:
        """Bytes of this record in the log."""
        return RECORD_OVERHEAD_SIZE + len(self.keys)

    def split(self) -> list[bytes]:
        """Returns: the keys, one ``bytes`` each."""
        size = self.key_size
        return [self.keys[i : i + size] for i in range(0, len(self.keys), size)]


def encode_dedup_records(version: int, unix_seconds: float, keys: Iterable[bytes]) -> bytes:
    """The records of one commit: its keys grouped by size (sizes ascending, keys in order).

    Returns:
        The bytes to append to the log (empty when there are no keys).

    Raises:
        ValueError: a key shorter than 8 or longer than 64 bytes.
    """
    by_size: dict[int, list[bytes]] = {}
    for key in keys:
        if not MIN_KEY_SIZE <= len(key) <= MAX_KEY_SIZE:
            raise ValueError(f"A dedup key of {len(key)} bytes is not 8..64 bytes long.")
        by_size.setdefault(len(key), []).append(key)
    out = bytearray()
    for key_size in sorted(by_size):
        group = by_size[key_size]
        start = len(out)
        out += _RECORD_HEAD.pack(version, unix_seconds, len(group), key_size)
        out += b"".join(group)
        out += _CRC.pack(zlib.crc32(memoryview(out)[start:]))
    return bytes(out)


def decode_dedup_log(data: bytes, where: str) -> list[DedupRecord]:
    """Parse a committed dedup log (exactly its committed bytes: header and whole records).

    Args:
        data: the log cut at its committed size.
        where: the log's path, for error messages.

    Returns:
        Its records in order.

    Raises:
        CorruptFileError: a bad header, a record that fails its CRC32 or is cut short, an
            impossible key size or count, or versions that go backwards.
    """
    if data[: len(DEDUP_HEADER)] != DEDUP_HEADER:
        raise CorruptFileError(
            f"The dedup log {where!r} does not start with the header {DEDUP_HEADER!r} (magic "
            f"and format version {DEDUP_FORMAT_VERSION}): it holds {data[:8]!r}.",
            0,
        )
    records: list[DedupRecord] = []
    offset = len(DEDUP_HEADER)
    view = memoryview(data)
    while offset < len(data):
        if offset + _RECORD_HEAD.size > len(data):
            raise CorruptFileError(
                f"The dedup log {where!r} has a record cut short at offset {offset} of its "
                f"{len(data)} committed bytes.",
                offset,
            )
        version, unix_seconds, num_keys, key_size = _RECORD_HEAD.unpack_from(data, offset)
        end = offset + _RECORD_HEAD.size + num_keys * key_size
        if not MIN_KEY_SIZE <= key_size <= MAX_KEY_SIZE or num_keys < 1:
            raise CorruptFileError(
                f"The dedup log {where!r} has a record at offset {offset} with {num_keys} keys "
                f"of {key_size} bytes (keys are 8..64 bytes, at least one per record).",
                offset,
            )
        if end + _CRC.size > len(data):
            raise CorruptFileError(
                f"The dedup log {where!r} has a record at offset {offset} that ends past its "
                f"{len(data)} committed bytes.",
                offset,
            )
        (crc,) = _CRC.unpack_from(data, end)
        if zlib.crc32(view[offset:end]) != crc:
            raise CorruptFileError(
                f"The dedup log {where!r} has a record at offset {offset} that fails its CRC32.",
                offset,
            )
        if records and version < records[-1].version:
            raise CorruptFileError(
                f"The dedup log {where!r} has a record of version {version} after one of "
                f"version {records[-1].version}.",
                offset,
            )
        keys = bytes(view[offset + _RECORD_HEAD.size : end])
        records.append(DedupRecord(version, unix_seconds, key_size, keys, offset))
        offset = end + _CRC.size
    return records
