"""The README's nested-columns snippet runs as written (in a temporary directory)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _snippet() -> str:
    text = README.read_text()
    section = text[text.index("### Nested columns: lists, structs and maps") :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None
    return "import pyarrow as pa\nimport streamwrite\n" + match.group(1)


def test_nested_snippet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(_snippet(), "README.md", "exec"), {})
    assert os.path.exists(tmp_path / "nested.parquet")
