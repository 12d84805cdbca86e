"""Key tools: PKMT1 key material, KMS wrapping, KEK caches, explicit keys, pyarrow interop."""

from __future__ import annotations

import base64
import datetime
import json
import os
import pickle
import struct
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwrite.crypto import (
    EncryptionConfig,
    ExplicitKeys,
    InMemoryKms,
    KekCache,
    KeyUnwrapper,
    KeyWrapper,
    KmsClient,
    parse_key_material,
)
from streamwrite.errors import ConfigError, EncryptionError, UnsupportedError
from streamwrite.format import structs as s
from streamwrite.format.thrift import codec as thrift

# Recognizable key bytes: none of these may ever show up in a message or repr.
FOOTER_MK = b"FOOTERMASTERKEY!"
COLUMN_MK = b"COLUMNMASTERKEY!COLUMNMASTERKEY!"
MASTER_KEYS = {"kf": FOOTER_MK, "kc": COLUMN_MK}

FOOTER_FIELDS = [
    "keyMaterialType",
    "internalStorage",
    "isFooterKey",
    "kmsInstanceID",
    "kmsInstanceURL",
    "masterKeyID",
    "wrappedDEK",
    "doubleWrapping",
]
DOUBLE_FIELDS = ["keyEncryptionKeyID", "wrappedKEK"]
COLUMN_FIELDS = [f for f in FOOTER_FIELDS if not f.startswith("kms")]


def _secret_forms(key: bytes) -> list[str]:
    """Ways a key could leak into text."""
    return [
        key.hex(),
        repr(key),
        base64.b64encode(key).decode(),
        key.decode("latin-1"),
    ]


def _assert_no_secret(text: str, *keys: bytes) -> None:
    for key in keys:
        for form in _secret_forms(key):
            assert form not in text


def _exc_texts(exc: BaseException) -> str:
    parts = []
    e: BaseException | None = exc
    while e is not None:
        parts += [str(e), repr(e)]
        e = e.__cause__ or e.__context__
    return "\n".join(parts)


# --- reference implementation written from parquet-java's KeyToolkit / InMemoryKMS ------------


def ref_encrypt_key_locally(key: bytes, master: bytes, aad: bytes) -> str:
    nonce = os.urandom(12)
    return base64.b64encode(nonce + AESGCM(master).encrypt(nonce, key, aad)).decode()


def ref_decrypt_key_locally(text: str, master: bytes, aad: bytes) -> bytes:
    raw = base64.b64decode(text)
    return AESGCM(master).decrypt(raw[:12], raw[12:], aad)


@dataclass
class CountingKms:
    """Delegates to a KMS and records every call."""

    inner: KmsClient
    wraps: list[str] = field(default_factory=list)
    unwraps: list[str] = field(default_factory=list)

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        self.wraps.append(master_key_identifier)
        return self.inner.wrap_key(key_bytes, master_key_identifier)

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        self.unwraps.append(master_key_identifier)
        return self.inner.unwrap_key(wrapped_key, master_key_identifier)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _fields(md: bytes) -> list[str]:
    return [k for k, _ in json.loads(md, object_pairs_hook=lambda pairs: pairs)]


def _config(**kw: Any) -> EncryptionConfig:
    base: dict[str, Any] = {"footer_key_id": "kf", "column_keys": {"a": "kc", "b": "kc"}}
    base.update(kw)
    return EncryptionConfig(**base)


# --- key material JSON -----------------------------------------------------------------------


