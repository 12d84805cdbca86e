"""The reader decrypts: parquet-testing vectors, pyarrow-written files, and every failure mode.

Expected values of the parquet-testing vectors come from the writers' generators (see
``tests/reader/test_encrypted_vectors.py``): ``double_field[i] = i * 1.1111111``, ``float_field[i] =
float32(i) * 1.1f``, ``boolean_field[i] = i % 2 == 0``, ``int32_field[i] = i``,
``ba_field[i] = "parquet%03d" % i`` for even ``i`` (null otherwise), ``flba_field[i] = 10 * [i]``;
the parquet-java Bloom filter vector writes ``i + 0.5`` and ``i + 0.25``. pyarrow only decrypts
through a KMS and these files carry plain key ids, so pyarrow is the reference only for files it
wrote itself (through a ``KmsClient`` delegating to our ``InMemoryKms``).
"""

from __future__ import annotations

import datetime
import json
import re
import struct
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
import pytest

import streamwrite
from streamwrite.cli import main
from streamwrite.crypto import ExplicitKeys, InMemoryKms, load_external_key_material
from streamwrite.crypto.decryption import DecryptionConfig, FileDecryptor
from streamwrite.errors import EncryptionError, StreamwriteError, UnsupportedError
from streamwrite.format import structs as t
from streamwrite.format.aad import ModuleType
from streamwrite.format.thrift.codec import deserialize, serialize
from streamwrite.reader.file import ParquetFile
from streamwrite.reader.verify import verify_file
from tests._vectors import PARQUET_TESTING
from tests.crypto.test_keys import _PyarrowKms

DATA = PARQUET_TESTING / "data"
FOOTER_128 = b"0123456789012345"
COLUMNS_128 = {"double_field": b"1234567890123450", "float_field": b"1234567890123451"}
FOOTER_256 = b"01234567890123456789012345678901"
_NAMES_256 = ["double", "float", "boolean", "int32", "ba", "flba", "int64", "int96"]
COLUMNS_256 = {
    ("int64_field.list.element" if n == "int64" else f"{n}_field"): (
        b"1234567890123456789012345678901" + str(k + 2).encode()
    )
    for k, n in enumerate(_NAMES_256)
}
PREFIX = b"tester"
ALL_KEYS = [FOOTER_128, FOOTER_256, *COLUMNS_128.values(), *COLUMNS_256.values()]

VECTORS = sorted(
    p.relative_to(DATA).as_posix()
    for p in [*DATA.glob("*.parquet.encrypted"), *DATA.glob("aes256/*.parquet.encrypted")]
)


def _config(
    name: str, *, footer_key: bytes | None = None, column_keys: dict[str, bytes] | None = None
) -> DecryptionConfig:
    """The KEYS.md keys of vector ``name`` (``footer_key``/``column_keys`` replace them)."""
    aes256 = name.startswith("aes256/")
    return DecryptionConfig.from_keys(
        footer_key=footer_key or (FOOTER_256 if aes256 else FOOTER_128),
        column_keys=column_keys
        if column_keys is not None
        else (COLUMNS_256 if aes256 else COLUMNS_128),
        aad_prefix=PREFIX if "disable_aad_storage" in name else None,
    )


def _flat(pf: ParquetFile) -> list[str]:
    return [spec.name for spec in pf._parquet_schema.columns]


def _texts(exc: BaseException) -> str:
    return f"{exc}\n{exc!r}"


def _no_key_in(text: str) -> None:
    for key in ALL_KEYS:
        assert key.decode() not in text and key.hex() not in text


def _check_generated(table: pa.Table, rows: int, bloom_vector: bool) -> None:
    i = np.arange(rows)
    doubles = table.column("double_field").to_numpy()
    floats = table.column("float_field").to_numpy()
    if bloom_vector:
        np.testing.assert_array_equal(doubles, i + 0.5)
        np.testing.assert_array_equal(floats, (i + 0.25).astype(np.float32))
        return
    np.testing.assert_allclose(doubles, i * 1.1111111, rtol=1e-12)
    np.testing.assert_array_equal(floats, i.astype(np.float32) * np.float32(1.1))
    assert table.column("boolean_field").to_pylist() == [n % 2 == 0 for n in range(rows)]
    assert pc.cast(table.column("int32_field"), pa.int32()).to_pylist() == list(range(rows))
    assert table.column("ba_field").to_pylist() == [
        f"parquet{n:03d}".encode() if n % 2 == 0 else None for n in range(rows)
    ]
    assert table.column("flba_field").to_pylist() == [bytes([n]) * 10 for n in range(rows)]


