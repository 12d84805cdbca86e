"""streamwrite.crypto: key management for Parquet modular encryption (public API).

KMS clients, key wrapping and key material; ``streamwrite.FileEncryption`` and
``streamwrite.DecryptionConfig`` take these (``DecryptionConfig(keys=)`` takes any
:class:`KeyRetriever`). Names are imported on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamwrite.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "ALGORITHMS": "streamwrite.crypto.kms",
    "DEFAULT_CACHE_LIFETIME_SECONDS": "streamwrite.crypto.kms",
    "EncryptionConfig": "streamwrite.crypto.kms",
    "ExplicitKeys": "streamwrite.crypto.kms",
    "InMemoryKms": "streamwrite.crypto.kms",
    "KekCache": "streamwrite.crypto.kms",
    "KeyMaterial": "streamwrite.crypto.kms",
    "KeyRetriever": "streamwrite.crypto.decryption",
    "KeyUnwrapper": "streamwrite.crypto.kms",
    "KeyWrapper": "streamwrite.crypto.kms",
    "KmsClient": "streamwrite.crypto.kms",
    "load_external_key_material": "streamwrite.crypto.kms",
    "parse_key_material": "streamwrite.crypto.kms",
}
"""Each public name and the private module that defines (or re-exports) it."""

__all__ = (
    "ALGORITHMS",
    "DEFAULT_CACHE_LIFETIME_SECONDS",
    "EncryptionConfig",
    "ExplicitKeys",
    "InMemoryKms",
    "KekCache",
    "KeyMaterial",
    "KeyRetriever",
    "KeyUnwrapper",
    "KeyWrapper",
    "KmsClient",
    "load_external_key_material",
    "parse_key_material",
)

if TYPE_CHECKING:
    from streamwrite.crypto.decryption import KeyRetriever
    from streamwrite.crypto.kms import (
        ALGORITHMS,
        DEFAULT_CACHE_LIFETIME_SECONDS,
        EncryptionConfig,
        ExplicitKeys,
        InMemoryKms,
        KekCache,
        KeyMaterial,
        KeyUnwrapper,
        KeyWrapper,
        KmsClient,
        load_external_key_material,
        parse_key_material,
    )

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
