"""Staged segments without Spark: ``Table.stage`` -> ``StagedBatch.write`` (in this process, as a
worker would) -> ``Table.adopt_staged``: what is adopted, what is refused before anything is
published, sealing, recovery of staging, encryption."""

from __future__ import annotations

import functools
import pickle
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.crypto import ExplicitKeys
from streamwrite.errors import ConfigError, CorruptFileError, StaleBatchError
from streamwrite.format.txn import TXN_FILE, decode_txn
from streamwrite.table.staged import STAGING_DIR, StagedSegment

SCHEMA = pa.schema(
    [("ts", pa.timestamp("us", tz="UTC")), ("value", pa.int64()), ("symbol", pa.string())]
)
START_US = 1_795_305_600 * 10**6  # 2026-11-22T00:00:00Z
DAY_US = 86_400 * 10**6
OPTIONS: dict[str, Any] = {
    "timestamp": "ts",
    "partition_by": "day",
    "compaction_interval": None,
    "commit_interval": None,
}
KEYS = {"kf": bytes(range(16)), "k1": bytes(range(16, 32))}


def rows(first: int, num_rows: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "ts": pa.array(START_US + rng.integers(0, 3 * DAY_US, num_rows), SCHEMA[0].type),
            "value": pa.array(np.arange(first, first + num_rows), pa.int64()),
            "symbol": pa.array(np.array(["a", "b", "c"])[np.arange(num_rows) % 3]),
        },
        schema=SCHEMA,
    )


def by_value(table: pa.Table) -> pa.Table:
    table = table.combine_chunks()
    return table.take(pc.sort_indices(table, [("value", "ascending")]))


def run(fn: Any, *args: Any) -> Any:
    return anyio.run(functools.partial(fn, *args))


async def _open(path: Path, **options: Any) -> streamwrite.Table:
    return await streamwrite.open_table(path, SCHEMA, **{**OPTIONS, **options})


def test_adopted_segments_are_published_once_sealed_and_readable(tmp_path: Path) -> None:
    path = tmp_path / "t"
    batch = rows(0, 3_000)

    async def main() -> None:
        table = await _open(path, row_group_size=400)
        await table.append(rows(10_000, 30), app_id="other", batch_id=0)
        staged = pickle.loads(pickle.dumps(table.stage("job", 3, commit_size=1)))
        first = staged.write(batch.to_batches(max_chunksize=250), "attempt-1")
        staged.write(batch.slice(0, 100).to_batches(), "attempt-2")  # a losing attempt
        assert {s.partition for s in first} == set(table.record.partitions)
        assert sum(s.num_rows for s in first) == batch.num_rows
        commit = await table.adopt_staged(first, app_id="job", batch_id=3)
        assert (commit.num_rows, commit.skipped) == (batch.num_rows, False)
        assert not (path / STAGING_DIR).exists()
        adopted = {p: s[-1].name for p, s in table.record.partitions.items()}
        # sealed: the next rows of a partition go to a new segment, not into an adopted one
        await table.append(rows(20_000, 30, seed=1), app_id="other", batch_id=1)
        for partition, segments in table.record.partitions.items():
            assert segments[-1].name != adopted[partition]
            assert [s.name for s in segments].index(adopted[partition]) == len(segments) - 2
        await table.close()

    run(main)
    record = decode_txn((path / TXN_FILE).read_bytes())
    assert record.applied == {"other": 1, "job": 3}
    expected = pa.concat_tables([rows(10_000, 30), batch, rows(20_000, 30, seed=1)])
    assert by_value(streamwrite.read_table(path)).equals(by_value(expected))
    segment = path / "ts_day=2026-11-22" / "seg-000001"
    metadata = pq.ParquetFile(segment / "data.parquet").metadata
    assert metadata.num_row_groups > 1  # one commit per row group (commit_size=1)
    assert pq.read_table(segment / "data.parquet").num_rows == metadata.num_rows > 400


