"""Hypothesis state machine of the live-file commit protocol, failures injected between actions.

Needs ``hypothesis`` (``pip install 'streamwrite[testing]'``). Run it with
``hypothesis.stateful.run_state_machine_as_test(LiveFileMachine, settings=...)``, or subclass
it to drive another writer or reader of the same live file (override :meth:`open_live_file`
or :meth:`read`): every rule and invariant stays.

The model is the list of committed row totals (index = commit seq; every commit appends
``commit_rows(previous_total, previous_total + n)`` of the reference table) and their parquet
sizes. Rules::

    append                    commit 1..12 rows
    append_with_failure_at    the action hook raises OSError before the Nth action of a commit
    reopen                    close + open (recovery)
    reopen_with_failure_at    recovery itself fails after N actions; a later open recovers
    read_snapshot             read a committed snapshot by its parquet size

A failed commit poisons the LiveFile (a further append raises StateError) and is not
acknowledged. After reopening, its rows are visible only if the failure came after the commit
point, the ``WriteAt(_pm, 0, ...)`` header patch: the hook sees every action before the one that
fails, so "committed" is "the header patch is among the actions that ran". Invariants: after
every reopen the newest snapshot is exactly the model's rows; while not poisoned, a read sees
every acknowledged commit.
"""

from __future__ import annotations

import errno
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pyarrow as pa
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import streamwrite
from streamwrite.errors import StateError, StreamwriteIOError
from streamwrite.layout.actions import Action, LiveFileName, WriteAt
from streamwrite.live.file import LiveFile, open_live_file
from streamwrite.testing.data import assert_commit_rows, commit_rows, reference_table

__all__ = ["LiveFileMachine", "is_commit_point"]

T = TypeVar("T")

MAX_COMMIT_ROWS = 12
"""Most rows one ``append`` rule commits."""
MAX_COMMIT_FAILURE_INDEX = 6
"""Failures are injected before action 0..6 of a commit (a commit runs about 6 actions)."""
MAX_RECOVERY_FAILURE_INDEX = 4
"""Failures are injected before action 0..4 of a recovery."""


def _run(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    return anyio.run(fn, *args)


def is_commit_point(action: Action) -> bool:
    """Returns: whether ``action`` is a commit's commit point (the ``_pm`` header patch)."""
    return isinstance(action, WriteAt) and action.file is LiveFileName.PM and action.offset == 0


class LiveFileMachine(RuleBasedStateMachine):
    """Commits, injected failures and recoveries of one live file in a temporary directory."""

    schema: pa.Schema = reference_table(0).schema
    """The live file's schema (that of :func:`~streamwrite.testing.reference_table`)."""

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

    # ------------------------------------------------------------------ what a subclass changes

    async def open_live_file(self, action_hook: Callable[[Action], None]) -> LiveFile:
        """Open (create or recover) the live file with ``action_hook`` called before each of
        its actions.

        Returns:
            The open live file.
        """
        return await open_live_file(self.directory, schema=self.schema, action_hook=action_hook)

    def read(self, snapshot: int | None = None) -> pa.Table:
        """Returns: the live file's rows at its newest commit, or at the commit whose parquet
        size is ``snapshot``."""
        return streamwrite.read_table(self.directory, snapshot=snapshot)

    # ------------------------------------------------------------------------------ machinery

    def hook(self, action: Action) -> None:
        """The action hook: raises an injected ``OSError`` before action number ``fail_at``."""
        if self.fail_at is not None and len(self.ran) == self.fail_at:
            self.fail_at = None
            raise OSError(errno.EIO, "injected failure")
        self.ran.append(action)

    async def _open(self) -> LiveFile:
        return await self.open_live_file(self.hook)

    @initialize()
    def create(self) -> None:
        self.lf = _run(self._open)
        commit = self.lf.last_commit
        self.totals, self.sizes = [0], [commit.parquet_size]

    def _append(self, rows: int) -> None:
        assert self.lf is not None
        start = self.totals[-1]
        commit = _run(self.lf.append, commit_rows(start, start + rows))
        assert commit.seq == len(self.totals)
        assert commit.num_rows == start + rows
        self.totals.append(commit.num_rows)
        self.sizes.append(commit.parquet_size)

    @precondition(lambda self: not self.poisoned)
    @rule(rows=st.integers(1, MAX_COMMIT_ROWS))
    def append(self, rows: int) -> None:
        self._append(rows)

    @precondition(lambda self: not self.poisoned)
    @rule(rows=st.integers(1, MAX_COMMIT_ROWS), index=st.integers(0, MAX_COMMIT_FAILURE_INDEX))
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
        try:
            _run(self.lf.append, commit_rows(start, start + 1))
        except StateError:
            pass
        else:
            raise AssertionError("a poisoned LiveFile accepted an append")

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
        assert_commit_rows(self.read(), self.totals)

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
        _run(self.lf.close)
        self.lf = None
        self.lf = _run(self._open)
        self._adopt_limbo()
        self._check_reopened()

    @precondition(lambda self: self.poisoned)
    @rule(index=st.integers(0, MAX_RECOVERY_FAILURE_INDEX))
    def reopen_with_failure_at(self, index: int) -> None:
        """Recovery itself fails after ``index`` actions: a later reopen still recovers."""
        assert self.lf is not None
        _run(self.lf.close)
        self.lf = None
        self.ran = []
        self.fail_at = index
        try:
            self.lf = _run(self._open)
        except StreamwriteIOError:
            self.fail_at = None
            self.lf = _run(self._open)
        self.fail_at = None
        self._adopt_limbo()
        self._check_reopened()

    @rule(data=st.data())
    def read_snapshot(self, data: st.DataObject) -> None:
        i = data.draw(st.integers(0, len(self.totals) - 1), label="snapshot")
        assert_commit_rows(self.read(snapshot=self.sizes[i]), self.totals[: i + 1])

    @invariant()
    def acknowledged_commits_are_readable(self) -> None:
        if self.sizes and not self.poisoned:
            assert self.read().num_rows == self.totals[-1]

    def teardown(self) -> None:
        if self.lf is not None:
            _run(self.lf.close)
        shutil.rmtree(self.directory.parent, ignore_errors=True)
