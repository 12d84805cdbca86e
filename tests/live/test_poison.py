"""A failed commit poisons the LiveFile: nothing more is acknowledged, reopening recovers.

DESIGN section 3: "an fsync failure poisons the writer (no retry, no further
acknowledgements)". The kernel may have dropped the dirty pages of a failed fsync, so a
retry could acknowledge data that is not on disk.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

import streamwrite
import streamwrite.io.local
from streamwrite.errors import StateError, StreamwriteIOError
from streamwrite.layout.actions import Action, Fsync
from streamwrite.live.file import LiveFile, open_live_file
from tests.live._support import SCHEMA, assert_rows, batch, run


def _fail_first_fsync(how: str, monkeypatch: pytest.MonkeyPatch) -> Callable[[Action], None]:
    """An action hook that makes the first Fsync of the next commit fail, once armed."""
    state = {"armed": False, "failing": False}

    def failing(real: Callable[[int], None]) -> Callable[[int], None]:
        def sync(fd: int) -> None:
            if state["failing"]:
                state["failing"] = False
                raise OSError(errno.EIO, "Input/output error (injected)")
            real(fd)

        return sync

    # Fsync actions run as fdatasync (fsync where there is none): both fail when armed.
    monkeypatch.setattr(streamwrite.io.local.os, "fsync", failing(os.fsync))
    monkeypatch.setattr(streamwrite.io.local.os, "fdatasync", failing(os.fdatasync))

    def hook(action: Action) -> None:
        if state["armed"] and isinstance(action, Fsync):
            state["armed"] = False
            if how == "hook raises":
                raise OSError(errno.EIO, "Input/output error (injected)")
            state["failing"] = True  # the real os.fsync call of this action fails

    hook.arm = lambda: state.update(armed=True)  # type: ignore[attr-defined]
    return hook


@pytest.mark.parametrize(
    "how",
    [
        "os.fsync fails",
        "hook raises",
    ],
)
def test_fsync_error_poisons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    directory = tmp_path / "lf"
    hook = _fail_first_fsync(how, monkeypatch)

    async def scenario() -> None:
        lf = await open_live_file(directory, schema=SCHEMA, action_hook=hook)
        first = await lf.append(batch(0, 5))
        hook.arm()  # type: ignore[attr-defined]
        with pytest.raises(StreamwriteIOError) as info:
            await lf.append(batch(5, 9))
        assert "Fsync" in str(info.value) or "fsync" in str(info.value)
        for _ in range(3):  # poisoned: no retry, nothing more acknowledged
            with pytest.raises(StateError):
                await lf.append(batch(5, 6))
        # Readers still see only the previous commit.
        assert_rows(streamwrite.read_table(directory), [0, 5])
        await lf.close()

        async with await LiveFile.open(directory, schema=SCHEMA) as lf:
            assert lf.recovery is not None
            assert lf.recovery.torn_data_bytes > 0  # the unacknowledged append is cut off
            assert lf.last_commit == first
            assert [s.num_rows for s in lf.snapshots()] == [0, 5]
            resumed = await lf.append(batch(5, 8))
            assert resumed.seq == first.seq + 1
        assert_rows(streamwrite.read_table(directory), [0, 5, 8])

    run(scenario)


def test_poisoned_last_commit_is_the_acknowledged_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = _fail_first_fsync("os.fsync fails", monkeypatch)

    async def scenario() -> None:
        async with await open_live_file(tmp_path / "lf", schema=SCHEMA, action_hook=hook) as lf:
            first = await lf.append(batch(0, 3))
            hook.arm()  # type: ignore[attr-defined]
            with pytest.raises(StreamwriteIOError):
                await lf.append(batch(3, 6))
            assert lf.last_commit == first

    run(scenario)


def test_failed_open_releases_the_directory(tmp_path: Path) -> None:
    """Recovery that fails on an I/O error leaves the file closed and recoverable."""
    directory = tmp_path / "lf"
    calls = {"n": 0}

    def hook(action: Action) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError(errno.EIO, "injected")

    async def scenario() -> None:
        async with await LiveFile.open(directory, schema=SCHEMA) as lf:
            await lf.append(batch(0, 4))
        with (directory / "data.parquet").open("ab") as f:
            f.write(b"torn tail")
        with pytest.raises(OSError):
            await open_live_file(directory, action_hook=hook)
        async with await LiveFile.open(directory) as lf:  # not locked by the failed open
            assert lf.recovery is not None and lf.recovery.torn_data_bytes == len(b"torn tail")
            assert lf.last_commit.num_rows == 4

    run(scenario)
