"""AES ciphers of Parquet modular encryption: module framing, footer signing, per-file cipher.

Implements the Parquet format spec, section 7.3 "Parquet Modular Encryption" (4.2 algorithms,
5.1 "Encrypted module serialization", plaintext footer signing), byte for byte as Arrow's
``encryption_internal.cc`` and parquet-java write it::

    gcm_module  := length nonce ciphertext tag    length = 12 + len(ciphertext) + 16
    ctr_module  := length nonce ciphertext        length = 12 + len(ciphertext)
    length      := u32 little endian              bytes that follow, not counting itself
    nonce       := 12 random bytes                one fresh nonce per module (NIST 800-38D 8.2.2)
    tag         := 16 bytes                       GCM tag over ciphertext and the module AAD
    ctr IV      := nonce 00 00 00 01              16 bytes: 31 zero bits then a 1 bit
    signature   := nonce tag                      28 bytes after a plaintext footer: the tag of
                                                  GCM(footer key, nonce, footer, footer AAD);
                                                  the ciphertext itself is not stored

Which cipher a module gets (:meth:`ModuleCipher.uses_ctr`): ``AES_GCM_V1`` uses GCM for every
module; ``AES_GCM_CTR_V1`` uses CTR (no tag, no AAD) for the page *bodies* only
(``DATA_PAGE``, ``DICTIONARY_PAGE``) and GCM for everything else, page headers included.
Framing overhead: 32 bytes per GCM module, 16 per CTR module; a page's
``compressed_page_size`` counts the framed (encrypted) bytes.

Synchronous and storage-free (worker processes import it). ``AESGCM`` objects are built once per
key and reused. Key bytes never appear in an error message or a ``repr``.
"""

from __future__ import annotations

import functools
import hmac
import os
import struct
from enum import Enum

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from streamwrite.errors import ConfigError, EncryptionError, LimitError
from streamwrite.format.aad import ModuleType, file_aad, module_aad
from streamwrite.format.structs_crypto import EncryptionAlgorithm

__all__ = [
    "CTR_OVERHEAD",
    "FOOTER_SIGNATURE_SIZE",
    "GCM_OVERHEAD",
    "LENGTH_SIZE",
    "NONCE_SIZE",
    "TAG_SIZE",
    "Algorithm",
    "ModuleCipher",
    "decrypt_module",
    "encrypt_module",
    "resolve_algorithm",
    "sign_footer",
    "verify_footer_signature",
]

LENGTH_SIZE = 4
"""Bytes of the little-endian length prefix of every encrypted module."""
NONCE_SIZE = 12
"""Bytes of a GCM nonce / the nonce part of a CTR IV."""
TAG_SIZE = 16
"""Bytes of a GCM authentication tag."""
GCM_OVERHEAD = LENGTH_SIZE + NONCE_SIZE + TAG_SIZE
"""Bytes a GCM module adds to its plaintext (32)."""
CTR_OVERHEAD = LENGTH_SIZE + NONCE_SIZE
"""Bytes a CTR module adds to its plaintext (16)."""
FOOTER_SIGNATURE_SIZE = NONCE_SIZE + TAG_SIZE
"""Bytes of the signature after a plaintext footer (28)."""

_KEY_SIZES = (16, 24, 32)
_MAX_FRAMED = 0x7FFFFFFF  # readers (Arrow, parquet-java) read the length as a signed i32
_CTR_COUNTER = b"\x00\x00\x00\x01"
_U32 = struct.Struct("<I")
_CTR_MODULES = frozenset({ModuleType.DATA_PAGE, ModuleType.DICTIONARY_PAGE})


class Algorithm(Enum):
    """The two Parquet encryption algorithms (``EncryptionAlgorithm`` union members)."""

    AES_GCM_V1 = "AES_GCM_V1"
    AES_GCM_CTR_V1 = "AES_GCM_CTR_V1"


