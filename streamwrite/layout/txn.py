"""The table transaction record ``_txn`` (DESIGN section 3, step 5), without I/O.

A table is a directory of partitions, each a live file (``data.parquet`` + ``_pm``) in a
subdirectory, plus ``_txn``: the table's commit point. ``_txn`` is replaced atomically (written
to a temporary name, fsynced, renamed over the old one, directory fsynced), so a reader sees
one whole version or the next. Layout (UTF-8 JSON, keys sorted)::

    {
      "format": "streamwrite.txn",        "format_version": 1,
      "version": 12,                      every table commit adds one
      "schema": "<base64>",               the table's Arrow schema (as ARROW:schema)
      "timestamp": "ts" | null,           the designated timestamp column
      "partition_by": "day" | null,       hour | day | month | null (one partition "all")
      "partitions": {"2026-11-22": 123456, ...},   committed data.parquet size per partition
      "applied": {"job-1": 17, ...},      highest batch id committed per app id
      "crc32": 3735928559                 CRC32 of the record serialized without this key
    }

Rules: a partition's live file may be ahead of ``_txn`` (its commit happened, the table's did
not): opening the table rolls it back to the recorded size. A partition behind ``_txn`` is
damage. A batch ``(app_id, batch_id)`` with ``batch_id <= applied[app_id]`` is already
committed and is skipped (the exactly-once pattern of Delta Lake's txnAppId/txnVersion).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field, replace
from typing import Any

from streamwrite.errors import CorruptFileError

__all__ = ["TXN_FILE", "TxnRecord", "decode_txn", "encode_txn"]

TXN_FILE = "_txn"
FORMAT = "streamwrite.txn"
FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class TxnRecord:
    """One version of the table transaction record."""

    version: int = 0
    schema: str = ""
    timestamp: str | None = None
    partition_by: str | None = None
    partitions: dict[str, int] = field(default_factory=dict)
    applied: dict[str, int] = field(default_factory=dict)

    def is_applied(self, app_id: str, batch_id: int) -> bool:
        """True when ``(app_id, batch_id)`` was committed before (or an earlier batch id)."""
        return batch_id <= self.applied.get(app_id, -1)

    def next(
        self, partitions: dict[str, int], app_id: str | None = None, batch_id: int | None = None
    ) -> TxnRecord:
        """The following version, with updated partition sizes and, if given, the batch id."""
        applied = dict(self.applied)
        if app_id is not None and batch_id is not None:
            applied[app_id] = batch_id
        return replace(
            self,
            version=self.version + 1,
            partitions={**self.partitions, **partitions},
            applied=applied,
        )


def _body(record: TxnRecord) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "version": record.version,
        "schema": record.schema,
        "timestamp": record.timestamp,
        "partition_by": record.partition_by,
        "partitions": dict(sorted(record.partitions.items())),
        "applied": dict(sorted(record.applied.items())),
    }


def _dumps(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def encode_txn(record: TxnRecord) -> bytes:
    """Returns: the ``_txn`` file contents for ``record``."""
    body = _body(record)
    body["crc32"] = zlib.crc32(_dumps(body))
    return json.dumps(body, sort_keys=True, indent=1).encode() + b"\n"


def decode_txn(data: bytes) -> TxnRecord:
    """Parse and check a ``_txn`` file.

    Returns:
        The record.

    Raises:
        CorruptFileError: not a valid, intact streamwrite transaction record.
    """
    try:
        body = json.loads(data)
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            raise ValueError("not a streamwrite.txn record")
        if body.get("format_version") != FORMAT_VERSION:
            raise ValueError(
                f"format_version {body.get('format_version')!r} is not {FORMAT_VERSION}"
            )
        crc = body.pop("crc32")
        if zlib.crc32(_dumps(body)) != crc:
            raise ValueError("its CRC32 does not match")
        record = TxnRecord(
            version=int(body["version"]),
            schema=str(body["schema"]),
            timestamp=body["timestamp"],
            partition_by=body["partition_by"],
            partitions={str(k): int(v) for k, v in body["partitions"].items()},
            applied={str(k): int(v) for k, v in body["applied"].items()},
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptFileError(f"The table's _txn record is invalid: {exc}.", 0) from exc
    if record.version < 0 or any(size < 0 for size in record.partitions.values()):
        raise CorruptFileError("The table's _txn record has negative sizes or version.", 0)
    return record
