"""Nested interop matrix: pyarrow (page CRCs verified), DuckDB and polars read our nested files.

streamwrite writes the table of ``nested_matrix.py`` (every nested shape over the flat leaf
types, nulls at every level) for the selected cases (encoding family x codec x page version x
nullability; ``STREAMWRITE_NESTED_MATRIX_CASES`` widens the representative set up to the whole
product), with small pages, the page index and a bloom filter on every leaf; the third-party
readers run in a subprocess (``read_check_nested.py``) and must read them equal to the input.
Encrypted nested files (per-leaf column keys) are read by pyarrow here and by Spark in
``tests/spark/test_nested_interop.py``, which also reads this matrix.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.crypto import EncryptionConfig, InMemoryKms, KeyWrapper
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.format import structs as t
from streamwrite.format.thrift.codec import deserialize
from tests.interop.nested_compare import same_nested_tables
from tests.interop.nested_matrix import (
    FAMILIES,
    Case,
    nested_table,
    selected_cases,
    write_options,
)

CASES = selected_cases()
READERS = ["pyarrow", "duckdb", "polars"]


def expected_table(case: Case) -> pa.Table:
    return nested_table(case.nullable, low_cardinality=case.family == "DICTIONARY")


def write_case(case: Case, directory: Path) -> Path:
    """Writes the case's file and its expected table (``.arrow``); returns the file's path."""
    table = expected_table(case)
    path = directory / f"{case.name}.parquet"
    streamwrite.write_table(table, path, **write_options(case, table.schema))
    with (
        pa.OSFile(str(path.with_suffix(".arrow")), "wb") as sink,
        pa.ipc.new_file(sink, table.schema) as writer,
    ):
        writer.write_table(table)
    return path


@pytest.fixture(scope="module")
def nested_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("nested_matrix")
    for case in CASES:
        write_case(case, directory)
    return directory


@pytest.fixture(scope="module")
def third_party_results(nested_dir: Path) -> dict[tuple[str, str], list[str]]:
    script = Path(__file__).with_name("read_check_nested.py")
    proc = subprocess.run(
        [sys.executable, str(script), str(nested_dir), *READERS],
        capture_output=True,
        text=True,
        timeout=900,
    )
    results = {}
    for line in proc.stdout.splitlines():
        record = json.loads(line)
        results[(record["file"], record["reader"])] = record["problems"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    return results


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_third_party_reads_our_nested_files(
    third_party_results: dict[tuple[str, str], list[str]], reader: str, case: Case
) -> None:
    assert third_party_results[(f"{case.name}.parquet", reader)] == []


def plaintext_footer(path: Path) -> t.FileMetaData:
    """The footer of a file whose footer is not encrypted (``PAR1`` or plaintext-footer mode)."""
    raw = path.read_bytes()
    size = int.from_bytes(raw[-8:-4], "little")
    footer, _ = deserialize(t.FileMetaData, raw, len(raw) - 8 - size)
    return footer


def offset_indexes(path: Path) -> dict[str, t.OffsetIndex]:
    """Leaf path -> the OffsetIndex of its chunk in the first row group."""
    raw = path.read_bytes()
    indexes = {}
    groups = plaintext_footer(path).row_groups
    assert groups
    for column in groups[0].columns or []:
        assert column.meta_data is not None and column.offset_index_offset is not None
        name = ".".join(column.meta_data.path_in_schema or [])
        indexes[name], _ = deserialize(t.OffsetIndex, raw, column.offset_index_offset)
    return indexes


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_our_nested_files_have_what_the_case_asks(nested_dir: Path, case: Case) -> None:
    """Every leaf: the family's encoding, several pages cut at record starts (OffsetIndex
    ``first_row_index`` counts records), a column index and a bloom filter."""
    path = nested_dir / f"{case.name}.parquet"
    meta = pq.ParquetFile(path).metadata
    assert meta.num_rows == expected_table(case).num_rows
    encodings = {ty.name: enc for ty, enc in FAMILIES[case.family].items()}
    indexes = offset_indexes(path)
    group = meta.row_group(0)
    for i in range(group.num_columns):
        chunk = group.column(i)
        leaf = chunk.path_in_schema
        assert chunk.has_offset_index and chunk.has_column_index, leaf
        physical = chunk.physical_type
        if physical != "BOOLEAN":  # Parquet bloom filters do not cover BOOLEAN
            assert chunk.bloom_filter_offset and chunk.bloom_filter_length, leaf
        if case.family == "DICTIONARY":  # booleans are never dictionary-encoded
            assert chunk.has_dictionary_page == (physical != "BOOLEAN"), leaf
        else:
            assert not chunk.has_dictionary_page, leaf
            wanted = encodings.get(physical, "PLAIN")
            assert wanted in chunk.encodings, (leaf, chunk.encodings)
        pages = indexes[leaf].page_locations
        assert pages is not None
        firsts = [page.first_row_index for page in pages]
        assert firsts[0] == 0 and firsts == sorted(set(firsts)), (leaf, firsts)
        assert len(pages) > 1, (leaf, len(pages))


def test_streamwrite_reads_its_own_nested_matrix(nested_dir: Path) -> None:
    for case in CASES:
        expected = expected_table(case)
        actual = streamwrite.read_table(nested_dir / f"{case.name}.parquet")
        assert actual.schema.equals(expected.schema), case.name
        assert same_nested_tables(expected, actual) == [], case.name
        actual.validate(full=True)  # Arrow-valid buffers (offsets, child lengths, validity)


# --- encrypted nested files through pyarrow --------------------------------------------------

MASTER_KEYS = {
    "kf": b"FOOTERMASTERKEY!",
    "kc": b"COLUMNMASTERKEY!COLUMNMASTERKEY!",
    "kd": b"OTHERCOLUMNMKEY!OTHERCOL",
}
COLUMN_KEYS = {
    "s.a": "kc",
    "lf.list.element": "kc",
    "m.key_value.key": "kd",
    "m.key_value.value": "kd",
    "nn.list.element.list.element": "kd",
    "deep.b.c": "kc",
}
FOOTER_KEY_COLUMNS = ("ls.list.element", "lst.list.element.x")


@pytest.fixture(scope="module")
def encrypted_table() -> pa.Table:
    return nested_table(True, num_rows=900, special_floats=False)


def encrypted_cases() -> list[dict[str, Any]]:
    """(name, algorithm, plaintext footer, page version) of the encrypted files."""
    return [
        {"name": "gcm-ef-v1", "algorithm": "AES_GCM_V1", "pf": False, "version": "1.0"},
        {"name": "ctr-pf-v1", "algorithm": "AES_GCM_CTR_V1", "pf": True, "version": "1.0"},
        {"name": "gcm-pf-v2", "algorithm": "AES_GCM_V1", "pf": True, "version": "2.0"},
        {"name": "ctr-ef-v2", "algorithm": "AES_GCM_CTR_V1", "pf": False, "version": "2.0"},
    ]


def write_encrypted(
    table: pa.Table, path: Path, algorithm: str, plaintext_footer: bool, version: str,
    v2_page_layout: str = "arrow",
) -> None:  # fmt: skip
    """A nested file with per-leaf column keys (leaf paths), several row groups and pages."""
    config = EncryptionConfig(
        footer_key_id="kf",
        column_keys=COLUMN_KEYS,
        algorithm=algorithm,
        plaintext_footer=plaintext_footer,
    )
    encryption = FileEncryption(
        KeyWrapper(InMemoryKms(MASTER_KEYS), config),
        footer_key_columns=FOOTER_KEY_COLUMNS,
        v2_page_layout=v2_page_layout,
    )
    streamwrite.write_table(
        table,
        path,
        encryption=encryption,
        data_page_version=version,
        row_group_size=400,
        data_page_size=1024,
        bloom_filter_options={"s.a": True, "m.key_value.key": True},
    )


PYARROW_READER = """
import json, sys
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
from streamwrite.crypto import InMemoryKms