# --- parquet-testing vectors -----------------------------------------------------------------


@pytest.mark.parametrize("name", VECTORS)
def test_vector_reads_the_generated_values(name: str) -> None:
    config = _config(name)
    if name.startswith("external_key_material"):
        masters = {"kf": FOOTER_128, "kc1": COLUMNS_128["double_field"]}
        kms = InMemoryKms({**masters, "kc2": COLUMNS_128["float_field"]})
        with pytest.raises(UnsupportedError, match="outside the file"):
            ParquetFile(DATA / name, decryption=DecryptionConfig.from_kms(kms))
        store = load_external_key_material(DATA / f"_KEY_MATERIAL_FOR_{name}.json")
        config = DecryptionConfig.from_kms(kms, external_key_material=store)
        table = streamwrite.read_table(DATA / name, decryption=config)  # parquet-java, 100 rows
        assert table.column("integers").to_pylist() == list(range(100))
        assert table.column("strings").to_pylist() == [f"{chr(97 + i % 10)}{i}" for i in range(100)]
        assert verify_file(DATA / name, decryption=config).problems == []
        return
    with ParquetFile(DATA / name, decryption=config) as pf:
        assert pf.encryption_algorithm == ("AES_GCM_CTR_V1" if "_ctr" in name else "AES_GCM_V1")
        bloom_vector = "bloom" in name
        table = pf.read()
        rows = 2000 if bloom_vector else 50
        assert table.num_rows == pf.metadata.num_rows == rows
        _check_generated(table, rows, bloom_vector)
        if not bloom_vector:
            # a legacy repeated int64 (a required list of required values), encrypted with
            # its own key: two values per row, i * 10**12 over all values (parquet-cpp's
            # generator, test_encryption_util.cc)
            column = table.column("int64_field")
            assert column.type == pa.list_(pa.field("int64_field", pa.int64(), False))
            assert column.to_pylist() == [
                [2 * n * 10**12, (2 * n + 1) * 10**12] for n in range(rows)
            ]
    report = verify_file(DATA / name, decryption=config)
    assert report.num_pages > 0
    assert report.problems == []


def test_explicit_keys_by_key_id_label() -> None:
    keys = ExplicitKeys(
        {"kf": FOOTER_128, "kc1": COLUMNS_128["double_field"], "kc2": COLUMNS_128["float_field"]},
        "kf",
        {},
    )
    for name in ["encrypt_columns_and_footer.parquet.encrypted",
                 "encrypt_columns_plaintext_footer.parquet.encrypted"]:  # fmt: skip
        with ParquetFile(DATA / name, decryption=DecryptionConfig(keys)) as pf:
            _check_generated(pf.read(_flat(pf)), 50, False)
    # from_keys falls back to the key metadata as a label
    labels = DecryptionConfig.from_keys(
        footer_key=FOOTER_128,
        column_keys={"kc1": COLUMNS_128["double_field"], "kc2": COLUMNS_128["float_field"]},
    )
    table = streamwrite.read_table(
        DATA / "encrypt_columns_and_footer.parquet.encrypted",
        columns=["double_field", "float_field", "int32_field"],
        decryption=labels,
    )
    assert table.num_rows == 50


def test_encrypted_footer_without_keys_needs_keys() -> None:
    with pytest.raises(EncryptionError, match="needs decryption keys"):
        streamwrite.read_table(DATA / "encrypt_columns_and_footer.parquet.encrypted")


def test_plaintext_footer_without_keys_reads_plaintext_columns_only() -> None:
    path = DATA / "encrypt_columns_plaintext_footer.parquet.encrypted"
    table = streamwrite.read_table(path, columns=["int32_field", "ba_field"])
    assert pc.cast(table.column("int32_field"), pa.int32()).to_pylist() == list(range(50))
    for column in ["double_field", "float_field"]:
        with pytest.raises(EncryptionError, match=f"'{column}'.*needs decryption keys"):
            streamwrite.read_table(path, columns=[column])
    # keys for the columns but no footer key: the signature is not checked, columns decrypt
    config = DecryptionConfig.from_keys(column_keys=COLUMNS_128)
    table = streamwrite.read_table(path, columns=["double_field"], decryption=config)
    assert table.num_rows == 50


