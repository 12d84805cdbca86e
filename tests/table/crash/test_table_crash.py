"""Crash test for tables: SIGKILL a pool-backed ingest process at random moments, then recover.

A child process (``_crash_child.py``) opens a table partitioned by day with a real
``ProcessPool(2)`` as its executor and appends batches with ``app_id="crash", batch_id=k`` for
``k`` = the ``_txn``'s ``applied["crash"]`` + 1, ..., printing ``k`` after each acknowledged
append. Every batch spans 2-3 days, so each commit touches 2-4 partitions: a kill can land
between two partition commits, or after them and before the ``_txn`` publish. The parent kills
the child after a random delay (a fifth of the time from its start, inside interpreter start,
pool start, table open or recovery; a fifth from the moment the table is open, which covers the
slow first append that creates partitions; the rest after the first acknowledgement), and runs
the next child on the same table, so children also recover from each other's crashes. The
table is replaced by a fresh one once it holds MAX_BATCH + 1 batches (footers grow per commit).

What the parent checks after each kill:

- the pool's workers and its forkserver exit with the killed child (their pipes close), and no
  ``sw_<child pid>_*`` shared-memory segment is left in ``/dev/shm``;
- the child resumed from exactly the batch the parent last saw committed, and its
  acknowledgements are consecutive batch ids;
- ``applied["crash"]`` in ``_txn`` is the last acknowledged batch id, or one more: a batch whose
  ``_txn`` publish (the table's commit point) happened before the kill but whose line was not yet
  written is legitimately committed (counted as "unacknowledged");
- pyarrow (``page_checksum_verification=True``) reads each partition's committed prefix (size from
  ``_txn``); sorted by ``(batch_id, row)`` the rows equal batches ``0..applied`` exactly: every
  committed batch is present with all its rows once, nothing beyond it, never part of a batch;
  every row sits in the partition of its day; streamwrite's ``read_snapshot`` reads the same rows;
- on even kills the parent reopens the table (``open_table``: partitions ahead of ``_txn`` are
  rolled back), checks every partition is back at its ``_txn`` size and ``pq.read_table`` of the
  table directory (as engines read it: Hive partitions, no torn tail left) gives the committed
  rows, and replays every batch id ``0..applied``: each append is skipped and adds nothing. On odd
  kills the rollback is left to the next child.

``STREAMWRITE_TABLE_CRASH_KILLS`` sets the number of kills (12 for CI, large nightly);
``STREAMWRITE_TABLE_CRASH_SEED`` replays a run (the seed is printed).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from streamwrite.format.txn import TXN_FILE, TxnRecord, decode_txn
from streamwrite.live.file import recover
from streamwrite.pool.process import SEGMENT_PREFIX
from streamwrite.table.api import open_table, read_snapshot
from tests.table.crash._support import APP_ID, make_batch

KILLS = int(os.environ.get("STREAMWRITE_TABLE_CRASH_KILLS", "12"))
SEED = int(os.environ.get("STREAMWRITE_TABLE_CRASH_SEED", str(random.randrange(1 << 32))))
MAX_BATCH = 60
CHILD = Path(__file__).with_name("_crash_child.py")
ROOT = Path(__file__).resolve().parents[3]
EXIT_TIMEOUT = 10.0  # seconds the pool processes and segments get to go after the kill


@dataclass
class Stats:
    kills: int = 0
    during_startup: int = 0
    acknowledged: int = 0
    unacknowledged: int = 0
    partitions_ahead: int = 0
    unpublished_segments: int = 0
    torn_tails: int = 0
    reopened: int = 0
    replayed: int = 0
    tables: int = 1


@dataclass
class ChildReport:
    pid: int
    pool_pids: list[int]
    opened: int | None
    acks: list[int]
    stderr: str


def kill_at_random_moment(directory: Path, rng: random.Random) -> ChildReport:
    """Start a child on ``directory``, SIGKILL it after a random delay, parse what it said."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(directory), str(MAX_BATCH)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        head = b""
        moment = rng.random()
        if moment < 0.2:  # from the start: interpreter, pool start, table open, recovery
            time.sleep(rng.uniform(0.0, 2.0))
        else:  # after the table is open (its first append is slow), or after its first ack
            opened = moment < 0.4
            while True:
                line = proc.stdout.readline()
                head += line
                if not line or (line.startswith(b"open") if opened else line[:1].isdigit()):
                    break
            time.sleep(rng.uniform(0.0, 1.0 if opened else 0.6))
        proc.kill()
        proc.wait()
        out = head + proc.stdout.read()
        err = proc.stderr.read().decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -9, f"the child exited by itself ({proc.returncode}): {err}"
    lines = out.decode().split("\n")
    lines.pop()  # a line cut by the kill (or "" after the last newline) acknowledges nothing
    report = ChildReport(proc.pid, [], None, [], err)
    for line in lines:
        words = line.split()
        if words[0] == "pool":
            report.pool_pids = [int(w) for w in words[1:]]
        elif words[0] == "open":
            report.opened = int(words[1])
        elif words[0] != "full":
            report.acks.append(int(words[0]))
    return report


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited


