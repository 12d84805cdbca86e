"""Two nested Arrow shapes -> Parquet schema, levels, leaf values (minimal: issue 15 generalises).

Only what the skipping store (xskipper v4 files) needs, beside flat primitive fields:

``struct<a: P, b: P, ...>`` (children primitive), as Spark writes a MinMax column::

    optional group <name> {               def 1 = struct present
      optional <P> a;                     def 2 = child present (max_def 2, max_rep 0)
      optional <P> b; }

``list<element: P>``, the 3-level LIST of ``LogicalTypes.md`` as Spark writes a ValueList::

    optional group <name> (LIST) {        def 0 = list null
      repeated group list {               def 1 = list empty, rep 0 = a new row
        optional <P> element; } }         def 2 = element null, def 3 = element present,
                                          rep 1 = another element of the same row

Leaf columns are named by their dotted path (``name.a``, ``name.list.element``); a leaf's
``ColumnSpec`` is the primitive's own (:func:`streamwrite.arrow.schema.arrow_to_parquet` of the
child field) with that path as its name and the leaf's ``max_definition_level``. Levels are
computed with numpy from the Arrow validity bitmaps and list offsets (no per-row loop).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from streamwrite.arrow.column import ColumnSpec
from streamwrite.arrow.schema import ROOT_NAME, arrow_to_parquet, encode_arrow_schema
from streamwrite.arrow.values import to_physical
from streamwrite.errors import UnsupportedError
from streamwrite.format.enums import ConvertedType, FieldRepetitionType
from streamwrite.format.structs import ListType, LogicalType, SchemaElement
from workers.values import BinaryValues

__all__ = ["LeafLevels", "NestedLeaf", "NestedSchema", "leaf_levels", "nested_to_parquet"]


@dataclass(frozen=True, slots=True)
class NestedLeaf:
    """One leaf column of a nested schema.

    Attributes:
        spec: The leaf's mapping (name = dotted path, ``max_definition_level`` of the leaf).
        field_index: The top-level Arrow field the leaf belongs to.
        child: For a struct leaf, the child's index; for a list leaf or a flat field, None.
        max_repetition_level: 1 for a list leaf, else 0.
    """

    spec: ColumnSpec
    field_index: int
    child: int | None
    max_repetition_level: int

    @property
    def path(self) -> tuple[str, ...]:
        """The leaf's ``path_in_schema``."""
        return tuple(self.spec.name.split("."))


@dataclass(frozen=True, slots=True)
class NestedSchema:
    """An Arrow schema of flat, struct-of-primitive and list-of-primitive fields, with its
    Parquet schema (a ``SchemaPort`` for :class:`~streamwrite.layout.file_writer.FileWriter`).

    Attributes:
        arrow_schema: The Arrow schema.
        elements: The footer's schema elements (root, groups and leaves, depth first).
        leaves: One entry per leaf column, in order.
    """

    arrow_schema: pa.Schema
    elements: list[SchemaElement]
    leaves: tuple[NestedLeaf, ...]

    @property
    def columns(self) -> tuple[ColumnSpec, ...]:
        """One ``ColumnSpec`` per leaf."""
        return tuple(leaf.spec for leaf in self.leaves)

    @property
    def arrow_schema_value(self) -> str:
        """The footer's ``ARROW:schema`` value."""
        return encode_arrow_schema(self.arrow_schema)


def _primitive(index: int, field: pa.Field, path: str, max_def: int) -> ColumnSpec:
    spec = arrow_to_parquet(pa.schema([field])).columns[0]
    return replace(spec, index=index, name=path, max_definition_level=max_def)


def _group(name: str, nullable: bool, num_children: int, **extra: Any) -> SchemaElement:
    repetition = FieldRepetitionType.OPTIONAL if nullable else FieldRepetitionType.REQUIRED
    return SchemaElement(name=name, repetition_type=repetition, num_children=num_children, **extra)


