"""Which fields a read returns: ``columns=`` names -> top-level field nodes, pruned.

As ``pyarrow.parquet.read_table(columns=)``: a name is a top-level field, a dotted path
through struct fields (``"s.a"``, ``"s.inner.d"``), or the dotted Parquet path of any node
(a leaf column name such as ``ls.list.element.a``); it returns the top-level field with only
the parts on the path (structs pruned to those children, lists to a pruned element; a map is
kept whole). Paths into one field are merged (``["s.a", "s.b"]`` -> ``s`` with ``a`` and
``b``, in schema order); a whole field wins over its paths. Fields come in the order of their
first mention, so the planner's leaf names select the same fields back.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from streamwrite.arrow.column import FieldNode, NodeKind
from streamwrite.errors import SchemaError

__all__ = ["project", "select_fields"]


def _resolve(fields: Sequence[FieldNode], name: str) -> tuple[str, ...] | None:
    """The Parquet path of the node ``name`` denotes, or None: a top-level field, a dotted
    path of Arrow names through structs, or any node's dotted Parquet path
    (``l.list.element``, a leaf column name)."""
    by_name = {node.field.name: node for node in fields}
    if name in by_name:
        return by_name[name].path
    for node in fields:
        for sub in node.walk():
            if sub.name == name:
                return sub.path
    parts = name.split(".")
    # the longest top-level name that prefixes the path (field names may hold dots)
    for cut in range(len(parts) - 1, 0, -1):
        found = by_name.get(".".join(parts[:cut]))
        if found is None:
            continue
        rest = parts[cut:]
        while rest:
            if found.kind is not NodeKind.STRUCT:
                return None
            children = {child.field.name: child for child in found.children}
            for take in range(len(rest), 0, -1):
                key = ".".join(rest[:take])
                if key in children:
                    found = children[key]
                    rest = rest[take:]
                    break
            else:
                return None
        return found.path
    return None


def _under(path: tuple[str, ...], target: tuple[str, ...]) -> bool:
    return target[: len(path)] == path


def _prune(node: FieldNode, targets: list[tuple[str, ...]]) -> FieldNode:
    """``node`` with only the parts leading to ``targets`` (Parquet paths under it)."""
    if node.path in targets or node.kind in (NodeKind.LEAF, NodeKind.MAP):
        return node  # a map keeps its keys and values whole
    children = tuple(
        _prune(child, [t for t in targets if _under(child.path, t)])
        for child in node.children
        if any(_under(child.path, t) for t in targets)
    )
    storage = node.field.type
    if isinstance(storage, pa.BaseExtensionType):
        storage = storage.storage_type
    if node.kind is NodeKind.STRUCT:
        dtype: pa.DataType = pa.struct([child.field for child in children])
    elif pa.types.is_large_list(storage):
        dtype = pa.large_list(children[0].field)
    elif pa.types.is_fixed_size_list(storage):
        dtype = pa.list_(children[0].field, storage.list_size)
    else:
        dtype = pa.list_(children[0].field)
    return FieldNode(
        field=node.field.with_type(dtype),
        kind=node.kind,
        def_level=node.def_level,
        rep_level=node.rep_level,
        children=children,
        leaf=None,
        leaf_start=children[0].leaf_start,
        leaf_stop=children[-1].leaf_stop,
        path=node.path,
    )


def select_fields(fields: Sequence[FieldNode], columns: Sequence[str]) -> list[FieldNode]:
    """The top-level nodes ``columns`` selects (module docstring).

    Returns:
        One node per selected top-level field, pruned to the parts named.

    Raises:
        SchemaError: A name is neither a field, a path through structs nor a Parquet path.
    """
    if isinstance(columns, str):
        raise SchemaError(f"columns must be a sequence of names, not the string {columns!r}.")
    targets: dict[str, list[tuple[str, ...]]] = {}
    missing = []
    for name in columns:
        path = _resolve(fields, name)
        if path is None:
            missing.append(name)
            continue
        targets.setdefault(path[0], []).append(path)
    if missing:
        names = [node.field.name for node in fields]
        raise SchemaError(f"Columns {missing} are not in the file; it has {names}.")
    by_path = {node.path[0]: node for node in fields}
    return [_prune(by_path[top], paths) for top, paths in targets.items()]


def project(array: pa.Array | pa.ChunkedArray, dtype: pa.DataType) -> pa.Array:
    """``array`` (a struct read with more children) cut to the struct type ``dtype``."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks else pa.array([], array.type)
    if array.type.equals(dtype) and str(array.type) == str(dtype):
        return array
    if not pa.types.is_struct(dtype):
        return array
    children = [project(array.field(f.name), f.type) for f in dtype]
    mask = array.is_null() if array.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(dtype), mask=mask)
