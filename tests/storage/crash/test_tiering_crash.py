"""Crash tests of tiering against a real S3-compatible server (moto over HTTP): SIGKILL a
tiering process at every step of a move, and at random while ingest and tiering run, then
reopen and check that nothing was lost, repeated or left behind.

Move steps (``streamwrite.layout.tiering.MOVE_STEPS``): ``upload``, ``verify`` (killed there:
after the upload), ``publish`` (after the verification), ``log`` (after the ``_txn`` publish),
``retire`` (after the log object's put), ``done`` (after the local copy was retired). The
children are ``_tier_child.py``, each in its own process group, reaching the server through
the JSON storage options.

``test_sigkill_at_every_move_step``: a table of batches ``0..NUM_BATCHES - 1`` (two day
partitions of one-row-group segments) is built once; for every step and the first and second
move of a round, a copy of it (its own cold root in the bucket) goes to a child whose hook
kills it at the start of that step. After each kill:

- ``_txn`` lists the segment being moved as cold exactly when the kill came after its
  ``publish``; the rows read from ``_txn`` (cold segments from their objects, local ones from
  their files, each at its committed size) are exactly the batches, once each;
- reopening recovers the cold root: the segment objects in the bucket are exactly the cold
  segments of ``_txn`` (an upload never published is deleted), the newest log object is the
  cold view of ``_txn``, no cold segment keeps a local copy (the grace period is 0), and the
  rows are unchanged;
- a complete ``tier()`` round then moves every segment, and the rows are still the same.

``test_sigkill_ingest_and_tiering_at_random_moments``: a child appends batches with
``app_id="crash"`` (acknowledging each) while background and explicit tiering run; the parent
kills its process group a random moment after it starts, after its first acknowledgement, or
after a move step, and starts the next child on the same table. After each kill the
acknowledgements are consecutive from where the last child stopped, ``applied`` is the last
one or one more, and the rows are exactly batches ``0..applied``; on even kills the parent
reopens the table (recovery; the next child does it on odd kills) and checks the cold root as
above. ``STREAMWRITE_TIER_CRASH_KILLS`` sets the number of kills (4 for CI);
``STREAMWRITE_TIER_CRASH_SEED`` replays a run (the seed is printed).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pytest

from streamwrite.format.txn import (
    DATA_FILE,
    TXN_LOG_DIR,
    TxnRecord,
    decode_txn_payload,
    txn_log_version,
)
from streamwrite.io.remote import ObjectStore, open_store
from streamwrite.layout.tiering import MOVE_STEPS, cold_paths, segment_object_path
from streamwrite.table.api import open_table
from streamwrite.testing.s3 import S3Server
from tests.storage._tiering_support import SCHEMA, TABLE_OPTIONS, read_record, read_rows
from tests.storage.crash._tier_child import APP_ID, ROWS, batch

ROOT = Path(__file__).resolve().parents[3]
CHILD = Path(__file__).with_name("_tier_child.py")
NUM_BATCHES = 3
"""Batches of the step-kill table: 6 segments (3 a day), so a round makes 6 moves."""
KILLS = int(os.environ.get("STREAMWRITE_TIER_CRASH_KILLS", "4"))
CHILD_TIMEOUT = 120.0


def _spawn(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        cwd=ROOT,
        start_new_session=True,
    )


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=CHILD_TIMEOUT)


def _reference(num_batches: int) -> pa.Table:
    if num_batches <= 0:
        return SCHEMA.empty_table()
    return pa.concat_tables([batch(k) for k in range(num_batches)]).sort_by("id")


async def _build(directory: Path) -> None:
    table = await open_table(directory, SCHEMA, **{**TABLE_OPTIONS, "cold_after": 0.0})
    try:
        for k in range(NUM_BATCHES):
            await table.append(batch(k), app_id=APP_ID, batch_id=k)
    finally:
        await table.close()


async def _open_close(directory: Path, url: str, options: dict[str, Any]) -> TxnRecord:
    table = await open_table(directory, cold_storage=url, storage_options=options, **TABLE_OPTIONS)
    try:
        assert table.last_tiering_error is None
        return table.record
    finally:
        await table.close()


async def _tier(directory: Path, url: str, options: dict[str, Any]) -> list[str]:
    table = await open_table(directory, cold_storage=url, storage_options=options, **TABLE_OPTIONS)
    try:
        return await table.tier()
    finally:
        await table.close()


def _check_cold_root(directory: Path, store: ObjectStore, record: TxnRecord) -> None:
    """After a recovery: the bucket holds exactly the cold segments, the newest log is the
    cold view, and no cold segment has a local copy left."""
    keys = store.list("")
    objects = {p for key in keys if (p := segment_object_path(key)) is not None}
    assert objects == cold_paths(record)
    versions = [
        v
        for key in keys
        if key.startswith(f"{TXN_LOG_DIR}/")
        and (v := txn_log_version(key.rsplit("/", 1)[1])) is not None
    ]
    if record.cold is None:
        assert versions == []
    else:
        newest = max(versions)
        assert newest <= record.version
        view = decode_txn_payload(store.read_all(f"{TXN_LOG_DIR}/{newest:020d}.json"))
        assert view.partitions == record.cold_view().partitions
        assert view.schema == record.schema
    for path in cold_paths(record):
        assert not (directory / path / DATA_FILE).exists(), path
    assert record.retired == ()  # grace 0: swept at open


@pytest.mark.parametrize("occurrence", [0, 1])
@pytest.mark.parametrize("step", MOVE_STEPS)
def test_sigkill_at_every_move_step(
    tmp_path: Path,
    s3_server: S3Server,
    bucket: str,
    storage_options: dict[str, Any],
    step: str,
    occurrence: int,
) -> None:
    directory = tmp_path / "table"
    anyio.run(_build, directory)
    reference = _reference(NUM_BATCHES)
    url = f"s3://{bucket}/ticks"
    store = open_store(url, storage_options)
    assert read_rows(directory, store).equals(reference)

    proc = _spawn("steps", str(directory), url, json.dumps(storage_options), step, str(occurrence))
    out, err = proc.communicate(timeout=CHILD_TIMEOUT)
    lines = out.decode().split()
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, out, err.decode()[-3000:])
    assert f"{step} {occurrence}" in " ".join(out.decode().splitlines())

    record = read_record(directory)
    published = MOVE_STEPS.index(step) > MOVE_STEPS.index("publish")
    num_cold = len(cold_paths(record))
    assert num_cold == occurrence + (1 if published else 0), (step, occurrence, num_cold, lines)
    assert record.applied == {APP_ID: NUM_BATCHES - 1}
    assert read_rows(directory, store).equals(reference)

    reopened = anyio.run(_open_close, directory, url, storage_options)
    assert cold_paths(reopened) == cold_paths(record)
    _check_cold_root(directory, store, reopened)
    assert read_rows(directory, store).equals(reference)

    moved = anyio.run(_tier, directory, url, storage_options)
    final = read_record(directory)
    assert len(moved) == 2 * NUM_BATCHES - num_cold
    assert all(s.is_cold for segments in final.partitions.values() for s in segments)
    _check_cold_root(directory, store, final)
    assert read_rows(directory, store).equals(reference)


def _read_lines(proc: subprocess.Popen[bytes], until: str | None, timeout: float) -> list[str]:
    """Lines of the child's stdout until one starting with ``until`` (None: the first one)."""
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        raw = proc.stdout.readline()
        if not raw:
            break
        line = raw.decode().strip()
        lines.append(line)
        if until is None or line.startswith(until):
            break
    return lines


