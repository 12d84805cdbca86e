"""A compaction round reads each segment's footer once: the segments opened for their infos
are merged from and closed when the round ends (also when nothing is merged)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pyarrow as pa

import streamwrite
from streamwrite.compaction.policy import CompactionPolicy
from streamwrite.table.api import open_table
from streamwrite.testing import reference_table


def _open_files_under(directory: Path) -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(directory)):
            found.append(target)
    return found


def test_compaction_closes_the_segments_it_opened(tmp_path: Path) -> None:
    data = reference_table(12_000)
    path = tmp_path / "t"

    async def main() -> tuple[list[str], list[str], pa.Table]:
        table = await open_table(
            path,
            data.schema,
            segment_row_groups=2,
            compaction=CompactionPolicy(grace_seconds=0),
            compaction_interval=None,
        )
        try:
            for i in range(6):
                await table.append(data.slice(i * 2000, 2000), app_id="a", batch_id=i)
            (result,) = await table.compact()
            assert result.num_rows == data.num_rows and len(result.merged) == 3
            after_merge = _open_files_under(path)
            assert await table.compact() == []  # nothing left to merge: segments read, closed
            after_nothing = _open_files_under(path)
        finally:
            await table.close()
        return after_merge, after_nothing, streamwrite.read_table(path)

    after_merge, after_nothing, back = anyio.run(main)
    assert not [p for p in after_merge if "seg-" in p and "data" in p], after_merge
    assert not [p for p in after_nothing if "seg-" in p and "data" in p], after_nothing
    assert back.equals(data)
