"""Which Arrow field a filter's column name means: a top-level column, or a struct field.

A filter names a column by its name, or a field inside structs by its dotted path (``s.a``,
``s.inner.x``; in an Expression ``pc.field("s", "a")``, which parses to ``s.a``). Such a field
has one value per row, exactly like a flat column: it is null where it or any struct above it
is null, and its Parquet leaf (same dotted path) has one level entry per row, so the leaf's
statistics bound it and prune row groups and pages as a flat column's do. Rules::

    name of a top-level field          that field (a name with dots included: exact first)
    dotted path through structs        the struct field (``s.a``)
    path into a list, large_list,      ConfigError: a list or map holds any number of values
      fixed_size_list or map             per row, so "the row's value" of its leaf is undefined
    a struct, list or map itself       comparisons, IN, starts_with, is_nan: ConfigError;
                                         is_null (the row's value is null) is allowed
    anything else                      SchemaError listing the columns
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from streamwrite.errors import ConfigError, SchemaError

__all__ = ["arrow_path", "field_ref", "filter_field", "is_nested_type"]


def is_nested_type(dtype: pa.DataType) -> bool:
    """Whether ``dtype`` is a struct, a list of any kind or a map."""
    return bool(
        pa.types.is_struct(dtype)
        or pa.types.is_list(dtype)
        or pa.types.is_large_list(dtype)
        or pa.types.is_fixed_size_list(dtype)
        or pa.types.is_list_view(dtype)
        or pa.types.is_large_list_view(dtype)
        or pa.types.is_map(dtype)
    )


def _repeated(dtype: pa.DataType) -> str | None:
    if pa.types.is_map(dtype):
        return "map"
    if (
        pa.types.is_list(dtype)
        or pa.types.is_large_list(dtype)
        or pa.types.is_fixed_size_list(dtype)
        or pa.types.is_list_view(dtype)
        or pa.types.is_large_list_view(dtype)
    ):
        return "list"
    return None


def arrow_path(schema: pa.Schema, column: str) -> tuple[tuple[str, ...], pa.Field]:
    """The Arrow path (top-level name, then struct field names) of the filter column
    ``column``, and its field.

    Raises:
        SchemaError: no field has that name or path (the message lists the columns).
        ConfigError: the path goes into a list or map (the message says why).
    """
    index = schema.get_field_index(column)
    if index >= 0:
        return (column,), schema.field(index)
    parts = column.split(".")
    for split in range(len(parts) - 1, 0, -1):
        head = ".".join(parts[:split])
        index = schema.get_field_index(head)
        if index < 0:
            continue
        field = schema.field(index)
        path = [head]
        for name in parts[split:]:
            kind = _repeated(field.type)
            if kind is not None:
                raise ConfigError(
                    f"The filter names {column!r}, a value inside the {kind} column "
                    f"{'.'.join(path)!r}: a {kind} holds any number of values per row, so a row "
                    "filter on its elements is undefined (filter on a flat column or a struct "
                    "field, or is_null of the whole column)."
                )
            if not pa.types.is_struct(field.type):
                break
            child = field.type.get_field_index(name)
            if child < 0:
                break
            field = field.type.field(child)
            path.append(name)
        else:
            return tuple(path), field
    raise SchemaError(
        f"The filter reads column {column!r}, which is not in the schema "
        f"(columns: {', '.join(schema.names)}; a struct field is named by its dotted path, "
        "s.a)."
    )


def filter_field(schema: pa.Schema, column: str, what: str) -> pa.Field:
    """The field a filter term ``what`` (``"a comparison"``...) reads, checked: a term other
    than is_null needs a flat value, not a struct, list or map.

    Raises:
        SchemaError, ConfigError: as :func:`arrow_path`, or a term on a nested value.
    """
    _, field = arrow_path(schema, column)
    if what != "is_null" and is_nested_type(field.type):
        raise ConfigError(
            f"The filter applies {what} to {column!r}, a {field.type} column: only is_null "
            "takes a struct, list or map; compare a struct's fields by their dotted path "
            f"({column}.<field>)."
        )
    return field


def field_ref(column: str, schema: pa.Schema | None) -> pc.Expression:
    """``pc.field`` of a filter column: nested for a struct field path when ``schema`` says so
    (without a schema, the name is one top-level column)."""
    if schema is None or schema.get_field_index(column) >= 0:
        return pc.field(column)
    path, _ = arrow_path(schema, column)
    return pc.field(*path)
