"""LiveFile.open checks its arguments before it creates anything, and an append with a bad
value is refused whole, leaving the live file usable (issue 10, items 1 and 6)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pyarrow as pa
import pytest

import streamwrite
from streamwrite import ConfigError, LiveFile, SchemaError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("flag", pa.bool_())])


def test_bad_arguments_create_nothing(tmp_path: Path) -> None:
    async def scenario() -> None:
        with pytest.raises(ConfigError, match="needs a schema"):
            await LiveFile.open(tmp_path / "a")
        with pytest.raises(TypeError, match=r"LiveFile\.open\(\).*'compresion'"):
            await LiveFile.open(tmp_path / "b", SCHEMA, compresion="zstd")
        with pytest.raises(ConfigError, match="BOOLEAN"):
            await LiveFile.open(tmp_path / "c", SCHEMA, bloom_filter_options={"flag": True})

    anyio.run(scenario)
    assert list(tmp_path.iterdir()) == []


def test_a_bad_value_is_refused_and_the_live_file_goes_on(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with await LiveFile.open(tmp_path / "lf", SCHEMA) as lf:
            await lf.append(pa.table({"id": [1], "flag": [True]}, schema=SCHEMA))
            bad = pa.table({"id": pa.array([None], pa.int64()), "flag": [False]}, schema=SCHEMA)
            with pytest.raises(SchemaError, match="'id'"):
                await lf.append(bad)
            await lf.append(pa.table({"id": [2], "flag": [None]}, schema=SCHEMA))

    anyio.run(scenario)
    assert streamwrite.read_table(tmp_path / "lf")["id"].to_pylist() == [1, 2]