def nested_to_parquet(schema: pa.Schema) -> NestedSchema:
    """Map ``schema`` (flat, struct-of-primitive or list-of-primitive fields) to Parquet.

    Returns:
        The schema with its elements and leaves.

    Raises:
        UnsupportedError: A field of another nested shape (deeper nesting, maps, unions...).
    """
    elements: list[SchemaElement] = []
    leaves: list[NestedLeaf] = []
    for i, field in enumerate(schema):
        own = int(field.nullable)
        if pa.types.is_struct(field.type):
            children = [field.type.field(j) for j in range(field.type.num_fields)]
            elements.append(_group(field.name, field.nullable, len(children)))
            for j, child in enumerate(children):
                _check_primitive(child, field.name)
                spec = _primitive(
                    len(leaves), child, f"{field.name}.{child.name}", own + int(child.nullable)
                )
                elements.append(spec.element)
                leaves.append(NestedLeaf(spec, i, j, 0))
        elif pa.types.is_list(field.type) or pa.types.is_large_list(field.type):
            item = field.type.value_field.with_name("element")
            _check_primitive(item, field.name)
            elements.append(
                _group(
                    field.name,
                    field.nullable,
                    1,
                    converted_type=ConvertedType.LIST,
                    logicalType=LogicalType(LIST=ListType()),
                )
            )
            elements.append(
                SchemaElement(
                    name="list", repetition_type=FieldRepetitionType.REPEATED, num_children=1
                )
            )
            spec = _primitive(
                len(leaves), item, f"{field.name}.list.element", own + 1 + int(item.nullable)
            )
            elements.append(spec.element)
            leaves.append(NestedLeaf(spec, i, None, 1))
        else:
            _check_primitive(field, "the schema")
            spec = _primitive(len(leaves), field, field.name, own)
            elements.append(spec.element)
            leaves.append(NestedLeaf(spec, i, None, 0))
    root = SchemaElement(
        name=ROOT_NAME, repetition_type=FieldRepetitionType.REQUIRED, num_children=len(schema)
    )
    return NestedSchema(schema, [root, *elements], tuple(leaves))


def _check_primitive(field: pa.Field, where: str) -> None:
    dtype = field.type
    if pa.types.is_nested(dtype):
        raise UnsupportedError(
            f"Field {field.name!r} in {where} has type {dtype}: only flat fields, structs of "
            "primitives and lists of primitives are written."
        )


@dataclass(frozen=True, slots=True)
class LeafLevels:
    """One leaf column's data for one row group.

    Attributes:
        values: Non-null leaf values in physical form (:mod:`workers.values`).
        def_levels: uint8 definition level per level entry (None for a REQUIRED flat leaf).
        rep_levels: uint8 repetition level per entry (None unless the leaf is repeated).
        num_rows: Rows (records).
    """

    values: npt.NDArray[Any] | BinaryValues
    def_levels: npt.NDArray[np.uint8] | None
    rep_levels: npt.NDArray[np.uint8] | None
    num_rows: int


def _valid(array: pa.Array) -> npt.NDArray[np.bool_]:
    if array.null_count == 0:
        return np.ones(len(array), dtype=bool)
    return np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def leaf_levels(table: pa.Table | pa.RecordBatch, leaf: NestedLeaf) -> LeafLevels:
    """Levels and physical values of ``leaf`` in ``table`` (a table of the schema's type).

    Returns:
        The leaf's values, definition and repetition levels.

    Raises:
        SchemaError: A value does not fit the leaf's physical type.
    """
    column = table.column(leaf.field_index)
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    num_rows = len(column)
    spec = leaf.spec
    if leaf.max_repetition_level == 0 and leaf.child is None:
        physical = to_physical(column, spec)
        return LeafLevels(physical.values, physical.def_levels, None, num_rows)
    if leaf.child is not None:
        parent = _valid(column)
        child = column.field(leaf.child)  # sliced to the struct's offset and length
        child_valid = _valid(child) & parent
        levels = np.where(child_valid, spec.max_definition_level, 0).astype(np.uint8)
        if spec.max_definition_level == 2:  # both the struct and the child optional
            levels[parent & ~child_valid] = 1
        leaf_values = child.filter(pa.array(child_valid))
        physical = to_physical(leaf_values, replace(spec, field=spec.field.with_nullable(True)))
        return LeafLevels(physical.values, levels, None, num_rows)
    # list<element>: one level entry per element, one for each null or empty list.
    offsets = np.asarray(column.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    list_valid = _valid(column)
    counts = np.where(list_valid, np.diff(offsets), 0)
    entries = np.maximum(counts, 1)
    total = int(entries.sum())
    starts = np.zeros(num_rows + 1, dtype=np.int64)
    np.cumsum(entries, out=starts[1:])
    rep = np.ones(total, dtype=np.uint8)
    rep[starts[:-1]] = 0
    defs = np.empty(total, dtype=np.uint8)
    row_of_entry = np.repeat(np.arange(num_rows), entries)
    has_items = counts[row_of_entry] > 0
    items = column.flatten()  # the elements of valid lists only, in row order
    item_valid = _valid(items)
    max_def = spec.max_definition_level
    empty_def = max_def - 1 - int(spec.field.nullable)  # a present but empty list
    defs[~has_items] = np.where(list_valid[row_of_entry[~has_items]], empty_def, 0)
    defs[has_items] = np.where(item_valid, max_def, max_def - 1)
    physical = to_physical(
        items.filter(pa.array(item_valid)), replace(spec, field=spec.field.with_nullable(True))
    )
    return LeafLevels(physical.values, defs, rep, num_rows)
