"""SIGKILL a writer whose commits seal segments (and compact) on a table with a skipping
store: whatever the kill leaves, the store never prunes wrongly.

The child (``_skipping_child.py``) appends batches with ``segment_row_groups=1``, so every
commit seals the segments it follows and adds their entries to the store (files written and
fsynced before the ``_txn`` publish); every fifth batch it compacts (the merged entry added,
the retired ones removed in the swap's ``_txn``). The parent kills it after a random delay and
checks the table as readers see it, before any writer recovers it:

- every store entry ``_txn`` lists names a listed segment at the size ``_txn`` lists;
- for needle and range filters, ``read_snapshot(...).read(filters=f)`` equals the full read
  filtered, and ``files(filters=f)`` keeps every segment holding a matching row;

then the next child reopens (recovers) the table and goes on. ``STREAMWRITE_SKIPPING_CRASH_KILLS``
sets the number of kills (6 for CI); ``STREAMWRITE_SKIPPING_CRASH_SEED`` replays a run.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.compute as pc

from streamwrite.format.txn import TXN_FILE, decode_txn
from streamwrite.predicate import bind, parse_filters, to_arrow
from streamwrite.reader.file import ParquetFile
from streamwrite.table.api import read_snapshot
from tests.table.crash._support import SCHEMA
from tests.table.test_skipping_table import _same

ROOT = Path(__file__).resolve().parents[3]
CHILD = Path(__file__).with_name("_skipping_child.py")
KILLS = int(os.environ.get("STREAMWRITE_SKIPPING_CRASH_KILLS", "6"))


def _filters(last: int) -> list[object]:
    k = max(0, last)
    return [
        [("tag", "==", f"b{k}-r7")],
        [("tag", "in", [f"b{max(0, k - 1)}-r0", "nope"])],
        [("batch_id", "==", k)],
        [("batch_id", ">=", max(0, k - 2))],
        pc.field("value") > 2.5,
        [("tag", "!=", "b0-r0")],
    ]


def _check(path: Path) -> tuple[int, int]:
    record = decode_txn((path / TXN_FILE).read_bytes())
    listed = dict(record.files())
    skipping = record.skipping or {}
    for name, size in dict(skipping.get("segments", {})).items():
        assert listed.get(name) == size, (name, size, listed.get(name))
    snapshot = read_snapshot(path)
    full = snapshot.read()
    last = record.applied.get("crash", -1)
    for filters in _filters(last):
        predicate = to_arrow(bind(parse_filters(filters), SCHEMA))
        expected = full.filter(predicate)
        assert _same(snapshot.read(filters=filters), expected), filters
        kept = {p for p, _ in snapshot.files(filters=filters)}
        # every segment with a matching row survives the pruning
        for (name, size), data in zip(snapshot.files, snapshot.data_files(), strict=True):
            if str(data) not in kept:
                with ParquetFile(path / name, snapshot=size) as pf:
                    assert not pf.read().filter(predicate).num_rows, (filters, name)
    return last, len(skipping["store"]["segments"]) if skipping.get("store") else 0


def test_kills_never_leave_a_store_that_prunes_wrongly(tmp_path: Path) -> None:
    seed = int(os.environ.get("STREAMWRITE_SKIPPING_CRASH_SEED", random.randrange(1 << 30)))
    print("seed", seed)
    rng = random.Random(seed)
    path = tmp_path / "t"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    acknowledged = -1
    entries = 0
    for _ in range(KILLS):
        child = subprocess.Popen(
            [sys.executable, str(CHILD), str(path)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(rng.uniform(1.0, 6.0))
        child.kill()
        out, err = child.communicate()
        lines = out.split()
        if lines:
            acknowledged = int(lines[-1])
        assert "Traceback" not in err, err
        if (path / TXN_FILE).exists():
            last, held = _check(path)
            print(f"batch {last} acknowledged {acknowledged}, {held} store entries")
            assert last in (acknowledged, acknowledged + 1)
            entries = max(entries, held)
    assert entries > 0  # the kills landed on a table whose store was in use
