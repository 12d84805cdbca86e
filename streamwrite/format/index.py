"""Embedded index blobs (spec 001): bytes between the row groups and the page index.

Blob, located by the footer key/value ``streamwrite.index_offset`` (the decimal offset of its
magic), as spec 001 lays a blob out::

    blob        := "IDX1" payload_size:u64 payload

Payload grammar, version 1 (integers little-endian; ``uN`` unsigned, ``i64`` signed)::

    payload     := version:u8 (= 1) num_row_groups:u32 num_entries:u16 entry*
    entry       := name_size:u16 name:utf8 kind:u8 status:u8 body_size:u32 body
    kind        := 1 DISTINCT | 2 TIME_INDEX
    status      := 0 PRESENT
                 | 1 OVER_CAP            DISTINCT only: the file holds more distinct values than
                                         the cap; body empty, the entry proves nothing
    body        := distinct | time_index                  (empty when status != PRESENT)

    distinct    := value_kind:u8 num_values:u32 values known layout:u8 membership
    value_kind  := 1 INT64               ints, dates (days), timestamps (the column's unit)
                 | 2 BYTES               strings (UTF-8), binary
    values      := i64 * num_values                                   INT64
                 | offsets:u32 * (num_values + 1) data                BYTES: value i is
                                         data[offsets[i]:offsets[i+1]], offsets[0] = 0
    known       := bitmap(num_row_groups)    row groups whose value set is recorded; the others
                                             are unknown (written before the column was indexed,
                                             or a row group over the cap on its own)
    layout      := 0 BITMAP | 1 LISTS    whichever is smaller
    membership  := (num_bits:u32 bitmap(num_bits)) * num_row_groups   BITMAP: bit v of row
                                         group g's bitmap set = g holds value v; values >=
                                         num_bits (seen first after g) are not in g
                 | (count:u32 value_id:u32 * count) * num_row_groups  LISTS: g's value ids,
                                         ascending
                   (an unknown row group has num_bits = 0 / count = 0)

    time_index  := block_rows:u32 known rg_blocks * (known row groups, in order)
    rg_blocks   := num_rows:u64 num_blocks:u32 min:i64 * num_blocks max:i64 * num_blocks
                   null_count:u32 * num_blocks
                   block b covers rows [b * block_rows, min((b + 1) * block_rows, num_rows)) of
                   its row group; num_blocks = ceil(num_rows / block_rows); min/max over the
                   block's non-null values (the column's storage as int64: timestamps in
                   their unit, dates in days, ints); a block with null_count = its rows has
                   min = max = 0, which mean nothing

    bitmap(n)   := ceil(n / 8) bytes; bit i is bit (i & 7) of byte (i >> 3) (LSB first)

Values are the column's exact non-null values, never truncated: a row group's recorded set is
the set of values it holds. Unknown (a row group not ``known``, an OVER_CAP entry, a column
without an entry, a file without the key) always means "might hold anything".

Optionally a second blob in spec 001's own form for one string column (DataFusion's
``parquet_embedded_index.rs`` reads it), located by ``distinct_index_offset``::

    df_blob     := "IDX1" payload_size:u64 value ("\\n" value)*       sorted UTF-8 values

written only when no value contains ``\\n`` or ``\\r`` and the set is not just ``""`` (Rust's
``str::lines`` would lose it), and the column is not over the cap.

Encryption: the blobs are never encrypted, and hold no value of an encrypted column (such
a column gets no entry; the file writer drops its parts). Plaintext columns of an encrypted
file are indexed as in any file: their pages are plaintext already. (Encrypting the blob as a
module would need a module type parquet-format does not define; a reader without keys could
not use it anyway.)

Both blobs sit right after a commit's new row groups (and their bloom filters), before its
page indexes and footer; each commit of a live file writes blobs covering every row group of
the file, so each footer points at its own (older footers keep theirs; the superseded blobs
are dead bytes). :class:`streamwrite.layout.embedded_index.IndexBuilder` keeps the
per-row-group parts so a commit costs a join of bytes already serialized plus the new row
groups' parts.
"""

from __future__ import annotations

import itertools
import struct
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import IntEnum

from streamwrite.errors import ConfigError, CorruptFileError

