"""Reader-side Parquet modular encryption: keys, the footer, column metadata and module ciphers.

Implements the reading half of the Parquet format spec, section 7.3 "Parquet Modular
Encryption" (parquet-format ``Encryption.md``), for :class:`streamwrite.ParquetFile`::

    encrypted footer  := ... FileCryptoMetaData footer_module len(u32 LE) "PARE"
                         footer_module = GCM(footer key, FOOTER AAD)(FileMetaData)
    plaintext footer  := ... FileMetaData nonce(12) tag(16) len(u32 LE) "PAR1"
                         FileMetaData.encryption_algorithm set; nonce || tag = signature
    column chunk      := crypto_metadata (footer key | column key + key_metadata)
                         [encrypted_column_metadata]
                         encrypted_column_metadata = GCM(key, COLUMN_META_DATA)(ColumnMetaData)

Keys come from a :class:`KeyRetriever` (anything with ``unwrap(key_metadata) -> bytes``:
:class:`streamwrite.crypto.KeyUnwrapper` over a KMS, :class:`streamwrite.crypto.ExplicitKeys`),
or from explicit keys by column name (:meth:`DecryptionConfig.from_keys`). The row group ordinal
of every module AAD is ``RowGroup.ordinal`` (the row group's index when absent), the column
ordinal the chunk's index in its row group.

Every failure is an :class:`~streamwrite.errors.EncryptionError` naming the module (type, row
group, column, page) or the column whose key is missing; key bytes never appear in a message or
a ``repr``. Decrypted Thrift modules may be followed by zero padding (parquet-java): decoding
stops at the struct's end.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

from streamwrite.crypto.kms import DEFAULT_CACHE_LIFETIME_SECONDS, KeyUnwrapper, KmsClient
from streamwrite.errors import (
    ConfigError,
    EncryptionError,
    FormatError,
    LimitError,
    StreamwriteError,
    UnsupportedError,
)
from streamwrite.format import structs as t
from streamwrite.format.aad import ModuleType
from streamwrite.format.thrift.codec import deserialize
from workers.cipher import ModuleCipher, resolve_algorithm

__all__ = [
    "ChunkDecryptor",
    "DecryptionConfig",
    "FileDecryptor",
    "KeyRetriever",
    "StaticKeys",
]

_AES_KEY_LENGTHS = (16, 24, 32)
_T = TypeVar("_T")


@runtime_checkable
class KeyRetriever(Protocol):
    """Anything that turns a module key's ``key_metadata`` into the key bytes."""

    def unwrap(self, key_metadata: bytes) -> bytes:
        """Returns the 16, 24 or 32 key bytes ``key_metadata`` designates."""
        ...


def _check_key(key: object, what: str) -> bytes:
    if not isinstance(key, bytes | bytearray):
        raise ConfigError(f"The {what} must be bytes, not {type(key).__name__}.")
    if len(key) not in _AES_KEY_LENGTHS:
        raise ConfigError(f"The {what} is {len(key)} bytes long; AES needs 16, 24 or 32 bytes.")
    return bytes(key)


