"""Encryption of nested leaves: keys by dotted leaf path or by a group covering its leaves."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.crypto import EncryptionConfig, ExplicitKeys, InMemoryKms, KeyWrapper
from streamwrite.crypto.decryption import StaticKeys
from streamwrite.crypto.encryption import FileEncryption, covering_names
from streamwrite.errors import ConfigError

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("s", pa.struct([pa.field("a", pa.int64()), pa.field("b", pa.string())])),
        pa.field("l", pa.list_(pa.float64())),
        pa.field("m", pa.map_(pa.string(), pa.int32())),
    ]
)
PATHS = [spec.path_in_schema for spec in arrow_to_parquet(SCHEMA).columns]
LEAVES = ["id", "s.a", "s.b", "l.list.element", "m.key_value.key", "m.key_value.value"]
KEYS = {name: os.urandom(16) for name in ("kf", "k1", "k2", "k3")}


def test_covering_names_most_specific_first() -> None:
    found, unused = covering_names(["s", "s.b", "m", "zz", "l.list"], PATHS)
    assert found == {
        "s.a": "s",
        "s.b": "s.b",
        "l.list.element": "l.list",
        "m.key_value.key": "m",
        "m.key_value.value": "m",
    }
    assert unused == ["zz"]


def _encryptor(column_keys: dict[str, str], footer_key_columns: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    encryption = FileEncryption(
        ExplicitKeys(KEYS, "kf", column_keys), footer_key_columns=footer_key_columns
    )
    return encryption._open_file(PATHS)


def test_group_key_covers_its_leaves_and_a_leaf_key_wins() -> None:
    encryptor = _encryptor({"s": "k1", "s.b": "k2", "m.key_value.value": "k3"}, ("l",))
    metadata = [encryptor._crypto_metadata[i] for i in range(len(LEAVES))]
    assert metadata[0] is None and encryptor.column_cipher(0) is None
    with_key = {
        LEAVES[i]: (
            m.ENCRYPTION_WITH_COLUMN_KEY.path_in_schema,
            m.ENCRYPTION_WITH_COLUMN_KEY.key_metadata,
        )
        for i, m in enumerate(metadata)
        if m is not None and m.ENCRYPTION_WITH_COLUMN_KEY is not None
    }
    assert with_key == {
        "s.a": (["s", "a"], b"k1"),
        "s.b": (["s", "b"], b"k2"),
        "m.key_value.value": (["m", "key_value", "value"], b"k3"),
    }
    footer = metadata[3]
    assert footer is not None and footer.ENCRYPTION_WITH_FOOTER_KEY is not None
    assert encryptor.column_cipher(3) is encryptor.footer_cipher
    assert metadata[4] is None  # the map's key stays plaintext


def test_a_leaf_in_footer_key_columns_beats_its_group_key() -> None:
    encryptor = _encryptor({"s": "k1"}, ("s.b",))
    a, b = encryptor._crypto_metadata[1], encryptor._crypto_metadata[2]
    assert a is not None and a.ENCRYPTION_WITH_COLUMN_KEY is not None
    assert b is not None and b.ENCRYPTION_WITH_FOOTER_KEY is not None


def test_kms_group_key_shares_one_data_key() -> None:
    kms = InMemoryKms({"mf": os.urandom(16), "mc": os.urandom(16)})
    wrapper = KeyWrapper(kms, EncryptionConfig(footer_key_id="mf", column_keys={"m": "mc"}))
    encryptor = FileEncryption(wrapper)._open_file(PATHS)
    key_meta = [
        m.ENCRYPTION_WITH_COLUMN_KEY.key_metadata
        for m in encryptor._crypto_metadata
        if m is not None and m.ENCRYPTION_WITH_COLUMN_KEY is not None
    ]
    assert len(key_meta) == 2 and key_meta[0] == key_meta[1]


def test_unknown_names_are_refused_with_the_leaf_paths() -> None:
    with pytest.raises(ConfigError) as info:
        _encryptor({"s.c": "k1"})
    assert "['s.c']" in str(info.value)
    assert "l.list.element" in str(info.value)
    with pytest.raises(ConfigError, match=r"\['list'\]"):
        _encryptor({}, ("list",))


def test_dotted_names_stay_accepted() -> None:
    """Callers that pass dotted leaf names (split at the dots) get the same encryptor."""
    encryption = FileEncryption(ExplicitKeys(KEYS, "kf", {"m": "k1"}))
    encryptor = encryption._open_file(LEAVES)
    meta = encryptor._crypto_metadata[5]
    assert meta is not None and meta.ENCRYPTION_WITH_COLUMN_KEY is not None
    assert meta.ENCRYPTION_WITH_COLUMN_KEY.path_in_schema == ["m", "key_value", "value"]


def test_static_decryption_keys_by_group() -> None:
    keys = StaticKeys(footer_key=KEYS["kf"], column_keys={"s": KEYS["k1"], "s.b": KEYS["k2"]})
    assert keys.column_key("s.a", None) == KEYS["k1"]
    assert keys.column_key("s.b", None) == KEYS["k2"]
