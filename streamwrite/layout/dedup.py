"""The dedup window of a table, without I/O: which keys are remembered, what a commit writes.

A table opened with ``dedup_window > 0`` remembers the dedup keys committed within the last
``dedup_window`` seconds (the writer's wall clock, ``time.time()``, passed in as ``now``).
Rules::

    remembered(key, now)    key -> version of its newest commit, if that commit's time t has
                            now - t < window (else it is as good as never committed)
    plan(version, now, keys)
                            the commit of _txn version ``version`` carries ``keys`` (distinct,
                            none remembered): one DedupWrite, run in the commit's first sync
                            round with the segments, before its _txn publish:
        no log yet, or the log passed ``rotate_size`` and at most half of it is records
        from the oldest one still within the window on (rotate)
                            create ``_dedup.<version>``: header + those bytes of the old log,
                            copied + this commit's; fdatasync it, fsync the table directory;
                            after the publish the old log is deleted (``retire``)
        otherwise           append this commit's records at the committed size; fdatasync
    committed(write)        its _txn is published: the keys are remembered from now on

Commits are remembered oldest first; those past the window are dropped as time goes on
(:meth:`DedupWindow.expire`), so memory holds the keys of one window (measured with 16-byte
keys: ~140 bytes a key when commits carry 10 keys, ~350 when each carries one: 32 MB for
90k keys).
The log grows to about twice the records within the window before a rotation rewrites it.
A clock that jumps changes ages the same way for every key: backwards, keys are kept longer;
forwards, they are dropped sooner.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from streamwrite.format.dedup import (
    DEDUP_HEADER,
    DedupRecord,
    dedup_log_name,
    encode_dedup_records,
)
from streamwrite.format.txn import DedupLog

__all__ = ["DEFAULT_ROTATE_SIZE", "DedupWindow", "DedupWrite"]

DEFAULT_ROTATE_SIZE = 1 << 20
"""Bytes: a log is not rotated before it holds this much."""


@dataclass(frozen=True, slots=True)
class DedupWrite:
    """What one commit writes to the dedup log (module docstring)."""

    name: str
    """The log written (and named by the commit's ``_txn``)."""
    offset: int
    """Where ``data`` goes."""
    data: bytes
    """This commit's records."""
    create: bool
    """A new log: the header at 0, then ``copy``, then ``data``; then it and the table
    directory are synced."""
    copy: tuple[str, int, int] | None
    """For a new log: the bytes of the old log copied after the header (its name, offset and
    size: its records from the oldest one within the window to its end)."""
    retire: str | None
    """The log to delete once the ``_txn`` naming ``name`` is published."""
    version: int
    unix_seconds: float
    keys: tuple[bytes, ...]

    @property
    def log(self) -> DedupLog:
        """The ``_txn`` entry after this write: the log and its committed size."""
        return DedupLog(self.name, self.offset + len(self.data))


@dataclass(slots=True)
class _Commit:
    version: int
    unix_seconds: float
    keys: list[bytes]
    offset: int
    """Where its first record is in the log."""


class DedupWindow:
    """The keys of one table's dedup window and its log's state (module docstring)."""

    def __init__(
        self,
        window_seconds: float,
        log: DedupLog | None = None,
        records: Sequence[DedupRecord] = (),
        now: float = 0.0,
        rotate_size: int = DEFAULT_ROTATE_SIZE,
    ) -> None:
        """Start from the committed ``log`` and its ``records`` (those older than the window
        at ``now`` are dropped)."""
        self.window_seconds = window_seconds
        self.log = log
        self.rotate_size = rotate_size
        self._keys: dict[bytes, _Commit] = {}
        """Each key's newest commit."""
        self._commits: deque[_Commit] = deque()
        """The commits remembered, in log order."""
        for record in records:
            if now - record.unix_seconds >= window_seconds:
                continue
            keys = record.split()
            last = self._commits[-1] if self._commits else None
            if last is not None and last.version == record.version:
                last.keys += keys
            else:
                last = _Commit(record.version, record.unix_seconds, keys, record.offset)
                self._commits.append(last)
            self._keys.update(dict.fromkeys(keys, last))

    @property
    def num_keys(self) -> int:
        """Keys remembered (some may be past the window until the next :meth:`expire`)."""
        return len(self._keys)

    @property
    def live_size(self) -> int:
        """Bytes of the log from its oldest commit remembered to its end."""
        if self.log is None or not self._commits:
            return 0
        return self.log.size - self._commits[0].offset

    def remembered(self, key: bytes, now: float) -> int | None:
        """The ``_txn`` version that committed ``key`` within the window before ``now``, or
        None."""
        commit = self._keys.get(key)
        if commit is None or now - commit.unix_seconds >= self.window_seconds:
            return None
        return commit.version

    def expire(self, now: float) -> None:
        """Forget the commits past the window at ``now`` (oldest first)."""
        commits = self._commits
        while commits and now - commits[0].unix_seconds >= self.window_seconds:
            commit = commits.popleft()
            for key in commit.keys:
                if self._keys.get(key) is commit:
                    del self._keys[key]

    def plan(self, version: int, now: float, keys: Sequence[bytes]) -> DedupWrite:
        """What the commit of ``_txn`` version ``version`` at ``now`` writes for ``keys``
        (distinct, 8..64 bytes each, at least one)."""
        self.expire(now)
        data = encode_dedup_records(version, now, keys)
        log = self.log
        if log is not None and (
            log.size + len(data) <= self.rotate_size
            or 2 * self.live_size > log.size - len(DEDUP_HEADER)
        ):
            return DedupWrite(
                log.name, log.size, data, False, None, None, version, now, tuple(keys)
            )
        copy = None
        if log is not None and self._commits:
            start = self._commits[0].offset
            copy = (log.name, start, log.size - start)
        return DedupWrite(
            dedup_log_name(version),
            len(DEDUP_HEADER) + (0 if copy is None else copy[2]),
            data,
            True,
            copy,
            None if log is None else log.name,
            version,
            now,
            tuple(keys),
        )

    def committed(self, write: DedupWrite) -> None:
        """The ``_txn`` naming ``write``'s log is published: its keys are remembered."""
        if write.create:  # the commits remembered moved to the new log, in order
            shift = len(DEDUP_HEADER) - (0 if write.copy is None else write.copy[1])
            for commit in self._commits:
                commit.offset += shift
        self.log = write.log
        commit = _Commit(write.version, write.unix_seconds, list(write.keys), write.offset)
        self._commits.append(commit)
        self._keys.update(dict.fromkeys(write.keys, commit))
