"""workers.cipher: module framing, GCM/CTR round trips, tampering, footer signatures, keys."""

from __future__ import annotations

import contextlib
import pickle
import struct
import subprocess
import sys
from collections.abc import Callable

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwrite.errors import ConfigError, EncryptionError, LimitError, StreamwriteError
from streamwrite.format import structs as t
from streamwrite.format.aad import ModuleType, file_aad, module_aad
from streamwrite.format.thrift.codec import deserialize, serialize
from workers.cipher import (
    CTR_OVERHEAD,
    FOOTER_SIGNATURE_SIZE,
    GCM_OVERHEAD,
    Algorithm,
    ModuleCipher,
    decrypt_module,
    encrypt_module,
    resolve_algorithm,
    sign_footer,
    verify_footer_signature,
)

KEY = bytes(range(16))
OTHER_KEY = bytes(range(1, 17))
AAD = b"file-aad\x02\x00\x00\x01\x00\x00\x00"
NONCE = bytes.fromhex("cafebabefacedbaddecaf888")
KEYS = st.sampled_from([16, 24, 32]).flatmap(lambda n: st.binary(min_size=n, max_size=n))
FAAD = file_aad(b"", bytes.fromhex("0102030405060708"))


# --------------------------------------------------------------------------- known answers


def test_gcm_framing_matches_the_nist_gcm_test_case_4() -> None:
    """McGrew & Viega GCM spec, test case 4 (AES-128, 60-byte plaintext, 20-byte AAD)."""
    key = bytes.fromhex("feffe9928665731c6d6a8f9467308308")
    plaintext = bytes.fromhex(
        "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
        "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
    )
    aad = bytes.fromhex("feedfacedeadbeeffeedfacedeadbeefabaddad2")
    ciphertext = bytes.fromhex(
        "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
        "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091"
    )
    tag = bytes.fromhex("5bc94fbc3221a5db94fae95ae7121a47")
    framed = encrypt_module(key, plaintext, aad, nonce=NONCE)
    assert framed == struct.pack("<I", 12 + 60 + 16) + NONCE + ciphertext + tag
    assert decrypt_module(key, framed + b"trailing", aad) == (plaintext, len(framed))


def test_ctr_iv_is_nonce_then_counter_one() -> None:
    """IV = nonce || 00 00 00 01; checked block by block against raw AES (ECB)."""
    plaintext = bytes(range(40))
    framed = encrypt_module(KEY, plaintext, b"ignored", ctr=True, nonce=NONCE)
    assert framed[:4] == struct.pack("<I", 12 + 40)
    assert framed[4:16] == NONCE
    ecb = Cipher(algorithms.AES(KEY), modes.ECB()).encryptor()
    keystream = b"".join(ecb.update(NONCE + counter.to_bytes(4, "big")) for counter in (1, 2, 3))
    assert framed[16:] == bytes(p ^ k for p, k in zip(plaintext, keystream, strict=False))
    assert len(framed) == len(plaintext) + CTR_OVERHEAD


def test_overheads() -> None:
    assert GCM_OVERHEAD == 32 and CTR_OVERHEAD == 16 and FOOTER_SIGNATURE_SIZE == 28
    assert len(encrypt_module(KEY, b"", AAD)) == GCM_OVERHEAD
    assert len(encrypt_module(KEY, b"", AAD, ctr=True)) == CTR_OVERHEAD


# --------------------------------------------------------------------------- round trips


@settings(max_examples=60)
@given(
    key=KEYS,
    plaintext=st.binary(max_size=3000),
    aad=st.binary(max_size=64),
    tail=st.binary(max_size=8),
)
def test_gcm_round_trip(key: bytes, plaintext: bytes, aad: bytes, tail: bytes) -> None:
    framed = encrypt_module(key, plaintext, aad)
    assert len(framed) == len(plaintext) + GCM_OVERHEAD
    assert struct.unpack_from("<I", framed)[0] == len(framed) - 4
    assert decrypt_module(key, framed + tail, aad) == (plaintext, len(framed))
    assert decrypt_module(key, memoryview(bytearray(framed + tail)), aad) == (
        plaintext,
        len(framed),
    )


