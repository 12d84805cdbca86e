"""Torn writes: every byte offset at which a crash can cut the last commit, and damage.

A live file gets commits 1..K (3 rows each); we keep the bytes of ``data.parquet`` and ``_pm``
after commit K and after commit K+1. A crash during commit K+1 leaves ``data.parquet`` cut
anywhere in the append (optionally followed by garbage: a filesystem may extend a file before
its data lands) and ``_pm`` either at its committed state K or with the uncommitted tail
partially written (the header, the commit point, still names K). Reopening must recover to
commit K byte for byte. Only when both files are complete and the header was patched is
commit K+1 visible.

Damage is different: a ``_pm`` that is missing or corrupt is rebuilt from the Parquet footer
chain with every snapshot; ``data.parquet`` shorter than its committed size, or a damaged
committed footer, is a CorruptFileError naming an offset, and nothing is changed.

``STREAMWRITE_TORN_FULL=1`` sweeps every offset in every scenario (CI sweeps every offset of
the plain cut and samples the others).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

import pytest

import streamwrite
from streamwrite.errors import CorruptFileError
from streamwrite.live.file import Commit, LiveFile, recover
from tests.live._support import (
    DATA_NAME,
    PM_NAME,
    SCHEMA,
    assert_rows,
    batch,
    pyarrow_read_prefix,
    run,
)

FULL = os.environ.get("STREAMWRITE_TORN_FULL", "") not in ("", "0")
K = 2
ROWS = 3
SAMPLES = 160


@dataclass(frozen=True)
class Reference:
    """The bytes of both files after commit K and after commit K+1."""

    data_k: bytes
    pm_k: bytes
    data_k1: bytes
    pm_k1: bytes
    snapshots_k: list[Commit]
    snapshots_k1: list[Commit]

    @property
    def size_k(self) -> int:
        return len(self.data_k)

    @property
    def size_k1(self) -> int:
        return len(self.data_k1)

    @property
    def pm_unpatched(self) -> bytes:
        """``_pm`` with commit K+1's tail written but its header still naming commit K."""
        return self.pm_k[:8] + self.pm_k1[8:]


def boundaries(snapshots: list[Commit]) -> list[int]:
    return [s.num_rows for s in snapshots]


@pytest.fixture(scope="module")
def ref(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    directory = tmp_path_factory.mktemp("torn") / "lf"

    async def build() -> Reference:
        async with await LiveFile.open(directory, schema=SCHEMA) as lf:
            for i in range(K):
                await lf.append(batch(ROWS * i, ROWS * (i + 1)))
            data_k = (directory / DATA_NAME).read_bytes()
            pm_k = (directory / PM_NAME).read_bytes()
            snapshots_k = lf.snapshots()
            await lf.append(batch(ROWS * K, ROWS * (K + 1)))
            snapshots_k1 = lf.snapshots()
        data_k1 = (directory / DATA_NAME).read_bytes()
        pm_k1 = (directory / PM_NAME).read_bytes()
        return Reference(data_k, pm_k, data_k1, pm_k1, snapshots_k, snapshots_k1)

    reference = run(build)
    # The protocol only appends, and patches nothing but the _pm header.
    assert reference.data_k1.startswith(reference.data_k)
    assert reference.pm_k1[8 : len(reference.pm_k)] == reference.pm_k[8:]
    assert reference.size_k == reference.snapshots_k[-1].parquet_size
    assert reference.size_k1 == reference.snapshots_k1[-1].parquet_size
    return reference


def place(directory: Path, data: bytes, pm: bytes | None) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / DATA_NAME).write_bytes(data)
    if pm is None:
        (directory / PM_NAME).unlink(missing_ok=True)
    else:
        (directory / PM_NAME).write_bytes(pm)


async def reopen_expecting_k(directory: Path, ref: Reference, data: bytes, what: str) -> None:
    """Reopen a crash state of commit K+1 and check it is exactly commit K again."""
    async with await LiveFile.open(directory) as lf:
        assert lf.recovery is not None
        assert lf.last_commit.seq == K, what
        assert lf.last_commit.parquet_size == ref.size_k, what
        assert lf.last_commit.num_rows == K * ROWS, what
        assert lf.recovery.torn_data_bytes == len(data) - ref.size_k, what
        assert lf.snapshots() == ref.snapshots_k, what
    assert (directory / DATA_NAME).read_bytes() == ref.data_k, what
    assert (directory / PM_NAME).read_bytes() == ref.pm_k, what


