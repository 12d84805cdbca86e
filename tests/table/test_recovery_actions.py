"""Table recovery through the table machine's plan: a reopen stopped after any number of its
file actions (an injected failure, as a crash there would stop it) leaves a table the next
reopen recovers to the published ``_txn``, with every committed row once."""

from __future__ import annotations

import errno
import functools
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

import streamwrite
import streamwrite.table.core as table_core
import streamwrite.table.recovery as table_recovery
from streamwrite.errors import StreamwriteIOError
from streamwrite.format.txn import TXN_FILE, decode_txn
from streamwrite.layout.actions import RecoverSegment, RemoveTree, TableAction
from streamwrite.layout.table_recovery import plan_recovery
from streamwrite.table.api import open_table
from streamwrite.table.execute import ActionHook, run_file_actions, scan_table
from streamwrite.testing import reference_table

TABLE = reference_table(600)


def _run(fn: Any, *args: Any) -> Any:
    return anyio.run(functools.partial(fn, *args))


async def _build(path: Path) -> None:
    """A table whose last commit wrote its segments (one of them new, rolled over) and then
    failed to publish ``_txn``: reopening has segments to roll back and delete."""
    table = await open_table(
        path,
        TABLE.schema,
        timestamp="ts",
        partition_by="day",
        row_group_size=50,
        segment_row_groups=4,
    )
    await table.append(TABLE.slice(0, 300), app_id="a", batch_id=0)

    def fail(*args: Any) -> None:
        raise StreamwriteIOError("injected: the _txn publish failed")

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(table_core, "write_txn", fail)
        with pytest.raises(StreamwriteIOError, match="injected"):
            await table.append(TABLE.slice(300, 300), app_id="a", batch_id=1)
    await table.close()


def test_a_reopen_stopped_between_any_two_recovery_actions_is_finished_by_the_next(
    tmp_path: Path,
) -> None:
    template = tmp_path / "template"
    _run(_build, template)
    published = decode_txn((template / TXN_FILE).read_bytes())
    plan = plan_recovery(published, scan_table(template, published))
    kinds = {type(action) for action in plan}
    assert {RecoverSegment, RemoveTree} <= kinds  # a segment ahead of _txn, one never published
    ran: list[TableAction] = []

    def recording(
        root: Path, actions: Sequence[TableAction], hook: ActionHook | None = None
    ) -> None:
        ran.extend(actions)
        run_file_actions(root, actions, hook)

    with pytest.MonkeyPatch.context() as monkeypatch:  # a clean recovery, to count its actions
        monkeypatch.setattr(table_recovery, "run_file_actions", recording)
        counted = tmp_path / "counted"
        _copy(template, counted)
        _run(_reopen_and_close, counted)
    assert any(isinstance(action, RemoveTree) for action in ran)  # there is work to stop in
    for stop in range(len(ran)):
        path = tmp_path / f"stop-{stop}"
        _copy(template, path)
        done = 0

        def stopping(action: TableAction, stop: int = stop) -> None:
            nonlocal done
            if done == stop:
                raise OSError(errno.EIO, "injected failure")
            done += 1

        def failing(root: Path, actions: Sequence[TableAction], hook: Any = None) -> None:
            run_file_actions(root, actions, stopping)

        with pytest.MonkeyPatch.context() as monkeypatch:
            monkeypatch.setattr(table_recovery, "run_file_actions", failing)
            with pytest.raises(OSError, match="injected"):
                _run(_reopen_and_close, path)
        _run(_reopen_and_close, path)
        assert decode_txn((path / TXN_FILE).read_bytes()) == published
        rows = streamwrite.read_table(path).sort_by("ts")
        assert rows.select(TABLE.schema.names).equals(TABLE.slice(0, 300).sort_by("ts"))
        _run(_append_the_failed_batch_again, path)
        assert streamwrite.read_table(path).num_rows == 600


async def _reopen_and_close(path: Path) -> None:
    table = await open_table(path)
    await table.close()


async def _append_the_failed_batch_again(path: Path) -> None:
    table = await open_table(path)
    commit = await table.append(TABLE.slice(300, 300), app_id="a", batch_id=1)
    assert commit is not None and not commit.skipped
    await table.close()


def _copy(source: Path, target: Path) -> None:
    shutil.copytree(source, target)
    (target / "_lock").unlink(missing_ok=True)


def test_a_listed_segment_gone_is_refused_before_recovery_changes_anything(
    tmp_path: Path,
) -> None:
    """Damage (a segment ``_txn`` lists is gone) raises CorruptFileError naming it, and the
    open changes nothing: the rollback and deletions recovery would do are left undone."""
    path = tmp_path / "t"
    _run(_build, path)
    published = decode_txn((path / TXN_FILE).read_bytes())
    plan = plan_recovery(published, scan_table(path, published))
    partition, segments = next(iter(published.partitions.items()))
    shutil.rmtree(path / partition / segments[0].name)
    before = sorted((p.relative_to(path), p.stat().st_size) for p in path.rglob("*") if p.is_file())
    with pytest.raises(streamwrite.CorruptFileError, match=f"{segments[0].name}.*is missing"):
        _run(_reopen_and_close, path)
    after = sorted((p.relative_to(path), p.stat().st_size) for p in path.rglob("*") if p.is_file())
    assert after == before
    assert any(isinstance(action, RemoveTree) for action in plan)  # there was work it left
