"""Bit-flip campaign: streamwrite's reader returns the committed rows or a typed error.

A single flipped bit anywhere in a committed live file or table segment (``data.parquet`` or
``_pm``) must never make :func:`streamwrite.read_table` return different rows or raise anything
but a :class:`~streamwrite.errors.StreamwriteError`. Page CRCs cover the data pages and the
``_pm`` CRC32 covers the sidecar; the Parquet footer is covered by the checksum ``_pm`` records
for it, and the footer's schema is cross-checked against ``ARROW:schema`` and the ``_pm``
column descriptors.

The campaign flips **every** bit of the newest committed Parquet footer of a live file
(FileMetaData, its length and the magic) and of its ``_pm`` commit point and newest ``_pm``
footer, plus ``STREAMWRITE_BITFLIP_COUNT`` random bits (default 200; nightly e.g. 5000) in
the files of a live file and of a table, and reopens (recovers) a sample of the flipped files.
Each flip works on a copy and is undone before the next one.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.errors import StreamwriteError
from streamwrite.layout.actions import LiveFileName
from streamwrite.table.api import open_table
from tests.live._support import SMALL_SCHEMA as SCHEMA
from tests.live._support import run
from tests.live._support import small_rows as rows

FLIP_COUNT = int(os.environ.get("STREAMWRITE_BITFLIP_COUNT", "200"))
SEED = int(os.environ.get("STREAMWRITE_BITFLIP_SEED", "20261123"))
DATA = LiveFileName.DATA.value
PM = LiveFileName.PM.value


# ----------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def live_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A live file with two commits of four rows (one row group each)."""
    directory = tmp_path_factory.mktemp("bitflip") / "lf"

    async def build() -> None:
        lf = await streamwrite.LiveFile.open(directory, SCHEMA)
        for k in range(2):
            await lf.append(rows(4 * k, 4))
        await lf.close()

    run(build)
    return directory


@pytest.fixture(scope="module")
def table_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A table partitioned by day: three commits spread over four partitions."""
    directory = tmp_path_factory.mktemp("bitflip") / "table"

    async def build() -> None:
        table = await open_table(directory, SCHEMA, timestamp="ts", partition_by="day")
        for k in range(3):
            await table.append(rows(4 * k, 4))
            await table.flush()
        await table.close()

    run(build)
    return directory


# ----------------------------------------------------------------------------------- campaign
@dataclass
class Tally:
    """What the reads of one campaign returned."""

    original: int = 0
    typed: Counter[str] = field(default_factory=Counter)
    silent: list[str] = field(default_factory=list)
    untyped: list[str] = field(default_factory=list)

    @property
    def flips(self) -> int:
        return self.original + sum(self.typed.values()) + len(self.silent) + len(self.untyped)

    def summary(self, name: str) -> str:
        return (
            f"{name}: {self.flips} flips, {self.original} returned the original rows, "
            f"{sum(self.typed.values())} typed errors {dict(self.typed)}, "
            f"{len(self.silent)} silent wrong results, {len(self.untyped)} untyped errors"
        )

    def check(self, name: str) -> None:
        print(self.summary(name))
        problems = self.silent + self.untyped
        assert not problems, f"{self.summary(name)}; first ones:\n" + "\n".join(problems[:15])


def _same(result: pa.Table, expected: pa.Table) -> bool:
    return result.schema.equals(expected.schema, check_metadata=True) and result.equals(expected)


def classify(tally: Tally, where: str, read: Callable[[], pa.Table], expected: pa.Table) -> None:
    """Run ``read`` and count what it did."""
    try:
        result = read()
    except StreamwriteError as exc:
        tally.typed[type(exc).__name__] += 1
        return
    except Exception as exc:  # an untyped error is what the test looks for
        tally.untyped.append(f"{where}: {type(exc).__name__}: {exc}")
        return
    if _same(result, expected):
        tally.original += 1
        return
    if result.schema.equals(expected.schema, check_metadata=True):
        differs = f"{result.num_rows} rows, values differ"
    else:
        differs = "schema " + ", ".join(
            f"{f.name}: {f.type}{'' if f.nullable else ' not null'}" for f in result.schema
        )
    tally.silent.append(f"{where}: read silently with {differs}")


class Flipper:
    """Flips single bits in files of a working copy, restoring each before the next."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._original: dict[Path, bytes] = {}

    def original(self, path: Path) -> bytes:
        if path not in self._original:
            self._original[path] = path.read_bytes()
        return self._original[path]

    def flips(self, path: Path, bits: Iterator[int]) -> Iterator[str]:
        """Yield a description while bit ``b`` of ``path`` is flipped, for each ``b``."""
        data = self.original(path)
        with open(path, "r+b") as f:
            for bit in bits:
                byte = bit >> 3
                f.seek(byte)
                f.write(bytes([data[byte] ^ (1 << (bit & 7))]))
                f.flush()
                try:
                    yield f"{path.relative_to(self.root)} bit {bit} (byte {byte})"
                finally:
                    f.seek(byte)
                    f.write(data[byte : byte + 1])
                    f.flush()

    def restore(self) -> None:
        """Put back every file touched by something other than :meth:`flips` (recovery)."""
        for path, data in self._original.items():
            path.write_bytes(data)


