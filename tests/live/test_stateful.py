"""The live file's commit protocol under injected failures: the hypothesis state machine of
:mod:`streamwrite.testing.live_machine` (its docstring states the model, rules and invariants).

``STREAMWRITE_STATEFUL_EXAMPLES`` sets max_examples (default 30).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from streamwrite.layout.actions import LiveFileName, WriteAt
from streamwrite.testing.live_machine import LiveFileMachine, is_commit_point

EXAMPLES = int(os.environ.get("STREAMWRITE_STATEFUL_EXAMPLES", "30"))


def test_commit_state_machine() -> None:
    run_state_machine_as_test(
        LiveFileMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=15,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


def test_the_commit_point_is_the_pm_header_patch() -> None:
    assert is_commit_point(WriteAt(LiveFileName.PM, 0, b"header"))
    assert not is_commit_point(WriteAt(LiveFileName.PM, 8, b"tail"))
    assert not is_commit_point(WriteAt(LiveFileName.DATA, 0, b"PAR1"))
