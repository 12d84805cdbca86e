"""A failed write never destroys data (issue 10, items 1 and 6).

Every bad input to ``write_table`` / ``ParquetWriter`` (a bad value, a bad option, an I/O error
mid-file, a crash) leaves a file already at the path byte-identical and no temporary file
behind; ``ParquetWriter`` enters a failed state after an I/O error and stays usable after input
it rejects; schema and keyword errors name what differs and the public function.
"""

from __future__ import annotations

import errno
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.crypto import EncryptionConfig, InMemoryKms, KeyWrapper
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.encode import as_table
from streamwrite.errors import (
    ConfigError,
    SchemaError,
    StateError,
    StreamwriteIOError,
)
from streamwrite.format.enums import CompressionCodec
from streamwrite.options import SortingColumn, make_write_options

REPO = Path(__file__).resolve().parents[1]

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("flag", pa.bool_()),
        pa.field("sym", pa.string()),
    ]
)
ROWS = 3000


def make_table(num_rows: int = ROWS, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + num_rows, dtype=np.int64)
    return pa.table(
        [
            pa.array(ids),
            pa.array(ids % 3 == 0),
            pa.array([f"s{i % 17}" for i in ids.tolist()]),
        ],
        schema=SCHEMA,
    )


def with_null_id(table: pa.Table, row: int) -> pa.Table:
    """``table`` with a null in its REQUIRED ``id`` column at ``row`` (pyarrow allows building
    it; only the writer can refuse it)."""
    ids = table.column("id").to_pylist()
    ids[row] = None
    columns = [pa.array(ids, pa.int64()), *table.columns[1:]]
    return pa.Table.from_arrays(columns, schema=SCHEMA)


OLD = make_table(10, start=1000)


@pytest.fixture
def old_file(tmp_path: Path) -> Path:
    """A file already at the target path (written by pyarrow), which no failure may change."""
    path = tmp_path / "data.parquet"
    pq.write_table(OLD, path)
    return path


def snapshot(path: Path) -> tuple[bytes, list[str]]:
    return path.read_bytes(), sorted(os.listdir(path.parent))


def assert_untouched(path: Path, before: tuple[bytes, list[str]]) -> None:
    """The file's bytes and content are as before and the directory holds no new file."""
    assert sorted(os.listdir(path.parent)) == before[1], "a temporary file was left behind"
    assert path.read_bytes() == before[0]
    assert pq.read_table(path).equals(OLD)


def encryption_naming(column: str) -> FileEncryption:
    config = EncryptionConfig(footer_key_id="kf", column_keys={column: "kc"})
    kms = InMemoryKms({"kf": b"FOOTERMASTERKEY!", "kc": b"COLUMNMASTERKEY!"})
    return FileEncryption(KeyWrapper(kms, config))


