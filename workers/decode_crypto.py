"""Decrypting the modules of an encrypted column chunk's pages (Parquet spec 7.3).

A mixin of :class:`workers.decode._ChunkDecoder`: it holds the chunk's bytes (``buf``), its
absolute offset (``chunk_offset``), its :class:`PageCipher` and how errors name it (``where``).

The body of an encrypted DATA_PAGE_V2 with levels has two layouts in the wild::

    Arrow (parquet-cpp, arrow-rs, streamwrite's default):  DATA_PAGE(levels + values)
    parquet-java (Spark; streamwrite's "parquet-java"):     levels + DATA_PAGE(values)

Both are read. The module's 4-byte length prefix tells them apart (at byte 0 it equals
``len(body) - 4`` in the Arrow layout; after the levels it equals ``len(body) - levels - 4`` in
parquet-java's), which works for CTR page bodies too (no tag to try); under GCM a body where both
hold is tried as Arrow first, then as parquet-java.
"""

from __future__ import annotations

from typing import Protocol

from streamwrite.errors import CorruptFileError, EncryptionError, FormatError, LimitError
from streamwrite.format import structs as t
from streamwrite.format.aad import ModuleType
from streamwrite.format.enums import PageType
from streamwrite.format.thrift.codec import deserialize

__all__ = ["PageCipher", "PageDecryption"]


class PageCipher(Protocol):
    """Decrypts the modules of one column chunk (``crypto.decryption.ChunkDecryptor``)."""

    def decrypt(
        self, module_type: ModuleType, buf: bytes | memoryview, page_ordinal: int = -1
    ) -> tuple[bytes, int]:
        """Returns the plaintext of the module at the start of ``buf`` and the bytes it took.

        Raises EncryptionError naming the module when it does not decrypt."""
        ...


class PageDecryption:
    """Decryption of page headers and bodies (module docstring)."""

    buf: memoryview
    chunk_offset: int
    cipher: PageCipher | None
    where: str

    def error(self, message: str, pos: int) -> CorruptFileError:
        return CorruptFileError(f"{self.where}: {message}", self.chunk_offset + pos)

    def encryption_error(self, exc: EncryptionError, pos: int, also: str = "") -> EncryptionError:
        return EncryptionError(f"{exc}{also} (page at byte offset {self.chunk_offset + pos})")

    def decrypt_header(
        self, pos: int, page_ordinal: int, dictionary: bool
    ) -> tuple[t.PageHeader, int]:
        """Decrypts the page header module at ``pos`` (a dictionary page header if
        ``dictionary``); returns it and where the body starts."""
        assert self.cipher is not None
        module = ModuleType.DICTIONARY_PAGE_HEADER if dictionary else ModuleType.DATA_PAGE_HEADER
        try:
            plain, used = self.cipher.decrypt(module, self.buf[pos:], page_ordinal)
        except EncryptionError as exc:
            raise self.encryption_error(exc, pos) from None
        try:
            header, _ = deserialize(t.PageHeader, plain)  # zero padding may follow
        except (FormatError, LimitError) as exc:
            raise self.error(f"unreadable decrypted {module.name}: {exc}", pos) from exc
        if dictionary != (header.type == PageType.DICTIONARY_PAGE):
            raise self.error(f"the {module.name} module holds a page of type {header.type}.", pos)
        return header, pos + used

    def decrypt_body(
        self, header: t.PageHeader, body: memoryview, pos: int, page_ordinal: int, also: str = ""
    ) -> memoryview:
        """The decrypted page body; ``also`` adds to a failure message (CRC32 mismatch).

        A DATA_PAGE_V2 with levels comes in two layouts (module docstring); see
        :meth:`decrypt_v2_body`."""
        assert self.cipher is not None
        if header.type == PageType.DATA_PAGE_V2 and header.data_page_header_v2 is not None:
            v2 = header.data_page_header_v2
            levels = (v2.repetition_levels_byte_length or 0) + (
                v2.definition_levels_byte_length or 0
            )
            if 0 < levels < len(body):
                return self.decrypt_v2_body(body, levels, pos, page_ordinal, also)
        return self.decrypt_module(header, body, pos, page_ordinal, also)

    def decrypt_v2_body(
        self, body: memoryview, levels: int, pos: int, page_ordinal: int, also: str
    ) -> memoryview:
        """Decrypts a DATA_PAGE_V2 body with ``levels`` bytes of levels, in either layout.

        The layout is told by the module length prefix: the whole-body module (Arrow) starts
        with ``len(body) - 4``; parquet-java's values module, after the plaintext levels, with
        ``len(body) - levels - 4``. Both cannot hold unless the levels' first 4 bytes happen to
        equal that number; then (GCM) the whole-body module is tried first and the other on an
        authentication failure. Under AES_GCM_CTR_V1 a page body has no tag, so the length
        check alone decides. If neither fits, the whole-body module is tried, for its error.
        """
        size = len(body)
        arrow = int.from_bytes(body[0:4], "little") == size - 4
        java = size - levels >= 4 and (
            int.from_bytes(body[levels : levels + 4], "little") == size - levels - 4
        )
        if arrow or not java:
            try:
                return self.decrypt_module(None, body, pos, page_ordinal, also)
            except EncryptionError as exc:
                if not java:
                    raise
                first = exc
            try:
                values = self.decrypt_module(None, body[levels:], pos, page_ordinal, also)
            except EncryptionError:
                raise first from None
        else:
            values = self.decrypt_module(None, body[levels:], pos, page_ordinal, also)
        return memoryview(bytes(body[:levels]) + bytes(values))

    def decrypt_module(
        self,
        header: t.PageHeader | None,
        body: memoryview,
        pos: int,
        page_ordinal: int,
        also: str = "",
    ) -> memoryview:
        """Decrypts ``body`` as one page module (``header`` None: a DATA_PAGE module)."""
        assert self.cipher is not None
        dictionary = header is not None and header.type == PageType.DICTIONARY_PAGE
        module = ModuleType.DICTIONARY_PAGE if dictionary else ModuleType.DATA_PAGE
        try:
            plain, used = self.cipher.decrypt(module, body, page_ordinal)
        except EncryptionError as exc:
            raise self.encryption_error(exc, pos, also) from None
        if used != len(body):
            raise EncryptionError(
                f"{self.where}: the {module.name} module of page {page_ordinal} takes {used} "
                f"bytes, its header says {len(body)} (page at byte offset "
                f"{self.chunk_offset + pos})."
            )
        return memoryview(plain)
