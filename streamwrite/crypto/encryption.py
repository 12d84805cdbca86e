"""Writer-side Parquet modular encryption: what to encrypt with which key, for one file.

Implements the writer's part of the Parquet format spec, section 7.3 "Parquet Modular
Encryption" (DESIGN section 5). Two objects:

- :class:`FileEncryption`, the caller's settings (reusable): a key source (a
  :class:`~streamwrite.crypto.KeyWrapper` over a KMS, or :class:`~streamwrite.crypto.ExplicitKeys`),
  the algorithm, plaintext or encrypted footer, the AAD prefix and whether it is stored.
- :class:`FileEncryptor`, made by ``FileEncryption._open_file`` once per file (the writers'
  own plumbing, not public: users hand a ``FileEncryption`` to a writer): the file's random
  8-byte ``aad_file_unique`` (as parquet-cpp), one :class:`~workers.cipher.ModuleCipher` per
  encrypted column and one for the footer, and the metadata that describes them.

What is encrypted with which key::

    column listed with its own key   every module with the column key; ColumnChunk.crypto_metadata
                                     = ENCRYPTION_WITH_COLUMN_KEY(path_in_schema, key_metadata)
    column in footer_key_columns     every module with the footer key; ENCRYPTION_WITH_FOOTER_KEY
    any other column                 plaintext
    footer                           encrypted (PARE) or signed (PAR1), footer key

Key bytes never appear in a ``repr``, an error message or the file's plaintext metadata (key
metadata is wrapped key material or a key id).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import replace

from streamwrite.crypto.kms import ExplicitKeys, KeyWrapper
from streamwrite.errors import ConfigError, LimitError
from streamwrite.format import structs as t
from streamwrite.format.aad import MAX_ORDINAL, ModuleType, file_aad
from streamwrite.format.thrift.codec import serialize
from workers.cipher import Algorithm, ModuleCipher
from workers.page import ChunkCrypto

__all__ = [
    "AAD_FILE_UNIQUE_SIZE",
    "FileEncryption",
    "FileEncryptor",
    "KeySource",
    "V2_PAGE_LAYOUTS",
    "check_row_group_ordinal",
    "covering_names",
]

AAD_FILE_UNIQUE_SIZE = 8
"""Random bytes of ``aad_file_unique``, as parquet-cpp and parquet-java write them."""

KeySource = KeyWrapper | ExplicitKeys
"""Where data keys and their key metadata come from."""


def _listed_columns(keys: KeySource) -> list[str]:
    """The column names the key source gives a key of their own."""
    if isinstance(keys, KeyWrapper):
        return list(keys.config.column_keys)
    return keys.columns


LeafColumn = str | tuple[str, ...]
"""A leaf column as the encryptor takes it: its ``path_in_schema`` tuple, or its dotted name
(split at the dots)."""


def _leaf_path(column: LeafColumn) -> tuple[str, ...]:
    return tuple(column.split(".")) if isinstance(column, str) else tuple(column)


def covering_names(
    listed: Iterable[str], columns: Sequence[LeafColumn]
) -> tuple[dict[str, str], list[str]]:
    """Which listed name covers each leaf column.

    A name in ``column_keys`` / ``footer_key_columns`` is a leaf's dotted path (``s.a``,
    ``l.list.element``, ``m.key_value.value``: the names parquet-java and Spark use) or the
    path of a group above leaves (``s``, ``m``), which covers every leaf under it; the most
    specific listed name covering a leaf wins.

    Returns:
        ``({leaf name: the listed name covering it}, the listed names covering no leaf)``.
    """
    names = set(listed)
    used: set[str] = set()
    found: dict[str, str] = {}
    for column in columns:
        path = _leaf_path(column)
        for size in range(len(path), 0, -1):
            name = ".".join(path[:size])
            if name in names:
                found[".".join(path)] = name
                used.add(name)
                break
    return found, sorted(names - used)


def _algorithm(value: str) -> Algorithm:
    if isinstance(value, Algorithm):  # the package's own callers
        return value
    try:
        return Algorithm(str(value))
    except ValueError:
        raise ConfigError(
            f"Encryption algorithm {value!r} is not one of {', '.join(a.value for a in Algorithm)}."
        ) from None


V2_PAGE_LAYOUTS = ("arrow", "parquet-java")
"""The ``FileEncryption.v2_page_layout`` values."""


class FileEncryption:
    """How files are encrypted: key source, algorithm, footer mode and AAD prefix.

    With a :class:`~streamwrite.crypto.KeyWrapper`, the algorithm, footer mode and AAD prefix
    default to those of its :class:`~streamwrite.crypto.EncryptionConfig`; giving a different
    value here is an error. With :class:`~streamwrite.crypto.ExplicitKeys` they default to
    ``AES_GCM_V1``, an encrypted footer and no AAD prefix.

    A key source keeps one data key per column for its life, so files opened from one
    ``FileEncryption`` share data keys (each file still gets its own ``aad_file_unique``);
    make a new ``KeyWrapper`` per file for fresh data keys, as pyarrow's ``CryptoFactory`` does.

    Args:
        keys: The key source.
        algorithm: ``"AES_GCM_V1"`` or ``"AES_GCM_CTR_V1"`` (as pyarrow's
            ``encryption_algorithm`` and :class:`~streamwrite.crypto.EncryptionConfig`).
        plaintext_footer: Write a signed plaintext footer (``PAR1``) instead of an encrypted
            one (``PARE``).
        aad_prefix: Bytes prepended to every module AAD (e.g. a file name), or None.
        store_aad_prefix: Store ``aad_prefix`` in the file; False makes readers supply it.
        footer_key_columns: Columns encrypted with the footer key (``ENCRYPTION_WITH_FOOTER_KEY``).
            Here and in the key source's column keys a nested leaf is named by its dotted
            path (``s.a``, ``l.list.element``, ``m.key_value.value``, as parquet-java and
            Spark name it) and a struct, list or map name covers every leaf under it (they
            share its data key; the most specific name listed wins, :func:`covering_names`).
        v2_page_layout: How DATA_PAGE_V2 bodies are encrypted. ``"arrow"`` (default, as
            parquet-cpp/pyarrow and arrow-rs): the whole body (levels and values) is one
            DATA_PAGE module. ``"parquet-java"`` (as parquet-java, so Spark): the levels stay in
            plaintext and only the (compressed) values are the DATA_PAGE module. Our reader
            reads both; pick the one the other readers of the files need.

    Raises:
        ConfigError: A bad algorithm, a setting that contradicts the KeyWrapper's config,
            ``store_aad_prefix=False`` without a prefix, or a column given both a key of its own
            and the footer key.
    """

    def __init__(
        self,
        keys: KeySource,
        *,
        algorithm: str | None = None,
        plaintext_footer: bool | None = None,
        aad_prefix: bytes | None = None,
        store_aad_prefix: bool | None = None,
        footer_key_columns: Iterable[str] = (),
        v2_page_layout: str = "arrow",
    ) -> None:
        if not isinstance(keys, KeyWrapper | ExplicitKeys):
            raise ConfigError(
                f"FileEncryption needs a KeyWrapper or ExplicitKeys, not a {type(keys).__name__}."
            )
        if v2_page_layout not in V2_PAGE_LAYOUTS:
            raise ConfigError(
                f"v2_page_layout={v2_page_layout!r} is not one of {', '.join(V2_PAGE_LAYOUTS)}."
            )
        self.v2_page_layout = v2_page_layout
        self._keys = keys
        defaults: dict[str, object] = {
            "algorithm": Algorithm.AES_GCM_V1,
            "plaintext_footer": False,
            "aad_prefix": None,
            "store_aad_prefix": True,
        }
        if isinstance(keys, KeyWrapper):
            config = keys.config
            defaults = {
                "algorithm": Algorithm(config.algorithm),
                "plaintext_footer": config.plaintext_footer,
                "aad_prefix": config.aad_prefix,
                "store_aad_prefix": config.store_aad_prefix,
            }
        given: dict[str, object] = {
            "algorithm": None if algorithm is None else _algorithm(algorithm),
            "plaintext_footer": plaintext_footer,
            "aad_prefix": None if aad_prefix is None else bytes(aad_prefix),
            "store_aad_prefix": store_aad_prefix,
        }
        for name, value in given.items():
            if value is None:
                continue
            if isinstance(keys, KeyWrapper) and value != defaults[name]:
                shown = "<bytes>" if name == "aad_prefix" else repr(value)
                raise ConfigError(
                    f"FileEncryption {name}={shown} contradicts the KeyWrapper's "
                    "EncryptionConfig; set it there."
                )
            defaults[name] = value
        self._algorithm: Algorithm = _algorithm(defaults["algorithm"])  # type: ignore[arg-type]
        self.plaintext_footer = bool(defaults["plaintext_footer"])
        prefix = defaults["aad_prefix"]
        if prefix is not None and not isinstance(prefix, bytes | bytearray):
            raise ConfigError(f"aad_prefix must be bytes, not {type(prefix).__name__}.")
        self.aad_prefix: bytes | None = None if prefix is None else bytes(prefix)
        self.store_aad_prefix = bool(defaults["store_aad_prefix"])
        if self.aad_prefix is None and not self.store_aad_prefix:
            raise ConfigError("store_aad_prefix=False needs an aad_prefix for readers to supply.")
        self.footer_key_columns = tuple(footer_key_columns)
        both = sorted(set(self.footer_key_columns) & set(_listed_columns(keys)))
        if both:
            raise ConfigError(
                f"Columns {both} have a key of their own and are also listed in "
                "footer_key_columns; choose one."
            )

    @property
    def keys(self) -> KeySource:
        """The key source."""
        return self._keys

    @property
    def algorithm(self) -> str:
        """``"AES_GCM_V1"`` or ``"AES_GCM_CTR_V1"``."""
        return self._algorithm.value

    def __repr__(self) -> str:
        prefix = "None" if self.aad_prefix is None else f"<{len(self.aad_prefix)} bytes>"
        return (
            f"FileEncryption(keys={self._keys!r}, algorithm={self.algorithm}, "
            f"plaintext_footer={self.plaintext_footer!r}, aad_prefix={prefix}, "
            f"store_aad_prefix={self.store_aad_prefix!r}, "
            f"footer_key_columns={list(self.footer_key_columns)!r}, "
            f"v2_page_layout={self.v2_page_layout!r})"
        )

    def _open_file(
        self, column_names: Sequence[LeafColumn], *, aad_file_unique: bytes | None = None
    ) -> FileEncryptor:
        """Makes the encryption state of one new file whose leaf columns are ``column_names``.

        Args:
            column_names: The file's leaf columns in schema order: ``path_in_schema`` tuples,
                or dotted names (split at the dots).
            aad_file_unique: Tests only; 8 random bytes by default.

        Returns:
            The file's encryptor, with a fresh ``aad_file_unique``.

        Raises:
            ConfigError: A listed column is neither a leaf of the file nor a group above
                leaves (:func:`covering_names`).
            EncryptionError: The KMS fails to wrap a data key.
        """
        columns = list(column_names)
        _, unknown_keys = covering_names(_listed_columns(self._keys), columns)
        _, unknown_footer = covering_names(self.footer_key_columns, columns)
        unknown = sorted({*unknown_keys, *unknown_footer})
        if unknown:
            names = [".".join(_leaf_path(c)) for c in columns]
            raise ConfigError(
                f"The encryption settings name columns {unknown} that the file does not have "
                f"(its columns: {names}; a struct, list or map name covers its leaves)."
            )
        unique = os.urandom(AAD_FILE_UNIQUE_SIZE) if aad_file_unique is None else aad_file_unique
        return FileEncryptor(self, columns, bytes(unique))


class FileEncryptor:
    """The encryption state of one file: ciphers per column and footer, and their metadata.

    Made by ``FileEncryption._open_file`` for the writers (private: its ciphers and sealing
    methods are write-path plumbing, as parquet-cpp's ``InternalFileEncryptor``). The ``repr``
    shows no key.
    """

    def __init__(self, settings: FileEncryption, column_names: Sequence[LeafColumn], unique: bytes):
        self.algorithm = settings._algorithm
        self.plaintext_footer = settings.plaintext_footer
        self.aad_file_unique = unique
        self._settings = settings
        aad = file_aad(settings.aad_prefix or b"", unique)
        footer_key, self.footer_key_metadata = settings.keys.footer_key()
        self.footer_cipher = ModuleCipher(footer_key, aad, settings._algorithm)
        self._ciphers: list[ModuleCipher | None] = []
        self._crypto_metadata: list[t.ColumnCryptoMetaData | None] = []
        # A leaf is encrypted with the key of the most specific listed name covering it (its
        # own path, or a group above it); the leaves of a group share its data key.
        key_names, _ = covering_names(_listed_columns(settings.keys), column_names)
        footer_columns, _ = covering_names(settings.footer_key_columns, column_names)
        for column in column_names:
            path = _leaf_path(column)
            name = ".".join(path)
            key_name = key_names.get(name)
            if key_name is not None and len(footer_columns.get(name, "")) > len(key_name):
                key_name = None  # a more specific footer_key_columns entry wins
            found = None if key_name is None else settings.keys.column_key(key_name)
            if found is not None:
                key, key_metadata = found
                self._ciphers.append(ModuleCipher(key, aad, settings._algorithm))
                self._crypto_metadata.append(
                    t.ColumnCryptoMetaData(
                        ENCRYPTION_WITH_COLUMN_KEY=t.EncryptionWithColumnKey(
                            path_in_schema=list(path), key_metadata=key_metadata
                        )
                    )
                )
            elif name in footer_columns:
                self._ciphers.append(self.footer_cipher)
                self._crypto_metadata.append(
                    t.ColumnCryptoMetaData(ENCRYPTION_WITH_FOOTER_KEY=t.EncryptionWithFooterKey())
                )
            else:
                self._ciphers.append(None)
                self._crypto_metadata.append(None)

    def __repr__(self) -> str:
        encrypted = sum(c is not None for c in self._ciphers)
        return (
            f"FileEncryptor(algorithm={self.algorithm.name}, "
            f"plaintext_footer={self.plaintext_footer!r}, "
            f"encrypted_columns={encrypted} of {len(self._ciphers)})"
        )

    def column_cipher(self, column_ordinal: int) -> ModuleCipher | None:
        """Returns: the cipher of a leaf column, or None if the column is plaintext."""
        return self._ciphers[column_ordinal]

    def check_row_group_ordinal(self, ordinal: int) -> None:
        """Raises :class:`LimitError` if ``ordinal`` exceeds 32767 (see the module function)."""
        check_row_group_ordinal(ordinal)

    def chunk_crypto(self, row_group_ordinal: int, column_ordinal: int) -> ChunkCrypto | None:
        """Returns: what a worker needs to encrypt one column chunk, or None if plaintext.

        Raises:
            LimitError: ``row_group_ordinal`` exceeds 32767.
        """
        check_row_group_ordinal(row_group_ordinal)
        cipher = self._ciphers[column_ordinal]
        if cipher is None:
            return None
        return ChunkCrypto(
            cipher,
            row_group_ordinal,
            column_ordinal,
            v2_levels_plaintext=self._settings.v2_page_layout == "parquet-java",
        )

    def encryption_algorithm(self) -> t.EncryptionAlgorithm:
        """Returns: the ``EncryptionAlgorithm`` union written in the file (as parquet-cpp:
        ``supply_aad_prefix`` always set, ``aad_prefix`` only when stored)."""
        settings = self._settings
        stored = settings.aad_prefix if settings.store_aad_prefix else None
        supply = settings.aad_prefix is not None and not settings.store_aad_prefix
        unique = self.aad_file_unique
        if self.algorithm is Algorithm.AES_GCM_V1:
            return t.EncryptionAlgorithm(
                AES_GCM_V1=t.AesGcmV1(
                    aad_prefix=stored, aad_file_unique=unique, supply_aad_prefix=supply
                )
            )
        return t.EncryptionAlgorithm(
            AES_GCM_CTR_V1=t.AesGcmCtrV1(
                aad_prefix=stored, aad_file_unique=unique, supply_aad_prefix=supply
            )
        )

    def seal_column_chunk(
        self, column: t.ColumnChunk, row_group_ordinal: int, column_ordinal: int
    ) -> None:
        """Sets ``crypto_metadata`` and ``encrypted_column_metadata`` of an encrypted column's
        ColumnChunk (its ``meta_data`` final: offsets rebased, bloom filter placed); leaves a
        plaintext column's alone.

        - encrypted footer, column key: ``meta_data`` omitted, ``encrypted_column_metadata``;
        - encrypted footer, footer key: ``meta_data`` kept (the footer is encrypted), as pyarrow;
        - plaintext footer: ``meta_data`` stripped of statistics, encoding stats and size and
          geospatial statistics, plus ``encrypted_column_metadata`` for every encrypted column
          (parquet-java needs it also for footer-key columns).
        """
        cipher = self._ciphers[column_ordinal]
        if cipher is None:
            return
        crypto = self._crypto_metadata[column_ordinal]
        column.crypto_metadata = crypto
        meta = column.meta_data
        assert meta is not None and crypto is not None
        footer_key = crypto.ENCRYPTION_WITH_FOOTER_KEY is not None
        if not self.plaintext_footer and footer_key:
            return
        column.encrypted_column_metadata = cipher.encrypt(
            ModuleType.COLUMN_META_DATA, serialize(meta), row_group_ordinal, column_ordinal
        )
        if self.plaintext_footer:
            column.meta_data = replace(
                meta,
                statistics=None,
                encoding_stats=None,
                size_statistics=None,
                geospatial_statistics=None,
            )
        else:
            column.meta_data = None

    def seal_index(
        self, module_type: ModuleType, data: bytes, row_group_ordinal: int, column_ordinal: int
    ) -> bytes:
        """Returns: a serialized ColumnIndex / OffsetIndex as stored (a module if encrypted)."""
        cipher = self._ciphers[column_ordinal]
        if cipher is None:
            return data
        return cipher.encrypt(module_type, data, row_group_ordinal, column_ordinal)

    def footer_tail(self, metadata: t.FileMetaData) -> tuple[bytes, bytes]:
        """Returns: ``(tail, magic)``: the bytes between the last data and the footer length,
        and the closing magic.

        - encrypted footer: ``FileCryptoMetaData enc(FileMetaData)``, magic ``PARE``;
        - plaintext footer: ``FileMetaData(+encryption_algorithm, footer_signing_key_metadata)
          nonce tag``, magic ``PAR1``.
        """
        if self.plaintext_footer:
            signed = replace(
                metadata,
                encryption_algorithm=self.encryption_algorithm(),
                footer_signing_key_metadata=self.footer_key_metadata,
            )
            body = serialize(signed)
            return body + self.footer_cipher.sign_footer(body), b"PAR1"
        crypto = t.FileCryptoMetaData(
            encryption_algorithm=self.encryption_algorithm(),
            key_metadata=self.footer_key_metadata,
        )
        sealed = self.footer_cipher.encrypt(ModuleType.FOOTER, serialize(metadata))
        return serialize(crypto) + sealed, b"PARE"

    @property
    def magic(self) -> bytes:
        """The file's leading and trailing magic: ``PARE`` (encrypted footer) or ``PAR1``."""
        return b"PAR1" if self.plaintext_footer else b"PARE"


def check_row_group_ordinal(ordinal: int) -> None:
    """Refuses a row group an encrypted file cannot number.

    Raises:
        LimitError: ``ordinal`` exceeds 32767 (``RowGroup.ordinal`` and the module AADs are i16).
    """
    if ordinal > MAX_ORDINAL:
        raise LimitError(
            f"An encrypted Parquet file holds at most {MAX_ORDINAL + 1} row groups (ordinals "
            f"0..{MAX_ORDINAL}, i16 in the module AADs); row group ordinal {ordinal} cannot be "
            "written. Use larger row groups or start a new file."
        )
