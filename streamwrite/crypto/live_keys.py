"""The keys of an encrypted live file: open its footers, resume its encryptor (DESIGN 3, 5).

A live file keeps one ``aad_file_unique`` and one data key per column for its whole life. On
reopen, the newest committed footer gives everything but the key bytes::

    FileCryptoMetaData (PARE)             algorithm, aad_file_unique, stored AAD prefix,
    | FileMetaData.encryption_algorithm   footer key metadata
      + footer_signing_key_metadata (PAR1, signed plaintext footer)
    ColumnChunk.crypto_metadata           per column: plaintext, footer key, or column key
      of the newest row group             with its key metadata

The key metadata is unwrapped by the caller's key source (``KeyUnwrapper`` over the KMS of a
``KeyWrapper``, ``ExplicitKeys``, or a ``DecryptionConfig``) and adopted by a fresh
``KeyWrapper`` that never calls a KMS (:meth:`~streamwrite.crypto.KeyWrapper.adopt`), so every
later commit encrypts with the same data keys, AAD prefix and ``aad_file_unique``. A file with no
row group yet records no column keys: reopening it needs ``encryption=``, whose key source
supplies them.

Key bytes never appear in a message or a ``repr``.
"""

from __future__ import annotations

from collections.abc import Sequence

from streamwrite.crypto.decryption import DecryptionConfig, FileDecryptor
from streamwrite.crypto.encryption import (
    FileEncryption,
    FileEncryptor,
    LeafColumn,
    covering_names,
)
from streamwrite.crypto.kms import EncryptionConfig, ExplicitKeys, KeyUnwrapper, KeyWrapper
from streamwrite.errors import ConfigError, EncryptionError
from streamwrite.format import structs as t
from streamwrite.format.thrift.codec import serialize
from streamwrite.layout.appender import ColumnMetaOf
from streamwrite.layout.recovery import FooterVersion
from workers.cipher import Algorithm

__all__ = ["LiveKeys", "decryption_for"]


class _NoKms:
    """The KMS of a resumed key source: every key is adopted, so it is never asked."""

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        raise EncryptionError("A resumed live file makes no new data keys.")

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        raise EncryptionError("A resumed live file unwraps no keys through this KMS.")


def decryption_for(encryption: FileEncryption) -> DecryptionConfig:
    """A DecryptionConfig that unwraps the key metadata ``encryption``'s key source writes."""
    keys = encryption.keys
    if isinstance(keys, ExplicitKeys):
        return DecryptionConfig(keys, encryption.aad_prefix)
    # KeyWrapper keeps its KMS private; the unwrapper needs the same client.
    return DecryptionConfig(KeyUnwrapper(keys.kms), encryption.aad_prefix)


