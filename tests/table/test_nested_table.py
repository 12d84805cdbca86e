"""Tables with nested columns: partitions, reads (with struct-field filters that prune),
schema evolution (a nested column added; older segments read it as nulls; a changed nested
type is refused), and segments every reader takes (pyarrow reads each committed segment)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.errors import ConfigError, SchemaError
from streamwrite.table.api import open_table
from streamwrite.table.state import segment_data_path
from tests.live._nested_rows import NESTED_SCHEMA, nested_rows


def _run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return anyio.run(functools.partial(fn, *args, **kwargs))


OPTIONS: dict[str, Any] = {
    "timestamp": "ts",
    "partition_by": "day",
    "segment_row_groups": 3,
    "row_group_size": 40,
    "compaction_interval": None,
    "compression": {"s": "snappy"},
}


async def _append(path: Path, sizes: list[int], start: int = 0, **options: Any) -> int:
    async with await open_table(path, NESTED_SCHEMA, **{**OPTIONS, **options}) as table:
        for i, size in enumerate(sizes):
            await table.append(nested_rows(start, size), app_id="t", batch_id=start + i)
            start += size
    return start


def test_partitioned_nested_table_reads_back_and_pyarrow_reads_its_segments(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t"
    total = _run(_append, path, [5, 60, 1, 130, 24, 90])  # 310 hourly rows: 13 days
    expected = nested_rows(0, total)
    got = streamwrite.read_table(path)
    assert got.sort_by("id").equals(expected)
    snapshot = streamwrite.read_snapshot(str(path))
    pieces = []
    for name, size in snapshot.files:  # each committed segment, as pyarrow reads a file
        data = segment_data_path(path / name).read_bytes()[:size]
        pieces.append(pq.read_table(pa.BufferReader(data), page_checksum_verification=True))
    assert len({name.split("/")[0] for name, _ in snapshot.files}) == 13
    assert pa.concat_tables(pieces).sort_by("id").equals(expected)


@pytest.mark.parametrize(
    "filters",
    [
        [("s.a", "==", 5)],
        pc.field("s", "b") == "b3",
        [("s.inner.x", ">", 90.0), ("id", "<", 300)],
        pc.field("vals").is_null(),
    ],
)
def test_struct_field_filters_read_the_matching_rows(tmp_path: Path, filters: object) -> None:
    path = tmp_path / "t"
    total = _run(_append, path, [100, 100, 110])
    rows = nested_rows(0, total)
    got = streamwrite.read_table(path, filters=filters).sort_by("id")
    if isinstance(filters, pc.Expression):
        expected = rows.filter(filters)
    else:
        flat = rows.flatten().flatten()
        keep = flat.filter(pq.filters_to_expression(filters)).column("id")
        expected = rows.filter(pc.is_in(rows.column("id"), keep))
    assert got.equals(expected)


def test_list_leaf_filters_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _run(_append, path, [10])
    with pytest.raises(ConfigError, match="inside the list column 'vals'"):
        streamwrite.read_table(path, filters=[("vals.list.element", ">", 1.0)])


def test_nested_column_added_reads_as_nulls_in_older_segments(tmp_path: Path) -> None:
    path = tmp_path / "t"
    start = _run(_append, path, [50, 50])
    added = pa.field("extra", pa.list_(pa.struct([pa.field("q", pa.int32())])))
    wide = NESTED_SCHEMA.append(added)

    async def evolve() -> None:
        async with await open_table(path, NESTED_SCHEMA, **OPTIONS) as table:
            await table.add_columns([added])
            rows = nested_rows(start, 30)
            extra = pa.array([[{"q": i}] if i % 2 else None for i in range(30)], added.type)
            await table.append(rows.append_column(added, extra), app_id="t", batch_id=999)

    _run(evolve)
    got = streamwrite.read_table(path).sort_by("id")
    assert got.schema.equals(wide)
    assert got.column("extra").slice(0, 100).null_count == 100
    assert got.column("extra").slice(100).to_pylist() == [
        [{"q": i}] if i % 2 else None for i in range(30)
    ]
    assert got.drop_columns(["extra"]).equals(nested_rows(0, 130))

    async def reopen_changed() -> None:
        changed = wide.set(wide.get_field_index("extra"), pa.field("extra", pa.list_(pa.int32())))
        await open_table(path, changed, **OPTIONS)

    with pytest.raises((ConfigError, SchemaError), match="schema"):
        _run(reopen_changed)


def test_designated_timestamp_must_be_a_flat_column(tmp_path: Path) -> None:
    async def open_with(timestamp: str) -> None:
        await open_table(
            tmp_path / timestamp, NESTED_SCHEMA, timestamp=timestamp, partition_by="day"
        )

    for name in ("s", "s.a", "vals"):
        with pytest.raises(ConfigError):
            _run(open_with, name)
    assert not (tmp_path / "s.a").exists()
