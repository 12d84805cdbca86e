"""Pipelined and group commits of a table: tickets, the open group, the taker and committer.

Every accepted append gets a :class:`CommitTicket`; a commit resolves the tickets of every
append it holds. The states of an append's rows::

    append --accept--> OPEN      buffered; its ticket is in the open group
                         |        request(): a commit is wanted (a batch id, the commit
                         |        policy, flush(), or a waiting caller)
                         v
                       TAKEN     the whole open group and every buffered row became one
                         |        Unit (row groups encoded), queued in append order; at most
                         |        ``max_taken`` units are taken and not yet durable
                         v
                       DURABLE   its segments written and synced and its _txn published:
                                  each ticket of the unit resolves with the TableCommit,
                      or FAILED   or every ticket of the unit raises the same error (the
                                  table is poisoned; later tickets raise StateError)

Who takes and commits: where the commit policy (rows, bytes, interval) asks for a commit, the
appending task takes the open group itself, so a policy commit holds what was buffered when it
became due; otherwise (batch ids, waiting callers):

- inside ``async with table``: two background tasks, the **taker** (takes the open group
  once a commit is requested and fewer than ``max_taken`` units are in flight) and the
  **committer** (commits taken units one at a time, in order). The next unit encodes while
  the previous one is written and synced (pipelining), and appends arriving while a commit
  is in flight join the next group (group commit);
- outside it, the caller that waits (``append`` with a batch id, ``flush``,
  ``ticket.durable()``) takes and commits itself, one **leader** at a time, shielded from
  cancellation; callers arriving meanwhile join the open group and ride the next commit.

Backpressure: an append waits while ``max_pending`` appends are accepted and not durable.
Batch ids: an id accepted and not yet published is **in flight**; the same id again joins its
commit (its ticket resolves with ``skipped=True`` when the first one's commit is durable, or
raises its error); a lower id of the same app is stale. Dedup keys likewise: a key accepted
and not yet published is in flight, and the same key again follows its ticket
(:meth:`CommitPipeline.decide_key`); a key committed within the window resolves at once.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

import anyio

from streamwrite.errors import StaleBatchError, StateError
from streamwrite.format.txn import TxnRecord
from streamwrite.layout.batch_ids import BatchDecision
from streamwrite.layout.table import TableUnit
from streamwrite.live.file import EncodedRowGroup, LiveFile
from streamwrite.table.state import TableCommit

__all__ = ["CommitPipeline", "CommitTicket", "Unit", "applied_ids"]

logger = logging.getLogger("streamwrite.table")


class CommitTicket:
    """One accepted append's place in the commit order (``await ticket.durable()``).

    :meth:`Table.append` with ``wait=False`` makes them; ``drive`` waits until a ticket is
    resolved (committing meanwhile when no background committer runs).
    """

    def __init__(
        self,
        drive: Callable[[CommitTicket], Awaitable[None]],
        num_rows: int,
        app_id: str | None = None,
        batch_id: int | None = None,
        dedup_key: bytes | None = None,
    ) -> None:
        self._drive = drive
        self.num_rows = num_rows
        """Rows of this append."""
        self.app_id = app_id
        self.batch_id = batch_id
        self.dedup_key = dedup_key
        self._event = anyio.Event()
        self._result: TableCommit | None = None
        self._error: BaseException | None = None
        self._followers: list[CommitTicket] = []

    @property
    def done(self) -> bool:
        """True once the append is durable (or its commit failed, or it was skipped)."""
        return self._event.is_set()

    async def durable(self) -> TableCommit:
        """Wait until the commit that holds this append is durable and published. Outside
        ``async with table`` this call commits (with every append waiting alongside).

        Returns:
            The commit: its ``_txn`` version and every partition's segments after it;
            ``num_rows`` counts the whole commit (a group commit holds several appends);
            ``skipped=True`` for a batch id that was committed already.

        Raises:
            StreamwriteIOError: the commit failed (every append in it raises the same error;
                the table is poisoned).
            StateError: the table was poisoned by an earlier commit, or closed, before this
                append was committed.
        """
        await self._drive(self)
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def resolve(self, result: TableCommit | None, error: BaseException | None) -> None:
        """The commit holding this append is done (``result``) or failed (``error``)."""
        if self.done:
            return
        self._result, self._error = result, error
        self._event.set()
        for follower in self._followers:
            follower.resolve(None if result is None else replace(result, skipped=True), error)

    def follow(self, ticket: CommitTicket) -> None:
        """Resolve ``ticket`` (the same batch id again) when this one resolves."""
        self._followers.append(ticket)


@dataclass
class Unit:
    """One table commit's worth of encoded row groups, per partition, and its tickets."""

    parts: dict[str, list[tuple[LiveFile, EncodedRowGroup]]]
    num_rows: int
    plan: TableUnit
    """The table machine's unit (its segments and batch ids)."""
    tickets: list[CommitTicket] = field(default_factory=list)


