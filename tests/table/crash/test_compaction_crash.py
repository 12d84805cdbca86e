"""Crash tests for compaction: SIGKILL a compacting process at every step, and at random while
ingest runs, then check that nothing was lost, repeated or mixed.

Compaction steps (``streamwrite.compaction.policy.STEPS``) are ``write`` (the merged segment, under
``_data.pending``), ``publish`` (renamed to ``data.parquet``), ``swap`` (a ``_txn`` lists it and
retires the run it replaces), ``retire`` (the run's ``data.parquet`` files are renamed to
``_data.retired``), ``sweep`` (retired segments are deleted) and ``done``. The children are
``_compact_child.py``, each in its own process group.

``test_sigkill_at_every_compaction_step``: a table of batches ``BATCHES`` (three day partitions
of many two-row-group segments of row groups of 40 rows or fewer) is built once, and a reference
copy is compacted to completion in this process. For every step and the first and second
compacted partition, a copy of the table goes to a child that runs ``compact()`` with a hook that
kills its own process at the start of that step; a few more children are killed by the parent
a random moment into writing a merged segment (bounded by how long the reference took). After
each kill:

- each partition of ``_txn`` is exactly as before compaction or exactly as in the reference
  (merged segment in place of the run), and it is the one the hook's lines imply: compacted
  once the ``retire`` line of that partition was written, as before if its ``swap`` line was not
  (either after a parent kill between the two); ``retired`` names exactly the run of a partition
  killed between its swap and its sweep;
- on disk, every listed segment is there, and any other segment directory is retired or is the
  merged segment of the partition that was killed before its swap (unpublished);
- pyarrow (page checksums verified) reads each listed segment's committed prefix, and
  ``streamwrite.read_table`` reads the table: both give the rows of before, sorted by
  ``(batch_id, row)``, each row in the partition of its day;
- reopening with a long grace period deletes unpublished segments, keeps retired ones (their
  data renamed to ``_data.retired``, also when the kill came before the ``retire`` step was
  done) and leaves ``_txn`` alone, and ``pyarrow.parquet.read_table`` of the table directory
  (Hive partitions, as engines read it) gives exactly the rows of before; reopening with
  ``grace_seconds=0`` sweeps them, and ``compact()`` runs to
  ``done`` for every partition: no segment of a reference run is listed any more, nothing is
  retired or left on disk beyond the listed segments, and the rows are still those of before.

``test_sigkill_ingest_and_compaction_at_random_moments``: a child appends batches
``make_batch(k)`` with ``app_id="crash", batch_id=k`` (acknowledging each; encoded inline, or on
a ``ProcessPool(2)`` for one child in ``POOL_EVERY``) with background commits, while a second
task loops ``compact()``: appends commit while segments are merged, swapped and swept. The parent
kills the child's process group a random moment after it reports the start of a compaction step
(cycling through the steps, at its first, second or third time), after its first
acknowledgement, or after its start (imports, pool, recovery), and starts the next child on the
same table (which replays its last batch ids: each must be skipped). After each kill: the
acknowledgements are consecutive from where the last child stopped, ``applied`` is the last one
or one more, every listed segment is on disk, and the rows (pyarrow and streamwrite, as above)
are exactly batches ``0..applied``, each whole and once. On even kills the parent reopens the
table (recovery; the next child does it on odd kills): then nothing but the listed segments is
left on disk and nothing is retired, ``applied`` and the rows are unchanged, and replaying the
last batch skips it.

``test_a_compacted_table_needs_no_more_compaction`` shows a library bug (expected to fail): the
merged segment's own superseded footers pass ``dead_ratio``, so compaction never settles.

``STREAMWRITE_COMPACT_CRASH_KILLS`` sets the number of random kills (8 for CI);
``STREAMWRITE_COMPACT_CRASH_SEED`` replays a run (the seed is printed, with a stats line).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.compaction.policy import STEPS, CompactionPolicy
from streamwrite.format.txn import TXN_FILE, TxnRecord, decode_txn
from streamwrite.pool.process import sweep_dead_segments
from streamwrite.table.api import open_table
from tests.table.crash._compact_child import (
    INGEST_OPTIONS,
    REPLAYED,
    TABLE_OPTIONS,
)
from tests.table.crash._support import APP_ID, SCHEMA, make_batch

KILLS = int(os.environ.get("STREAMWRITE_COMPACT_CRASH_KILLS", "8"))
SEED = int(os.environ.get("STREAMWRITE_COMPACT_CRASH_SEED", str(random.randrange(1 << 32))))
CHILD = Path(__file__).with_name("_compact_child.py")
ROOT = Path(__file__).resolve().parents[3]
BATCHES = tuple(range(0, 30, 6))
"""Batches starting on the first day and spanning two: partitions 2026-01-01 .. 2026-01-03."""
OCCURRENCES = (0, 1)
"""The hook kills at a step of the first or the second compacted partition."""
MID_WRITE_KILLS = 4
PARALLEL_CHILDREN = 2
"""Step kills run on copies of the table, this many at a time."""
MAX_BATCH = 60
"""The ingest table is replaced by a fresh one once it holds this many batches."""
POOL_EVERY = 4
"""One ingest child in this many encodes on a ``ProcessPool(2)`` (slow to start), the others
inline."""
LONG_GRACE = CompactionPolicy(grace_seconds=3600, min_small_row_groups=2)
CHILD_TIMEOUT = 60.0


# -- children ------------------------------------------------------------------------------


@dataclass
class ChildReport:
    """What a killed child wrote, line by line (a line cut by the kill is dropped)."""

    lines: list[str]
    stderr: str
    opened: int | None = None
    skipped: list[int] = field(default_factory=list)
    acks: list[int] = field(default_factory=list)
    steps: list[tuple[str, int]] = field(default_factory=list)
    """``steps`` mode: (step, occurrence) in order; ``ingest`` mode: (step, -1)."""
    compactions: int = 0
    """``compact()`` calls that returned (ingest mode)."""


def run_child(
    args: list[str],
    kill_after: Callable[[str], bool] | None = None,
    delay: float | None = None,
) -> ChildReport:
    """Run ``_compact_child.py args`` in its own process group and SIGKILL the group ``delay``
    seconds after it writes a line ``kill_after`` accepts (after its end of output, if no line
    does), or ``delay`` seconds after its start without ``kill_after``; with neither, wait
    for the child to kill itself."""
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        cwd=ROOT,
        start_new_session=True,  # the child, its pool's forkserver and workers: one group
    )
    assert proc.stdout is not None
    try:
        head = b""
        if kill_after is not None:
            while True:
                line = proc.stdout.readline()
                head += line
                if not line or kill_after(line.decode().rstrip("\n")):
                    break
        if delay is not None:
            time.sleep(delay)
            _kill_group(proc)
        out, err = proc.communicate(timeout=CHILD_TIMEOUT)
    finally:
        _kill_group(proc)
        proc.wait()
    stderr = err.decode(errors="replace")
    assert proc.returncode == -signal.SIGKILL, f"the child exited with {proc.returncode}: {stderr}"
    lines = (head + out).decode().split("\n")
    lines.pop()  # a line cut by the kill (or "" after the last newline) says nothing
    report = ChildReport(lines, stderr)
    for line in lines:
        words = line.split()
        if words[0] == "open":
            report.opened = int(words[1])
        elif words[0] == "skip":
            report.skipped.append(int(words[1]))
        elif words[0] == "step":
            report.steps.append((words[1], -1))
        elif words[0] in STEPS:
            report.steps.append((words[0], int(words[1])))
        elif words[0] == "compacted":
            report.compactions += 1
        elif words[0].isdigit():
            report.acks.append(int(words[0]))
    return report


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's process group (its id outlives the child while members remain)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


# -- what is on disk -----------------------------------------------------------------------


def txn_of(directory: Path) -> TxnRecord:
    return decode_txn((directory / TXN_FILE).read_bytes())


def segment_dirs(directory: Path) -> set[str]:
    """Every ``partition/seg-N`` directory on disk."""
    return {f"{p.parent.name}/{p.name}" for p in directory.glob("*/seg-*") if p.is_dir()}


def listed(record: TxnRecord) -> set[str]:
    return {name for name, _ in record.files()}


def retired(record: TxnRecord) -> set[str]:
    return {r.path for r in record.retired}


def sorted_rows(table: pa.Table) -> pa.Table:
    return table.sort_by([("batch_id", "ascending"), ("row", "ascending")])


def read_directory(directory: Path) -> pa.Table:
    """The table directory read as an engine reads it (``pq.read_table``: Hive partitions,
    ``_``-prefixed names skipped), without the partition column, sorted by ``(batch_id, row)``."""
    rows = pq.read_table(directory, page_checksum_verification=True)
    days = pc.strftime(rows.column("ts"), format="%Y-%m-%d")
    assert rows.column("ts_day").cast(pa.string()).equals(days), "rows in the wrong partition"
    return sorted_rows(rows.drop_columns(["ts_day"]))


def read_rows(directory: Path, record: TxnRecord) -> pa.Table:
    """The rows of ``record``: pyarrow reads each listed segment's committed prefix (page
    checksums verified; each row must sit in the partition of its day), and must agree with
    ``streamwrite.read_table`` on the table directory. Sorted by ``(batch_id, row)``."""
    parts = []
    for name, size in record.files():
        with open(directory / name / "data.parquet", "rb") as f:
            data = f.read(size)
        assert len(data) == size, f"segment {name} is shorter than its _txn size {size}"
        part = pq.read_table(pa.BufferReader(data), page_checksum_verification=True)
        days = pc.strftime(part.column("ts"), format="%Y-%m-%d").unique().to_pylist()
        partition = name.split("/")[0].removeprefix("ts_day=")
        assert days in ([], [partition]), f"segment {name} holds rows of {days}"
        parts.append(part)
    rows = pa.concat_tables(parts) if parts else SCHEMA.empty_table()
    ours = streamwrite.read_table(directory)
    assert ours.equals(rows), "streamwrite reads the table differently from pyarrow"
    return sorted_rows(rows)


def expected_rows(batch_ids: tuple[int, ...] | range) -> pa.Table:
    if not batch_ids:
        return SCHEMA.empty_table()
    return sorted_rows(pa.concat_tables([make_batch(k) for k in batch_ids]))


def check_batches(rows: pa.Table, applied: int, where: str) -> None:
    """``rows`` (sorted) are exactly batches ``0..applied``, each whole and once."""
    ids, counts = np.unique(rows.column("batch_id").to_numpy(), return_counts=True)
    assert np.array_equal(ids, np.arange(applied + 1)), f"{where}: batch ids {ids.tolist()}"
    bad = [
        (int(k), int(c), make_batch(int(k)).num_rows)
        for k, c in zip(ids, counts, strict=True)
        if c != make_batch(int(k)).num_rows
    ]
    assert not bad, f"{where}: (batch id, rows, want) of partial or repeated batches: {bad}"
    assert rows.equals(expected_rows(range(applied + 1))), f"{where}: batch contents differ"


# -- step kills ----------------------------------------------------------------------------


async def build_table(directory: Path, batch_ids: tuple[int, ...] = BATCHES) -> None:
    table = await open_table(directory, SCHEMA, timestamp="ts", partition_by="day", **TABLE_OPTIONS)
    try:
        for k in batch_ids:
            await table.append(make_batch(k), app_id=APP_ID, batch_id=k)
    finally:
        await table.close()


@dataclass(frozen=True)
class Reference:
    """The uninterrupted compaction of the prepared table."""

    record: TxnRecord
    partitions: tuple[str, ...]
    """Compacted partitions, in the order compaction takes them (a hook occurrence indexes it)."""
    runs: tuple[frozenset[str], ...]
    """Each compacted partition's merged run, as ``partition/segment`` paths."""
    merged: tuple[str, ...]
    """Each compacted partition's merged segment, as a ``partition/segment`` path."""
    write_seconds: tuple[float, ...]


