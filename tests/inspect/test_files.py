"""``streamwrite.inspect`` on Parquet files and live files: what a path is, typed footer
descriptions, verification, live-file summaries and recovery, on real files."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import os
from pathlib import Path

import anyio
import numpy as np
import pyarrow as pa
import pytest

import streamwrite
from streamwrite import inspect
from streamwrite.crypto import ExplicitKeys
from streamwrite.errors import ConfigError, CorruptFileError
from streamwrite.testing import reference_table

KEYS = {"kf": bytes(range(16)), "k1": bytes(range(16, 32))}


def _tree(path: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``path`` with its size and modification time (ns)."""
    found = {}
    for root, _, files in os.walk(path):
        for name in files:
            stat = (Path(root) / name).stat()
            found[str(Path(root, name).relative_to(path))] = (stat.st_size, stat.st_mtime_ns)
    return found


def _live_file(path: Path, num_commits: int = 3) -> pa.Table:
    data = reference_table(300 * num_commits)

    async def go() -> None:
        async with await streamwrite.LiveFile.open(path, data.schema) as live:
            for i in range(num_commits):
                await live.append(data.slice(300 * i, 300))

    anyio.run(go)
    return data


# -- path_kind -------------------------------------------------------------------------------


def test_path_kind_tells_every_kind_apart_and_creates_nothing(tmp_path: Path) -> None:
    plain = tmp_path / "plain.parquet"
    streamwrite.write_table(pa.table({"x": [1, 2]}), plain)
    live = tmp_path / "live"
    _live_file(live, 1)
    table = tmp_path / "table"

    async def make_table() -> None:
        schema = pa.schema([("ts", pa.timestamp("us")), ("x", pa.int64())])
        async with await streamwrite.open_table(
            table, schema, timestamp="ts", partition_by="day", compaction_interval=None
        ) as t:
            await t.append(pa.table({"ts": pa.array([0], pa.timestamp("us")), "x": [1]}))

    anyio.run(make_table)
    partition = next(p for p in table.iterdir() if p.is_dir())
    directory = tmp_path / "dir"
    (directory / "k=1").mkdir(parents=True)
    streamwrite.write_table(pa.table({"x": [1]}), directory / "k=1" / "a.parquet")
    empty = tmp_path / "empty"
    empty.mkdir()
    before = _tree(tmp_path)

    assert inspect.path_kind(plain) is inspect.PathKind.FILE
    assert inspect.path_kind(str(live)) is inspect.PathKind.LIVE_FILE
    assert inspect.path_kind(table) is inspect.PathKind.TABLE
    assert inspect.path_kind(partition) is inspect.PathKind.PARTITION
    assert inspect.path_kind(directory) is inspect.PathKind.DIRECTORY
    with pytest.raises(ConfigError, match="not a table"):
        inspect.path_kind(empty)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        inspect.path_kind(tmp_path / "missing")
    assert _tree(tmp_path) == before and not (empty / "_lock").exists()


# -- describe_file -----------------------------------------------------------------------------


