"""``cli`` and ``spark`` use only the public API (DESIGN section 2, the outermost ring): the
import contract's :func:`outer_violations` holds on the source, and fails on a copy of it with
one forbidden import added (also one inside a function)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests import _import_contract as contract

ROOT = Path(__file__).resolve().parents[2]


def test_cli_and_spark_import_only_the_public_api() -> None:
    assert contract.outer_violations(ROOT) == []
    outer = [
        v
        for v in contract.ring_violations(ROOT)
        if v.split(":")[0].split(".")[1] in {"cli", "spark", "inspect", "__main__"}
    ]
    assert outer == []


def _copy(tmp_path: Path) -> Path:
    for package in contract.PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("*.pyc"))
    return tmp_path


@pytest.mark.parametrize(
    ("module", "added", "found"),
    [
        (
            "streamwrite/cli/show.py",
            "from streamwrite.reader.file import ParquetFile\n",
            "streamwrite.cli.show:{line} imports streamwrite.reader.file",
        ),
        (
            "streamwrite/spark/sink.py",
            "def _later() -> None:\n    from streamwrite.format.txn import TXN_FILE\n",
            "streamwrite.spark.sink:{line} imports streamwrite.format.txn",
        ),
    ],
)
def test_a_private_import_breaks_the_contract(
    tmp_path: Path, module: str, added: str, found: str
) -> None:
    root = _copy(tmp_path)
    path = root / module
    source = path.read_text()
    path.write_text(source + "\n\n" + added)
    line = source.count("\n") + 2 + added.count("\n")
    assert contract.outer_violations(root) == [found.format(line=line)]
