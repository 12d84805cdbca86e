"""streamwrite.crypto: re-exports."""

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

__all__ = [
    "ALGORITHMS",
    "DEFAULT_CACHE_LIFETIME_SECONDS",
    "EncryptionConfig",
    "ExplicitKeys",
    "InMemoryKms",
    "KekCache",
    "KeyMaterial",
    "KeyUnwrapper",
    "KeyWrapper",
    "KmsClient",
    "load_external_key_material",
    "parse_key_material",
]