def test_describe_file_decodes_statistics_as_typed_values(tmp_path: Path) -> None:
    path = tmp_path / "typed.parquet"
    streamwrite.write_table(
        pa.table(
            {
                "ts": pa.array(
                    [datetime.datetime(2026, 11, 22, 9, 30), datetime.datetime(2026, 11, 22, 16)],
                    pa.timestamp("us", tz="UTC"),
                ),
                "ns": pa.array(
                    [1_700_000_000_123_456_789, 1_700_000_001_000_000_000], pa.timestamp("ns")
                ),
                "sym": ["MSFT", None],
                "px": pa.array(
                    [decimal.Decimal("101.2500"), decimal.Decimal("99.5000")], pa.decimal128(12, 4)
                ),
                "day": [datetime.date(2026, 11, 21), datetime.date(2026, 11, 22)],
                "raw": pa.array([b"\x00\xff", b"\x01"], pa.binary()),
            }
        ),
        path,
        compression={"ts": "zstd", "sym": "snappy"},
        bloom_filter_options={"sym": {"ndv": 10, "fpp": 0.01}},
    )
    info = inspect.describe_file(path)
    assert info.num_rows == 2 and info.num_row_groups == 1
    assert [c.name for c in info.columns] == ["ts", "ns", "sym", "px", "day", "raw"]
    assert info.columns[0].arrow_type == pa.timestamp("us", tz="UTC")
    assert info.columns[3].physical_type == "INT64"  # decimal(12, 4) fits 8 bytes
    assert info.columns[3].logical_type is not None and "DECIMAL" in info.columns[3].logical_type
    assert info.columns[2].repetition == "OPTIONAL"
    assert "ARROW:schema" in info.key_value_metadata
    chunks = {c.column: c for c in info.row_groups[0].columns}
    meta = {name: chunk.metadata for name, chunk in chunks.items()}
    assert all(m is not None for m in meta.values())
    assert meta["ts"] is not None and meta["ts"].codec == "ZSTD"
    assert meta["sym"] is not None and meta["sym"].codec == "SNAPPY"
    assert meta["sym"].bloom_filter_offset is not None and meta["ts"].bloom_filter_offset is None
    stats = {name: m.statistics for name, m in meta.items() if m is not None}
    assert stats["ts"] is not None and stats["ns"] is not None
    assert stats["ts"].min == np.datetime64("2026-11-22T09:30:00.000000", "us")
    assert stats["ns"].min == np.datetime64(1_700_000_000_123_456_789, "ns")  # no digit lost
    assert stats["sym"] is not None and (stats["sym"].min, stats["sym"].null_count) == ("MSFT", 1)
    assert stats["px"] is not None
    assert (stats["px"].min, stats["px"].max) == (
        decimal.Decimal("99.5"),
        decimal.Decimal("101.25"),
    )
    assert stats["day"] is not None and stats["day"].max == datetime.date(2026, 11, 22)
    assert stats["raw"] is not None and (stats["raw"].min, stats["raw"].max) == (
        b"\x00\xff",
        b"\x01",
    )
    assert all(c.column_index_offset is not None for c in chunks.values())
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.num_rows = 3  # type: ignore[misc]


def test_describe_file_leaves_out_the_metadata_of_chunks_without_a_key(tmp_path: Path) -> None:
    path = tmp_path / "enc.parquet"
    encryption = streamwrite.FileEncryption(ExplicitKeys(KEYS, "kf", {"px": "k1"}))
    streamwrite.write_table(pa.table({"id": [1, 2], "px": [1.5, 2.5]}), path, encryption=encryption)
    footer_only = streamwrite.DecryptionConfig(ExplicitKeys({"kf": KEYS["kf"]}, "kf", {}))
    info = inspect.describe_file(path, decryption=footer_only)
    assert info.encryption_algorithm is not None
    chunks = {c.column: c for c in info.row_groups[0].columns}
    assert chunks["px"].encrypted and chunks["px"].metadata is None
    assert chunks["id"].metadata is not None and chunks["id"].metadata.num_values == 2
    both = streamwrite.DecryptionConfig(ExplicitKeys(KEYS, "kf", {"px": "k1"}))
    px = {c.column: c for c in inspect.describe_file(path, decryption=both).row_groups[0].columns}
    assert px["px"].metadata is not None and px["px"].metadata.statistics is not None
    assert px["px"].metadata.statistics.max == 2.5
    with pytest.raises(streamwrite.EncryptionError):
        inspect.describe_file(path)


def test_describe_file_of_a_live_file_reads_the_commit_asked_for(tmp_path: Path) -> None:
    path = tmp_path / "live"
    _live_file(path, 3)
    snapshots = inspect.describe_live_file(path).snapshots
    assert inspect.describe_file(path).num_rows == 900
    assert snapshots[0].num_rows == 0  # opening the live file commits an empty version
    assert inspect.describe_file(path, snapshot=snapshots[1].parquet_size).num_rows == 300


# -- verify_file -------------------------------------------------------------------------------