# (name, table, keyword arguments, error type, message pattern)
BAD_INPUTS: list[tuple[str, pa.Table, dict[str, Any], type[Exception], str]] = [
    ("null in a REQUIRED column", with_null_id(make_table(), 5), {}, SchemaError, "'id'.*REQUIRED"),
    (
        "null in the third row group",
        with_null_id(make_table(), 2500),
        {"row_group_size": 1000},
        SchemaError,
        "'id'.*REQUIRED",
    ),
    (
        "seconds timestamp overflowing as milliseconds",
        pa.table({"ts": pa.array([0, 2**62], pa.timestamp("s"))}),
        {},
        SchemaError,
        "overflow",
    ),
    ("lzo", make_table(), {"compression": "lzo"}, ConfigError, "(?i)lzo"),
    ("LZO enum", make_table(), {"compression": CompressionCodec.LZO}, ConfigError, "LZO"),
    ("lzo for one column", make_table(), {"compression": {"sym": "lzo"}}, ConfigError, "lzo"),
    ("unknown codec", make_table(), {"compression": "zip"}, ConfigError, "'zip'"),
    ("zstd level 23", make_table(), {"compression_level": 23}, ConfigError, "23"),
    (
        "gzip level 10",
        make_table(),
        {"compression": "gzip", "compression_level": 10},
        ConfigError,
        "0 to 9",
    ),
    (
        "brotli level 12",
        make_table(),
        {"compression": "brotli", "compression_level": 12},
        ConfigError,
        "0 to 11",
    ),
    (
        "gzip level -1",
        make_table(),
        {"compression": "gzip", "compression_level": -1},
        ConfigError,
        "-1",
    ),
    (
        "lz4_raw level 13",
        make_table(),
        {"compression": "lz4_raw", "compression_level": 13},
        ConfigError,
        "1 to 12",
    ),
    (
        "level for snappy",
        make_table(),
        {"compression": "snappy", "compression_level": 3},
        ConfigError,
        "SNAPPY",
    ),
    ("level not a number", make_table(), {"compression_level": "high"}, ConfigError, "'high'"),
    ("level a bool", make_table(), {"compression_level": True}, ConfigError, "True"),
    ("data_page_version 3.0", make_table(), {"data_page_version": "3.0"}, ConfigError, "3.0"),
    ("row_group_size 0", make_table(), {"row_group_size": 0}, ConfigError, "row_group_size"),
    ("row_group_size -5", make_table(), {"row_group_size": -5}, ConfigError, "row_group_size"),
    ("row_group_size text", make_table(), {"row_group_size": "10"}, ConfigError, "'10'"),
    ("data_page_size 0", make_table(), {"data_page_size": 0}, ConfigError, "data_page_size"),
    (
        "unknown column in compression",
        make_table(),
        {"compression": {"nope": "zstd"}},
        ConfigError,
        "nope",
    ),
    (
        "unknown column in column_encoding",
        make_table(),
        {"column_encoding": {"nope": "PLAIN"}},
        ConfigError,
        "nope",
    ),
    (
        "encoding that does not fit the type",
        make_table(),
        {"column_encoding": {"flag": "DELTA_BINARY_PACKED"}},
        ConfigError,
        "'flag'.*BOOLEAN",
    ),
    (
        "bloom filter on a BOOLEAN column",
        make_table(),
        {"bloom_filter_options": {"flag": True}},
        ConfigError,
        "'flag'",
    ),
    (
        "unknown column in bloom_filter_options",
        make_table(),
        {"bloom_filter_options": {"nope": True}},
        ConfigError,
        "nope",
    ),
    (
        "bloom filter fpp 2",
        make_table(),
        {"bloom_filter_options": {"sym": {"fpp": 2.0}}},
        ConfigError,
        "fpp",
    ),
    (
        "sorting column out of range",
        make_table(),
        {"sorting_columns": [SortingColumn(9)]},
        ConfigError,
        "9",
    ),
    (
        "statistics_truncate_length 0",
        make_table(),
        {"statistics_truncate_length": 0},
        ConfigError,
        "statistics_truncate_length",
    ),
    ("misspelt keyword", make_table(), {"compresion": "zstd"}, TypeError, "compression"),
    ("encryption not a FileEncryption", make_table(), {"encryption": "key"}, ConfigError, "str"),
    (
        "encryption naming an unknown column",
        make_table(),
        {"encryption": encryption_naming("nope")},
        ConfigError,
        "nope",
    ),
]


@pytest.mark.parametrize(
    ("table", "options", "error", "pattern"),
    [pytest.param(*case[1:], id=case[0]) for case in BAD_INPUTS],
)
def test_write_table_with_bad_input_leaves_the_existing_file_byte_identical(
    old_file: Path, table: pa.Table, options: dict[str, Any], error: type[Exception], pattern: str
) -> None:
    before = snapshot(old_file)
    with pytest.raises(error, match=pattern):
        streamwrite.write_table(table, old_file, **options)
    assert_untouched(old_file, before)


@pytest.mark.parametrize(
    ("table", "options", "error", "pattern"),
    [pytest.param(*case[1:], id=case[0]) for case in BAD_INPUTS],
)
def test_parquet_writer_with_bad_input_leaves_the_existing_file_byte_identical(
    old_file: Path, table: pa.Table, options: dict[str, Any], error: type[Exception], pattern: str
) -> None:
    before = snapshot(old_file)
    with (
        pytest.raises(error, match=pattern),
        streamwrite.ParquetWriter(old_file, table.schema, **options) as writer,
    ):
        writer.write_table(table)
    assert_untouched(old_file, before)