async def compact_reference(directory: Path) -> Reference:
    table = await open_table(directory, **TABLE_OPTIONS)
    started: dict[tuple[str, int], float] = {}

    def hook(name: str) -> None:
        started[name, sum(step == name for step, _ in started)] = time.perf_counter()

    try:
        results = await table.compact(hook=hook)
    finally:
        await table.close()
    return Reference(
        txn_of(directory),
        tuple(r.partition for r in results),
        tuple(frozenset(f"{r.partition}/{name}" for name in r.merged) for r in results),
        tuple(f"{r.partition}/{r.segment.name}" for r in results),
        tuple(started["swap", i] - started["write", i] for i in range(len(results))),
    )


async def reopen_within_grace(directory: Path) -> None:
    table = await open_table(directory, **{**TABLE_OPTIONS, "compaction": LONG_GRACE})
    await table.close()


async def reopen_and_compact(directory: Path) -> tuple[TxnRecord, set[str]]:
    """Reopen (sweeping with no grace) and compact to the end; returns the ``_txn`` and the
    segment directories right after the open."""
    table = await open_table(directory, **TABLE_OPTIONS)
    try:
        opened, on_disk = txn_of(directory), segment_dirs(directory)
        steps: list[str] = []
        results = await table.compact(hook=steps.append)
        assert steps == list(STEPS) * len(results), steps
    finally:
        await table.close()
    return opened, on_disk


