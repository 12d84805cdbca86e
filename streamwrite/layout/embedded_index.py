"""The cumulative embedded index of a file being written (ring 1, no I/O).

:class:`IndexBuilder` keeps, per indexed column, what each row group contributed (a
:class:`~streamwrite.format.index.ColumnIndexPart` computed from the Arrow values where the
row group was encoded, ``streamwrite.encode``) in the serialized form of the payload grammar
(:mod:`streamwrite.format.index`), so each commit's blob is a join of bytes already made plus
the new row groups' parts. Rules:

- DISTINCT: value ids are stable across commits (first seen, first id), so the values section
  only grows and each row group's membership (its bitmap over the values seen so far, and its
  id list) is serialized once, when it is added: either layout is a join. More distinct
  values in the file than the column's cap (or in one row group) makes the entry OVER_CAP
  for the file's life: its state is dropped, the entry proves nothing.
- TIME_INDEX: each row group's ``rg_blocks`` bytes are kept; a part with another block size
  than the column's spec is recorded unknown.
- A row group without a part for an indexed column is unknown for it (never wrong); a file
  reopened with a blob adopts it (:meth:`IndexBuilder.resume`), one without gets its earlier
  row groups unknown.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import cast

from streamwrite.errors import CorruptFileError
from streamwrite.format import structs as t
from streamwrite.format.index import (
    BLOB_HEADER_SIZE,
    KV_INDEX_OFFSET,
    ColumnIndexPart,
    DistinctPart,
    EntryStatus,
    IndexColumnSpec,
    IndexEntry,
    IndexKind,
    IndexPayload,
    MembershipLayout,
    TimeIndexPart,
    ValueKind,
    bitmap_bytes,
    blob_payload_size,
    datafusion_payload,
    decode_payload,
    encode_payload,
    split_values,
)

__all__ = ["IndexBuilder", "ReadAt", "read_index_payload"]

ReadAt = Callable[[int, int], bytes | memoryview]
"""``read(offset, size)``: bytes of the file."""

_U32_MAX = 0xFFFF_FFFF


@dataclass(slots=True)
class _DistinctState:
    """A column's cumulative distinct index: ids stable across commits (first seen first);
    each row group's membership is serialized once, in both layouts, when it is added."""

    value_kind: ValueKind | None = None
    ids: dict[int | bytes, int] = field(default_factory=dict)
    values: list[int | bytes] = field(default_factory=list)
    known: int = 0  # bit rg: the row group's set is recorded
    rows: list[array[int] | None] = field(default_factory=list)  # per rg: its value ids
    lists: list[bytes] = field(default_factory=list)  # per rg: count:u32 ids
    bitmaps: list[bytes] = field(default_factory=list)  # per rg: num_bits:u32 bitmap
    lists_size: int = 0
    bitmaps_size: int = 0
    num_row_groups: int = 0
    over_cap: bool = False
    # the values section, grown as values come (ids never change)
    _ints: array[int] = field(default_factory=lambda: array("q"))
    _offsets: array[int] = field(default_factory=lambda: array("I", [0]))
    _data: bytearray = field(default_factory=bytearray)

    def add(self, part: DistinctPart | None, cap: int) -> None:
        self.num_row_groups += 1
        if self.over_cap:
            return
        if part is not None and part.over_cap:  # the row group alone is over the cap
            self._overflow()
            return
        if part is None:
            self._add_row(None)
            return
        if not part.values:
            pass  # an empty set (an all-null row group) fixes no kind
        elif self.value_kind is None:
            self.value_kind = part.value_kind
        elif part.value_kind != self.value_kind:
            raise ValueError(f"value kind {part.value_kind!r} after {self.value_kind!r}")
        ids = self.ids
        found = list(map(ids.get, part.values))
        if None in found:
            for i, value in enumerate(part.values):
                if found[i] is None:
                    found[i] = ids.get(value)  # a value twice in one part stays one id
                if found[i] is None:
                    found[i] = ids[value] = len(self.values)
                    self._append_value(value)
        if len(self.values) > cap:
            self._overflow()
            return
        self._add_row(array("I", sorted(set(cast("list[int]", found)))))

    def _add_row(self, row: array[int] | None) -> None:
        rg = len(self.rows)
        self.rows.append(row)
        if row is None:
            listed = bitmap = b"\0\0\0\0"
        else:
            self.known |= 1 << rg
            listed = struct.pack("<I", len(row)) + row.tobytes()
            num_bits = len(self.values)
            mask = 0
            for vid in row:
                mask |= 1 << vid
            bitmap = struct.pack("<I", num_bits) + mask.to_bytes(bitmap_bytes(num_bits), "little")
        self.lists.append(listed)
        self.bitmaps.append(bitmap)
        self.lists_size += len(listed)
        self.bitmaps_size += len(bitmap)

    def _append_value(self, value: int | bytes) -> None:
        self.values.append(value)
        if isinstance(value, bytes):
            self._data += value
            self._offsets.append(len(self._data))
        else:
            self._ints.append(value)

    def _overflow(self) -> None:
        self.over_cap = True
        self.ids, self.values, self.rows, self.lists, self.bitmaps = {}, [], [], [], []
        self._ints, self._offsets, self._data = array("q"), array("I", [0]), bytearray()
        self.known = 0

    def body(self) -> bytes:
        assert not self.over_cap
        kind = self.value_kind or ValueKind.INT64
        section = (
            self._ints.tobytes()
            if kind == ValueKind.INT64
            else self._offsets.tobytes() + bytes(self._data)
        )
        head = struct.pack("<BI", kind, len(self.values)) + section
        known = self.known.to_bytes(bitmap_bytes(self.num_row_groups), "little")
        if self.bitmaps_size <= self.lists_size:
            layout, membership = MembershipLayout.BITMAP, self.bitmaps
        else:
            layout, membership = MembershipLayout.LISTS, self.lists
        return head + known + bytes([layout]) + b"".join(membership)

    @classmethod
    def from_body(cls, body: bytes, num_rgs: int) -> _DistinctState:
        kind = ValueKind(body[0])
        (num_values,) = struct.unpack_from("<I", body, 1)
        values, pos = split_values(kind, num_values, body, 5)
        row_size = bitmap_bytes(num_rgs)
        known = int.from_bytes(body[pos : pos + row_size], "little")
        layout = MembershipLayout(body[pos + row_size])
        pos += row_size + 1
        state = cls(kind if num_values else None)  # no value yet: no kind fixed yet
        for value in values:
            state.ids[value] = len(state.values)
            state._append_value(value)
        for rg in range(num_rgs):
            (count,) = struct.unpack_from("<I", body, pos)
            if layout == MembershipLayout.BITMAP:
                size = bitmap_bytes(count)
                mask = int.from_bytes(body[pos + 4 : pos + 4 + size], "little")
                if count > num_values or len(body) < pos + 4 + size or mask >> count:
                    raise ValueError("bad membership bitmap")
                row = array("I", (v for v in range(count) if mask >> v & 1))
                pos += 4 + size
            else:
                row = array("I")
                row.frombytes(body[pos + 4 : pos + 4 + 4 * count])
                if len(row) != count or any(v >= num_values for v in row):
                    raise ValueError("bad value ids")
                pos += 4 + 4 * count
            state._add_row(row if known >> rg & 1 else None)
        if pos != len(body):
            raise ValueError("bytes after the membership")
        state.num_row_groups = num_rgs
        return state

    def part(self, rg: int) -> DistinctPart | None:
        row = None if self.over_cap else self.rows[rg]
        if row is None:
            return None
        values = tuple(self.values[vid] for vid in row)
        return DistinctPart(self.value_kind or ValueKind.INT64, values)


