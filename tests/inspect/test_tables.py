"""``streamwrite.inspect`` on tables: the ``_txn`` record, descriptions, verification and the
compaction decision, read without the writer's lock (also while this process holds it)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import streamwrite
from streamwrite import inspect
from streamwrite.errors import ConfigError, CorruptFileError
from streamwrite.options import DEFAULT_ROW_GROUP_SIZE
from streamwrite.testing import reference_table

DAY_NS = 86_400 * 10**9


def _two_days(num_rows: int) -> pa.Table:
    table = reference_table(num_rows)
    ts = pc.cast(table["ts"], pa.int64()).to_numpy()
    ts = ts + (ts % 2) * DAY_NS
    return table.set_column(0, "ts", pa.array(ts, pa.timestamp("ns")))


OPTIONS: dict[str, Any] = {
    "timestamp": "ts",
    "partition_by": "day",
    "segment_row_groups": 2,
    "compaction_interval": None,
}


@pytest.fixture
def table_path(tmp_path: Path) -> Path:
    path = tmp_path / "ticks"
    data = _two_days(6_000)

    async def go() -> None:
        async with await streamwrite.open_table(path, data.schema, **OPTIONS) as table:
            for i in range(6):
                await table.append(data.slice(i * 1_000, 1_000), app_id="job", batch_id=i)

    anyio.run(go)
    return path


def _tree(path: Path) -> dict[str, tuple[int, int]]:
    found = {}
    for root, _, files in os.walk(path):
        for name in files:
            stat = (Path(root) / name).stat()
            found[str(Path(root, name).relative_to(path))] = (stat.st_size, stat.st_mtime_ns)
    return found


def test_read_table_record_lists_partitions_segments_and_batch_ids(table_path: Path) -> None:
    before = _tree(table_path)
    record = inspect.read_table_record(table_path)
    assert _tree(table_path) == before  # read-only, no _lock taken or made
    assert inspect.is_table(table_path) and not inspect.is_table(table_path.parent)
    snapshot = streamwrite.read_snapshot(table_path)
    assert record.version == snapshot.version
    assert tuple((s.path, s.committed_size) for s in record.segments) == snapshot.files
    assert [p.name for p in record.partitions] == sorted(p.name for p in record.partitions)
    assert len(record.partitions) == 2 and all(len(p.segments) >= 2 for p in record.partitions)
    assert all(s.uncommitted_bytes == 0 for s in record.segments)
    assert record.applied == {"job": 5} and record.retired == ()
    assert record.schema.equals(_two_days(1).schema)
    assert (record.timestamp, record.partition_by, record.writer_pids) == ("ts", "day", ())
    assert record.partition(record.partitions[1].name) == record.partitions[1]
    with pytest.raises(ConfigError, match="has no partition 'nope'"):
        record.partition("nope")
    with pytest.raises(FileNotFoundError):
        inspect.read_table_record(table_path.parent)


def test_the_record_names_this_process_while_it_holds_the_table(table_path: Path) -> None:
    async def go() -> tuple[int, ...] | None:
        async with await streamwrite.open_table(table_path, **OPTIONS):
            return inspect.read_table_record(table_path).writer_pids

    assert anyio.run(go) == (os.getpid(),)
    assert inspect.read_table_record(table_path).writer_pids == ()


def test_describe_table_reads_every_segment_and_reports_the_unreadable(table_path: Path) -> None:
    info = inspect.describe_table(table_path)
    assert info.num_rows == streamwrite.read_table(table_path).num_rows == 6_000
    assert [s.record for s in info.segments] == list(info.record.segments)
    assert all(s.info is not None and s.info.dead_bytes > 0 for s in info.segments)
    assert all(s.problem is None for s in info.segments)
    seen: list[str] = []

    def progress(items: Any, total: int, desc: str) -> Any:
        seen.append(f"{desc}:{total}")
        return iter(items)

    broken = info.segments[0].record
    shutil.rmtree(table_path / broken.partition / broken.name)
    again = inspect.describe_table(table_path, progress=progress)
    assert seen == [f"segments:{len(info.segments)}"]
    assert again.segments[0].info is None and again.segments[0].problem
    assert again.segments[0].record.file_size is None
    assert again.num_rows == 6_000 - info.segments[0].info.num_rows  # type: ignore[union-attr]


def test_verify_table_finds_damage_and_tells_a_crash_tail_from_a_writers(
    table_path: Path,
) -> None:
    report = inspect.verify_table(table_path)
    assert report.ok and report.notes == () and report.num_pages > 0
    record = inspect.read_table_record(table_path)
    last = record.segments[-1]
    with open(table_path / last.path / "data.parquet", "ab") as f:
        f.write(b"torn bytes of a crashed append")
    tail = f"{last.path}: data.parquet holds 30 bytes past its committed size {last.committed_size}"
    crashed = inspect.verify_table(table_path)
    assert not crashed.ok and crashed.problems[0].startswith(tail)

    async def while_open() -> inspect.Verification:
        # reopening cuts the tail: write it again while this process holds the table
        async with await streamwrite.open_table(table_path, **OPTIONS):
            with open(table_path / last.path / "data.parquet", "ab") as f:
                f.write(b"torn bytes of a crashed append")
            return inspect.verify_table(table_path)

    writing = anyio.run(while_open)
    assert writing.ok and writing.notes[0].startswith(tail)
    assert f"pid {os.getpid()}" in writing.notes[0]
    first = record.segments[0]
    data = bytearray((table_path / first.path / "data.parquet").read_bytes())
    data[first.committed_size // 3] ^= 0x10
    (table_path / first.path / "data.parquet").write_bytes(bytes(data))
    damaged = inspect.verify_table(table_path)
    assert any(p.startswith(f"{first.path}: ") for p in damaged.problems)


def test_compaction_status_is_what_compact_does(table_path: Path) -> None:
    policy = streamwrite.CompactionPolicy(target_row_group_rows=4_000, grace_seconds=0)
    before = _tree(table_path)
    status = inspect.compaction_status(table_path, policy)
    assert _tree(table_path) == before
    assert status.target_row_group_rows == 4_000
    assert "No process holds the table" in status.notes[1]
    planned = {s.partition: s.merge for s in status.partitions if s.compact}
    assert planned

    async def go() -> Any:
        async with await streamwrite.open_table(table_path, compaction=policy, **OPTIONS) as t:
            return await t.compact()

    done = {r.partition: r.merged for r in anyio.run(go)}
    assert done == planned
    one = inspect.read_table_record(table_path).partitions[0].name
    only = inspect.compaction_status(table_path, partition=one)
    assert [s.partition for s in only.partitions] == [one]
    assert only.target_row_group_rows == DEFAULT_ROW_GROUP_SIZE  # the policy names none
    with pytest.raises(ConfigError, match="has no partition"):
        inspect.compaction_status(table_path, partition="ts_day=1999-01-01")


def test_a_damaged_txn_is_a_corrupt_file(table_path: Path) -> None:
    (table_path / "_txn").write_bytes(b"{not json")
    for read in (inspect.read_table_record, inspect.describe_table, inspect.verify_table):
        with pytest.raises(CorruptFileError):
            read(table_path)


def test_the_readme_example(table_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(table_path.parent)
    streamwrite.write_table(reference_table(100), "trades.parquet")
    printed: list[tuple[Any, ...]] = []
    monkeypatch.setattr("builtins.print", lambda *args: printed.append(args))
    # -- the README's lines, verbatim --
    from streamwrite import inspect

    assert inspect.path_kind("ticks") is inspect.PathKind.TABLE
    record = inspect.read_table_record("ticks")  # the newest _txn, no lock taken
    print(record.version, record.applied, record.writer_pids)  # 6 {"job": 5} ()
    for segment in record.segments:
        print(segment.path, segment.committed_size, segment.uncommitted_bytes)
    report = inspect.verify_table("ticks")  # every page of every committed segment
    assert report.ok, report.problems
    for decision in inspect.compaction_status("ticks").partitions:
        print(decision.partition, decision.merge, decision.reasons)

    info = inspect.describe_file("trades.parquet")  # footer, schema, typed statistics
    ts = info.row_groups[0].columns[0]
    assert ts.metadata is not None and ts.metadata.statistics is not None
    print(ts.column, ts.metadata.codec, ts.metadata.statistics.min)  # a numpy.datetime64
    # -- end --
    assert printed[0] == (record.version, {"job": 5}, ())
    assert len(printed) == 1 + len(record.segments) + len(record.partitions) + 1
