"""Writing encrypted Parquet files (spec 7.3, DESIGN section 5).

* pyarrow (``CryptoFactory`` with a ``KmsClient`` delegating to our ``InMemoryKms``) reads what
  we write, across algorithms, footer modes, key wrapping, key lengths, page versions, page
  indexes, bloom filters, dictionaries and nulls. pyarrow runs in a subprocess: a malformed
  encrypted file may abort it.
* Our files are taken apart module by module with ``ModuleCipher`` by the walk of
  ``tests/reader/test_encrypted_vectors.py`` (the one that checks the parquet-cpp / parquet-java
  vectors), bloom filter and page index modules included.
* No data key appears in the file or in a message; the row group ordinal limit is enforced.
"""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
import struct
import subprocess
import sys
import textwrap
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pytest

from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.crypto import EncryptionConfig, ExplicitKeys, InMemoryKms, KeyWrapper
from streamwrite.crypto.encryption import FileEncryption, FileEncryptor
from streamwrite.encode import row_group_jobs
from streamwrite.errors import ConfigError, EncryptionError, LimitError
from streamwrite.format import structs as t
from streamwrite.format.aad import ModuleType
from streamwrite.format.enums import PageType, Type
from streamwrite.format.thrift.codec import deserialize, serialize
from streamwrite.layout.file_writer import FileWriter
from streamwrite.options import make_write_options
from streamwrite.writer import ParquetWriter, write_table
from tests.reader.test_encrypted_vectors import Vector, Walk, walk
from workers.bloom import SplitBlockBloomFilter, hash_values
from workers.cipher import Algorithm, ModuleCipher
from workers.jobs import run_job

MASTER_KEYS = {
    "kf": b"FOOTERMASTERKEY!",
    "kc": b"COLUMNMASTERKEY!COLUMNMASTERKEY!",
    "kd": b"OTHERCOLUMNMKEY!OTHERCOL",
}
ROWS = 3000
WRITE_OPTIONS: dict[str, Any] = {
    "row_group_size": 1200,  # 3 row groups: ordinals 0, 1, 2 in the AADs
    "data_page_row_limit": 400,  # several data pages per chunk
    "bloom_filter_options": {"a": True, "b": {"ndv": 100, "fpp": 0.01}, "e": True},
    "dictionary_pagesize_limit": 4096,  # "e" falls back from the dictionary mid-chunk
}