@dataclass(slots=True)
class _TimeState:
    block_rows: int
    parts: list[TimeIndexPart | None] = field(default_factory=list)
    sections: bytearray = field(default_factory=bytearray)
    known: int = 0

    def add(self, part: TimeIndexPart | None) -> None:
        if part is not None and part.block_rows != self.block_rows:
            part = None  # another block size than the file's: unknown (never wrong)
        if part is not None:
            self.known |= 1 << len(self.parts)
            self.sections += part.to_bytes()
        self.parts.append(part)

    def body(self) -> bytes:
        head = struct.pack("<I", self.block_rows)
        known = self.known.to_bytes(bitmap_bytes(len(self.parts)), "little")
        return head + known + bytes(self.sections)

    @classmethod
    def from_body(cls, body: bytes, num_rgs: int) -> _TimeState:
        (block_rows,) = struct.unpack_from("<I", body, 0)
        state = cls(block_rows)
        row_size = bitmap_bytes(num_rgs)
        known = int.from_bytes(body[4 : 4 + row_size], "little")
        pos = 4 + row_size
        for rg in range(num_rgs):
            if not known >> rg & 1:
                state.add(None)
                continue
            num_rows, num_blocks = struct.unpack_from("<QI", body, pos)
            if block_rows < 1 or num_blocks != -(-num_rows // block_rows):
                raise ValueError("time index block count")
            pos += 12
            n8 = 8 * num_blocks
            part = TimeIndexPart(
                block_rows,
                num_rows,
                body[pos : pos + n8],
                body[pos + n8 : pos + 2 * n8],
                body[pos + 2 * n8 : pos + 2 * n8 + 4 * num_blocks],
            )
            if len(part.null_counts) != 4 * num_blocks:
                raise ValueError("time index past the end")
            pos += 2 * n8 + 4 * num_blocks
            state.add(part)
        if pos != len(body):
            raise ValueError("bytes after the time index")
        return state


class IndexBuilder:
    """The cumulative embedded index of one file being written (ring 1, incremental).

    ``specs`` name the indexed columns, their kinds, DISTINCT caps (more distinct values in
    the file: OVER_CAP, for the file's life) and TIME_INDEX block sizes (a part of another
    block size is recorded unknown); the spec with ``datafusion`` also gets spec 001's own
    blob.
    """

    def __init__(self, specs: Sequence[IndexColumnSpec]) -> None:
        self._caps: dict[str, int] = {}
        self._distinct: dict[str, _DistinctState] = {}
        self._time: dict[str, _TimeState] = {}
        self.datafusion_column: str | None = None
        for spec in specs:
            if spec.distinct:
                self._distinct[spec.name] = _DistinctState()
                self._caps[spec.name] = spec.max_distinct
            if spec.time_index:
                self._time[spec.name] = _TimeState(spec.block_rows)
            if spec.datafusion:
                self.datafusion_column = spec.name
        self.num_row_groups = 0

    @classmethod
    def of_payload(cls, payload: IndexPayload) -> IndexBuilder:
        """A builder holding every entry of ``payload`` (to take parts out of a file's blob
        with :meth:`part_of`).

        Raises:
            CorruptFileError: An entry is damaged.
        """
        specs: dict[str, IndexColumnSpec] = {}
        for entry in payload.entries:
            spec = specs.get(entry.column, IndexColumnSpec(entry.column, max_distinct=_U32_MAX))
            if entry.kind == IndexKind.DISTINCT:
                spec = replace(spec, distinct=True)
            elif len(entry.body) >= 4:
                (block_rows,) = struct.unpack_from("<I", entry.body, 0)
                spec = replace(spec, time_index=True, block_rows=block_rows)
            specs[entry.column] = spec
        builder = cls(list(specs.values()))
        builder.resume(payload, payload.num_row_groups)
        return builder

    @property
    def empty(self) -> bool:
        """No column is indexed (no blob is written)."""
        return not self._distinct and not self._time

    def resume(self, payload: IndexPayload, num_row_groups: int) -> None:
        """Adopt a file's newest blob (reopening it); the payload's entries for columns this
        builder indexes are kept, their row groups beyond it unknown.

        Raises:
            CorruptFileError: The payload covers more row groups than the file or is damaged.
        """
        if payload.num_row_groups > num_row_groups:
            raise CorruptFileError(
                f"The embedded index covers {payload.num_row_groups} row groups but the file "
                f"holds {num_row_groups}."
            )
        found: set[tuple[str, IndexKind]] = set()
        for entry in payload.entries:
            key = (entry.column, entry.kind)
            try:
                if entry.kind == IndexKind.DISTINCT and entry.column in self._distinct:
                    if entry.status == EntryStatus.OVER_CAP:
                        state = _DistinctState(over_cap=True)
                        state.num_row_groups = payload.num_row_groups
                    else:
                        state = _DistinctState.from_body(entry.body, payload.num_row_groups)
                    self._distinct[entry.column] = state
                    found.add(key)
                elif entry.kind == IndexKind.TIME_INDEX and entry.column in self._time:
                    time = _TimeState.from_body(entry.body, payload.num_row_groups)
                    if time.block_rows == self._time[entry.column].block_rows:
                        self._time[entry.column] = time
                        found.add(key)  # another block size: the earlier row groups unknown
            except (struct.error, ValueError, IndexError) as exc:
                raise CorruptFileError(
                    f"The embedded index entry {entry.kind.name} of column {entry.column!r} "
                    f"is damaged: {exc}."
                ) from None
        for name, distinct in self._distinct.items():
            if (name, IndexKind.DISTINCT) not in found:
                for _ in range(payload.num_row_groups):
                    distinct.add(None, 0)
        for name, time in self._time.items():
            if (name, IndexKind.TIME_INDEX) not in found:
                for _ in range(payload.num_row_groups):
                    time.add(None)
        self.num_row_groups = payload.num_row_groups
        self.pad(num_row_groups)

    def pad(self, num_row_groups: int) -> None:
        """Mark the row groups up to ``num_row_groups`` unknown (a file reopened without an
        index, or with row groups its blob does not cover)."""
        while self.num_row_groups < num_row_groups:
            self.add_row_group({})

    def add_row_group(self, parts: dict[str, ColumnIndexPart]) -> None:
        """Record the next row group's parts (by column name; a column without one: unknown)."""
        for name, distinct in self._distinct.items():
            part = parts.get(name)
            distinct.add(None if part is None else part.distinct, self._caps.get(name, _U32_MAX))
        for name, time in self._time.items():
            part = parts.get(name)
            time.add(None if part is None else part.time_index)
        self.num_row_groups += 1

    def part_of(self, column: str, row_group: int) -> ColumnIndexPart | None:
        """The part a row group contributed (for a raw copy into another file), or None."""
        distinct = self._distinct.get(column)
        time = self._time.get(column)
        d = None if distinct is None else distinct.part(row_group)
        ti = None if time is None else time.parts[row_group]
        return None if d is None and ti is None else ColumnIndexPart(d, ti)

    def payload(self) -> bytes:
        """Returns: the payload covering every row group so far."""
        entries = []
        for name, distinct in self._distinct.items():
            if distinct.over_cap:
                entries.append(IndexEntry(name, IndexKind.DISTINCT, EntryStatus.OVER_CAP, b""))
            else:
                entries.append(
                    IndexEntry(name, IndexKind.DISTINCT, EntryStatus.PRESENT, distinct.body())
                )
        for name, time in self._time.items():
            entries.append(IndexEntry(name, IndexKind.TIME_INDEX, EntryStatus.PRESENT, time.body()))
        return encode_payload(self.num_row_groups, entries)

    def datafusion(self) -> bytes | None:
        """Returns: spec 001's payload for the DataFusion column, or None (not writable now:
        over the cap, a row group unknown, values DataFusion cannot split back)."""
        name = self.datafusion_column
        state = None if name is None else self._distinct.get(name)
        if state is None or state.over_cap or state.value_kind != ValueKind.BYTES:
            return None
        if state.known != (1 << state.num_row_groups) - 1:
            return None
        return datafusion_payload(state.values)


def read_index_payload(
    read: ReadAt, metadata: t.FileMetaData, footer_offset: int, where: str
) -> IndexPayload | None:
    """The embedded index payload a footer names.

    Args:
        read: ``read(offset, size)`` of the file's bytes.
        metadata: The footer.
        footer_offset: Where the footer starts (the blob must end before it).
        where: The file, for messages.

    Returns:
        The payload, or None when the footer names no blob.

    Raises:
        CorruptFileError: The key is not an offset inside the file, the magic is wrong, the
            payload is damaged or covers another number of row groups than the footer.
    """
    value = next(
        (kv.value for kv in metadata.key_value_metadata or [] if kv.key == KV_INDEX_OFFSET),
        None,
    )
    if value is None:
        return None
    place = f"{where}, {KV_INDEX_OFFSET}={value!r}"
    try:
        offset = int(value)
    except ValueError:
        raise CorruptFileError(f"The footer key {place} is not a decimal offset.") from None
    if not 0 <= offset <= footer_offset - BLOB_HEADER_SIZE:
        raise CorruptFileError(f"The footer key {place} points outside the file's body.")
    size = blob_payload_size(bytes(read(offset, BLOB_HEADER_SIZE)), place)
    if size > footer_offset - offset - BLOB_HEADER_SIZE:
        raise CorruptFileError(f"The embedded index at {place} runs into the footer.")
    payload = decode_payload(bytes(read(offset + BLOB_HEADER_SIZE, size)), place)
    num_row_groups = len(metadata.row_groups or [])
    if payload.num_row_groups != num_row_groups:
        raise CorruptFileError(
            f"The embedded index at {place} covers {payload.num_row_groups} row groups; the "
            f"footer lists {num_row_groups}."
        )
    return payload