def test_sigkill_ingest_and_tiering_at_random_moments(
    tmp_path: Path, bucket: str, storage_options: dict[str, Any]
) -> None:
    seed = int(os.environ.get("STREAMWRITE_TIER_CRASH_SEED", random.randrange(1 << 30)))
    print(f"STREAMWRITE_TIER_CRASH_SEED={seed}")
    rng = random.Random(seed)
    directory = tmp_path / "table"
    url = f"s3://{bucket}/ticks"
    store = open_store(url, storage_options)
    max_batch = 10_000
    applied = -1
    moves_seen = 0
    for kill in range(KILLS):
        proc = _spawn("ingest", str(directory), url, json.dumps(storage_options), str(max_batch))
        try:
            lines = _read_lines(proc, "open", CHILD_TIMEOUT)
            assert lines and lines[-1].startswith("open"), (lines, proc.poll())
            opened = int(lines[-1].split()[1])
            assert opened in (applied, applied + 1), (opened, applied)
            wait_for = rng.choice(["step", "ack", "now"])
            if wait_for == "step":
                lines += _read_lines(proc, f"step {rng.choice(MOVE_STEPS)}", CHILD_TIMEOUT)
            elif wait_for == "ack":
                lines += _read_lines(proc, str(opened + 1), CHILD_TIMEOUT)
            time.sleep(rng.uniform(0.0, 0.3))
        finally:
            _kill_group(proc)
        assert proc.stdout is not None
        lines += proc.stdout.read().decode().split("\n")
        acks = [int(line) for line in lines if line.isdigit()]
        assert acks == list(range(opened + 1, opened + 1 + len(acks))), acks
        moves_seen += sum(line == "step done" for line in lines)
        record = read_record(directory)
        applied = record.applied.get(APP_ID, -1)
        last_ack = acks[-1] if acks else opened
        assert applied in (last_ack, last_ack + 1), (applied, last_ack)
        assert read_rows(directory, store).equals(_reference(applied + 1)), (kill, applied)
        if kill % 2 == 0:
            reopened = anyio.run(_open_close, directory, url, storage_options)
            assert reopened.applied.get(APP_ID, -1) == applied
            _check_cold_root(directory, store, reopened)
            assert read_rows(directory, store).equals(_reference(applied + 1))
    print(f"kills={KILLS} batches={applied + 1} moves={moves_seen} rows={(applied + 1) * ROWS}")
    anyio.run(_tier, directory, url, storage_options)
    final = read_record(directory)
    _check_cold_root(directory, store, final)
    assert read_rows(directory, store).equals(_reference(applied + 1))
    shutil.rmtree(directory)
