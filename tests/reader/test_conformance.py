"""The reader against every file of parquet-testing ``data/`` and against our own writer.

Each file is classified from its raw bytes and footer (not through the reader under test):

- encrypted (``PARE`` magic, ``encryption_algorithm`` or encrypted column metadata): without keys
  our read must raise EncryptionError ("needs decryption keys") (``tests/reader/test_decryption.py``
  reads them with keys);
- otherwise (flat or nested) our ``read_table`` must hold the same values as
  ``pyarrow.parquet.read_table``.

pyarrow reads every file in a subprocess (a malformed file could abort the interpreter) and
hands the tables over as Arrow IPC files; if that process dies on a file, it is restarted for
the rest and the file counts as one pyarrow cannot read (then we must raise a StreamwriteError).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.errors import ChecksumError, EncryptionError, StreamwriteError, UnsupportedError
from streamwrite.format import structs as t
from streamwrite.format.enums import FieldRepetitionType
from streamwrite.format.thrift.codec import deserialize
from tests._vectors import PARQUET_TESTING
from tests.interop.compare import same_tables

TESTDATA = PARQUET_TESTING
DATA = TESTDATA / "data"
BAD_DATA = TESTDATA / "bad_data"
AUXILIARY_SUFFIXES = {".md", ".csv", ".json", ".py", ".yaml", ".bin"}
"""Files next to the Parquet files that are not Parquet (expectations, generators, raw filters)."""

CORRUPT_CHECKSUM = {
    # Deliberate difference: the page bytes do not match the page CRC32. pyarrow does not check
    # CRCs by default and returns the damaged values; we check them by default and raise
    # ChecksumError. With verify_checksums=False we read what pyarrow reads.
    "datapage_v1-corrupt-checksum.parquet",
    "rle-dict-uncompressed-corrupt-checksum.parquet",
}

XFAIL: dict[str, str] = {
    # Known gaps outside the reader; strict, so a fix shows up here. None at the moment.
}

_PYARROW_SCRIPT = r"""
import json, sys
from pathlib import Path
import pyarrow as pa, pyarrow.parquet as pq
out = Path(sys.argv[1])
for n, name in enumerate(sys.argv[2:]):
    marker = out / f"{n}.started"
    if marker.exists():
        continue
    marker.write_text(name)
    try:
        table = pq.read_table(name)
        with pa.OSFile(str(out / f"{n}.arrow"), "wb") as sink:
            with pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
        status = {"ok": True}
    except Exception as exc:
        status = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    (out / f"{n}.json").write_text(json.dumps(status))
"""


class PyarrowReference:
    """pyarrow's reading of a list of files, done in (restartable) subprocesses."""

    def __init__(self, files: list[Path], workdir: Path) -> None:
        self.files = files
        self.workdir = workdir
        args = [sys.executable, "-c", _PYARROW_SCRIPT, str(workdir), *map(str, files)]
        for _ in range(len(files) + 1):
            subprocess.run(args, capture_output=True, timeout=300, check=False)
            if all((workdir / f"{n}.started").exists() for n in range(len(files))):
                break

    def result(self, path: Path) -> pa.Table | str:
        """pyarrow's table, or a description of why pyarrow could not read the file."""
        n = self.files.index(path)
        status_file = self.workdir / f"{n}.json"
        if not status_file.exists():
            return "pyarrow's process died reading this file"
        status = json.loads(status_file.read_text())
        if not status["ok"]:
            return str(status["error"])
        with pa.memory_map(str(self.workdir / f"{n}.arrow")) as source:
            return pa.ipc.open_file(source).read_all()


def parquet_files(root: Path) -> list[Path]:
    """Every Parquet file below ``root`` (recursively), with the auxiliary files checked off."""
    files = []
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        if path.name.endswith((".parquet", ".parquet.encrypted")):
            files.append(path)
        else:
            assert path.suffix in AUXILIARY_SUFFIXES, f"unclassified test file {path}"
    return files


def footer(path: Path) -> t.FileMetaData | None:
    """The FileMetaData decoded straight from the bytes; None for an encrypted (PARE) footer."""
    data = path.read_bytes()
    if data[-4:] == b"PARE":
        return None
    size = int.from_bytes(data[-8:-4], "little")
    metadata, _ = deserialize(t.FileMetaData, memoryview(data)[len(data) - 8 - size : -8])
    return metadata


def classify(path: Path) -> str:
    """``encrypted``, ``nested`` or ``flat``."""
    metadata = footer(path)
    if metadata is None or metadata.encryption_algorithm is not None:
        return "encrypted"
    for row_group in metadata.row_groups or []:
        for chunk in row_group.columns or []:
            if chunk.crypto_metadata is not None or chunk.encrypted_column_metadata is not None:
                return "encrypted"
    for element in (metadata.schema or [])[1:]:
        if element.num_children or element.repetition_type == FieldRepetitionType.REPEATED:
            return "nested"
    return "flat"


def compare(expected: pa.Table, actual: pa.Table) -> list[str]:
    """same_tables, plus schemas of empty tables (same_tables cannot compare zero rows)."""
    if expected.num_rows == 0 and actual.num_rows == 0:
        if actual.column_names != expected.column_names:
            return [f"columns {actual.column_names} != {expected.column_names}"]
        return []
    return same_tables(expected, actual)


