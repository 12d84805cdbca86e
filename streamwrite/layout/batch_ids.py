"""Exactly-once batch ids: the decision an append with ``(app_id, batch_id)`` takes (no I/O).

``_txn`` records, per app id, the highest batch id committed (``applied``). A new batch id is
decided against it::

    last is None or batch_id > last   NEW      commit the rows, record batch_id
    batch_id == last                  REPLAY   a quiet skip: Spark's foreachBatch replays the
                                               last batch after a failure (at-least-once)
    batch_id <  last                  STALE    not a replay: a query restarted from a new
                                               checkpoint under the same app id (its ids start
                                               at 0 again) would lose every row silently, so
                                               it is StaleBatchError unless on_stale="skip"
                                               (skip with a warning)

This is Delta Lake's txnAppId/txnVersion rule, made strict about ids that go backwards.
"""

from __future__ import annotations

import numbers
from enum import Enum

from streamwrite.errors import ConfigError

__all__ = ["ON_STALE", "BatchDecision", "check_batch_id", "check_on_stale", "decide_batch"]

ON_STALE = ("error", "skip")
"""What an append does with a batch id below the last committed one for its app id."""


class BatchDecision(Enum):
    """What to do with a batch id, given the last one committed for its app id."""

    NEW = "new"
    REPLAY = "replay"
    STALE = "stale"


def check_on_stale(on_stale: str) -> None:
    """Raise ConfigError unless ``on_stale`` is one of :data:`ON_STALE`."""
    if on_stale not in ON_STALE:
        raise ConfigError(f"on_stale must be one of {list(ON_STALE)}, got {on_stale!r}.")


def check_batch_id(app_id: str | None, batch_id: object, on_stale: str) -> int | None:
    """``batch_id`` as an ``int`` once the exactly-once arguments are checked.

    Returns:
        The batch id (None when both ``app_id`` and ``batch_id`` are None).

    Raises:
        ConfigError: ``app_id`` without ``batch_id`` or the reverse, an ``app_id`` that is
            not a non-empty string, a ``batch_id`` that is negative or not an integer
            (``bool`` included), or ``on_stale`` not one of ``"error"``, ``"skip"``.
    """
    check_on_stale(on_stale)
    if (app_id is None) != (batch_id is None):
        raise ConfigError(
            f"app_id and batch_id go together; got app_id={app_id!r}, batch_id={batch_id!r}."
        )
    if app_id is None:
        return None
    if not isinstance(app_id, str) or not app_id:
        raise ConfigError(f"app_id must be a non-empty string, got {app_id!r}.")
    if isinstance(batch_id, bool) or not isinstance(batch_id, numbers.Integral):
        raise ConfigError(f"batch_id must be an integer, got {batch_id!r} for app id {app_id!r}.")
    if batch_id < 0:
        raise ConfigError(f"batch_id must be 0 or more, got {batch_id} for app id {app_id!r}.")
    return int(batch_id)


def decide_batch(last_batch_id: int | None, batch_id: int) -> BatchDecision:
    """The decision for ``batch_id`` when ``last_batch_id`` is the last one committed."""
    if last_batch_id is None or batch_id > last_batch_id:
        return BatchDecision.NEW
    return BatchDecision.REPLAY if batch_id == last_batch_id else BatchDecision.STALE
