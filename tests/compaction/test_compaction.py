"""Compaction: the policy's decisions, merging and raw copy, encrypted tables, pinned readers
and the grace period, compaction under ingest, third-party readers, the CLI."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.cli import main as cli_main
from streamwrite.compaction.policy import CompactionPolicy, SegmentInfo, plan_partition
from streamwrite.crypto import ExplicitKeys
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.errors import ConfigError
from streamwrite.format.txn import TXN_FILE, UNPARTITIONED, Retired, TxnRecord, decode_txn
from streamwrite.reader.file import ParquetFile
from streamwrite.reader.verify import verify_file
from streamwrite.table.api import open_table
from streamwrite.table.recovery import sweep_retired
from streamwrite.table.state import segment_data_path
from streamwrite.testing import reference_table

TABLE = reference_table(60_000)
DAY_NS = 86_400 * 10**9
KEYS = {"kf": bytes(range(16)), "k1": bytes(range(16, 32))}
ROOT = Path(__file__).resolve().parents[2]


def _run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return anyio.run(functools.partial(fn, *args, **kwargs))


def _record(path: Path) -> TxnRecord:
    return decode_txn((path / TXN_FILE).read_bytes())


def _two_days(table: pa.Table) -> pa.Table:
    """Rows alternate between two days (so each commit touches both partitions)."""
    ts = pc.cast(table["ts"], pa.int64()).to_numpy() + (np.arange(table.num_rows) % 2) * DAY_NS
    return table.set_column(0, "ts", pa.array(ts, pa.timestamp("ns")))


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by([("order_id", "ascending")])


def _info(name: str, rows: list[int], dead: int = 0, size: int = 1000) -> SegmentInfo:
    return SegmentInfo(name, size, tuple(rows), dead, False)


# -- the policy --------------------------------------------------------------------------------


def test_policy_counts_small_row_groups_of_eligible_segments_only() -> None:
    policy = CompactionPolicy(min_small_row_groups=4)
    segments = (_info("seg-000000", [10, 10]), _info("seg-000001", [10]), _info("seg-000002", [9]))
    status = plan_partition("p", segments, 2, 100, policy)
    assert not status.compact and "3 small row groups" in status.reasons[0]
    status = plan_partition("p", segments, 3, 100, policy)
    assert status.compact and status.merge == ("seg-000000", "seg-000001", "seg-000002")
    assert "4 small row groups (< 0.5 x 100 rows)" in status.reasons[0]


def test_policy_merges_from_the_first_to_the_last_segment_that_needs_work() -> None:
    policy = CompactionPolicy(min_small_row_groups=2)
    segments = (
        _info("seg-000000", [100, 100]),  # at the target: left alone
        _info("seg-000001", [10]),
        _info("seg-000002", [100]),  # between two that need work: copied raw
        _info("seg-000003", [20]),
        _info("seg-000004", [100]),
    )
    status = plan_partition("p", segments, 5, 100, policy)
    assert status.merge == ("seg-000001", "seg-000002", "seg-000003")


def test_policy_dead_bytes_and_row_group_limits() -> None:
    policy = CompactionPolicy(dead_ratio=0.5, dead_bytes=5000, max_row_groups=3)
    dead = (_info("seg-000000", [100], dead=600, size=1000),)
    status = plan_partition("p", dead, 1, 100, policy)
    assert status.compact and "dead bytes 60% of the file" in status.reasons[0]
    many = (_info("seg-000000", [100] * 4, dead=6000, size=100_000),)
    status = plan_partition("p", many, 1, 100, policy)
    assert status.compact and any("6,000 dead bytes" in r for r in status.reasons)
    assert any("4 row groups" in r for r in status.reasons)
    fine = (_info("seg-000000", [100, 100]),)
    status = plan_partition("p", fine, 1, 100, policy)
    assert not status.compact and status.reasons[0].startswith("nothing to do")
    assert not plan_partition("p", fine, 1, 100, policy, force=True).compact
    tail = (_info("seg-000000", [100, 10]),)  # one small row group at the end: stays so
    assert not plan_partition("p", tail, 1, 100, policy, force=True).compact
    forced = plan_partition("p", (_info("seg-000000", [10, 10]),), 1, 100, policy, force=True)
    assert forced.compact and forced.reasons == ("compact() was asked for",)


def test_policy_checks_its_values() -> None:
    for bad in (
        {"dead_ratio": 0},
        {"small_fraction": 1.5},
        {"max_row_groups": 40_000},
        {"grace_seconds": -1},
        {"idle_seconds": float("inf")},
    ):
        with pytest.raises(ConfigError):
            CompactionPolicy(**bad)


# -- compacting tables -------------------------------------------------------------------------


def _small_commits(path: Path, table: pa.Table, num_commits: int, **options: Any) -> list[pa.Table]:
    """A table of ``num_commits`` idempotent commits; returns the batches."""
    size = table.num_rows // num_commits
    batches = [table.slice(i * size, size) for i in range(num_commits)]

    async def go() -> None:
        async with await open_table(path, table.schema, **options) as t:
            for i, batch in enumerate(batches):
                await t.append(batch, app_id="a", batch_id=i)

    _run(go)
    return batches


def test_compaction_merges_small_commits_and_readers_agree(tmp_path: Path) -> None:
    path = tmp_path / "t"
    data = _two_days(TABLE.slice(0, 40_000))
    options: dict[str, Any] = {
        "timestamp": "ts",
        "partition_by": "day",
        "segment_row_groups": 4,
        "compaction_interval": None,
        "compaction": CompactionPolicy(grace_seconds=0, target_row_group_rows=15_000),
    }
    _small_commits(path, data, 20, **options)
    before = _record(path)
    assert all(len(segments) == 5 for segments in before.partitions.values())

    async def go() -> Any:
        async with await open_table(path, **options) as t:
            statuses = await t.compaction_status()
            assert all(s.eligible == 4 for s in statuses)  # the newest is not idle yet
            results = await t.compact()
            await t.append(data.slice(0, 10), app_id="a", batch_id=20)
            return results

    results = _run(go)
    assert [r.partition for r in results] == sorted(before.partitions)
    after = _record(path)
    for result in results:
        assert result.merged == tuple(s.name for s in before.partitions[result.partition])
        assert result.num_rows == 20_000 and result.raw_row_groups == 0
        segments = after.partitions[result.partition]
        assert segments[0] == result.segment and result.segment.name == "seg-000005"
        merged = pq.ParquetFile(path / result.partition / result.segment.name / "data.parquet")
        rows = [merged.metadata.row_group(i).num_rows for i in range(merged.num_row_groups)]
        assert rows == [15_000, 5_000]
        report = verify_file(path / result.partition / result.segment.name)
        assert report.ok, report.problems
    assert after.retired == ()  # grace 0: swept at once
    on_disk = sorted(str(p.relative_to(path)) for p in path.glob("*/seg-*"))
    assert on_disk == sorted(name for name, _ in after.files())
    got = streamwrite.read_table(path)
    want = pa.concat_tables([data, data.slice(0, 10)])
    assert _sorted(got).equals(_sorted(want))
    for partition, segments in after.partitions.items():  # row order within a partition kept
        part = pa.concat_tables(
            [streamwrite.read_table(path / partition / s.name) for s in segments]
        )
        days = pc.cast(data["ts"], pa.int64()).to_numpy() // DAY_NS
        mine = data.filter(pa.array(days == days[0] + (partition != min(after.partitions))))
        assert part.slice(0, mine.num_rows).equals(mine)
    _third_party_read(tmp_path, after, path, got)


def _third_party_read(tmp_path: Path, record: TxnRecord, path: Path, expected: pa.Table) -> None:
    """pyarrow, DuckDB and polars (in a subprocess) read every segment's committed prefix."""
    check = tmp_path / "check"
    check.mkdir()
    for name, size in record.files():
        with open(path / name / "data.parquet", "rb") as f:
            data = f.read(size)
        target = check / f"{name.replace('/', '_')}.parquet"
        target.write_bytes(data)
        table = streamwrite.read_table(target)
        arrow_path = str(target.with_suffix(".arrow"))
        with pa.OSFile(arrow_path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
    script = ROOT / "tests" / "interop" / "read_check.py"
    out = subprocess.run(
        [sys.executable, str(script), str(check), "pyarrow", "duckdb", "polars"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(lines) == 3 * len(record.files()), out.stderr
    assert all(not line["problems"] for line in lines), lines
    total = sum(pq.read_metadata(p).num_rows for p in check.glob("*.parquet"))
    assert total == expected.num_rows


def test_row_groups_at_the_target_size_are_copied_raw(tmp_path: Path) -> None:
    path = tmp_path / "t"
    options: dict[str, Any] = {
        "segment_row_groups": 2,
        "row_group_size": 10_000,
        "bloom_filter_options": {"order_id": True},
        "compaction_interval": None,
        "compaction": CompactionPolicy(grace_seconds=3600),
    }
    # 2 small commits, 5 of 10k rows (full row groups), 1 small: segments of 2 row groups
    # [1k, 1k] [10k, 10k] [10k, 10k] [10k, 1k]. The small pair joins the first full row
    # group (12k rows, re-encoded), the other four full ones are copied raw.
    sizes = [1000, 1000, 10_000, 10_000, 10_000, 10_000, 10_000, 1000]
    starts = np.cumsum([0, *sizes])
    batches = [TABLE.slice(int(start), size) for start, size in zip(starts, sizes, strict=False)]

    async def go() -> Any:
        async with await open_table(path, TABLE.schema, **options) as t:
            for i, batch in enumerate(batches):
                await t.append(batch, app_id="a", batch_id=i)
            return await t.compact()

    (result,) = _run(go)
    assert result.merged == ("seg-000000", "seg-000001", "seg-000002", "seg-000003")
    assert result.raw_row_groups == 4 and result.reencoded_row_groups == 2
    merged = path / UNPARTITIONED / result.segment.name
    report = verify_file(merged)
    assert report.ok, report.problems
    with (
        ParquetFile(merged) as pf,
        ParquetFile(
            segment_data_path(path / UNPARTITIONED / "seg-000002")  # retired: _data.retired
        ) as source,
    ):
        assert [rg.num_rows for rg in pf.thrift_metadata.row_groups or []] == [
            12_000, 10_000, 10_000, 10_000, 10_000, 1000,
        ]  # fmt: skip
        for column in range(len(TABLE.schema)):  # source row group 1 is merged row group 3
            start, size = source._chunk_range(1, source._parquet_schema.columns[column])
            new_start, new_size = pf._chunk_range(3, pf._parquet_schema.columns[column])
            assert new_start != start and new_size == size
            assert bytes(source.read_bytes(start, size)) == bytes(pf.read_bytes(new_start, size))
    assert streamwrite.read_table(path).equals(TABLE.slice(0, 53_000))
    assert len(_record(path).retired) == 4  # kept for other readers: grace 3600 s
    assert all((path / r.path).exists() for r in _record(path).retired)


def test_sort_by_timestamp_reencodes_in_timestamp_order(tmp_path: Path) -> None:
    path = tmp_path / "t"
    shuffled = TABLE.slice(0, 8_000).take(np.random.default_rng(1).permutation(8_000))
    policy = CompactionPolicy(sort_by_timestamp=True, grace_seconds=0)
    _small_commits(
        path, shuffled, 8, timestamp="ts", segment_row_groups=3, compaction=policy,
        compaction_interval=None,
    )  # fmt: skip

    async def go() -> Any:
        t = await open_table(path)  # the policy is not stored with the table: pass it
        try:
            return await t.compact(policy=policy)
        finally:
            await t.close()

    (result,) = _run(go)
    assert result.raw_row_groups == 0 and result.num_rows == 8_000
    got = streamwrite.read_table(path)
    assert got.equals(shuffled.sort_by([("ts", "ascending")]))


def test_encrypted_tables_are_reencrypted_under_the_new_segment_keys(tmp_path: Path) -> None:
    path = tmp_path / "t"

    def encryption() -> FileEncryption:
        return FileEncryption(ExplicitKeys(KEYS, "kf", {"price": "k1"}))

    options: dict[str, Any] = {
        "segment_row_groups": 2,
        "row_group_size": 2_000,
        "encryption": encryption(),
        "compaction_interval": None,
        "compaction": CompactionPolicy(grace_seconds=0, target_row_group_rows=6_000),
    }
    _small_commits(path, TABLE.slice(0, 12_000), 6, **options)

    async def go() -> Any:
        async with await open_table(path, **{**options, "encryption": encryption()}) as t:
            return await t.compact()

    (result,) = _run(go)
    assert result.raw_row_groups == 0 and result.reencoded_row_groups == 2
    decryption = DecryptionConfig(ExplicitKeys(KEYS, "kf", {"price": "k1"}))
    assert streamwrite.read_table(path, decryption=decryption).equals(TABLE.slice(0, 12_000))
    with ParquetFile(path / UNPARTITIONED / result.segment.name, decryption=decryption) as pf:
        assert [rg.ordinal for rg in pf.thrift_metadata.row_groups or []] == [0, 1]
    report = verify_file(path / UNPARTITIONED / result.segment.name, decryption=decryption)
    assert report.ok, report.problems
    with pytest.raises(streamwrite.EncryptionError):
        streamwrite.read_table(path)


def test_pinned_snapshots_survive_compaction_until_released(tmp_path: Path) -> None:
    path = tmp_path / "t"
    options: dict[str, Any] = {
        "segment_row_groups": 2,
        "compaction_interval": None,
        "compaction": CompactionPolicy(grace_seconds=0),
    }
    _small_commits(path, TABLE.slice(0, 6_000), 6, **options)

    async def go() -> None:
        async with await open_table(path, **options) as t:
            pinned = t.snapshot()
            old = set(pinned.files)
            (result,) = await t.compact()
            assert {r.path for r in t.record.retired} == {name for name, _ in old}
            assert all((path / name).exists() for name, _ in old)  # pinned: kept
            assert pinned.read().equals(TABLE.slice(0, 6_000))
            assert t.snapshot().files == (
                (f"{UNPARTITIONED}/{result.segment.name}", result.segment.size),
            )
            await t.append(TABLE.slice(6_000, 100), app_id="a", batch_id=6)
            assert await t.sweep_retired() == []
            pinned.release()
            deleted = await t.sweep_retired()
            assert sorted(deleted) == sorted(name for name, _ in old)
            assert not any((path / name).exists() for name, _ in old)

    _run(go)
    assert streamwrite.read_table(path).equals(TABLE.slice(0, 6_100))


def test_grace_period_counts_from_retirement(tmp_path: Path) -> None:
    record = TxnRecord(retired=(Retired("d/seg-000000", 100.0), Retired("d/seg-000001", 150.0)))
    for name in ("seg-000000", "seg-000001"):
        (tmp_path / "d" / name).mkdir(parents=True)
    assert sweep_retired(tmp_path, record, 60.0, lambda p: False, now=161.0) == ["d/seg-000000"]
    assert sweep_retired(tmp_path, record, 60.0, lambda p: True, now=1000.0) == []
    assert (tmp_path / "d" / "seg-000001").exists()
    assert sweep_retired(tmp_path, record, 60.0, lambda p: False, now=210.0) == [
        "d/seg-000000",
        "d/seg-000001",
    ]
    assert not (tmp_path / "d" / "seg-000001").exists()


def test_background_compaction_while_ingesting_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t"
    policy = CompactionPolicy(
        min_small_row_groups=3, idle_seconds=0, grace_seconds=0, target_row_group_rows=4_000
    )
    batches = [_two_days(TABLE.slice(i * 1000, 1000)) for i in range(40)]

    async def go() -> Any:
        async with await open_table(
            path,
            TABLE.schema,
            timestamp="ts",
            partition_by="day",
            segment_row_groups=2,
            compaction=policy,
            compaction_interval=0.02,
        ) as t:
            for i, batch in enumerate(batches):
                await t.append(batch, app_id="a", batch_id=i)
                await anyio.sleep(0.01)
            return t.metrics, t.last_compaction_error

    metrics, error = _run(go)
    assert error is None and metrics.compactions >= 2, metrics
    got = streamwrite.read_table(path)
    assert _sorted(got).equals(_sorted(pa.concat_tables(batches)))
    assert _record(path).applied == {"a": 39}


def test_cli_compact_shows_the_decision_and_compacts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t"
    _small_commits(path, TABLE.slice(0, 6_000), 6, segment_row_groups=2, compaction_interval=None)
    assert cli_main(["compact", str(path), "--status"]) == 0
    assert "all: compact seg-000000, seg-000001" in capsys.readouterr().out
    assert cli_main(["compact", str(path), "--grace", "0"]) == 0
    out = capsys.readouterr().out
    assert "all: 3 segment(s)" in out and "6,000 rows" in out
    assert streamwrite.read_table(path).equals(TABLE.slice(0, 6_000))
    assert cli_main(["compact", str(path)]) == 0
    assert "nothing to compact" in capsys.readouterr().out
    assert cli_main(["compact", str(path), "--partition", "nope"]) == 2
    assert "no partition 'nope'" in capsys.readouterr().err


def test_a_policy_given_to_compact_sets_its_grace_period(tmp_path: Path) -> None:
    path = tmp_path / "t"
    options: dict[str, Any] = {
        "segment_row_groups": 1,
        "compaction_interval": None,
        "compaction": CompactionPolicy(grace_seconds=3600),
    }
    _small_commits(path, TABLE.slice(0, 3_000), 3, **options)

    async def go() -> None:
        async with await open_table(path, **options) as t:
            (result,) = await t.compact(policy=CompactionPolicy(grace_seconds=0))
            assert t.record.retired == ()
            assert not any((path / UNPARTITIONED / name).exists() for name in result.merged)

    _run(go)


def test_close_abandons_a_background_compaction_in_flight(tmp_path: Path) -> None:
    path = tmp_path / "t"
    data = TABLE.slice(0, 40_000)
    _small_commits(path, data, 40, segment_row_groups=4, compaction_interval=None)
    policy = CompactionPolicy(idle_seconds=0, min_small_row_groups=2, grace_seconds=0)

    async def go() -> int:
        async with await open_table(path, compaction=policy, compaction_interval=0.01) as t:
            with anyio.fail_after(30):
                while not t.compaction_lock.locked():
                    await anyio.sleep(0.001)
            # close lands at some point of the merge (not synchronised on purpose): both
            # outcomes, merged or abandoned, are checked below
            await anyio.sleep(0.05)
        return t.metrics.compactions

    compactions = _run(go)
    record = _record(path)
    assert len(record.partitions[UNPARTITIONED]) == (1 if compactions else 10)  # new or old version
    on_disk = sorted(p.name for p in (path / UNPARTITIONED).iterdir())
    assert on_disk == [s.name for s in record.partitions[UNPARTITIONED]]  # no unpublished segment
    assert streamwrite.read_table(path).equals(data)
