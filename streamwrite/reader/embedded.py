"""Reading a file's embedded index (spec 001; layout in :mod:`streamwrite.format.index`).

::

    index = read_embedded_index(pf)          # None: the footer names no blob
    index.containers()                       # Containers over the row groups: value_sets of
                                             # DISTINCT columns, min/max/null_count of
                                             # TIME_INDEX columns
    index.fragments("ts", 3)                 # (first row of each block, ColumnStats per block)
                                             # of row group 3, for prune_fragments; None: unknown

The footer's ``streamwrite.index_offset`` names the blob; the blob must lie before the footer
and cover exactly the footer's row groups (a blob of another size is a CorruptFileError: the
file is damaged, never silently half-pruned). Unknown (a row group not recorded, an OVER_CAP
entry, a column without an entry) is left out of the statistics: "might hold anything".
Values come back in the column's Arrow value type (a dictionary column's value type).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from streamwrite.errors import CorruptFileError
from streamwrite.format.index import (
    EntryStatus,
    IndexKind,
    IndexPayload,
    MembershipLayout,
    ValueKind,
    bitmap_bytes,
)
from streamwrite.layout.embedded_index import read_index_payload
from streamwrite.predicate import ColumnStats, Containers
from streamwrite.reader.file import ParquetFile

__all__ = ["EmbeddedIndex", "read_embedded_index"]


def read_embedded_index(pf: ParquetFile) -> EmbeddedIndex | None:
    """The embedded index of the file (or snapshot) ``pf`` reads.

    Returns:
        The index, or None when the footer names none.

    Raises:
        CorruptFileError: As :func:`read_index_payload`.
    """
    payload = read_index_payload(
        pf.read_bytes, pf.thrift_metadata, pf.footer_offset, "the file's footer"
    )
    if payload is None:
        return None
    row_groups = pf.thrift_metadata.row_groups or []
    num_rows = np.array([rg.num_rows or 0 for rg in row_groups], dtype=np.int64)
    return EmbeddedIndex(payload, pf.schema_arrow, num_rows)


def _value_type(arrow_type: pa.DataType) -> pa.DataType:
    return arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type


def _from_int64(
    values: npt.NDArray[np.int64], arrow_type: pa.DataType, mask: npt.NDArray[np.bool_] | None
) -> pa.Array:
    """int64 storage (as the writer took it) back to the column's type; ``mask`` True = null."""
    width = arrow_type.bit_width
    unsigned = pa.types.is_unsigned_integer(arrow_type)
    dtype = np.dtype(f"<{'u' if unsigned else 'i'}{width // 8}")
    storage = pa.array(values.astype(dtype), mask=mask)
    return storage if storage.type == arrow_type else storage.view(arrow_type)


def _u32(body: bytes, pos: int, count: int) -> npt.NDArray[np.uint32]:
    out = np.frombuffer(body, dtype="<u4", count=count, offset=pos)
    return out


def _set_bounds(sets: Sequence[pa.Array | None], arrow_type: pa.DataType) -> ColumnStats:
    """Exact per-container bounds of value sets (null: unknown set or an empty one)."""
    lows: list[object] = []
    highs: list[object] = []
    for values in sets:
        if values is None or not len(values):
            lows.append(None)
            highs.append(None)
            continue
        bounds = pc.min_max(values)
        lows.append(bounds["min"])
        highs.append(bounds["max"])
    return ColumnStats(
        min=pa.array(lows, arrow_type) if lows else pa.array([], arrow_type),
        max=pa.array(highs, arrow_type) if highs else pa.array([], arrow_type),
    )


@dataclass
class _Distinct:
    values: pa.Array
    value_sets: list[pa.Array | None]


@dataclass
class _Time:
    block_rows: int
    blocks: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]] | None]


