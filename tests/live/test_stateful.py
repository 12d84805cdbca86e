"""Hypothesis state machine of the commit protocol with failures injected between actions.

The model is the list of committed row totals (index = commit seq; every commit appends
``reference_table(n, start_row=previous_total)``) and their parquet sizes. Rules append,
append with the ``action_hook`` (of ``open_live_file``) raising OSError before the Nth action
of the commit, reopen (close + open: recovery), reopen with a failure injected into recovery's
own actions, and read a snapshot.

A failed commit poisons the LiveFile (a further append raises StreamwriteIOError) and is not
acknowledged. After reopening, its rows are visible only if the failure came after the commit
point, the ``WriteAt(_pm, 0, ...)`` header patch: the hook sees every action before the one
that fails, so "committed" is "the header patch is among the actions that ran". Invariant:
after every reopen the newest snapshot is exactly the model's rows.

``STREAMWRITE_STATEFUL_EXAMPLES`` sets max_examples (default 30).
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import streamwrite
from streamwrite.errors import StateError, StreamwriteIOError
from streamwrite.layout.actions import Action, LiveFileName, WriteAt
from streamwrite.live.file import LiveFile, open_live_file
from tests.live._support import SCHEMA, assert_rows, batch, run

EXAMPLES = int(os.environ.get("STREAMWRITE_STATEFUL_EXAMPLES", "30"))


def is_commit_point(action: Action) -> bool:
    return isinstance(action, WriteAt) and action.file is LiveFileName.PM and action.offset == 0


class LiveFileMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="sw-stateful-")) / "lf"
        self.totals: list[int] = []  # committed row totals, index = seq
        self.sizes: list[int] = []  # committed parquet sizes, index = seq
        self.fail_at: int | None = None
        self.ran: list[Action] = []
        self.poisoned = False
        self.limbo_rows: int | None = None  # rows of a failed commit that passed its commit point
        self.lf: LiveFile | None = None

    def hook(self, action: Action) -> None:
        if self.fail_at is not None and len(self.ran) == self.fail_at:
            self.fail_at = None
            raise OSError(errno.EIO, "injected failure")
        self.ran.append(action)

    async def _open(self) -> LiveFile:
        return await open_live_file(self.directory, schema=SCHEMA, action_hook=self.hook)

    @initialize()
    def create(self) -> None:
        self.lf = run(self._open)
        commit = self.lf.last_commit
        self.totals, self.sizes = [0], [commit.parquet_size]

    def _append(self, rows: int) -> None:
        assert self.lf is not None
        start = self.totals[-1]
        commit = run(self.lf.append, batch(start, start + rows))
        assert commit.seq == len(self.totals)
        assert commit.num_rows == start + rows
        self.totals.append(commit.num_rows)
        self.sizes.append(commit.parquet_size)

    @precondition(lambda self: not self.poisoned)
    @rule(rows=st.integers(1, 12))
    def append(self, rows: int) -> None:
        self._append(rows)

    @precondition(lambda self: not self.poisoned)
    @rule(rows=st.integers(1, 12), index=st.integers(0, 6))
    def append_with_failure_at(self, rows: int, index: int) -> None:
        assert self.lf is not None
        self.ran = []
        self.fail_at = index
        start = self.totals[-1]
        try:
            self._append(rows)
        except StreamwriteIOError as exc:
            assert "injected" in str(exc)
        else:
            assert index >= len(self.ran), "the hook should have failed this commit"
            self.fail_at = None
            return
        self.poisoned = True
        committed = any(is_commit_point(a) for a in self.ran)
        self.limbo_rows = rows if committed else None
        with pytest.raises(StateError):
            run(self.lf.append, batch(start, start + 1))

    def _check_reopened(self) -> None:
        assert self.lf is not None
        last = self.lf.last_commit
        assert (last.seq, last.num_rows, last.parquet_size) == (
            len(self.totals) - 1,
            self.totals[-1],
            self.sizes[-1],
        )
        snapshots = self.lf.snapshots()
        assert [s.num_rows for s in snapshots] == self.totals
        assert [s.parquet_size for s in snapshots] == self.sizes
        assert_rows(streamwrite.read_table(self.directory), self.totals)

    def _adopt_limbo(self) -> None:
        """A failed commit that passed its commit point is committed after recovery."""
        assert self.lf is not None
        if self.limbo_rows is not None:
            self.totals.append(self.totals[-1] + self.limbo_rows)
            self.sizes.append(self.lf.last_commit.parquet_size)
            self.limbo_rows = None
        self.poisoned = False

    @rule()
    def reopen(self) -> None:
        assert self.lf is not None
        run(self.lf.close)
        self.lf = None
        self.lf = run(self._open)
        self._adopt_limbo()
        self._check_reopened()

    @precondition(lambda self: self.poisoned)
    @rule(index=st.integers(0, 4))
    def reopen_with_failure_at(self, index: int) -> None:
        """Recovery itself fails after ``index`` actions: a later reopen still recovers."""
        assert self.lf is not None
        run(self.lf.close)
        self.lf = None
        self.ran = []
        self.fail_at = index
        try:
            self.lf = run(self._open)
        except StreamwriteIOError:
            self.fail_at = None
            self.lf = run(self._open)
        self.fail_at = None
        self._adopt_limbo()
        self._check_reopened()

    @rule(data=st.data())
    def read_snapshot(self, data: st.DataObject) -> None:
        i = data.draw(st.integers(0, len(self.totals) - 1), label="snapshot")
        table = streamwrite.read_table(self.directory, snapshot=self.sizes[i])
        assert_rows(table, self.totals[: i + 1])

    @invariant()
    def acknowledged_commits_are_readable(self) -> None:
        if self.sizes and not self.poisoned:
            assert streamwrite.read_table(self.directory).num_rows == self.totals[-1]

    def teardown(self) -> None:
        if self.lf is not None:
            run(self.lf.close)
        shutil.rmtree(self.directory.parent, ignore_errors=True)


LiveFileMachine.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_commit_state_machine = LiveFileMachine.TestCase