def footer_bits(data_path: Path) -> range:
    """The bits of the newest committed Parquet footer: FileMetaData, its length, the magic."""
    data = data_path.read_bytes()
    (length,) = struct.unpack_from("<I", data, len(data) - 8)
    return range((len(data) - 8 - length) * 8, len(data) * 8)


def pm_newest_footer_bits(pm_path: Path) -> range:
    """The bits of the newest ``_pm`` footer, its CHECKSUM and trailer."""
    data = pm_path.read_bytes()
    (committed,) = struct.unpack_from("<Q", data, 0)
    (length,) = struct.unpack_from("<I", data, committed - 4)
    return range((committed - 4 - length) * 8, committed * 8)


def copy_of(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / source.name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("_lock"))
    return target


def random_bits(rng: random.Random, files: list[Path], count: int) -> list[tuple[Path, int]]:
    """``count`` random (file, bit) pairs, uniform over the bits of all ``files``."""
    sizes = [f.stat().st_size * 8 for f in files]
    picks = []
    for _ in range(count):
        position = rng.randrange(sum(sizes))
        for path, size in zip(files, sizes, strict=True):
            if position < size:
                picks.append((path, position))
                break
            position -= size
    return picks


def _run_flips(
    flipper: Flipper, picks: list[tuple[Path, int]], body: Callable[[str], None]
) -> None:
    for path, bit in picks:
        for where in flipper.flips(path, iter([bit])):
            body(where)


# ----------------------------------------------------------------------------------- live file
def test_live_file_fixture_reads_back(live_dir: Path) -> None:
    assert streamwrite.read_table(live_dir).equals(pa.concat_tables([rows(0, 4), rows(4, 4)]))


def test_every_bit_of_the_newest_footer(live_dir: Path, tmp_path: Path) -> None:
    """Every bit of the newest committed footer (FileMetaData + length + magic) of a live file:
    ``read_table(live_dir)`` returns the original rows or raises a StreamwriteError."""
    work = copy_of(live_dir, tmp_path)
    expected = streamwrite.read_table(work)
    flipper = Flipper(work)
    tally = Tally()
    data_path = work / DATA
    for where in flipper.flips(data_path, iter(footer_bits(data_path))):
        classify(tally, where, lambda: streamwrite.read_table(work), expected)
    assert tally.flips > 1000
    tally.check("live file, every bit of the newest Parquet footer")


def test_every_bit_of_the_pm_commit_point_and_newest_pm_footer(
    live_dir: Path, tmp_path: Path
) -> None:
    """PARQUET_META_FILE_SIZE is outside every CRC: no single flip of it may land on another
    committed version (an older snapshot read as the newest)."""
    work = copy_of(live_dir, tmp_path)
    expected = streamwrite.read_table(work)
    flipper = Flipper(work)
    tally = Tally()
    pm_path = work / PM
    bits = [*range(64), *pm_newest_footer_bits(pm_path)]
    for where in flipper.flips(pm_path, iter(bits)):
        classify(tally, where, lambda: streamwrite.read_table(work), expected)
    tally.check("live file, every bit of the _pm commit point and newest _pm footer")


def test_random_bits_of_a_live_file(live_dir: Path, tmp_path: Path) -> None:
    """STREAMWRITE_BITFLIP_COUNT random bits anywhere in data.parquet and _pm."""
    work = copy_of(live_dir, tmp_path)
    expected = streamwrite.read_table(work)
    flipper = Flipper(work)
    tally = Tally()
    picks = random_bits(random.Random(SEED), [work / DATA, work / PM], FLIP_COUNT)

    def body(where: str) -> None:
        classify(tally, where, lambda: streamwrite.read_table(work), expected)

    _run_flips(flipper, picks, body)
    tally.check("live file, random bits")


