"""The footer's Parquet schema is cross-checked against ``ARROW:schema`` inside nested
columns too: a struct child renamed, a list element or map value whose annotation or
repetition changed is a CorruptFileError naming the dotted path, where it used to read as
another schema. Nested files as pyarrow writes them (every option) keep reading."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.errors import CorruptFileError
from streamwrite.format import structs as t
from streamwrite.format.enums import FieldRepetitionType
from tests.live.test_arrow_schema_check import rewrite_footer

SCHEMA = pa.schema(
    [
        ("l", pa.list_(pa.int32())),
        ("s", pa.struct([("a", pa.int64()), ("b", pa.string())])),
        ("m", pa.map_(pa.string(), pa.int32())),
        ("ls", pa.large_list(pa.struct([("x", pa.int16()), ("y", pa.list_(pa.string()))]))),
        pa.field("fl", pa.list_(pa.field("v", pa.float32(), nullable=False), 2), nullable=False),
    ]
)
TABLE = pa.table(
    {
        "l": [[1, None], None],
        "s": [{"a": 1, "b": "x"}, None],
        "m": [[("k", 1)], []],
        "ls": [[{"x": 1, "y": ["p"]}], [None]],
        "fl": [[1.0, 2.0], [3.0, 4.0]],
    },
    schema=SCHEMA,
)
INT16 = t.LogicalType(INTEGER=t.IntType(bitWidth=16, isSigned=True))
REQUIRED = FieldRepetitionType.REQUIRED
OPTIONAL = FieldRepetitionType.OPTIONAL


def edit_path(path: str, **changes: Any) -> Callable[[t.FileMetaData], t.FileMetaData]:
    """Replace fields of the schema element at the dotted Parquet ``path``."""

    def edit(metadata: t.FileMetaData) -> t.FileMetaData:
        elements = list(metadata.schema or [])
        # (children left, path) of the open groups, the root first
        stack: list[tuple[int, tuple[str, ...]]] = [(elements[0].num_children or 0, ())]
        found = False
        for at in range(1, len(elements)):
            while stack[-1][0] == 0:
                stack.pop()
            left, parent = stack.pop()
            stack.append((left - 1, parent))
            here = (*parent, elements[at].name or "")
            if ".".join(here) == path:
                elements[at] = dataclasses.replace(elements[at], **changes)
                found = True
            if elements[at].num_children:
                stack.append((elements[at].num_children or 0, here))
        assert found, path
        return dataclasses.replace(metadata, schema=elements)

    return edit


CONTRADICTIONS = {
    "struct child renamed": (
        edit_path("s.a", name="c"),
        "Column 's.c' is named 'c' in the Parquet schema but 'a' in ARROW:schema",
    ),
    "struct child annotation lost": (
        edit_path("s.b", logicalType=None, converted_type=None),
        "Column 's.b' is BYTE_ARRAY in the Parquet schema, which reads as binary, but string",
    ),
    "list element width": (
        edit_path("l.list.element", logicalType=INT16, converted_type=None),
        "Column 'l.list.element' is INT32 .* which reads as int16, but int32 in ARROW:schema",
    ),
    "map value required": (
        edit_path("m.key_value.value", repetition_type=REQUIRED),
        "Column 'm.key_value.value' is REQUIRED in the Parquet schema but nullable",
    ),
    "deep struct child renamed": (
        edit_path("ls.list.element.x", name="z"),
        "Column 'ls.list.element.z' is named 'z' in the Parquet schema but 'x'",
    ),
    "deep list element annotation lost": (
        edit_path("ls.list.element.y.list.element", logicalType=None, converted_type=None),
        "Column 'ls.list.element.y.list.element' is BYTE_ARRAY .* reads as binary, but string",
    ),
    "fixed-size list element optional": (
        edit_path("fl.list.element", repetition_type=OPTIONAL),
        "Column 'fl.list.element' is OPTIONAL in the Parquet schema but not nullable",
    ),
    "struct child count": (
        lambda m: dataclasses.replace(
            m,
            key_value_metadata=[
                t.KeyValue(key=k.key, value=_arrow_schema_with_struct_child())
                if k.key == "ARROW:schema"
                else k
                for k in m.key_value_metadata or []
            ],
        ),
        "Column 's' has 2 children .* in the Parquet schema but 3 .* in ARROW:schema",
    ),
}


def _arrow_schema_with_struct_child() -> str:
    from streamwrite.arrow.schema import encode_arrow_schema

    wider = pa.struct([("a", pa.int64()), ("b", pa.string()), ("c", pa.int8())])
    return encode_arrow_schema(SCHEMA.set(1, pa.field("s", wider)))


@pytest.mark.parametrize("case", sorted(CONTRADICTIONS))
def test_a_nested_schema_contradicting_arrow_schema_is_corrupt(case: str) -> None:
    edit, message = CONTRADICTIONS[case]
    buffer = io.BytesIO()
    pq.write_table(TABLE, buffer)
    assert streamwrite.read_table(buffer.getvalue()).equals(TABLE)
    damaged = rewrite_footer(buffer.getvalue(), edit)
    with pytest.raises(CorruptFileError, match=message):
        streamwrite.read_table(damaged)


@pytest.mark.parametrize(
    "options",
    [{}, {"use_compliant_nested_type": False}, {"version": "1.0"}, {"data_page_version": "2.0"}],
    ids=repr,
)
def test_nested_files_pyarrow_writes_keep_reading(options: dict[str, Any]) -> None:
    buffer = io.BytesIO()
    pq.write_table(TABLE, buffer, **options)
    assert streamwrite.read_table(buffer.getvalue()).equals(pq.read_table(buffer))