class LiveKeys:
    """Opens the footers of an encrypted live file and rebuilds its encryptor on reopen.

    Implements :class:`streamwrite.layout.recovery.FooterKeys`.

    Args:
        decryption: Turns the file's key metadata into keys.
        encryption: The caller's settings, if given (needed for a file without row groups;
            checked against the file otherwise).
    """

    def __init__(self, decryption: DecryptionConfig, encryption: FileEncryption | None) -> None:
        self.decryption = decryption
        self.encryption = encryption
        self._decryptors: dict[bytes, FileDecryptor] = {}

    def __repr__(self) -> str:
        return f"LiveKeys(decryption={self.decryption!r}, encryption={self.encryption!r})"

    @classmethod
    def of(
        cls, encryption: FileEncryption | None, decryption: DecryptionConfig | None
    ) -> LiveKeys | None:
        """Returns: the keys from the caller's ``encryption=`` / ``decryption=``, or None.

        Raises:
            ConfigError: an argument of the wrong type.
        """
        if encryption is not None and not isinstance(encryption, FileEncryption):
            raise ConfigError(
                f"encryption must be a FileEncryption, not a {type(encryption).__name__}."
            )
        if decryption is not None and not isinstance(decryption, DecryptionConfig):
            raise ConfigError(
                f"decryption must be a DecryptionConfig, not a {type(decryption).__name__}."
            )
        if encryption is None and decryption is None:
            return None
        if decryption is None:
            assert encryption is not None
            decryption = decryption_for(encryption)
        return cls(decryption, encryption)

    def _decryptor(self, crypto: t.FileCryptoMetaData) -> FileDecryptor:
        cache = serialize(crypto)
        found = self._decryptors.get(cache)
        if found is None:
            assert crypto.encryption_algorithm is not None
            found = FileDecryptor(self.decryption, crypto.encryption_algorithm, crypto.key_metadata)
            self._decryptors[cache] = found
        return found

    def decrypt_footer(self, crypto: t.FileCryptoMetaData, module: bytes) -> t.FileMetaData:
        """Returns: the FileMetaData of an encrypted footer (see ``FooterKeys``)."""
        return self._decryptor(crypto).decrypt_footer(memoryview(module))

    def verify_footer(self, crypto: t.FileCryptoMetaData, body: bytes, signature: bytes) -> None:
        """Checks a signed plaintext footer (see ``FooterKeys``)."""
        self._decryptor(crypto).verify_footer(memoryview(body), memoryview(signature))

    def column_meta(self, crypto: t.FileCryptoMetaData, names: Sequence[str]) -> ColumnMetaOf:
        """Returns: a decrypter of ``encrypted_column_metadata`` for rebuilding ``_pm``."""
        decryptor = self._decryptor(crypto)

        def column_meta(column: t.ColumnChunk, row_group: int, ordinal: int) -> t.ColumnMetaData:
            name = names[ordinal]
            where = f"Column {name!r} of row group {row_group}"
            if column.crypto_metadata is None or column.encrypted_column_metadata is None:
                raise EncryptionError(f"{where} has neither ColumnMetaData nor its module.")
            chunk = decryptor.chunk(column.crypto_metadata, row_group, ordinal, name, where)
            return decryptor.column_metadata(chunk, column.encrypted_column_metadata, name)

        return column_meta

    def encryptor(self, version: FooterVersion, columns: Sequence[LeafColumn]) -> FileEncryptor:
        """The encryptor that continues the file whose newest committed footer is ``version``.

        Args:
            version: The newest committed version (``crypto`` set).
            columns: The file's leaf columns (``path_in_schema`` tuples or dotted names), in
                schema order.

        Returns:
            An encryptor with the file's algorithm, footer mode, AAD prefix,
            ``aad_file_unique`` and data keys.

        Raises:
            ConfigError: ``encryption=`` contradicts the file (algorithm, footer mode,
                encrypted columns), or a file without row groups is reopened without it.
            EncryptionError: a key cannot be retrieved.
        """
        crypto = version.crypto
        assert crypto is not None and crypto.encryption_algorithm is not None
        union = crypto.encryption_algorithm
        params = union.AES_GCM_V1 or union.AES_GCM_CTR_V1
        if params is None:
            raise EncryptionError("The live file's EncryptionAlgorithm names no algorithm.")
        algorithm = Algorithm.AES_GCM_V1 if union.AES_GCM_V1 else Algorithm.AES_GCM_CTR_V1
        self._decryptor(crypto)  # checks the AAD prefix against the file
        prefix = params.aad_prefix if params.aad_prefix is not None else self.decryption.aad_prefix
        stored = params.aad_prefix is not None or prefix is None
        footer_key = self.decryption.footer_key(crypto.key_metadata)
        names = [c if isinstance(c, str) else ".".join(c) for c in columns]
        column_keys, footer_columns = self._column_keys(version, names)
        self._check_settings(
            algorithm, not version.encrypted_footer, column_keys, footer_columns, columns
        )
        config = EncryptionConfig(
            footer_key_id="footer",
            column_keys={name: "column" for name in column_keys},
            algorithm=algorithm.value,
            plaintext_footer=not version.encrypted_footer,
            aad_prefix=prefix,
            store_aad_prefix=stored,
        )
        wrapper = KeyWrapper(_NoKms(), config)
        wrapper.adopt(None, footer_key, crypto.key_metadata or b"")
        for name, (key, key_metadata) in column_keys.items():
            wrapper.adopt(name, key, key_metadata)
        settings = FileEncryption(wrapper, footer_key_columns=footer_columns)
        return FileEncryptor(settings, list(columns), bytes(params.aad_file_unique or b""))

    def _column_keys(
        self, version: FooterVersion, names: Sequence[str]
    ) -> tuple[dict[str, tuple[bytes, bytes]], list[str]]:
        """``({column: (key, key metadata)}, footer-key columns)`` of the file."""
        row_groups = version.metadata.row_groups or []
        column_keys: dict[str, tuple[bytes, bytes]] = {}
        footer_columns: list[str] = []
        if not row_groups:
            settings = self.encryption
            if settings is None:
                raise ConfigError(
                    "The encrypted live file has no row group yet, so it records no column "
                    "keys: reopen it with encryption=FileEncryption(...)."
                )
            covered, _ = covering_names(_listed(settings), names)
            footer_covered, _ = covering_names(settings.footer_key_columns, names)
            for name in names:
                key_name = covered.get(name)
                if key_name is not None and len(footer_covered.get(name, "")) > len(key_name):
                    key_name = None  # a more specific footer_key_columns entry wins
                found = None if key_name is None else settings.keys.column_key(key_name)
                if found is not None:
                    column_keys[name] = found
                elif name in footer_covered:
                    footer_columns.append(name)
            return column_keys, footer_columns
        for name, column in zip(names, row_groups[-1].columns or [], strict=True):
            meta = column.crypto_metadata
            if meta is None:
                continue
            if meta.ENCRYPTION_WITH_COLUMN_KEY is not None:
                key_metadata = bytes(meta.ENCRYPTION_WITH_COLUMN_KEY.key_metadata or b"")
                column_keys[name] = (self.decryption.column_key(name, key_metadata), key_metadata)
            else:
                footer_columns.append(name)
        return column_keys, footer_columns

    def _check_settings(
        self,
        algorithm: Algorithm,
        plaintext_footer: bool,
        column_keys: dict[str, tuple[bytes, bytes]],
        footer_columns: list[str],
        columns: Sequence[LeafColumn],
    ) -> None:
        settings = self.encryption
        if settings is None:
            return
        problems = []
        if settings.algorithm != algorithm.value:
            problems.append(f"algorithm {algorithm.name}, not {settings.algorithm}")
        if settings.plaintext_footer != plaintext_footer:
            modes = ["an encrypted footer", "a signed plaintext footer"]
            problems.append(f"{modes[plaintext_footer]}, not {modes[not plaintext_footer]}")
        # A group name given covers its leaves: compare leaf by leaf.
        covered, _ = covering_names(_listed(settings), columns)
        footer_covered, _ = covering_names(settings.footer_key_columns, columns)
        listed = sorted(
            name
            for name, key_name in covered.items()
            if len(footer_covered.get(name, "")) <= len(key_name)
        )
        if listed != sorted(column_keys):
            problems.append(f"column keys for {sorted(column_keys)}, not {listed}")
        footer_listed = sorted(set(footer_covered) - set(listed))
        if footer_listed != sorted(footer_columns):
            problems.append(f"footer-key columns {sorted(footer_columns)}, not {footer_listed}")
        if problems:
            raise ConfigError(
                "The live file keeps the encryption it was created with, and it differs from "
                f"the encryption= given: the file has {'; '.join(problems)}."
            )


def _listed(settings: FileEncryption) -> list[str]:
    """The names the settings give a key of their own (leaves or groups)."""
    keys = settings.keys
    return list(keys.config.column_keys if isinstance(keys, KeyWrapper) else keys.columns)
