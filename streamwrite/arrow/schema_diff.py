"""Where two Arrow schemas differ, named by the dotted path a nested column's parts have.

Paths are Parquet's (as leaf column names are): a struct child ``s.a``, a list element
``l.list.element`` (list, large_list and fixed_size_list alike), a map's key and value
``m.key_value.key`` / ``m.key_value.value``. Names Arrow does not compare (a list's item
field, a map's entries/key/value fields) are not compared here either.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["schema_mismatch"]


def schema_mismatch(expected: pa.Schema, given: pa.Schema, owner: str) -> str | None:
    """The first place where ``given`` differs from ``expected`` (metadata aside).

    Args:
        expected: The schema ``owner`` has.
        given: The schema given.
        owner: What holds ``expected``, as it reads after "in" (``"the live file"``).

    Returns:
        One sentence naming the column (dotted path) and both sides, or None when the
        schemas are equal (or differ only where pyarrow's ``equals`` alone sees it).
    """
    if given.names != expected.names:
        return f"The schema given has columns {given.names} but {owner} has {expected.names}."
    for want, got in zip(expected, given, strict=True):
        found = _field_mismatch(want.name, want, got, owner)
        if found is not None:
            return found
    return None


def _field_mismatch(path: str, want: pa.Field, got: pa.Field, owner: str) -> str | None:
    if want.nullable != got.nullable:
        how = ("not nullable", "nullable")
        return (
            f"{path!r} is {how[got.nullable]} in the schema given but {how[want.nullable]} "
            f"in {owner}."
        )
    a, b = want.type, got.type
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        if [f.name for f in a] != [f.name for f in b]:
            return (
                f"{path!r} has fields {[f.name for f in b]} in the schema given but "
                f"{[f.name for f in a]} in {owner}."
            )
        pairs = [(f"{path}.{x.name}", x, y) for x, y in zip(a, b, strict=True)]
    elif _same_list_kind(a, b):
        pairs = [(f"{path}.list.element", a.value_field, b.value_field)]
    elif pa.types.is_map(a) and pa.types.is_map(b) and a.keys_sorted == b.keys_sorted:
        pairs = [
            (f"{path}.key_value.key", a.key_field, b.key_field),
            (f"{path}.key_value.value", a.item_field, b.item_field),
        ]
    elif not a.equals(b):
        return f"{path!r} is {b} in the schema given but {a} in {owner}."
    else:
        return None
    for child_path, x, y in pairs:
        found = _field_mismatch(child_path, x, y, owner)
        if found is not None:
            return found
    return None


def _same_list_kind(a: pa.DataType, b: pa.DataType) -> bool:
    """Both lists, both large lists, or both fixed-size lists of one size."""
    if pa.types.is_fixed_size_list(a) and pa.types.is_fixed_size_list(b):
        return bool(a.list_size == b.list_size)
    both_lists = pa.types.is_list(a) and pa.types.is_list(b)
    return bool(both_lists or (pa.types.is_large_list(a) and pa.types.is_large_list(b)))