def _check_key(key: object) -> bytes:
    if not isinstance(key, bytes | bytearray | memoryview):
        raise ConfigError(
            f"An AES key must be bytes, got a {type(key).__name__}."  # never the value
        )
    key = bytes(key)
    if len(key) not in _KEY_SIZES:
        raise ConfigError(
            f"An AES key must be 16, 24 or 32 bytes long, got one of {len(key)} bytes."
        )
    return key


@functools.lru_cache(maxsize=64)
def _gcm(key: bytes) -> AESGCM:
    return AESGCM(key)


def _new_nonce(nonce: bytes | None) -> bytes:
    if nonce is None:
        return os.urandom(NONCE_SIZE)
    if len(nonce) != NONCE_SIZE:
        raise ConfigError(f"A module nonce must be {NONCE_SIZE} bytes, got {len(nonce)}.")
    return bytes(nonce)


def _ctr(key: bytes, nonce: bytes | memoryview, data: bytes | bytearray | memoryview) -> bytes:
    cipher = Cipher(algorithms.AES(key), modes.CTR(bytes(nonce) + _CTR_COUNTER)).encryptor()
    return cipher.update(data) + cipher.finalize()


def encrypt_module(
    key: bytes,
    plaintext: bytes | bytearray | memoryview,
    aad: bytes,
    *,
    ctr: bool = False,
    nonce: bytes | None = None,
) -> bytes:
    """Encrypts one module and frames it for the file.

    Args:
        key: AES key, 16, 24 or 32 bytes.
        plaintext: The serialized module (Thrift struct, compressed page, bitset...).
        aad: The module AAD (:func:`streamwrite.format.aad.module_aad`); unused with ``ctr``.
        ctr: Use AES-CTR (``AES_GCM_CTR_V1`` page bodies) instead of AES-GCM.
        nonce: The 12-byte nonce; random (``os.urandom``) when ``None``. Only tests pass one:
            a nonce must never be reused with the same key.

    Returns:
        ``length || nonce || ciphertext || tag`` (GCM) or ``length || nonce || ciphertext``
        (CTR), ``length`` being the u32 LE size of what follows it.

    Raises:
        ConfigError: The key is not 16, 24 or 32 bytes, or the nonce not 12 bytes.
        LimitError: The framed module would exceed 2**31 - 1 bytes.
    """
    key = _check_key(key)
    overhead = NONCE_SIZE if ctr else NONCE_SIZE + TAG_SIZE
    framed = len(plaintext) + overhead
    if framed > _MAX_FRAMED:
        raise LimitError(
            f"A {len(plaintext)}-byte module is too large to encrypt: its framed size "
            f"{framed} exceeds {_MAX_FRAMED} bytes."
        )
    nonce = _new_nonce(nonce)
    body = _ctr(key, nonce, plaintext) if ctr else _gcm(key).encrypt(nonce, plaintext, aad)
    return b"".join((_U32.pack(framed), nonce, body))


def decrypt_module(
    key: bytes,
    buf: bytes | bytearray | memoryview,
    aad: bytes,
    *,
    ctr: bool = False,
    what: str = "An encrypted module",
) -> tuple[bytes, int]:
    """Decrypts (and, for GCM, authenticates) one framed module at the start of ``buf``.

    Args:
        key: AES key, 16, 24 or 32 bytes.
        buf: Bytes starting with the module's length prefix; they may continue past it.
        aad: The module AAD; unused with ``ctr``.
        ctr: The module is AES-CTR framed (no tag).
        what: How error messages name the module (e.g. ``"The DATA_PAGE module of row
            group 0, column 2, page 5"``).

    Returns:
        The plaintext and the number of bytes of ``buf`` the module took (length prefix
        included).

    Raises:
        EncryptionError: ``buf`` is shorter than its length prefix says, the length is too
            small for the framing, or GCM authentication fails (wrong key, wrong AAD or AAD
            prefix, tampered or moved bytes).
        ConfigError: The key is not 16, 24 or 32 bytes.
    """
    key = _check_key(key)
    view = memoryview(buf).cast("B") if not isinstance(buf, bytes) else memoryview(buf)
    if len(view) < LENGTH_SIZE:
        raise EncryptionError(
            f"{what} is truncated: {len(view)} bytes cannot hold its 4-byte length prefix."
        )
    (length,) = _U32.unpack_from(view, 0)
    end = LENGTH_SIZE + length
    minimum = NONCE_SIZE if ctr else NONCE_SIZE + TAG_SIZE
    if length < minimum:
        raise EncryptionError(
            f"{what} declares {length} encrypted bytes, fewer than the {minimum} bytes of "
            f"{'CTR' if ctr else 'GCM'} framing."
        )
    if end > len(view):
        raise EncryptionError(
            f"{what} declares {length} encrypted bytes but only {len(view) - LENGTH_SIZE} "
            "bytes follow its length prefix."
        )
    nonce = view[LENGTH_SIZE : LENGTH_SIZE + NONCE_SIZE]
    body = view[LENGTH_SIZE + NONCE_SIZE : end]
    if ctr:
        return _ctr(key, nonce, body), end
    try:
        plaintext = _gcm(key).decrypt(bytes(nonce), body, aad)
    except InvalidTag:
        raise EncryptionError(
            f"{what} failed AES-GCM authentication: wrong key, wrong or missing AAD prefix, "
            "or the bytes were tampered with or moved."
        ) from None
    return plaintext, end


