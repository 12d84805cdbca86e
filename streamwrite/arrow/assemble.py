"""Repetition and definition levels -> nested Arrow arrays (Dremel record assembly, vectorised).

The inverse of :mod:`streamwrite.arrow.shred`; the levels are those of
:mod:`streamwrite.arrow.column`. Every node of the field tree is built from the level entries
of one leaf under it (its first), with numpy masks over the whole column, never per value::

    context of a node   (R, D): R = LIST / MAP ancestors, D = the level at which the
                        enclosing list holds an element (its def_level + 1; top level 0, 0)
    slots of the node   entries with rep <= R and def >= D  (one Arrow slot each)
    valid slot          def >= node.def_level (a non-nullable node carries no validity: its
                        slots under a null parent stay valid, zero or empty, as pyarrow's)
    LIST / MAP          children in context (rep_level, def_level + 1); offsets[i] = element
                        slots before slot i (a cumulative count at the slot entries)
    STRUCT              children in the node's own context (a null struct's children: null)
    LEAF                from_physical(values, def[slots]) (values: entries def == max)

A fixed_size_list gets ``list_size`` null children for each null slot; a valid slot with
another count of elements is corrupt. Levels that contradict the schema raise
CorruptFileError: a first entry with rep != 0, an entry continuing a list (rep >= the list's
rep_level) that does not define an element (def <= the list's def_level), leaves under one
node that disagree on records, slots or validity, values that do not match the levels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from streamwrite.arrow.assembly import from_physical
from streamwrite.arrow.column import ColumnSpec, FieldNode, NodeKind
from streamwrite.arrow.units import INT32_MAX
from streamwrite.errors import CorruptFileError, FormatError
from workers.values import BinaryValues

__all__ = ["LeafLevels", "assemble", "leaf_ids"]


class LeafLevels(Protocol):
    """One leaf column's levels and values (``shred.LeafData``, ``workers.decode.DecodedChunk``).

    ``values``: entries whose definition level is the leaf's maximum, in physical form;
    ``def_levels`` / ``rep_levels``: one per level entry, None when the maximum is 0;
    ``num_rows``: records.
    """

    @property
    def values(self) -> npt.NDArray[Any] | BinaryValues: ...

    @property
    def def_levels(self) -> npt.NDArray[np.uint8] | None: ...

    @property
    def rep_levels(self) -> npt.NDArray[np.uint8] | None: ...

    @property
    def num_rows(self) -> int: ...


class _Leaf:
    """A leaf's levels as full arrays (zeros where the stream has none)."""

    __slots__ = ("data", "defs", "num_levels", "reps", "spec")

    def __init__(self, data: LeafLevels, spec: ColumnSpec) -> None:
        self.data = data
        self.spec = spec
        defs, reps = data.def_levels, data.rep_levels
        if defs is not None:
            n = int(defs.shape[0])
        elif reps is not None:
            n = int(reps.shape[0])
        else:
            n = data.num_rows
        if reps is not None and reps.shape[0] != n:
            raise CorruptFileError(
                f"Column {spec.name!r} has {reps.shape[0]} repetition levels for {n} "
                "definition levels."
            )
        self.num_levels = n
        self.defs = (
            np.full(n, spec.max_definition_level, np.uint8) if defs is None else np.asarray(defs)
        )
        self.reps = np.zeros(n, np.uint8) if reps is None else np.asarray(reps)


def assemble(
    node: FieldNode,
    leaves: Sequence[LeafLevels],
    columns: Sequence[ColumnSpec],
    *,
    validate: bool,
) -> pa.Array:
    """Build the Arrow array of field ``node`` from the levels and values of its leaves.

    Args:
        node: The field (any kind; a flat LEAF node gives ``from_physical``'s array).
        leaves: One per leaf under ``node``, in order (:func:`leaf_ids`).
        columns: The schema's leaf columns (indexed by ``FieldNode.leaf``).
        validate: Check the levels against the schema and run Arrow's full validation on
            the values (readers of untrusted files pass True).

    Returns:
        An array of type ``node.field.type`` with one slot per record.

    Raises:
        CorruptFileError: If the levels contradict the schema or the leaves disagree.
        FormatError: If values do not fit their type (from ``from_physical``).
    """
    ids = leaf_ids(node)
    if len(leaves) != len(ids):
        raise CorruptFileError(
            f"Field {node.name!r} has {len(ids)} leaf columns, {len(leaves)} were given."
        )
    data = {i: _Leaf(leaf, columns[i]) for i, leaf in zip(ids, leaves, strict=True)}
    num_rows = {leaf.data.num_rows for leaf in data.values()}
    if len(num_rows) != 1:
        raise CorruptFileError(
            f"The leaf columns of {node.name!r} hold different numbers of records "
            f"{sorted(num_rows)}."
        )
    for leaf in data.values():
        if leaf.num_levels and leaf.reps[0] != 0:
            raise CorruptFileError(
                f"Column {leaf.spec.name!r} starts with repetition level {leaf.reps[0]}; "
                "a column chunk starts a record (0)."
            )
    result = _Assembler(data, validate).build(node, 0, 0)
    if len(result) != next(iter(num_rows)):
        raise CorruptFileError(
            f"Field {node.name!r} assembles {len(result)} records; its leaves claim "
            f"{next(iter(num_rows))}."
        )
    return result