def test_a_good_write_replaces_the_file_and_leaves_no_temporary_file(old_file: Path) -> None:
    mode = 0o640
    old_file.chmod(mode)
    table = make_table()
    streamwrite.write_table(table, old_file, row_group_size=1000)
    assert os.listdir(old_file.parent) == [old_file.name]
    assert pq.read_table(old_file).equals(table)
    assert old_file.stat().st_mode & 0o777 == mode  # the replaced file's permissions stay


def test_a_symlinked_target_is_written_through_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real.parquet"
    pq.write_table(OLD, real)
    link = tmp_path / "link.parquet"
    link.symlink_to(real)
    streamwrite.write_table(make_table(), link)
    assert link.is_symlink()
    assert pq.read_table(real).equals(make_table())


# ---------------------------------------------------------------------------------------------
# I/O errors


class FailingSink(io.BytesIO):
    """A file object whose ``write`` fails like a full disk once ``budget`` bytes are written
    (it keeps the bytes that fit, as a real short write would). With ``once``, space comes
    back after the failure, as when another process frees some: a retry would succeed."""

    def __init__(self, budget: int, once: bool = False) -> None:
        super().__init__()
        self.budget = budget
        self.once = once

    def write(self, data: Any) -> int:
        data = bytes(data)
        room = self.budget - self.tell()
        if len(data) > room:
            super().write(data[: max(room, 0)])
            if self.once:
                self.budget = 1 << 62
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().write(data)


def test_an_io_error_poisons_the_writer_and_close_writes_no_footer() -> None:
    sink = FailingSink(budget=2000, once=True)
    writer = streamwrite.ParquetWriter(sink, SCHEMA, compression=None)
    writer.write_table(make_table(100))
    with pytest.raises(StreamwriteIOError, match="No space left") as failure:
        writer.write_table(make_table(5000, start=100))
    written = sink.getvalue()
    for call in (
        lambda: writer.write_table(make_table(10)),
        lambda: writer.write_batch(make_table(10).to_batches()[0]),
        lambda: writer.write(make_table(10)),
    ):
        with pytest.raises(StateError, match="failed") as later:
            call()
        assert later.value.__cause__ is failure.value
    with pytest.raises(StateError) as closing:
        writer.close()
    assert closing.value.__cause__ is failure.value
    assert sink.getvalue() == written  # no footer: nothing points at bytes never written
    writer.close()  # a second close is a no-op
    with pytest.raises(StateError, match="closed"):
        writer.write_table(make_table(10))


def test_an_io_error_in_a_with_block_leaves_the_sink_without_a_footer() -> None:
    sink = FailingSink(budget=2000, once=True)
    with (
        pytest.raises(StreamwriteIOError),
        streamwrite.ParquetWriter(sink, SCHEMA, compression=None) as writer,
    ):
        writer.write_table(make_table(5000))
    assert not sink.getvalue().endswith(b"PAR1")


