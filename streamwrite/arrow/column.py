"""One leaf column's mapping (:class:`ColumnSpec`) and the tree of Arrow fields over the leaves
(:class:`FieldNode`).

Its own module so that the value conversions (:mod:`streamwrite.arrow.values`), the level
computations (:mod:`streamwrite.arrow.shred`, :mod:`streamwrite.arrow.assemble`) and the schema
mapping (:mod:`streamwrite.arrow.schema`) all use it without importing each other.

Levels (parquet-format "Nested Encoding", the Dremel paper). Each node of the tree has::

    def_level   definition level of a level entry in which this node is present (non-null):
                the parent's level, plus 1 if the node is nullable (OPTIONAL)
    rep_level   LIST / MAP: the enclosing repetition level + 1 (the level its repeated
                elements are written with); any other node: the enclosing repetition level

A LIST or MAP adds its repeated group as one more definition level: an entry with
``def >= def_level + 1`` holds at least one element, and the element (LIST) or the key and value
(MAP) are children at parent level ``def_level + 1``. A leaf's ``max_definition_level`` is its
``def_level`` and its ``max_repetition_level`` its ``rep_level``. For example::

    optional group l (LIST) {           l        def_level 1, rep_level 1
      repeated group list {             (list)   def 2 = at least one element
        optional int64 element; } }     element  def_level 3, rep_level 1 (the leaf)

    entries of [[1, None], [], None]:   rep 0 1 | 0 | 0,   def 3 2 | 1 | 0
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import pyarrow as pa

from streamwrite.format.enums import FieldRepetitionType, Type
from streamwrite.format.structs import SchemaElement
from workers.stats import SortOrder

__all__ = ["ColumnSpec", "FieldNode", "NodeKind"]


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """How one leaf column maps between Arrow and Parquet.

    Attributes:
        index: Leaf column ordinal.
        name: Column name: the field name of a flat column, the dotted ``path_in_schema`` of a
            leaf of a nested field (``s.a``, ``l.list.element``, ``m.key_value.key``).
        field: The leaf's Arrow field (as the user gave it when writing; dictionary types
            kept). For a nested leaf, the field at the leaf: a struct child, a list's value
            field, a map's key or item field.
        physical_type: Parquet physical type.
        type_length: Byte width for FIXED_LEN_BYTE_ARRAY, else ``None``.
        repetition: The leaf's own repetition: OPTIONAL if its field is nullable, else
            REQUIRED (REPEATED for a legacy repeated primitive read from another writer).
        max_definition_level: The leaf's definition level (1 or 0 for a flat column).
        sort_order: How statistics compare values of this column.
        element: The leaf ``SchemaElement`` of the footer.
        max_repetition_level: Repeated (LIST / MAP) ancestors of the leaf; 0 for a flat column.
        path: ``path_in_schema`` of a nested leaf; None for a flat column (``(name,)``).
    """

    index: int
    name: str
    field: pa.Field
    physical_type: Type
    type_length: int | None
    repetition: FieldRepetitionType
    max_definition_level: int
    sort_order: SortOrder
    element: SchemaElement
    max_repetition_level: int = 0
    path: tuple[str, ...] | None = None

    @property
    def path_in_schema(self) -> tuple[str, ...]:
        """The leaf's ``ColumnMetaData.path_in_schema``."""
        return (self.name,) if self.path is None else self.path

    @property
    def is_nested(self) -> bool:
        """Whether the leaf belongs to a nested field (a struct, list or map)."""
        return self.path is not None


class NodeKind(Enum):
    """What a :class:`FieldNode` is."""

    LEAF = "leaf"
    STRUCT = "struct"
    LIST = "list"
    """list, large_list and fixed_size_list: a Parquet LIST (three-level) group."""
    MAP = "map"


@dataclass(frozen=True, slots=True)
class FieldNode:
    """One Arrow field of a schema, as a tree over the Parquet leaf columns (module docstring).

    Attributes:
        field: The Arrow field here: a top-level field, a struct child, a list's value field,
            a map's key or item field.
        kind: Leaf, struct, list or map.
        def_level: Definition level of an entry in which this node is present (non-null).
        rep_level: LIST / MAP: the repetition level of its elements; else the enclosing one.
        children: STRUCT: one per child; LIST: ``(element,)``; MAP: ``(key, value)``; LEAF: ().
        leaf: LEAF: the index of its column in ``ParquetSchema.columns``; else None.
        leaf_start: The first leaf column under this node.
        leaf_stop: One past the last leaf column under this node.
        path: The Parquet path of this node (``("l",)``, ``("l", "list", "element")``).
    """

    field: pa.Field
    kind: NodeKind
    def_level: int
    rep_level: int
    children: tuple[FieldNode, ...]
    leaf: int | None
    leaf_start: int
    leaf_stop: int
    path: tuple[str, ...]

    @property
    def name(self) -> str:
        """The dotted Parquet path of this node."""
        return ".".join(self.path)

    @property
    def nullable(self) -> bool:
        """Whether the node is OPTIONAL."""
        return bool(self.field.nullable)

    @property
    def leaves(self) -> range:
        """The indices of the leaf columns under this node."""
        return range(self.leaf_start, self.leaf_stop)

    def walk(self) -> list[FieldNode]:
        """This node and every node under it, depth first (the order of the schema elements)."""
        nodes = [self]
        for child in self.children:
            nodes.extend(child.walk())
        return nodes
