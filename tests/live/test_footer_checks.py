"""What streamwrite checks before it trusts a Parquet footer: the checksum ``_pm`` records for
each committed footer (reads at every snapshot, recovery, rebuilds, old ``_pm`` files without
it) and the ``_pm`` column descriptors. The ``ARROW:schema`` cross-check is in
``test_arrow_schema_check.py``."""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow as pa
import pytest
import xxhash

import streamwrite
from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.errors import ChecksumError, ConfigError, CorruptFileError
from streamwrite.format.sidecar.codec import (
    SidecarWriter,
    patch_committed_size,
    read_row_group_block,
    read_sidecar,
)
from streamwrite.layout.actions import LiveFileName
from streamwrite.layout.appender import rebuild_sidecar
from streamwrite.live.file import recover
from streamwrite.options import WriteOptions
from streamwrite.reader.tail import _Bytes, _read_footer
from tests.live._support import SMALL_SCHEMA, run, small_rows

DATA = LiveFileName.DATA.value
PM = LiveFileName.PM.value


def make_live_file(directory: Path, commits: int = 3) -> list[int]:
    """A live file of ``commits`` commits of four rows; returns the committed sizes."""

    async def build() -> list[int]:
        lf = await streamwrite.LiveFile.open(directory, SMALL_SCHEMA)
        sizes = [(await lf.append(small_rows(4 * k, 4))).parquet_size for k in range(commits)]
        await lf.close()
        return sizes

    return run(build)


def tail_range(data: bytes, size: int) -> tuple[int, int]:
    """``[footer offset, size)`` of the Parquet footer ending at ``size``."""
    (length,) = struct.unpack_from("<I", data, size - 8)
    return size - 8 - length, size


def flip_in_tail(directory: Path, size: int, needle: bytes = b"symbol") -> None:
    """Flip one bit of ``needle``'s first byte inside the footer ending at ``size``
    (``symbol`` becomes ``rymbol``: a valid footer, a renamed column)."""
    path = directory / DATA
    data = bytearray(path.read_bytes())
    start, end = tail_range(bytes(data), size)
    at = data.index(needle, start, end)
    data[at] ^= 1
    path.write_bytes(bytes(data))


def footer_check(directory: Path, snapshot: int | None = None) -> str:
    source = _Bytes(directory, snapshot)
    try:
        _read_footer(source)
        return source.footer_check
    finally:
        source.close()


def reopen(directory: Path) -> streamwrite.LiveFile:
    async def go() -> streamwrite.LiveFile:
        lf = await streamwrite.LiveFile.open(directory)
        await lf.close()
        return lf

    return run(go)


