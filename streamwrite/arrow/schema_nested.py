"""Arrow schema -> Parquet schema for any nesting of struct, list and map, as pyarrow writes it.

The leaf half (one primitive ``SchemaElement`` per Arrow primitive) is
:func:`streamwrite.arrow.schema.leaf_element`; this module builds the groups around the leaves
(parquet-format ``LogicalTypes.md``, "Nested Types"), depth first, as Arrow C++ does
(``cpp/src/parquet/arrow/schema.cc``, compliant nested types)::

    struct s                <rep> group s { <children> }
    list / large_list /     <rep> group l (LIST) {                 converted_type LIST,
      fixed_size_list l       repeated group list {                logicalType LIST
                                <rep> <element> element; } }
    map m                   <rep> group m (MAP) {                  converted_type MAP,
                              repeated group key_value {           logicalType MAP
                                required <key> key;
                                <rep> <value> value; } }
    <rep>: optional when the Arrow field is nullable, else required

Each Arrow field becomes a :class:`~streamwrite.arrow.column.FieldNode` (levels in that
module's docstring); each primitive under it a :class:`~streamwrite.arrow.column.ColumnSpec`
named by its dotted path (``l.list.element``). ``PARQUET:field_id`` field metadata becomes the
``field_id`` of groups and leaves alike. A struct without fields, a union, a run-end encoded
or list-view array, and a dictionary of a nested type have no Parquet form (UnsupportedError).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa

from streamwrite.arrow.column import ColumnSpec, FieldNode, NodeKind
from streamwrite.arrow.schema_read import field_id
from streamwrite.errors import UnsupportedError
from streamwrite.format.enums import ConvertedType, FieldRepetitionType
from streamwrite.format.structs import ListType, LogicalType, MapType, SchemaElement

__all__ = ["NestedBuilder", "is_nested_type"]

LIST_GROUP = "list"
LIST_ELEMENT = "element"
MAP_GROUP = "key_value"
MAP_KEY = "key"
MAP_VALUE = "value"


def is_nested_type(dtype: pa.DataType) -> bool:
    """Whether ``dtype`` is a struct, list (any kind) or map: a type with a group in Parquet."""
    if isinstance(dtype, pa.BaseExtensionType):
        dtype = dtype.storage_type
    return bool(
        pa.types.is_struct(dtype)
        or pa.types.is_list(dtype)
        or pa.types.is_large_list(dtype)
        or pa.types.is_fixed_size_list(dtype)
        or pa.types.is_map(dtype)
    )


def _repetition(nullable: bool) -> FieldRepetitionType:
    return FieldRepetitionType.OPTIONAL if nullable else FieldRepetitionType.REQUIRED


@dataclass
class NestedBuilder:
    """Builds the schema elements, leaf columns and field nodes of one schema, field by field.

    Args:
        leaf_spec: Makes the ``ColumnSpec`` of a flat column of a primitive field, given its
            leaf index (:func:`streamwrite.arrow.schema_leaf.column_spec`).
    """

    leaf_spec: Callable[[int, pa.Field], ColumnSpec]
    elements: list[SchemaElement] = field(default_factory=list)
    columns: list[ColumnSpec] = field(default_factory=list)

    def add(self, arrow_field: pa.Field) -> FieldNode:
        """Add one top-level field; returns its node."""
        return self._node(arrow_field, arrow_field.name, (), 0, 0)

    def _node(
        self,
        arrow_field: pa.Field,
        parquet_name: str,
        prefix: tuple[str, ...],
        parent_def: int,
        parent_rep: int,
    ) -> FieldNode:
        dtype = arrow_field.type
        if isinstance(dtype, pa.BaseExtensionType) and is_nested_type(dtype.storage_type):
            dtype = dtype.storage_type
        path = (*prefix, parquet_name)
        def_level = parent_def + int(arrow_field.nullable)
        where = ".".join(path)
        if pa.types.is_dictionary(dtype) and is_nested_type(dtype.value_type):
            raise UnsupportedError(
                f"Column {where!r} is a dictionary of the nested type {dtype.value_type}; "
                "Parquet has no dictionary of groups."
            )
        if not is_nested_type(dtype):
            if (
                pa.types.is_union(dtype)
                or pa.types.is_run_end_encoded(dtype)
                or pa.types.is_list_view(dtype)
                or pa.types.is_large_list_view(dtype)
            ):
                hint = (
                    ""
                    if pa.types.is_union(dtype)
                    else (" (cast list views to lists, run-end encoded arrays to their values)")
                )
                raise UnsupportedError(
                    f"Column {where!r} has the type {dtype}, which has no Parquet mapping{hint}."
                )
            return self._leaf(arrow_field, parquet_name, path, def_level, parent_rep)
        group = len(self.elements)
        self.elements.append(
            SchemaElement(
                name=parquet_name,
                repetition_type=_repetition(arrow_field.nullable),
                field_id=field_id(arrow_field),
            )
        )
        leaf_start = len(self.columns)
        if pa.types.is_struct(dtype):
            if dtype.num_fields == 0:
                raise UnsupportedError(
                    f"Column {where!r} is a struct without fields; a Parquet group needs at "
                    "least one child."
                )
            kind, rep_level = NodeKind.STRUCT, parent_rep
            children = tuple(
                self._node(dtype.field(i), dtype.field(i).name, path, def_level, parent_rep)
                for i in range(dtype.num_fields)
            )
            self.elements[group].num_children = dtype.num_fields
        else:
            is_map = pa.types.is_map(dtype)
            kind, rep_level = (NodeKind.MAP if is_map else NodeKind.LIST), parent_rep + 1
            head = self.elements[group]
            head.num_children = 1
            if is_map:
                head.converted_type = ConvertedType.MAP
                head.logicalType = LogicalType(MAP=MapType())
            else:
                head.converted_type = ConvertedType.LIST
                head.logicalType = LogicalType(LIST=ListType())
            inner = (*path, MAP_GROUP if is_map else LIST_GROUP)
            self.elements.append(
                SchemaElement(
                    name=inner[-1],
                    repetition_type=FieldRepetitionType.REPEATED,
                    num_children=2 if is_map else 1,
                )
            )
            if is_map:
                children = (
                    self._node(dtype.key_field, MAP_KEY, inner, def_level + 1, rep_level),
                    self._node(dtype.item_field, MAP_VALUE, inner, def_level + 1, rep_level),
                )
            else:
                children = (
                    self._node(dtype.value_field, LIST_ELEMENT, inner, def_level + 1, rep_level),
                )
        return FieldNode(
            field=arrow_field,
            kind=kind,
            def_level=def_level,
            rep_level=rep_level,
            children=children,
            leaf=None,
            leaf_start=leaf_start,
            leaf_stop=len(self.columns),
            path=path,
        )

    def _leaf(
        self,
        arrow_field: pa.Field,
        parquet_name: str,
        path: tuple[str, ...],
        def_level: int,
        rep_level: int,
    ) -> FieldNode:
        index = len(self.columns)
        spec = self.leaf_spec(index, arrow_field.with_name(parquet_name))
        if len(path) > 1:
            spec = ColumnSpec(
                index=spec.index,
                name=".".join(path),
                field=arrow_field,
                physical_type=spec.physical_type,
                type_length=spec.type_length,
                repetition=spec.repetition,
                max_definition_level=def_level,
                sort_order=spec.sort_order,
                element=spec.element,
                max_repetition_level=rep_level,
                path=path,
            )
        self.columns.append(spec)
        self.elements.append(spec.element)
        return FieldNode(
            field=arrow_field,
            kind=NodeKind.LEAF,
            def_level=def_level,
            rep_level=rep_level,
            children=(),
            leaf=index,
            leaf_start=index,
            leaf_stop=index + 1,
            path=path,
        )
