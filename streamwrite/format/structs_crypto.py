"""Parquet modular encryption metadata structs (``parquet.thrift``, section "Encryption").

Field names and ids are those of apache/parquet-format ``src/main/thrift/parquet.thrift``.
Re-exported by :mod:`streamwrite.format.structs`; see :mod:`streamwrite.format.thrift` for the
field declaration helpers and the wire format.
"""

# tfield() returns a dataclasses.field (like field(), it is not a shared mutable default).
# ruff: noqa: RUF009

from __future__ import annotations

from dataclasses import dataclass

from streamwrite.format.thrift.plan import (
    BINARY,
    BOOL,
    STRING,
    list_of,
    struct_of,
    tfield,
    thrift_union,
)

__all__ = [
    "AesGcmCtrV1",
    "AesGcmV1",
    "ColumnCryptoMetaData",
    "EncryptionAlgorithm",
    "EncryptionWithColumnKey",
    "EncryptionWithFooterKey",
    "FileCryptoMetaData",
]


@dataclass(slots=True, kw_only=True)
class AesGcmV1:
    """AES-GCM for all modules."""

    aad_prefix: bytes | None = tfield(1, BINARY)
    aad_file_unique: bytes | None = tfield(2, BINARY)
    supply_aad_prefix: bool | None = tfield(3, BOOL)


@dataclass(slots=True, kw_only=True)
class AesGcmCtrV1:
    """AES-GCM for metadata and page headers, AES-CTR for page data."""

    aad_prefix: bytes | None = tfield(1, BINARY)
    aad_file_unique: bytes | None = tfield(2, BINARY)
    supply_aad_prefix: bool | None = tfield(3, BOOL)


@thrift_union
@dataclass(slots=True, kw_only=True)
class EncryptionAlgorithm:
    """Union: the file's encryption algorithm."""

    AES_GCM_V1: AesGcmV1 | None = tfield(1, struct_of(AesGcmV1))
    AES_GCM_CTR_V1: AesGcmCtrV1 | None = tfield(2, struct_of(AesGcmCtrV1))


@dataclass(slots=True, kw_only=True)
class FileCryptoMetaData:
    """Crypto metadata written before an encrypted footer (``PARE`` files)."""

    encryption_algorithm: EncryptionAlgorithm | None = tfield(
        1, struct_of(EncryptionAlgorithm), required=True
    )
    key_metadata: bytes | None = tfield(2, BINARY)


@dataclass(slots=True, kw_only=True)
class EncryptionWithFooterKey:
    """The column is encrypted with the footer key."""


@dataclass(slots=True, kw_only=True)
class EncryptionWithColumnKey:
    """The column is encrypted with its own key."""

    path_in_schema: list[str] | None = tfield(1, list_of(STRING), required=True)
    key_metadata: bytes | None = tfield(2, BINARY)


@thrift_union
@dataclass(slots=True, kw_only=True)
class ColumnCryptoMetaData:
    """Union: how a column chunk is encrypted."""

    ENCRYPTION_WITH_FOOTER_KEY: EncryptionWithFooterKey | None = tfield(
        1, struct_of(EncryptionWithFooterKey)
    )
    ENCRYPTION_WITH_COLUMN_KEY: EncryptionWithColumnKey | None = tfield(
        2, struct_of(EncryptionWithColumnKey)
    )