@pytest.mark.parametrize("name", [v for v in VECTORS if "disable_aad_storage" in v])
def test_missing_or_wrong_aad_prefix(name: str) -> None:
    base = _config(name)
    with pytest.raises(EncryptionError, match="supply"):
        ParquetFile(DATA / name, decryption=replace(base, aad_prefix=None))
    with pytest.raises(EncryptionError, match="FOOTER"):
        ParquetFile(DATA / name, decryption=replace(base, aad_prefix=b"wrong"))


def test_stored_prefix_must_match_a_supplied_one() -> None:
    name = "encrypt_columns_and_footer_aad.parquet.encrypted"
    with pytest.raises(EncryptionError, match="differs"):
        ParquetFile(DATA / name, decryption=replace(_config(name), aad_prefix=b"other"))


@pytest.mark.parametrize(
    "name",
    [
        "encrypt_columns_and_footer.parquet.encrypted",
        "encrypt_columns_plaintext_footer.parquet.encrypted",
        "aes256/encrypt_columns_and_footer_ctr.parquet.encrypted",
    ],
)
def test_wrong_footer_key(name: str) -> None:
    bad = b"\x07" * (32 if name.startswith("aes256/") else 16)
    with pytest.raises(EncryptionError, match=r"FOOTER|signature") as info:
        ParquetFile(DATA / name, decryption=_config(name, footer_key=bad))
    _no_key_in(_texts(info.value))


@pytest.mark.parametrize(
    "name",
    [
        "encrypt_columns_and_footer.parquet.encrypted",
        "encrypt_columns_plaintext_footer.parquet.encrypted",
        "aes256/encrypt_columns_and_footer.parquet.encrypted",
    ],
)
def test_wrong_column_key(name: str) -> None:
    keys = dict(COLUMNS_256 if name.startswith("aes256/") else COLUMNS_128)
    keys["double_field"] = bytes(reversed(keys["double_field"]))
    with ParquetFile(DATA / name, decryption=_config(name, column_keys=keys)) as pf:
        pf.read(["float_field"])  # other columns are unaffected
        with pytest.raises(EncryptionError, match=r"'double_field'.*COLUMN_META_DATA") as info:
            pf.read(["double_field"])
    _no_key_in(_texts(info.value))
    del keys["double_field"]
    config = _config(name, column_keys=keys)
    with pytest.raises(EncryptionError, match="No key was given for column 'double_field'"):
        streamwrite.read_table(DATA / name, columns=["double_field"], decryption=config)


# --- tampering and moved modules -------------------------------------------------------------


def _module_ranges(path: Path, config: DecryptionConfig) -> dict[str, list[tuple[int, int]]]:
    """Byte ranges of the encrypted modules of a file, by kind."""
    ranges: dict[str, list[tuple[int, int]]] = {"pages": [], "index": [], "bloom": []}
    with ParquetFile(path, decryption=config) as pf:
        for i in range(pf.num_row_groups):
            for spec in pf._parquet_schema.columns:
                if pf._chunk_decryptor(i, spec.index) is None:
                    continue
                start, size = pf._chunk_range(i, spec)
                ranges["pages"].append((start, start + size))
                chunk = (pf.thrift_metadata.row_groups or [])[i].columns or []
                cc = chunk[spec.index]
                for off, length in [
                    (cc.offset_index_offset, cc.offset_index_length),
                    (cc.column_index_offset, cc.column_index_length),
                ]:
                    if off is not None and length:
                        ranges["index"].append((off, off + length))
                meta = pf._column_metadata(i, spec.index)
                if meta.bloom_filter_offset is not None and meta.bloom_filter_length:
                    off = meta.bloom_filter_offset
                    ranges["bloom"].append((off, off + meta.bloom_filter_length))
    return ranges