class StaticKeys:
    """Explicit keys by role: the footer key and one key per column name.

    A column's key is looked up by its dotted ``path_in_schema`` first (then by the paths of the
    groups above it, a struct, list or map name covering its leaves), then by its key metadata
    read as a UTF-8 label (so ``{"kc1": key}`` works for files whose key metadata is a key id).

    Args:
        footer_key: The footer key, or None when only plaintext-footer columns are read (the
            footer signature is then not checked).
        column_keys: ``{column name or key label: key}``.

    Raises:
        ConfigError: A key is not 16, 24 or 32 bytes, or a column name is empty.
    """

    def __init__(self, footer_key: bytes | None, column_keys: Mapping[str, bytes]) -> None:
        self._footer = None if footer_key is None else _check_key(footer_key, "footer key")
        columns: dict[str, bytes] = {}
        for name, key in dict(column_keys).items():
            if not isinstance(name, str) or not name:
                raise ConfigError(f"A column name in column_keys is invalid: {name!r}.")
            columns[name] = _check_key(key, f"key of column {name!r}")
        self._columns = columns

    def __repr__(self) -> str:
        footer = "None" if self._footer is None else f"<{len(self._footer) * 8}-bit key hidden>"
        return f"StaticKeys(footer_key={footer}, columns={sorted(self._columns)!r})"

    @property
    def has_footer_key(self) -> bool:
        """True when a footer key was given."""
        return self._footer is not None

    def footer_key(self) -> bytes:
        """Returns the footer key.

        Raises:
            EncryptionError: No footer key was given.
        """
        if self._footer is None:
            raise EncryptionError("No footer key was given (DecryptionConfig.from_keys).")
        return self._footer

    def column_key(self, column: str, key_metadata: bytes | None) -> bytes:
        """Returns the key of ``column`` (by its dotted name or that of a group above it, the
        most specific first; else by key metadata label).

        Raises:
            EncryptionError: No key was given for the column.
        """
        parts = column.split(".")
        key = next(
            (
                self._columns[name]
                for name in (".".join(parts[:size]) for size in range(len(parts), 0, -1))
                if name in self._columns
            ),
            None,
        )
        if key is None and key_metadata:
            key = self._columns.get(bytes(key_metadata).decode("utf-8", "replace"))
        if key is None:
            raise EncryptionError(f"No key was given for column {column!r}.")
        return key

    def unwrap(self, key_metadata: bytes) -> bytes:
        """Returns the column key whose name or label is ``key_metadata`` (UTF-8).

        Raises:
            EncryptionError: No key has that label.
        """
        label = bytes(key_metadata).decode("utf-8", "replace")
        key = self._columns.get(label)
        if key is None:
            shown = label if len(label) <= 64 else label[:64] + "..."
            raise EncryptionError(f"No key was given for the key label {shown!r}.")
        return key


@dataclass(frozen=True, repr=False)
class DecryptionConfig:
    """How to decrypt encrypted Parquet files.

    Attributes:
        keys: Turns key metadata into keys (``KeyUnwrapper(kms)``, ``ExplicitKeys(...)``,
            :class:`StaticKeys`).
        aad_prefix: The AAD prefix to supply (files written with ``supply_aad_prefix``); when
            the file stores one, it must be equal.

    Raises:
        ConfigError: ``keys`` has no ``unwrap`` method, or ``aad_prefix`` is not bytes.
    """

    keys: KeyRetriever
    aad_prefix: bytes | None = None

    def __post_init__(self) -> None:
        if not callable(getattr(self.keys, "unwrap", None)):
            raise ConfigError(
                f"DecryptionConfig keys must have an unwrap(key_metadata) method; "
                f"a {type(self.keys).__name__} has none."
            )
        if self.aad_prefix is not None:
            if not isinstance(self.aad_prefix, bytes | bytearray):
                raise ConfigError(
                    f"aad_prefix must be bytes, not {type(self.aad_prefix).__name__}."
                )
            object.__setattr__(self, "aad_prefix", bytes(self.aad_prefix))

    def __repr__(self) -> str:
        prefix = "None" if self.aad_prefix is None else f"<{len(self.aad_prefix)} bytes>"
        return f"DecryptionConfig(keys={self.keys!r}, aad_prefix={prefix})"

    @classmethod
    def from_kms(
        cls,
        kms: KmsClient,
        *,
        aad_prefix: bytes | None = None,
        cache_lifetime_seconds: float = DEFAULT_CACHE_LIFETIME_SECONDS,
        external_key_material: Mapping[str, str] | None = None,
    ) -> DecryptionConfig:
        """Keys unwrapped from PKMT1 key material (parquet-java / Arrow key tools) by a KMS.

        ``external_key_material`` holds material stored outside the file
        (:func:`streamwrite.crypto.load_external_key_material`).

        Returns:
            A config over ``KeyUnwrapper(kms, cache_lifetime_seconds)``.
        """
        unwrapper = KeyUnwrapper(
            kms, cache_lifetime_seconds, external_key_material=external_key_material
        )
        return cls(unwrapper, aad_prefix)

    @classmethod
    def from_keys(
        cls,
        *,
        footer_key: bytes | None = None,
        column_keys: Mapping[str, bytes] | None = None,
        aad_prefix: bytes | None = None,
    ) -> DecryptionConfig:
        """Explicit keys: the footer key and keys by column name (key metadata is ignored, or
        used as a label when no column has the name).

        Returns:
            A config over :class:`StaticKeys`.

        Raises:
            ConfigError: A key is not 16, 24 or 32 bytes.
        """
        return cls(StaticKeys(footer_key, column_keys or {}), aad_prefix)

    def footer_key(self, key_metadata: bytes | None) -> bytes:
        """Returns the footer key.

        Raises:
            EncryptionError: The key cannot be retrieved or has a bad length.
            UnsupportedError: External key material.
        """
        keys = self.keys
        if isinstance(keys, StaticKeys):
            return keys.footer_key()
        return _retrieve(keys, key_metadata, "the footer key")

    def column_key(self, column: str, key_metadata: bytes | None) -> bytes:
        """Returns the key of ``column`` (dotted path).

        Raises:
            EncryptionError: The key cannot be retrieved or has a bad length.
            UnsupportedError: External key material.
        """
        keys = self.keys
        if isinstance(keys, StaticKeys):
            return keys.column_key(column, key_metadata)
        return _retrieve(keys, key_metadata, f"the key of column {column!r}")

    @property
    def can_verify_footer(self) -> bool:
        """False only for explicit keys without a footer key."""
        return not isinstance(self.keys, StaticKeys) or self.keys.has_footer_key


