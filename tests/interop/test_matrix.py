"""Interop matrix: type x encoding x codec x page version x nullability, both directions.

- streamwrite writes, pyarrow (page CRCs verified) and DuckDB read, in a subprocess;
- pyarrow writes the same matrix, streamwrite reads.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import streamwrite
from tests.interop.compare import same_tables
from tests.interop.matrix import CODECS, ENCODING_OF, ENCODING_TYPES, READER_GAPS, matrix_table

VERSIONS = ["1.0", "2.0"]
CASES = list(itertools.product(ENCODING_TYPES, CODECS, VERSIONS, [False, True]))


def _options(encoding: str, table: pa.Table) -> dict[str, object]:
    if encoding == "DICTIONARY":
        return {"use_dictionary": True}
    parquet_encoding = ENCODING_OF.get(encoding, encoding)
    return {
        "use_dictionary": False,
        "column_encoding": {name: parquet_encoding for name in table.column_names},
    }


def _case_name(encoding: str, codec: str, version: str, nullable: bool) -> str:
    return f"{encoding}-{codec}-v{version[0]}-{'null' if nullable else 'req'}"


@pytest.fixture(scope="module")
def matrix_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("matrix")
    tables = {}
    for encoding, codec, version, nullable in CASES:
        key = (encoding, nullable)
        if key not in tables:
            tables[key] = matrix_table(encoding, nullable)
        table = tables[key]
        name = _case_name(encoding, codec, version, nullable)
        streamwrite.write_table(
            table,
            directory / f"{name}.parquet",
            compression=codec,
            data_page_version=version,
            data_page_size=2048,  # several pages per chunk
            **_options(encoding, table),
        )
        with (
            pa.OSFile(str(directory / f"{name}.arrow"), "wb") as sink,
            pa.ipc.new_file(sink, table.schema) as writer,
        ):
            writer.write_table(table)
    return directory


@pytest.fixture(scope="module")
def third_party_results(matrix_dir: Path) -> dict[tuple[str, str], list[str]]:
    script = Path(__file__).with_name("read_check.py")
    proc = subprocess.run(
        [sys.executable, str(script), str(matrix_dir), "pyarrow", "duckdb"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    results = {}
    for line in proc.stdout.splitlines():
        record = json.loads(line)
        results[(record["file"], record["reader"])] = record["problems"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    return results


@pytest.mark.parametrize("reader", ["pyarrow", "duckdb"])
@pytest.mark.parametrize(
    ("encoding", "codec", "version", "nullable"), CASES, ids=[_case_name(*c) for c in CASES]
)
def test_third_party_reads_ours(
    third_party_results: dict[tuple[str, str], list[str]],
    reader: str,
    encoding: str,
    codec: str,
    version: str,
    nullable: bool,
) -> None:
    if (reader, encoding) in READER_GAPS:
        pytest.skip(READER_GAPS[(reader, encoding)])
    name = _case_name(encoding, codec, version, nullable) + ".parquet"
    assert third_party_results[(name, reader)] == []


def test_streamwrite_reads_its_own_matrix(matrix_dir: Path) -> None:
    for encoding, codec, version, nullable in CASES:
        name = _case_name(encoding, codec, version, nullable)
        with pa.memory_map(str(matrix_dir / f"{name}.arrow")) as source:
            expected = pa.ipc.open_file(source).read_all()
        actual = streamwrite.read_table(matrix_dir / f"{name}.parquet")
        assert actual.schema.equals(expected.schema), name
        assert same_tables(expected, actual) == [], name


@pytest.mark.parametrize(
    ("encoding", "codec", "version", "nullable"), CASES, ids=[_case_name(*c) for c in CASES]
)
def test_streamwrite_reads_pyarrow(
    tmp_path: Path, encoding: str, codec: str, version: str, nullable: bool
) -> None:
    table = matrix_table(encoding, nullable)
    path = tmp_path / "pyarrow.parquet"
    pq.write_table(
        table,
        path,
        compression=codec,
        data_page_version=version,
        data_page_size=2048,
        write_page_checksum=True,
        store_decimal_as_integer=True,
        **_options(encoding, table),
    )
    actual = streamwrite.read_table(path)
    assert actual.schema.equals(table.schema)
    assert same_tables(table, actual) == []
