"""Reopening a live file or a table with a schema that differs inside a nested column (a list
of another element type, a struct child renamed, retyped or made required, a map of another
value type, large_list for list) is refused before anything is written, the message naming
the dotted path of the first difference; an equal schema (list items named ``element``
rather than ``item``, map fields named otherwise: Arrow's equal types) is accepted."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import streamwrite
from streamwrite.errors import ConfigError
from streamwrite.layout.actions import LiveFileName
from tests.live._support import run

STRUCT = pa.struct([("a", pa.int64()), ("b", pa.string())])
SCHEMA = pa.schema(
    [
        ("l", pa.list_(pa.int32())),
        ("s", STRUCT),
        ("m", pa.map_(pa.string(), pa.int32())),
        ("ll", pa.list_(pa.struct([("x", pa.list_(pa.int8()))]))),
    ]
)
ROWS = pa.table(
    {
        "l": [[1, None], None],
        "s": [{"a": 1, "b": "x"}, None],
        "m": [[("k", 1)], None],
        "ll": [[{"x": [1]}], []],
    },
    schema=SCHEMA,
)


def _with(name: str, dtype: pa.DataType) -> pa.Schema:
    return SCHEMA.set(SCHEMA.get_field_index(name), pa.field(name, dtype))


# schema given -> the dotted path and types the message names
REFUSED = {
    "list element type": (
        _with("l", pa.list_(pa.int64())),
        "'l.list.element' is int64 in the schema given but int32 in the",
    ),
    "large_list for list": (
        _with("l", pa.large_list(pa.int32())),
        "'l' is large_list<item: int32> in the schema given but list<item: int32> in the",
    ),
    "struct child renamed": (
        _with("s", pa.struct([("a", pa.int64()), ("c", pa.string())])),
        "'s' has fields \\['a', 'c'\\] in the schema given but \\['a', 'b'\\] in the",
    ),
    "struct child retyped": (
        _with("s", pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "'s.a' is int32 in the schema given but int64 in the",
    ),
    "struct child required": (
        _with("s", pa.struct([pa.field("a", pa.int64(), nullable=False), ("b", pa.string())])),
        "'s.a' is not nullable in the schema given but nullable in the",
    ),
    "map value type": (
        _with("m", pa.map_(pa.string(), pa.int64())),
        "'m.key_value.value' is int64 in the schema given but int32 in the",
    ),
    "deep list element": (
        _with("ll", pa.list_(pa.struct([("x", pa.list_(pa.int16()))]))),
        "'ll.list.element.x.list.element' is int16 in the schema given but int8 in the",
    ),
}
ACCEPTED = {
    "same": SCHEMA,
    "element names": _with("l", pa.list_(pa.field("element", pa.int32()))),
    "map field names": _with(
        "m", pa.map_(pa.field("k", pa.string(), nullable=False), pa.field("v", pa.int32()))
    ),
}


def files_under(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory``: relative path -> bytes."""
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*") if p.is_file()
    }


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_live_file_reopened_with_another_nested_schema_is_refused(
    tmp_path: Path, case: str
) -> None:
    schema, message = REFUSED[case]
    directory = tmp_path / "lf"

    async def build() -> None:
        async with await streamwrite.LiveFile.open(directory, SCHEMA) as lf:
            await lf.append(ROWS)

    async def reopen() -> None:
        await streamwrite.LiveFile.open(directory, schema)

    run(build)
    before = files_under(directory)
    with pytest.raises(ConfigError, match=message + " live file") as info:
        run(reopen)
    assert "has schema" in str(info.value)
    assert files_under(directory) == before
    assert streamwrite.read_table(directory).equals(ROWS)


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_live_file_reopened_with_an_equal_nested_schema(tmp_path: Path, case: str) -> None:
    directory = tmp_path / "lf"

    async def write(schema: pa.Schema) -> None:
        async with await streamwrite.LiveFile.open(directory, schema) as lf:
            assert lf.schema.equals(SCHEMA)
            await lf.append(ROWS)

    run(write, SCHEMA)
    run(write, ACCEPTED[case])
    assert (directory / LiveFileName.DATA.value).is_file()
    assert streamwrite.read_table(directory).equals(pa.concat_tables([ROWS, ROWS]))