def sign_footer(
    key: bytes,
    footer_bytes: bytes | bytearray | memoryview,
    aad: bytes,
    *,
    nonce: bytes | None = None,
) -> bytes:
    """Signs a plaintext footer (plaintext footer mode).

    Args:
        key: The footer signing key.
        footer_bytes: The serialized ``FileMetaData`` exactly as written.
        aad: ``module_aad(file_aad, ModuleType.FOOTER)``.
        nonce: 12-byte nonce; random when ``None`` (tests only).

    Returns:
        The 28 bytes ``nonce || tag`` written right after the footer.

    Raises:
        ConfigError: The key is not 16, 24 or 32 bytes, or the nonce not 12 bytes.
    """
    key = _check_key(key)
    nonce = _new_nonce(nonce)
    sealed = _gcm(key).encrypt(nonce, footer_bytes, aad)
    return nonce + sealed[-TAG_SIZE:]


def verify_footer_signature(
    key: bytes,
    footer_bytes: bytes | bytearray | memoryview,
    signature28: bytes | bytearray | memoryview,
    aad: bytes,
) -> None:
    """Checks the 28-byte signature of a plaintext footer.

    Args:
        key: The footer signing key.
        footer_bytes: The serialized ``FileMetaData`` as read from the file.
        signature28: The ``nonce || tag`` bytes that follow it.
        aad: ``module_aad(file_aad, ModuleType.FOOTER)``.

    Raises:
        EncryptionError: The signature is not 28 bytes or does not match (wrong key, wrong AAD
            prefix, tampered footer).
        ConfigError: The key is not 16, 24 or 32 bytes.
    """
    key = _check_key(key)
    if len(signature28) != FOOTER_SIGNATURE_SIZE:
        raise EncryptionError(
            f"The plaintext footer signature is {len(signature28)} bytes, "
            f"not {FOOTER_SIGNATURE_SIZE}."
        )
    signature = bytes(signature28)
    sealed = _gcm(key).encrypt(signature[:NONCE_SIZE], footer_bytes, aad)
    if not hmac.compare_digest(sealed[-TAG_SIZE:], signature[NONCE_SIZE:]):
        raise EncryptionError(
            "The plaintext footer signature does not match: wrong footer key, wrong or missing "
            "AAD prefix, or the footer was tampered with."
        )