@dataclass
class StepStats:
    kills: Counter[str] = field(default_factory=Counter)
    """Kills by the step whose line the child wrote last (``write-mid``: the parent killed
    it while it wrote a merged segment)."""
    old: int = 0
    new: int = 0
    """Compacted partitions found as before compaction, and as compacted."""
    unpublished: int = 0
    retired_on_disk: int = 0
    partial_merged: int = 0
    """Parent kills that left a merged segment with committed row groups, unpublished."""

    def add(self, other: StepStats) -> None:
        self.kills.update(other.kills)
        self.old += other.old
        self.new += other.new
        self.unpublished += other.unpublished
        self.retired_on_disk += other.retired_on_disk
        self.partial_merged += other.partial_merged


@dataclass(frozen=True)
class Prepared:
    """The table every step kill starts from (a copy of ``base``), and its compaction."""

    base: Path
    before: TxnRecord
    rows_before: pa.Table
    ref: Reference


def check_step_kill(
    directory: Path, table: Prepared, report: ChildReport, exact: bool, where: str
) -> StepStats:
    """The checks of the module docstring after one kill (``exact``: the hook killed the
    child, so the lines say exactly how far it got).

    Returns:
        What the kill left behind.
    """
    before, rows_before, ref = table.before, table.rows_before, table.ref
    stats = StepStats()
    record = txn_of(directory)
    printed = set(report.steps)
    maybe_retired: set[str] = set()
    maybe_unpublished: set[str] = set()
    for i, partition in enumerate(ref.partitions):
        got = record.partitions[partition]
        old, new = before.partitions[partition], ref.record.partitions[partition]
        if ("retire", i) in printed:
            assert got == new, f"{where}: {partition} is not compacted: {got}"
            if ("done", i) not in printed:
                maybe_retired |= ref.runs[i]
        elif ("swap", i) not in printed and (exact or ("write", i) not in printed):
            # A timed (write-mid) kill after "write i" may land after the swap, before its
            # line: the child can run faster than the reference run that set the timing.
            assert got == old, f"{where}: {partition} changed before its swap: {got}"
            if ("write", i) in printed:
                maybe_unpublished.add(ref.merged[i])
        else:
            assert got in (old, new), f"{where}: {partition} is neither old nor new: {got}"
            maybe_unpublished.add(ref.merged[i])
            maybe_retired |= ref.runs[i]
        stats.new += got == new
        stats.old += got == old
    for partition in set(before.partitions) - set(ref.partitions):
        assert record.partitions[partition] == before.partitions[partition], where
    assert retired(record) <= maybe_retired, f"{where}: retired {retired(record)}"
    on_disk = segment_dirs(directory)
    assert listed(record) <= on_disk, f"{where}: listed segments are gone"
    extra = on_disk - listed(record)
    assert extra <= retired(record) | maybe_unpublished, f"{where}: stray segments {extra}"
    if exact:
        (step, i) = report.steps[-1]
        assert retired(record) == (ref.runs[i] if step in ("retire", "sweep") else set()), where
        unpublished = {ref.merged[i]} if step in ("publish", "swap") else set()
        assert extra == retired(record) | unpublished, (
            f"{where}: on disk beyond the listed segments: {extra}"
        )
    stats.unpublished += bool(extra - retired(record))
    stats.retired_on_disk += bool(extra & retired(record))
    for name in extra - retired(record):
        pm = directory / name / "_pm"
        stats.partial_merged += not exact and pm.exists() and pm.stat().st_size > 0
    assert read_rows(directory, record).equals(rows_before), f"{where}: rows differ"

    anyio.run(reopen_within_grace, directory)
    assert txn_of(directory) == record, f"{where}: reopening changed _txn"
    kept = segment_dirs(directory)
    assert kept == listed(record) | (retired(record) & on_disk), (
        f"{where}: after reopening within the grace period: {kept}, before: {on_disk}"
    )
    for name in retired(record) & on_disk:
        assert not (directory / name / "data.parquet").exists(), f"{where}: {name} not retired"
    assert read_directory(directory).equals(rows_before), f"{where}: engines read other rows"

    opened, on_disk = anyio.run(reopen_and_compact, directory)
    assert not opened.retired and on_disk == listed(opened), f"{where}: {opened.retired} kept"
    record = txn_of(directory)
    assert not record.retired and segment_dirs(directory) == listed(record), where
    for run in ref.runs:
        assert not run & listed(record), f"{where}: {run & listed(record)} still listed"
    assert read_rows(directory, record).equals(rows_before), f"{where}: rows differ at the end"
    return stats


