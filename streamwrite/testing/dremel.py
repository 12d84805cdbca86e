"""A per-value reference of Dremel shredding (record -> repetition and definition levels).

Plain Python over Arrow scalars, one value at a time, straight from the Dremel paper's
``WriteField`` recursion and parquet-format "Nested Encoding" (slow and obviously right): the
tests compare the vectorised kernels (``streamwrite.arrow.shred``, the reader's assembly) with
it. It reads the Arrow type directly, not the package's schema tree, so it is an independent
check of the levels too::

    value of a field (nullable adds 1 to the definition level when present)
      null                 every leaf under the field: (def so far, rep), no value
      struct               each child with the same rep
      list / large_list /  no element: every leaf (def, rep); else element j with rep =
        fixed_size_list,   the entry's rep for j == 0, else the list's depth (enclosing
        map (entries       depth + 1), at def + 1 (the repeated group)
        key, value)
      primitive            one entry (def, rep) and its value

Leaves are named by their Parquet path as pyarrow writes it (``l.list.element``,
``m.key_value.key``, ``s.a``). Needs nothing beyond pyarrow (no hypothesis).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

__all__ = ["ReferenceLeaf", "reference_shred"]


@dataclass
class ReferenceLeaf:
    """One leaf's levels and values, as the reference computes them.

    Attributes:
        path: Parquet ``path_in_schema``.
        field: The leaf's Arrow field.
        max_definition_level: Its maximum definition level.
        max_repetition_level: Its maximum repetition level.
        def_levels: One definition level per level entry.
        rep_levels: One repetition level per level entry.
        scalars: The present values (entries at the maximum definition level), in order
            (:attr:`values` as one array).
    """

    path: tuple[str, ...]
    field: pa.Field
    max_definition_level: int
    max_repetition_level: int
    def_levels: list[int] = field(default_factory=list)
    rep_levels: list[int] = field(default_factory=list)
    scalars: list[pa.Scalar] = field(default_factory=list)

    @property
    def values(self) -> pa.Array:
        """The present values as an array of the leaf's type."""
        return pa.array(self.scalars, type=self.field.type)


def _storage_type(dtype: pa.DataType) -> pa.DataType:
    if isinstance(dtype, pa.BaseExtensionType) and _is_group(dtype.storage_type):
        return dtype.storage_type
    return dtype


def _is_group(dtype: pa.DataType) -> bool:
    return bool(
        pa.types.is_struct(dtype)
        or pa.types.is_list(dtype)
        or pa.types.is_large_list(dtype)
        or pa.types.is_fixed_size_list(dtype)
        or pa.types.is_map(dtype)
    )


def _leaves(
    arrow_field: pa.Field,
    name: str,
    prefix: tuple[str, ...],
    parent_def: int,
    parent_rep: int,
    out: list[ReferenceLeaf],
) -> None:
    dtype = _storage_type(arrow_field.type)
    path = (*prefix, name)
    level = parent_def + int(arrow_field.nullable)
    if pa.types.is_struct(dtype):
        for i in range(dtype.num_fields):
            child = dtype.field(i)
            _leaves(child, child.name, path, level, parent_rep, out)
    elif pa.types.is_map(dtype):
        inner = (*path, "key_value")
        _leaves(dtype.key_field, "key", inner, level + 1, parent_rep + 1, out)
        _leaves(dtype.item_field, "value", inner, level + 1, parent_rep + 1, out)
    elif _is_group(dtype):
        inner = (*path, "list")
        _leaves(dtype.value_field, "element", inner, level + 1, parent_rep + 1, out)
    else:
        out.append(ReferenceLeaf(path, arrow_field, level, parent_rep))


class _Shredder:
    def __init__(self, leaves: list[ReferenceLeaf]) -> None:
        self.leaves = leaves

    def null(self, start: int, stop: int, def_level: int, rep: int) -> None:
        for leaf in self.leaves[start:stop]:
            leaf.def_levels.append(def_level)
            leaf.rep_levels.append(rep)

    def write(
        self,
        value: pa.Scalar,
        arrow_field: pa.Field,
        start: int,
        stop: int,
        parent_def: int,
        rep: int,
        depth: int,
    ) -> None:
        """Shred one value of ``arrow_field`` into leaves ``[start, stop)``."""
        dtype = _storage_type(arrow_field.type)
        if isinstance(value, pa.ExtensionScalar) and _is_group(dtype):
            value = value.value
        present = value is not None and value.is_valid
        if present and pa.types.is_dictionary(dtype):
            present = value.value is not None and value.value.is_valid
        if not present:
            if not arrow_field.nullable:
                raise ValueError(f"REQUIRED field {arrow_field.name!r} holds a null")
            self.null(start, stop, parent_def, rep)
            return
        level = parent_def + int(arrow_field.nullable)
        if pa.types.is_struct(dtype):
            at = start
            for i in range(dtype.num_fields):
                child = dtype.field(i)
                width = _num_leaves(child)
                self.write(value[i], child, at, at + width, level, rep, depth)
                at += width
            return
        if _is_group(dtype):
            items: Any = value.values
            if items is None or len(items) == 0:
                self.null(start, stop, level, rep)
                return
            for j in range(len(items)):
                element_rep = rep if j == 0 else depth + 1
                if pa.types.is_map(dtype):
                    key_width = _num_leaves(dtype.key_field)
                    self.write(
                        items.field(0)[j],
                        dtype.key_field,
                        start,
                        start + key_width,
                        level + 1,
                        element_rep,
                        depth + 1,
                    )
                    self.write(
                        items.field(1)[j],
                        dtype.item_field,
                        start + key_width,
                        stop,
                        level + 1,
                        element_rep,
                        depth + 1,
                    )
                else:
                    self.write(
                        items[j], dtype.value_field, start, stop, level + 1, element_rep, depth + 1
                    )
            return
        leaf = self.leaves[start]
        leaf.def_levels.append(level)
        leaf.rep_levels.append(rep)
        leaf.scalars.append(value)


def _num_leaves(arrow_field: pa.Field) -> int:
    out: list[ReferenceLeaf] = []
    _leaves(arrow_field, arrow_field.name, (), 0, 0, out)
    return len(out)


def reference_shred(
    column: pa.Array | pa.ChunkedArray, arrow_field: pa.Field
) -> list[ReferenceLeaf]:
    """Shred ``column`` (values of ``arrow_field``) one value at a time.

    Args:
        column: The field's values.
        arrow_field: The top-level field (its nullability counts).

    Returns:
        One :class:`ReferenceLeaf` per leaf of the field, in schema order.

    Raises:
        ValueError: A REQUIRED field holds a null where its parent is present.
    """
    leaves: list[ReferenceLeaf] = []
    _leaves(arrow_field, arrow_field.name, (), 0, 0, leaves)
    shredder = _Shredder(leaves)
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    for chunk in chunks:
        for row in range(len(chunk)):
            shredder.write(chunk[row], arrow_field, 0, len(leaves), 0, 0, 0)
    return leaves
