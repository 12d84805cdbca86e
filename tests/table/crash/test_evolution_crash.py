"""Crash test for schema evolution: SIGKILL a process that appends and adds columns, recover.

A child (``_evolve_child.py``) appends batches ``make_batch(k)`` (plus one int64 column per
added column, holding ``k``) with ``app_id="crash", batch_id=k`` through the commit pipeline and
calls ``Table.add_columns`` every third batch while that batch's commit is in flight. The
parent kills it after a random delay and starts the next child on the same table (which
recovers it). After each kill:

- ``_txn`` holds the old schema or the new one, never a mix: its schema history is
  consistent (versions increasing, each schema a prefix of the next, the last one the
  table's schema; the added columns are ``c0, c1, ...`` in order), and every column whose
  ``add_columns`` was acknowledged is there (durable on return);
- every listed segment's committed prefix reads with pyarrow (page checksums verified) and
  has the columns of a schema of the history: no segment was published with a schema
  ``_txn`` does not know;
- ``applied`` is the last acknowledged batch id or one more; ``streamwrite.read_table`` gives
  exactly the rows of batches ``0..applied``, each whole and once, in the current schema: an
  added column of a batch is null in all its rows or holds ``k`` in all of them;
- on even kills the parent reopens the table: then every segment directory on disk is listed
  in ``_txn`` (the ones a crash left unpublished are deleted), and the rows are unchanged.

``STREAMWRITE_EVOLVE_CRASH_KILLS`` sets the number of kills (8 for CI);
``STREAMWRITE_EVOLVE_CRASH_SEED`` replays a run (the seed is printed).
"""

from __future__ import annotations

import io
import itertools
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import streamwrite
from streamwrite.arrow.evolution import is_prefix
from streamwrite.arrow.schema import decode_arrow_schema
from streamwrite.format.txn import TXN_FILE, TxnRecord, decode_txn
from streamwrite.table.api import open_table
from tests.table.crash._evolve_child import OPTIONS
from tests.table.crash._support import APP_ID, SCHEMA, batch_rows

KILLS = int(os.environ.get("STREAMWRITE_EVOLVE_CRASH_KILLS", "8"))
SEED = int(os.environ.get("STREAMWRITE_EVOLVE_CRASH_SEED", str(random.randrange(1 << 32))))
CHILD = Path(__file__).with_name("_evolve_child.py")
ROOT = Path(__file__).resolve().parents[3]
MAX_BATCH = 60
CHILD_TIMEOUT = 60.0


def run_child(directory: Path, delay: float) -> tuple[list[str], str]:
    """Start a child on ``directory`` and SIGKILL it ``delay`` seconds after it opened the
    table (or after it wrote ``full``). Returns its complete lines and its stderr."""
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(directory), str(MAX_BATCH)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        cwd=ROOT,
    )
    assert proc.stdout is not None
    try:
        head = proc.stdout.readline()
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=CHILD_TIMEOUT)
    finally:
        proc.kill()
        proc.wait()
    stderr = err.decode(errors="replace")
    assert proc.returncode == -signal.SIGKILL, f"the child exited with {proc.returncode}: {stderr}"
    lines = (head + out).decode().split("\n")
    lines.pop()  # cut by the kill, or "" after the last newline
    return lines, stderr


def check_history(record: TxnRecord, where: str) -> list[pa.Schema]:
    """The schema history is one of a consistent sequence; returns it."""
    history = [decode_arrow_schema(s) for _, s in record.schema_history]
    versions = [v for v, _ in record.schema_history]
    assert versions == sorted(set(versions)) and versions[-1] <= record.version, where
    assert history[0].equals(SCHEMA) and history[-1].equals(decode_arrow_schema(record.schema))
    for older, newer in itertools.pairwise(history):
        assert is_prefix(older, newer) and len(newer) == len(older) + 1, where
    added = history[-1].names[len(SCHEMA) :]
    assert added == [f"c{i}" for i in range(len(added))], where
    return history


def check_segments(directory: Path, record: TxnRecord, history: list[pa.Schema]) -> None:
    names = {tuple(schema.names) for schema in history}
    for name, size in record.files():
        data = (directory / name / "data.parquet").read_bytes()[:size]
        table = pq.read_table(io.BytesIO(data), page_checksum_verification=True)
        assert tuple(table.column_names) in names, (name, table.column_names)


def check_rows(directory: Path, applied: int, where: str) -> None:
    got = streamwrite.read_table(directory)
    assert got.num_rows == sum(batch_rows(k) for k in range(applied + 1)), where
    got = got.take(pc.sort_indices(got, [("batch_id", "ascending"), ("row", "ascending")]))
    batch_ids = got["batch_id"].to_numpy()
    rows = got["row"].to_numpy()
    start = 0
    for k in range(applied + 1):  # each batch whole, once, in order
        n = batch_rows(k)
        assert (batch_ids[start : start + n] == k).all(), (where, k)
        assert (rows[start : start + n] == range(n)).all(), (where, k)
        for name in got.column_names[len(SCHEMA) :]:
            column = got[name].slice(start, n)
            nulls = column.null_count
            assert nulls in (0, n), (where, k, name, nulls)
            if not nulls:
                assert pc.all(pc.equal(column, k)).as_py(), (where, k, name)
        start += n


def reopen(directory: Path, where: str) -> None:
    async def go() -> None:
        table = await open_table(directory, **OPTIONS)
        await table.close()

    anyio.run(go)
    record = decode_txn((directory / TXN_FILE).read_bytes())
    listed = {name for name, _ in record.files()}
    on_disk = {
        f"{partition.name}/{segment.name}"
        for partition in directory.iterdir()
        if partition.is_dir()
        for segment in partition.iterdir()
    }
    assert on_disk == listed, (where, on_disk - listed)


def test_sigkill_while_adding_columns(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    print(f"STREAMWRITE_EVOLVE_CRASH_SEED={SEED}")
    directory = tmp_path / "t"
    last_ack, columns_acked, stats = -1, -1, {"added": 0, "unacknowledged": 0}
    for kill in range(KILLS):
        where = f"kill {kill} (seed {SEED})"
        lines, stderr = run_child(directory, rng.uniform(0.05, 1.5))
        words = [line.split() for line in lines]
        assert words and words[0][0] == "open", (where, lines, stderr)
        assert int(words[0][1]) in (last_ack, last_ack + 1), (where, words[0])
        acks = [int(w[0]) for w in words if w[0].isdigit()]
        added = [int(w[1]) for w in words if w[0] == "added"]
        assert acks == list(range(int(words[0][1]) + 1, int(words[0][1]) + 1 + len(acks))), where
        if added:
            columns_acked = added[-1]
        record = decode_txn((directory / TXN_FILE).read_bytes())
        history = check_history(record, where)
        assert len(history[-1]) - len(SCHEMA) >= columns_acked + 1, (where, columns_acked)
        applied = record.applied.get(APP_ID, -1)
        last_ack = acks[-1] if acks else int(words[0][1])
        assert applied in (last_ack, last_ack + 1), (where, applied, last_ack)
        stats["unacknowledged"] += applied - last_ack
        stats["added"] += len(added)
        last_ack = applied
        check_segments(directory, record, history)
        check_rows(directory, applied, where)
        if kill % 2 == 0:
            reopen(directory, where)
            check_rows(directory, applied, where)
        if applied >= MAX_BATCH:
            directory = tmp_path / f"t{kill}"
            last_ack, columns_acked = -1, -1
    print(f"evolution crash stats: {stats}")
    assert stats["added"] > 0
