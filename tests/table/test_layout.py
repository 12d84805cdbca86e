"""The table directory layout: Hive-style partitions, retired and pending data files, the
migration of format-2 tables, and typed errors for segments that are gone."""

from __future__ import annotations

import functools
import json
import shutil
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.arrow.partitioning import split_by_partition
from streamwrite.arrow.schema import encode_arrow_schema
from streamwrite.compaction.policy import CompactionPolicy
from streamwrite.errors import ConfigError, CorruptFileError
from streamwrite.format.txn import (
    DATA_FILE,
    FORMAT_VERSION,
    RETIRED_DATA_FILE,
    TXN_FILE,
    TxnRecord,
    _body,
    decode_txn,
    encode_txn,
)
from streamwrite.table.api import open_table
from streamwrite.table.state import read_snapshot, segment_data_path
from streamwrite.testing import reference_table

DAY_NS = 86_400 * 10**9
START_NS = 1_795_305_600 * 10**9  # 2026-11-22T00:00:00Z
LONG_GRACE = CompactionPolicy(
    grace_seconds=3600, min_small_row_groups=2, target_row_group_rows=1000
)
OPTIONS: dict[str, Any] = {
    "segment_row_groups": 2,
    "row_group_size": 100,
    "compaction": LONG_GRACE,
    "compaction_interval": None,
}


def _run(fn: Any, *args: Any) -> Any:
    return anyio.run(functools.partial(fn, *args))


def _rows(k: int, num_rows: int = 250) -> pa.Table:
    """Rows over three days from 2026-11-22 (unique ``order_id``)."""
    rows = reference_table(num_rows, seed=k, start_row=k * num_rows)
    ts = START_NS + np.random.default_rng(k).integers(0, 3 * DAY_NS, num_rows)
    return rows.set_column(0, "ts", pa.array(ts, pa.timestamp("ns")))


def _sorted(table: pa.Table) -> pa.Table:
    return table.take(pc.sort_indices(table, [("order_id", "ascending")]))


SCHEMA = _rows(0).schema


async def _build(path: Path, num_batches: int = 4, compact: bool = False) -> None:
    table = await open_table(path, SCHEMA, timestamp="ts", partition_by="day", **OPTIONS)
    try:
        for k in range(num_batches):
            await table.append(_rows(k), app_id="a", batch_id=k)
        if compact:
            assert await table.compact()
    finally:
        await table.close()


def _expected(num_batches: int = 4) -> pa.Table:
    return _sorted(pa.concat_tables([_rows(k) for k in range(num_batches)]))


def _txn(path: Path) -> TxnRecord:
    return decode_txn((path / TXN_FILE).read_bytes())


def _engine_rows(path: Path) -> pa.Table:
    """``pq.read_table`` of the table directory without its partition column, sorted; checks
    the partition column holds each row's day."""
    rows = pq.read_table(path)
    days = pc.strftime(rows.column("ts"), format="%Y-%m-%d")
    assert rows.column("ts_day").cast(pa.string()).equals(days)
    return _sorted(rows.drop_columns(["ts_day"]))


# -- layout ------------------------------------------------------------------------------


def test_partition_names_are_hive_style() -> None:
    table = _rows(0, 10)
    names = [name for name, _ in split_by_partition(table, "ts", "day")]
    assert sorted(names) == ["ts_day=2026-11-22", "ts_day=2026-11-23", "ts_day=2026-11-24"]
    hours = [name for name, _ in split_by_partition(table.slice(0, 1), "ts", "hour")]
    months = [name for name, _ in split_by_partition(table.slice(0, 1), "ts", "month")]
    assert hours[0].startswith("ts_hour=2026-11-2") and len(hours[0]) == len("ts_hour=") + 13
    assert months == ["ts_month=2026-11"]
    assert [name for name, _ in split_by_partition(table, None, None)] == ["sw_partition=all"]