def cuts(ref: Reference, full: bool, seed: int) -> list[int]:
    """Cut offsets of the last append: all, or a sample that keeps both ends and the footer."""
    every = list(range(ref.size_k, ref.size_k1 + 1))
    if full:
        return every
    footer_start = recover_footer_offset(ref)
    edges = {ref.size_k, ref.size_k + 1, ref.size_k1 - 1, ref.size_k1}
    edges |= set(range(footer_start - 2, footer_start + 3))
    edges |= set(range(ref.size_k1 - 9, ref.size_k1))
    rng = random.Random(seed)
    return sorted(edges | set(rng.sample(every, min(SAMPLES, len(every)))))


_FOOTER_OFFSETS: dict[int, int] = {}


def recover_footer_offset(ref: Reference) -> int:
    """Where commit K+1's Parquet footer starts (its last 8 bytes are length + magic)."""
    key = id(ref)
    if key not in _FOOTER_OFFSETS:
        length = int.from_bytes(ref.data_k1[-8:-4], "little")
        _FOOTER_OFFSETS[key] = ref.size_k1 - 8 - length
    return _FOOTER_OFFSETS[key]


def test_every_cut_with_pm_at_commit_k(ref: Reference, tmp_path: Path) -> None:
    """Byte offsets of the append, ``_pm`` committed at K: recovers to K exactly.

    CI takes every fifth offset (and both ends); STREAMWRITE_TORN_FULL=1 takes every one.
    """
    directory = tmp_path / "lf"
    stride = 1 if FULL else 5
    offsets = sorted({*range(ref.size_k, ref.size_k1 + 1, stride), ref.size_k1 - 1, ref.size_k1})

    async def sweep() -> None:
        for cut in offsets:
            data = ref.data_k1[:cut]
            place(directory, data, ref.pm_k)
            if cut % 61 == 0:  # readers never trust the filesystem size either
                assert_rows(streamwrite.read_table(directory), boundaries(ref.snapshots_k))
            await reopen_expecting_k(directory, ref, data, f"cut at {cut}")

    run(sweep)


def test_cuts_with_pm_tail_partially_written(ref: Reference, tmp_path: Path) -> None:
    """The append cut anywhere and ``_pm``'s uncommitted tail cut anywhere: recovers to K.

    With fsync ordering the _pm tail is only written once data.parquet is complete, but
    recovery must not depend on it: the _pm header alone is the commit point.
    """
    directory = tmp_path / "lf"
    tail = len(ref.pm_k1) - len(ref.pm_k)

    async def sweep() -> None:
        for i, cut in enumerate(cuts(ref, FULL, seed=1)):
            pm_cut = len(ref.pm_k) + 1 + (i * 7919) % tail
            data = ref.data_k1[:cut]
            place(directory, data, ref.pm_unpatched[:pm_cut])
            await reopen_expecting_k(directory, ref, data, f"cut at {cut}, _pm cut at {pm_cut}")
        # The whole _pm tail written, header not patched: still commit K.
        for cut in (ref.size_k, ref.size_k1 - 1, ref.size_k1):
            place(directory, ref.data_k1[:cut], ref.pm_unpatched)
            await reopen_expecting_k(directory, ref, ref.data_k1[:cut], f"cut {cut}, full tail")

    run(sweep)


@pytest.mark.parametrize("fill", ["random", "zeros"])
def test_cuts_followed_by_garbage(ref: Reference, tmp_path: Path, fill: str) -> None:
    """A cut followed by garbage (random bytes or zeros) in both files: recovers to K."""
    directory = tmp_path / "lf"
    rng = random.Random(fill)

    def garbage(n: int) -> bytes:
        return rng.randbytes(n) if fill == "random" else bytes(n)

    async def sweep() -> None:
        for cut in cuts(ref, FULL, seed=2):
            data = ref.data_k1[:cut] + garbage(rng.randint(1, 300))
            pm = ref.pm_k + garbage(rng.choice([0, rng.randint(1, 600)]))
            place(directory, data, pm)
            await reopen_expecting_k(directory, ref, data, f"cut at {cut} + {len(data) - cut}")

    run(sweep)


def test_complete_commit_is_visible(ref: Reference, tmp_path: Path) -> None:
    """Both files complete and the header patched: commit K+1, nothing to do."""
    directory = tmp_path / "lf"
    place(directory, ref.data_k1, ref.pm_k1)

    async def check() -> None:
        async with await LiveFile.open(directory) as lf:
            assert lf.recovery is not None
            assert lf.recovery.actions == []
            assert lf.snapshots() == ref.snapshots_k1

    run(check)
    assert_rows(streamwrite.read_table(directory), boundaries(ref.snapshots_k1))