__all__ = [
    "BLOB_HEADER_SIZE",
    "DEFAULT_BLOCK_ROWS",
    "DEFAULT_MAX_DISTINCT",
    "INDEX_MAGIC",
    "KIND_NAMES",
    "KV_DATAFUSION_OFFSET",
    "KV_INDEX_OFFSET",
    "MembershipLayout",
    "PAYLOAD_VERSION",
    "ColumnIndexPart",
    "DistinctPart",
    "EntryStatus",
    "IndexColumnSpec",
    "IndexEntry",
    "IndexKind",
    "IndexPayload",
    "TimeIndexPart",
    "ValueKind",
    "bitmap_bytes",
    "blob",
    "blob_payload_size",
    "datafusion_payload",
    "decode_payload",
    "encode_payload",
    "parse_embedded_index",
    "split_values",
]

INDEX_MAGIC = b"IDX1"
BLOB_HEADER_SIZE = 12
"""The magic and the u64 payload size."""
PAYLOAD_VERSION = 1
KV_INDEX_OFFSET = "streamwrite.index_offset"
"""Footer key/value: the decimal offset of this footer's embedded index blob."""
KV_DATAFUSION_OFFSET = "distinct_index_offset"
"""Footer key/value of spec 001's own blob (DataFusion's example reads it)."""

_U32_MAX = 0xFFFF_FFFF
DEFAULT_MAX_DISTINCT = 4096
"""Distinct values a file may hold in a DISTINCT column before its entry is OVER_CAP."""
DEFAULT_BLOCK_ROWS = 4096
"""Rows per TIME_INDEX block (a page holds up to 20,000 rows, and 1 MiB: 131,072 int64s)."""
KIND_NAMES = ("distinct", "time_index", "datafusion_distinct")
"""The kinds ``embedded_index=`` takes (``datafusion_distinct`` is ``distinct`` plus spec 001's
own blob for that one string column)."""


class IndexKind(IntEnum):
    DISTINCT = 1
    TIME_INDEX = 2


class EntryStatus(IntEnum):
    PRESENT = 0
    OVER_CAP = 1


class ValueKind(IntEnum):
    INT64 = 1
    BYTES = 2


class MembershipLayout(IntEnum):
    """How a DISTINCT body records which row groups hold each value."""

    BITMAP = 0
    LISTS = 1


@dataclass(frozen=True, slots=True)
class IndexColumnSpec:
    """The embedded index kinds of one column, from the write option ``embedded_index``.

    Attributes:
        name: The column.
        distinct: Write a DISTINCT entry (per-row-group value sets).
        time_index: Write a TIME_INDEX entry (min/max per ``block_rows`` rows).
        datafusion: Also write spec 001's ``distinct_index_offset`` blob (implies distinct).
        max_distinct: The DISTINCT cap: more distinct values in the file makes it OVER_CAP.
        block_rows: Rows per TIME_INDEX block.
    """

    name: str
    distinct: bool = False
    time_index: bool = False
    datafusion: bool = False
    max_distinct: int = DEFAULT_MAX_DISTINCT
    block_rows: int = DEFAULT_BLOCK_ROWS

    @property
    def kinds(self) -> tuple[IndexKind, ...]:
        """The entry kinds written for the column."""
        return (IndexKind.DISTINCT,) * self.distinct + (IndexKind.TIME_INDEX,) * self.time_index


