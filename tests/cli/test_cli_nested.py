"""The CLI on nested data, as real subprocesses: ``inspect`` lists leaf paths with their
levels, ``scan`` filters on struct fields and prints nested values (JSON objects, arrays,
maps as [key, value] pairs), and refuses a list leaf with one line."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pyarrow.compute as pc

import streamwrite
from tests.cli.test_scan import run
from tests.live._nested_rows import NESTED_SCHEMA, nested_rows


def _live(path: Path) -> None:
    async def go() -> None:
        async with await streamwrite.LiveFile.open(path, NESTED_SCHEMA, row_group_size=50) as lf:
            await lf.append(nested_rows(0, 120))

    anyio.run(go)


def test_inspect_lists_leaf_paths_and_levels(tmp_path: Path) -> None:
    _live(tmp_path / "lf")
    done = run("inspect", str(tmp_path / "lf" / "data.parquet"), "--json")
    assert done.returncode == 0, done.stderr
    schema = json.loads(done.stdout)["schema"]
    levels = {c["name"]: (c["max_definition_level"], c["max_repetition_level"]) for c in schema}
    assert levels["s.inner.x"] == (2, 0)
    assert levels["m.key_value.value"] == (3, 1)
    assert levels["deep.list.element.k.list.element"] == (6, 2)
    text = run("inspect", str(tmp_path / "lf" / "data.parquet"))
    assert text.returncode == 0, text.stderr
    assert "m.key_value.key: string (BYTE_ARRAY, REQUIRED, max def 2, max rep 1)" in text.stdout


def test_scan_filters_on_struct_fields_and_prints_nested_values(tmp_path: Path) -> None:
    _live(tmp_path / "lf")
    rows = nested_rows(0, 120)
    expected = rows.filter(pc.field("s", "a") == 5)
    assert expected.num_rows > 0
    done = run("scan", str(tmp_path / "lf"), "--filter", "s.a = 5", "--format", "json",
               "--columns", "id,s,m,vals")  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = [json.loads(line) for line in done.stdout.splitlines()]
    assert [g["id"] for g in got] == expected.column("id").to_pylist()
    assert [g["s"] for g in got] == expected.column("s").to_pylist()
    assert [g["m"] for g in got] == [
        None if m is None else [list(pair) for pair in m] for m in expected.column("m").to_pylist()
    ]
    table = run("scan", str(tmp_path / "lf"), "--filter", "s.a = 5", "--columns", "id,s")
    assert table.returncode == 0, table.stderr
    assert '"a": 5' in table.stdout
    refused = run("scan", str(tmp_path / "lf"), "--filter", "vals.list.element > 1")
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1
    assert "inside the list column 'vals'" in refused.stderr