@pytest.mark.parametrize("split", range(1, 8))
@pytest.mark.parametrize("new_first", [True, False], ids=["low-bytes-new", "low-bytes-old"])
def test_torn_header_patch(ref: Reference, tmp_path: Path, split: int, new_first: bool) -> None:
    """The 8-byte commit-point patch torn (some bytes new, some old): commit K or K+1.

    A torn size field names no valid footer, so _pm is rebuilt from the footer chain; the
    data is complete, so K+1 is legitimate. Either way the state is consistent.
    """
    directory = tmp_path / "lf"
    new, old = ref.pm_k1[:8], ref.pm_k[:8]
    header = new[:split] + old[split:] if new_first else old[:split] + new[split:]
    place(directory, ref.data_k1, header + ref.pm_k1[8:])

    async def check() -> list[Commit]:
        async with await LiveFile.open(directory) as lf:
            return lf.snapshots()

    snapshots = run(check)
    assert snapshots in (ref.snapshots_k, ref.snapshots_k1)
    newest = snapshots[-1]
    assert_rows(streamwrite.read_table(directory), boundaries(snapshots))
    assert_rows(pyarrow_read_prefix(directory, newest.parquet_size), boundaries(snapshots))


def _check_all_snapshots(directory: Path, snapshots: list[Commit]) -> None:
    for i, snapshot in enumerate(snapshots):
        table = streamwrite.read_table(directory, snapshot=snapshot.parquet_size)
        assert_rows(table, boundaries(snapshots[: i + 1]))


def test_pm_missing_is_rebuilt(ref: Reference, tmp_path: Path) -> None:
    """``_pm`` deleted: reopening rebuilds it from the footer chain, every snapshot kept."""
    directory = tmp_path / "lf"
    place(directory, ref.data_k1, None)

    async def check() -> None:
        async with await LiveFile.open(directory) as lf:
            assert lf.recovery is not None
            assert lf.recovery.rebuilt_pm_reason is not None
            assert lf.snapshots() == ref.snapshots_k1

    run(check)
    assert (directory / DATA_NAME).read_bytes() == ref.data_k1
    _check_all_snapshots(directory, ref.snapshots_k1)


def test_pm_missing_open_with_schema_keeps_data(ref: Reference, tmp_path: Path) -> None:
    """``_pm`` deleted and the file reopened *with* its schema: rebuilt, never started over."""
    directory = tmp_path / "lf"
    place(directory, ref.data_k1, None)

    async def check() -> None:
        async with await LiveFile.open(directory, schema=SCHEMA) as lf:
            assert lf.snapshots() == ref.snapshots_k1

    run(check)
    assert (directory / DATA_NAME).read_bytes() == ref.data_k1


def test_pm_empty_after_interrupted_rebuild(ref: Reference, tmp_path: Path) -> None:
    """A crash inside a rebuild (after Truncate(_pm, 0), before the write) loses nothing."""
    directory = tmp_path / "lf"
    place(directory, ref.data_k1, b"")
    recover(directory, apply=True)
    _check_all_snapshots(directory, ref.snapshots_k1)
    place(directory, ref.data_k1, b"")

    async def check() -> None:
        async with await LiveFile.open(directory, schema=SCHEMA) as lf:
            assert lf.snapshots() == ref.snapshots_k1

    run(check)


def test_pm_missing_with_torn_tail(ref: Reference, tmp_path: Path) -> None:
    """``_pm`` deleted during a torn append: rebuilt at the newest complete footer.

    Only the complete data.parquet of K+1 has a footer at its end; every shorter cut
    rebuilds commit K. (A missing _pm cannot say whether K+1 was acknowledged; its footer
    was fsynced, so adopting it is what "rebuilt from the footer chain" means.)
    """
    directory = tmp_path / "lf"

    async def sweep() -> None:
        for cut in [*cuts(ref, full=False, seed=3)[:60], ref.size_k1]:
            place(directory, ref.data_k1[:cut], None)
            plan = recover(directory, apply=True)
            expected = ref.snapshots_k1 if cut == ref.size_k1 else ref.snapshots_k
            assert plan.rebuilt_pm_reason is not None
            async with await LiveFile.open(directory) as lf:
                assert lf.snapshots() == expected, f"cut at {cut}"
            assert (directory / DATA_NAME).read_bytes() == ref.data_k1[: expected[-1].parquet_size]

    run(sweep)


def test_pm_flipped_byte_is_rebuilt(ref: Reference, tmp_path: Path) -> None:
    """Any single flipped byte of a committed ``_pm``: rebuilt (or harmless), snapshots kept."""
    directory = tmp_path / "lf"
    step = 1 if FULL else 9

    async def sweep() -> None:
        for offset in range(0, len(ref.pm_k1), step):
            pm = bytearray(ref.pm_k1)
            pm[offset] ^= 0x10
            place(directory, ref.data_k1, bytes(pm))
            async with await LiveFile.open(directory) as lf:
                assert lf.snapshots() == ref.snapshots_k1, f"flip at _pm offset {offset}"
            assert streamwrite.read_table(directory).num_rows == (K + 1) * ROWS

    run(sweep)