@settings(max_examples=60)
@given(key=KEYS, plaintext=st.binary(max_size=3000), tail=st.binary(max_size=8))
def test_ctr_round_trip(key: bytes, plaintext: bytes, tail: bytes) -> None:
    framed = encrypt_module(key, plaintext, b"", ctr=True)
    assert len(framed) == len(plaintext) + CTR_OVERHEAD
    assert decrypt_module(key, framed + tail, b"", ctr=True) == (plaintext, len(framed))


def test_nonces_are_fresh() -> None:
    a = encrypt_module(KEY, b"same", AAD)
    b = encrypt_module(KEY, b"same", AAD)
    assert a[4:16] != b[4:16] and a != b


# --------------------------------------------------------------------------- failures


@settings(max_examples=80)
@given(data=st.data())
def test_any_flipped_byte_fails_authentication(data: st.DataObject) -> None:
    plaintext = data.draw(st.binary(max_size=200))
    framed = bytearray(encrypt_module(KEY, plaintext, AAD))
    # any byte after the length prefix (nonce, ciphertext, tag)
    i = data.draw(st.integers(4, len(framed) - 1))
    framed[i] ^= data.draw(st.integers(1, 255))
    with pytest.raises(EncryptionError, match="authentication"):
        decrypt_module(KEY, framed, AAD)


@settings(max_examples=80)
@given(data=st.data())
def test_damaged_length_prefix_never_escapes_as_another_error(data: st.DataObject) -> None:
    plaintext = data.draw(st.binary(max_size=100))
    ctr = data.draw(st.booleans())
    framed = bytearray(encrypt_module(KEY, plaintext, AAD, ctr=ctr))
    struct.pack_into("<I", framed, 0, data.draw(st.integers(0, 2**32 - 1)))
    cut = data.draw(st.integers(0, len(framed)))
    with contextlib.suppress(EncryptionError):
        decrypt_module(KEY, framed[:cut], AAD, ctr=ctr)


def test_wrong_aad_and_wrong_key() -> None:
    framed = encrypt_module(KEY, b"secret page", AAD)
    with pytest.raises(EncryptionError):
        decrypt_module(KEY, framed, AAD[:-1] + b"\x01")
    with pytest.raises(EncryptionError):
        decrypt_module(OTHER_KEY, framed, AAD)
    with pytest.raises(EncryptionError):
        decrypt_module(KEY + KEY, framed, AAD)


@pytest.mark.parametrize("ctr", [False, True])
def test_length_beyond_buffer(ctr: bool) -> None:
    framed = encrypt_module(KEY, b"x" * 50, AAD, ctr=ctr)
    with pytest.raises(EncryptionError, match=r"declares (62|78)") as info:
        decrypt_module(KEY, framed[:-1], AAD, ctr=ctr, what="The test module")
    assert str(info.value).startswith("The test module")
    with pytest.raises(EncryptionError, match="length prefix"):
        decrypt_module(KEY, framed[:3], AAD, ctr=ctr)
    with pytest.raises(EncryptionError, match="framing"):
        decrypt_module(KEY, struct.pack("<I", 11) + bytes(11), AAD, ctr=ctr)


def test_too_short_for_a_tag() -> None:
    with pytest.raises(EncryptionError, match="28 bytes of GCM framing"):
        decrypt_module(KEY, struct.pack("<I", 27) + bytes(27), AAD)


@pytest.mark.parametrize("size", [0, 8, 15, 17, 31, 33, 64])
def test_bad_key_sizes(size: int) -> None:
    key = bytes(range(size))
    with pytest.raises(ConfigError, match=f"got one of {size} bytes"):
        encrypt_module(key, b"p", AAD)
    with pytest.raises(ConfigError):
        decrypt_module(key, encrypt_module(KEY, b"p", AAD), AAD)
    with pytest.raises(ConfigError):
        ModuleCipher(key, FAAD)


