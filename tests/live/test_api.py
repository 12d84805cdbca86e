"""LiveFile API, the commit protocol's action order, footer caching, rebuild and the CLI."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import anyio
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.encode import encode_row_group
from streamwrite.errors import ConfigError, SchemaError, StreamwriteError
from streamwrite.format.sidecar.codec import read_sidecar
from streamwrite.layout.actions import Fsync, LiveFileName, WriteAt
from streamwrite.layout.appender import Appender
from streamwrite.layout.file_writer import FileWriter
from streamwrite.options import make_write_options
from streamwrite.testing import reference_table

TABLE = reference_table(3000)


def _run(coro_fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    return anyio.run(functools.partial(coro_fn, *args, **kwargs))


async def _build(path: Path, sizes: list[int], **options: object) -> list[streamwrite.Commit]:
    commits = []
    async with await streamwrite.LiveFile.open(path, TABLE.schema, **options) as lf:
        start = 0
        for size in sizes:
            commits.append(await lf.append(TABLE.slice(start, size)))
            start += size
    return commits


def test_commit_actions_follow_the_protocol_order() -> None:
    schema = arrow_to_parquet(TABLE.schema)
    options = make_write_options(TABLE.column_names)
    appender, pending = Appender.create(schema, options)
    appender.confirm()
    pending = appender.prepare([(encode_row_group(TABLE.slice(0, 10), schema, options), 10)])
    kinds = [(type(a).__name__, a.file, getattr(a, "offset", None)) for a in pending.actions]
    assert kinds == [
        ("WriteAt", LiveFileName.DATA, appender.parquet_size),
        ("WriteAt", LiveFileName.PM, appender.pm_size),
        ("Fsync", LiveFileName.DATA, None),  # round 1: data and _pm blocks
        ("Fsync", LiveFileName.PM, None),
        ("WriteAt", LiveFileName.PM, 0),  # the commit point: PARQUET_META_FILE_SIZE
        ("Fsync", LiveFileName.PM, None),  # round 2
    ]
    assert pending.syncs == ()
    patch = pending.actions[4]
    assert isinstance(patch, WriteAt) and int.from_bytes(patch.data, "little") == pending.pm_size
    assert isinstance(pending.actions[5], Fsync)
    commit = appender.confirm()
    assert (commit.seq, commit.num_rows, commit.num_row_groups) == (1, 10, 1)
    with pytest.raises(StreamwriteError, match="without a commit"):
        appender.confirm()


def test_table_commit_actions_are_writes_then_one_sync_round() -> None:
    """Inside a table the _pm header is written with the blocks, unsynced; the table runs
    :attr:`PendingCommit.syncs` (data, then _pm) with its other segments before ``_txn``."""
    schema = arrow_to_parquet(TABLE.schema)
    options = make_write_options(TABLE.column_names)
    appender, _ = Appender.create(schema, options)
    appender.confirm()
    rows = [(encode_row_group(TABLE.slice(0, 10), schema, options), 10)]
    pending = appender.prepare(rows, table=True)
    kinds = [(type(a).__name__, a.file, getattr(a, "offset", None)) for a in pending.actions]
    assert kinds == [
        ("WriteAt", LiveFileName.DATA, appender.parquet_size),
        ("WriteAt", LiveFileName.PM, appender.pm_size),
        ("WriteAt", LiveFileName.PM, 0),
    ]
    assert pending.syncs == (Fsync(LiveFileName.DATA), Fsync(LiveFileName.PM))
    assert appender.pending_syncs() == pending.syncs
    assert appender.confirm().num_rows == 10
    with pytest.raises(StreamwriteError, match="without a commit"):
        appender.pending_syncs()


def test_every_commit_is_a_snapshot_readable_by_us_and_pyarrow(tmp_path: Path) -> None:
    commits = _run(_build, tmp_path / "lf", [100, 1, 700, 0, 250], row_group_size=300)
    data = (tmp_path / "lf" / "data.parquet").read_bytes()
    total = 0
    for commit, size in zip(commits, [100, 1, 700, 0, 250], strict=True):
        total += size
        expected = TABLE.slice(0, total)
        assert commit.num_rows == total
        assert streamwrite.read_table(tmp_path / "lf", snapshot=commit.parquet_size).equals(
            expected
        )
        prefix = pa.BufferReader(data[: commit.parquet_size])
        assert pq.read_table(prefix, page_checksum_verification=True).equals(expected)
        kv = pq.ParquetFile(pa.BufferReader(data[: commit.parquet_size])).metadata.metadata
        assert int(kv[b"streamwrite.commit_seq"]) == commit.seq
    assert commits[2].num_row_groups - commits[1].num_row_groups == 3  # 700 rows, 300 per group
    assert streamwrite.read_table(tmp_path / "lf").equals(TABLE.slice(0, total))


def test_snapshots_list_every_commit_and_survive_reopen(tmp_path: Path) -> None:
    commits = _run(_build, tmp_path / "lf", [10, 20, 30])

    async def reopen() -> list[streamwrite.Commit]:
        async with await streamwrite.LiveFile.open(tmp_path / "lf") as lf:
            assert lf.recovery is not None and lf.recovery.describe()[-1] == "nothing to do"
            assert lf.last_commit == commits[-1]
            return lf.snapshots()

    snapshots = _run(reopen)
    assert [(s.seq, s.parquet_size, s.num_rows) for s in snapshots[1:]] == [
        (c.seq, c.parquet_size, c.num_rows) for c in commits
    ]
    assert (snapshots[0].seq, snapshots[0].num_rows) == (0, 0)


def test_snapshots_are_the_commits_appends_returned(tmp_path: Path) -> None:
    """One type: each version ``snapshots()`` lists equals the Commit its append returned,
    footer checksum included, before and after a reopen and a rollback."""

    async def scenario() -> None:
        async with await streamwrite.LiveFile.open(tmp_path / "lf", TABLE.schema) as lf:
            commits = [lf.last_commit] + [await lf.append(TABLE.slice(0, n)) for n in (5, 7)]
            assert lf.snapshots() == commits
            assert all(type(s) is streamwrite.Commit for s in lf.snapshots())
            assert all(c.footer_checksum is not None for c in commits)
        async with await streamwrite.LiveFile.open(tmp_path / "lf") as lf:
            assert lf.snapshots() == commits and lf.last_commit == commits[-1]
            assert await lf.rollback(commits[1].parquet_size) == commits[1]
            assert lf.snapshots() == commits[:2]

    _run(scenario)


def test_rebuilt_sidecar_is_byte_identical_to_the_one_written(tmp_path: Path) -> None:
    _run(_build, tmp_path / "lf", [10, 20, 30], bloom_filter_options={"order_id": True})
    pm = tmp_path / "lf" / "_pm"
    original = pm.read_bytes()
    pm.unlink()
    plan = streamwrite.live.file.recover(tmp_path / "lf", apply=True)
    assert plan.rebuilt_pm_reason == "_pm is missing"
    assert pm.read_bytes() == original


def test_footers_reuse_row_group_bytes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from streamwrite.format.thrift import codec as thrift

    encoded: list[str] = []
    real = thrift.Serialized.of.__func__  # type: ignore[attr-defined]

    def counting(cls, obj):  # type: ignore[no-untyped-def]
        encoded.append(type(obj).__name__)
        return real(cls, obj)

    monkeypatch.setattr(thrift.Serialized, "of", classmethod(counting))
    _run(_build, tmp_path / "lf", [5] * 6)
    assert encoded.count("RowGroup") == 6  # each row group encoded once, not once per footer
    assert FileWriter.resume  # reopening encodes the existing ones once more, no more


def test_schema_mismatch_and_missing_schema(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="needs a schema"):
        _run(streamwrite.LiveFile.open, tmp_path / "new")
    _run(_build, tmp_path / "lf", [5])

    async def wrong() -> None:
        async with await streamwrite.LiveFile.open(tmp_path / "lf") as lf:
            with pytest.raises(SchemaError):
                await lf.append(pa.table({"x": [1]}))
        with pytest.raises(ConfigError, match="has schema"):
            await streamwrite.LiveFile.open(tmp_path / "lf", pa.schema([("x", pa.int64())]))

    _run(wrong)


def test_a_second_writer_is_refused(tmp_path: Path) -> None:
    async def two() -> None:
        async with await streamwrite.LiveFile.open(tmp_path / "lf", TABLE.schema):
            with pytest.raises(StreamwriteError, match="open for writing elsewhere"):
                await streamwrite.LiveFile.open(tmp_path / "lf")

    _run(two)


def test_cli_inspect_and_recover_a_live_file(tmp_path: Path) -> None:
    commits = _run(_build, tmp_path / "lf", [10, 20])
    with (tmp_path / "lf" / "data.parquet").open("ab") as f:
        f.write(b"torn tail")
    cli = [sys.executable, "-m", "streamwrite.cli"]
    out = subprocess.run(
        [*cli, "inspect", str(tmp_path / "lf"), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    info = json.loads(out.stdout)
    assert info["live"]["uncommitted_tail_bytes"] == len(b"torn tail")
    assert [s["parquet_size"] for s in info["live"]["snapshots"][1:]] == [
        c.parquet_size for c in commits
    ]
    assert [f["commit_seq"] for f in info["live"]["footer_chain"]] == [2, 1, 0]
    dry = subprocess.run(
        [*cli, "recover", str(tmp_path / "lf")], capture_output=True, text=True, check=True
    )
    assert "torn tail of 9 bytes" in dry.stdout
    assert (tmp_path / "lf" / "data.parquet").stat().st_size == commits[-1].parquet_size + 9
    subprocess.run(
        [*cli, "recover", str(tmp_path / "lf"), "--apply"], capture_output=True, check=True
    )
    assert (tmp_path / "lf" / "data.parquet").stat().st_size == commits[-1].parquet_size
    verify = subprocess.run([*cli, "verify", str(tmp_path / "lf")], capture_output=True, text=True)
    assert verify.returncode == 0, verify.stdout
    assert (
        read_sidecar((tmp_path / "lf" / "_pm").read_bytes()).footers[0][1].parquet_file_size
        == commits[-1].parquet_size
    )


def test_rollback_restores_an_earlier_commit(tmp_path: Path) -> None:
    commits = _run(_build, tmp_path / "lf", [10, 20, 30])

    async def roll() -> streamwrite.Commit:
        async with await streamwrite.LiveFile.open(tmp_path / "lf") as lf:
            with pytest.raises(ConfigError, match="not a committed size"):
                await lf.rollback(commits[1].parquet_size + 1)
            back = await lf.rollback(commits[0].parquet_size)
            assert len(lf.snapshots()) == 2
            after = await lf.append(TABLE.slice(10, 5))
            assert after.num_rows == 15
            return back

    assert _run(roll) == commits[0]
    assert streamwrite.read_table(tmp_path / "lf").equals(TABLE.slice(0, 15))


def test_reopened_file_keeps_its_bloom_filter_columns(tmp_path: Path) -> None:
    _run(_build, tmp_path / "lf", [10], bloom_filter_options={"order_id": True})

    async def more() -> None:
        async with await streamwrite.LiveFile.open(tmp_path / "lf") as lf:
            await lf.append(TABLE.slice(10, 10))

    _run(more)
    md = streamwrite.ParquetFile(tmp_path / "lf").thrift_metadata
    order_id = TABLE.column_names.index("order_id")
    assert all(
        rg.columns[order_id].meta_data.bloom_filter_offset is not None for rg in md.row_groups
    )