def resolve_algorithm(
    encryption_algorithm: EncryptionAlgorithm, aad_prefix: bytes | None = None
) -> tuple[Algorithm, bytes]:
    """Reads a file's algorithm and its file AAD from its ``EncryptionAlgorithm``.

    Args:
        encryption_algorithm: From ``FileCryptoMetaData`` (encrypted footer) or
            ``FileMetaData.encryption_algorithm`` (plaintext footer).
        aad_prefix: The AAD prefix the reader supplies, if any.

    Returns:
        The algorithm and ``aad_prefix || aad_file_unique`` (stored prefix if the reader
        supplies none).

    Raises:
        EncryptionError: The union has no member, the file requires a supplied AAD prefix and
            none was given, or the supplied prefix differs from the stored one.
    """
    params = encryption_algorithm.AES_GCM_V1 or encryption_algorithm.AES_GCM_CTR_V1
    if params is None:
        raise EncryptionError("The file's EncryptionAlgorithm names no known algorithm.")
    algorithm = (
        Algorithm.AES_GCM_V1
        if encryption_algorithm.AES_GCM_V1 is not None
        else Algorithm.AES_GCM_CTR_V1
    )
    stored = params.aad_prefix
    if aad_prefix is None:
        if stored is None and params.supply_aad_prefix:
            raise EncryptionError(
                "The file was encrypted with an AAD prefix it does not store "
                "(supply_aad_prefix): the reader must supply it."
            )
        prefix = stored or b""
    else:
        if stored is not None and stored != aad_prefix:
            raise EncryptionError(
                "The supplied AAD prefix differs from the one stored in the file."
            )
        prefix = aad_prefix
    return algorithm, file_aad(prefix, params.aad_file_unique or b"")