def test_key_must_be_bytes() -> None:
    with pytest.raises(ConfigError, match="got a str"):
        ModuleCipher("0123456789012345", FAAD)  # type: ignore[arg-type]


def test_bad_nonce() -> None:
    with pytest.raises(ConfigError, match="12 bytes"):
        encrypt_module(KEY, b"p", AAD, nonce=b"short")


def test_module_too_large_is_a_limit_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import workers.cipher as cipher

    monkeypatch.setattr(cipher, "_MAX_FRAMED", 100)
    with pytest.raises(LimitError, match="too large"):
        encrypt_module(KEY, bytes(90), AAD)
    with pytest.raises(LimitError, match="too large"):
        ModuleCipher(KEY, FAAD).encrypt(ModuleType.DATA_PAGE, bytes(90), 0, 0, 0)
    assert len(encrypt_module(KEY, bytes(85), AAD, ctr=True)) == 85 + CTR_OVERHEAD  # 97 framed


# --------------------------------------------------------------------------- footer signature


def test_footer_signature_round_trip_and_tamper() -> None:
    footer = serialize(t.KeyValue(key="k", value="v")) * 20
    aad = module_aad(FAAD, ModuleType.FOOTER)
    signature = sign_footer(KEY, footer, aad, nonce=NONCE)
    assert len(signature) == 28 and signature[:12] == NONCE
    # the tag is the GCM tag of the footer under that nonce
    assert signature[12:] == encrypt_module(KEY, footer, aad, nonce=NONCE)[-16:]
    verify_footer_signature(KEY, footer, signature, aad)
    verify_footer_signature(KEY, memoryview(footer), memoryview(signature), aad)
    for i in range(len(footer)):
        bad = bytearray(footer)
        bad[i] ^= 0x40
        with pytest.raises(EncryptionError, match="signature"):
            verify_footer_signature(KEY, bytes(bad), signature, aad)
    for i in range(28):
        bad_sig = bytearray(signature)
        bad_sig[i] ^= 1
        with pytest.raises(EncryptionError, match="signature"):
            verify_footer_signature(KEY, footer, bytes(bad_sig), aad)
    with pytest.raises(EncryptionError, match="signature"):
        verify_footer_signature(OTHER_KEY, footer, signature, aad)
    with pytest.raises(EncryptionError, match="signature"):
        verify_footer_signature(KEY, footer, signature, module_aad(b"x" + FAAD, ModuleType.FOOTER))
    with pytest.raises(EncryptionError, match="27 bytes"):
        verify_footer_signature(KEY, footer, signature[:27], aad)


# --------------------------------------------------------------------------- ModuleCipher


def test_module_cipher_builds_the_aads() -> None:
    cipher = ModuleCipher(KEY, FAAD)
    framed = cipher.encrypt(ModuleType.DATA_PAGE_HEADER, b"hdr", 3, 4, 5)
    aad = module_aad(FAAD, ModuleType.DATA_PAGE_HEADER, 3, 4, 5)
    assert decrypt_module(KEY, framed, aad) == (b"hdr", len(framed))
    assert cipher.decrypt(ModuleType.DATA_PAGE_HEADER, framed, 3, 4, 5) == (b"hdr", len(framed))
    assert cipher.aad(ModuleType.DATA_PAGE_HEADER, 3, 4, 5) == aad


@pytest.mark.parametrize(
    ("moved", "what"),
    [
        (
            (ModuleType.DATA_PAGE_HEADER, 3, 4, 6),
            "DATA_PAGE_HEADER module of row group 3, column 4, page 6",
        ),
        ((ModuleType.DATA_PAGE_HEADER, 2, 4, 5), "row group 2"),
        ((ModuleType.DATA_PAGE_HEADER, 3, 5, 5), "column 5"),
        ((ModuleType.DATA_PAGE, 3, 4, 5), "DATA_PAGE module"),
    ],
)
def test_moved_module_is_refused_and_named(
    moved: tuple[ModuleType, int, int, int], what: str
) -> None:
    cipher = ModuleCipher(KEY, FAAD)
    framed = cipher.encrypt(ModuleType.DATA_PAGE_HEADER, b"hdr", 3, 4, 5)
    with pytest.raises(EncryptionError, match=what):
        cipher.decrypt(moved[0], framed, *moved[1:])


