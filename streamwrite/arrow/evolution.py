"""Schema evolution of a table in Arrow terms: adding nullable columns, widening old rows.

A table's schema only grows at its end (``Table.add_columns``), so every schema of a table's
history is a prefix of the next one, and a segment written with an older schema is read as
the current one by appending a null column for each field it lacks::

    history       s0 = (ts, price)  ->  s1 = (ts, price, venue)  ->  s2 = (..., venue, size)
    segment(s0)   ts | price                     read as s2: ts | price | null | null
    segment(s1)   ts | price | venue             read as s2: ts | price | venue | null

:func:`add_fields` checks a change (names new, fields nullable, types the writer maps);
:func:`widen_table` reads older rows as a newer schema (or a projection of it).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.errors import SchemaError

__all__ = ["add_fields", "is_prefix", "widen_table"]


def add_fields(schema: pa.Schema, fields: Sequence[pa.Field]) -> pa.Schema:
    """``schema`` with ``fields`` appended, after checking the change.

    Returns:
        The new schema (``schema``'s metadata kept).

    Raises:
        SchemaError: no field, something that is not a ``pyarrow.Field``, a name already in
            ``schema`` or given twice, or a field that is not nullable.
        UnsupportedError: a field of a type the writer cannot map (union, interval...);
            struct, list and map fields are added like any other.
    """
    if isinstance(fields, pa.Field) or not isinstance(fields, Sequence):
        raise SchemaError(
            f"add_columns takes a sequence of pyarrow.Field, got {type(fields).__name__}."
        )
    if not fields:
        raise SchemaError("add_columns needs at least one field; none was given.")
    seen = set(schema.names)
    for position, field in enumerate(fields):
        if not isinstance(field, pa.Field):
            raise SchemaError(
                f"add_columns takes pyarrow.Field values; item {position} is a "
                f"{type(field).__name__}."
            )
        if field.name in seen:
            where = "the table has" if field.name in schema.names else "the fields repeat"
            raise SchemaError(
                f"Cannot add the column {field.name!r}: {where} a column of that name "
                f"(the table's columns: {schema.names})."
            )
        if not field.nullable:
            raise SchemaError(
                f"Cannot add the column {field.name!r} as NOT NULL: the rows already in the "
                "table have no value for it, so an added column must be nullable."
            )
        seen.add(field.name)
    widened = pa.schema([*schema, *fields], metadata=schema.metadata)
    arrow_to_parquet(widened)  # UnsupportedError for a type the writer does not map
    return widened


def is_prefix(older: pa.Schema, newer: pa.Schema) -> bool:
    """True when ``newer`` starts with ``older``'s fields (names, types, nullability)."""
    return len(older) <= len(newer) and all(
        older.field(i).equals(newer.field(i)) for i in range(len(older))
    )


def widen_table(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` (rows of an older schema, or a projection of one) as ``schema``: its columns
    in ``schema``'s order, a null column for each field of ``schema`` it lacks.

    Returns:
        The table, with exactly ``schema`` (``table`` itself when it has it already).

    Raises:
        SchemaError: ``table`` has a column ``schema`` does not, or one of another type.
    """
    if table.schema.equals(schema, check_metadata=False):
        return table
    for field in table.schema:
        index = schema.get_field_index(field.name)
        if index < 0 or not schema.field(index).type.equals(field.type):
            wanted = "no such column" if index < 0 else f"type {schema.field(index).type}"
            raise SchemaError(
                f"The column {field.name!r} ({field.type}) does not fit the table's schema "
                f"({wanted})."
            )
    columns = [
        table.column(field.name)
        if table.schema.get_field_index(field.name) >= 0
        else pa.chunked_array([pa.nulls(table.num_rows, field.type)])
        for field in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)