def test_a_failed_fsync_leaves_the_old_file_and_poisons_the_writer(
    old_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(old_file)
    writer = streamwrite.ParquetWriter(old_file, SCHEMA)
    writer.write_table(make_table())

    def failing_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(StreamwriteIOError, match="Input/output error") as failure:
        writer.close()
    monkeypatch.undo()
    assert_untouched(old_file, before)
    with pytest.raises(StateError) as later:
        writer.write_table(make_table(10))
    assert later.value.__cause__ is failure.value
    writer.close()  # closed now: a no-op


def test_a_failed_directory_sync_after_the_rename_says_the_file_is_in_place(
    old_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real_fsync = os.fsync

    def fsync_failing_second(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 2:  # the file's fsync passes, the directory's fails
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync_failing_second)
    writer = streamwrite.ParquetWriter(old_file, SCHEMA)
    writer.write_table(make_table())
    with pytest.raises(StreamwriteIOError, match="complete and in place"):
        writer.close()
    monkeypatch.undo()
    assert os.listdir(old_file.parent) == [old_file.name]
    assert pq.read_table(old_file).equals(make_table())
    with pytest.raises(StateError, match="complete new file is at"):
        writer.write_table(make_table(10))


def test_a_directory_or_a_missing_parent_is_an_io_error_that_creates_nothing(
    tmp_path: Path,
) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(StreamwriteIOError, match="directory"):
        streamwrite.write_table(make_table(), tmp_path / "d")
    with pytest.raises(StreamwriteIOError, match="Cannot open"):
        streamwrite.write_table(make_table(), tmp_path / "missing" / "f.parquet")
    assert sorted(os.listdir(tmp_path)) == ["d"]
    assert os.listdir(tmp_path / "d") == []


CHILD_PRELUDE = """
import json, os, resource, signal, sys
import numpy as np, pyarrow as pa
import streamwrite
from streamwrite.errors import StateError, StreamwriteIOError
from tests.test_writer_safety import SCHEMA, make_table
"""


def run_child(code: str, timeout: float = 120) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-c", CHILD_PRELUDE + textwrap.dedent(code)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr
    answer: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return answer


def test_a_real_write_error_mid_file_leaves_the_old_file_byte_identical(old_file: Path) -> None:
    """The child may write at most 64 KiB into any file (RLIMIT_FSIZE): a real EFBIG from the
    kernel part-way through the new file, both through ``write_table`` and a ``ParquetWriter``."""
    before = snapshot(old_file)
    answer = run_child(
        f"""
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, resource.RLIM_INFINITY))
        path = {str(old_file)!r}
        big = make_table(200_000)
        out = {{}}
        try:
            streamwrite.write_table(big, path, compression=None, row_group_size=20_000)
        except StreamwriteIOError as exc:
            out["write_table"] = str(exc)
        writer = streamwrite.ParquetWriter(path, SCHEMA, compression=None)
        writer.write_table(make_table(100))
        try:
            writer.write_table(big, row_group_size=20_000)
        except StreamwriteIOError as exc:
            out["write"] = str(exc)
            cause = exc
        try:
            writer.write_table(make_table(10))
        except StateError as exc:
            out["retry"] = exc.__cause__ is cause
        try:
            writer.close()
        except StateError as exc:
            out["close"] = exc.__cause__ is cause
        print(json.dumps(out))
        """
    )
    assert "File too large" in answer["write_table"]
    assert "File too large" in answer["write"]
    assert answer["retry"] is True
    assert answer["close"] is True
    assert_untouched(old_file, before)


def test_a_crash_mid_write_leaves_the_old_file_intact(old_file: Path) -> None:
    """SIGKILL a child while it writes a large file over ``old_file``: the old file stays, and
    what the child left is a hidden ``.tmp`` file no engine glob or dataset picks up."""
    before = snapshot(old_file)
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD_PRELUDE
            + textwrap.dedent(
                f"""
                import glob
                chunk = make_table(50_000)
                partial = os.path.join({str(old_file.parent)!r}, ".data.parquet.*.tmp")
                said = False
                with streamwrite.ParquetWriter({str(old_file)!r}, SCHEMA) as writer:
                    for i in range(10_000):
                        writer.write_table(chunk)
                        if not said and any(os.path.getsize(p) for p in glob.glob(partial)):
                            print("writing", flush=True)  # bytes are down, far from the end
                            said = True
                """
            ),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "writing"  # the temporary file has data
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    left = sorted(set(os.listdir(old_file.parent)) - set(before[1]))
    assert len(left) == 1 and left[0].startswith(".data.parquet.") and left[0].endswith(".tmp")
    assert (old_file.parent / left[0]).stat().st_size > 0  # the kill did land mid-write
    assert old_file.read_bytes() == before[0]
    assert pq.read_table(old_file.parent).equals(OLD)  # the dataset sees only the old file
    assert [p.name for p in old_file.parent.glob("*.parquet")] == [old_file.name]
    assert [p.name for p in old_file.parent.glob("**/*.parquet")] == [old_file.name]


# ---------------------------------------------------------------------------------------------
# Rejected input leaves the writer usable


def test_a_schema_mismatch_leaves_the_writer_usable(old_file: Path) -> None:
    with streamwrite.ParquetWriter(old_file, SCHEMA, row_group_size=1000) as writer:
        writer.write_table(make_table(1500))
        with pytest.raises(SchemaError):
            writer.write_table(make_table(10).drop_columns(["sym"]))
        writer.write_table(make_table(1500, start=1500))
    assert pq.read_table(old_file).equals(make_table(3000))
    assert os.listdir(old_file.parent) == [old_file.name]


def test_a_bad_value_in_a_later_row_group_writes_nothing_of_the_table(tmp_path: Path) -> None:
    """The whole input is checked before its first row group is written: nothing of a table
    whose third row group holds a null in a REQUIRED column reaches the file."""
    path = tmp_path / "f.parquet"
    with streamwrite.ParquetWriter(path, SCHEMA, row_group_size=1000) as writer:
        writer.write_table(make_table(1000))
        with pytest.raises(SchemaError, match=r"'id'.*REQUIRED"):
            writer.write_table(with_null_id(make_table(3000, start=1000), 2500))
        writer.write_table(make_table(2000, start=1000))
    assert pq.read_table(path).equals(make_table(3000))
    assert pq.ParquetFile(path).metadata.num_row_groups == 3
    assert streamwrite.read_table(path).equals(make_table(3000))


def _decimal_beyond_precision(num_rows: int) -> pa.Array:
    dtype = pa.decimal128(5, 2)
    values = [1] * (num_rows - 1) + [-(10**5)]  # the last value has 6 digits
    raw = b"".join(v.to_bytes(16, "little", signed=True) for v in values)
    return pa.Array.from_buffers(dtype, num_rows, [None, pa.py_buffer(raw)])


LAST_VALUE_BAD = {
    "decimal beyond its precision": (_decimal_beyond_precision, "precision"),
    "date64 beyond INT32 days": (
        lambda n: pa.array([0] * (n - 1) + [2**62], pa.date64()),
        "overflows INT32",
    ),
    "time32[s] beyond INT32 milliseconds": (
        lambda n: pa.array([0] * (n - 1) + [2**31 - 1], pa.time32("s")),
        "overflows INT32",
    ),
    "timestamp[s] beyond int64 milliseconds": (
        lambda n: pa.array([0] * (n - 1) + [2**62], pa.timestamp("s")),
        "overflows int64",
    ),
    "null in a REQUIRED column": (lambda n: pa.array([0] * (n - 1) + [None], pa.int64()), "null"),
}


@pytest.mark.parametrize("kind", list(LAST_VALUE_BAD))
def test_every_value_check_refuses_the_table_before_its_first_row_group(
    tmp_path: Path, kind: str
) -> None:
    """For each conversion that checks values, a bad value in the last of three row groups
    refuses the table with nothing of it written, and the writer stays usable."""
    make_column, pattern = LAST_VALUE_BAD[kind]
    bad = make_column(3000)
    field = pa.field("v", bad.type, nullable=kind != "null in a REQUIRED column")
    schema = pa.schema([field])
    good = pa.Table.from_arrays([bad.slice(0, 1000)], schema=schema)
    path = tmp_path / "f.parquet"
    with streamwrite.ParquetWriter(path, schema, row_group_size=1000) as writer:
        with pytest.raises(SchemaError, match=pattern):
            writer.write_table(pa.Table.from_arrays([bad], schema=schema))
        writer.write_table(good)
    assert pq.ParquetFile(path).metadata.num_row_groups == 1
    assert streamwrite.read_table(path).equals(good)


def test_a_bad_row_group_size_leaves_the_writer_usable(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    with streamwrite.ParquetWriter(path, SCHEMA) as writer:
        for bad in (0, -1):
            with pytest.raises(ConfigError, match="row_group_size"):
                writer.write_table(make_table(10), row_group_size=bad)
        writer.write_table(make_table(10), row_group_size=4)
    assert pq.ParquetFile(path).metadata.num_row_groups == 3
    assert pq.read_table(path).equals(make_table(10))


def test_a_closed_writer_refuses_writes(tmp_path: Path) -> None:
    writer = streamwrite.ParquetWriter(tmp_path / "f.parquet", SCHEMA)
    writer.close()
    for call in (
        lambda: writer.write_table(make_table(10)),
        lambda: writer.write_batch(make_table(10).to_batches()[0]),
        lambda: writer.write(make_table(10)),
    ):
        with pytest.raises(StateError, match="closed"):
            call()
    writer.close()
    assert pq.read_table(tmp_path / "f.parquet").num_rows == 0


def test_leaving_the_with_block_on_an_exception_publishes_nothing(
    old_file: Path, tmp_path: Path
) -> None:
    before = snapshot(old_file)
    new = tmp_path / "new.parquet"
    for path in (old_file, new):
        with pytest.raises(KeyError), streamwrite.ParquetWriter(path, SCHEMA) as writer:
            writer.write_table(make_table())
            raise KeyError("the caller's own failure")
    assert not new.exists()
    assert_untouched(old_file, before)


def test_abort_discards_the_file(old_file: Path) -> None:
    before = snapshot(old_file)
    writer = streamwrite.ParquetWriter(old_file, SCHEMA)
    writer.write_table(make_table())
    writer.abort()
    writer.abort()
    writer.close()
    assert_untouched(old_file, before)
    with pytest.raises(StateError, match="closed"):
        writer.write_table(make_table())


def test_writes_to_a_file_object_go_directly_to_it() -> None:
    sink = io.BytesIO()
    with streamwrite.ParquetWriter(sink, SCHEMA) as writer:
        writer.write_table(make_table(10))
        assert sink.getvalue().startswith(b"PAR1")
    assert pq.read_table(pa.BufferReader(sink.getvalue())).equals(make_table(10))
    assert not sink.closed


class ShortWrites(io.RawIOBase):
    """A raw file object that takes at most 1000 bytes per ``write`` (as a pipe or socket may)."""

    def __init__(self) -> None:
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        taken = bytes(data[:1000])
        self.data += taken
        return len(taken)


def test_short_writes_to_a_raw_file_object_are_completed() -> None:
    sink = ShortWrites()
    streamwrite.write_table(make_table(), sink, compression=None)
    assert pq.read_table(pa.BufferReader(bytes(sink.data))).equals(make_table())


# ---------------------------------------------------------------------------------------------
# Codecs, schema errors, keyword errors


def test_the_codec_error_offers_only_codecs_the_writer_writes() -> None:
    for value in ("lzo", "zip", CompressionCodec.LZO, CompressionCodec.LZ4):
        with pytest.raises(ConfigError, match="expected one of") as error:
            make_write_options(["a"], compression=value)
        offered = str(error.value).split("expected one of", 1)[1]
        assert "lzo" not in offered.lower()
        for name in ("zstd", "snappy", "gzip", "brotli", "lz4_raw", "none"):
            assert f"'{name}'" in offered
    for name in ("none", "uncompressed", "snappy", "gzip", "brotli", "zstd", "lz4", "lz4_raw"):
        data = io.BytesIO()
        streamwrite.write_table(make_table(100), data, compression=name)
        assert pq.read_table(pa.BufferReader(data.getvalue())).equals(make_table(100))


def test_compression_levels_at_the_ends_of_each_range_are_written() -> None:
    for codec, levels in {
        "zstd": (-131072, 22),
        "gzip": (0, 9),
        "brotli": (0, 11),
        "lz4_raw": (1, 12),
    }.items():
        for level in levels:
            data = io.BytesIO()
            streamwrite.write_table(
                make_table(100), data, compression=codec, compression_level=level
            )
            assert pq.read_table(pa.BufferReader(data.getvalue())).equals(make_table(100))


def first_line(error: pytest.ExceptionInfo[Exception]) -> str:
    return str(error.value).splitlines()[0]


SCHEMA_DIFFERENCES = [
    (
        pa.schema([("id", pa.int64()), ("sym", pa.string()), ("qty", pa.int32())]),
        pa.schema([("id", pa.int64()), ("sym", pa.string()), ("qty", pa.int64())]),
        "Column 'qty' (index 2) has type int32 in the data but int64 in {owner}.",
    ),
    (
        pa.schema([("id", pa.int64()), ("sym", pa.string())]),
        pa.schema([("id", pa.int64()), ("sym", pa.string()), ("venue", pa.string())]),
        "The data has no column 'venue' (index 2 in {owner}).",
    ),
    (
        pa.schema([("id", pa.int64()), ("extra", pa.int8()), ("sym", pa.string())]),
        pa.schema([("id", pa.int64()), ("sym", pa.string())]),
        "The data has a column 'extra' (index 1) that {owner} does not have.",
    ),
    (
        pa.schema([("sym", pa.string()), ("id", pa.int64())]),
        pa.schema([("id", pa.int64()), ("sym", pa.string())]),
        "Column 'id' is at index 1 in the data but at index 0 in {owner}.",
    ),
    (
        pa.schema([pa.field("sym", pa.string(), nullable=True)]),
        pa.schema([pa.field("sym", pa.string(), nullable=False)]),
        "Column 'sym' (index 0) is nullable in the data but required (not nullable) in {owner}.",
    ),
    (
        pa.schema([pa.field("sym", pa.string(), nullable=False)]),
        pa.schema([pa.field("sym", pa.string(), nullable=True)]),
        "Column 'sym' (index 0) is required (not nullable) in the data but nullable in {owner}.",
    ),
]


@pytest.mark.parametrize(("data_schema", "schema", "message"), SCHEMA_DIFFERENCES)
def test_schema_errors_name_the_first_column_that_differs_and_how(
    tmp_path: Path, data_schema: pa.Schema, schema: pa.Schema, message: str
) -> None:
    data = data_schema.empty_table()
    with pytest.raises(SchemaError) as error:
        as_table(data, schema, "the table")
    assert first_line(error) == message.format(owner="the table")
    for full in (schema, data_schema):  # the full schemas follow the first line
        assert str(full).replace("\n", "\n    ") in str(error.value)
    with pytest.raises(SchemaError) as error:
        as_table([pa.RecordBatch.from_pylist([], schema=data_schema)], schema, "it")
    assert first_line(error) == message.format(owner="it")
    with streamwrite.ParquetWriter(tmp_path / "f.parquet", schema) as writer:
        with pytest.raises(SchemaError) as error:
            writer.write_table(data)
        assert first_line(error) == message.format(owner="the writer's schema")


def test_a_misspelt_keyword_names_the_public_function(old_file: Path) -> None:
    before = snapshot(old_file)
    expected = "{}() got an unexpected keyword argument 'compresion'; did you mean 'compression'?"
    with pytest.raises(TypeError) as error:
        streamwrite.write_table(make_table(), old_file, compresion="zstd")
    assert str(error.value) == expected.format("write_table")
    with pytest.raises(TypeError) as error:
        streamwrite.ParquetWriter(old_file, SCHEMA, compresion="zstd")
    assert str(error.value) == expected.format("ParquetWriter")
    with pytest.raises(TypeError) as error:
        make_write_options(["a"], caller="open_table", compresion="zstd")
    assert str(error.value) == expected.format("open_table")
    with pytest.raises(TypeError, match=r"'colour'; it takes .*row_group_size") as error:
        streamwrite.write_table(make_table(), old_file, colour="red")
    assert "make_write_options" not in str(error.value)
    assert_untouched(old_file, before)


README_SNIPPET = """
import pyarrow as pa
import streamwrite

schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
streamwrite.write_table(pa.table({"id": [1, 2]}, schema=schema), "ids.parquet")
bad = pa.table({"id": pa.array([3, None], pa.int64())}, schema=schema)  # null in a required column
try:
    streamwrite.write_table(bad, "ids.parquet")
except streamwrite.SchemaError as error:
    print(error)  # Column 'id' (index 0) is REQUIRED (not nullable) but the array holds 1 null(s).
assert streamwrite.read_table("ids.parquet")["id"].to_pylist() == [1, 2]  # untouched

with streamwrite.ParquetWriter("ids.parquet", schema) as writer:
    writer.write_table(pa.table({"id": [4, 5]}, schema=schema))
    try:
        writer.write_table(bad)  # refused before any of it is written...
    except streamwrite.SchemaError:
        pass
    writer.write_table(pa.table({"id": [6]}, schema=schema))  # ...so the writer goes on
assert streamwrite.read_table("ids.parquet")["id"].to_pylist() == [4, 5, 6]
"""


def test_the_readme_snippet_on_failed_writes_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(README_SNIPPET, "README.md", "exec"), {})
    assert "Column 'id' (index 0) is REQUIRED" in capsys.readouterr().out
    assert os.listdir(tmp_path) == ["ids.parquet"]
