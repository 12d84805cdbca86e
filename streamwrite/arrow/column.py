"""One leaf column's mapping between Arrow and Parquet (:class:`ColumnSpec`).

Its own module so that the value conversions (:mod:`streamwrite.arrow.values`) and the schema
mapping (:mod:`streamwrite.arrow.schema`) both use it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from streamwrite.format.enums import FieldRepetitionType, Type
from streamwrite.format.structs import SchemaElement
from workers.stats import SortOrder

__all__ = ["ColumnSpec"]


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """How one leaf column maps between Arrow and Parquet.

    Attributes:
        index: Leaf column ordinal.
        name: Column name.
        field: The Arrow field (as the user gave it when writing; dictionary types kept).
        physical_type: Parquet physical type.
        type_length: Byte width for FIXED_LEN_BYTE_ARRAY, else ``None``.
        repetition: OPTIONAL if the field is nullable, else REQUIRED.
        max_definition_level: 1 for OPTIONAL, 0 for REQUIRED.
        sort_order: How statistics compare values of this column.
        element: The leaf ``SchemaElement`` of the footer.
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
