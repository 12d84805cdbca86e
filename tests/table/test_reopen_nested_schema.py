"""``open_table`` on an existing table with a schema that differs inside a nested column is
refused before anything is written, naming the dotted path of the first difference; an equal
schema is accepted (cases shared with the live file's test)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import streamwrite
from streamwrite.errors import ConfigError
from tests.live._support import run
from tests.live.test_reopen_nested_schema import ACCEPTED, REFUSED, ROWS, SCHEMA, files_under


def _files(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*") if p.is_file()
    }


async def _write(directory: Path, schema: pa.Schema) -> None:
    table = await streamwrite.open_table(directory, schema)
    try:
        assert table.schema.equals(SCHEMA)
        await table.append(ROWS)
    finally:
        await table.close()


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_table_reopened_with_another_nested_schema_is_refused(tmp_path: Path, case: str) -> None:
    schema, message = REFUSED[case]
    directory = tmp_path / "tb"
    run(_write, directory, SCHEMA)
    before = files_under(directory)

    async def reopen() -> None:
        await streamwrite.open_table(directory, schema)

    with pytest.raises(ConfigError, match=message + " table") as info:
        run(reopen)
    assert "has schema" in str(info.value)
    assert files_under(directory) == before
    assert streamwrite.read_table(directory).equals(ROWS)


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_table_reopened_with_an_equal_nested_schema(tmp_path: Path, case: str) -> None:
    directory = tmp_path / "tb"
    run(_write, directory, SCHEMA)
    run(_write, directory, ACCEPTED[case])
    assert streamwrite.read_table(directory).equals(pa.concat_tables([ROWS, ROWS]))