def test_verify_file_finds_a_flipped_byte(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    streamwrite.write_table(reference_table(2_000), path)
    report = inspect.verify_file(path)
    assert report.ok and report.problems == () and report.num_row_groups == 1
    assert report.num_pages >= len(reference_table(1).schema)
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0x10
    path.write_bytes(bytes(data))
    damaged = inspect.verify_file(path)
    assert not damaged.ok and all("byte offset" in p for p in damaged.problems)


def test_verify_file_reports_a_live_files_torn_tail_unless_a_snapshot_is_asked(
    tmp_path: Path,
) -> None:
    path = tmp_path / "live"
    _live_file(path, 2)
    assert inspect.verify_file(path).ok
    committed = inspect.live_file_size(path).committed_size
    with open(path / "data.parquet", "ab") as f:
        f.write(b"x" * 100)
    report = inspect.verify_file(path)
    assert report.problems[0].startswith(
        f"data.parquet holds 100 bytes past its last commit (at byte {committed})"
    )
    assert inspect.verify_file(path, snapshot=committed).ok
    (path / "_pm").unlink()
    with pytest.raises(CorruptFileError, match="no readable _pm"):
        inspect.verify_file(path)


def test_verify_file_reports_an_unreadable_file_as_its_problem(tmp_path: Path) -> None:
    path = tmp_path / "junk.parquet"
    path.write_bytes(b"PAR1 this is not parquet")
    report = inspect.verify_file(path)
    assert not report.ok and report.problems[0].startswith("cannot open:")


# -- live files --------------------------------------------------------------------------------


def test_describe_live_file_lists_snapshots_and_the_footer_chain(tmp_path: Path) -> None:
    path = tmp_path / "live"
    _live_file(path, 3)
    before = _tree(path)
    info = inspect.describe_live_file(path)
    assert _tree(path) == before  # read-only
    assert [s.num_rows for s in info.snapshots] == [0, 300, 600, 900]
    assert info.committed_size == info.snapshots[-1].parquet_size
    assert info.sidecar.committed_size == (path / "_pm").stat().st_size
    assert info.sidecar.designated_timestamp == -1 and info.sidecar.unused_bytes > 0
    assert info.uncommitted_bytes == 0 and info.sidecar.num_footers == 4
    assert [link.parquet_size for link in info.footer_chain] == [
        s.parquet_size for s in reversed(info.snapshots)
    ]
    assert [link.prev_size for link in info.footer_chain] == [
        *(s.parquet_size for s in reversed(info.snapshots[:-1])),
        0,
    ]
    assert all(link.problem is None for link in info.footer_chain)
    assert info.sidecar.columns == tuple(reference_table(1).schema.names)
    size = inspect.live_file_size(path)
    assert (size.committed_size, size.file_size, size.uncommitted_bytes) == (
        info.committed_size,
        info.committed_size,
        0,
    )


def test_describe_live_file_of_an_encrypted_file_needs_keys_for_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "live"
    data = reference_table(100)

    async def go() -> None:
        encryption = streamwrite.FileEncryption(ExplicitKeys(KEYS, "kf", {}))
        async with await streamwrite.LiveFile.open(path, data.schema, encryption=encryption) as lf:
            await lf.append(data)

    anyio.run(go)
    without = inspect.describe_live_file(path)
    assert [s.num_rows for s in without.snapshots] == [0, 100]  # _pm needs no key
    assert len(without.footer_chain) == 1 and without.footer_chain[0].problem is not None
    keys = streamwrite.DecryptionConfig(ExplicitKeys(KEYS, "kf", {}))
    with_keys = inspect.describe_live_file(path, keys)
    assert with_keys.footer_chain[0].problem is None
    assert with_keys.footer_chain[0].num_row_groups == 1


def test_recover_live_file_plans_then_cuts_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "live"
    _live_file(path, 2)
    committed = inspect.live_file_size(path).committed_size
    with open(path / "data.parquet", "ab") as f:
        f.write(b"torn")
    assert inspect.live_file_size(path).uncommitted_bytes == 4
    plan = inspect.recover_live_file(path)
    assert not plan.applied and plan.torn_data_bytes == 4 and plan.num_snapshots == 3
    assert plan.committed_size == committed
    assert "truncate a torn tail of 4 bytes from data.parquet" in plan.description
    assert (path / "data.parquet").stat().st_size == committed + 4  # only planned
    done = inspect.recover_live_file(path, apply=True)
    assert done.applied and (path / "data.parquet").stat().st_size == committed
    again = inspect.recover_live_file(path)
    assert again.torn_data_bytes == 0 and "nothing to do" in again.description