@dataclass
class EmbeddedIndex:
    """One footer's embedded index, decoded on demand (per column, cached).

    Attributes:
        payload: The decoded payload (bodies as bytes).
        schema: The file's Arrow schema.
        num_rows: Rows per row group (from the footer).
    """

    payload: IndexPayload
    schema: pa.Schema
    num_rows: npt.NDArray[np.int64]
    _distinct: dict[str, _Distinct | None] = field(default_factory=dict)
    _time: dict[str, _Time | None] = field(default_factory=dict)

    @property
    def num_row_groups(self) -> int:
        return self.payload.num_row_groups

    def kinds(self) -> dict[str, list[str]]:
        """Returns: each indexed column's kinds (``"distinct"``, ``"time_index"``), with
        ``"distinct (over cap)"`` for a DISTINCT entry that proves nothing."""
        out: dict[str, list[str]] = {}
        for entry in self.payload.entries:
            name = entry.kind.name.lower()
            if entry.status == EntryStatus.OVER_CAP:
                name += " (over cap)"
            out.setdefault(entry.column, []).append(name)
        return out

    def _entry(self, column: str, kind: IndexKind) -> bytes | None:
        for entry in self.payload.entries:
            if entry.column == column and entry.kind == kind:
                return entry.body if entry.status == EntryStatus.PRESENT else None
        return None

    def _arrow_type(self, column: str) -> pa.DataType:
        index = self.schema.get_field_index(column)
        if index < 0:
            raise CorruptFileError(
                f"The embedded index has an entry for column {column!r}, which the file's "
                "schema does not have."
            )
        return _value_type(self.schema.field(index).type)

    def distinct(self, column: str) -> tuple[pa.Array, list[pa.Array | None]] | None:
        """A DISTINCT column's values in the file and each row group's value set.

        Returns:
            ``(values, value_sets)`` (a set None where the row group is unknown), or None
            (no DISTINCT entry, or OVER_CAP).

        Raises:
            CorruptFileError: The entry is damaged.
        """
        if column not in self._distinct:
            body = self._entry(column, IndexKind.DISTINCT)
            try:
                self._distinct[column] = (
                    None if body is None else self._parse_distinct(column, body)
                )
            except (struct.error, ValueError, IndexError, pa.ArrowException) as exc:
                raise CorruptFileError(
                    f"The embedded DISTINCT index of column {column!r} is damaged: {exc}."
                ) from None
        found = self._distinct[column]
        return None if found is None else (found.values, found.value_sets)

    def _parse_distinct(self, column: str, body: bytes) -> _Distinct:
        num_rgs = self.num_row_groups
        kind = ValueKind(body[0])
        num_values = int(struct.unpack_from("<I", body, 1)[0])
        pos = 5
        arrow_type = self._arrow_type(column)
        if kind == ValueKind.INT64 and not num_values:
            values = pa.array([], arrow_type)  # an all-null column: no kind fixed yet
        elif kind == ValueKind.INT64:
            ints = np.frombuffer(body, dtype="<i8", count=num_values, offset=pos)
            values = _from_int64(ints, arrow_type, None)
            pos += 8 * num_values
        else:
            offsets = _u32(body, pos, num_values + 1)
            pos += 4 * (num_values + 1)
            data_size = int(offsets[-1])
            if len(body) < pos + data_size:
                raise ValueError("values past the end")
            raw = pa.Array.from_buffers(
                pa.binary(),
                num_values,
                [
                    None,
                    pa.py_buffer(offsets.astype("<i4")),
                    pa.py_buffer(body[pos : pos + data_size]),
                ],
            )
            raw.validate(full=True)
            values = raw.cast(arrow_type)
            pos += data_size
        row_size = bitmap_bytes(num_rgs)
        known_bits = np.frombuffer(body, dtype=np.uint8, count=row_size, offset=pos)
        known = np.unpackbits(known_bits, bitorder="little")[:num_rgs].astype(bool)
        layout = MembershipLayout(body[pos + row_size])
        pos += row_size + 1
        sets: list[pa.Array | None] = [None] * num_rgs
        bitmap = layout == MembershipLayout.BITMAP
        for rg in range(num_rgs):
            (count,) = struct.unpack_from("<I", body, pos)
            if bitmap:
                size = bitmap_bytes(count)
                bits = np.frombuffer(body, dtype=np.uint8, count=size, offset=pos + 4)
                ids: npt.NDArray[np.int64] = np.flatnonzero(
                    np.unpackbits(bits, bitorder="little")[:count]
                ).astype(np.int64)
                if count > num_values or np.unpackbits(bits, bitorder="little")[count:].any():
                    raise ValueError("bad membership bitmap")
                pos += 4 + size
            else:
                ids = _u32(body, pos + 4, count).astype(np.int64)
                if count and int(ids.max()) >= num_values:
                    raise ValueError("value id out of range")
                pos += 4 + 4 * count
            if known[rg]:
                sets[rg] = values.take(pa.array(ids))
        if pos != len(body):
            raise ValueError("bytes after the membership")
        return _Distinct(values, sets)

    def _time_index(self, column: str) -> _Time | None:
        if column not in self._time:
            body = self._entry(column, IndexKind.TIME_INDEX)
            try:
                self._time[column] = None if body is None else self._parse_time(body)
            except (struct.error, ValueError, IndexError) as exc:
                raise CorruptFileError(
                    f"The embedded TIME_INDEX of column {column!r} is damaged: {exc}."
                ) from None
        return self._time[column]

    def _parse_time(self, body: bytes) -> _Time:
        num_rgs = self.num_row_groups
        (block_rows,) = struct.unpack_from("<I", body, 0)
        row_size = bitmap_bytes(num_rgs)
        known_bits = np.frombuffer(body, dtype=np.uint8, count=row_size, offset=4)
        known = np.unpackbits(known_bits, bitorder="little")[:num_rgs].astype(bool)
        pos = 4 + row_size
        blocks: list[
            tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]] | None
        ] = []
        for rg in range(num_rgs):
            if not known[rg]:
                blocks.append(None)
                continue
            num_rows, num_blocks = struct.unpack_from("<QI", body, pos)
            if block_rows < 1 or num_rows != self.num_rows[rg]:
                raise ValueError(f"row group {rg} has {self.num_rows[rg]} rows, not {num_rows}")
            if num_blocks != -(-num_rows // block_rows):
                raise ValueError("block count")
            pos += 12
            mins = np.frombuffer(body, dtype="<i8", count=num_blocks, offset=pos)
            maxs = np.frombuffer(body, dtype="<i8", count=num_blocks, offset=pos + 8 * num_blocks)
            nulls = np.frombuffer(
                body, dtype="<u4", count=num_blocks, offset=pos + 16 * num_blocks
            ).astype(np.int64)
            pos += 20 * num_blocks
            blocks.append((mins, maxs, nulls))
        if pos != len(body):
            raise ValueError("bytes after the time index")
        return _Time(block_rows, blocks)

    def fragments(
        self, column: str, row_group: int
    ) -> tuple[npt.NDArray[np.int64], ColumnStats] | None:
        """A TIME_INDEX column's blocks in one row group, for ``prune_fragments``.

        Returns:
            ``(first row of each block within the row group, ColumnStats per block:
            num_values, null_count, exact min/max (null for an all-null block))``, or None
            (no TIME_INDEX entry, or the row group is unknown).

        Raises:
            CorruptFileError: The entry is damaged.
        """
        time = self._time_index(column)
        if time is None or time.blocks[row_group] is None:
            return None
        mins, maxs, nulls = time.blocks[row_group]  # type: ignore[misc]
        num_rows = int(self.num_rows[row_group])
        first_rows = np.arange(len(mins), dtype=np.int64) * time.block_rows
        num_values = np.minimum(first_rows + time.block_rows, num_rows) - first_rows
        all_null = nulls == num_values
        arrow_type = self._arrow_type(column)
        return first_rows, ColumnStats(
            num_values=num_values,
            null_count=pa.array(nulls, pa.int64()),
            min=_from_int64(mins, arrow_type, all_null),
            max=_from_int64(maxs, arrow_type, all_null),
        )

    def _time_stats(self, column: str) -> ColumnStats | None:
        time = self._time_index(column)
        if time is None:
            return None
        n = self.num_row_groups
        mins = np.zeros(n, dtype=np.int64)
        maxs = np.zeros(n, dtype=np.int64)
        nulls = np.zeros(n, dtype=np.int64)
        unknown = np.ones(n, dtype=bool)  # no bound: unknown or all null
        unknown_nulls = np.ones(n, dtype=bool)
        for rg, found in enumerate(time.blocks):
            if found is None:
                continue
            block_mins, block_maxs, block_nulls = found
            nulls[rg] = block_nulls.sum()
            unknown_nulls[rg] = False
            first_rows = np.arange(len(block_mins), dtype=np.int64) * time.block_rows
            sizes = np.minimum(first_rows + time.block_rows, self.num_rows[rg]) - first_rows
            valid = block_nulls < sizes
            if valid.any():
                mins[rg] = block_mins[valid].min()
                maxs[rg] = block_maxs[valid].max()
                unknown[rg] = False
        arrow_type = self._arrow_type(column)
        return ColumnStats(
            num_values=self.num_rows.copy(),
            null_count=pa.array(nulls, pa.int64(), mask=unknown_nulls),
            min=_from_int64(mins, arrow_type, unknown),
            max=_from_int64(maxs, arrow_type, unknown),
        )

    def containers(self, columns: Sequence[str] | None = None) -> Containers:
        """What the index knows of each row group, as ``streamwrite.predicate.Containers``.

        Args:
            columns: Only these columns (default: every indexed column).

        Returns:
            One container per row group: DISTINCT columns give ``value_sets``; TIME_INDEX
            columns ``num_values``, ``null_count`` and exact ``min``/``max``.

        Raises:
            CorruptFileError: An entry is damaged.
        """
        names = list(dict.fromkeys(e.column for e in self.payload.entries))
        if columns is not None:
            names = [name for name in names if name in columns]
        stats: dict[str, ColumnStats] = {}
        for name in names:
            time = self._time_stats(name)
            distinct = self.distinct(name)
            if time is None and distinct is None:
                continue
            if time is not None:
                base = time
            else:
                assert distinct is not None
                base = _set_bounds(distinct[1], self._arrow_type(name))
            stats[name] = ColumnStats(
                num_values=base.num_values,
                null_count=base.null_count,
                min=base.min,
                max=base.max,
                value_sets=None if distinct is None else distinct[1],
            )
        return Containers(num_containers=self.num_row_groups, columns=stats)