def files_of(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def strip_checksums(directory: Path) -> None:
    """Rewrite ``_pm`` as streamwrite wrote it before it recorded footer checksums."""
    old = (directory / PM).read_bytes()
    sidecar = read_sidecar(old)
    writer = SidecarWriter(sidecar.header)
    out = bytearray(writer.start())
    done = 0
    for _, footer in reversed(sidecar.footers):
        blocks = [
            read_row_group_block(old, offset, sidecar.header)
            for offset in footer.row_group_offsets[done:]
        ]
        data, size = writer.commit(
            blocks,
            footer.parquet_footer_offset,
            footer.parquet_footer_length,
            footer.unused_bytes,
            external_bloom=footer.external_bloom[done * len(sidecar.header.bloom_columns) :],
        )
        out += data
        out[0:8] = patch_committed_size(size)
        done = len(footer.row_group_offsets)
    assert all(f.parquet_footer_checksum is None for _, f in read_sidecar(bytes(out)).footers)
    (directory / PM).write_bytes(bytes(out))


# ----------------------------------------------------------------------------------- writing
def test_every_commit_records_the_xxh64_of_its_parquet_tail(tmp_path: Path) -> None:
    sizes = make_live_file(tmp_path / "lf")
    data = (tmp_path / "lf" / DATA).read_bytes()
    footers = read_sidecar((tmp_path / "lf" / PM).read_bytes()).footers
    committed = [f.parquet_file_size for _, f in reversed(footers)]
    assert committed[1:] == sizes  # commit 0, the empty file, comes first
    for _, footer in footers:
        start, end = tail_range(data, footer.parquet_file_size)
        assert start == footer.parquet_footer_offset
        assert footer.parquet_footer_checksum == xxhash.xxh64_intdigest(data[start:end])
    for size in sizes:
        assert footer_check(tmp_path / "lf", size) == "verified"
    assert footer_check(tmp_path / "lf") == "verified"


# ----------------------------------------------------------------------------------- reading
def test_a_damaged_newest_footer_is_a_checksum_error_older_snapshots_still_read(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "lf"
    sizes = make_live_file(directory)
    flip_in_tail(directory, sizes[-1])
    with pytest.raises(ChecksumError, match="XXH64") as info:
        streamwrite.read_table(directory)
    assert info.value.offset == tail_range((directory / DATA).read_bytes(), sizes[-1])[0]
    with pytest.raises(ChecksumError):
        streamwrite.ParquetFile(directory, snapshot=sizes[-1])
    older = streamwrite.read_table(directory, snapshot=sizes[1])
    assert older.equals(pa.concat_tables([small_rows(0, 4), small_rows(4, 4)]))


def test_a_damaged_older_footer_fails_only_its_snapshot(tmp_path: Path) -> None:
    directory = tmp_path / "lf"
    sizes = make_live_file(directory)
    flip_in_tail(directory, sizes[0])
    expected = pa.concat_tables([small_rows(4 * k, 4) for k in range(3)])
    assert streamwrite.read_table(directory).equals(expected)  # the old footer is dead bytes
    with pytest.raises(ChecksumError):
        streamwrite.read_table(directory, snapshot=sizes[0])


def test_a_snapshot_that_was_never_committed_is_a_config_error(tmp_path: Path) -> None:
    directory = tmp_path / "lf"
    sizes = make_live_file(directory)
    with pytest.raises(ConfigError, match=f"{sizes[0] + 1} of the live file"):
        streamwrite.read_table(directory, snapshot=sizes[0] + 1)


def test_a_damaged_pm_is_a_corrupt_file_error_when_reading(tmp_path: Path) -> None:
    directory = tmp_path / "lf"
    make_live_file(directory)
    pm = bytearray((directory / PM).read_bytes())
    pm[40] ^= 4
    (directory / PM).write_bytes(bytes(pm))
    with pytest.raises(CorruptFileError, match=r"_pm of the live file .* is damaged"):
        streamwrite.read_table(directory)


def test_pm_descriptors_must_match_the_footer_schema(tmp_path: Path) -> None:
    """A ``_pm`` describing other columns (here: ``symbol`` called ``ticker``) is refused by
    readers and by recovery, naming the column and both sides."""
    directory = tmp_path / "lf"
    make_live_file(directory)
    versions = recover(directory).versions
    renamed = SMALL_SCHEMA.set(1, SMALL_SCHEMA.field(1).with_name("ticker"))

    def read(offset: int, size: int) -> bytes:
        with open(directory / DATA, "rb") as f:
            f.seek(offset)
            return f.read(size)

    pm = rebuild_sidecar(arrow_to_parquet(renamed), WriteOptions(), versions, read)
    (directory / PM).write_bytes(pm)
    message = r"'ticker' differs .* 'symbol' BYTE_ARRAY .* in the footer, 'ticker' BYTE_ARRAY"
    with pytest.raises(CorruptFileError, match=message):
        streamwrite.read_table(directory)
    with pytest.raises(CorruptFileError, match=message):
        reopen(directory)


# ----------------------------------------------------------------------------------- old _pm
def test_an_old_pm_without_checksums_reads_unchecked_and_new_commits_add_them(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "lf"
    sizes = make_live_file(directory)
    expected = streamwrite.read_table(directory)
    strip_checksums(directory)
    assert streamwrite.read_table(directory).equals(expected)
    assert footer_check(directory) == "unchecked"
    plan = recover(directory)
    assert plan.unchecked_footers == len(plan.versions) == 4  # commit 0 holds the schema only
    assert any(line.startswith("unchecked: 4 of 4") for line in plan.describe())

    async def append() -> int:
        lf = await streamwrite.LiveFile.open(directory)
        commit = await lf.append(small_rows(12, 4))
        await lf.close()
        return commit.parquet_size

    newest = run(append)
    assert footer_check(directory) == "verified"
    assert footer_check(directory, sizes[-1]) == "unchecked"
    assert recover(directory).unchecked_footers == 4
    assert streamwrite.read_table(directory, snapshot=newest).num_rows == 16


# ----------------------------------------------------------------------------------- recovery
def test_recovery_refuses_a_damaged_committed_footer_and_changes_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "lf"
    sizes = make_live_file(directory)
    flip_in_tail(directory, sizes[-1])
    before = files_of(directory)
    with pytest.raises(CorruptFileError, match="damage inside the committed prefix"):
        reopen(directory)
    with pytest.raises(CorruptFileError, match="damage inside the committed prefix"):
        recover(directory, apply=True)
    assert files_of(directory) == before


def test_recovery_refuses_a_damaged_older_footer(tmp_path: Path) -> None:
    directory = tmp_path / "lf"
    sizes = make_live_file(directory)
    flip_in_tail(directory, sizes[0])
    with pytest.raises(CorruptFileError, match="XXH64"):
        reopen(directory)


def test_recovery_refuses_a_damaged_leading_magic(tmp_path: Path) -> None:
    directory = tmp_path / "lf"
    make_live_file(directory)
    data = bytearray((directory / DATA).read_bytes())
    data[1] ^= 2
    (directory / DATA).write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match="starts with"):
        reopen(directory)


def test_a_rebuilt_pm_records_the_checksums_of_the_chain_it_walked(tmp_path: Path) -> None:
    directory = tmp_path / "lf"
    make_live_file(directory)
    original_bytes = (directory / PM).read_bytes()
    original = read_sidecar(original_bytes).footers
    (directory / PM).unlink()
    lf = reopen(directory)
    assert lf.recovery is not None and lf.recovery.rebuilt_pm_reason == "_pm is missing"
    assert (directory / PM).read_bytes() == original_bytes  # padding rule included
    rebuilt = read_sidecar((directory / PM).read_bytes()).footers
    assert [f.parquet_footer_checksum for _, f in rebuilt] == [
        f.parquet_footer_checksum for _, f in original
    ]
    assert footer_check(directory) == "verified"


def test_a_rebuild_refuses_a_chain_whose_schema_changes(tmp_path: Path) -> None:
    """With ``_pm`` gone, the chain vouches for itself: an older footer whose schema differs
    from the newer one's (a flipped bit) stops the rebuild."""
    directory = tmp_path / "lf"
    sizes = make_live_file(directory)
    flip_in_tail(directory, sizes[1])
    (directory / PM).unlink()
    before = (directory / DATA).read_bytes()
    with pytest.raises(CorruptFileError, match="schemas do not continue"):
        reopen(directory)
    assert (directory / DATA).read_bytes() == before


def test_a_rebuild_refuses_a_newest_footer_that_does_not_continue_the_chain(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "lf"
    sizes = make_live_file(directory)
    flip_in_tail(directory, sizes[-1])
    (directory / PM).write_bytes(b"\x00" * 64)  # damaged: rebuilt from the chain
    with pytest.raises(CorruptFileError, match="schemas do not continue"):
        reopen(directory)


def test_the_pm_chain_must_agree_with_the_parquet_chain(tmp_path: Path) -> None:
    """A ``_pm`` that lists (with valid checksums) only some of the versions the Parquet
    footers chain through is damage, not something to rebuild over."""
    directory = tmp_path / "lf"
    make_live_file(directory)
    versions = recover(directory).versions

    def read(offset: int, size: int) -> bytes:
        with open(directory / DATA, "rb") as f:
            f.seek(offset)
            return f.read(size)

    skipping = [versions[0], versions[1], versions[3]]
    pm = rebuild_sidecar(arrow_to_parquet(SMALL_SCHEMA), WriteOptions(), skipping, read)
    (directory / PM).write_bytes(pm)
    with pytest.raises(CorruptFileError, match="chain through sizes"):
        reopen(directory)


def test_a_table_segment_that_is_gone_is_a_corrupt_file_error(tmp_path: Path) -> None:
    """``_txn`` names a segment whose directory was removed: a typed error, not a bare
    FileNotFoundError."""
    from streamwrite.table.api import open_table

    directory = tmp_path / "table"

    async def build() -> None:
        table = await open_table(directory, SMALL_SCHEMA, timestamp="ts", partition_by="day")
        await table.append(small_rows(0, 8))
        await table.flush()
        await table.close()

    run(build)
    segments = sorted(p.parent for p in directory.rglob(DATA))
    assert len(segments) >= 2
    for p in sorted(segments[0].iterdir()):
        p.unlink()
    segments[0].rmdir()
    with pytest.raises(CorruptFileError, match="committed data is gone"):
        streamwrite.read_table(directory)
    (segments[1] / DATA).unlink()  # a segment whose _pm is there but its data file is not
    with pytest.raises(CorruptFileError, match="committed data is gone"):
        streamwrite.read_table(segments[1])
    with pytest.raises(FileNotFoundError):  # a plain path that does not exist: as pyarrow
        streamwrite.read_table(tmp_path / "missing.parquet")