def kill_at_step(table: Prepared, directory: Path, step: str, i: int, delay: float) -> StepStats:
    """Copy the table to ``directory``, kill a child compacting it at ``step`` of compacted
    partition ``i`` (``write-mid``: ``delay`` seconds into writing its merged segment), check.

    Returns:
        What the kill left behind.
    """
    where = f"seed {SEED}, kill at {step} of partition #{i} ({table.ref.partitions[i]})"
    shutil.copytree(table.base, directory)
    if step == "write-mid":
        report = run_child(
            ["steps", str(directory), "none", "0"], lambda line: line == f"write {i}", delay
        )
        last = report.steps[-1][0] if report.steps else "open"
        landed = "write-mid" if last == "write" else last
    else:
        report = run_child(["steps", str(directory), step, str(i)])
        assert report.steps[-1] == (step, i), f"{where}: the child wrote {report.lines}"
        landed = step
    assert report.opened == table.before.applied[APP_ID], f"{where}: {report.lines}"
    stats = check_step_kill(directory, table, report, step != "write-mid", where)
    stats.kills[landed] += 1
    shutil.rmtree(directory)
    return stats


@pytest.mark.timeout(300)
def test_sigkill_at_every_compaction_step(tmp_path: Path) -> None:
    print(f"STREAMWRITE_COMPACT_CRASH_SEED={SEED}")
    rng = random.Random(SEED)
    base = tmp_path / "base"
    anyio.run(build_table, base)
    before = txn_of(base)
    rows_before = read_rows(base, before)
    assert rows_before.equals(expected_rows(BATCHES))
    shutil.copytree(base, tmp_path / "reference")
    ref = anyio.run(compact_reference, tmp_path / "reference")
    assert len(ref.partitions) > max(OCCURRENCES), f"compacted only {ref.partitions}"
    assert all(len(run) > 2 for run in ref.runs), f"runs too short to test: {ref.runs}"
    assert read_rows(tmp_path / "reference", ref.record).equals(rows_before)

    table = Prepared(base, before, rows_before, ref)
    scenarios = [(step, i, 0.0) for i in OCCURRENCES for step in STEPS]
    for n in range(MID_WRITE_KILLS):
        i = n % len(ref.partitions)
        scenarios.append(("write-mid", i, rng.uniform(0.0, ref.write_seconds[i])))
    with ThreadPoolExecutor(PARALLEL_CHILDREN) as pool:
        futures = [
            pool.submit(kill_at_step, table, tmp_path / f"kill-{n}", *scenario)
            for n, scenario in enumerate(scenarios)
        ]
        stats = StepStats()
        for future in futures:
            stats.add(future.result())
    print(f"step kills: {dict(stats.kills)}, {stats}")
    assert stats.kills.total() == len(scenarios)