def _segments(pid: int) -> list[str]:
    return sorted(p.name for p in Path("/dev/shm").glob(f"{SEGMENT_PREFIX}{pid}_*"))


def assert_pool_gone(report: ChildReport, where: str) -> None:
    """The workers and the forkserver exit, and the segments are unlinked (by the resource
    tracker), shortly after the child is killed."""
    deadline = time.monotonic() + EXIT_TIMEOUT
    while time.monotonic() < deadline:
        alive = [pid for pid in report.pool_pids if _alive(pid)]
        left = _segments(report.pid)
        if not alive and not left:
            return
        time.sleep(0.05)
    assert not alive, f"{where}: pool processes {alive} outlived their killed parent"
    assert not left, f"{where}: shared-memory segments {left} leaked"


def expected_rows(applied: int) -> pa.Table:
    if applied < 0:
        return make_batch(0).schema.empty_table()
    return pa.concat_tables([make_batch(k) for k in range(applied + 1)])


def read_committed(directory: Path, record: TxnRecord) -> pa.Table:
    """Every partition's committed prefix (``_txn`` size) read by pyarrow, sorted by batch/row;
    checks each row is in the partition of its day."""
    parts = []
    for name, size in record.files():
        with open(directory / name / "data.parquet", "rb") as f:
            data = f.read(size)
        assert len(data) == size, name
        part = pq.read_table(pa.BufferReader(data), page_checksum_verification=True)
        days = pc.strftime(part.column("ts"), format="%Y-%m-%d").unique().to_pylist()
        partition = name.split("/")[0].removeprefix("ts_day=")
        assert days in ([], [partition]), f"segment {name} holds rows of {days}"
        parts.append(part)
    table = pa.concat_tables(parts) if parts else make_batch(0).schema.empty_table()
    ours = read_snapshot(directory).read()
    assert ours.equals(table), "streamwrite reads the snapshot differently from pyarrow"
    return table.sort_by([("batch_id", "ascending"), ("row", "ascending")])


def check_batches(table: pa.Table, applied: int, where: str) -> None:
    """Exactly batches 0..applied, each whole and once."""
    ids, counts = np.unique(table.column("batch_id").to_numpy(), return_counts=True)
    want = np.arange(applied + 1)
    assert np.array_equal(ids, want), f"{where}: batch ids {ids.tolist()}, want 0..{applied}"
    sizes = [make_batch(int(k)).num_rows for k in ids]
    bad = [(int(k), int(c), s) for k, c, s in zip(ids, counts, sizes, strict=True) if c != s]
    assert not bad, f"{where}: (batch id, rows, want) of partial or repeated batches: {bad}"
    assert table.equals(expected_rows(applied)), f"{where}: batch contents differ"


