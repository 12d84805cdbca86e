"""Arrow column -> Dremel levels and leaf values of every leaf under a field (shredding).

parquet-format "Nested Encoding" and the Dremel paper, with the levels of
:mod:`streamwrite.arrow.column` (each :class:`~streamwrite.arrow.column.FieldNode` knows its
``def_level`` and ``rep_level``). Vectorised over the Arrow buffers (offsets, validity
bitmaps) with numpy; no Python loop runs per row or per value.

The tree is walked top-down, keeping one *level entry* per output position in three arrays::

    def    uint8   definition level reached so far
    rep    uint8   repetition level of the entry (set when a list expands it)
    idx    int64   slot of the entry in the current node's array; -1 once the entry ended
                   (at a null or an empty list: its levels are final below that node)

    top level              one entry per row: def 0, rep 0, idx = row
    nullable node          entries at a null slot end (idx -1); at a valid one def = def_level
    REQUIRED node          a null at a live slot is a SchemaError naming the node's path
    STRUCT                 each child sees the same entries (``StructArray.field(i)`` is
                           sliced to the struct; a null struct's child values are ignored)
    LIST / MAP             a live slot with n > 0 elements becomes n entries (np.repeat):
                           the first keeps its rep, the others get the list's rep_level;
                           def = def_level + 1, idx = the element's position in the child
                           array. An empty slot ends (def = def_level); a null slot ended
                           above, whatever range its offsets hide
    LEAF                   the entries with def == max_definition_level hold a value: the
                           leaf array gathered at their idx (a slice when the positions are
                           one contiguous range, ``take`` otherwise) goes through
                           :func:`~streamwrite.arrow.values.to_physical`

Offsets and validity are read with the array's own ``offset`` (sliced arrays); a list's child
is ``.values`` (unsliced: offsets index it), a fixed_size_list slot ``i`` holds child slots
``(offset + i) * list_size ...`` (a null slot is a null list), a map is a list of
``struct<key, value>`` whose keys are REQUIRED. Chunked arrays are shredded chunk by chunk and
the levels concatenated; the gathered leaf values of all chunks convert in one call.

A flat LEAF node (a top-level primitive field) gives exactly ``to_physical``'s values and
definition levels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from streamwrite.arrow.column import ColumnSpec, FieldNode, NodeKind
from streamwrite.arrow.values import to_physical
from streamwrite.errors import SchemaError
from streamwrite.format.enums import FieldRepetitionType
from workers.values import BinaryValues

__all__ = ["LeafData", "shred"]


@dataclass(frozen=True, slots=True)
class LeafData:
    """One leaf column's data: levels and non-null values.

    Attributes:
        values: The values of the entries whose definition level is the leaf's maximum, in
            physical form (:mod:`workers.values`).
        def_levels: One definition level per level entry; None when the leaf's
            ``max_definition_level`` is 0.
        rep_levels: One repetition level per level entry; None when the leaf's
            ``max_repetition_level`` is 0.
        num_rows: Records (top-level rows).
    """

    values: npt.NDArray[Any] | BinaryValues
    def_levels: npt.NDArray[np.uint8] | None
    rep_levels: npt.NDArray[np.uint8] | None
    num_rows: int


@dataclass(slots=True)
class _Entries:
    """The level entries at one node (module docstring)."""

    def_levels: npt.NDArray[np.uint8]
    rep_levels: npt.NDArray[np.uint8]
    idx: npt.NDArray[np.int64]


@dataclass(slots=True)
class _LeafParts:
    """What one leaf collected over the chunks."""

    def_levels: list[npt.NDArray[np.uint8]]
    rep_levels: list[npt.NDArray[np.uint8]]
    values: list[pa.Array]


def shred(
    column: pa.Array | pa.ChunkedArray, node: FieldNode, columns: Sequence[ColumnSpec]
) -> list[LeafData]:
    """Levels and physical values of every leaf under ``node`` for ``column``.

    Args:
        column: The field's data (its type must be the node's field type).
        node: The field's node (``ParquetSchema.fields``).
        columns: The schema's leaf columns (``ParquetSchema.columns``).

    Returns:
        One :class:`LeafData` per leaf under the node, in leaf order.

    Raises:
        SchemaError: The column's type is not the field's, a REQUIRED field holds a null where
            its parent is present (the message names its dotted path), or a leaf value does not
            fit its physical type (as :func:`~streamwrite.arrow.values.to_physical`).
    """
    if node.kind is NodeKind.LEAF and node.leaf is not None and not columns[node.leaf].is_nested:
        physical = to_physical(column, columns[node.leaf])
        return [LeafData(physical.values, physical.def_levels, None, physical.num_rows)]
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    if not column.type.equals(node.field.type):
        raise SchemaError(
            f"Column {node.name!r} expects Arrow type {node.field.type}, got an array of type "
            f"{column.type}."
        )
    parts = [_LeafParts([], [], []) for _ in node.leaves]
    num_rows = 0
    for chunk in chunks:
        n = len(chunk)
        num_rows += n
        entries = _Entries(
            np.zeros(n, dtype=np.uint8), np.zeros(n, dtype=np.uint8), np.arange(n, dtype=np.int64)
        )
        _walk(chunk, node, entries, parts, node.leaf_start)
    out = []
    for part, leaf in zip(parts, node.leaves, strict=True):
        spec = columns[leaf]
        values = _physical_values(part.values, spec)
        def_levels = _joined(part.def_levels) if spec.max_definition_level else None
        rep_levels = _joined(part.rep_levels) if spec.max_repetition_level else None
        out.append(LeafData(values, def_levels, rep_levels, num_rows))
    return out


def _joined(levels: list[npt.NDArray[np.uint8]]) -> npt.NDArray[np.uint8]:
    if len(levels) == 1:
        return levels[0]
    if not levels:
        return np.zeros(0, dtype=np.uint8)
    return np.concatenate(levels)


def _physical_values(parts: list[pa.Array], spec: ColumnSpec) -> npt.NDArray[Any] | BinaryValues:
    # The gathered values hold no null: convert them as REQUIRED (no definition levels made).
    required = replace(spec, repetition=FieldRepetitionType.REQUIRED)
    dtype = spec.field.type
    if not parts:
        return to_physical(pa.array([], type=dtype), required).values
    if any(not part.type.equals(dtype) for part in parts):
        # views were cast, or a dictionary with null entries decoded, at the leaf (_leaf)
        parts = [_plain(part) for part in parts]
        dtype = parts[0].type
        required = replace(required, field=spec.field.with_type(dtype))
    data = parts[0] if len(parts) == 1 else pa.chunked_array(parts, type=dtype)
    return to_physical(data, required).values


def _plain(array: pa.Array) -> pa.Array:
    """``array`` decoded (dictionaries) and as its large type (views), as ``take`` needs it."""
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if pa.types.is_string_view(array.type):
        return array.cast(pa.large_string())
    if pa.types.is_binary_view(array.type):
        return array.cast(pa.large_binary())
    return array


def _validity(array: pa.Array) -> npt.NDArray[np.bool_] | None:
    """Validity of each slot of ``array`` (None: no nulls)."""
    if pa.types.is_null(array.type):
        return np.zeros(len(array), dtype=np.bool_)
    if array.null_count == 0:
        return None
    buf = array.buffers()[0]
    n = len(array)
    if buf is None:  # nulls without a bitmap (unions have none; kept for safety)
        return np.asarray(array.is_valid(), dtype=np.bool_)
    raw = np.frombuffer(buf, dtype=np.uint8)
    bits = np.unpackbits(raw, count=array.offset + n, bitorder="little")[array.offset :]
    return bits.view(np.bool_)


def _storage(array: pa.Array) -> pa.Array:
    if isinstance(array, pa.ExtensionArray):
        return array.storage
    return array


def _walk(
    array: pa.Array,
    node: FieldNode,
    entries: _Entries,
    parts: list[_LeafParts],
    first_leaf: int,
) -> None:
    """Apply ``node`` to ``entries`` (live ones index ``array``) and recurse to its leaves."""
    live = entries.idx >= 0
    if node.kind is NodeKind.LEAF and (
        (pa.types.is_dictionary(array.type) and array.dictionary.null_count)
        or pa.types.is_string_view(array.type)
        or pa.types.is_binary_view(array.type)
    ):
        array = _plain(array)  # a null entry of the dictionary is a null value; take needs it
    valid = _validity(array)
    if valid is not None:
        slot_valid = np.ones(live.shape[0], dtype=np.bool_)
        slot_valid[live] = valid[entries.idx[live]]
        nulls = live & ~slot_valid
        if nulls.any():
            if not node.nullable:
                raise SchemaError(
                    f"Column {node.name!r} is REQUIRED (not nullable) but the array holds "
                    f"{int(np.count_nonzero(nulls))} null(s) where its parent is present."
                )
            idx = entries.idx.copy()
            idx[nulls] = -1
            entries = _Entries(entries.def_levels, entries.rep_levels, idx)
            live &= slot_valid
    if node.nullable:
        def_levels = entries.def_levels.copy()
        def_levels[live] = node.def_level
        entries = _Entries(def_levels, entries.rep_levels, entries.idx)
    if node.kind is NodeKind.LEAF:
        _leaf(array, node, entries, live, parts[node.leaf_start - first_leaf])
        return
    array = _storage(array)
    if node.kind is NodeKind.STRUCT:
        for i, child in enumerate(node.children):
            _walk(array.field(i), child, entries, parts, first_leaf)
        return
    starts, lengths, child_array = _list_ranges(array, entries.idx, live)
    entries = _expand(entries, live, starts, lengths, node)
    if node.kind is NodeKind.LIST:
        _walk(child_array, node.children[0], entries, parts, first_leaf)
        return
    for i, child in enumerate(node.children):  # MAP: key, value over the same entries
        _walk(child_array.field(i), child, entries, parts, first_leaf)


def _list_ranges(
    array: pa.Array, idx: npt.NDArray[np.int64], live: npt.NDArray[np.bool_]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], pa.Array]:
    """Child start and element count of each live entry's list slot (0 elsewhere), and the
    child array the starts index."""
    num_entries = idx.shape[0]
    every = _contiguous(idx, live)  # the entries are the slots start..start+len, all live
    slots = idx if every is not None else idx[live]
    if pa.types.is_fixed_size_list(array.type):
        size = array.type.list_size
        starts = np.zeros(num_entries, dtype=np.int64)
        starts[live] = (array.offset + slots) * size
        lengths = np.where(live, size, 0).astype(np.int64)
        return starts, lengths, array.values
    offset_dtype = np.int64 if pa.types.is_large_list(array.type) else np.int32
    n = len(array)
    buf = array.buffers()[1]
    if buf is None or n == 0:
        zeros = np.zeros(num_entries, dtype=np.int64)
        return zeros, zeros, array.values
    offsets = np.frombuffer(buf, dtype=offset_dtype)[array.offset : array.offset + n + 1]
    if every is not None:
        window = offsets[every : every + num_entries + 1].astype(np.int64)
        return window[:-1], np.diff(window), array.values
    starts = np.zeros(num_entries, dtype=np.int64)
    lengths = np.zeros(num_entries, dtype=np.int64)
    first = offsets[slots].astype(np.int64)
    starts[live] = first
    lengths[live] = offsets[slots + 1].astype(np.int64) - first
    return starts, lengths, array.values


def _contiguous(idx: npt.NDArray[np.int64], live: npt.NDArray[np.bool_]) -> int | None:
    """The first slot if every entry is live and the slots are one run ``first, first + 1...``
    (live slots strictly increase in entry order, so the ends tell), else None."""
    count = idx.shape[0]
    if count == 0 or int(idx[0]) < 0 or int(idx[-1]) - int(idx[0]) + 1 != count:
        return None
    return int(idx[0]) if bool(live.all()) else None


def _expand(
    entries: _Entries,
    live: npt.NDArray[np.bool_],
    starts: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
    node: FieldNode,
) -> _Entries:
    """Each live entry with ``n > 0`` elements becomes ``n`` entries (module docstring).

    One ``np.repeat`` per array: entry ``k`` of the output lies in the group of its parent
    ``p``, which starts at ``first[p]``; its child slot is ``k + starts[p] - first[p]`` (or -1
    where the parent did not expand: ``k + (-1 - first[p])`` with ``k == first[p]``).
    """
    has = live & (lengths > 0)
    if not has.any():
        ended = entries.idx.copy()
        ended[live] = -1  # every live list is empty: def stays at def_level
        return _Entries(entries.def_levels, entries.rep_levels, ended)
    counts = np.where(has, lengths, 1)
    first = np.zeros(counts.shape[0], dtype=np.int64)
    np.cumsum(counts[:-1], out=first[1:])
    total = int(first[-1] + counts[-1])
    base = np.where(has, starts - first, -1 - first)
    new_idx = np.arange(total, dtype=np.int64)
    new_idx += np.repeat(base, counts)
    rep_levels = np.full(total, node.rep_level, dtype=np.uint8)
    rep_levels[first] = entries.rep_levels
    parent_def = entries.def_levels.copy()
    parent_def[has] = node.def_level + 1
    # live entries with an empty list end here (their def stays at the list's def_level)
    return _Entries(np.repeat(parent_def, counts), rep_levels, new_idx)


def _leaf(
    array: pa.Array,
    node: FieldNode,
    entries: _Entries,
    live: npt.NDArray[np.bool_],
    part: _LeafParts,
) -> None:
    part.def_levels.append(entries.def_levels)
    part.rep_levels.append(entries.rep_levels)
    positions = entries.idx if bool(live.all()) else entries.idx[live]
    count = positions.shape[0]
    if count == 0:
        part.values.append(array.slice(0, 0))
        return
    start = int(positions[0])
    if int(positions[-1]) - start + 1 == count:  # live slots strictly increase: one run
        part.values.append(array.slice(start, count))
    else:
        part.values.append(array.take(pa.array(positions)))
