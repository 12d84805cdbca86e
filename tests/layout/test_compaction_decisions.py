"""The compaction decisions of :mod:`streamwrite.layout.compaction`, driven without I/O.

* Which run of a partition's segments merges (``plan_partition``), whether merging improves it,
  when the newest segment must be sealed (``needs_seal``), and how long background compaction
  waits for an idle partition (``idle_wait``): examples, then hypothesis properties over random
  partitions and policies.
* The way of each row group of a merge (``MergePlan``): examples for raw copy, merging small
  row groups, absorbing a full row group, encrypted runs, sorting and a raw copy that fails;
  then hypothesis properties over random runs, checked by tracking each row through the
  actions: every row lands once and in order, at most the last merged row group is small,
  only full unencrypted row groups are copied raw, ordinals count up from 0.
* Misuse raises StateError / ConfigError; importing the module loads no numpy, pyarrow, anyio,
  cryptography or workers.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwrite.errors import ConfigError, StateError
from streamwrite.layout.compaction import (
    CopyRaw,
    EncodeHeld,
    HoldRows,
    MergeAction,
    MergePlan,
    PartitionStatus,
    SegmentInfo,
    SortHeld,
    Way,
    idle_wait,
    merge_improves,
    needs_seal,
    over_limits,
    plan_partition,
    small_rows,
    target_rows,
)
from streamwrite.options import CompactionPolicy

EXAMPLES = int(os.environ.get("STREAMWRITE_COMPACTION_EXAMPLES", "200"))
ROOT = Path(__file__).resolve().parents[2]


def _info(name: str, rows: list[int], dead: int = 0, size: int = 1000) -> SegmentInfo:
    return SegmentInfo(name, size, tuple(rows), dead, False)


# -- which segments ----------------------------------------------------------------------------


def test_target_and_small_rows_come_from_the_policy_else_the_table() -> None:
    assert target_rows(CompactionPolicy(), 1000) == 1000
    assert target_rows(CompactionPolicy(target_row_group_rows=300), 1000) == 300
    assert small_rows(CompactionPolicy(small_fraction=0.25), 1000) == 250


def test_over_limits_names_each_limit_passed() -> None:
    policy = CompactionPolicy(dead_ratio=0.5, dead_bytes=500, max_row_groups=2)
    assert over_limits(_info("seg-000000", [1, 1], dead=100, size=1000), policy) == []
    reasons = over_limits(_info("seg-000007", [1, 1, 1], dead=600, size=1000), policy)
    assert reasons == [
        "seg-000007: dead bytes 60% of the file",
        "seg-000007: 600 dead bytes",
        "seg-000007: 3 row groups",
    ]
    assert over_limits(_info("seg-000000", [], dead=0, size=0), policy) == []  # empty file


def test_idle_wait_is_the_policy_unless_the_newest_segment_passes_a_limit() -> None:
    policy = CompactionPolicy(idle_seconds=30.0, dead_bytes=500)
    assert idle_wait(policy, _info("seg-000000", [10])) == 30.0
    assert idle_wait(policy, _info("seg-000000", [10], dead=501, size=10_000)) is None


def test_nothing_eligible_compacts_nothing_even_when_forced() -> None:
    segments = (_info("seg-000000", [1, 1, 1]), _info("seg-000001", [1]))
    status = plan_partition("p", segments, 0, 100, CompactionPolicy(min_small_row_groups=1))
    assert not status.compact and status.merge == ()
    assert status.reasons == (
        "nothing to do: 0 small row groups in 0 eligible segment(s) (limit 1), dead bytes "
        "under the limits",
    )
    assert not plan_partition("p", segments, 0, 100, CompactionPolicy(), force=True).compact


def test_one_segment_with_one_small_row_group_does_not_improve() -> None:
    policy = CompactionPolicy(min_small_row_groups=1)
    lone = (_info("seg-000000", [100, 100, 10]),)
    assert not merge_improves(list(lone), 1, [])
    assert not plan_partition("p", lone, 1, 100, policy).compact
    three = (_info("seg-000000", [100, 10]), _info("seg-000001", [10]), _info("seg-000002", [100]))
    assert merge_improves(list(three[:2]), 2, [])
    status = plan_partition("p", three, 3, 100, policy)
    assert status.compact and status.merge == ("seg-000000", "seg-000001")
    assert not needs_seal(status)


def test_needs_seal_when_the_run_reaches_the_newest_segment() -> None:
    policy = CompactionPolicy(min_small_row_groups=2)
    segments = (_info("seg-000000", [10]), _info("seg-000001", [10]))
    assert needs_seal(plan_partition("p", segments, 2, 100, policy))
    assert not needs_seal(plan_partition("p", segments, 1, 100, policy, force=True))
    assert not needs_seal(plan_partition("p", segments, 0, 100, policy))


@st.composite
def _partitions(draw: st.DrawFn) -> tuple[tuple[SegmentInfo, ...], int, int, CompactionPolicy]:
    num_segments = draw(st.integers(1, 6))
    segments = tuple(
        SegmentInfo(
            f"seg-{i:06d}",
            draw(st.integers(0, 5000)),
            tuple(draw(st.lists(st.integers(0, 200), max_size=6))),
            draw(st.integers(0, 3000)),
            draw(st.booleans()),
        )
        for i in range(num_segments)
    )
    policy = CompactionPolicy(
        dead_ratio=draw(st.floats(0.05, 1.0)),
        dead_bytes=draw(st.integers(1, 4000)),
        min_small_row_groups=draw(st.integers(1, 10)),
        small_fraction=draw(st.floats(0.05, 1.0)),
        max_row_groups=draw(st.integers(1, 8)),
    )
    return segments, draw(st.integers(0, num_segments)), draw(st.integers(1, 150)), policy


@settings(max_examples=EXAMPLES, deadline=None)
@given(_partitions(), st.booleans())
def test_plan_partition_properties(
    partition: tuple[tuple[SegmentInfo, ...], int, int, CompactionPolicy], force: bool
) -> None:
    segments, eligible, target, policy = partition
    status = plan_partition("p", segments, eligible, target, policy, force=force)
    assert (status.partition, status.segments, status.eligible) == ("p", segments, eligible)
    assert status.compact == bool(status.merge) and status.reasons
    candidates = segments[:eligible]
    small = small_rows(policy, target)
    num_small = [sum(rows < small for rows in info.row_group_rows) for info in candidates]
    limits = [r for info in candidates for r in over_limits(info, policy)]
    work = [i for i, info in enumerate(candidates) if num_small[i] or over_limits(info, policy)]
    if not status.compact:
        assert len(status.reasons) == 1 and status.reasons[0].startswith("nothing to do")
    else:
        # the run: a contiguous slice of the eligible segments, from the first that needs
        # work to the last that does, and merging it improves it
        names = [info.name for info in candidates]
        assert list(status.merge) == names[work[0] : work[-1] + 1]
        run = list(candidates[work[0] : work[-1] + 1])
        assert merge_improves(run, sum(num_small[work[0] : work[-1] + 1]), limits)
    improves = bool(work) and merge_improves(
        list(candidates[work[0] : work[-1] + 1]) if work else [],
        sum(num_small[work[0] : work[-1] + 1]) if work else 0,
        limits,
    )
    due = sum(num_small) >= policy.min_small_row_groups or bool(limits)
    assert status.compact == (improves and (due or force))
    if not force and status.compact:  # forcing never changes a merge that was due anyway
        forced = plan_partition("p", segments, eligible, target, policy, force=True)
        assert forced.merge == status.merge and forced.reasons == status.reasons
    assert needs_seal(status) == (status.compact and status.merge[-1] == segments[-1].name)
    assert (idle_wait(policy, segments[-1]) is None) == bool(over_limits(segments[-1], policy))


# -- the way of each row group -----------------------------------------------------------------


def test_full_row_groups_are_copied_raw_and_small_ones_merged() -> None:
    plan = MergePlan(100, 50)
    assert plan.way(100, encrypted=False) is Way.RAW_COPY
    assert plan.offer(100, Way.RAW_COPY) == [CopyRaw(100, 0)]
    assert plan.way(30, encrypted=False) is Way.PHYSICAL
    assert plan.offer(30, Way.PHYSICAL) == [HoldRows(30)]
    assert plan.offer(30, Way.PHYSICAL) == [HoldRows(30)]
    # 60 held back: not small, so they become a row group before the next raw copy
    assert plan.way(100, encrypted=False) is Way.RAW_COPY
    assert plan.offer(100, Way.RAW_COPY) == [EncodeHeld(60, 1), CopyRaw(100, 2)]
    assert plan.offer(40, Way.PHYSICAL) == [HoldRows(40)]
    assert plan.offer(45, Way.PHYSICAL) == [HoldRows(45)]
    assert plan.offer(40, Way.PHYSICAL) == [HoldRows(40), EncodeHeld(100, 3)]
    assert plan.held_rows == 25
    assert plan.finish() == [EncodeHeld(25, 4)]
    assert (plan.num_raw, plan.num_reencoded, plan.num_row_groups) == (2, 3, 5)


def test_a_full_row_group_behind_small_held_rows_is_absorbed() -> None:
    plan = MergePlan(100, 50)
    assert plan.offer(10, Way.PHYSICAL) == [HoldRows(10)]
    # 10 held rows are small: copying the next one raw would leave them a small row group
    assert plan.way(100, encrypted=False) is Way.PHYSICAL
    assert plan.offer(100, Way.PHYSICAL) == [HoldRows(100), EncodeHeld(110, 0)]
    assert plan.way(100, encrypted=False) is Way.RAW_COPY
    assert plan.finish() == []


def test_a_big_full_row_group_behind_held_rows_stays_whole() -> None:
    plan = MergePlan(100, 50)
    plan.offer(20, Way.PHYSICAL)
    assert plan.offer(250, Way.PHYSICAL) == [HoldRows(250), EncodeHeld(270, 0)]


def test_encrypted_runs_decode_into_arrow_but_copy_unencrypted_row_groups_raw() -> None:
    plan = MergePlan(100, 50, encrypted=True)
    assert plan.fallback is Way.ARROW
    assert plan.way(100, encrypted=True) is Way.ARROW
    assert plan.offer(100, Way.ARROW) == [HoldRows(100), EncodeHeld(100, 0)]
    assert plan.way(100, encrypted=False) is Way.RAW_COPY
    with pytest.raises(StateError, match="decodes row groups as arrow, not physical"):
        plan.offer(10, Way.PHYSICAL)


def test_sort_holds_everything_then_sorts_and_cuts() -> None:
    plan = MergePlan(100, 50, sort=True, timestamp="ts")
    assert plan.fallback is Way.ARROW
    assert plan.way(100, encrypted=False) is Way.ARROW
    assert plan.offer(100, Way.ARROW) == [HoldRows(100)]
    assert plan.offer(150, Way.ARROW) == [HoldRows(150)]
    assert plan.finish() == [
        SortHeld("ts"),
        EncodeHeld(100, 0),
        EncodeHeld(100, 1),
        EncodeHeld(50, 2),
    ]
    unsorted = MergePlan(100, 50, sort=True, timestamp=None)  # no timestamp: nothing to sort by
    unsorted.offer(10, Way.ARROW)
    assert unsorted.finish() == [EncodeHeld(10, 0)]


def test_a_raw_copy_that_fails_is_offered_decoded() -> None:
    plan = MergePlan(100, 50)
    plan.offer(30, Way.PHYSICAL)
    plan.offer(30, Way.PHYSICAL)
    assert plan.way(100, encrypted=False) is Way.RAW_COPY
    # the shell found the chunks cannot be copied (stored in another file): decode instead
    assert plan.offer(100, plan.fallback) == [HoldRows(100), EncodeHeld(160, 0)]


def test_misuse_raises() -> None:
    plan = MergePlan(100, 50)
    with pytest.raises(StateError, match="cannot be copied raw"):
        plan.offer(10, Way.RAW_COPY)  # small
    plan.offer(10, Way.PHYSICAL)
    with pytest.raises(StateError, match="cannot be copied raw now \\(10 rows held back"):
        plan.offer(100, Way.RAW_COPY)
    with pytest.raises(StateError, match="cannot hold -1 rows"):
        plan.offer(-1, Way.PHYSICAL)
    assert plan.finish() == [EncodeHeld(10, 0)]
    with pytest.raises(StateError, match="finished"):
        plan.offer(1, Way.PHYSICAL)
    with pytest.raises(StateError, match="finished"):
        plan.finish()
    with pytest.raises(StateError, match="cannot be copied raw"):
        MergePlan(100, 50, sort=True).offer(100, Way.RAW_COPY)
    with pytest.raises(ConfigError, match="target=0"):
        MergePlan(0, 50)
    with pytest.raises(ConfigError, match="small=0"):
        MergePlan(10, 0)


@dataclass
class _Output:
    way: str
    rows: list[int]
    ordinal: int
    sources: list[int] = field(default_factory=list)
    """Indexes of the source row groups whose rows it holds."""


@dataclass(frozen=True)
class _Source:
    num_rows: int
    encrypted: bool
    raw_fails: bool


def _drive(plan: MergePlan, sources: list[_Source]) -> tuple[list[_Output], list[MergeAction]]:
    """Execute the plan's actions on row ids (row i of the run is i), as the shell would."""
    held: list[tuple[int, int]] = []  # (row id, source index)
    outputs: list[_Output] = []
    finish_actions: list[MergeAction] = []
    next_row = 0

    def execute(actions: list[MergeAction], index: int, rows: list[int]) -> None:
        nonlocal held
        for action in actions:
            if isinstance(action, HoldRows):
                assert action.num_rows == len(rows)
                held += [(row, index) for row in rows]
            elif isinstance(action, CopyRaw):
                assert action.num_rows == len(rows)
                outputs.append(_Output("raw", rows, action.ordinal, [index]))
            elif isinstance(action, EncodeHeld):
                assert 0 < action.num_rows <= len(held)
                taken, held = held[: action.num_rows], held[action.num_rows :]
                rows_taken = [row for row, _ in taken]
                origins = sorted({origin for _, origin in taken})
                outputs.append(_Output("encoded", rows_taken, action.ordinal, origins))
            else:
                assert isinstance(action, SortHeld)

    for index, source in enumerate(sources):
        way = plan.way(source.num_rows, encrypted=source.encrypted)
        if way is Way.RAW_COPY and source.raw_fails:
            way = plan.fallback
        rows = list(range(next_row, next_row + source.num_rows))
        next_row += source.num_rows
        execute(plan.offer(source.num_rows, way), index, rows)
    finish_actions = plan.finish()
    execute(finish_actions, -1, [])
    assert held == [] and plan.held_rows == 0
    return outputs, finish_actions


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    st.lists(
        st.builds(_Source, st.integers(0, 250), st.booleans(), st.booleans()),
        max_size=25,
    ),
    st.integers(1, 120),
    st.floats(0.05, 1.0),
    st.booleans(),
    st.sampled_from([None, "ts"]),
)
def test_merge_plan_properties(
    sources: list[_Source], target: int, small_fraction: float, sort: bool, timestamp: str | None
) -> None:
    small = small_fraction * target
    encrypted = any(source.encrypted for source in sources)
    plan = MergePlan(target, small, sort=sort, timestamp=timestamp, encrypted=encrypted)
    outputs, finish_actions = _drive(plan, sources)
    total = sum(source.num_rows for source in sources)
    starts = [sum(source.num_rows for source in sources[:i]) for i in range(len(sources))]
    # every row lands once, in order (a sort reorders rows by value, not by row id)
    assert [row for output in outputs for row in output.rows] == list(range(total))
    assert [output.ordinal for output in outputs] == list(range(len(outputs)))
    assert all(output.rows for output in outputs)
    # at most one small row group, the last
    assert all(len(output.rows) >= small for output in outputs[:-1])
    for output in outputs:
        if output.way == "raw":
            source = sources[output.sources[0]]
            assert not sort and not source.encrypted and not source.raw_fails
            assert source.num_rows >= small
        elif len(output.rows) > target:  # only a full source row group absorbed whole
            index = output.sources[-1]
            last = sources[index]
            assert not sort and last.num_rows >= small
            whole = list(range(starts[index], starts[index] + last.num_rows))
            assert output.rows[-last.num_rows :] == whole
    assert plan.num_raw == sum(output.way == "raw" for output in outputs)
    assert plan.num_reencoded == len(outputs) - plan.num_raw == plan.num_row_groups - plan.num_raw
    if sort:
        assert all(len(output.rows) == target for output in outputs[:-1])
        sorts = [a for a in finish_actions if isinstance(a, SortHeld)]
        assert sorts == ([SortHeld("ts")] if timestamp and total else [])
    assert plan.fallback is (Way.ARROW if sort or encrypted else Way.PHYSICAL)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(st.booleans(), max_size=20), st.integers(1, 50))
def test_full_unencrypted_row_groups_are_all_copied_raw(encrypted: list[bool], target: int) -> None:
    """A run of full row groups re-encodes exactly its encrypted ones, each alone."""
    sources = [_Source(target, flag, False) for flag in encrypted]
    plan = MergePlan(target, target / 2, encrypted=any(encrypted))
    outputs, _ = _drive(plan, sources)
    assert [output.way == "raw" for output in outputs] == [not flag for flag in encrypted]
    assert [output.sources for output in outputs] == [[i] for i in range(len(encrypted))]


def test_importing_the_decisions_loads_no_outer_ring() -> None:
    code = (
        "import sys, streamwrite.layout.compaction; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('numpy', 'pyarrow', 'anyio', 'cryptography', 'workers', 'fsspec')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_status_is_a_frozen_value() -> None:
    status = plan_partition("p", (_info("seg-000000", [10, 10]),), 1, 100, CompactionPolicy())
    assert isinstance(status, PartitionStatus)
    with pytest.raises(AttributeError):
        status.compact = True  # type: ignore[misc]
