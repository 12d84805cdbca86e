"""Key tools for Parquet modular encryption: KMS clients, key wrapping, key unwrapping.

Envelope encryption as parquet-java's and Arrow's key tools do it (DESIGN section 5):

- every encrypted column and the footer get a random data encryption key (DEK);
- **single wrapping**: ``wrappedDEK = kms.wrap_key(DEK, master_key_id)``;
- **double wrapping** (default): per master key, a random 16-byte key encryption key (KEK) and a
  random 16-byte KEK id, cached for ``cache_lifetime_seconds``; ``wrappedKEK = kms.wrap_key(KEK,
  master_key_id)``, ``wrappedDEK = base64(nonce || AES-GCM(KEK, aad = raw KEK id)(DEK) || tag)``,
  ``keyEncryptionKeyID = base64(KEK id)``;
- the key metadata stored in the file is PKMT1 JSON (see :mod:`streamwrite.crypto.key_material`).

:class:`InMemoryKms` wraps like parquet-java's test ``InMemoryKMS`` (a ``RemoteKmsClient``:
``base64(nonce || AES-GCM(master key, aad = master key id UTF-8)(key) || tag)``), not like
``LocalWrapKmsClient``, which puts that text inside a ``{"masterKeyVersion", "encryptedKey"}`` JSON.

:class:`ExplicitKeys` is the low-level mode: key metadata is a key id label (UTF-8) and keys come
from a dict.

Key bytes never appear in a message, a ``repr`` or a log line.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from streamwrite.crypto.key_material import (
    AES_KEY_LENGTHS,
    DEFAULT_CACHE_LIFETIME_SECONDS,
    KMS_INSTANCE_DEFAULT,
    Clock,
    KekCache,
    KeyMaterial,
    KmsClient,
    decode_b64,
    decrypt_key_locally,
    encrypt_key_locally,
    external_key_reference,
    kms_unwrap,
    kms_wrap,
    parse_key_material,
)
from streamwrite.errors import ConfigError, EncryptionError, UnsupportedError

__all__ = [
    "ALGORITHMS",
    "load_external_key_material",
    "DEFAULT_CACHE_LIFETIME_SECONDS",
    "EncryptionConfig",
    "ExplicitKeys",
    "InMemoryKms",
    "KekCache",
    "KeyMaterial",
    "KeyUnwrapper",
    "KeyWrapper",
    "KmsClient",
    "parse_key_material",
]

ALGORITHMS = ("AES_GCM_V1", "AES_GCM_CTR_V1")
_DATA_KEY_LENGTHS_BITS = (128, 192, 256)


def _check_aes_key(key: object, what: str) -> bytes:
    if not isinstance(key, bytes | bytearray):
        raise ConfigError(f"The {what} must be bytes, not {type(key).__name__}.")
    if len(key) not in AES_KEY_LENGTHS:
        raise ConfigError(f"The {what} is {len(key)} bytes long; AES needs 16, 24 or 32 bytes.")
    return bytes(key)


class InMemoryKms:
    """A KMS holding master keys in memory, wrapping like parquet-java's ``InMemoryKMS``.

    ``wrap_key`` returns ``base64(nonce[12] || AES-GCM(master key, aad = master key id
    UTF-8)(key) || tag[16])``.

    Args:
        master_keys: ``{master key id: 16, 24 or 32 key bytes}``.

    Raises:
        ConfigError: A master key id is empty or a key has a bad type or length.
    """

    def __init__(self, master_keys: Mapping[str, bytes]) -> None:
        keys: dict[str, bytes] = {}
        for key_id, key in master_keys.items():
            if not isinstance(key_id, str) or not key_id:
                raise ConfigError(f"A master key id must be a non-empty string, not {key_id!r}.")
            keys[key_id] = _check_aes_key(key, f"master key {key_id!r}")
        self._keys = keys

    def __repr__(self) -> str:
        return f"InMemoryKms(master_key_ids={sorted(self._keys)!r})"

    def _master_key(self, master_key_identifier: str) -> bytes:
        key = self._keys.get(master_key_identifier)
        if key is None:
            raise EncryptionError(f"Master key {master_key_identifier!r} is not in the KMS.")
        return key

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        """Wraps a key with a master key.

        Returns:
            The wrapped key as base64 text.

        Raises:
            EncryptionError: The master key id is unknown.
        """
        aad = master_key_identifier.encode("utf-8")
        return encrypt_key_locally(bytes(key_bytes), self._master_key(master_key_identifier), aad)

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        """Unwraps a key wrapped by :meth:`wrap_key` (or by parquet-java's ``InMemoryKMS``).

        Returns:
            The key bytes.

        Raises:
            EncryptionError: Unknown master key id, bad base64, wrong master key or tampered bytes.
        """
        return decrypt_key_locally(
            wrapped_key,
            self._master_key(master_key_identifier),
            master_key_identifier.encode("utf-8"),
            f"key wrapped with master key {master_key_identifier!r}",
        )


@dataclass(frozen=True)
class EncryptionConfig:
    """What a writer needs to encrypt a file with KMS-managed keys.

    Attributes:
        footer_key_id: Master key id of the footer key.
        column_keys: ``{column name: master key id}``; unlisted columns stay plaintext.
        algorithm: ``"AES_GCM_V1"`` or ``"AES_GCM_CTR_V1"``.
        plaintext_footer: Write a signed plaintext footer (``PAR1``) instead of ``PARE``.
        double_wrapping: Wrap data keys with KEKs that the KMS wraps (fewer KMS calls).
        aad_prefix: Optional AAD prefix (e.g. a table name) bound into every module.
        store_aad_prefix: Store the prefix in the file; if false readers must supply it.
        data_key_length_bits: 128, 192 or 256.
        cache_lifetime_seconds: How long a KEK is reused for new data keys.
        kms_instance_id: Written into footer key material (parquet-java's default ``DEFAULT``).
        kms_instance_url: Written into footer key material (default ``DEFAULT``).

    Raises:
        ConfigError: A value is out of range or of the wrong type.
    """

    footer_key_id: str
    column_keys: Mapping[str, str] = field(default_factory=dict)
    algorithm: str = "AES_GCM_V1"
    plaintext_footer: bool = False
    double_wrapping: bool = True
    aad_prefix: bytes | None = None
    store_aad_prefix: bool = True
    data_key_length_bits: int = 128
    cache_lifetime_seconds: float = DEFAULT_CACHE_LIFETIME_SECONDS
    kms_instance_id: str = KMS_INSTANCE_DEFAULT
    kms_instance_url: str = KMS_INSTANCE_DEFAULT

    def __post_init__(self) -> None:
        if not isinstance(self.footer_key_id, str) or not self.footer_key_id:
            raise ConfigError(
                f"footer_key_id must be a non-empty master key id, not {self.footer_key_id!r}."
            )
        columns: dict[str, str] = {}
        for column, key_id in dict(self.column_keys).items():
            if not isinstance(column, str) or not column:
                raise ConfigError(f"A column name in column_keys is invalid: {column!r}.")
            if not isinstance(key_id, str) or not key_id:
                raise ConfigError(f"Column {column!r} has an invalid master key id: {key_id!r}.")
            columns[column] = key_id
        object.__setattr__(self, "column_keys", columns)
        if self.algorithm not in ALGORITHMS:
            raise ConfigError(
                f"Encryption algorithm {self.algorithm!r} is not one of {', '.join(ALGORITHMS)}."
            )
        if self.data_key_length_bits not in _DATA_KEY_LENGTHS_BITS:
            raise ConfigError(
                f"data_key_length_bits is {self.data_key_length_bits!r}; use 128, 192 or 256."
            )
        lifetime = self.cache_lifetime_seconds
        if isinstance(lifetime, bool) or not isinstance(lifetime, int | float) or lifetime <= 0:
            raise ConfigError(f"cache_lifetime_seconds must be positive, not {lifetime!r}.")
        if self.aad_prefix is not None:
            if not isinstance(self.aad_prefix, bytes | bytearray):
                raise ConfigError(
                    f"aad_prefix must be bytes, not {type(self.aad_prefix).__name__}."
                )
            object.__setattr__(self, "aad_prefix", bytes(self.aad_prefix))
        elif not self.store_aad_prefix:
            raise ConfigError("store_aad_prefix=False needs an aad_prefix for readers to supply.")
        for name in ("kms_instance_id", "kms_instance_url"):
            if not isinstance(getattr(self, name), str):
                raise ConfigError(f"{name} must be a string.")

    @property
    def supply_aad_prefix(self) -> bool:
        """True when the AAD prefix is not stored and readers must supply it."""
        return self.aad_prefix is not None and not self.store_aad_prefix

    def __repr__(self) -> str:
        prefix = "None" if self.aad_prefix is None else f"<{len(self.aad_prefix)} bytes>"
        return (
            f"EncryptionConfig(footer_key_id={self.footer_key_id!r}, "
            f"column_keys={dict(self.column_keys)!r}, algorithm={self.algorithm!r}, "
            f"plaintext_footer={self.plaintext_footer!r}, "
            f"double_wrapping={self.double_wrapping!r}, aad_prefix={prefix}, "
            f"store_aad_prefix={self.store_aad_prefix!r}, "
            f"data_key_length_bits={self.data_key_length_bits!r}, "
            f"cache_lifetime_seconds={self.cache_lifetime_seconds!r})"
        )


class KeyWrapper:
    """Data keys and their PKMT1 key metadata for one file being written.

    Keys are made lazily, once per column (and once for the footer), and kept for the life of
    the wrapper, so a live file uses one data key per column across all its commits.

    Args:
        kms: The KMS client that wraps with master keys.
        config: Master key ids and wrapping options.
        kek_cache: KEK cache to share across files; by default a private one with the config's
            lifetime.
        clock: Monotonic clock for the private KEK cache (tests).
    """

    def __init__(
        self,
        kms: KmsClient,
        config: EncryptionConfig,
        *,
        kek_cache: KekCache | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._kms = kms
        self._config = config
        self._kek_cache = (
            kek_cache
            if kek_cache is not None
            else KekCache(config.cache_lifetime_seconds, clock=clock)
        )
        self._footer: tuple[bytes, bytes] | None = None
        self._columns: dict[str, tuple[bytes, bytes]] = {}

    def __repr__(self) -> str:
        return (
            f"KeyWrapper(footer_key_id={self._config.footer_key_id!r}, "
            f"columns={sorted(self._config.column_keys)!r}, "
            f"double_wrapping={self._config.double_wrapping!r})"
        )

    @property
    def kms(self) -> KmsClient:
        """The KMS client that wraps this writer's keys (reopening a file unwraps with it)."""
        return self._kms

    @property
    def config(self) -> EncryptionConfig:
        """The configuration this wrapper was made with."""
        return self._config

    def footer_key(self) -> tuple[bytes, bytes]:
        """Returns ``(data key, key metadata)`` of the footer (PKMT1 JSON, ``isFooterKey`` true).

        Raises:
            EncryptionError: The KMS fails to wrap.
        """
        if self._footer is None:
            dek = self._new_data_key()
            self._footer = (dek, self.wrap_data_key(dek, self._config.footer_key_id, True))
        return self._footer

    def column_key(self, column: str) -> tuple[bytes, bytes] | None:
        """Returns ``(data key, key metadata)`` of ``column``, or None if it stays plaintext.

        Raises:
            EncryptionError: The KMS fails to wrap.
        """
        master_key_id = self._config.column_keys.get(column)
        if master_key_id is None:
            return None
        found = self._columns.get(column)
        if found is None:
            dek = self._new_data_key()
            found = (dek, self.wrap_data_key(dek, master_key_id, False))
            self._columns[column] = found
        return found

    def adopt(self, column: str | None, data_key: bytes, key_metadata: bytes) -> None:
        """Reuses an existing data key and its key metadata (reopening a live file, or copying
        encrypted chunks verbatim). ``column`` None means the footer key.

        Raises:
            ConfigError: The column is not encrypted, the key already exists, or a bad key length.
        """
        key = _check_aes_key(data_key, "adopted data key")
        if column is None:
            if self._footer is not None:
                raise ConfigError("The footer key of this file already exists.")
            self._footer = (key, bytes(key_metadata))
            return
        if column not in self._config.column_keys:
            raise ConfigError(f"Column {column!r} is not encrypted in this configuration.")
        if column in self._columns:
            raise ConfigError(f"The key of column {column!r} already exists.")
        self._columns[column] = (key, bytes(key_metadata))

    def wrap_data_key(self, data_key: bytes, master_key_id: str, is_footer_key: bool) -> bytes:
        """Wraps a given data key into PKMT1 key metadata (single or double, per config).

        Returns:
            The key metadata bytes (compact UTF-8 JSON).

        Raises:
            EncryptionError: The KMS fails to wrap.
        """
        kek_id: str | None = None
        wrapped_kek: str | None = None
        if self._config.double_wrapping:
            kek = self._kek_cache._get_or_create(master_key_id, self._kms)
            wrapped_dek = encrypt_key_locally(data_key, kek.kek, kek.kek_id)
            kek_id = kek.encoded_id
            wrapped_kek = kek.wrapped_kek
        else:
            wrapped_dek = kms_wrap(self._kms, data_key, master_key_id, "data key")
        material = KeyMaterial(
            is_footer_key=is_footer_key,
            master_key_id=master_key_id,
            wrapped_dek=wrapped_dek,
            double_wrapping=self._config.double_wrapping,
            kms_instance_id=self._config.kms_instance_id if is_footer_key else None,
            kms_instance_url=self._config.kms_instance_url if is_footer_key else None,
            kek_id=kek_id,
            wrapped_kek=wrapped_kek,
        )
        return material.to_json()

    def _new_data_key(self) -> bytes:
        return secrets.token_bytes(self._config.data_key_length_bits // 8)


class KeyUnwrapper:
    """Recovers data keys from PKMT1 key metadata (reader side).

    KEKs are cached by (master key id, KEK id) for ``cache_lifetime_seconds``, and so are the
    data keys of key metadata already seen, so a file's columns cost one KMS call per KEK.

    Args:
        kms: The KMS client that unwraps with master keys.
        cache_lifetime_seconds: How long unwrapped KEKs and data keys are kept.
        clock: Monotonic clock (tests).
    """

    def __init__(
        self,
        kms: KmsClient,
        cache_lifetime_seconds: float = DEFAULT_CACHE_LIFETIME_SECONDS,
        *,
        clock: Clock | None = None,
        external_key_material: Mapping[str, str] | None = None,
    ) -> None:
        if isinstance(cache_lifetime_seconds, bool) or cache_lifetime_seconds <= 0:
            raise ConfigError(
                f"cache_lifetime_seconds must be positive, not {cache_lifetime_seconds!r}."
            )
        self._kms = kms
        self._external = dict(external_key_material or {})
        self._lifetime = float(cache_lifetime_seconds)
        self._clock: Clock = clock if clock is not None else time.monotonic
        self._keks: dict[tuple[str, str], tuple[bytes, float]] = {}
        self._deks: dict[bytes, tuple[bytes, float]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"KeyUnwrapper(cache_lifetime_seconds={self._lifetime!r})"

    def unwrap(self, key_metadata: bytes) -> bytes:
        """Returns the data key that ``key_metadata`` (PKMT1 JSON, internal storage) wraps.

        Raises:
            EncryptionError: Malformed key material, KMS failure, wrong master key, tampered
                wrapped keys, or a data key that is not 16, 24 or 32 bytes. Messages name the
                master key id, never a key.
            UnsupportedError: External key material that was not given.
        """
        key_metadata = bytes(key_metadata)
        with self._lock:
            now = self._clock()
            hit = self._deks.get(key_metadata)
            if hit is not None and now - hit[1] < self._lifetime:
                return hit[0]
        reference = external_key_reference(key_metadata)
        if reference is None:
            material = parse_key_material(key_metadata)
        elif reference in self._external:
            material = parse_key_material(self._external[reference].encode("utf-8"), external=True)
        else:
            raise UnsupportedError(
                f"The key material ({reference!r}) is stored outside the file: pass it with "
                "external_key_material=load_external_key_material(...)."
            )
        mk = material.master_key_id
        kind = "footer key" if material.is_footer_key else "column key"
        if material.double_wrapping:
            if material.kek_id is None or material.wrapped_kek is None:  # parse guarantees both
                raise EncryptionError(f"Double-wrapped {kind} material of {mk!r} lacks its KEK.")
            kek = self._kek(mk, material.kek_id, material.wrapped_kek)
            aad = decode_b64(material.kek_id, f"keyEncryptionKeyID of master key {mk!r}")
            dek = decrypt_key_locally(
                material.wrapped_dek, kek, aad, f"{kind} data key under master key {mk!r}"
            )
        else:
            dek = kms_unwrap(self._kms, material.wrapped_dek, mk, f"{kind} data key")
        if len(dek) not in AES_KEY_LENGTHS:
            raise EncryptionError(
                f"The {kind} of master key {mk!r} unwrapped to {len(dek)} bytes, not 16, 24 or 32."
            )
        with self._lock:
            self._deks[key_metadata] = (dek, self._clock())
        return dek

    def _kek(self, master_key_id: str, kek_id: str, wrapped_kek: str) -> bytes:
        cache_key = (master_key_id, kek_id)
        with self._lock:
            now = self._clock()
            hit = self._keks.get(cache_key)
            if hit is not None and now - hit[1] < self._lifetime:
                return hit[0]
        kek = kms_unwrap(self._kms, wrapped_kek, master_key_id, "key encryption key")
        if len(kek) not in AES_KEY_LENGTHS:
            raise EncryptionError(
                f"The key encryption key of master key {master_key_id!r} unwrapped to "
                f"{len(kek)} bytes, not 16, 24 or 32."
            )
        with self._lock:
            self._keks[cache_key] = (kek, self._clock())
        return kek

    def clear(self) -> None:
        """Forgets every cached KEK and data key."""
        with self._lock:
            self._keks.clear()
            self._deks.clear()


class ExplicitKeys:
    """Explicit-keys mode: the caller supplies data keys; key metadata is the key id (UTF-8).

    Args:
        keys: ``{key id: 16, 24 or 32 key bytes}``.
        footer_key_id: Key id of the footer key.
        column_key_ids: ``{column name: key id}``; unlisted columns stay plaintext.

    Raises:
        ConfigError: A key id is empty or unknown, or a key has a bad type or length.
    """

    def __init__(
        self, keys: Mapping[str, bytes], footer_key_id: str, column_key_ids: Mapping[str, str]
    ) -> None:
        checked: dict[str, bytes] = {}
        for key_id, key in keys.items():
            if not isinstance(key_id, str) or not key_id:
                raise ConfigError(f"An explicit key id must be a non-empty string: {key_id!r}.")
            checked[key_id] = _check_aes_key(key, f"explicit key {key_id!r}")
        if footer_key_id not in checked:
            raise ConfigError(f"The footer key id {footer_key_id!r} is not among the keys.")
        for column, key_id in column_key_ids.items():
            if key_id not in checked:
                raise ConfigError(f"Column {column!r} names key id {key_id!r}, not among the keys.")
        self._keys = checked
        self._footer_key_id = footer_key_id
        self._column_key_ids = dict(column_key_ids)

    @property
    def columns(self) -> list[str]:
        """The columns that have a key of their own (the others stay plaintext)."""
        return list(self._column_key_ids)

    def __repr__(self) -> str:
        return (
            f"ExplicitKeys(key_ids={sorted(self._keys)!r}, "
            f"footer_key_id={self._footer_key_id!r}, column_key_ids={self._column_key_ids!r})"
        )

    def footer_key(self) -> tuple[bytes, bytes]:
        """Returns ``(footer key, key metadata = footer key id UTF-8)``."""
        return self._keys[self._footer_key_id], self._footer_key_id.encode("utf-8")

    def column_key(self, column: str) -> tuple[bytes, bytes] | None:
        """Returns ``(column key, key metadata = key id UTF-8)``, or None for plaintext columns."""
        key_id = self._column_key_ids.get(column)
        if key_id is None:
            return None
        return self._keys[key_id], key_id.encode("utf-8")

    def unwrap(self, key_metadata: bytes) -> bytes:
        """Returns the key whose id is ``key_metadata``.

        Raises:
            EncryptionError: The metadata is not UTF-8 or names no known key.
        """
        try:
            key_id = bytes(key_metadata).decode("utf-8")
        except UnicodeDecodeError:
            raise EncryptionError(
                f"Key metadata ({len(key_metadata)} bytes) is not a UTF-8 key id."
            ) from None
        key = self._keys.get(key_id)
        if key is None:
            shown = key_id if len(key_id) <= 64 else key_id[:64] + "..."
            raise EncryptionError(f"Key id {shown!r} from the key metadata is not a known key.")
        return key


def load_external_key_material(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read parquet-java's external key material file (``_KEY_MATERIAL_FOR_<file>.json``).

    Returns:
        ``keyReference -> key material JSON`` for :class:`KeyUnwrapper`'s
        ``external_key_material``.

    Raises:
        EncryptionError: the file is not a JSON object of strings.
    """
    try:
        store = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EncryptionError(f"Cannot read external key material {str(path)!r}: {exc}.") from exc
    if not isinstance(store, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in store.items()
    ):
        raise EncryptionError(
            f"External key material {str(path)!r} is not a JSON object of strings."
        )
    return store