def test_other_file_is_refused() -> None:
    framed = ModuleCipher(KEY, FAAD).encrypt(ModuleType.OFFSET_INDEX, b"oi", 0, 1)
    other = ModuleCipher(KEY, file_aad(b"", bytes(8)))
    with pytest.raises(EncryptionError, match="OFFSET_INDEX module of row group 0, column 1"):
        other.decrypt(ModuleType.OFFSET_INDEX, framed, 0, 1)


def test_ctr_algorithm_uses_ctr_for_page_bodies_only() -> None:
    cipher = ModuleCipher(KEY, FAAD, Algorithm.AES_GCM_CTR_V1)
    for mt in ModuleType:
        ctr = mt in (ModuleType.DATA_PAGE, ModuleType.DICTIONARY_PAGE)
        assert cipher.uses_ctr(mt) is ctr
        assert cipher.overhead(mt) == (CTR_OVERHEAD if ctr else GCM_OVERHEAD)
        framed = cipher.encrypt(mt, b"abc", 1, 2, 3)
        assert len(framed) == 3 + cipher.overhead(mt)
        assert cipher.decrypt(mt, framed, 1, 2, 3) == (b"abc", len(framed))
    gcm = ModuleCipher(KEY, FAAD)
    assert not any(gcm.uses_ctr(mt) for mt in ModuleType)
    # CTR has no AAD, but ordinals are still checked
    with pytest.raises(LimitError, match="page ordinal"):
        cipher.encrypt(ModuleType.DATA_PAGE, b"x", 0, 0, 40000)


@settings(max_examples=40)
@given(
    key=KEYS,
    algorithm=st.sampled_from(list(Algorithm)),
    module_type=st.sampled_from(list(ModuleType)),
    plaintext=st.binary(max_size=500),
    ordinals=st.tuples(st.integers(0, 32767), st.integers(0, 32767), st.integers(0, 32767)),
)
def test_module_cipher_round_trip(
    key: bytes,
    algorithm: Algorithm,
    module_type: ModuleType,
    plaintext: bytes,
    ordinals: tuple[int, int, int],
) -> None:
    cipher = ModuleCipher(key, FAAD, algorithm)
    framed = cipher.encrypt(module_type, plaintext, *ordinals)
    assert cipher.decrypt(module_type, framed + b"\x00", *ordinals) == (plaintext, len(framed))
    clone = pickle.loads(pickle.dumps(cipher))
    assert clone.decrypt(module_type, framed, *ordinals) == (plaintext, len(framed))


def test_our_own_thrift_modules_round_trip() -> None:
    """Encrypt real structs the way a writer does and read them back the way a reader does."""
    cipher = ModuleCipher(KEY, file_aad(b"tbl.part0", bytes(range(8))), Algorithm.AES_GCM_CTR_V1)
    header = t.PageHeader(
        type=t.PageType.DATA_PAGE,
        uncompressed_page_size=10,
        compressed_page_size=10 + CTR_OVERHEAD,
        data_page_header=t.DataPageHeader(
            num_values=3,
            encoding=t.Encoding.PLAIN,
            definition_level_encoding=t.Encoding.RLE,
            repetition_level_encoding=t.Encoding.RLE,
        ),
    )
    body = b"0123456789"
    stream = cipher.encrypt(ModuleType.DATA_PAGE_HEADER, serialize(header), 0, 2, 7)
    stream += cipher.encrypt(ModuleType.DATA_PAGE, body, 0, 2, 7)
    plain, used = cipher.decrypt(ModuleType.DATA_PAGE_HEADER, stream, 0, 2, 7)
    got, _ = deserialize(t.PageHeader, plain)
    assert got == header
    page, used2 = cipher.decrypt(ModuleType.DATA_PAGE, memoryview(stream)[used:], 0, 2, 7)
    assert page == body and used2 == got.compressed_page_size
    assert used + used2 == len(stream)


