"""The README's "reading from the bucket" snippet (proposed in helper H3's report, pasted by the
lead) runs as written against a moto S3 server: :data:`SNIPPET` is the Markdown's code block
verbatim."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import streamwrite
from streamwrite.testing.s3 import S3Server
from tests.storage._cold_tables import tick_rows, tier_table, write_table

SNIPPET = """\
import pyarrow.dataset as ds

url = "s3://my-bucket/ticks"                 # the table's cold_storage root
table = streamwrite.read_table(url, storage_options=STORAGE_OPTIONS)   # newest published version
prices = streamwrite.read_table(
    url, columns=["price"], filters=[("symbol", "==", "SYM001")], storage_options=STORAGE_OPTIONS
)                                            # footers, then only the chunks needed (byte ranges)
snapshot = streamwrite.read_snapshot(url, storage_options=STORAGE_OPTIONS)  # picklable
print(snapshot.plan([("qty", ">", 990)]).explain())    # segments skipped by partition / footer

with streamwrite.snapshot_filesystem(url, storage_options=STORAGE_OPTIONS) as fs:
    same = ds.dataset("/", filesystem=fs, format="parquet").to_table()  # pyarrow, DuckDB, polars

here = streamwrite.read_table("ticks", storage_options=STORAGE_OPTIONS)  # local + cold segments
"""


def test_readme_reading_from_the_bucket_snippet_runs(
    tmp_path: Path,
    s3_server: S3Server,
    storage_options: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    s3_server.create_bucket("my-bucket")
    fs = s3_server.filesystem()
    if fs.exists("my-bucket/ticks"):  # another README test's table (the same names)
        fs.rm("my-bucket/ticks", recursive=True)
    try:
        _run_snippet(tmp_path, storage_options, monkeypatch, capsys)
    finally:  # the names are the README's: leave them to the next README test unused
        fs.rm("my-bucket", recursive=True)


def _run_snippet(
    tmp_path: Path,
    storage_options: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    write_table(Path("ticks"), [tick_rows(300, 300 * i) for i in range(4)], segment_row_groups=1)
    assert tier_table(Path("ticks"), "s3://my-bucket/ticks", storage_options, segment_row_groups=1)
    source = "def main():\n" + textwrap.indent(SNIPPET, "    ") + "    return locals()\n"
    scope: dict[str, Any] = {"streamwrite": streamwrite, "STORAGE_OPTIONS": storage_options}
    exec(compile(source, "README.md", "exec"), scope)
    names = scope["main"]()
    assert names["table"].num_rows == names["here"].num_rows == 1200
    assert names["same"].num_rows == 1200
    assert names["prices"].column_names == ["price"] and 0 < names["prices"].num_rows < 1200
    assert names["table"].equals(names["here"])
    assert isinstance(names["same"], pa.Table)
    assert "segments:" in capsys.readouterr().out


README_PATH = Path(__file__).resolve().parents[2] / "README.md"


def test_the_snippet_is_the_readmes() -> None:
    assert SNIPPET in README_PATH.read_text(), "the README's code block changed: update SNIPPET"