@pytest.mark.parametrize("double", [False, True])
def test_footer_and_column_key_material_fields_order_and_values(double: bool) -> None:
    kms = InMemoryKms(MASTER_KEYS)
    w = KeyWrapper(kms, _config(double_wrapping=double))
    fkey, fmd = w.footer_key()
    ckey, cmd = w.column_key("a") or (b"", b"")
    assert len(fkey) == len(ckey) == 16 and fkey != ckey
    extra = DOUBLE_FIELDS if double else []
    assert _fields(fmd) == FOOTER_FIELDS + extra
    assert _fields(cmd) == COLUMN_FIELDS + extra
    for md, is_footer, mk, master, dek in (
        (fmd, True, "kf", FOOTER_MK, fkey),
        (cmd, False, "kc", COLUMN_MK, ckey),
    ):
        obj = json.loads(md)
        # compact JSON exactly as Arrow's JsonWriter writes it
        assert md == json.dumps(obj, separators=(",", ":")).encode()
        assert obj["keyMaterialType"] == "PKMT1"
        assert obj["internalStorage"] is True
        assert obj["isFooterKey"] is is_footer
        assert obj["doubleWrapping"] is double
        assert obj["masterKeyID"] == mk
        if is_footer:
            assert obj["kmsInstanceID"] == "DEFAULT" and obj["kmsInstanceURL"] == "DEFAULT"
        wrapped_dek = base64.b64decode(obj["wrappedDEK"], validate=True)
        assert len(wrapped_dek) == 12 + 16 + 16
        if double:
            kek_id = base64.b64decode(obj["keyEncryptionKeyID"], validate=True)
            assert len(kek_id) == 16
            kek = ref_decrypt_key_locally(obj["wrappedKEK"], master, mk.encode())
            assert len(kek) == 16
            assert ref_decrypt_key_locally(obj["wrappedDEK"], kek, kek_id) == dek
        else:
            assert ref_decrypt_key_locally(obj["wrappedDEK"], master, mk.encode()) == dek
        _assert_no_secret(md.decode(), dek, master)


def test_keys_are_made_once_per_column_and_plaintext_columns_get_none() -> None:
    w = KeyWrapper(InMemoryKms(MASTER_KEYS), _config())
    assert w.column_key("a") == w.column_key("a")
    assert w.footer_key() == w.footer_key()
    assert w.column_key("a") != w.column_key("b")
    assert w.column_key("zzz") is None


@pytest.mark.parametrize("bits", [128, 192, 256])
def test_data_key_length(bits: int) -> None:
    w = KeyWrapper(InMemoryKms(MASTER_KEYS), _config(data_key_length_bits=bits))
    key, md = w.footer_key()
    assert len(key) * 8 == bits
    assert KeyUnwrapper(InMemoryKms(MASTER_KEYS)).unwrap(md) == key


def test_parquet_java_style_string_booleans_are_read() -> None:
    """parquet-java serializes a Map<String, String>: booleans arrive as "true"/"false"."""
    dek = os.urandom(16)
    md = json.dumps(
        {
            "kmsInstanceURL": "DEFAULT",
            "wrappedDEK": ref_encrypt_key_locally(dek, FOOTER_MK, b"kf"),
            "masterKeyID": "kf",
            "isFooterKey": "true",
            "doubleWrapping": "false",
            "internalStorage": "true",
            "keyMaterialType": "PKMT1",
            "kmsInstanceID": "DEFAULT",
        }
    ).encode()
    assert KeyUnwrapper(InMemoryKms(MASTER_KEYS)).unwrap(md) == dek


def test_reference_double_wrapped_material_is_unwrapped() -> None:
    """Material built step by step from parquet-java's FileKeyWrapper source."""
    dek, kek, kek_id = os.urandom(32), os.urandom(16), os.urandom(16)
    md = json.dumps(
        {
            "keyMaterialType": "PKMT1",
            "internalStorage": True,
            "isFooterKey": False,
            "masterKeyID": "kc",
            "wrappedDEK": ref_encrypt_key_locally(dek, kek, kek_id),
            "doubleWrapping": True,
            "keyEncryptionKeyID": base64.b64encode(kek_id).decode(),
            "wrappedKEK": ref_encrypt_key_locally(kek, COLUMN_MK, b"kc"),
        }
    ).encode()
    assert KeyUnwrapper(InMemoryKms(MASTER_KEYS)).unwrap(md) == dek


# --- InMemoryKms -----------------------------------------------------------------------------


