"""Value comparison of nested columns for interop tests: structure first, then the leaves.

Readers choose their own nested types (DuckDB and Spark read a ``fixed_size_list`` back as a
list; polars gives ``large_list``, string views and ``list<struct<key, value>>`` for a map;
Spark names list elements ``element``), so two columns are the same when, level by level:

* list-like (list, large_list, fixed_size_list, map): the same null slots, the same number of
  elements per slot (a null slot counts 0, whatever offset range it hides), and the same
  elements, compared one level down (a map's elements are its ``(key, value)`` entries);
* struct: the same null slots, and each child field (matched by name) the same at the slots
  where the struct is valid (a null struct's children may hold anything);
* anything else: :func:`tests.interop.compare.same_values` (NaN-aware, lossless casts).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from tests.interop.compare import _plain, same_values


def _is_list_like(dtype: pa.DataType) -> bool:
    return (
        pa.types.is_list(dtype)
        or pa.types.is_large_list(dtype)
        or pa.types.is_fixed_size_list(dtype)
        or pa.types.is_map(dtype)
        or pa.types.is_list_view(dtype)
        or pa.types.is_large_list_view(dtype)
    )


def _slots(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Start index (into ``array.values``) and element count of every slot; null slots count 0."""
    valid = np.asarray(array.is_valid(), dtype=bool) if len(array) else np.zeros(0, bool)
    dtype = array.type
    if pa.types.is_fixed_size_list(dtype):
        size = dtype.list_size
        starts = (np.arange(len(array), dtype=np.int64) + array.offset) * size
        lengths = np.full(len(array), size, dtype=np.int64)
    elif pa.types.is_list_view(dtype) or pa.types.is_large_list_view(dtype):
        starts = np.asarray(array.offsets, dtype=np.int64)
        lengths = np.asarray(array.sizes, dtype=np.int64)
    else:
        offsets = np.asarray(array.offsets, dtype=np.int64)
        starts, lengths = offsets[:-1], np.diff(offsets)
    return starts, np.where(valid, lengths, 0)


def _elements(array: pa.Array) -> pa.Array:
    """The elements of the valid slots of a list-like array, in order (a map: its entries)."""
    starts, lengths = _slots(array)
    total = int(lengths.sum())
    first = np.cumsum(lengths) - lengths  # where each slot's elements start in the output
    indices = np.repeat(starts - first, lengths) + np.arange(total, dtype=np.int64)
    values = array.values
    if pa.types.is_map(array.type) and not isinstance(values, pa.StructArray):
        values = pa.StructArray.from_arrays([array.keys, array.items], names=["key", "value"])
    return values.take(pa.array(indices, pa.int64()))


def same_nested(
    expected: pa.Array | pa.ChunkedArray, actual: pa.Array | pa.ChunkedArray, where: str = ""
) -> str | None:
    """None when ``actual`` holds the same nested values as ``expected``, else a description
    naming the first level that differs (``where``: the path so far, ``[]`` for elements)."""
    e, a = _plain(expected), _plain(actual)
    label = where or "column"
    if len(e) != len(a):
        return f"{label}: length {len(a)} != {len(e)}"
    if _is_list_like(e.type) or pa.types.is_struct(e.type):
        if not (_is_list_like(a.type) or pa.types.is_struct(a.type)):
            return f"{label}: type {a.type} is not nested like {e.type}"
        if not e.is_valid().equals(a.is_valid()):
            return f"{label}: null positions differ"
    if _is_list_like(e.type):
        if not _is_list_like(a.type):
            return f"{label}: type {a.type} is not a list like {e.type}"
        if not np.array_equal(_slots(e)[1], _slots(a)[1]):
            return f"{label}: element counts differ"
        return same_nested(_elements(e), _elements(a), f"{where}[]")
    if pa.types.is_struct(e.type):
        if not pa.types.is_struct(a.type):
            return f"{label}: type {a.type} is not a struct like {e.type}"
        valid = e.is_valid()
        children_e, children_a = e.flatten(), a.flatten()  # fields with the offset applied
        for i in range(e.type.num_fields):
            name = e.type.field(i).name
            index = a.type.get_field_index(name)
            if index < 0:
                return f"{label}: field {name!r} is missing from {a.type}"
            child_e, child_a = children_e[i], children_a[index]
            diff = same_nested(child_e.filter(valid), child_a.filter(valid), f"{where}.{name}")
            if diff:
                return diff
        return None
    diff = same_values(e, a)
    return f"{label}: {diff}" if diff else None


def same_nested_tables(expected: pa.Table, actual: pa.Table) -> list[str]:
    """Per-column differences (empty when the tables hold the same values)."""
    if actual.column_names != expected.column_names:
        return [f"columns {actual.column_names} != {expected.column_names}"]
    problems = []
    for name in expected.column_names:
        diff = same_nested(expected[name], actual[name], name)
        if diff:
            problems.append(diff)
    return problems
