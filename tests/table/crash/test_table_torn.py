"""Torn writes of a table commit: every state a power loss can leave under the two sync rounds.

A table commit (``streamwrite.layout.appender``, ``streamwrite.layout.table``) writes each
segment's data, ``_pm`` blocks and ``_pm`` header without syncing, syncs all of them in one round
(in no order the disk promises), then writes the ``_txn`` slot in place and syncs it. So a power
loss during commit K+1 can leave, independently per file: ``data.parquet`` cut anywhere in its
append (or followed by garbage), ``_pm`` with its new header durable and its new blocks not (the
header is no barrier inside a table), or its blocks without the header, and the ``_txn`` slot of
version K+1 torn at any byte offset. A table tracks its commit in ``_txn`` only:

- while the slot of K+1 is not whole, opening the table brings the segment back to commit K
  exactly (``data.parquet`` byte for byte, ``_pm`` naming commit K: kept, or rebuilt from the
  footer chain when its header names a version whose blocks are torn);
- once it is whole, round 1 was complete before it (the protocol syncs round 1 first), and
  commit K+1 is the table's.

Damage is different: ``data.parquet`` shorter than the ``_txn`` size, or a footer there that is
not the one ``_txn`` recorded, is a CorruptFileError on open, and nothing is changed.

``STREAMWRITE_TORN_FULL=1`` sweeps every offset (CI samples them).
"""

from __future__ import annotations

import os
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

import anyio
import pyarrow as pa
import pytest

import streamwrite
from streamwrite.errors import CorruptFileError
from streamwrite.format.sidecar.codec import read_sidecar
from streamwrite.format.txn import (
    SLOT_HEADER_SIZE,
    TXN_FILE,
    UNPARTITIONED,
    decode_txn,
    encode_txn_payload,
    read_txn_slots,
)
from streamwrite.table.api import open_table, read_snapshot

FULL = os.environ.get("STREAMWRITE_TORN_FULL", "") not in ("", "0")
K = 3
ROWS = 5
SAMPLES = 40
SEGMENT = f"{UNPARTITIONED}/seg-000000"
SCHEMA = pa.schema([("ts", pa.timestamp("us")), ("v", pa.int64()), ("s", pa.string())])


def _rows(start: int, stop: int) -> pa.Table:
    return pa.table(
        {
            "ts": pa.array(range(start, stop), pa.timestamp("us")),
            "v": pa.array(range(start, stop), pa.int64()),
            "s": pa.array([f"row-{i}" for i in range(start, stop)]),
        },
        schema=SCHEMA,
    )


@dataclass(frozen=True)
class Reference:
    """The table's files after commit K and after commit K+1."""

    root: Path
    data_k: bytes
    pm_k: bytes
    txn_k: bytes
    data_k1: bytes
    pm_k1: bytes
    txn_k1: bytes

    @property
    def pm_new_header_old_blocks(self) -> bytes:
        """``_pm`` whose new header reached the disk but whose new blocks did not."""
        return self.pm_k1[:8] + self.pm_k[8:]

    @property
    def pm_new_header_torn_blocks(self) -> bytes:
        """``_pm`` with its new header and half of its new blocks."""
        half = (len(self.pm_k) + len(self.pm_k1)) // 2
        return self.pm_k1[:8] + self.pm_k1[8:half]

    @property
    def pm_blocks_old_header(self) -> bytes:
        """``_pm`` with its new blocks but the old header (commit K)."""
        return self.pm_k[:8] + self.pm_k1[8:]


async def _build(root: Path) -> Reference:
    options = {"compaction_interval": None, "segment_row_groups": 100}
    async with await open_table(root, SCHEMA, **options) as table:
        for k in range(K):
            await table.append(_rows(ROWS * k, ROWS * (k + 1)), app_id="a", batch_id=k)
    segment = root / SEGMENT
    data_k = (segment / "data.parquet").read_bytes()
    pm_k = (segment / "_pm").read_bytes()
    txn_k = (root / TXN_FILE).read_bytes()
    async with await open_table(root, **options) as table:
        await table.append(_rows(ROWS * K, ROWS * (K + 1)), app_id="a", batch_id=K)
    return Reference(
        root,
        data_k,
        pm_k,
        txn_k,
        (segment / "data.parquet").read_bytes(),
        (segment / "_pm").read_bytes(),
        (root / TXN_FILE).read_bytes(),
    )