def test_in_memory_kms_matches_the_reference_both_ways() -> None:
    kms = InMemoryKms(MASTER_KEYS)
    key = os.urandom(16)
    ours = kms.wrap_key(key, "kc")
    assert len(base64.b64decode(ours)) == 12 + 16 + 16
    assert ref_decrypt_key_locally(ours, COLUMN_MK, b"kc") == key
    assert kms.unwrap_key(ref_encrypt_key_locally(key, COLUMN_MK, b"kc"), "kc") == key
    assert kms.unwrap_key(ours, "kc") == key
    # the AAD is the master key id: the same key under another id does not unwrap
    other = InMemoryKms({"kx": COLUMN_MK})
    with pytest.raises(EncryptionError, match="'kx'"):
        other.unwrap_key(ours, "kx")


@given(
    key=st.binary(min_size=16, max_size=32),
    mk_id=st.text(min_size=1, max_size=20),
)
@settings(max_examples=50, deadline=None)
def test_in_memory_kms_round_trip(key: bytes, mk_id: str) -> None:
    kms = InMemoryKms({mk_id: FOOTER_MK})
    assert kms.unwrap_key(kms.wrap_key(key, mk_id), mk_id) == key
    assert ref_decrypt_key_locally(kms.wrap_key(key, mk_id), FOOTER_MK, mk_id.encode()) == key