class ModuleCipher:
    """One key of one file: encrypts and decrypts its modules, building their AADs.

    Picklable (sent to worker processes as key, file AAD and algorithm); the ``repr`` never
    shows the key or the file AAD.
    """

    __slots__ = ("_aead", "_algorithm", "_file_aad", "_key")

    def __init__(
        self,
        key: bytes,
        file_aad: bytes,
        algorithm: Algorithm = Algorithm.AES_GCM_V1,
    ) -> None:
        """Builds the cipher.

        Args:
            key: AES key, 16, 24 or 32 bytes (the footer key or a column key).
            file_aad: ``aad_prefix || aad_file_unique``
                (:func:`streamwrite.format.aad.file_aad`).
            algorithm: The file's algorithm.

        Raises:
            ConfigError: The key is not 16, 24 or 32 bytes, or ``algorithm`` is not an
                :class:`Algorithm`.
        """
        self._key = _check_key(key)
        if not isinstance(algorithm, Algorithm):
            raise ConfigError(f"{algorithm!r} is not an encryption Algorithm.")
        self._algorithm = algorithm
        self._file_aad = bytes(file_aad)
        self._aead = _gcm(self._key)

    @property
    def algorithm(self) -> Algorithm:
        """The file's encryption algorithm."""
        return self._algorithm

    def __repr__(self) -> str:
        return (
            f"ModuleCipher(algorithm={self._algorithm.name}, "
            f"key=<{len(self._key) * 8}-bit key hidden>, file_aad=<{len(self._file_aad)} bytes>)"
        )

    def __reduce__(self) -> tuple[type[ModuleCipher], tuple[bytes, bytes, Algorithm]]:
        return (ModuleCipher, (self._key, self._file_aad, self._algorithm))

    def uses_ctr(self, module_type: ModuleType) -> bool:
        """Returns whether ``module_type`` is AES-CTR encrypted (page bodies under CTR_V1)."""
        return self._algorithm is Algorithm.AES_GCM_CTR_V1 and module_type in _CTR_MODULES

    def overhead(self, module_type: ModuleType) -> int:
        """Returns the bytes encryption adds to a ``module_type`` module (32 GCM, 16 CTR)."""
        return CTR_OVERHEAD if self.uses_ctr(module_type) else GCM_OVERHEAD

    def aad(
        self,
        module_type: ModuleType,
        row_group_ordinal: int = -1,
        column_ordinal: int = -1,
        page_ordinal: int = -1,
    ) -> bytes:
        """Returns the module AAD (see :func:`streamwrite.format.aad.module_aad`)."""
        return module_aad(
            self._file_aad, module_type, row_group_ordinal, column_ordinal, page_ordinal
        )

    def encrypt(
        self,
        module_type: ModuleType,
        plaintext: bytes | bytearray | memoryview,
        row_group_ordinal: int = -1,
        column_ordinal: int = -1,
        page_ordinal: int = -1,
        *,
        nonce: bytes | None = None,
    ) -> bytes:
        """Encrypts one module of this file.

        Args:
            module_type: Which module ``plaintext`` is.
            plaintext: The serialized module.
            row_group_ordinal: Row group ordinal (not for ``FOOTER``).
            column_ordinal: Leaf column ordinal (not for ``FOOTER``).
            page_ordinal: Data page ordinal (``DATA_PAGE`` and ``DATA_PAGE_HEADER`` only).
            nonce: Fixed nonce, tests only.

        Returns:
            The framed module (:func:`encrypt_module`).

        Raises:
            LimitError: An ordinal exceeds 32767, or the module 2**31 - 33 bytes.
            ConfigError: A needed ordinal is negative, or the nonce is not 12 bytes.
        """
        if self.uses_ctr(module_type):
            # validate the ordinals even though CTR has no AAD, so both algorithms fail alike
            self.aad(module_type, row_group_ordinal, column_ordinal, page_ordinal)
            return encrypt_module(self._key, plaintext, b"", ctr=True, nonce=nonce)
        aad = self.aad(module_type, row_group_ordinal, column_ordinal, page_ordinal)
        framed = len(plaintext) + NONCE_SIZE + TAG_SIZE
        if framed > _MAX_FRAMED:
            return encrypt_module(self._key, plaintext, aad)  # raises LimitError
        nonce = _new_nonce(nonce)
        return b"".join((_U32.pack(framed), nonce, self._aead.encrypt(nonce, plaintext, aad)))

    def decrypt(
        self,
        module_type: ModuleType,
        buf: bytes | bytearray | memoryview,
        row_group_ordinal: int = -1,
        column_ordinal: int = -1,
        page_ordinal: int = -1,
    ) -> tuple[bytes, int]:
        """Decrypts one module of this file at the start of ``buf``.

        Args:
            module_type: Which module is expected.
            buf: Bytes starting at the module's length prefix.
            row_group_ordinal: Row group ordinal (not for ``FOOTER``).
            column_ordinal: Leaf column ordinal (not for ``FOOTER``).
            page_ordinal: Data page ordinal (``DATA_PAGE`` and ``DATA_PAGE_HEADER`` only).

        Returns:
            The plaintext and the bytes consumed (length prefix included).

        Raises:
            EncryptionError: Truncated module or failed authentication; the message names the
                module type and ordinals.
            LimitError: An ordinal exceeds 32767.
            ConfigError: A needed ordinal is negative.
        """
        aad = self.aad(module_type, row_group_ordinal, column_ordinal, page_ordinal)
        what = _describe(ModuleType(module_type), row_group_ordinal, column_ordinal, page_ordinal)
        return decrypt_module(self._key, buf, aad, ctr=self.uses_ctr(module_type), what=what)

    def sign_footer(
        self, footer_bytes: bytes | bytearray | memoryview, *, nonce: bytes | None = None
    ) -> bytes:
        """Returns the 28-byte ``nonce || tag`` signature of a plaintext footer."""
        return sign_footer(self._key, footer_bytes, self.aad(ModuleType.FOOTER), nonce=nonce)

    def verify_footer(
        self,
        footer_bytes: bytes | bytearray | memoryview,
        signature28: bytes | bytearray | memoryview,
    ) -> None:
        """Checks a plaintext footer's signature; raises :class:`EncryptionError` if wrong."""
        verify_footer_signature(self._key, footer_bytes, signature28, self.aad(ModuleType.FOOTER))


def _describe(module_type: ModuleType, rg: int, col: int, page: int) -> str:
    if module_type is ModuleType.FOOTER:
        return "The encrypted FOOTER module"
    where = f"row group {rg}, column {col}"
    if module_type in (ModuleType.DATA_PAGE, ModuleType.DATA_PAGE_HEADER):
        where += f", page {page}"
    return f"The {module_type.name} module of {where}"