@pytest.fixture(scope="module")
def ref(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    reference = anyio.run(_build, tmp_path_factory.mktemp("table-torn") / "t")
    # Appends only; _txn rewritten in place (same size, one slot changed); _pm's header patched.
    assert reference.data_k1.startswith(reference.data_k)
    assert reference.pm_k1[8 : len(reference.pm_k)] == reference.pm_k[8:]
    assert len(reference.txn_k) == len(reference.txn_k1)
    assert decode_txn(reference.txn_k).version + 1 == decode_txn(reference.txn_k1).version
    return reference


def _place(ref: Reference, root: Path, data: bytes, pm: bytes, txn: bytes) -> Path:
    shutil.copytree(ref.root, root)
    (root / SEGMENT / "data.parquet").write_bytes(data)
    (root / SEGMENT / "_pm").write_bytes(pm)
    (root / TXN_FILE).write_bytes(txn)
    return root


async def _reopen(root: Path) -> int:
    """Open the table (recovery), check it reads its rows, return the batches committed."""
    table = await open_table(root, compaction_interval=None)
    try:
        applied = table.record.applied["a"]
    finally:
        await table.close()
    rows = ROWS * (applied + 1)
    assert streamwrite.read_table(root).sort_by("v").equals(_rows(0, rows))
    return applied


def _expect_k(ref: Reference, root: Path, what: str) -> None:
    assert anyio.run(_reopen, root) == K - 1, what
    assert (root / SEGMENT / "data.parquet").read_bytes() == ref.data_k, what
    pm = read_sidecar((root / SEGMENT / "_pm").read_bytes())
    expected = read_sidecar(ref.pm_k)
    assert [f.parquet_file_size for _, f in pm.footers] == [
        f.parquet_file_size for _, f in expected.footers
    ], what
    assert [f.parquet_footer_checksum for _, f in pm.footers] == [
        f.parquet_footer_checksum for _, f in expected.footers
    ], what


def _cuts(ref: Reference, seed: int) -> list[int]:
    every = list(range(len(ref.data_k), len(ref.data_k1) + 1))
    if FULL:
        return every
    edges = {every[0], every[0] + 1, every[-1] - 1, every[-1], *every[-10:]}
    return sorted(edges | set(random.Random(seed).sample(every, min(SAMPLES, len(every)))))


PM_STATES = [
    "pm at K",
    "new header, old blocks",
    "new header, torn blocks",
    "blocks, old header",
    "pm at K+1",
]


def _pm_state(ref: Reference, state: str) -> bytes:
    return {
        "pm at K": ref.pm_k,
        "new header, old blocks": ref.pm_new_header_old_blocks,
        "new header, torn blocks": ref.pm_new_header_torn_blocks,
        "blocks, old header": ref.pm_blocks_old_header,
        "pm at K+1": ref.pm_k1,  # _pm durable, the data not: _pm's newest is ahead of it
    }[state]


@pytest.mark.parametrize("pm_state", PM_STATES)
def test_a_crash_in_round_1_recovers_to_commit_k(
    ref: Reference, tmp_path: Path, pm_state: str
) -> None:
    """``_txn`` still at K (round 2 never ran): every cut of the data append, with each state
    of ``_pm`` (its new header durable without its blocks included), recovers to K exactly."""
    pm = _pm_state(ref, pm_state)
    for i, cut in enumerate(_cuts(ref, hash(pm_state) & 0xFFFF)):
        root = _place(ref, tmp_path / f"c{i}", ref.data_k1[:cut], pm, ref.txn_k)
        _expect_k(ref, root, f"{pm_state}, data cut at {cut}")
        shutil.rmtree(root)


@pytest.mark.parametrize("pm_state", PM_STATES)
def test_readers_read_commit_k_before_the_writer_reopens(
    ref: Reference, tmp_path: Path, pm_state: str
) -> None:
    """A power loss in round 1, then a reader (no writer has recovered the table yet): the
    snapshot of ``_txn`` reads commit K, from the segment's ``_pm`` when it holds K intact,
    else from ``data.parquet`` alone, its footer checked against the XXH64 in ``_txn``."""
    pm = _pm_state(ref, pm_state)
    for i, cut in enumerate(_cuts(ref, 3)[::8]):
        root = _place(ref, tmp_path / f"r{i}", ref.data_k1[:cut], pm, ref.txn_k)
        before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
        assert read_snapshot(root).read().sort_by("v").equals(_rows(0, ROWS * K)), cut
        assert streamwrite.read_table(root).sort_by("v").equals(_rows(0, ROWS * K)), cut
        assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
        shutil.rmtree(root)
    damaged = bytearray(ref.data_k)
    damaged[-20] ^= 0x20  # inside the footer _txn recorded: no fallback reads it
    root = _place(
        ref, tmp_path / "damaged", bytes(damaged), ref.pm_new_header_torn_blocks, ref.txn_k
    )
    with pytest.raises(CorruptFileError):
        read_snapshot(root).read()


@pytest.mark.parametrize("fill", ["garbage", "zeros"])
def test_a_crash_in_round_1_with_garbage_after_the_cut(
    ref: Reference, tmp_path: Path, fill: str
) -> None:
    """The filesystem extended ``data.parquet`` before the bytes landed; ``_pm``'s new header
    landed before its blocks."""
    rng = random.Random(fill)
    for i, cut in enumerate(_cuts(ref, 7)[:: 1 if FULL else 3]):
        extra = len(ref.data_k1) - cut + 100
        tail = rng.randbytes(extra) if fill == "garbage" else bytes(extra)
        root = _place(
            ref,
            tmp_path / f"g{i}",
            ref.data_k1[:cut] + tail,
            ref.pm_new_header_old_blocks,
            ref.txn_k,
        )
        _expect_k(ref, root, f"garbage after cut {cut}")
        shutil.rmtree(root)


def test_a_crash_between_the_rounds_recovers_to_commit_k(ref: Reference, tmp_path: Path) -> None:
    """Round 1 complete (both files of commit K+1 durable), ``_txn`` not written."""
    root = _place(ref, tmp_path / "t", ref.data_k1, ref.pm_k1, ref.txn_k)
    _expect_k(ref, root, "between the rounds")


def _slot_range(ref: Reference) -> tuple[int, int, int]:
    """Where the slot of K+1 starts, its size, and where its header and payload end."""
    slots = read_txn_slots(ref.txn_k1)
    assert slots is not None
    version = decode_txn(ref.txn_k1)
    start = version.version % 2 * slots.slot_size
    payload_end = SLOT_HEADER_SIZE + len(encode_txn_payload(version))
    return start, slots.slot_size, payload_end


def test_a_torn_txn_slot_at_every_byte_offset(ref: Reference, tmp_path: Path) -> None:
    """Round 1 complete, the ``_txn`` slot of K+1 cut at every offset (the slot's old bytes
    after the cut): commit K+1 is the table's exactly when its header and payload are whole
    (the cut is past them, or the old bytes past the cut happen to be the new ones); before
    that the table recovers to K."""
    start, slot_size, payload_end = _slot_range(ref)
    assert ref.txn_k[:start] == ref.txn_k1[:start]  # the other slot is not touched
    offsets = list(range(slot_size + 1))
    if not FULL:
        rng = random.Random(11)
        offsets = sorted(
            {0, 1, 4, 8, 16, 24, 28, 31, 32, payload_end - 1, payload_end, slot_size}
            | set(rng.sample(offsets, SAMPLES))
        )
    for i, cut in enumerate(offsets):
        torn = ref.txn_k1[: start + cut] + ref.txn_k[start + cut :]
        root = _place(ref, tmp_path / f"s{i}", ref.data_k1, ref.pm_k1, torn)
        whole = torn[start : start + payload_end] == ref.txn_k1[start : start + payload_end]
        assert whole == (cut >= payload_end) or torn == ref.txn_k1  # old bytes may match
        if whole:
            assert anyio.run(_reopen, root) == K, cut
            assert (root / SEGMENT / "data.parquet").read_bytes() == ref.data_k1
        else:
            _expect_k(ref, root, f"_txn slot cut at {cut}")
        shutil.rmtree(root)


@pytest.mark.parametrize("short_by", [1, 8, "footer"])
def test_data_short_of_the_txn_size_is_damage(
    ref: Reference, tmp_path: Path, short_by: int | str
) -> None:
    """``_txn`` names commit K+1 (its round 1 was synced before it) but ``data.parquet`` is
    shorter: damage inside the committed prefix, even with ``_pm`` naming only commit K."""
    length = int.from_bytes(ref.data_k1[-8:-4], "little")
    cut = len(ref.data_k1) - (length + 8 if short_by == "footer" else int(short_by))
    for pm in (ref.pm_k1, ref.pm_k):
        root = _place(ref, tmp_path / f"d{len(pm)}", ref.data_k1[:cut], pm, ref.txn_k1)
        before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
        with pytest.raises(CorruptFileError):
            anyio.run(_reopen, root)
        assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


def test_a_footer_other_than_the_one_txn_recorded_is_damage(ref: Reference, tmp_path: Path) -> None:
    """A byte of commit K+1's footer flipped, with ``_pm``'s new header torn (so ``_pm`` is
    rebuilt from the footer chain): the XXH64 in ``_txn`` catches it before anything changes."""
    length = int.from_bytes(ref.data_k1[-8:-4], "little")
    data = bytearray(ref.data_k1)
    data[len(data) - 8 - length // 2] ^= 0x20
    root = _place(ref, tmp_path / "t", bytes(data), ref.pm_new_header_torn_blocks, ref.txn_k1)
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    with pytest.raises(CorruptFileError):
        anyio.run(_reopen, root)
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


def test_pm_torn_behind_a_published_txn_is_rebuilt(ref: Reference, tmp_path: Path) -> None:
    """``_txn`` at K+1 and ``data.parquet`` whole, ``_pm`` missing or damaged (a segment's
    ``_pm`` is rebuildable from its footer chain): the table opens at K+1."""
    for i, pm in enumerate((b"", ref.pm_new_header_torn_blocks, ref.pm_k)):
        root = _place(ref, tmp_path / f"p{i}", ref.data_k1, pm, ref.txn_k1)
        assert anyio.run(_reopen, root) == K
        rebuilt = read_sidecar((root / SEGMENT / "_pm").read_bytes())
        assert [f.parquet_file_size for _, f in rebuilt.footers] == [
            f.parquet_file_size for _, f in read_sidecar(ref.pm_k1).footers
        ]