@given(
    double=st.booleans(),
    bits=st.sampled_from([128, 192, 256]),
    mk_id=st.text(min_size=1, max_size=12),
    is_footer=st.booleans(),
)
@settings(max_examples=40, deadline=None)
def test_wrap_unwrap_round_trip(double: bool, bits: int, mk_id: str, is_footer: bool) -> None:
    kms = InMemoryKms({mk_id: COLUMN_MK})
    cfg = EncryptionConfig(footer_key_id=mk_id, double_wrapping=double, data_key_length_bits=bits)
    dek = os.urandom(bits // 8)
    md = KeyWrapper(kms, cfg).wrap_data_key(dek, mk_id, is_footer)
    assert parse_key_material(md).master_key_id == mk_id
    assert KeyUnwrapper(kms).unwrap(md) == dek


def test_in_memory_kms_rejects_bad_master_keys() -> None:
    with pytest.raises(ConfigError, match="'k'") as info:
        InMemoryKms({"k": b"SHORTSECRET"})
    _assert_no_secret(_exc_texts(info.value), b"SHORTSECRET")
    with pytest.raises(ConfigError):
        InMemoryKms({"": FOOTER_MK})
    with pytest.raises(EncryptionError, match="'nope'"):
        InMemoryKms(MASTER_KEYS).wrap_key(b"x" * 16, "nope")


# --- KEK caches ------------------------------------------------------------------------------


def test_double_wrapping_reuses_one_kek_per_master_key_until_expiry() -> None:
    kms = CountingKms(InMemoryKms(MASTER_KEYS))
    clock = FakeClock()
    cache = KekCache(60, clock=clock)
    cfg = _config(column_keys={"a": "kc", "b": "kc", "c": "kf"})
    w1 = KeyWrapper(kms, cfg, kek_cache=cache)
    mds = [w1.footer_key()[1]] + [(w1.column_key(c) or (b"", b""))[1] for c in "abc"]
    assert sorted(kms.wraps) == ["kc", "kf"]
    kek_ids = {json.loads(md)["masterKeyID"]: json.loads(md)["keyEncryptionKeyID"] for md in mds}
    assert len({json.loads(md)["keyEncryptionKeyID"] for md in mds}) == 2

    clock.now += 59  # within lifetime: a second file reuses the KEKs
    w2 = KeyWrapper(kms, cfg, kek_cache=cache)
    md2 = w2.column_key("a")
    assert md2 is not None and len(kms.wraps) == 2
    assert json.loads(md2[1])["keyEncryptionKeyID"] == kek_ids["kc"]
    assert md2[0] != (w1.column_key("a") or (b"", b""))[0]  # but a fresh data key

    clock.now += 2  # expired: a new KEK, wrapped once more by the KMS
    w3 = KeyWrapper(kms, cfg, kek_cache=cache)
    md3 = w3.column_key("a")
    assert md3 is not None and kms.wraps[2:] == ["kc"]
    assert json.loads(md3[1])["keyEncryptionKeyID"] != kek_ids["kc"]

    # every one still unwraps
    un = KeyUnwrapper(InMemoryKms(MASTER_KEYS))
    for w in (w1, w2, w3):
        k, md = w.column_key("a") or (b"", b"")
        assert un.unwrap(md) == k


def test_private_kek_cache_uses_config_lifetime_and_injected_clock() -> None:
    kms = CountingKms(InMemoryKms(MASTER_KEYS))
    clock = FakeClock()
    w = KeyWrapper(kms, _config(cache_lifetime_seconds=10), clock=clock)
    w.column_key("a")
    clock.now += 11
    w.column_key("b")
    assert kms.wraps == ["kc", "kc"]


def test_single_wrapping_calls_the_kms_per_data_key() -> None:
    kms = CountingKms(InMemoryKms(MASTER_KEYS))
    w = KeyWrapper(kms, _config(double_wrapping=False))
    w.footer_key()
    w.column_key("a")
    w.column_key("b")
    w.column_key("a")
    assert kms.wraps == ["kf", "kc", "kc"]


def test_unwrapper_caches_keks_by_id_with_a_lifetime() -> None:
    w = KeyWrapper(InMemoryKms(MASTER_KEYS), _config(column_keys={"a": "kc", "b": "kc"}))
    mds = [(w.column_key(c) or (b"", b""))[1] for c in "ab"]
    kms = CountingKms(InMemoryKms(MASTER_KEYS))
    clock = FakeClock()
    un = KeyUnwrapper(kms, 30, clock=clock)
    for md in mds + mds:
        un.unwrap(md)
    assert kms.unwraps == ["kc"]
    clock.now += 31
    un.unwrap(mds[1])
    assert kms.unwraps == ["kc", "kc"]


# --- errors never show keys ------------------------------------------------------------------


def _wrapped_material(double: bool) -> tuple[bytes, bytes]:
    w = KeyWrapper(InMemoryKms(MASTER_KEYS), _config(double_wrapping=double))
    return w.column_key("a") or (b"", b"")


@pytest.mark.parametrize("double", [False, True])
def test_wrong_master_key_raises_without_key_bytes(double: bool) -> None:
    dek, md = _wrapped_material(double)
    wrong = b"WRONGMASTERKEY!!WRONGMASTERKEY!!"
    with pytest.raises(EncryptionError, match="'kc'") as info:
        KeyUnwrapper(InMemoryKms({"kc": wrong})).unwrap(md)
    text = _exc_texts(info.value)
    _assert_no_secret(text, dek, wrong, COLUMN_MK, FOOTER_MK)
    back = pickle.loads(pickle.dumps(info.value))
    assert str(back) == str(info.value)


@pytest.mark.parametrize(
    ("double", "field_name"),
    [
        (False, "wrappedDEK"),
        (True, "wrappedDEK"),
        (True, "wrappedKEK"),
        (True, "keyEncryptionKeyID"),
    ],
)
def test_tampered_material_raises(double: bool, field_name: str) -> None:
    dek, md = _wrapped_material(double)
    obj = json.loads(md)
    raw = bytearray(base64.b64decode(obj[field_name]))
    raw[-1] ^= 1
    obj[field_name] = base64.b64encode(bytes(raw)).decode()
    with pytest.raises(EncryptionError, match="'kc'") as info:
        KeyUnwrapper(InMemoryKms(MASTER_KEYS)).unwrap(json.dumps(obj).encode())
    _assert_no_secret(_exc_texts(info.value), dek, COLUMN_MK)


@pytest.mark.parametrize(
    "md",
    [
        b"not json",
        b"\xff\xfe",
        b"[1,2]",
        b'{"keyMaterialType":"PKMT2","internalStorage":true}',
        b'{"keyMaterialType":"PKMT1","internalStorage":true}',
        b'{"keyMaterialType":"PKMT1","internalStorage":true,"isFooterKey":false,'
        b'"masterKeyID":"kc","wrappedDEK":"!!notbase64!!","doubleWrapping":false}',
        b'{"keyMaterialType":"PKMT1","internalStorage":true,"isFooterKey":false,'
        b'"masterKeyID":"kc","wrappedDEK":"AAAA","doubleWrapping":false}',
        b'{"keyMaterialType":"PKMT1","internalStorage":true,"isFooterKey":false,'
        b'"masterKeyID":"kc","wrappedDEK":"AAAA","doubleWrapping":true}',
        b'{"keyMaterialType":"PKMT1","internalStorage":true,"isFooterKey":1,'
        b'"masterKeyID":"kc","wrappedDEK":"AAAA","doubleWrapping":false}',
        b'{"keyMaterialType":"PKMT1","internalStorage":true,"isFooterKey":true,'
        b'"masterKeyID":"kc","wrappedDEK":"AAAA","doubleWrapping":false}',
    ],
)
def test_malformed_key_material_raises_encryption_error(md: bytes) -> None:
    with pytest.raises(EncryptionError):
        KeyUnwrapper(InMemoryKms(MASTER_KEYS)).unwrap(md)


def test_external_key_material_is_unsupported() -> None:
    md = b'{"keyMaterialType":"PKMT1","internalStorage":false,"keyReference":"footerKey"}'
    with pytest.raises(UnsupportedError, match="outside the file"):
        KeyUnwrapper(InMemoryKms(MASTER_KEYS)).unwrap(md)


def test_kms_failures_become_encryption_errors_naming_the_master_key() -> None:
    class Broken:
        def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
            raise RuntimeError("backend down")

        def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
            raise RuntimeError("backend down")

    with pytest.raises(EncryptionError, match="'kf'"):
        KeyWrapper(Broken(), _config()).footer_key()
    _, md = _wrapped_material(True)
    with pytest.raises(EncryptionError, match="'kc'") as info:
        KeyUnwrapper(Broken()).unwrap(md)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_unwrapped_key_of_bad_length_is_rejected() -> None:
    kms = InMemoryKms(MASTER_KEYS)
    md = KeyWrapper(kms, _config(double_wrapping=False)).wrap_data_key(b"x" * 5, "kc", False)
    with pytest.raises(EncryptionError, match="5 bytes"):
        KeyUnwrapper(kms).unwrap(md)


def test_reprs_hide_keys() -> None:
    prefix = b"AADPREFIXSECRET!"
    cfg = _config(aad_prefix=prefix, store_aad_prefix=False)
    kms = InMemoryKms(MASTER_KEYS)
    w = KeyWrapper(kms, cfg, kek_cache=KekCache(5))
    dek, _ = w.footer_key()
    explicit = ExplicitKeys({"k1": FOOTER_MK}, "k1", {"a": "k1"})
    texts = [repr(x) for x in (cfg, kms, w, KeyUnwrapper(kms), explicit, KekCache(5))]
    _assert_no_secret("\n".join(texts), FOOTER_MK, COLUMN_MK, dek, prefix)
    assert "'kf'" in repr(cfg) and "16 bytes" in repr(cfg)


# --- EncryptionConfig ------------------------------------------------------------------------


def test_config_pickles_and_validates() -> None:
    cfg = _config(aad_prefix=b"table", store_aad_prefix=False, algorithm="AES_GCM_CTR_V1")
    assert pickle.loads(pickle.dumps(cfg)) == cfg
    assert cfg.supply_aad_prefix and not _config().supply_aad_prefix
    for bad in (
        {"algorithm": "AES_CBC"},
        {"data_key_length_bits": 64},
        {"cache_lifetime_seconds": 0},
        {"footer_key_id": ""},
        {"column_keys": {"a": ""}},
        {"store_aad_prefix": False},
        {"aad_prefix": "text"},
    ):
        with pytest.raises(ConfigError):
            _config(**bad)
    assert replace(cfg, double_wrapping=False).double_wrapping is False


# --- explicit keys ---------------------------------------------------------------------------


def test_explicit_keys_metadata_is_the_key_id() -> None:
    keys = ExplicitKeys({"kf": FOOTER_MK, "kc": COLUMN_MK}, "kf", {"a": "kc"})
    assert keys.footer_key() == (FOOTER_MK, b"kf")
    assert keys.column_key("a") == (COLUMN_MK, b"kc")
    assert keys.column_key("b") is None
    assert keys.unwrap(b"kc") == COLUMN_MK
    for md in (b"nope", b"\xff"):
        with pytest.raises(EncryptionError) as info:
            keys.unwrap(md)
        _assert_no_secret(_exc_texts(info.value), FOOTER_MK, COLUMN_MK)
    with pytest.raises(ConfigError):
        ExplicitKeys({"kf": FOOTER_MK}, "missing", {})
    with pytest.raises(ConfigError):
        ExplicitKeys({"kf": FOOTER_MK}, "kf", {"a": "missing"})
    with pytest.raises(ConfigError) as cinfo:
        ExplicitKeys({"kf": b"SHORTSECRETKEY"}, "kf", {})
    _assert_no_secret(_exc_texts(cinfo.value), b"SHORTSECRETKEY")


def test_adopt_reuses_existing_keys() -> None:
    kms = InMemoryKms(MASTER_KEYS)
    first = KeyWrapper(kms, _config())
    fk, ck = first.footer_key(), first.column_key("a")
    assert ck is not None
    again = KeyWrapper(kms, _config())
    again.adopt(None, *fk)
    again.adopt("a", *ck)
    assert again.footer_key() == fk and again.column_key("a") == ck
    with pytest.raises(ConfigError):
        again.adopt("a", *ck)
    with pytest.raises(ConfigError):
        again.adopt("plain", *ck)


# --- pyarrow interop -------------------------------------------------------------------------


class _PyarrowKms(pe.KmsClient):  # type: ignore[misc]
    """pyarrow KmsClient delegating to our InMemoryKms, recording master key ids."""

    def __init__(self, inner: InMemoryKms, log: list[tuple[str, str]]) -> None:
        super().__init__()
        self._inner = inner
        self._log = log

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        self._log.append(("wrap", master_key_identifier))
        return self._inner.wrap_key(key_bytes, master_key_identifier)

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        self._log.append(("unwrap", master_key_identifier))
        return self._inner.unwrap_key(wrapped_key, master_key_identifier)


def _crypto_factory(log: list[tuple[str, str]]) -> pe.CryptoFactory:
    kms = InMemoryKms(MASTER_KEYS)
    return pe.CryptoFactory(lambda _cfg: _PyarrowKms(kms, log))


TABLE = pa.table({"a": list(range(50)), "b": [f"s{i}" for i in range(50)], "c": [1.5] * 50})


@dataclass
class _Parsed:
    data: bytes
    plaintext_footer: bool
    footer_start: int  # start of FileCryptoMetaData (PARE) or FileMetaData (PAR1)
    crypto_md: s.FileCryptoMetaData | None
    footer_module_start: int
    footer_key_metadata: bytes
    aad_file_unique: bytes


def _parse_tail(data: bytes) -> _Parsed:
    (n,) = struct.unpack("<I", data[-8:-4])
    start = len(data) - 8 - n
    if data[-4:] == b"PARE":
        fcm, end = thrift.deserialize(s.FileCryptoMetaData, data, start)
        alg = fcm.encryption_algorithm
        assert alg is not None and fcm.key_metadata is not None
        gcm = alg.AES_GCM_V1 or alg.AES_GCM_CTR_V1
        assert gcm is not None and gcm.aad_file_unique is not None
        return _Parsed(data, False, start, fcm, end, fcm.key_metadata, gcm.aad_file_unique)
    fmd, _ = thrift.deserialize(s.FileMetaData, data, start)
    alg = fmd.encryption_algorithm
    assert alg is not None and fmd.footer_signing_key_metadata is not None
    gcm = alg.AES_GCM_V1 or alg.AES_GCM_CTR_V1
    assert gcm is not None and gcm.aad_file_unique is not None
    return _Parsed(data, True, start, None, start, fmd.footer_signing_key_metadata,
                   gcm.aad_file_unique)  # fmt: skip


def _footer_aad(p: _Parsed) -> bytes:
    return p.aad_file_unique + b"\x00"  # module type 0 = footer, no ordinals


def _decrypt_footer(p: _Parsed, footer_key: bytes) -> s.FileMetaData:
    """Decrypts (PARE) or verifies the signature of (PAR1) the footer with ``footer_key``."""
    end = len(p.data) - 8
    if p.plaintext_footer:
        fmd_bytes = p.data[p.footer_start : end - 28]
        nonce, tag = p.data[end - 28 : end - 16], p.data[end - 16 : end]
        sealed = AESGCM(footer_key).encrypt(nonce, fmd_bytes, _footer_aad(p))
        assert sealed[-16:] == tag, "footer signature does not verify with the unwrapped key"
        module = fmd_bytes
    else:
        (length,) = struct.unpack("<I", p.data[p.footer_module_start : p.footer_module_start + 4])
        body = p.data[p.footer_module_start + 4 : p.footer_module_start + 4 + length]
        module = AESGCM(footer_key).decrypt(body[:12], body[12:], _footer_aad(p))
    fmd, _ = thrift.deserialize(s.FileMetaData, module)
    return fmd


def _column_key_metadata(fmd: s.FileMetaData) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for rg in fmd.row_groups or []:
        for cc in rg.columns or []:
            cm = cc.crypto_metadata
            if cm is not None and cm.ENCRYPTION_WITH_COLUMN_KEY is not None:
                ck = cm.ENCRYPTION_WITH_COLUMN_KEY
                assert ck.path_in_schema and ck.key_metadata is not None
                out[".".join(ck.path_in_schema)] = ck.key_metadata
    return out


def _decrypt_column_metadata(p: _Parsed, fmd: s.FileMetaData, column: str, key: bytes) -> None:
    """Decrypts the ColumnMetaData module of ``column`` in row group 0 with ``key``."""
    rg = (fmd.row_groups or [])[0]
    for ordinal, cc in enumerate(rg.columns or []):
        ck = cc.crypto_metadata and cc.crypto_metadata.ENCRYPTION_WITH_COLUMN_KEY
        if ck and ".".join(ck.path_in_schema or []) == column:
            blob = cc.encrypted_column_metadata
            assert blob is not None
            aad = p.aad_file_unique + b"\x01" + struct.pack("<hh", 0, ordinal)
            # pyarrow stores the whole module: length (4, LE) || nonce || ciphertext || tag
            assert struct.unpack("<I", blob[:4])[0] == len(blob) - 4
            blob = blob[4:]
            thrift.deserialize(s.ColumnMetaData, AESGCM(key).decrypt(blob[:12], blob[12:], aad))
            return
    raise AssertionError(f"column {column} not found")


def _write_with_pyarrow(path: Path, double: bool, plaintext_footer: bool) -> list[tuple[str, str]]:
    log: list[tuple[str, str]] = []
    factory = _crypto_factory(log)
    cfg = pe.EncryptionConfiguration(
        footer_key="kf",
        column_keys={"kc": ["a", "b"]},
        double_wrapping=double,
        plaintext_footer=plaintext_footer,
        cache_lifetime=datetime.timedelta(minutes=10),
    )
    props = factory.file_encryption_properties(pe.KmsConnectionConfig(), cfg)
    pq.write_table(TABLE, path, encryption_properties=props)
    return log


MODES = [(d, p) for d in (False, True) for p in (False, True)]


@pytest.mark.parametrize(("double", "plaintext_footer"), MODES)
def test_pyarrow_written_key_material_unwraps_with_our_unwrapper(
    tmp_path: Path, double: bool, plaintext_footer: bool
) -> None:
    path = tmp_path / "pa.parquet"
    log = _write_with_pyarrow(path, double, plaintext_footer)
    p = _parse_tail(path.read_bytes())
    assert p.plaintext_footer is plaintext_footer

    ours = CountingKms(InMemoryKms(MASTER_KEYS))
    un = KeyUnwrapper(ours)
    footer_key = un.unwrap(p.footer_key_metadata)
    assert len(footer_key) == 16
    material = parse_key_material(p.footer_key_metadata)
    assert material.is_footer_key and material.double_wrapping is double
    assert _fields(p.footer_key_metadata) == FOOTER_FIELDS + (DOUBLE_FIELDS if double else [])

    fmd = _decrypt_footer(p, footer_key)  # proves the footer key is right
    col_md = _column_key_metadata(fmd)
    assert sorted(col_md) == ["a", "b"]
    for column, md in col_md.items():
        assert _fields(md) == COLUMN_FIELDS + (DOUBLE_FIELDS if double else [])
        _decrypt_column_metadata(p, fmd, column, un.unwrap(md))  # proves the column key
    # pyarrow's KMS and ours saw the same master key ids
    assert {mk for op, mk in log if op == "wrap"} == set(ours.unwraps) == {"kf", "kc"}


def _rewrap(md: bytes, key: bytes, double: bool) -> bytes:
    mat = parse_key_material(md)
    cfg = EncryptionConfig(footer_key_id="kf", double_wrapping=double)
    return KeyWrapper(InMemoryKms(MASTER_KEYS), cfg).wrap_data_key(
        key, mat.master_key_id, mat.is_footer_key
    )


@pytest.mark.parametrize(("double", "plaintext_footer"), MODES)
def test_pyarrow_reads_a_file_whose_key_material_we_wrapped(
    tmp_path: Path, double: bool, plaintext_footer: bool
) -> None:
    """pyarrow writes the file; we replace every key metadata with our own wrapping of the same
    data keys (footer re-encrypted or re-signed); pyarrow's key tools must unwrap ours."""
    src = tmp_path / "pa.parquet"
    _write_with_pyarrow(src, not double, plaintext_footer)  # the other mode, so all is ours
    p = _parse_tail(src.read_bytes())
    un = KeyUnwrapper(InMemoryKms(MASTER_KEYS))
    footer_key = un.unwrap(p.footer_key_metadata)
    fmd = _decrypt_footer(p, footer_key)
    for rg in fmd.row_groups or []:
        for cc in rg.columns or []:
            cm = cc.crypto_metadata
            if cm is not None and cm.ENCRYPTION_WITH_COLUMN_KEY is not None:
                old = cm.ENCRYPTION_WITH_COLUMN_KEY.key_metadata
                assert old is not None
                cm.ENCRYPTION_WITH_COLUMN_KEY.key_metadata = _rewrap(old, un.unwrap(old), double)
    new_footer_md = _rewrap(p.footer_key_metadata, footer_key, double)
    aad = _footer_aad(p)
    nonce = os.urandom(12)
    if plaintext_footer:
        fmd.footer_signing_key_metadata = new_footer_md
        body = thrift.serialize(fmd)
        tail = body + nonce + AESGCM(footer_key).encrypt(nonce, body, aad)[-16:]
        magic = b"PAR1"
    else:
        assert p.crypto_md is not None
        p.crypto_md.key_metadata = new_footer_md
        sealed = nonce + AESGCM(footer_key).encrypt(nonce, thrift.serialize(fmd), aad)
        tail = thrift.serialize(p.crypto_md) + struct.pack("<I", len(sealed)) + sealed
        magic = b"PARE"
    out = tmp_path / "ours.parquet"
    out.write_bytes(p.data[: p.footer_start] + tail + struct.pack("<I", len(tail)) + magic)

    mds = [new_footer_md, *_column_key_metadata(fmd).values()]
    assert all(json.loads(md)["doubleWrapping"] is double for md in mds)
    log: list[tuple[str, str]] = []
    props = _crypto_factory(log).file_decryption_properties(pe.KmsConnectionConfig())
    assert pq.read_table(out, decryption_properties=props).equals(TABLE)
    assert {mk for op, mk in log if op == "unwrap"} == {"kf", "kc"}


def test_counting_kms_is_a_kms_client() -> None:
    checker: Callable[[object], bool] = lambda obj: isinstance(obj, KmsClient)  # noqa: E731
    assert checker(InMemoryKms(MASTER_KEYS)) and checker(CountingKms(InMemoryKms(MASTER_KEYS)))