def leaf_ids(node: FieldNode) -> list[int]:
    """The leaf columns under ``node`` in order (a struct node pruned to some of its children
    by a reader's ``columns=["s.a"]`` need not cover ``leaf_start:leaf_stop``)."""
    return [n.leaf for n in node.walk() if n.leaf is not None]


def _first_leaf(node: FieldNode) -> int:
    while node.leaf is None:
        node = node.children[0]
    return node.leaf


class _Assembler:
    def __init__(self, leaves: dict[int, _Leaf], validate: bool) -> None:
        self.leaves = leaves
        self.validate = validate

    def _slots(self, leaf: _Leaf, rep: int, define: int) -> npt.NDArray[np.bool_] | None:
        """Mask of the entries that are slots in context (rep, define); None: every entry."""
        mask: npt.NDArray[np.bool_] | None = None
        if rep < leaf.spec.max_repetition_level:
            mask = leaf.reps <= rep
        if define > 0:
            present = leaf.defs >= define
            mask = present if mask is None else mask & present
        return mask

    def build(self, node: FieldNode, rep: int, define: int) -> pa.Array:
        leaf = self.leaves[_first_leaf(node)]
        slots = self._slots(leaf, rep, define)
        slot_defs = leaf.defs if slots is None else leaf.defs[slots]
        n = int(slot_defs.shape[0])
        if node.kind is NodeKind.LEAF:
            return self._leaf(leaf, slot_defs, n)
        valid = slot_defs >= node.def_level
        dtype = node.field.type
        storage = dtype.storage_type if isinstance(dtype, pa.BaseExtensionType) else dtype
        if node.kind is NodeKind.STRUCT:
            children = [self.build(child, rep, define) for child in node.children]
            if self.validate:
                self._check_struct(node, rep, define, valid, children, n)
            array = _from_buffers(storage, n, _emitted(node, valid), [], children)
        else:
            array = self._list(node, storage, leaf, slots, valid, n)
        if storage is not dtype:
            return pa.ExtensionArray.from_storage(dtype, array)
        return array

    def _leaf(self, leaf: _Leaf, slot_defs: npt.NDArray[np.uint8], n: int) -> pa.Array:
        spec = leaf.spec
        defs = None if spec.max_definition_level == 0 else slot_defs
        try:
            array = from_physical(leaf.data.values, defs, n, spec, validate=self.validate)
        except FormatError as exc:
            raise CorruptFileError(str(exc)) from exc
        return array if spec.field.nullable else _without_nulls(array)

    def _check_struct(
        self,
        node: FieldNode,
        rep: int,
        define: int,
        valid: npt.NDArray[np.bool_],
        children: list[pa.Array],
        n: int,
    ) -> None:
        for child, array in zip(node.children, children, strict=True):
            if len(array) != n:
                raise CorruptFileError(
                    f"The leaves of {node.name!r} disagree: {child.name!r} has {len(array)} "
                    f"slots, {node.children[0].name!r} {n}."
                )
            if _first_leaf(child) == _first_leaf(node):
                continue
            other = self.leaves[_first_leaf(child)]
            mask = self._slots(other, rep, define)
            other_defs = other.defs if mask is None else other.defs[mask]
            if not np.array_equal(other_defs >= node.def_level, valid):
                raise CorruptFileError(
                    f"The leaves of {node.name!r} disagree on which of its values are null "
                    f"({child.name!r} and {node.children[0].name!r})."
                )

    def _list(
        self,
        node: FieldNode,
        storage: pa.DataType,
        leaf: _Leaf,
        slots: npt.NDArray[np.bool_] | None,
        valid: npt.NDArray[np.bool_],
        n: int,
    ) -> pa.Array:
        element_define = node.def_level + 1
        if self.validate:
            for index in leaf_ids(node):
                other = self.leaves[index]
                bad = (other.reps >= node.rep_level) & (other.defs < element_define)
                if bad.any():
                    at = int(np.flatnonzero(bad)[0])
                    raise CorruptFileError(
                        f"Column {other.spec.name!r} continues the list {node.name!r} at level "
                        f"entry {at} (repetition level {other.reps[at]}) without defining an "
                        f"element (definition level {other.defs[at]})."
                    )
        element_slots = self._slots(leaf, node.rep_level, element_define)
        counted = np.ones(leaf.num_levels, np.bool_) if element_slots is None else element_slots
        before = np.zeros(leaf.num_levels + 1, np.int64)
        np.cumsum(counted, out=before[1:])
        starts = before[:-1] if slots is None else before[:-1][slots]
        offsets = np.empty(n + 1, np.int64)
        offsets[:n] = starts
        offsets[n] = before[-1]
        children = [self.build(child, node.rep_level, element_define) for child in node.children]
        num_elements = int(offsets[n])
        for child, array in zip(node.children, children, strict=True):
            if len(array) != num_elements:
                raise CorruptFileError(
                    f"The leaves of {node.name!r} disagree: {child.name!r} has {len(array)} "
                    f"elements, {node.children[0].name!r} {num_elements}."
                )
        if node.kind is NodeKind.MAP:
            entries_type = storage.key_field, storage.item_field
            entries = _from_buffers(pa.struct(list(entries_type)), num_elements, None, [], children)
            return _from_buffers(
                storage, n, _emitted(node, valid), [_offsets(offsets, node, False)], [entries]
            )
        if pa.types.is_fixed_size_list(storage):
            return self._fixed_size(node, storage, offsets, valid, children[0], n)
        large = pa.types.is_large_list(storage)
        offsets_buffer = _offsets(offsets, node, large)
        return _from_buffers(storage, n, _emitted(node, valid), [offsets_buffer], children)

    def _fixed_size(
        self,
        node: FieldNode,
        storage: pa.DataType,
        offsets: npt.NDArray[np.int64],
        valid: npt.NDArray[np.bool_],
        element: pa.Array,
        n: int,
    ) -> pa.Array:
        size = int(storage.list_size)
        counts = np.diff(offsets)
        wrong = valid & (counts != size)
        if wrong.any():
            at = int(np.flatnonzero(wrong)[0])
            raise CorruptFileError(
                f"Field {node.name!r} is a fixed_size_list of {size} but its value {at} holds "
                f"{int(counts[at])} elements."
            )
        if not valid.all():
            # null slots hold no elements in Parquet: give each list_size null children
            index = (offsets[:-1, None] + np.arange(size, dtype=np.int64)[None, :]).reshape(-1)
            null = np.repeat(~valid, size)
            element = _take(element, pa.array(np.where(null, 0, index), mask=null))
        return _from_buffers(storage, n, _emitted(node, valid), [], [element])