def partitions_ahead(directory: Path, record: TxnRecord) -> tuple[int, int, int]:
    """(segments whose live file committed past ``_txn``, segments with a torn tail,
    segment directories ``_txn`` does not list: created and not yet published)."""
    ahead = torn = unpublished = 0
    listed = dict(record.files())
    for child in sorted(p for p in directory.glob("*/seg-*") if (p / "data.parquet").exists()):
        name = f"{child.parent.name}/{child.name}"
        if name not in listed:
            unpublished += 1
            continue
        plan = recover(child, apply=False)
        torn += plan.torn_data_bytes > 0
        ahead += plan.current.parquet_size > listed[name]
        assert plan.current.parquet_size >= listed[name], f"segment {name} is behind _txn"
    return ahead, torn, unpublished


def reopen_and_replay(directory: Path, record: TxnRecord, applied: int) -> None:
    """open_table rolls back partitions ahead of _txn; replaying every batch id adds nothing."""

    async def go() -> None:
        table = await open_table(directory)
        try:
            assert table.version == record.version
            for k in range(applied + 1):
                commit = await table.append(
                    make_batch(k), app_id=APP_ID, batch_id=k, on_stale="skip"
                )
                assert commit is not None and commit.skipped, (k, commit)
            assert table.version == record.version
            assert table.metrics.commits == 0
        finally:
            await table.close()

    anyio.run(go)
    assert decode_txn((directory / TXN_FILE).read_bytes()) == record
    for name, size in record.files():
        assert recover(directory / name, apply=False).current.parquet_size == size, name
    on_disk = {f"{p.parent.name}/{p.name}" for p in directory.glob("*/seg-*")}
    assert on_disk == {name for name, _ in record.files()}, "unpublished segments survived"
    if not record.files():  # no data file yet: engines read no columns and no rows
        return
    rows = pq.read_table(directory, page_checksum_verification=True)
    days = pc.strftime(rows.column("ts"), format="%Y-%m-%d")
    assert rows.column("ts_day").cast(pa.string()).equals(days), "rows in the wrong partition"
    by_batch = rows.drop_columns(["ts_day"]).sort_by(
        [("batch_id", "ascending"), ("row", "ascending")]
    )
    assert by_batch.equals(read_committed(directory, record)), "engines read other rows"


@pytest.mark.timeout(max(300, 6 * KILLS))
def test_sigkill_pool_ingest_at_random_moments(tmp_path: Path) -> None:
    print(f"STREAMWRITE_TABLE_CRASH_SEED={SEED} STREAMWRITE_TABLE_CRASH_KILLS={KILLS}")
    rng = random.Random(SEED)
    stats = Stats()
    directory = tmp_path / "t-0"
    known = -1  # the highest batch id known to be committed
    for kill in range(KILLS):
        where = f"seed {SEED}, kill {kill}, {directory.name}"
        report = kill_at_random_moment(directory, rng)
        stats.kills += 1
        assert_pool_gone(report, where)
        if report.opened is None:
            stats.during_startup += 1
            assert not report.acks, where
        else:
            assert report.opened == known, f"{where}: the child resumed after {report.opened}"
        acks = report.acks
        assert acks == list(range(known + 1, known + 1 + len(acks))), f"{where}: acks {acks}"
        stats.acknowledged += len(acks)
        last_ack = acks[-1] if acks else known

        if not (directory / TXN_FILE).exists():  # killed before the table was created
            assert last_ack == -1, where
            continue
        record = decode_txn((directory / TXN_FILE).read_bytes())
        applied = record.applied.get(APP_ID, -1)
        assert last_ack <= applied <= last_ack + 1, f"{where}: applied {applied}, acked {last_ack}"
        stats.unacknowledged += applied > last_ack
        ahead, torn, unpublished = partitions_ahead(directory, record)
        stats.partitions_ahead += ahead > 0
        stats.torn_tails += torn > 0
        stats.unpublished_segments += unpublished > 0
        check_batches(read_committed(directory, record), applied, where)
        if kill % 2 == 0:
            reopen_and_replay(directory, record, applied)
            stats.reopened += 1
            stats.replayed += applied + 1
        known = applied

        if known >= MAX_BATCH:
            shutil.rmtree(directory)
            stats.tables += 1
            directory = tmp_path / f"t-{stats.tables - 1}"
            known = -1
    print(stats)
    assert stats.acknowledged >= KILLS, "the children acknowledged too few batches to test much"
