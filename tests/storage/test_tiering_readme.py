"""The README's cold-storage snippet (proposed in helper H2's report, pasted by the lead) runs
as written against a moto S3 server: :data:`SNIPPET` is the Markdown's code block verbatim."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pytest

import streamwrite
from streamwrite.testing.s3 import S3Server

SNIPPET = """\
async with await streamwrite.open_table(
    "ticks", schema, timestamp="ts", partition_by="day",
    cold_storage="s3://my-bucket/ticks",     # any fsspec URL (no credentials in it)
    storage_options=STORAGE_OPTIONS,         # fsspec/s3fs keyword arguments: key, secret, endpoint
    cold_after=3600,                         # seconds after a settled segment's last write
) as table:
    await table.append(batch)
    moved = await table.tier()               # what is due now; a background task also tiers
"""


def test_readme_cold_storage_snippet_runs(
    tmp_path: Path,
    s3_server: S3Server,
    storage_options: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s3_server.create_bucket("my-bucket")  # other README tests use it too: cleaned before and after
    fs = s3_server.filesystem()
    if fs.exists("my-bucket/ticks"):
        fs.rm("my-bucket/ticks", recursive=True)
    monkeypatch.chdir(tmp_path)
    schema = pa.schema([("ts", pa.timestamp("us", tz="UTC")), ("price", pa.float64())])
    batch = pa.table({"ts": pa.array([0, 1], pa.timestamp("us", tz="UTC")), "price": [1.0, 2.0]})
    source = "async def main():\n" + textwrap.indent(SNIPPET, "    ") + "    return moved\n"
    scope: dict[str, Any] = {
        "streamwrite": streamwrite,
        "schema": schema,
        "batch": batch,
        "STORAGE_OPTIONS": storage_options,
    }
    exec(compile(source, "README.md", "exec"), scope)
    try:
        assert anyio.run(scope["main"]) == []  # young segments stay local (cold_after)
        fs.invalidate_cache()
        assert fs.exists("my-bucket/ticks/_owner.json")  # the root is claimed for the table
    finally:
        fs.rm("my-bucket/ticks", recursive=True)


README_PATH = Path(__file__).resolve().parents[2] / "README.md"


def test_the_snippet_is_the_readmes() -> None:
    assert SNIPPET in README_PATH.read_text(), "the README's code block changed: update SNIPPET"