def make_table(n: int = ROWS, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    valid = rng.random(n) > 0.2
    schema = pa.schema(
        [
            pa.field("a", pa.int64(), nullable=False),
            pa.field("b", pa.string()),
            pa.field("c", pa.float64()),
            pa.field("d", pa.int32()),
            pa.field("e", pa.string()),
        ]
    )
    return pa.table(
        [
            pa.array(rng.integers(0, 10_000, n), pa.int64()),
            pa.array([f"sym{i % 37}" if v else None for i, v in zip(range(n), valid, strict=True)]),
            pa.array(rng.normal(size=n), mask=~valid),
            pa.array(np.arange(n, dtype=np.int32)),
            pa.array([f"unique-{i}-{rng.integers(1 << 30)}" for i in range(n)]),
        ],
        schema=schema,
    )


TABLE = make_table()


@dataclass(frozen=True)
class Case:
    name: str
    algorithm: str = "AES_GCM_V1"
    plaintext_footer: bool = False
    double_wrapping: bool = True
    bits: int = 128
    page_version: str = "1.0"
    column_keys: dict[str, str] = field(default_factory=lambda: {"a": "kc", "b": "kc", "e": "kd"})
    footer_key_columns: tuple[str, ...] = ("c",)
    aad_prefix: bytes | None = None
    compression: str = "zstd"
    checksums: bool = True

    def encryption(self) -> tuple[FileEncryption, KeyWrapper]:
        config = EncryptionConfig(
            footer_key_id="kf",
            column_keys=self.column_keys,
            algorithm=self.algorithm,
            plaintext_footer=self.plaintext_footer,
            double_wrapping=self.double_wrapping,
            data_key_length_bits=self.bits,
            aad_prefix=self.aad_prefix,
        )
        wrapper = KeyWrapper(InMemoryKms(MASTER_KEYS), config)
        return FileEncryption(wrapper, footer_key_columns=self.footer_key_columns), wrapper


CASES = [
    Case(f"{alg}-{'pf' if pf else 'ef'}-{'double' if dw else 'single'}-v{v}", alg, pf, dw,
         page_version=v)
    for alg in ("AES_GCM_V1", "AES_GCM_CTR_V1")
    for pf in (False, True)
    for dw in (True, False)
    for v in ("1.0", "2.0")
]  # fmt: skip
CASES += [
    Case("bits192", bits=192),
    Case("bits256-ctr-pf", algorithm="AES_GCM_CTR_V1", plaintext_footer=True, bits=256),
    Case("bits256-v2", bits=256, page_version="2.0"),
    Case("uniform-ef", column_keys={}, footer_key_columns=("a", "b", "c", "d", "e")),
    Case("uniform-pf", column_keys={}, footer_key_columns=("a", "b", "c", "d", "e"),
         plaintext_footer=True),
    Case("column-keys-only", footer_key_columns=()),
    Case("stored-aad-prefix", aad_prefix=b"s3://bucket/file.parquet"),
    Case("stored-aad-prefix-pf-ctr", aad_prefix=b"tester", plaintext_footer=True,
         algorithm="AES_GCM_CTR_V1"),
    Case("snappy-no-checksums", compression="snappy", checksums=False),
    Case("uncompressed-v2", compression="none", page_version="2.0"),
]  # fmt: skip


def write_case(case: Case, path: Path, table: pa.Table = TABLE) -> KeyWrapper:
    encryption, wrapper = case.encryption()
    write_table(
        table,
        path,
        encryption=encryption,
        data_page_version=case.page_version,
        compression=case.compression,
        write_page_checksum=case.checksums,
        **WRITE_OPTIONS,
    )
    return wrapper


# --- pyarrow in a subprocess ---------------------------------------------------------------

READER = textwrap.dedent(
    """
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
    results = {}
    for job in manifest["jobs"]:
        try:
            expected = feather.read_table(job["expected"])
            props = None
            if job["keys"]:
                props = factory.file_decryption_properties(pe.KmsConnectionConfig())
            f = pq.ParquetFile(job["path"], decryption_properties=props,
                               page_checksum_verification=job["verify_checksums"])
            got = f.read(columns=job["columns"])
            if job["columns"] is not None:
                expected = expected.select(job["columns"])
            by_row_group = [f.read_row_group(i, columns=job["columns"])
                            for i in range(f.num_row_groups)]
            ok = got.equals(expected) and all(
                rg.equals(expected.slice(sum(len(r) for r in by_row_group[:i]), len(rg)))
                for i, rg in enumerate(by_row_group))
            results[job["name"]] = "ok" if ok else "different values"
        except Exception as exc:
            results[job["name"]] = "error: " + type(exc).__name__ + ": " + str(exc)
    json.dump(results, open(sys.argv[2], "w"))
    """
)


def run_pyarrow(tmp: Path, jobs: list[dict[str, Any]]) -> dict[str, str]:
    """Reads every job's file with pyarrow in one subprocess; returns name -> "ok" | error."""
    manifest = tmp / "manifest.json"
    out = tmp / "results.json"
    script = tmp / "reader.py"
    script.write_text(READER)
    manifest.write_text(
        json.dumps({"master_keys": {k: v.hex() for k, v in MASTER_KEYS.items()}, "jobs": jobs})
    )
    proc = subprocess.run(
        [sys.executable, str(script), str(manifest), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, f"pyarrow died ({proc.returncode}): {proc.stderr[-2000:]}"
    results: dict[str, str] = json.loads(out.read_text())
    return results


def _job(name: str, path: Path, expected: Path, **kw: Any) -> dict[str, Any]:
    return {
        "name": name,
        "path": str(path),
        "expected": str(expected),
        "keys": kw.get("keys", True),
        "columns": kw.get("columns"),
        "verify_checksums": kw.get("verify_checksums", False),
    }


@pytest.fixture(scope="module")
def pyarrow_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("pyarrow")
    expected = tmp / "expected.feather"
    feather.write_feather(TABLE, expected)
    jobs = []
    for case in CASES:
        path = tmp / f"{case.name}.parquet"
        write_case(case, path)
        jobs.append(_job(case.name, path, expected))
        if case.checksums:
            jobs.append(_job(case.name + "+crc", path, expected, verify_checksums=True))
        if case.plaintext_footer:
            # no keys: the plaintext columns stay readable in plaintext-footer mode
            plain = [c for c in TABLE.column_names if c not in case.column_keys]
            plain = [c for c in plain if c not in case.footer_key_columns]
            if plain:
                jobs.append(_job(case.name + "+nokeys", path, expected, keys=False, columns=plain))
            jobs.append(
                _job(case.name + "+nokeys-encrypted", path, expected, keys=False, columns=["a"])
            )
        else:
            jobs.append(_job(case.name + "+nokeys", path, expected, keys=False, columns=["d"]))
    return run_pyarrow(tmp, jobs)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_pyarrow_reads_our_encrypted_files(case: Case, pyarrow_results: dict[str, str]) -> None:
    assert pyarrow_results[case.name] == "ok"
    if case.checksums:
        assert pyarrow_results[case.name + "+crc"] == "ok"  # CRCs over the encrypted bytes


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_pyarrow_without_keys(case: Case, pyarrow_results: dict[str, str]) -> None:
    if case.plaintext_footer:
        if "d" not in case.footer_key_columns and "d" not in case.column_keys:
            assert pyarrow_results[case.name + "+nokeys"] == "ok"
        assert pyarrow_results[case.name + "+nokeys-encrypted"].startswith("error")
    else:
        assert pyarrow_results[case.name + "+nokeys"].startswith("error")


# --- module by module ----------------------------------------------------------------------

KEYS = {
    "kf": os.urandom(16),
    "kc1": os.urandom(16),
    "kc2": os.urandom(32),
}


@dataclass(frozen=True)
class OurVector(Vector):
    """A file we wrote with ExplicitKeys, for the walk of test_encrypted_vectors."""

    @property
    def footer_key(self) -> bytes:
        return KEYS["kf"]

    @property
    def column_keys(self) -> dict[bytes, bytes]:
        return {k.encode(): v for k, v in KEYS.items()}


WALK_CASES = [
    (alg, pf, prefix, v)
    for alg in Algorithm
    for pf in (False, True)
    for prefix in (None, "stored", "supplied")
    for v in ("1.0", "2.0")
]


def _explicit(
    alg: Algorithm, pf: bool, prefix: str | None, footer_key_columns: tuple[str, ...] = ("c",)
) -> FileEncryption:
    keys = ExplicitKeys(KEYS, "kf", {"a": "kc1", "b": "kc2", "e": "kc1"})
    return FileEncryption(
        keys,
        algorithm=alg.value,
        plaintext_footer=pf,
        aad_prefix=None if prefix is None else b"the-prefix",
        store_aad_prefix=prefix != "supplied",
        footer_key_columns=footer_key_columns,
    )


def _walk_ours(path: Path, alg: Algorithm, pf: bool, prefix: str | None) -> tuple[Walk, OurVector]:
    v = OurVector(
        path,
        algorithm=alg,
        plaintext_footer=pf,
        aad_prefix=b"the-prefix" if prefix == "supplied" else None,
    )
    return walk(v), v


@pytest.mark.parametrize(("alg", "pf", "prefix", "version"), WALK_CASES)
def test_every_module_decrypts_with_module_cipher(
    tmp_path: Path, alg: Algorithm, pf: bool, prefix: str | None, version: str
) -> None:
    path = tmp_path / "f.parquet"
    options = dict(WRITE_OPTIONS, bloom_filter_options={"a": True, "b": True, "c": True})
    write_table(
        TABLE, path, encryption=_explicit(alg, pf, prefix), data_page_version=version, **options
    )
    w, _ = _walk_ours(path, alg, pf, prefix)
    data = path.read_bytes()
    assert data[:4] == data[-4:] == (b"PAR1" if pf else b"PARE")
    rgs = w.metadata.row_groups or []
    assert [rg.ordinal for rg in rgs] == [0, 1, 2]
    assert len(w.file_aad) == (8 if prefix is None else len(b"the-prefix") + 8)
    # every page, page index and bloom filter module was decrypted and checked by the walk
    encrypted_chunks = 3 * 4  # a, b, c, e in 3 row groups
    m = w.modules
    assert m[ModuleType.DATA_PAGE] == m[ModuleType.DATA_PAGE_HEADER] >= (3 + 3 + 2) * 4
    assert m[ModuleType.DICTIONARY_PAGE] == m[ModuleType.DICTIONARY_PAGE_HEADER] >= 3
    assert m[ModuleType.OFFSET_INDEX] == encrypted_chunks
    assert m[ModuleType.COLUMN_INDEX] == encrypted_chunks
    assert m[ModuleType.BLOOM_FILTER_HEADER] == m[ModuleType.BLOOM_FILTER_BITSET] == 3 * 3
    assert m[ModuleType.COLUMN_META_DATA] == 3 * 3  # the walk decrypts column-key ones
    start = 0
    for rg_index, (rg, row) in enumerate(zip(rgs, w.chunks, strict=True)):
        n = rg.num_rows or 0
        by_name = {c.name: c for c in row}
        assert [c.encrypted for c in row] == [True, True, True, False, True]
        assert [c.column_key for c in row] == [True, True, False, False, True]
        # the decrypted bloom filter of "a" holds the row group's values
        a = TABLE.column("a").slice(start, n).to_numpy()
        bitset = by_name["a"].bloom_bitset
        assert bitset is not None
        assert (
            SplitBlockBloomFilter.from_bitset(bitset).check_hashes(hash_values(a, Type.INT64)).all()
        )
        assert by_name["d"].bloom_bitset is None
        # the data pages of "a" decode to the input (PLAIN fallback or dictionary, both checked)
        pages = [p for p in by_name["a"].pages if p[2].type != PageType.DICTIONARY_PAGE]
        assert len(pages) == -(-n // 400)  # page ordinals 0.. in the AADs
        _check_column_chunks(rg, rg_index, pf, w)
        start += n


def _check_column_chunks(rg: t.RowGroup, rg_index: int, pf: bool, w: Walk) -> None:
    """meta_data / encrypted_column_metadata / crypto_metadata as pyarrow and Spark expect."""
    for col, cc in enumerate(rg.columns or []):
        crypto = cc.crypto_metadata
        name = "abcde"[col]
        if name == "d":
            assert crypto is None and cc.encrypted_column_metadata is None
            assert cc.meta_data is not None and cc.meta_data.statistics is not None
            continue
        assert crypto is not None
        footer_key = name == "c"
        if footer_key:
            assert crypto.ENCRYPTION_WITH_FOOTER_KEY is not None
            key = KEYS["kf"]
        else:
            ck = crypto.ENCRYPTION_WITH_COLUMN_KEY
            assert ck is not None and ck.path_in_schema == [name]
            assert ck.key_metadata is not None
            key = KEYS[ck.key_metadata.decode()]
        if not pf and footer_key:
            # encrypted footer: footer-key columns keep meta_data inside it, as pyarrow
            assert cc.encrypted_column_metadata is None
            assert cc.meta_data is not None and cc.meta_data.statistics is not None
            continue
        assert cc.encrypted_column_metadata is not None
        cipher = ModuleCipher(key, w.file_aad, w.algorithm)
        plain, used = cipher.decrypt(
            ModuleType.COLUMN_META_DATA, cc.encrypted_column_metadata, rg_index, col
        )
        assert used == len(cc.encrypted_column_metadata)
        full, _ = deserialize(t.ColumnMetaData, plain)
        assert full.statistics is not None and full.encoding_stats
        if pf:
            stripped = cc.meta_data
            assert stripped is not None
            assert stripped.statistics is None and stripped.encoding_stats is None
            assert stripped.size_statistics is None
            assert stripped.data_page_offset == full.data_page_offset
            assert stripped.bloom_filter_offset == full.bloom_filter_offset
        else:
            assert cc.meta_data is None


def test_plaintext_footer_signature_and_footer_key_material(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    write_table(TABLE, path, encryption=_explicit(Algorithm.AES_GCM_V1, True, None))
    data = path.read_bytes()
    (length,) = struct.unpack("<I", data[-8:-4])
    start = len(data) - 8 - length
    md, end = deserialize(t.FileMetaData, data, start)
    assert end + 28 == len(data) - 8  # FileMetaData, then nonce(12) || tag(16)
    assert md.footer_signing_key_metadata == b"kf"
    algo = md.encryption_algorithm
    assert algo is not None and algo.AES_GCM_V1 is not None
    assert algo.AES_GCM_V1.supply_aad_prefix is False and algo.AES_GCM_V1.aad_prefix is None
    unique = algo.AES_GCM_V1.aad_file_unique
    assert unique is not None and len(unique) == 8
    tampered = bytearray(data[start:end])
    tampered[10] ^= 1
    with pytest.raises(EncryptionError, match="signature"):
        ModuleCipher(KEYS["kf"], unique).verify_footer(bytes(tampered), data[end : end + 28])


def test_supplied_aad_prefix_is_not_stored(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    write_table(TABLE, path, encryption=_explicit(Algorithm.AES_GCM_V1, False, "supplied"))
    data = path.read_bytes()
    assert b"the-prefix" not in data
    with pytest.raises(EncryptionError, match="supply"):
        walk(OurVector(path))


def test_each_file_gets_its_own_aad_file_unique(tmp_path: Path) -> None:
    encryption = _explicit(Algorithm.AES_GCM_V1, False, None)
    uniques = set()
    for i in range(3):
        path = tmp_path / f"{i}.parquet"
        write_table(TABLE.slice(0, 10), path, encryption=encryption)
        w, _ = _walk_ours(path, Algorithm.AES_GCM_V1, False, None)
        uniques.add(w.file_aad)
    assert len(uniques) == 3


def test_parquet_writer_batches_take_their_row_group_ordinals(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    with ParquetWriter(
        path, TABLE.schema, encryption=_explicit(Algorithm.AES_GCM_CTR_V1, False, None)
    ) as writer:
        for batch in TABLE.to_batches(max_chunksize=700):
            writer.write_batch(batch)
    w, _ = _walk_ours(path, Algorithm.AES_GCM_CTR_V1, False, None)
    assert [rg.ordinal for rg in w.metadata.row_groups or []] == list(range(5))


# --- process pool ---------------------------------------------------------------------------


def test_jobs_with_ciphers_run_in_worker_processes(tmp_path: Path) -> None:
    schema = arrow_to_parquet(TABLE.schema)
    options = make_write_options(TABLE.column_names, **WRITE_OPTIONS)
    encryptor = _explicit(Algorithm.AES_GCM_V1, True, "stored")._open_file(TABLE.column_names)
    writer = FileWriter(schema, options, encryptor=encryptor)
    parts = [writer.start()]
    with ProcessPoolExecutor(2) as pool:
        for ordinal, start in enumerate(range(0, ROWS, 1200)):
            piece = TABLE.slice(start, 1200)
            jobs = row_group_jobs(piece, schema, options, encryptor, ordinal)
            shown = repr(jobs[0].crypto)
            assert "hidden" in shown and repr(KEYS["kc1"]) not in shown
            assert KEYS["kc1"].hex() not in shown
            chunks = list(pool.map(run_job, jobs))
            parts.append(writer.add_row_group(chunks, piece.num_rows))
    parts.append(writer.footer())
    path = tmp_path / "pooled.parquet"
    path.write_bytes(b"".join(parts))
    w = walk(OurVector(path, plaintext_footer=True))
    assert [rg.ordinal for rg in w.metadata.row_groups or []] == [0, 1, 2]
    assert w.file_aad == b"the-prefix" + encryptor.aad_file_unique


# --- keys never leak --------------------------------------------------------------------------


def _forms(key: bytes) -> list[bytes]:
    return [key, key.hex().encode(), base64.b64encode(key), repr(key).encode()]


@pytest.mark.parametrize("pf", [False, True])
def test_data_keys_are_not_in_the_file(tmp_path: Path, pf: bool) -> None:
    case = Case("leak", plaintext_footer=pf, double_wrapping=False)
    path = tmp_path / "f.parquet"
    wrapper = write_case(case, path)
    data = path.read_bytes()
    deks = [wrapper.footer_key()[0]]
    for column in case.column_keys:
        found = wrapper.column_key(column)
        assert found is not None
        deks.append(found[0])
    assert len(set(deks)) == 4
    for key in [*deks, *MASTER_KEYS.values()]:
        for form in _forms(key):
            assert form not in data
    explicit = tmp_path / "explicit.parquet"
    write_table(TABLE, explicit, encryption=_explicit(Algorithm.AES_GCM_V1, pf, None))
    data = explicit.read_bytes()
    for key in KEYS.values():
        for form in _forms(key):
            assert form not in data


def _texts(*objects: object) -> str:
    return "\n".join(f"{o!s}\n{o!r}" for o in objects)


def test_errors_and_reprs_hold_no_key_bytes(tmp_path: Path) -> None:
    encryption = _explicit(Algorithm.AES_GCM_V1, False, "stored")
    encryptor = encryption._open_file(TABLE.column_names)
    crypto = encryptor.chunk_crypto(0, 0)
    texts = [_texts(encryption, encryptor, crypto, encryptor.column_cipher(0))]
    errors: list[BaseException] = []
    with pytest.raises(ConfigError, match="'zz'") as e1:
        write_table(
            TABLE,
            tmp_path / "x.parquet",
            encryption=FileEncryption(ExplicitKeys(KEYS, "kf", {"zz": "kc1"})),
        )
    errors.append(e1.value)
    with pytest.raises(ConfigError, match="footer_key_columns") as e2:
        FileEncryption(ExplicitKeys(KEYS, "kf", {"a": "kc1"}), footer_key_columns=["a"])
    errors.append(e2.value)
    with pytest.raises(LimitError, match="32767") as e3:
        encryptor.chunk_crypto(32768, 0)
    errors.append(e3.value)
    with pytest.raises(ConfigError, match="contradicts") as e4:
        wrapper = KeyWrapper(InMemoryKms(MASTER_KEYS), EncryptionConfig(footer_key_id="kf"))
        FileEncryption(wrapper, plaintext_footer=True)
    errors.append(e4.value)
    texts += [_texts(e) for e in errors]
    text = "\n".join(texts)
    for key in KEYS.values():
        for form in _forms(key):
            assert form.decode("latin-1") not in text
    # the errors survive the process pool
    for error in errors:
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is type(error) and str(again) == str(error)


# --- limits and config ----------------------------------------------------------------------


def test_row_group_ordinal_limit(tmp_path: Path) -> None:
    sink = io.BytesIO()
    encryption = _explicit(Algorithm.AES_GCM_V1, False, None)
    writer = ParquetWriter(sink, TABLE.schema, encryption=encryption)
    writer.write_table(TABLE.slice(0, 10))
    file_writer = writer._writer
    # pretend the file already holds 32768 row groups (ordinals 0..32767)
    file_writer.row_groups = file_writer.row_groups * 32768
    size = file_writer.offset
    with pytest.raises(LimitError, match="row group ordinal 32768"):
        writer.write_table(TABLE.slice(0, 10))
    assert file_writer.offset == size == len(sink.getvalue())  # nothing of it was written
    with pytest.raises(LimitError, match="32768"):
        file_writer.add_row_group([], 0)
    # ordinal 32767, the last one, is fine
    encryptor = _explicit(Algorithm.AES_GCM_V1, False, None)._open_file(TABLE.column_names)
    assert encryptor.chunk_crypto(32767, 0) is not None
    # plaintext files have no such limit
    plain = FileWriter(arrow_to_parquet(TABLE.schema), make_write_options(TABLE.column_names))
    plain.row_groups = [t.RowGroup()] * 40000
    with pytest.raises(ConfigError, match="column chunks"):
        plain.add_row_group([], 0)


def test_unknown_columns_and_bad_settings_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="zz"):
        FileEncryption(ExplicitKeys(KEYS, "kf", {}), footer_key_columns=["zz"])._open_file(["a"])
    with pytest.raises(ConfigError, match="algorithm"):
        FileEncryption(ExplicitKeys(KEYS, "kf", {}), algorithm="AES_CBC")
    with pytest.raises(ConfigError, match="store_aad_prefix"):
        FileEncryption(ExplicitKeys(KEYS, "kf", {}), store_aad_prefix=False)
    with pytest.raises(ConfigError, match="FileEncryption"):
        write_table(TABLE, tmp_path / "x.parquet", encryption="yes")  # type: ignore[arg-type]


def test_key_wrapper_config_drives_the_file(tmp_path: Path) -> None:
    case = Case("cfg", algorithm="AES_GCM_CTR_V1", plaintext_footer=True, aad_prefix=b"p")
    encryption, _ = case.encryption()
    assert encryption.algorithm == "AES_GCM_CTR_V1"  # a name, as FileEncryption(algorithm=)
    assert type(encryption.algorithm) is str
    explicit = FileEncryption(ExplicitKeys(KEYS, "kf", {}), algorithm="AES_GCM_CTR_V1")
    assert explicit.algorithm == "AES_GCM_CTR_V1"
    assert "algorithm=AES_GCM_CTR_V1" in repr(explicit)
    assert encryption.plaintext_footer and encryption.aad_prefix == b"p"
    encryptor = encryption._open_file(TABLE.column_names)
    assert isinstance(encryptor, FileEncryptor)
    assert encryptor.magic == b"PAR1"
    algo = encryptor.encryption_algorithm().AES_GCM_CTR_V1
    assert algo is not None and algo.aad_prefix == b"p" and algo.supply_aad_prefix is False
    # one data key per column across row groups and files of one KeyWrapper
    again = encryption._open_file(TABLE.column_names)
    assert again.aad_file_unique != encryptor.aad_file_unique
    a1, a2 = encryptor.column_cipher(0), again.column_cipher(0)
    assert a1 is not None and a2 is not None
    assert a1.__reduce__()[1][0] == a2.__reduce__()[1][0]


def test_unencrypted_output_is_unchanged(tmp_path: Path) -> None:
    write_table(TABLE, tmp_path / "a.parquet", **WRITE_OPTIONS)
    write_table(TABLE, tmp_path / "b.parquet", encryption=None, **WRITE_OPTIONS)
    data = (tmp_path / "a.parquet").read_bytes()
    assert data == (tmp_path / "b.parquet").read_bytes()
    assert data[:4] == b"PAR1"
    md, _ = deserialize(t.FileMetaData, data, len(data) - 8 - struct.unpack("<I", data[-8:-4])[0])
    assert md.encryption_algorithm is None
    assert all(cc.crypto_metadata is None for rg in md.row_groups or [] for cc in rg.columns or [])
    assert serialize(md)  # still encodes


# --- our own reader (streamwrite.crypto.decryption) ---------------------------------------------

ROUND_TRIP_CASES = [c for c in CASES if c.name.endswith("v1.0")] + CASES[-7:]


@pytest.mark.parametrize("case", ROUND_TRIP_CASES, ids=lambda c: c.name)
def test_streamwrite_reader_round_trip(tmp_path: Path, case: Case) -> None:
    decryption = pytest.importorskip("streamwrite.crypto.decryption")
    from streamwrite import read_table

    path = tmp_path / "f.parquet"
    write_case(case, path)
    config = decryption.DecryptionConfig.from_kms(InMemoryKms(MASTER_KEYS))
    assert read_table(path, decryption=config).equals(TABLE)


@pytest.mark.parametrize("prefix", [None, "stored", "supplied"])
def test_streamwrite_reader_round_trip_explicit_keys(tmp_path: Path, prefix: str | None) -> None:
    decryption = pytest.importorskip("streamwrite.crypto.decryption")
    from streamwrite import read_table

    path = tmp_path / "f.parquet"
    options = dict(WRITE_OPTIONS, bloom_filter_options={"a": True})
    write_table(
        TABLE, path, encryption=_explicit(Algorithm.AES_GCM_CTR_V1, True, prefix), **options
    )
    keys = ExplicitKeys(KEYS, "kf", {})
    supplied = b"the-prefix" if prefix == "supplied" else None
    config = decryption.DecryptionConfig(keys, aad_prefix=supplied)
    assert read_table(path, decryption=config).equals(TABLE)