@pytest.mark.parametrize("short_by", [1, 4, 8, 100, "last commit", "half"])
def test_data_shorter_than_committed(ref: Reference, tmp_path: Path, short_by: int | str) -> None:
    """data.parquet lost committed bytes: CorruptFileError naming an offset; nothing changed."""
    directory = tmp_path / "lf"
    if short_by == "last commit":
        size = ref.size_k
    elif short_by == "half":
        size = ref.size_k1 // 2
    else:
        assert isinstance(short_by, int)
        size = ref.size_k1 - short_by
    place(directory, ref.data_k1[:size], ref.pm_k1)

    async def reopen() -> None:
        await LiveFile.open(directory)

    with pytest.raises(CorruptFileError) as info:
        run(reopen)
    assert info.value.offset is not None
    assert str(info.value.offset) in str(info.value)
    with pytest.raises(CorruptFileError):
        recover(directory, apply=True)
    assert (directory / DATA_NAME).read_bytes() == ref.data_k1[:size]
    assert (directory / PM_NAME).read_bytes() == ref.pm_k1


def _committed_footer_range(ref: Reference) -> range:
    return range(recover_footer_offset(ref), ref.size_k1)


@pytest.mark.parametrize("where", ["length", "magic", "first footer byte"])
def test_flipped_footer_framing_is_corrupt(ref: Reference, tmp_path: Path, where: str) -> None:
    """A flipped byte in the committed footer's framing: CorruptFileError, nothing changed."""
    directory = tmp_path / "lf"
    footer = _committed_footer_range(ref)
    offsets = {
        "length": range(ref.size_k1 - 8, ref.size_k1 - 4),
        "magic": range(ref.size_k1 - 4, ref.size_k1),
        "first footer byte": range(footer.start, footer.start + 1),
    }[where]

    async def reopen() -> None:
        await LiveFile.open(directory)

    for offset in offsets:
        data = bytearray(ref.data_k1)
        data[offset] ^= 0x40
        place(directory, bytes(data), ref.pm_k1)
        with pytest.raises(CorruptFileError) as info:
            run(reopen)
        assert info.value.offset is not None, f"flip at {offset}"
        assert (directory / DATA_NAME).read_bytes() == bytes(data)
        assert (directory / PM_NAME).read_bytes() == ref.pm_k1


def test_flipped_footer_sweep(ref: Reference, tmp_path: Path) -> None:
    """Every flipped byte of the committed footer: CorruptFileError with an offset, or
    a file that still reads exactly the committed values (a footer has no checksum, so a flip
    in a statistic or a name can go unnoticed, but never into wrong rows or a foreign error).
    """
    directory = tmp_path / "lf"
    expected = boundaries(ref.snapshots_k1)
    failures: list[str] = []

    async def sweep() -> None:
        for offset in _committed_footer_range(ref)[:: 1 if FULL else 4]:
            data = bytearray(ref.data_k1)
            data[offset] ^= 0x01
            place(directory, bytes(data), ref.pm_k1)
            try:
                lf = await LiveFile.open(directory)
            except CorruptFileError as exc:
                if exc.offset is None:
                    failures.append(f"{offset}: no offset in {exc!r}")
                continue
            except Exception as exc:
                failures.append(f"{offset}: {exc!r}")
                continue
            await lf.close()
            try:
                table = streamwrite.read_table(directory)
            except CorruptFileError:
                continue
            except Exception as exc:
                failures.append(f"{offset}: read raised {exc!r}")
                continue
            renamed = table.rename_columns(SCHEMA.names)  # a flipped name is undetectable
            try:
                assert_rows(renamed, expected)
            except AssertionError as exc:
                failures.append(f"{offset}: wrong rows ({exc})")

    run(sweep)
    assert not failures, f"{len(failures)} flips: " + "; ".join(failures[:10])


def test_flipped_name_in_arrow_schema_is_corrupt(ref: Reference, tmp_path: Path) -> None:
    """A flipped bit in a column name inside the footer's base64 ARROW:schema."""
    directory = tmp_path / "lf"
    data = bytearray(ref.data_k1)
    offset = data.rfind(b"G9yZGVyX2l")  # base64 of "order_i", in the newest footer
    assert offset > recover_footer_offset(ref)
    data[offset + 5] ^= 0x01  # the name becomes b"orde\xb2_id", not UTF-8
    place(directory, bytes(data), ref.pm_k1)
    with pytest.raises(CorruptFileError):
        streamwrite.read_table(directory)

    async def reopen() -> None:
        await LiveFile.open(directory)

    with pytest.raises(CorruptFileError):
        run(reopen)