def _retrieve(keys: KeyRetriever, key_metadata: bytes | None, what: str) -> bytes:
    try:
        key = keys.unwrap(bytes(key_metadata or b""))
    except UnsupportedError:
        raise
    except StreamwriteError as exc:
        raise EncryptionError(f"Cannot retrieve {what}: {exc}") from None
    except Exception as exc:  # a user's retriever: its message might hold secrets
        raise EncryptionError(
            f"Cannot retrieve {what}: the key retriever raised {type(exc).__name__}."
        ) from None
    if not isinstance(key, bytes | bytearray) or len(key) not in _AES_KEY_LENGTHS:
        size = len(key) if isinstance(key, bytes | bytearray) else type(key).__name__
        raise EncryptionError(f"The retrieved {what} is not 16, 24 or 32 bytes ({size}).")
    return bytes(key)


def decode_module_struct(cls: type[_T], plain: bytes, what: str) -> _T:
    """Decodes a decrypted Thrift module, stopping at its end (zero padding may follow).

    Raises:
        FormatError: The plaintext is not a valid ``cls`` (it authenticated, so the writer
            encrypted bad bytes).
    """
    try:
        obj, _ = deserialize(cls, plain)
    except (FormatError, LimitError) as exc:
        raise FormatError(f"{what} decrypted but does not decode as {cls.__name__}: {exc}") from exc
    return obj


@dataclass(frozen=True, slots=True)
class ChunkDecryptor:
    """The cipher of one encrypted column chunk and the ordinals of its module AADs."""

    cipher: ModuleCipher
    row_group_ordinal: int
    column_ordinal: int
    where: str

    def decrypt(
        self, module_type: ModuleType, buf: bytes | memoryview, page_ordinal: int = -1
    ) -> tuple[bytes, int]:
        """Decrypts the module at the start of ``buf``.

        Returns:
            The plaintext and the bytes the module took (length prefix included).

        Raises:
            EncryptionError: Truncated, tampered, moved, or wrong key; the message names the
                chunk and the module (type, row group, column, page ordinals).
        """
        try:
            return self.cipher.decrypt(
                module_type, buf, self.row_group_ordinal, self.column_ordinal, page_ordinal
            )
        except EncryptionError as exc:
            raise EncryptionError(f"{self.where}: {exc}") from None
        except (LimitError, ConfigError) as exc:  # an ordinal out of the i16 range
            raise EncryptionError(
                f"{self.where}: the {module_type.name} module cannot be decrypted: {exc}"
            ) from None

    def uses_ctr(self, module_type: ModuleType) -> bool:
        """True when ``module_type`` is AES-CTR (unauthenticated page bodies, AES_GCM_CTR_V1)."""
        return self.cipher.uses_ctr(module_type)