# -- random kills with ingest --------------------------------------------------------------


@dataclass
class IngestStats:
    kills: int = 0
    targets: Counter[str] = field(default_factory=Counter)
    """What the parent waited for before its random delay: a step line, an ack, the start."""
    landed: Counter[str] = field(default_factory=Counter)
    """The last compaction line the child wrote before the kill (``idle``: none since its
    last ``compact()`` returned, or none at all)."""
    acknowledged: int = 0
    unacknowledged: int = 0
    skipped: int = 0
    compactions: int = 0
    partitions_compacted: int = 0
    during_startup: int = 0
    unpublished: int = 0
    retired_on_disk: int = 0
    reopened: int = 0
    tables: int = 1


async def reopen_and_replay(directory: Path, applied: int) -> TxnRecord:
    """Recover the table (no grace: retired segments go) and replay batch ``applied``."""
    table = await open_table(directory, **INGEST_OPTIONS)
    try:
        if applied >= 0:
            commit = await table.append(make_batch(applied), app_id=APP_ID, batch_id=applied)
            assert commit is not None and commit.skipped, commit
        return txn_of(directory)
    finally:
        await table.close()


def kill_ingest_child(
    directory: Path, target: str, executor: str, rng: random.Random
) -> ChildReport:
    args = ["ingest", str(directory), str(MAX_BATCH), executor]
    if target == "start":
        return run_child(args, None, rng.uniform(0.0, 1.5))  # imports, pool, recovery
    if target == "ack":
        return run_child(args, lambda line: line[:1].isdigit(), rng.uniform(0.0, 0.5))
    seen = rng.randint(1, 3)  # kill at the first, second or third time the step starts

    def kill_after(line: str) -> bool:
        nonlocal seen
        seen -= line == f"step {target}"
        return seen == 0 or line == "full"

    # Writing a merged segment takes a while; a swap, sweep or return is over in milliseconds.
    return run_child(args, kill_after, rng.uniform(0.0, 0.05 if target == "write" else 0.005))


