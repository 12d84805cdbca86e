"""streamwrite.crypto: key management for Parquet modular encryption (public API).

KMS clients, key wrapping and key material; ``streamwrite.FileEncryption`` and
``streamwrite.DecryptionConfig`` take these. Names are imported on first access.
"""

from __future__ import annotations

from importlib import import_module as _import_module
from types import FunctionType as _FunctionType
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "ALGORITHMS": "streamwrite.crypto.kms",
    "DEFAULT_CACHE_LIFETIME_SECONDS": "streamwrite.crypto.kms",
    "EncryptionConfig": "streamwrite.crypto.kms",
    "ExplicitKeys": "streamwrite.crypto.kms",
    "InMemoryKms": "streamwrite.crypto.kms",
    "KekCache": "streamwrite.crypto.kms",
    "KeyMaterial": "streamwrite.crypto.kms",
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
    "KeyUnwrapper",
    "KeyWrapper",
    "KmsClient",
    "load_external_key_material",
    "parse_key_material",
)

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    """Import a public name on first access; a class or function defined in a private module
    below this package reports ``__module__ == "streamwrite.crypto"`` from then on.

    Raises:
        AttributeError: ``name`` is not public.
    """
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_import_module(module), name)
    if isinstance(value, type | _FunctionType) and value.__module__.startswith(f"{__name__}."):
        value.__module__ = __name__
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """Returns: the public names and the module's dunder attributes."""
    return sorted({*__all__, *(n for n in globals() if n.startswith("__"))})