def _sample(ranges: list[tuple[int, int]], count: int) -> list[int]:
    offsets = sorted({o for a, b in ranges for o in range(a, b)})
    step = max(1, len(offsets) // count)
    return offsets[::step]


def _flip(data: bytes, offset: int) -> bytes:
    out = bytearray(data)
    out[offset] ^= 0x01
    return bytes(out)


@pytest.mark.parametrize(
    "name",
    [
        "encrypt_columns_and_footer.parquet.encrypted",
        "encrypt_columns_and_footer_bloom_filter.parquet.encrypted",
        "aes256/uniform_encryption.parquet.encrypted",
    ],
)
def test_a_flipped_byte_in_a_module_is_an_encryption_error(name: str) -> None:
    path = DATA / name
    config = _config(name)
    data = path.read_bytes()
    ranges = _module_ranges(path, config)
    with ParquetFile(data, decryption=config) as pf:
        columns = _flat(pf)
        expected = pf.read(columns)
        footer_start = pf.footer_offset
    # pages and headers: reading fails with EncryptionError naming the module
    for offset in _sample(ranges["pages"], 60):
        with pytest.raises(EncryptionError, match=r"(PAGE|HEADER) module") as info:
            streamwrite.read_table(_flip(data, offset), columns=columns, decryption=config)
        assert "row group" in str(info.value)
    # the encrypted footer module (after FileCryptoMetaData): FOOTER fails
    (length,) = struct.unpack_from("<I", data, len(data) - 8)
    _, end = deserialize(t.FileCryptoMetaData, data, footer_start)
    for offset in range(end, len(data) - 8, max(1, (len(data) - 8 - end) // 40)):
        with pytest.raises(EncryptionError, match="FOOTER"):
            ParquetFile(_flip(data, offset), decryption=config)
    assert footer_start + length == len(data) - 8
    # indexes and bloom filters: verify names the module
    assert ranges["index"]
    assert bool(ranges["bloom"]) == ("bloom" in name)
    for kind, pattern in [("index", r"(OFFSET|COLUMN)_INDEX module"), ("bloom", "BLOOM_FILTER_")]:
        for offset in _sample(ranges[kind], 25):
            report = verify_file(_flip(data, offset), decryption=config)
            assert any(re.search(pattern, p) for p in report.problems), (offset, report.problems)
            assert all("row group 0" in p or "nested" in p for p in report.problems)
    # nothing changed: the untouched file still reads the same
    assert streamwrite.read_table(data, columns=columns, decryption=config).equals(expected)


def test_flipped_encrypted_column_metadata_in_a_plaintext_footer() -> None:
    """Without a footer key the signature is not checked; the COLUMN_META_DATA module still
    authenticates the column's metadata."""
    path = DATA / "encrypt_columns_plaintext_footer.parquet.encrypted"
    data = path.read_bytes()
    with ParquetFile(data) as pf:
        rg = (pf.thrift_metadata.row_groups or [])[0]
        blob = (rg.columns or [])[5].encrypted_column_metadata  # double_field
    assert blob is not None
    at = data.index(blob)
    config = DecryptionConfig.from_keys(column_keys=COLUMNS_128)
    for offset in range(at + 4, at + len(blob), 7):
        with pytest.raises(EncryptionError, match="COLUMN_META_DATA module of row group 0"):
            streamwrite.read_table(_flip(data, offset), columns=["double_field"], decryption=config)
    with pytest.raises(EncryptionError, match="signature"):  # with the footer key: signature
        ParquetFile(_flip(data, at + 10), decryption=_config(path.name))


def test_swapped_pages_are_refused() -> None:
    name = "encrypt_columns_and_footer_bloom_filter.parquet.encrypted"
    data = (DATA / name).read_bytes()
    config = _config(name)
    with ParquetFile(data, decryption=config) as pf:
        spec = next(s for s in pf._parquet_schema.columns if s.name == "double_field")
        pages = [p for p in pf._decode_column_chunk(0, spec).pages if p.page_type != 2]
    first, second = pages[0], pages[1]
    assert first.offset + first.size == second.offset
    swapped = (
        data[: first.offset]
        + data[second.offset : second.offset + second.size]
        + data[first.offset : first.offset + first.size]
        + data[second.offset + second.size :]
    )
    with pytest.raises(EncryptionError, match="DATA_PAGE_HEADER module of row group 0, column 0"):
        streamwrite.read_table(swapped, columns=["double_field"], decryption=config)


# --- pyarrow-written files -------------------------------------------------------------------

MASTER_KEYS = {"kf": b"FOOTERMASTERKEY!", "kc": b"COLUMNMASTERKEY!COLUMNMASTERKEY!"}


def _table(n: int = 600) -> pa.Table:
    return pa.table(
        {
            "a": pa.array([None if i % 7 == 0 else i for i in range(n)], pa.int64()),
            "b": pa.array([f"s{i % 50}" for i in range(n)]),
            "c": pa.array([i * 0.25 for i in range(n)], pa.float64()),
            "d": pa.array(range(n), pa.int64()),
        }
    )


def _write_pyarrow(
    path: Path,
    *,
    double: bool,
    plaintext_footer: bool,
    algorithm: str = "AES_GCM_V1",
    page_index: bool = False,
    uniform: bool = False,
    bits: int = 128,
    row_group_size: int | None = None,
) -> pa.Table:
    kms = InMemoryKms(MASTER_KEYS)
    factory = pe.CryptoFactory(lambda _cfg: _PyarrowKms(kms, []))
    cfg = pe.EncryptionConfiguration(
        footer_key="kf",
        column_keys={} if uniform else {"kc": ["a", "b"]},
        uniform_encryption=uniform,
        encryption_algorithm=algorithm,
        double_wrapping=double,
        plaintext_footer=plaintext_footer,
        data_key_length_bits=bits,
        cache_lifetime=datetime.timedelta(minutes=10),
    )
    props = factory.file_encryption_properties(pe.KmsConnectionConfig(), cfg)
    table = _table()
    pq.write_table(
        table,
        path,
        encryption_properties=props,
        write_page_index=page_index,
        data_page_size=512,
        row_group_size=row_group_size,
    )
    return table


PYARROW_MODES = [
    pytest.param(
        d,
        p,
        a,
        ix,
        id=f"{'double' if d else 'single'}-{'pfooter' if p else 'efooter'}-{a}-"
        f"{'index' if ix else 'noindex'}",
    )
    for d in (False, True)
    for p in (False, True)
    for a in ("AES_GCM_V1", "AES_GCM_CTR_V1")
    for ix in (False, True)
]


@pytest.mark.parametrize(("double", "plaintext_footer", "algorithm", "page_index"), PYARROW_MODES)
def test_pyarrow_written_files_read_back(
    tmp_path: Path, double: bool, plaintext_footer: bool, algorithm: str, page_index: bool
) -> None:
    path = tmp_path / "pa.parquet"
    bits = (192 if algorithm == "AES_GCM_CTR_V1" else 256) if page_index else 128
    table = _write_pyarrow(
        path,
        double=double,
        plaintext_footer=plaintext_footer,
        algorithm=algorithm,
        page_index=page_index,
        bits=bits,
    )
    config = DecryptionConfig.from_kms(InMemoryKms(MASTER_KEYS))
    assert streamwrite.read_table(path, decryption=config).equals(table)
    report = verify_file(path, decryption=config)
    assert report.ok, report.problems
    if plaintext_footer:  # unlisted columns stay plaintext and read without keys
        assert streamwrite.read_table(path, columns=["c", "d"]).equals(table.select(["c", "d"]))
        with pytest.raises(EncryptionError, match="'a'"):
            streamwrite.read_table(path, columns=["a"])
    else:
        with pytest.raises(EncryptionError, match="needs decryption keys"):
            streamwrite.read_table(path)
    wrong = DecryptionConfig.from_kms(InMemoryKms({"kf": MASTER_KEYS["kf"], "kc": b"x" * 16}))
    with ParquetFile(path, decryption=wrong) as pf:
        pf.read(["c", "d"])
        with pytest.raises(EncryptionError, match="'a'") as info:
            pf.read(["a"])
    _no_key_in(_texts(info.value))
    for key in MASTER_KEYS.values():
        assert key.decode() not in _texts(info.value)


def _reencrypt_footer(data: bytes, config: DecryptionConfig, edit: object) -> bytes:
    """Decrypt a PARE footer, let ``edit`` change the FileMetaData, encrypt it again."""
    (length,) = struct.unpack_from("<I", data, len(data) - 8)
    start = len(data) - 8 - length
    fcm, end = deserialize(t.FileCryptoMetaData, data, start)
    assert fcm.encryption_algorithm is not None
    decryptor = FileDecryptor(config, fcm.encryption_algorithm, fcm.key_metadata)
    metadata = decryptor.decrypt_footer(memoryview(data)[end : len(data) - 8])
    edit(metadata)  # type: ignore[operator]
    module = decryptor.footer_cipher().encrypt(ModuleType.FOOTER, serialize(metadata))
    tail = data[start:end] + module
    return data[:start] + tail + struct.pack("<I", len(tail)) + b"PARE"


@pytest.mark.parametrize("move", ["row_group", "column"])
def test_chunk_moved_to_another_row_group_or_column(tmp_path: Path, move: str) -> None:
    path = tmp_path / "uniform.parquet"
    table = _write_pyarrow(
        path, double=False, plaintext_footer=False, uniform=True, row_group_size=300
    )
    config = DecryptionConfig.from_kms(InMemoryKms(MASTER_KEYS))
    data = path.read_bytes()
    assert streamwrite.read_table(data, decryption=config).equals(table)

    def edit(metadata: t.FileMetaData) -> None:
        rgs = metadata.row_groups or []
        assert len(rgs) == 2
        if move == "row_group":  # row group 1, column 'a' -> the bytes of row group 0's 'a'
            (rgs[1].columns or [])[0].meta_data = (rgs[0].columns or [])[0].meta_data
        else:  # column 'd' -> the bytes of column 'a' (both INT64)
            a = (rgs[0].columns or [])[0].meta_data
            assert a is not None
            d = (rgs[0].columns or [])[3]
            d.meta_data = replace(a, path_in_schema=["d"])

    moved = _reencrypt_footer(data, config, edit)
    target = "a" if move == "row_group" else "d"
    pattern = "row group 1, column 0" if move == "row_group" else "row group 0, column 3"
    with pytest.raises(EncryptionError, match=f"PAGE_HEADER module of {pattern}"):
        streamwrite.read_table(moved, columns=[target], decryption=config)


# --- CLI -------------------------------------------------------------------------------------


def _key_args(name: str) -> list[str]:
    args = ["--footer-key", FOOTER_128.hex()]
    for column, key in COLUMNS_128.items():
        args += ["--column-key", f"{column}={key.hex()}"]
    return args


def test_cli_verify_with_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "encrypt_columns_and_footer_bloom_filter.parquet.encrypted"
    path = DATA / name
    assert main(["verify", str(path), *_key_args(name)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK")
    _no_key_in(out)

    assert main(["verify", str(path)]) == 1
    assert "needs decryption keys" in capsys.readouterr().out

    data = path.read_bytes()
    ranges = _module_ranges(path, _config(name))
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(_flip(data, ranges["pages"][0][0] + 20))
    assert main(["verify", str(bad), *_key_args(name)]) == 1
    out = capsys.readouterr().out
    assert "PAGE_HEADER module of row group 0" in out and "FAILED" in out
    _no_key_in(out)

    keys = {
        "footer": FOOTER_128.hex(),
        "columns": {c: k.hex() for c, k in COLUMNS_128.items()},
    }
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(json.dumps(keys))
    assert main(["verify", str(path), "--keys-file", str(keys_file)]) == 0
    capsys.readouterr()
    monkeypatch.setenv("STREAMWRITE_KEYS", json.dumps({**keys, "aad_prefix": "tester"}))
    aad = DATA / "encrypt_columns_and_footer_disable_aad_storage.parquet.encrypted"
    assert main(["inspect", str(aad)]) == 0
    out = capsys.readouterr().out
    assert "encryption: AES_GCM_V1" in out and "double_field" in out
    _no_key_in(out)
    assert main(["inspect", str(aad), "--json", "--aad-prefix", "nope"]) == 2
    assert "FOOTER" in capsys.readouterr().err


def test_cli_rejects_bad_keys_without_echoing_them(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "encrypt_columns_and_footer.parquet.encrypted"
    assert main(["verify", str(path), "--footer-key", "zz" + FOOTER_128.hex()]) == 2
    err = capsys.readouterr().err
    assert "not valid hex" in err
    _no_key_in(err)


def test_repr_hides_keys() -> None:
    config = _config("x", footer_key=FOOTER_128)
    _no_key_in(repr(config))
    with ParquetFile(DATA / "encrypt_columns_and_footer.parquet.encrypted", decryption=config):
        pass
    with pytest.raises(StreamwriteError):
        DecryptionConfig.from_keys(footer_key=b"short")