# --------------------------------------------------------------------------- algorithm / AAD


def _alg(ctr: bool = False, **kw: object) -> t.EncryptionAlgorithm:
    if ctr:
        return t.EncryptionAlgorithm(AES_GCM_CTR_V1=t.AesGcmCtrV1(**kw))  # type: ignore[arg-type]
    return t.EncryptionAlgorithm(AES_GCM_V1=t.AesGcmV1(**kw))  # type: ignore[arg-type]


def test_resolve_algorithm() -> None:
    unique = bytes(range(8))
    assert resolve_algorithm(_alg(aad_file_unique=unique)) == (Algorithm.AES_GCM_V1, unique)
    assert resolve_algorithm(_alg(True, aad_file_unique=unique)) == (
        Algorithm.AES_GCM_CTR_V1,
        unique,
    )
    stored = _alg(aad_prefix=b"p", aad_file_unique=unique)
    assert resolve_algorithm(stored) == (Algorithm.AES_GCM_V1, b"p" + unique)
    assert resolve_algorithm(stored, b"p") == (Algorithm.AES_GCM_V1, b"p" + unique)
    with pytest.raises(EncryptionError, match="differs"):
        resolve_algorithm(stored, b"q")
    supply = _alg(aad_file_unique=unique, supply_aad_prefix=True)
    with pytest.raises(EncryptionError, match="must supply"):
        resolve_algorithm(supply)
    assert resolve_algorithm(supply, b"s") == (Algorithm.AES_GCM_V1, b"s" + unique)
    with pytest.raises(EncryptionError, match="no known algorithm"):
        resolve_algorithm(t.EncryptionAlgorithm())


# --------------------------------------------------------------------------- key hygiene


SECRET = b"TOPSECRETKEY0123"  # 16 bytes, easy to spot in text


def test_repr_hides_the_key() -> None:
    cipher = ModuleCipher(SECRET, b"PRIVATEPREFIX" + bytes(8), Algorithm.AES_GCM_CTR_V1)
    text = repr(cipher) + str(cipher)
    assert "TOPSECRET" not in text and SECRET.hex() not in text and "PRIVATEPREFIX" not in text
    assert "128-bit" in text and "AES_GCM_CTR_V1" in text
    assert cipher.algorithm is Algorithm.AES_GCM_CTR_V1


def _all_messages() -> list[StreamwriteError]:
    errors: list[StreamwriteError] = []
    framed = encrypt_module(SECRET, b"data", AAD)
    cipher = ModuleCipher(SECRET, FAAD)
    attempts: list[Callable[[], object]] = [
        lambda: decrypt_module(SECRET, framed, b"wrong"),
        lambda: decrypt_module(SECRET, framed[:-3], AAD),
        lambda: decrypt_module(OTHER_KEY, framed, AAD),
        lambda: decrypt_module(SECRET + b"x", framed, AAD),
        lambda: encrypt_module(SECRET[:15], b"x", AAD),
        lambda: verify_footer_signature(SECRET, b"f", bytes(28), AAD),
        lambda: cipher.decrypt(ModuleType.DATA_PAGE, framed, 0, 0, 0),
        lambda: cipher.encrypt(ModuleType.DATA_PAGE, b"x", 0, 0, 99999),
        lambda: ModuleCipher(SECRET[:-1], FAAD),
    ]
    for attempt in attempts:
        with pytest.raises(StreamwriteError) as info:
            attempt()
        errors.append(info.value)
    return errors


def test_key_never_in_messages_and_errors_pickle() -> None:
    for err in _all_messages():
        text = str(err) + repr(err)
        assert "TOPSECRET" not in text and SECRET.hex() not in text
        assert err.__cause__ is None or "TOPSECRET" not in repr(err.__cause__)
        clone = pickle.loads(pickle.dumps(err))
        assert type(clone) is type(err) and clone.args == err.args


def test_importing_cipher_does_not_load_anyio() -> None:
    code = "import sys, workers.cipher; print('anyio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