def test_reopen_recovers_or_refuses(live_dir: Path, tmp_path: Path) -> None:
    """Recovery (``LiveFile.open``) on a sample of flips in the newest footer and elsewhere:
    it raises a StreamwriteError, or the reopened file holds exactly the original rows and
    an append continues it (the rows read back are the original ones plus the appended ones,
    or a typed error for damage recovery does not look at, such as a data page)."""
    work = copy_of(live_dir, tmp_path)
    more = rows(8, 4)
    expected = pa.concat_tables([streamwrite.read_table(work), more])
    flipper = Flipper(work)
    rng = random.Random(SEED + 1)
    data_path, pm_path = work / DATA, work / PM
    flipper.original(data_path)
    flipper.original(pm_path)
    count = max(FLIP_COUNT // 2, 50)
    footer = footer_bits(data_path)
    picks = [(data_path, rng.choice(footer)) for _ in range(count // 2)]
    picks += random_bits(rng, [data_path, pm_path], count - len(picks))
    tally = Tally()

    def reopen_and_read() -> pa.Table:
        async def go() -> pa.Table:
            lf = await streamwrite.LiveFile.open(work)
            try:
                opened = (lf.last_commit.num_rows, lf.schema)
                if opened != (expected.num_rows - more.num_rows, SCHEMA):
                    return pa.table({"opened": [str(opened)]})  # recovered to something else
                await lf.append(more)
            finally:
                await lf.close()
            return streamwrite.read_table(work)

        return run(go)

    for path, bit in picks:
        for where in flipper.flips(path, iter([bit])):
            classify(tally, where, reopen_and_read, expected)
        flipper.restore()  # recovery may have truncated or rebuilt a file
    tally.check("live file, reopen (recovery)")


# ----------------------------------------------------------------------------------- table
def test_random_bits_of_a_table(table_dir: Path, tmp_path: Path) -> None:
    """STREAMWRITE_BITFLIP_COUNT random bits in the segments of a table, half of them in the
    newest Parquet footers: ``read_table(table)`` returns the original rows or a typed error."""
    work = copy_of(table_dir, tmp_path)
    expected = streamwrite.read_table(work)
    assert expected.num_rows == 12
    flipper = Flipper(work)
    files = sorted(p for p in work.rglob("*") if p.is_file() and p.name in (DATA, PM))
    data_files = [p for p in files if p.name == DATA]
    assert len(data_files) >= 3
    rng = random.Random(SEED + 2)
    picks = [
        (path, rng.choice(footer_bits(path)))
        for path in (rng.choice(data_files) for _ in range(FLIP_COUNT // 2))
    ]
    picks += random_bits(rng, files, FLIP_COUNT - len(picks))
    tally = Tally()

    def body(where: str) -> None:
        classify(tally, where, lambda: streamwrite.read_table(work), expected)

    _run_flips(flipper, picks, body)
    tally.check("table, random bits")


# ----------------------------------------------------------------------------------- plain file
def test_random_bits_of_a_plain_file_footer(tmp_path: Path) -> None:
    """A plain Parquet file has no ``_pm`` checksum; the ``ARROW:schema`` cross-check still
    turns flipped schema bits into typed errors. The one silent change left is pyarrow's own:
    a flip that drops the ``logicalType`` of a time-zone-less timestamp leaves the
    ``TIMESTAMP_MICROS`` converted type, which means UTC, and pyarrow reads it so too."""
    path = tmp_path / "plain.parquet"
    pq.write_table(pa.concat_tables([rows(0, 4), rows(4, 4)]), path, row_group_size=4)
    expected = streamwrite.read_table(path)
    as_utc = expected.cast(expected.schema.set(0, pa.field("ts", pa.timestamp("us", "UTC"), False)))
    flipper = Flipper(tmp_path)
    tally = Tally()
    footer = footer_bits(path)
    rng = random.Random(SEED + 3)
    picks = [(path, rng.choice(footer)) for _ in range(FLIP_COUNT)]
    accepted = 0

    def body(where: str) -> None:
        nonlocal accepted
        classify(tally, where, lambda: streamwrite.read_table(path), expected)
        silent = bool(tally.silent) and tally.silent[-1].startswith(where)
        if silent and _same(streamwrite.read_table(path), as_utc):
            tally.silent.pop()
            accepted += 1

    _run_flips(flipper, picks, body)
    print(f"plain file: {accepted} flips read ts as UTC, as pyarrow does")
    tally.check("plain file, random bits of the footer")
