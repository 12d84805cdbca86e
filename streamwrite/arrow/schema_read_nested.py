"""Parquet schema elements -> the Arrow field tree (:class:`FieldNode`) of any nested schema.

The groups are read as Arrow C++ reads them (``cpp/src/parquet/arrow/schema.cc``,
``NodeToSchemaField``), with the backward-compatibility rules of parquet-format
``LogicalTypes.md`` for lists::

    <rep> group g (LIST) { repeated group list { <rep> T element; } }   list<element: T>
    <rep> group g (LIST) { repeated T x; }                                list<x: T not null>
    <rep> group g (LIST) { repeated group array|g_tuple { T a; } }        list<struct<a> not null>
    <rep> group g (LIST) { repeated group r { T a; U b; } }               list<struct<a, b>
                                                                            not null>
    <rep> group g (MAP | MAP_KEY_VALUE) {                                 map<K, V>
              repeated group key_value { required K key; <rep> V value; } }
    <rep> group g (MAP) { repeated group key_value { required K key; } }  list<key_value: K
                                                                            not null>
    <rep> group g { children }                                            struct<children>
    repeated group g { children } (no annotation)                         list<g: struct
                                                                            not null> not null
    repeated T x (no annotation)                                          list<x: T not null>
                                                                            not null

``<rep>`` (REQUIRED / OPTIONAL) gives the field's nullability. Each node's levels follow
:mod:`streamwrite.arrow.column`: a repeated element node sits one definition level below its
list (the repeated group's own level). A leaf is named by its dotted path.

Restoring the ``ARROW:schema`` types (:func:`restore_node`): a struct keeps the stored child
types when its children have the same names; a list becomes the stored ``list`` /
``large_list`` / ``fixed_size_list`` with the stored item field name; a map takes the stored
entry, key and item names and ``keys_sorted``; an extension type over a nested storage type is
put back when its storage was restored; leaves go through ``leaf_restore``. Anything else that
does not match keeps the inferred type (as pyarrow does).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa

from streamwrite.arrow.column import ColumnSpec, FieldNode, NodeKind
from streamwrite.arrow.schema_read import FIELD_ID_KEY, _logical
from streamwrite.errors import FormatError
from streamwrite.format.enums import FieldRepetitionType
from streamwrite.format.structs import SchemaElement

__all__ = ["ElementTree", "NestedReader", "element_trees"]


@dataclass(frozen=True, slots=True)
class ElementTree:
    """One schema element with its children (the footer's depth-first list made a tree)."""

    element: SchemaElement
    children: tuple[ElementTree, ...]
    index: int
    """Position of the element in the footer's list."""

    @property
    def is_group(self) -> bool:
        """Whether the element is a group (has children or no physical type)."""
        return bool(self.children) or self.element.type is None

    @property
    def name(self) -> str:
        return self.element.name or ""

    @property
    def repetition(self) -> int | None:
        return self.element.repetition_type

    @property
    def repeated(self) -> bool:
        return self.element.repetition_type == FieldRepetitionType.REPEATED


def element_trees(elements: list[SchemaElement]) -> tuple[ElementTree, ...]:
    """The root's children as trees.

    Raises:
        FormatError: If the counts of children do not match the elements.
    """
    position = 1

    def take(count: int, where: str) -> tuple[ElementTree, ...]:
        nonlocal position
        out = []
        for _ in range(count):
            if position >= len(elements):
                raise FormatError(
                    f"The schema group {where!r} claims more children than the schema has elements."
                )
            index = position
            element = elements[index]
            position += 1
            num_children = element.num_children or 0
            if num_children < 0:
                raise FormatError(
                    f"Schema element {index} ({element.name!r}) has {num_children} children."
                )
            children = take(num_children, element.name or "")
            out.append(ElementTree(element, children, index))
        return tuple(out)

    root = elements[0]
    trees = take(max(root.num_children or 0, 0), root.name or "schema")
    if position != len(elements):
        raise FormatError(
            f"The schema root says it has {root.num_children} children but "
            f"{len(elements) - 1} elements follow it in a tree of {position - 1}."
        )
    return trees


def _annotation(tree: ElementTree) -> str | None:
    logical = _logical(tree.element)
    return None if logical is None else logical[0]


def _field_metadata(tree: ElementTree) -> dict[bytes, bytes] | None:
    field_id = tree.element.field_id
    return None if field_id is None else {FIELD_ID_KEY: str(field_id).encode()}


LeafMaker = Callable[
    [int, SchemaElement, tuple[str, ...] | None, int, int, pa.Field | None], ColumnSpec
]
"""Makes a leaf's ColumnSpec: (leaf index, element, path (None for a flat top-level column),
max_def, max_rep, stored field). The leaf's Arrow field is named after the stored field (else
the element) and nullable only when the element is OPTIONAL."""


@dataclass
class NestedReader:
    """Builds the field nodes and leaf columns of one schema, field by field.

    Args:
        leaf_spec: Makes the ``ColumnSpec`` of a leaf (its Arrow type inferred, restored from
            the stored field when that maps to the same Parquet leaf).
    """

    leaf_spec: LeafMaker
    columns: list[ColumnSpec] = field(default_factory=list)

    def add(self, tree: ElementTree, origin: pa.Field | None) -> FieldNode:
        """Add one top-level field; returns its node."""
        return self._node(tree, (), 0, 0, origin, top=True)

    # -- one element ----------------------------------------------------------------------

    def _node(
        self,
        tree: ElementTree,
        prefix: tuple[str, ...],
        parent_def: int,
        parent_rep: int,
        origin: pa.Field | None,
        *,
        top: bool = False,
    ) -> FieldNode:
        path = (*prefix, tree.name)
        if tree.repeated:
            # A repeated field outside a LIST / MAP: a required list of required elements.
            return self._list(tree, tree, path, parent_def, parent_rep, origin, nullable=False)
        if tree.is_group and tree.repetition not in (
            FieldRepetitionType.REQUIRED,
            FieldRepetitionType.OPTIONAL,
        ):
            raise FormatError(
                f"Schema element {tree.index} ({'.'.join(path)!r}) has repetition "
                f"{tree.repetition}."
            )
        nullable = tree.repetition == FieldRepetitionType.OPTIONAL
        if not tree.is_group:
            return self._leaf(tree, path, parent_def + int(nullable), parent_rep, origin, top)
        annotation = _annotation(tree)
        if annotation in ("MAP", "MAP_KEY_VALUE"):
            return self._map(tree, path, parent_def, parent_rep, origin, nullable)
        if annotation == "LIST":
            return self._annotated_list(tree, path, parent_def, parent_rep, origin, nullable)
        return self._struct(tree, path, parent_def + int(nullable), parent_rep, origin, nullable)

    def _leaf(
        self,
        tree: ElementTree,
        path: tuple[str, ...],
        def_level: int,
        rep_level: int,
        origin: pa.Field | None,
        top: bool,
    ) -> FieldNode:
        index = len(self.columns)
        spec = self.leaf_spec(
            index, tree.element, None if top else path, def_level, rep_level, origin
        )
        self.columns.append(spec)
        return FieldNode(
            field=spec.field,
            kind=NodeKind.LEAF,
            def_level=def_level,
            rep_level=rep_level,
            children=(),
            leaf=index,
            leaf_start=index,
            leaf_stop=index + 1,
            path=path,
        )

    def _annotated(
        self,
        tree: ElementTree,
        path: tuple[str, ...],
        parent_def: int,
        parent_rep: int,
        origin: pa.Field | None,
    ) -> FieldNode:
        if _annotation(tree) == "LIST":
            return self._annotated_list(tree, path, parent_def, parent_rep, origin, False)
        return self._map(tree, path, parent_def, parent_rep, origin, False)

    def _struct(
        self,
        tree: ElementTree,
        path: tuple[str, ...],
        def_level: int,
        rep_level: int,
        origin: pa.Field | None,
        nullable: bool,
        name: str | None = None,
    ) -> FieldNode:
        if not tree.children:
            raise FormatError(f"The group {'.'.join(path)!r} has no children.")
        stored = _storage(origin)
        origins: list[pa.Field | None] = [None] * len(tree.children)
        if (
            stored is not None
            and pa.types.is_struct(stored)
            and [stored.field(i).name for i in range(stored.num_fields)]
            == [c.name for c in tree.children]
        ):
            origins = [stored.field(i) for i in range(stored.num_fields)]
        leaf_start = len(self.columns)
        children = tuple(
            self._node(child, path, def_level, rep_level, child_origin)
            for child, child_origin in zip(tree.children, origins, strict=True)
        )
        dtype = pa.struct([c.field for c in children])
        arrow_field = self._field(name or tree.name, dtype, nullable, tree, origin)
        return FieldNode(
            arrow_field, NodeKind.STRUCT, def_level, rep_level, children, None,
            leaf_start, len(self.columns), path,
        )  # fmt: skip

    def _annotated_list(
        self,
        tree: ElementTree,
        path: tuple[str, ...],
        parent_def: int,
        parent_rep: int,
        origin: pa.Field | None,
        nullable: bool,
    ) -> FieldNode:
        where = f"The LIST group {'.'.join(path)!r}"
        if len(tree.children) != 1:
            raise FormatError(f"{where} has {len(tree.children)} children; it needs one.")
        repeated = tree.children[0]
        if not repeated.repeated:
            raise FormatError(f"{where} holds a {repeated.name!r} that is not repeated.")
        return self._list(tree, repeated, path, parent_def, parent_rep, origin, nullable=nullable)

    def _list(
        self,
        tree: ElementTree,
        repeated: ElementTree,
        path: tuple[str, ...],
        parent_def: int,
        parent_rep: int,
        origin: pa.Field | None,
        *,
        nullable: bool,
    ) -> FieldNode:
        """A list node over the repeated element ``repeated`` (``tree`` itself when a repeated
        field stands for its own list)."""
        def_level = parent_def + int(nullable)
        rep_level = parent_rep + 1
        element_def = def_level + 1
        inner = path if repeated is tree else (*path, repeated.name)
        stored = _storage(origin)
        item_origin = None
        if stored is not None and (
            pa.types.is_list(stored)
            or pa.types.is_large_list(stored)
            or pa.types.is_fixed_size_list(stored)
        ):
            item_origin = stored.value_field
        leaf_start = len(self.columns)
        if not repeated.is_group:
            element = self._leaf(repeated, inner, element_def, rep_level, item_origin, False)
        elif repeated is not tree and _annotation(repeated) in ("LIST", "MAP", "MAP_KEY_VALUE"):
            # a repeated LIST / MAP group (parquet-avro's old lists of lists): the element is
            # that group read as a required list or map
            element = self._annotated(repeated, inner, element_def, rep_level, item_origin)
        elif (
            repeated is not tree
            and len(repeated.children) == 1
            and not _struct_list_name(repeated, tree)
        ):
            child = repeated.children[0]
            element = self._node(child, inner, element_def, rep_level, item_origin)
        else:
            element = self._struct(
                repeated, inner, element_def, rep_level, item_origin, False, repeated.name
            )
        item = element.field
        if item_origin is not None and item_origin.name != item.name:
            item = item.with_name(item_origin.name)
            element = _with_field(element, item)
        if stored is not None and pa.types.is_large_list(stored):
            dtype: pa.DataType = pa.large_list(item)
        elif stored is not None and pa.types.is_fixed_size_list(stored):
            dtype = pa.list_(item, stored.list_size)
        else:
            dtype = pa.list_(item)
        arrow_field = self._field(tree.name, dtype, nullable, tree, origin)
        return FieldNode(
            arrow_field, NodeKind.LIST, def_level, rep_level, (element,), None,
            leaf_start, len(self.columns), path,
        )  # fmt: skip

    def _map(
        self,
        tree: ElementTree,
        path: tuple[str, ...],
        parent_def: int,
        parent_rep: int,
        origin: pa.Field | None,
        nullable: bool,
    ) -> FieldNode:
        where = f"The MAP group {'.'.join(path)!r}"
        if len(tree.children) != 1:
            raise FormatError(f"{where} has {len(tree.children)} children; it needs one.")
        key_value = tree.children[0]
        if not key_value.repeated or not key_value.is_group:
            raise FormatError(f"{where} holds {key_value.name!r}, not a repeated group.")
        if len(key_value.children) not in (1, 2):
            raise FormatError(
                f"{where} has {len(key_value.children)} fields in {key_value.name!r}; a map "
                "needs a key and a value."
            )
        key = key_value.children[0]
        if key.repetition != FieldRepetitionType.REQUIRED:
            raise FormatError(f"{where} has keys that are not required.")
        if len(key_value.children) == 1:  # a set of keys: read as a list, as Arrow C++ does
            return self._list(tree, key_value, path, parent_def, parent_rep, origin,
                              nullable=nullable)  # fmt: skip
        def_level = parent_def + int(nullable)
        rep_level = parent_rep + 1
        inner = (*path, key_value.name)
        stored = _storage(origin)
        key_origin = item_origin = None
        if stored is not None and pa.types.is_map(stored):
            key_origin, item_origin = stored.key_field, stored.item_field
        leaf_start = len(self.columns)
        key_node = self._node(key, inner, def_level + 1, rep_level, key_origin)
        value_node = self._node(key_value.children[1], inner, def_level + 1, rep_level,
                                item_origin)  # fmt: skip
        key_field, item_field = key_node.field, value_node.field
        if key_origin is not None and item_origin is not None:
            key_field = key_field.with_name(key_origin.name)
            item_field = item_field.with_name(item_origin.name)
            assert isinstance(stored, pa.MapType)
            dtype = pa.map_(key_field, item_field, keys_sorted=stored.keys_sorted)
        else:
            dtype = pa.map_(key_field, item_field)
        key_node = _with_field(key_node, key_field)
        value_node = _with_field(value_node, item_field)
        arrow_field = self._field(tree.name, dtype, nullable, tree, origin)
        return FieldNode(
            arrow_field, NodeKind.MAP, def_level, rep_level, (key_node, value_node), None,
            leaf_start, len(self.columns), path,
        )  # fmt: skip

    @staticmethod
    def _field(
        name: str, dtype: pa.DataType, nullable: bool, tree: ElementTree, origin: pa.Field | None
    ) -> pa.Field:
        metadata = dict(origin.metadata or {}) if origin is not None else {}
        metadata.update(_field_metadata(tree) or {})
        if (
            origin is not None
            and isinstance(origin.type, pa.BaseExtensionType)
            and origin.type.storage_type.equals(dtype)
        ):
            dtype = origin.type
        return pa.field(name, dtype, nullable=nullable, metadata=metadata or None)


def _storage(origin: pa.Field | None) -> pa.DataType | None:
    if origin is None:
        return None
    dtype = origin.type
    if isinstance(dtype, pa.BaseExtensionType):
        dtype = dtype.storage_type
    return dtype


def _struct_list_name(repeated: ElementTree, list_group: ElementTree) -> bool:
    """The legacy names that make a one-field repeated group the list element itself."""
    return repeated.name == "array" or repeated.name == f"{list_group.name}_tuple"


def _with_field(node: FieldNode, arrow_field: pa.Field) -> FieldNode:
    return FieldNode(
        arrow_field, node.kind, node.def_level, node.rep_level, node.children, node.leaf,
        node.leaf_start, node.leaf_stop, node.path,
    )  # fmt: skip