class FileDecryptor:
    """The decryption state of one file: algorithm, file AAD, footer key and column ciphers.

    Args:
        config: Keys and AAD prefix.
        algorithm: ``FileCryptoMetaData.encryption_algorithm`` or
            ``FileMetaData.encryption_algorithm``.
        footer_key_metadata: ``FileCryptoMetaData.key_metadata`` or
            ``FileMetaData.footer_signing_key_metadata``.

    Raises:
        EncryptionError: Unknown algorithm, missing or different AAD prefix.
    """

    def __init__(
        self,
        config: DecryptionConfig,
        algorithm: t.EncryptionAlgorithm,
        footer_key_metadata: bytes | None,
    ) -> None:
        self.config = config
        self.algorithm, self._file_aad = resolve_algorithm(algorithm, config.aad_prefix)
        self._footer_key_metadata = footer_key_metadata
        self._footer: ModuleCipher | None = None
        self._ciphers: dict[bytes, ModuleCipher] = {}

    def __repr__(self) -> str:
        return f"FileDecryptor(algorithm={self.algorithm.name}, config={self.config!r})"

    def footer_cipher(self) -> ModuleCipher:
        """Returns the cipher of the footer key.

        Raises:
            EncryptionError: The footer key cannot be retrieved.
        """
        if self._footer is None:
            key = self.config.footer_key(self._footer_key_metadata)
            self._footer = ModuleCipher(key, self._file_aad, self.algorithm)
        return self._footer

    def decrypt_footer(self, module: memoryview) -> t.FileMetaData:
        """Decrypts and decodes the encrypted footer module (``PARE`` files).

        Returns:
            The FileMetaData.

        Raises:
            EncryptionError: Wrong footer key or AAD prefix, tampered footer, or the module
                does not fill the footer exactly.
            FormatError: The plaintext is not a FileMetaData.
        """
        plain, used = self.footer_cipher().decrypt(ModuleType.FOOTER, module)
        if used != len(module):
            raise EncryptionError(
                f"The encrypted FOOTER module takes {used} bytes of the {len(module)} the "
                "footer length leaves for it."
            )
        return decode_module_struct(t.FileMetaData, plain, "The encrypted FOOTER module")

    def verify_footer(self, footer: memoryview, signature: memoryview) -> None:
        """Checks the signature of a plaintext footer when the footer key is available.

        Raises:
            EncryptionError: Wrong footer key or AAD prefix, or a tampered footer.
        """
        if self.config.can_verify_footer:
            self.footer_cipher().verify_footer(footer, signature)

    def chunk(
        self,
        crypto: t.ColumnCryptoMetaData,
        row_group_ordinal: int,
        column_ordinal: int,
        column: str,
        where: str,
    ) -> ChunkDecryptor:
        """Returns the decryptor of one encrypted column chunk.

        Raises:
            EncryptionError: The key cannot be retrieved, or the crypto metadata names neither
                the footer key nor a column key.
            UnsupportedError: External key material.
        """
        if crypto.ENCRYPTION_WITH_COLUMN_KEY is not None:
            key_metadata = crypto.ENCRYPTION_WITH_COLUMN_KEY.key_metadata
            cache = b"c" + column.encode() + b"\0" + bytes(key_metadata or b"")
            cipher = self._ciphers.get(cache)
            if cipher is None:
                key = self.config.column_key(column, key_metadata)
                cipher = ModuleCipher(key, self._file_aad, self.algorithm)
                self._ciphers[cache] = cipher
        elif crypto.ENCRYPTION_WITH_FOOTER_KEY is not None:
            cipher = self.footer_cipher()
        else:
            raise EncryptionError(f"{where}: its crypto metadata names no key.")
        return ChunkDecryptor(cipher, row_group_ordinal, column_ordinal, where)

    def column_metadata(
        self, chunk: ChunkDecryptor, encrypted: bytes, column: str
    ) -> t.ColumnMetaData:
        """Decrypts a chunk's ``encrypted_column_metadata`` (COLUMN_META_DATA module).

        Returns:
            The full ColumnMetaData.

        Raises:
            EncryptionError: Wrong key, tampered or moved metadata, or metadata of another
                column.
            FormatError: The plaintext is not a ColumnMetaData.
        """
        plain, used = chunk.decrypt(ModuleType.COLUMN_META_DATA, encrypted)
        if used != len(encrypted):
            raise EncryptionError(
                f"{chunk.where}: the COLUMN_META_DATA module takes {used} of its "
                f"{len(encrypted)} bytes."
            )
        meta = decode_module_struct(
            t.ColumnMetaData, plain, f"{chunk.where}: the COLUMN_META_DATA module"
        )
        path = ".".join(meta.path_in_schema or [])
        if path != column:
            raise EncryptionError(
                f"{chunk.where}: its decrypted ColumnMetaData is for column {path!r}."
            )
        return meta