DATA_FILES = parquet_files(DATA)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> PyarrowReference:
    return PyarrowReference(DATA_FILES, tmp_path_factory.mktemp("pyarrow-data"))


def _param(path: Path) -> object:
    name = str(path.relative_to(DATA))
    marks = []
    if name in XFAIL:
        marks.append(pytest.mark.xfail(strict=True, reason=XFAIL[name]))
    return pytest.param(path, id=name, marks=marks)


def test_every_data_file_is_listed() -> None:
    assert len(DATA_FILES) > 60
    assert not set(XFAIL) - {str(p.relative_to(DATA)) for p in DATA_FILES}
    assert not CORRUPT_CHECKSUM - {p.name for p in DATA_FILES}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("path", [_param(p) for p in DATA_FILES])
def test_data_file(path: Path, reference: PyarrowReference) -> None:
    kind = classify(path)
    if kind == "encrypted":
        if footer(path) is None:  # PARE
            with pytest.raises(EncryptionError, match="needs decryption keys"):
                streamwrite.read_table(path)
        else:
            with pytest.raises((EncryptionError, UnsupportedError)):
                streamwrite.read_table(path)
        return
    expected = reference.result(path)
    if isinstance(expected, str):
        # pyarrow cannot read it: neither may we (no flat file here is valid yet unreadable).
        with pytest.raises(StreamwriteError):
            streamwrite.read_table(path)
        return
    if path.name in CORRUPT_CHECKSUM:
        with pytest.raises(ChecksumError) as info:
            streamwrite.read_table(path)
        assert info.value.offset is not None
        actual = streamwrite.read_table(path, verify_checksums=False)
    else:
        actual = streamwrite.read_table(path)
    assert compare(expected, actual) == []
    assert actual.schema.names == expected.schema.names


def test_column_selection_and_row_groups() -> None:
    path = DATA / "alltypes_tiny_pages.parquet"
    expected = pq.read_table(path, columns=["id", "string_col"])
    assert same_tables(expected, streamwrite.read_table(path, columns=["id", "string_col"])) == []
    with streamwrite.ParquetFile(path) as pf:
        parts = [pf.read_row_group(i) for i in range(pf.num_row_groups)]
    assert sum(p.num_rows for p in parts) == expected.num_rows


# ---------------------------------------------------------------------------------------------
# Everything our writer writes reads back.


def _writer_table() -> pa.Table:
    n = 3000
    return pa.table(
        {
            "i32": pa.array([None if i % 7 == 0 else i for i in range(n)], pa.int32()),
            "i64": pa.array(range(n), pa.int64()),
            "f64": pa.array([i * 0.5 if i % 5 else None for i in range(n)], pa.float64()),
            "f32": pa.array([float(i % 13) for i in range(n)], pa.float32()),
            "s": pa.array([None if i % 11 == 0 else f"v{i % 40}" for i in range(n)]),
            "b": pa.array([i % 3 == 0 for i in range(n)]),
            "ts": pa.array(range(n), pa.timestamp("us", "UTC")),
            "d": pa.array([i % 1000 for i in range(n)], pa.decimal128(9, 2)),
            "fx": pa.array([bytes([i % 256] * 4) for i in range(n)], pa.binary(4)),
        }
    )


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize(
    "codec", ["none", "snappy", "gzip", "brotli", "zstd", "lz4_raw"], ids=lambda c: str(c)
)
def test_writer_output_reads_back(version: str, codec: str) -> None:
    table = _writer_table()
    buf = io.BytesIO()
    streamwrite.write_table(
        table,
        buf,
        compression=codec,
        data_page_version=version,
        data_page_row_limit=700,
        row_group_size=2000,
        bloom_filter_options={"s": {"ndv": 100, "fpp": 0.01}},
    )
    assert streamwrite.read_table(buf.getvalue()).equals(table)


@pytest.mark.parametrize(
    ("column", "encoding"),
    [
        ("i64", "DELTA_BINARY_PACKED"),
        ("i32", "DELTA_BINARY_PACKED"),
        ("s", "DELTA_LENGTH_BYTE_ARRAY"),
        ("s", "DELTA_BYTE_ARRAY"),
        ("fx", "DELTA_BYTE_ARRAY"),
        ("f64", "BYTE_STREAM_SPLIT"),
        ("f32", "BYTE_STREAM_SPLIT"),
        ("fx", "BYTE_STREAM_SPLIT"),
        ("b", "RLE"),
        ("i32", "PLAIN"),
    ],
)
def test_writer_encodings_read_back(column: str, encoding: str) -> None:
    table = _writer_table().select([column])
    for version in ("1.0", "2.0"):
        buf = io.BytesIO()
        streamwrite.write_table(
            table, buf, column_encoding={column: encoding}, data_page_version=version
        )
        assert streamwrite.read_table(buf.getvalue()).equals(table), (encoding, version)
        encodings = pq.ParquetFile(io.BytesIO(buf.getvalue())).metadata.row_group(0).column(0)
        assert encoding in encodings.encodings