@pytest.mark.timeout(max(300, 10 * KILLS))
def test_sigkill_ingest_and_compaction_at_random_moments(tmp_path: Path) -> None:
    print(f"STREAMWRITE_COMPACT_CRASH_SEED={SEED} STREAMWRITE_COMPACT_CRASH_KILLS={KILLS}")
    rng = random.Random(SEED)
    targets = [*STEPS, "ack", "start"]
    stats = IngestStats()
    directory = tmp_path / "t-0"
    known = -1  # the highest batch id known to be committed
    try:
        for kill in range(KILLS):
            where = f"seed {SEED}, kill {kill}, {directory.name}"
            target = targets[kill % len(targets)]
            executor = "pool" if kill % POOL_EVERY == 1 else "inline"
            report = kill_ingest_child(directory, target, executor, rng)
            stats.kills += 1
            stats.targets[target] += 1
            last = "idle"
            for line in report.lines:
                if line.startswith("step "):
                    last = line.split()[1]
                elif line.startswith("compacted"):
                    last = "idle"
            stats.landed[last] += 1
            stats.compactions += report.compactions
            stats.partitions_compacted += report.steps.count(("done", -1))
            if report.opened is None:
                stats.during_startup += 1
                assert not report.acks and not report.steps, f"{where}: {report.lines}"
            else:
                assert report.opened == known, f"{where}: the child resumed after {report.opened}"
                replayed = list(range(max(0, known + 1 - REPLAYED), known + 1))
                assert report.skipped == replayed[: len(report.skipped)], f"{where}: replays"
            stats.skipped += len(report.skipped)
            acks = report.acks
            assert acks == list(range(known + 1, known + 1 + len(acks))), f"{where}: acks {acks}"
            stats.acknowledged += len(acks)
            last_ack = acks[-1] if acks else known
            if not (directory / TXN_FILE).exists():  # killed before the table was created
                assert last_ack == -1, where
                continue

            record = txn_of(directory)
            applied = record.applied.get(APP_ID, -1)
            assert last_ack <= applied <= last_ack + 1, f"{where}: applied {applied}"
            stats.unacknowledged += applied > last_ack
            on_disk = segment_dirs(directory)
            assert listed(record) <= on_disk, f"{where}: listed segments are gone"
            extra = on_disk - listed(record)
            stats.unpublished += bool(extra - retired(record))
            stats.retired_on_disk += bool(extra & retired(record))
            check_batches(read_rows(directory, record), applied, where)
            if kill % 2 == 0:
                record = anyio.run(reopen_and_replay, directory, applied)
                stats.reopened += 1
                assert record.applied.get(APP_ID, -1) == applied, where
                assert not record.retired and segment_dirs(directory) == listed(record), (
                    f"{where}: after reopening, {segment_dirs(directory) - listed(record)} "
                    "beyond the listed segments"
                )
                check_batches(read_rows(directory, record), applied, f"{where}, reopened")
                assert read_directory(directory).equals(read_rows(directory, record)), (
                    f"{where}: engines read the reopened table directory differently"
                )
            known = applied

            if known >= MAX_BATCH:
                shutil.rmtree(directory)
                stats.tables += 1
                directory = tmp_path / f"t-{stats.tables - 1}"
                known = -1
    finally:
        sweep_dead_segments()  # pools killed with their process group leave their arenas
    print(f"kills by target: {dict(stats.targets)}; by landing step: {dict(stats.landed)}; {stats}")
    assert stats.acknowledged >= KILLS, "the children acknowledged too few batches"
    assert stats.partitions_compacted > 0, "no child finished compacting a partition"


# -- regressions found on the way ----------------------------------------------------------


def test_a_compacted_table_needs_no_more_compaction(tmp_path: Path) -> None:
    """Regression: the merged segment was committed every 4 row groups; its own superseded
    footers passed dead_ratio, so the compactor rewrote what it had just written, forever."""
    anyio.run(build_table, tmp_path / "t", tuple(range(0, 60, 6)))  # ~75 row groups a day

    async def compact_and_plan() -> list[tuple[str, tuple[str, ...]]]:
        table = await open_table(tmp_path / "t", **TABLE_OPTIONS)
        try:
            await table.compact()
            return [(s.partition, s.reasons) for s in await table.compaction_status() if s.compact]
        finally:
            await table.close()

    # The background compactor's plan right after compact() names the segments compact()
    # just wrote, e.g. [('2026-01-01', ('seg-000040: dead bytes 72% of the file',)), ...].
    assert anyio.run(compact_and_plan) == []