manifest = json.load(open(sys.argv[1]))
kms = InMemoryKms({k: bytes.fromhex(v) for k, v in manifest["master_keys"].items()})

class Kms(pe.KmsClient):
    def __init__(self):
        super().__init__()
    def wrap_key(self, key_bytes, master_key_identifier):
        return kms.wrap_key(key_bytes, master_key_identifier)
    def unwrap_key(self, wrapped_key, master_key_identifier):
        return kms.unwrap_key(wrapped_key, master_key_identifier)

factory = pe.CryptoFactory(lambda _cfg: Kms())
props = factory.file_decryption_properties(pe.KmsConnectionConfig())
results = {}
for job in manifest["jobs"]:
    try:
        expected = feather.read_table(job["expected"])
        f = pq.ParquetFile(job["path"], decryption_properties=props,
                           page_checksum_verification=True)
        got = f.read()
        groups = [f.read_row_group(i) for i in range(f.num_row_groups)]
        ok = got.equals(expected) and f.num_row_groups > 1 and all(
            g.equals(expected.slice(sum(len(r) for r in groups[:i]), len(g)))
            for i, g in enumerate(groups))
        results[job["name"]] = "ok" if ok else "different values"
    except Exception as exc:
        results[job["name"]] = "error: " + type(exc).__name__ + ": " + str(exc)
json.dump(results, open(sys.argv[2], "w"))
"""


def test_pyarrow_reads_our_encrypted_nested_files(
    tmp_path: Path, encrypted_table: pa.Table
) -> None:
    expected = tmp_path / "expected.feather"
    feather.write_feather(encrypted_table, expected)
    jobs = []
    for case in encrypted_cases():
        path = tmp_path / f"{case['name']}.parquet"
        write_encrypted(encrypted_table, path, case["algorithm"], case["pf"], case["version"])
        jobs.append({"name": case["name"], "path": str(path), "expected": str(expected)})
    script, manifest, out = tmp_path / "r.py", tmp_path / "m.json", tmp_path / "o.json"
    script.write_text(PYARROW_READER)
    keys = {k: v.hex() for k, v in MASTER_KEYS.items()}
    manifest.write_text(json.dumps({"master_keys": keys, "jobs": jobs}))
    proc = subprocess.run(
        [sys.executable, str(script), str(manifest), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"pyarrow died ({proc.returncode}): {proc.stderr[-2000:]}"
    assert json.loads(out.read_text()) == {job["name"]: "ok" for job in jobs}
    # the keys went to the leaves the configuration names (leaf paths), not to whole columns
    groups = plaintext_footer(tmp_path / "gcm-pf-v2.parquet").row_groups
    assert groups
    keyed, footer_keyed = set(), set()
    for column in groups[0].columns or []:
        crypto = column.crypto_metadata
        if crypto is not None and crypto.ENCRYPTION_WITH_COLUMN_KEY is not None:
            keyed.add(".".join(crypto.ENCRYPTION_WITH_COLUMN_KEY.path_in_schema or []))
        elif crypto is not None:
            assert column.meta_data is not None
            footer_keyed.add(".".join(column.meta_data.path_in_schema or []))
    assert keyed == set(COLUMN_KEYS)
    assert footer_keyed == set(FOOTER_KEY_COLUMNS)