def applied_ids(tickets: list[CommitTicket]) -> dict[str, int]:
    """The batch ids a unit holding ``tickets`` commits: each app id's highest."""
    applied: dict[str, int] = {}
    for ticket in tickets:
        if ticket.app_id is not None and ticket.batch_id is not None:
            applied[ticket.app_id] = max(applied.get(ticket.app_id, -1), ticket.batch_id)
    return applied


Take = Callable[[], Awaitable[Unit | None]]
"""Takes the open group (:meth:`CommitPipeline.detach`, under the same lock that buffers rows
and joins tickets, so the unit holds exactly the rows of its tickets) as a unit; None when
there is nothing to take."""
Commit = Callable[[Unit], Awaitable[TableCommit]]
"""Commits a unit: durable and published when it returns."""


class CommitPipeline:
    """The commit order of one table (module docstring)."""

    def __init__(self, take: Take, commit: Commit, max_taken: int = 2, max_pending: int = 64):
        self._take = take
        self._commit = commit
        self.max_taken = max_taken
        self.max_pending = max_pending
        self.background = False
        """True while the taker and committer tasks run (inside ``async with``)."""
        self.open: list[CommitTicket] = []
        self.requested = False
        self.taken: deque[Unit] = deque()
        """Units taken and not yet durable, the first one committing."""
        self.num_pending = 0
        """Tickets accepted and not yet resolved."""
        self.last: CommitTicket | None = None
        self.in_flight: dict[str, dict[int, CommitTicket]] = {}
        """Batch ids accepted and not yet published, per app id."""
        self.in_flight_keys: dict[bytes, CommitTicket] = {}
        """Dedup keys accepted and not yet published."""
        self.error: BaseException | None = None
        """Set when the table can commit nothing more (poisoned or closed)."""
        self._leading = False
        self._changed = anyio.Event()

    # -- state changes --------------------------------------------------------------------

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def _wait_changed(self) -> None:
        await self._changed.wait()

    def join(self, ticket: CommitTicket) -> CommitTicket:
        """Add an accepted append's ticket to the open group (its rows are buffered)."""
        self.open.append(ticket)
        self.num_pending += 1
        self.last = ticket
        if ticket.app_id is not None and ticket.batch_id is not None:
            self.in_flight.setdefault(ticket.app_id, {})[ticket.batch_id] = ticket
        if ticket.dedup_key is not None:
            self.in_flight_keys[ticket.dedup_key] = ticket
        self._notify()
        return ticket

    def request(self) -> None:
        """A commit of the open group is wanted."""
        if self.open:
            self.requested = True
            self._notify()

    def _resolve(
        self, tickets: list[CommitTicket], result: TableCommit | None, error: BaseException | None
    ) -> None:
        for ticket in tickets:
            ticket.resolve(result, error)
            self.num_pending -= 1
            if ticket.app_id is not None and ticket.batch_id is not None:
                ids = self.in_flight.get(ticket.app_id, {})
                ids.pop(ticket.batch_id, None)
                if not ids:
                    self.in_flight.pop(ticket.app_id, None)
            if ticket.dedup_key is not None and self.in_flight_keys.get(ticket.dedup_key) is ticket:
                del self.in_flight_keys[ticket.dedup_key]
        self._notify()

    def detach(self) -> list[CommitTicket]:
        """The open group's tickets, for a unit being taken; the next group starts empty."""
        tickets, self.open, self.requested = self.open, [], False
        return tickets

    def abandon(self, tickets: list[CommitTicket], error: BaseException) -> None:
        """Taking ``tickets`` failed: each raises ``error``."""
        self._resolve(tickets, None, error)

    def fail(self, error: BaseException) -> None:
        """Nothing more will be committed: every open ticket raises ``error``."""
        self.error = error
        self._resolve(self.detach(), None, error)

    def decide(
        self,
        record: TxnRecord,
        decision: BatchDecision,
        app_id: str,
        batch_id: int,
        on_stale: str,
        num_rows: int,
    ) -> CommitTicket | None:
        """The ticket of a batch id that is not new, given ``decision`` (against the published
        ``record``) and the ids in flight: a replay, the same id as one in flight (its ticket
        follows that one), or stale with ``on_stale="skip"``; None for a new id.

        Raises:
            StaleBatchError: the id is below the last one committed or in flight.
        """
        last = record.applied.get(app_id)
        in_flight = self.in_flight.get(app_id, {})
        if decision is BatchDecision.NEW and in_flight:
            if batch_id in in_flight:  # joins the commit that holds it
                ticket = CommitTicket(self.drive, 0)
                in_flight[batch_id].follow(ticket)
                return ticket
            if batch_id < max(in_flight):
                decision, last = BatchDecision.STALE, max(in_flight)
        if decision is BatchDecision.NEW:
            return None
        if decision is BatchDecision.STALE:
            if on_stale == "error":
                assert last is not None
                raise StaleBatchError(app_id, batch_id, last)
            logger.warning(
                "Skipped batch %d of app id %r (on_stale='skip'): it is below the last "
                "committed batch id %s, so its %d rows are not written.",
                batch_id,
                app_id,
                last,
                num_rows,
            )
        ticket = CommitTicket(self.drive, 0)
        ticket.resolve(TableCommit(record.version, 0, dict(record.partitions), skipped=True), None)
        return ticket

    def decide_key(self, record: TxnRecord, key: bytes, remembered: bool) -> CommitTicket | None:
        """The ticket of an append whose dedup ``key`` is not new: committed within the window
        (``remembered``: resolved now, ``skipped=True``, at the published ``record``) or in
        flight (it follows that ticket); None for a new key."""
        if remembered:
            ticket = CommitTicket(self.drive, 0)
            skipped = TableCommit(record.version, 0, dict(record.partitions), skipped=True)
            ticket.resolve(skipped, None)
            return ticket
        first = self.in_flight_keys.get(key)
        if first is None:
            return None
        ticket = CommitTicket(self.drive, 0)
        first.follow(ticket)
        return ticket

    # -- taking and committing ------------------------------------------------------------

    async def _take_open(self) -> None:
        unit = await self._take()
        if unit is not None:
            self.taken.append(unit)
            self._notify()

    async def _commit_first(self) -> None:
        unit = self.taken[0]
        result: TableCommit | None = None
        error: BaseException | None = None
        try:
            result = await self._commit(unit)
        except Exception as exc:  # every ticket of the unit raises it; the table is poisoned
            error = exc
        finally:
            if result is None and error is None:
                error = StateError("The commit was cancelled before it was durable.")
            self.taken.popleft()
            self._resolve(unit.tickets, result, error)

    async def drive(self, ticket: CommitTicket) -> None:
        """Return once ``ticket`` is resolved; outside ``async with``, commit meanwhile."""
        while not ticket.done:
            if self.background:
                await ticket._event.wait()
                return
            if self._leading or not (self.taken or self.open):
                await self._wait_changed()
                continue
            self._leading = True
            try:
                with anyio.CancelScope(shield=True):
                    if not self.taken:
                        await self._take_open()
                    if self.taken:
                        await self._commit_first()
            finally:
                self._leading = False
                self._notify()

    async def take_now(self) -> None:
        """Take the open group in the calling task (where the commit policy cuts a commit),
        once fewer than ``max_taken`` units are in flight (inside ``async with``; outside
        it the caller commits next)."""
        while self.background and len(self.taken) >= self.max_taken and self.error is None:
            await self._wait_changed()
        if self.open and self.error is None:
            with anyio.CancelScope(shield=True):
                await self._take_open()

    async def wait_for_room(self) -> None:
        """Backpressure: wait while ``max_pending`` appends are accepted and not durable."""
        while self.num_pending >= self.max_pending and self.error is None:
            oldest = self.taken[0].tickets[0] if self.taken and self.taken[0].tickets else None
            if oldest is None and self.open:
                self.request()
                oldest = self.open[0]
            if oldest is None:
                await self._wait_changed()
            else:
                await self.drive(oldest)

    # -- background tasks (inside ``async with``) -------------------------------------------

    async def run_taker(self) -> None:
        """Take the open group whenever a commit is requested and there is room."""
        while True:
            while not (self.requested and self.open and len(self.taken) < self.max_taken):
                await self._wait_changed()
            with contextlib.suppress(Exception):  # its tickets raise it; the table is poisoned
                await self._take_open()

    async def run_committer(self) -> None:
        """Commit taken units in order."""
        while True:
            while not self.taken:
                await self._wait_changed()
            with anyio.CancelScope(shield=True):
                await self._commit_first()
