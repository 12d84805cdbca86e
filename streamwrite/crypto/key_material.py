"""PKMT1 key material: the JSON that parquet-java and Arrow key tools store as key metadata.

Layout (internal storage; key metadata and key material are one flat JSON object, written
compactly, UTF-8, fields in this order, as Arrow's ``KeyMaterial::SerializeToJson`` writes them)::

    {"keyMaterialType":"PKMT1",
     "internalStorage":true,
     "isFooterKey":B,
     ["kmsInstanceID":S, "kmsInstanceURL":S,]      footer keys only
     "masterKeyID":S,
     "wrappedDEK":S,
     "doubleWrapping":B
     [,"keyEncryptionKeyID":S, "wrappedKEK":S]}    double wrapping only

A local key wrap (KMS wrap in parquet-java's ``InMemoryKMS``, and the DEK-by-KEK wrap of double
wrapping) is ``base64(nonce[12] || AES-GCM ciphertext || tag[16])`` with the AAD given by the
caller: the master key id (UTF-8) for a KMS wrap, the raw 16-byte KEK id for a DEK wrap. This is
``KeyToolkit.encryptKeyLocally`` of parquet-java and ``EncryptKeyLocally`` of Arrow.

parquet-java writes the booleans as JSON strings (``"true"``); Arrow and we write JSON booleans.
The parser accepts both. Nothing here ever puts key bytes (wrapped or not) into an error message.

Also here: the :class:`KmsClient` protocol, the KEK write cache and the KMS call wrappers that
turn KMS failures into :class:`~streamwrite.errors.EncryptionError` naming the master key id.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from streamwrite.errors import ConfigError, EncryptionError, StreamwriteError, UnsupportedError

__all__ = [
    "AES_KEY_LENGTHS",
    "DEFAULT_CACHE_LIFETIME_SECONDS",
    "Clock",
    "KekCache",
    "KmsClient",
    "kms_unwrap",
    "kms_wrap",
    "KEK_ID_LENGTH",
    "KEK_LENGTH",
    "KEY_MATERIAL_TYPE",
    "KMS_INSTANCE_DEFAULT",
    "KeyMaterial",
    "decode_b64",
    "decrypt_key_locally",
    "encrypt_key_locally",
    "parse_key_material",
]

KEY_MATERIAL_TYPE = "PKMT1"
KMS_INSTANCE_DEFAULT = "DEFAULT"
KEK_LENGTH = 16
KEK_ID_LENGTH = 16
AES_KEY_LENGTHS = (16, 24, 32)
_NONCE_SIZE = 12
_TAG_SIZE = 16
_MAX_KEY_METADATA_SIZE = 64 * 1024
DEFAULT_CACHE_LIFETIME_SECONDS = 600.0

_F_TYPE = "keyMaterialType"
_F_INTERNAL = "internalStorage"
_F_KEY_REFERENCE = "keyReference"
_F_IS_FOOTER = "isFooterKey"
_F_KMS_ID = "kmsInstanceID"
_F_KMS_URL = "kmsInstanceURL"
_F_MASTER = "masterKeyID"
_F_WRAPPED_DEK = "wrappedDEK"
_F_DOUBLE = "doubleWrapping"
_F_KEK_ID = "keyEncryptionKeyID"
_F_WRAPPED_KEK = "wrappedKEK"


def decode_b64(text: str, what: str) -> bytes:
    """Decodes standard (padded) base64, as ``java.util.Base64.getDecoder()`` writes it.

    Args:
        text: The base64 text.
        what: What the text is, for the error message (e.g. ``"wrappedDEK of master key 'k1'"``).

    Returns:
        The decoded bytes.

    Raises:
        EncryptionError: ``text`` is not valid base64. The message never quotes ``text``.
    """
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise EncryptionError(f"The {what} is not valid base64.") from None


def encrypt_key_locally(key: bytes, wrapping_key: bytes, aad: bytes) -> str:
    """Wraps ``key`` with AES-GCM under ``wrapping_key`` and ``aad``.

    Returns:
        ``base64(nonce[12] || ciphertext || tag[16])`` with a fresh random nonce.

    Raises:
        EncryptionError: ``wrapping_key`` is not 16, 24 or 32 bytes long.
    """
    if len(wrapping_key) not in AES_KEY_LENGTHS:
        raise EncryptionError(
            f"A wrapping key must be 16, 24 or 32 bytes long, not {len(wrapping_key)}."
        )
    nonce = os.urandom(_NONCE_SIZE)
    sealed = AESGCM(wrapping_key).encrypt(nonce, key, aad)
    return base64.b64encode(nonce + sealed).decode("ascii")


def decrypt_key_locally(encoded: str, wrapping_key: bytes, aad: bytes, what: str) -> bytes:
    """Unwraps a key made by :func:`encrypt_key_locally`.

    Args:
        encoded: ``base64(nonce || ciphertext || tag)``.
        wrapping_key: The AES key that wrapped it.
        aad: The AAD it was wrapped with.
        what: Which key this is, for error messages (names a master key id, never key bytes).

    Returns:
        The unwrapped key bytes.

    Raises:
        EncryptionError: Bad base64, too short, wrong wrapping key, wrong AAD or tampered bytes.
    """
    if len(wrapping_key) not in AES_KEY_LENGTHS:
        raise EncryptionError(
            f"Cannot unwrap the {what}: the wrapping key is {len(wrapping_key)} bytes long, "
            "not 16, 24 or 32."
        )
    raw = decode_b64(encoded, what)
    if len(raw) < _NONCE_SIZE + _TAG_SIZE:
        raise EncryptionError(
            f"The {what} is {len(raw)} bytes long, shorter than a nonce and a tag (28 bytes)."
        )
    try:
        return AESGCM(wrapping_key).decrypt(raw[:_NONCE_SIZE], raw[_NONCE_SIZE:], aad)
    except InvalidTag:
        raise EncryptionError(
            f"Cannot unwrap the {what}: authentication failed "
            "(wrong master key, wrong key id, or tampered bytes)."
        ) from None


@dataclass(frozen=True, slots=True)
class KeyMaterial:
    """One PKMT1 key material object (internal storage). Holds only wrapped keys.

    ``kms_instance_id`` / ``kms_instance_url`` are ``None`` for column keys; ``kek_id`` and
    ``wrapped_kek`` (both base64 text) are ``None`` in single wrapping.
    """

    is_footer_key: bool
    master_key_id: str
    wrapped_dek: str
    double_wrapping: bool
    kms_instance_id: str | None = None
    kms_instance_url: str | None = None
    kek_id: str | None = None
    wrapped_kek: str | None = None

    def to_json(self) -> bytes:
        """Serializes the material the way Arrow's key tools do.

        Returns:
            Compact UTF-8 JSON, fields in the order of the module docstring.

        Raises:
            EncryptionError: A field required by the mode (kms fields, KEK fields) is missing.
        """
        obj: dict[str, Any] = {_F_TYPE: KEY_MATERIAL_TYPE, _F_INTERNAL: True}
        obj[_F_IS_FOOTER] = self.is_footer_key
        if self.is_footer_key:
            if self.kms_instance_id is None or self.kms_instance_url is None:
                raise EncryptionError("Footer key material needs a KMS instance id and URL.")
            obj[_F_KMS_ID] = self.kms_instance_id
            obj[_F_KMS_URL] = self.kms_instance_url
        obj[_F_MASTER] = self.master_key_id
        obj[_F_WRAPPED_DEK] = self.wrapped_dek
        obj[_F_DOUBLE] = self.double_wrapping
        if self.double_wrapping:
            if self.kek_id is None or self.wrapped_kek is None:
                raise EncryptionError("Double-wrapped key material needs a KEK id and wrapped KEK.")
            obj[_F_KEK_ID] = self.kek_id
            obj[_F_WRAPPED_KEK] = self.wrapped_kek
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _get_bool(obj: dict[str, Any], name: str, default: bool | None = None) -> bool:
    value = obj.get(name)
    if value is None and default is not None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise EncryptionError(f"Key material field {name!r} is missing or not a boolean.")


def _get_str(obj: dict[str, Any], name: str) -> str:
    value = obj.get(name)
    if not isinstance(value, str):
        raise EncryptionError(f"Key material field {name!r} is missing or not a string.")
    return value


def external_key_reference(key_metadata: bytes) -> str | None:
    """The ``keyReference`` of key metadata whose material is stored outside the file
    (``internalStorage`` false; parquet-java's ``_KEY_MATERIAL_FOR_<file>.json``), else None.

    Raises:
        EncryptionError: external key metadata without a string ``keyReference``.
    """
    try:
        obj = json.loads(bytes(key_metadata).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None  # parse_key_material reports it
    if not isinstance(obj, dict) or obj.get(_F_TYPE) != KEY_MATERIAL_TYPE:
        return None
    if _get_bool(obj, _F_INTERNAL, default=False):
        return None
    return _get_str(obj, _F_KEY_REFERENCE)


def parse_key_material(key_metadata: bytes, *, external: bool = False) -> KeyMaterial:
    """Parses PKMT1 key metadata with internally stored key material.

    Booleans may be JSON booleans (Arrow, streamwrite) or strings (parquet-java). A missing
    ``internalStorage`` is read as external storage, as parquet-java does.

    Args:
        key_metadata: The ``key_metadata`` bytes of a footer or column (or, with ``external``,
            the material a ``keyReference`` points to in an external key material store).
        external: The material comes from an external store (it has no ``internalStorage``).

    Returns:
        The parsed material (wrapped keys only).

    Raises:
        EncryptionError: Not UTF-8 JSON, not an object, not PKMT1, or a field missing or of the
            wrong type. The message never quotes the metadata.
        UnsupportedError: The key material is stored externally (``internalStorage`` false).
    """
    if len(key_metadata) > _MAX_KEY_METADATA_SIZE:
        raise EncryptionError(
            f"Key metadata of {len(key_metadata)} bytes exceeds the {_MAX_KEY_METADATA_SIZE}-byte "
            "limit for PKMT1 key material."
        )
    try:
        obj = json.loads(bytes(key_metadata).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise EncryptionError(
            f"Key metadata ({len(key_metadata)} bytes) is not PKMT1 key material: "
            "it is not UTF-8 JSON."
        ) from None
    if not isinstance(obj, dict):
        raise EncryptionError("Key metadata is not PKMT1 key material: it is not a JSON object.")
    material_type = obj.get(_F_TYPE)
    if material_type != KEY_MATERIAL_TYPE:
        shown = material_type if isinstance(material_type, str) and len(material_type) < 40 else "?"
        raise EncryptionError(f"Key material type {shown!r} is not supported (expected 'PKMT1').")
    if not external and not _get_bool(obj, _F_INTERNAL, default=False):
        raise UnsupportedError(
            "Key material stored outside the file (internalStorage false) is not supported."
        )
    is_footer_key = _get_bool(obj, _F_IS_FOOTER)
    kms_id = kms_url = None
    if is_footer_key:
        kms_id = _get_str(obj, _F_KMS_ID)
        kms_url = _get_str(obj, _F_KMS_URL)
    master_key_id = _get_str(obj, _F_MASTER)
    wrapped_dek = _get_str(obj, _F_WRAPPED_DEK)
    double = _get_bool(obj, _F_DOUBLE)
    kek_id = wrapped_kek = None
    if double:
        kek_id = _get_str(obj, _F_KEK_ID)
        wrapped_kek = _get_str(obj, _F_WRAPPED_KEK)
    return KeyMaterial(
        is_footer_key=is_footer_key,
        master_key_id=master_key_id,
        wrapped_dek=wrapped_dek,
        double_wrapping=double,
        kms_instance_id=kms_id,
        kms_instance_url=kms_url,
        kek_id=kek_id,
        wrapped_kek=wrapped_kek,
    )


Clock = Callable[[], float]


@runtime_checkable
class KmsClient(Protocol):
    """A key management service: wraps and unwraps keys with master keys it holds.

    Same shape as ``pyarrow.parquet.encryption.KmsClient`` and parquet-java's ``KmsClient``.
    """

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        """Returns ``key_bytes`` wrapped by the master key, as text to store in key material."""
        ...

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        """Returns the key that ``wrapped_key`` wraps."""
        ...


@dataclass(frozen=True, slots=True)
class _Kek:
    kek: bytes = field(repr=False)
    kek_id: bytes = field(repr=False)
    wrapped_kek: str = field(repr=False)
    created: float

    @property
    def encoded_id(self) -> str:
        return base64.b64encode(self.kek_id).decode("ascii")


class KekCache:
    """KEKs for writing, one per master key id, reused until ``lifetime_seconds`` pass.

    Share one cache between the :class:`KeyWrapper` objects of one KMS client to reuse KEKs
    across files, as parquet-java's per-token KEK write cache does. Thread-safe.

    Args:
        lifetime_seconds: How long a KEK wraps new data keys after it was made.
        clock: Monotonic seconds (injectable for tests).
    """

    def __init__(
        self,
        lifetime_seconds: float = DEFAULT_CACHE_LIFETIME_SECONDS,
        *,
        clock: Clock | None = None,
    ) -> None:
        if isinstance(lifetime_seconds, bool) or lifetime_seconds <= 0:
            raise ConfigError(f"A cache lifetime must be positive, not {lifetime_seconds!r}.")
        self._lifetime = float(lifetime_seconds)
        self._clock: Clock = clock if clock is not None else time.monotonic
        self._keks: dict[str, _Kek] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"KekCache(lifetime_seconds={self._lifetime!r}, entries={len(self._keks)})"

    def _get_or_create(self, master_key_id: str, kms: KmsClient) -> _Kek:
        """Returns the live KEK of ``master_key_id``, making and KMS-wrapping a new one if none
        (the package's own: :class:`KeyWrapper` calls it).

        Raises:
            EncryptionError: The KMS fails to wrap the new KEK.
        """
        with self._lock:
            now = self._clock()
            kek = self._keks.get(master_key_id)
            if kek is not None and now - kek.created < self._lifetime:
                return kek
            kek_bytes = secrets.token_bytes(KEK_LENGTH)
            kek_id = secrets.token_bytes(KEK_ID_LENGTH)
            wrapped = kms_wrap(kms, kek_bytes, master_key_id, "key encryption key")
            kek = _Kek(kek_bytes, kek_id, wrapped, now)
            self._keks[master_key_id] = kek
            return kek

    def clear(self) -> None:
        """Forgets every KEK (e.g. after master key rotation)."""
        with self._lock:
            self._keks.clear()


def kms_wrap(kms: KmsClient, key: bytes, master_key_id: str, what: str) -> str:
    try:
        wrapped = kms.wrap_key(key, master_key_id)
    except StreamwriteError:
        raise
    except Exception as exc:
        raise EncryptionError(
            f"The KMS failed to wrap a {what} with master key {master_key_id!r} "
            f"({type(exc).__name__})."
        ) from exc
    if not isinstance(wrapped, str):
        raise EncryptionError(
            f"The KMS returned {type(wrapped).__name__}, not str, wrapping a {what} "
            f"with master key {master_key_id!r}."
        )
    return wrapped


def kms_unwrap(kms: KmsClient, wrapped: str, master_key_id: str, what: str) -> bytes:
    try:
        key = kms.unwrap_key(wrapped, master_key_id)
    except EncryptionError as exc:
        raise EncryptionError(
            f"Cannot unwrap the {what} of master key {master_key_id!r}: {exc}"
        ) from None
    except StreamwriteError:
        raise
    except Exception as exc:
        raise EncryptionError(
            f"The KMS failed to unwrap the {what} of master key {master_key_id!r} "
            f"({type(exc).__name__})."
        ) from exc
    if not isinstance(key, bytes | bytearray):
        raise EncryptionError(
            f"The KMS returned {type(key).__name__}, not bytes, unwrapping the {what} "
            f"of master key {master_key_id!r}."
        )
    return bytes(key)