def _positive(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value > _U32_MAX:
        raise ConfigError(f"{what} must be an integer in 1..{_U32_MAX}, got {value!r}.")
    return value


def parse_embedded_index(value: object, column_names: Sequence[str]) -> tuple[IndexColumnSpec, ...]:
    """Parse the write option ``embedded_index``.

    ``{"symbol": ["distinct"], "ts": ["time_index"]}``; a kind may carry parameters:
    ``("distinct", {"max_values": 10000})``, ``("time_index", {"block_rows": 4096})``;
    ``"datafusion_distinct"`` (one column at most) is ``"distinct"`` plus spec 001's own blob.

    Returns:
        One spec per column named, in the mapping's order (empty for None).

    Raises:
        ConfigError: Not a mapping, an unknown column or kind, bad parameters, or
            ``datafusion_distinct`` on more than one column.
    """
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise ConfigError(
            "embedded_index must map column names to lists of kinds "
            f"({', '.join(KIND_NAMES)}), got {value!r}."
        )
    specs = []
    for name, kinds in value.items():
        if name not in column_names:
            raise ConfigError(
                f"embedded_index names the column {name!r}, which the schema does not have "
                f"(columns: {', '.join(column_names)})."
            )
        if isinstance(kinds, str | tuple):
            kinds = [kinds]
        if not isinstance(kinds, Sequence) or not kinds:
            raise ConfigError(
                f"embedded_index for column {name!r} must be a non-empty list of kinds, got "
                f"{kinds!r}."
            )
        spec = IndexColumnSpec(str(name))
        for item in kinds:
            kind, params = (item, {}) if isinstance(item, str) else (item[0], item[1])
            if kind not in KIND_NAMES or not isinstance(params, Mapping):
                raise ConfigError(
                    f"embedded_index for column {name!r}: {item!r} is not a kind; kinds are "
                    f"{', '.join(KIND_NAMES)}, each alone or as (kind, {{parameters}})."
                )
            allowed = {"time_index": {"block_rows"}}.get(kind, {"max_values"})
            unknown = set(params) - allowed
            if unknown:
                raise ConfigError(
                    f"embedded_index for column {name!r}: kind {kind!r} takes the parameters "
                    f"{sorted(allowed)}, not {sorted(unknown)}."
                )
            if kind == "time_index":
                rows = _positive(params.get("block_rows", DEFAULT_BLOCK_ROWS), "block_rows")
                spec = replace(spec, time_index=True, block_rows=rows)
            else:
                cap = _positive(params.get("max_values", spec.max_distinct), "max_values")
                spec = replace(
                    spec,
                    distinct=True,
                    datafusion=spec.datafusion or kind == "datafusion_distinct",
                    max_distinct=cap,
                )
        specs.append(spec)
    if sum(spec.datafusion for spec in specs) > 1:
        raise ConfigError(
            "embedded_index asks for datafusion_distinct on "
            f"{[s.name for s in specs if s.datafusion]}; spec 001's blob covers one column."
        )
    return tuple(specs)


def bitmap_bytes(num_bits: int) -> int:
    """Returns: the size of a bitmap of ``num_bits`` bits."""
    return (num_bits + 7) >> 3


def blob(payload: bytes) -> bytes:
    """Returns: the blob holding ``payload`` (magic, u64 LE size, payload)."""
    return INDEX_MAGIC + struct.pack("<Q", len(payload)) + payload


def blob_payload_size(header: bytes, where: str) -> int:
    """The payload size from a blob's first 12 bytes.

    Returns:
        The size.

    Raises:
        CorruptFileError: The magic is not ``IDX1`` (``where`` names the place).
    """
    if len(header) < BLOB_HEADER_SIZE or header[:4] != INDEX_MAGIC:
        raise CorruptFileError(
            f"The embedded index at {where} does not start with the magic {INDEX_MAGIC!r} "
            f"(found {bytes(header[:4])!r})."
        )
    return int(struct.unpack_from("<Q", header, 4)[0])


@dataclass(frozen=True, slots=True)
class DistinctPart:
    """One column's distinct non-null values in one row group (picklable, ring 1).

    ``values`` are ints (INT64) or bytes (BYTES), each once; ``over_cap`` says the row group
    alone holds more distinct values than the cap (``values`` is then empty).
    """

    value_kind: ValueKind
    values: tuple[int | bytes, ...]
    over_cap: bool = False


@dataclass(frozen=True, slots=True)
class TimeIndexPart:
    """One column's block min/max in one row group, serialized as ``rg_blocks`` (grammar)."""

    block_rows: int
    num_rows: int
    mins: bytes
    maxs: bytes
    null_counts: bytes

    @property
    def num_blocks(self) -> int:
        return len(self.mins) // 8

    def to_bytes(self) -> bytes:
        """Returns: the ``rg_blocks`` bytes."""
        return struct.pack("<QI", self.num_rows, self.num_blocks) + (
            self.mins + self.maxs + self.null_counts
        )


@dataclass(frozen=True, slots=True)
class ColumnIndexPart:
    """What one column chunk contributes to the file's embedded index."""

    distinct: DistinctPart | None = None
    time_index: TimeIndexPart | None = None


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One decoded entry: its column, kind, status and body bytes (parse with the helpers)."""

    column: str
    kind: IndexKind
    status: EntryStatus
    body: bytes


@dataclass(frozen=True, slots=True)
class IndexPayload:
    """A decoded payload."""

    num_row_groups: int
    entries: tuple[IndexEntry, ...]


def encode_payload(num_row_groups: int, entries: Sequence[IndexEntry]) -> bytes:
    """Returns: the payload bytes (grammar in the module docstring)."""
    out = [struct.pack("<BIH", PAYLOAD_VERSION, num_row_groups, len(entries))]
    for entry in entries:
        name = entry.column.encode()
        out.append(struct.pack("<H", len(name)) + name)
        out.append(struct.pack("<BBI", entry.kind, entry.status, len(entry.body)))
        out.append(entry.body)
    return b"".join(out)


def decode_payload(payload: bytes, where: str) -> IndexPayload:
    """Decode a payload (its bodies stay bytes; see the ``parse_*`` helpers of the reader).

    Unknown kinds are skipped (a newer writer's additions), an unknown version refused.

    Returns:
        The payload.

    Raises:
        CorruptFileError: Truncated or inconsistent bytes, or an unknown payload version
            (``where`` names the file and offset).
    """
    view = memoryview(payload)
    try:
        version, num_row_groups, num_entries = struct.unpack_from("<BIH", view, 0)
        if version != PAYLOAD_VERSION:
            raise CorruptFileError(
                f"The embedded index at {where} has payload version {version}; this "
                f"streamwrite reads version {PAYLOAD_VERSION}."
            )
        pos = 7
        entries = []
        for _ in range(num_entries):
            (name_size,) = struct.unpack_from("<H", view, pos)
            name = bytes(view[pos + 2 : pos + 2 + name_size]).decode()
            pos += 2 + name_size
            kind, status, body_size = struct.unpack_from("<BBI", view, pos)
            pos += 6
            body = bytes(view[pos : pos + body_size])
            if len(body) != body_size:
                raise ValueError("body past the end")
            pos += body_size
            if kind in IndexKind._value2member_map_:
                entries.append(IndexEntry(name, IndexKind(kind), EntryStatus(status), body))
        if pos != len(view):
            raise ValueError(f"{len(view) - pos} bytes after the last entry")
    except CorruptFileError:
        raise
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        raise CorruptFileError(f"The embedded index at {where} is damaged: {exc}.") from None
    return IndexPayload(num_row_groups, tuple(entries))


def datafusion_payload(values: Iterable[int | bytes]) -> bytes | None:
    """Spec 001's payload: the sorted values joined by ``\\n``.

    Returns:
        The payload, or None when DataFusion's ``str::lines`` would not give the values back
        (a value holding ``\\n`` or ``\\r``, or the set ``{""}``).
    """
    ordered = sorted(v for v in values if isinstance(v, bytes))
    if ordered == [b""] or any(b"\n" in v or b"\r" in v for v in ordered):
        return None
    return b"\n".join(ordered)


def split_values(
    kind: ValueKind, num_values: int, body: bytes, pos: int
) -> tuple[list[int | bytes], int]:
    """The values section of a DISTINCT body at ``pos`` as Python values.

    Returns:
        ``(values, position after them)``.

    Raises:
        ValueError: Truncated or inconsistent offsets.
    """
    if kind == ValueKind.INT64:
        ints = array("q")
        ints.frombytes(body[pos : pos + 8 * num_values])
        if len(ints) != num_values:
            raise ValueError("values past the end")
        return list(ints), pos + 8 * num_values
    offsets = array("I")
    offsets.frombytes(body[pos : pos + 4 * (num_values + 1)])
    if len(offsets) != num_values + 1 or offsets[0] != 0:
        raise ValueError("bad value offsets")
    start = pos + 4 * (num_values + 1)
    data = body[start : start + offsets[-1]]
    if len(data) != offsets[-1] or any(a > b for a, b in itertools.pairwise(offsets)):
        raise ValueError("bad value offsets")
    return [data[a:b] for a, b in itertools.pairwise(offsets)], start + offsets[-1]