def test_a_column_named_like_the_partition_column_is_refused(tmp_path: Path) -> None:
    clash = SCHEMA.append(pa.field("TS_Day", pa.string()))
    with pytest.raises(ConfigError, match=r"'TS_Day' has the name of the partition column"):
        _run(
            functools.partial(open_table, tmp_path / "a", clash, timestamp="ts", partition_by="day")
        )
    assert not (tmp_path / "a").exists()
    renamed = pa.schema([SCHEMA.field(0).with_name("_ts"), *list(SCHEMA)[1:]])
    with pytest.raises(ConfigError, match="letters, digits"):
        _run(
            functools.partial(
                open_table, tmp_path / "b", renamed, timestamp="_ts", partition_by="day"
            )
        )

    async def other_period() -> None:  # ts_day is a fine column of a table partitioned by hour
        table = await open_table(tmp_path / "c", clash, timestamp="ts", partition_by="hour")
        await table.close()

    _run(other_period)


def test_compaction_retires_data_out_of_every_engines_reach(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _run(_build, path)

    async def go() -> None:
        table = await open_table(path, **OPTIONS)
        try:
            pinned = table.snapshot()
            unpinned = read_snapshot(path)
            results = await table.compact()
            assert results
            retired = {r.path for r in table.record.retired}
            assert retired == {f"{r.partition}/{name}" for r in results for name in r.merged}
            for name in retired:  # in place, renamed: pyarrow, Spark, DuckDB, polars skip it
                assert sorted(p.name for p in (path / name).iterdir()) == [
                    RETIRED_DATA_FILE,
                    "_pm",
                ]
            # pinned (and unpinned, within the grace period) readers of before still read
            assert _sorted(pinned.read()).equals(_expected())
            assert _sorted(unpinned.read()).equals(_expected())
            files = dict(zip((n for n, _ in pinned.files), pinned.data_files(), strict=True))
            for name, data in files.items():
                assert data == path / name / (RETIRED_DATA_FILE if name in retired else DATA_FILE)
                with open(segment_data_path(path / name), "rb") as f:
                    assert f.read(4) == b"PAR1"
            pinned.release()
        finally:
            await table.close()

    _run(go)
    assert _engine_rows(path).equals(_expected())
    assert _sorted(streamwrite.read_table(path)).equals(_expected())


def test_compact_takes_a_partition_by_name_or_value(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _run(_build, path)

    async def go() -> None:
        table = await open_table(path, **OPTIONS)
        try:
            (by_value,) = await table.compact("2026-11-22")
            (by_name,) = await table.compact("ts_day=2026-11-23")
            assert (by_value.partition, by_name.partition) == (
                "ts_day=2026-11-22",
                "ts_day=2026-11-23",
            )
            with pytest.raises(ConfigError, match=r"no partition '2026-12-01'.*ts_day=2026-11-22"):
                await table.compact("2026-12-01")
        finally:
            await table.close()

    _run(go)


def test_a_missing_segment_is_a_typed_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _run(_build, path)
    name, _ = _txn(path).files()[1]
    shutil.rmtree(path / name)
    with pytest.raises(CorruptFileError, match=f"segment '.*{name}'.*has no data file"):
        streamwrite.read_table(path)
    with pytest.raises(CorruptFileError, match=name):
        segment_data_path(path / name)
    _run(_build, tmp_path / "u")
    other, _ = _txn(tmp_path / "u").files()[2]
    (tmp_path / "u" / other / DATA_FILE).unlink()
    with pytest.raises(CorruptFileError, match=other):
        read_snapshot(tmp_path / "u").read(columns=["ts"])


def test_opening_truncates_a_torn_tail_engines_would_read(tmp_path: Path) -> None:
    """An append killed after writing its footer to ``data.parquet`` but before its ``_pm``
    commit leaves a tail that ends like a newer commit (simulated: an append, then the ``_pm``
    of before put back): opening the table truncates it, so engines read the committed rows."""
    path = tmp_path / "t"
    _run(_build, path)
    name, size = _txn(path).files()[0]  # not a newest segment: the table does not open it
    pm = (path / name / "_pm").read_bytes()

    async def append_past_the_commit() -> None:
        async with await streamwrite.LiveFile.open(path / name) as live:
            await live.append(_rows(9).slice(0, 5))

    _run(append_past_the_commit)
    (path / name / "_pm").write_bytes(pm)
    assert (path / name / DATA_FILE).stat().st_size > size
    assert pq.read_table(path).num_rows == 1005  # what an engine sees of the torn tail

    async def reopen() -> None:
        table = await open_table(path, **OPTIONS)
        await table.close()

    _run(reopen)
    assert (path / name / DATA_FILE).stat().st_size == size
    assert _engine_rows(path).equals(_expected())


# -- format 2 ----------------------------------------------------------------------------


def _write_format_2(path: Path, record: TxnRecord) -> None:
    """``_txn`` exactly as format 2 wrote it (its codec is this one with version 2)."""
    body = _body(record)
    body["format_version"] = 2
    body["crc32"] = zlib.crc32(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())
    (path / TXN_FILE).write_bytes(json.dumps(body, sort_keys=True, indent=1).encode() + b"\n")


def _make_format_2(path: Path) -> dict[str, str]:
    """Turn a format-3 table into the format-2 table it would have been: partition directories
    named by value, retired segments' data in ``data.parquet``.

    Returns:
        format-3 partition name -> format-2 name.
    """
    record = _txn(path)
    names = {name: name.split("=", 1)[1] for name in record.partitions}
    for retired in record.retired:
        segment = path / retired.path
        (segment / RETIRED_DATA_FILE).rename(segment / DATA_FILE)
    for new, old in names.items():
        (path / new).rename(path / old)
    _write_format_2(path, record.renamed(names))
    return names


def test_format_2_tables_are_read_as_they_are(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _run(_build, path)
    names = _make_format_2(path)
    before = sorted(p.name for p in path.iterdir())
    record = _txn(path)
    assert record.format_version == 2 and set(record.partitions) == set(names.values())
    with pytest.raises(ValueError, match="migrate"):
        encode_txn(record)
    assert _sorted(streamwrite.read_table(path)).equals(_expected())
    assert sorted(p.name for p in path.iterdir()) == before  # a reader changes nothing


@pytest.mark.parametrize("done_by_hand", [0, 1, 3], ids=["none", "one", "all"])
def test_opening_migrates_a_format_2_table(tmp_path: Path, done_by_hand: int) -> None:
    """A crash during the migration (simulated: some partition directories renamed by hand,
    the ``_txn`` still format 2) is finished by the next open."""
    path = tmp_path / "t"
    _run(_build, path, 4, True)  # retired segments too
    names = _make_format_2(path)
    assert _txn(path).retired
    for new, old in sorted(names.items())[:done_by_hand]:
        (path / old).rename(path / new)

    async def reopen_and_append() -> None:
        table = await open_table(path, **OPTIONS)
        try:
            assert table.record.format_version == FORMAT_VERSION
            await table.append(_rows(4), app_id="a", batch_id=4)
        finally:
            await table.close()

    _run(reopen_and_append)
    record = _txn(path)
    assert record.format_version == FORMAT_VERSION
    assert set(record.partitions) == set(names)
    assert {p.name for p in path.iterdir() if p.is_dir()} == set(names)
    for retired in record.retired:
        assert retired.path.split("/")[0] in names
        assert (path / retired.path / RETIRED_DATA_FILE).is_file()
    assert _sorted(streamwrite.read_table(path)).equals(_expected(5))
    assert _engine_rows(path).equals(_expected(5))


def test_a_format_2_table_that_cannot_migrate_is_refused_and_stays_readable(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t"
    _run(_build, path)
    _make_format_2(path)
    record = _txn(path)
    clash = SCHEMA.append(pa.field("ts_day", pa.int32()))
    _write_format_2(path, replace(record, schema=encode_arrow_schema(clash)))
    with pytest.raises(ConfigError, match=r"cannot be migrated.*'ts_day'.*new table"):
        _run(open_table, path)
    assert _txn(path).format_version == 2
    assert streamwrite.read_table(path).num_rows == 1000


def test_a_partition_under_both_names_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _run(_build, path)
    names = _make_format_2(path)
    new, _ = sorted(names.items())[0]
    (path / new).mkdir()
    with pytest.raises(CorruptFileError, match="under both its old name and its new one"):
        _run(open_table, path)