def _without_views(dtype: pa.DataType) -> pa.DataType:
    """``dtype`` with string_view / binary_view replaced by their large types, at any depth."""
    if pa.types.is_string_view(dtype):
        return pa.large_string()
    if pa.types.is_binary_view(dtype):
        return pa.large_binary()
    if pa.types.is_struct(dtype):
        return pa.struct([f.with_type(_without_views(f.type)) for f in dtype])
    if pa.types.is_fixed_size_list(dtype):
        return pa.list_(
            dtype.value_field.with_type(_without_views(dtype.value_type)), dtype.list_size
        )
    if pa.types.is_large_list(dtype):
        return pa.large_list(dtype.value_field.with_type(_without_views(dtype.value_type)))
    if pa.types.is_list(dtype):
        return pa.list_(dtype.value_field.with_type(_without_views(dtype.value_type)))
    if pa.types.is_map(dtype):
        return pa.map_(
            dtype.key_field.with_type(_without_views(dtype.key_type)),
            dtype.item_field.with_type(_without_views(dtype.item_type)),
            keys_sorted=dtype.keys_sorted,
        )
    return dtype


def _take(array: pa.Array, indices: pa.Array) -> pa.Array:
    """``array.take(indices)``; pyarrow has no take kernel for view types, so an array holding
    them is taken through their large types."""
    plain = _without_views(array.type)
    if plain.equals(array.type):
        return array.take(indices)
    return array.cast(plain).take(indices).cast(array.type)


def _emitted(node: FieldNode, valid: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_] | None:
    """The validity a node's array carries: none for a non-nullable field (its slots under a
    null parent are hidden by the parent, as pyarrow reads them)."""
    return valid if node.field.nullable else None


def _without_nulls(array: pa.Array) -> pa.Array:
    """A non-nullable leaf's array without a validity bitmap (slots under a null parent hold
    zero values, as pyarrow reads them)."""
    if array.null_count == 0 or pa.types.is_null(array.type):
        return array
    if isinstance(array, pa.DictionaryArray):
        return array  # null indices stay null: the dictionary may have no value to point at
    if isinstance(array, pa.ExtensionArray):
        return pa.ExtensionArray.from_storage(array.type, _without_nulls(array.storage))
    buffers = array.buffers()
    return pa.Array.from_buffers(
        array.type, len(array), [None, *buffers[1:]], null_count=0, offset=array.offset
    )


def _offsets(offsets: npt.NDArray[np.int64], node: FieldNode, large: bool) -> pa.Buffer:
    if large:
        return pa.py_buffer(offsets)
    if offsets.shape[0] and offsets[-1] > INT32_MAX:
        raise CorruptFileError(
            f"Field {node.name!r} holds {int(offsets[-1])} elements, more than a list's 32-bit "
            "offsets address; read it as a large_list."
        )
    return pa.py_buffer(offsets.astype(np.int32))


def _from_buffers(
    dtype: pa.DataType,
    n: int,
    valid: npt.NDArray[np.bool_] | None,
    buffers: list[pa.Buffer],
    children: list[pa.Array],
) -> pa.Array:
    validity = None
    null_count = 0
    if valid is not None and not valid.all():
        validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
        null_count = n - int(np.count_nonzero(valid))
    return pa.Array.from_buffers(
        dtype, n, [validity, *buffers], null_count=null_count, children=children
    )