def test_a_bad_report_publishes_nothing_and_the_table_stays_open(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def main() -> None:
        table = await _open(path)
        staged = table.stage("job", 0)
        good = staged.write([rows(0, 500)], "a")
        one = good[0]
        bad_reports: list[tuple[list[StagedSegment], type[Exception], str]] = [
            ([StagedSegment(one.partition, one.path, one.size + 1, one.footer_xxh64, 1)],
             CorruptFileError, "reported at"),
            ([StagedSegment(one.partition, one.path, one.size, 12345, 1)],
             CorruptFileError, "footer XXH64"),
            ([StagedSegment(one.partition, one.path.replace("/a/", "/zz/"), one.size, None, 1)],
             CorruptFileError, "do not share the table directory"),
            ([StagedSegment(one.partition, "_staging/elsewhere-0/a/" + one.partition, 1, None, 1)],
             ConfigError, "is not a partition directory"),
            ([StagedSegment("ts_day=2026-11-23", one.path, one.size, one.footer_xxh64, 1)],
             ConfigError, "is not a partition directory"),
            ([one, one], ConfigError, "reported twice"),
        ]  # fmt: skip
        for report, error, message in bad_reports:
            with pytest.raises(error, match=message):
                await table.adopt_staged(report, app_id="job", batch_id=0)
            assert table.version == 0 and table.is_open
        commit = await table.adopt_staged(good, app_id="job", batch_id=0)
        assert commit.num_rows == 500
        replay = await table.adopt_staged(good, app_id="job", batch_id=0)
        assert replay.skipped and table.version == commit.version
        await table.close()

    run(main)


def test_stale_ids_attempt_names_and_commit_size_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def main() -> None:
        table = await _open(path)
        await table.append(rows(0, 10), app_id="job", batch_id=5)
        staged = table.stage("job", 4)
        with pytest.raises(ConfigError, match="attempt name"):
            staged.write([rows(0, 10)], "../escape")
        report = staged.write([rows(100, 10)], "a")
        with pytest.raises(ConfigError, match="exists already"):
            staged.write([rows(100, 10)], "a")
        with pytest.raises(StaleBatchError, match="below the last committed batch id 5"):
            await table.adopt_staged(report, app_id="job", batch_id=4)
        skipped = await table.adopt_staged(report, app_id="job", batch_id=4, on_stale="skip")
        assert skipped.skipped and not (path / STAGING_DIR).exists()
        with pytest.raises(ConfigError, match="commit_size"):
            table.stage("job", 6, commit_size=0)
        assert staged.write([], "empty") == []
        await table.close()

    run(main)
    assert streamwrite.read_table(path).num_rows == 10


def test_opening_the_table_deletes_staging_a_crash_left(tmp_path: Path) -> None:
    path = tmp_path / "t"

    async def stage_and_crash() -> None:
        table = await _open(path)
        table.stage("job", 0).write([rows(0, 100)], "a")
        await table.close()  # never adopted: as if the driver died

    async def reopen() -> None:
        table = await streamwrite.open_table(path)
        await table.close()

    run(stage_and_crash)
    assert list((path / STAGING_DIR).rglob("data.parquet"))
    run(reopen)
    assert not (path / STAGING_DIR).exists()
    assert streamwrite.read_table(path).num_rows == 0


def test_an_encrypted_table_stages_encrypted_segments(tmp_path: Path) -> None:
    path = tmp_path / "t"
    encryption = streamwrite.FileEncryption(ExplicitKeys(KEYS, "kf", {"value": "k1"}))
    decryption = streamwrite.DecryptionConfig(ExplicitKeys(KEYS, "kf", {"value": "k1"}))
    batch = rows(0, 1_000)

    async def main() -> None:
        table = await _open(path, encryption=encryption)
        staged = pickle.loads(pickle.dumps(table.stage("job", 0)))
        report = staged.write([batch], "a")
        await table.adopt_staged(report, app_id="job", batch_id=0)
        await table.append(rows(5_000, 10), app_id="job", batch_id=1)
        await table.close()

    run(main)
    with pytest.raises(streamwrite.EncryptionError):
        streamwrite.read_table(path)
    got = streamwrite.read_table(path, decryption=decryption)
    assert by_value(got).equals(by_value(pa.concat_tables([batch, rows(5_000, 10)])))
    with pytest.raises(Exception, match=r"(?i)encrypt|decrypt|magic|footer"):
        pq.read_table(next(path.glob("ts_day=*/seg-000000/data.parquet")))


def test_rows_spread_over_many_partitions_wait_in_bounded_memory(tmp_path: Path) -> None:
    """Hourly partitions, every piece touching each of 72 hours: rows waiting for a row group
    stay under twice ``row_group_size`` (smaller row groups are cut), and all are written."""
    path = tmp_path / "t"
    pieces = [rows(k * 720, 720, seed=k) for k in range(10)]

    async def main() -> None:
        table = await _open(path, partition_by="hour", row_group_size=1_000)
        report = table.stage("job", 0).write(pieces, "a")
        assert len(report) == 72
        await table.adopt_staged(report, app_id="job", batch_id=0)
        await table.close()

    run(main)
    assert by_value(streamwrite.read_table(path)).equals(by_value(pa.concat_tables(pieces)))
    row_groups = [
        pq.ParquetFile(f).metadata.num_row_groups for f in path.glob("*/seg-*/data.parquet")
    ]
    assert len(row_groups) == 72 and max(row_groups) > 1  # cut early: memory stayed bounded
