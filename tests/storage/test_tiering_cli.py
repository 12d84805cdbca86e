"""``streamwrite tier``: the command line over ``Table.tier()`` (a moto S3 server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from streamwrite.cli.main import main
from streamwrite.io.remote import open_store
from streamwrite.table.api import open_table
from tests.storage._tiering_support import SCHEMA, TABLE_OPTIONS, make_batch, read_record, read_rows


async def _build(directory: Path) -> None:
    table = await open_table(directory, SCHEMA, **TABLE_OPTIONS)
    try:
        await table.append(make_batch(0, 100))
    finally:
        await table.close()


def test_tier_command_moves_segments(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    anyio.run(_build, tmp_path)
    url = f"s3://{bucket}/ticks"
    store = open_store(url, storage_options)
    reference = read_rows(tmp_path, store)
    args = ["tier", str(tmp_path), "--cold-storage", url, "--storage-options"]
    assert main([*args, json.dumps(storage_options), "--json"]) == 0
    moved = json.loads(capsys.readouterr().out)
    assert sorted(moved) == ["ts_day=2026-01-01/seg-000000", "ts_day=2026-01-02/seg-000000"]
    assert all(s.is_cold for ss in read_record(tmp_path).partitions.values() for s in ss)
    assert read_rows(tmp_path, store).equals(reference)
    assert main([*args, json.dumps(storage_options)]) == 0
    assert capsys.readouterr().out.strip().endswith("nothing to tier")


def test_tier_command_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    anyio.run(_build, tmp_path)
    base = ["tier", str(tmp_path), "--cold-storage"]
    assert main([*base, "s3://b/p", "--storage-options", "{not json"]) == 2
    assert "not JSON" in capsys.readouterr().err
    assert main([*base, "nosuchscheme://b/p"]) == 2
    assert "No fsspec filesystem" in capsys.readouterr().err
    assert main(["tier", str(tmp_path / "none"), "--cold-storage", "s3://b/p"]) == 2
    assert read_record(tmp_path).cold is None
