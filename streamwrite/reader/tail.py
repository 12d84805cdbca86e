"""Where a reader's bytes come from, and the tail of a Parquet file (footer and magic).

:class:`_Bytes` gives bounded random access to a path, a file object, a buffer, or a live
file's committed prefix (never beyond the committed size ``_pm`` names). :func:`_read_footer`
parses the tail (parquet-format "File Format", and 7.3 "Parquet Modular Encryption")::

    ... FileMetaData footer_length (u32 LE) "PAR1"                          plaintext
    ... FileMetaData nonce(12) tag(16) footer_length (u32 LE) "PAR1"        signed plaintext footer
    ... FileCryptoMetaData footer_module footer_length (u32 LE) "PARE"      encrypted footer

What is checked on every read (:mod:`streamwrite.arrow.schema_check` holds the schema checks):

* any file: the decoded schema against the footer's ``ARROW:schema`` entry, when present;
* a live file (a directory, read at its newest commit or at ``snapshot=``): ``_pm`` must be
  intact (its CRC) and list the version read; before the footer is decoded, the tail
  ``[PARQUET_FOOTER_OFFSET, committed size)`` must have the offset, length and XXH64 the
  ``_pm`` footer records for it (``footer_check`` says "verified", or "unchecked" for a
  ``_pm`` footer written before streamwrite recorded the checksum), and the decoded schema
  must match the ``_pm`` column descriptors.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal, Protocol, TypeVar, cast, runtime_checkable

from streamwrite.arrow.schema_check import check_arrow_schema, check_sidecar_columns
from streamwrite.crypto.decryption import DecryptionConfig, FileDecryptor
from streamwrite.errors import (
    ChecksumError,
    ConfigError,
    CorruptFileError,
    EncryptionError,
    FormatError,
)
from streamwrite.format import structs as t
from streamwrite.format.enums import FieldRepetitionType
from streamwrite.format.sidecar.codec import (
    SidecarFooter,
    SidecarHeader,
    parquet_footer_checksum,
    read_version,
)
from streamwrite.format.thrift.codec import deserialize
from streamwrite.format.txn import RETIRED_DATA_FILE
from streamwrite.layout.actions import LiveFileName
from workers.cipher import FOOTER_SIGNATURE_SIZE
from workers.decode import KERNEL_ERRORS

__all__ = [
    "ByteSource",
    "FooterCheck",
    "LiveVersion",
    "Source",
    "committed_size",
    "live_version",
]

MAGIC = b"PAR1"
ENCRYPTED_MAGIC = b"PARE"


@runtime_checkable
class ByteSource(Protocol):
    """Random access to a fixed number of bytes held elsewhere (an object in a store, read by
    ranges): anything with ``size``, ``read(offset, size)`` and ``close()``.

    ``read`` raises :class:`~streamwrite.errors.CorruptFileError` for a range past ``size`` or
    bytes that are missing, :class:`~streamwrite.errors.StreamwriteIOError` when they cannot be
    fetched. A source may also have ``verify_head: bool`` (False: the reader checks the leading
    magic only when ``holds(0, 4)`` says it is already fetched, to save a request),
    ``holds(offset, size) -> bool``, and ``prefetch(ranges)``, which the reader calls with the
    ``(offset, size)`` column chunks of a row group before reading them one by one.
    """

    @property
    def size(self) -> int: ...

    def read(self, offset: int, size: int) -> memoryview | bytes: ...

    def close(self) -> None: ...


Source = str | os.PathLike[str] | bytes | bytearray | memoryview | IO[bytes] | ByteSource
_T = TypeVar("_T")
FooterCheck = Literal["verified", "unchecked", "none"]
"""How the Parquet footer read was checked against ``_pm``: its recorded XXH64 matched
("verified"), ``_pm`` holds no checksum for it ("unchecked", written before streamwrite recorded
them), or the source is not a live file ("none")."""


@dataclass(frozen=True, slots=True)
class LiveVersion:
    """What a live file's ``_pm`` records about one committed version of ``data.parquet``."""

    directory: Path
    header: SidecarHeader
    footer: SidecarFooter


class _Bytes:
    """Random access to a file, a file object, an in-memory buffer or a :class:`ByteSource`,
    of a fixed size."""

    def __init__(self, source: Source, snapshot: int | None = None) -> None:
        self._file: IO[bytes] | None = None
        self._owned = False
        self._buffer: memoryview | None = None
        self._ranged: ByteSource | None = None
        self.live: LiveVersion | None = None
        """The ``_pm`` record of the version read, for a live file (a directory)."""
        self.footer_check: FooterCheck = "none"
        if isinstance(source, bytes | bytearray | memoryview):
            self._buffer = memoryview(source).cast("B")
            self.size = len(self._buffer)
        elif isinstance(source, str | os.PathLike):
            path = Path(source)
            if path.is_dir():  # a live file: only its committed sizes exist for readers
                self.live = live_version(path, snapshot)
                snapshot = self.live.footer.parquet_file_size
                self._file = _open_live_data(path)
            else:  # a plain path that does not exist raises FileNotFoundError, as pyarrow
                self._file = open(path, "rb")  # noqa: SIM115 - closed by close()
            self._owned = True
            self.size = os.fstat(self._file.fileno()).st_size
        elif isinstance(source, ByteSource) and not hasattr(source, "seek"):
            # a file object has seek() and no size; a ByteSource the reverse
            self._ranged = source
            self.size = source.size
        else:
            self._file = cast(IO[bytes], source)
            self.size = self._file.seek(0, os.SEEK_END)
        if snapshot is not None:
            if not 12 <= snapshot <= self.size:
                self.close()
                raise ConfigError(
                    f"Snapshot size {snapshot} is not a committed size of this "
                    f"{self.size}-byte file."
                )
            self.size = snapshot

    def read(self, offset: int, size: int) -> memoryview:
        if offset < 0 or size < 0 or offset + size > self.size:
            raise CorruptFileError(
                f"A read of {size} bytes runs past the end of the {self.size}-byte file.", offset
            )
        if self._buffer is not None:
            return self._buffer[offset : offset + size]
        if self._ranged is not None:
            data = self._ranged.read(offset, size)
            if len(data) != size:
                raise CorruptFileError(f"Short read: {len(data)} of {size} bytes.", offset)
            return data if isinstance(data, memoryview) else memoryview(data)
        assert self._file is not None
        self._file.seek(offset)
        data = self._file.read(size)
        if len(data) != size:
            raise CorruptFileError(f"Short read: {len(data)} of {size} bytes.", offset)
        return memoryview(data)

    @property
    def can_prefetch(self) -> bool:
        """Whether the source fetches announced ranges ahead (:meth:`prefetch`)."""
        return callable(getattr(self._ranged, "prefetch", None))

    def prefetch(self, ranges: list[tuple[int, int]]) -> None:
        """Tell a :class:`ByteSource` that has ``prefetch`` the ``(offset, size)`` ranges about
        to be read (it may fetch them at once; ``[]``: release what it prefetched); nothing
        for other sources."""
        prefetch = getattr(self._ranged, "prefetch", None)
        if callable(prefetch):
            prefetch(ranges)

    def head_is_free(self) -> bool:
        """Whether reading the leading magic costs no request of its own (a local source, or
        a :class:`ByteSource` that already holds it or asks for it to be checked anyway)."""
        if self._ranged is None:
            return True
        if getattr(self._ranged, "verify_head", True):
            return True
        holds = getattr(self._ranged, "holds", None)
        return bool(holds(0, 4)) if holds is not None else False

    def close(self) -> None:
        if self._owned and self._file is not None:
            self._file.close()
        if self._ranged is not None:
            self._ranged.close()


def _open_live_data(directory: Path) -> IO[bytes]:
    """Open the data file of a live file: ``data.parquet``, or ``_data.retired`` once
    compaction retired the table segment it is (a retire renames one way only, so trying the
    names in this order never misses a file that exists).

    Raises:
        CorruptFileError: neither exists, though ``_pm`` records a commit.
    """
    for name in (LiveFileName.DATA.value, RETIRED_DATA_FILE):
        try:
            return open(directory / name, "rb")  # _Bytes.close closes it
        except FileNotFoundError:
            continue
    raise CorruptFileError(
        f"The live file {str(directory)!r} has a committed _pm but no "
        f"{LiveFileName.DATA.value}: committed data is gone.",
        0,
    )


def committed_size(directory: Path) -> int:
    """The committed size of ``data.parquet`` in a live-file directory, from its ``_pm``.

    Raises:
        CorruptFileError: ``_pm`` is missing or unreadable (reopening the live file rebuilds it).
        ConfigError: ``directory`` is a table's partition (segments inside, no ``_pm``).
    """
    return live_version(directory).footer.parquet_file_size


def live_version(directory: Path, parquet_size: int | None = None) -> LiveVersion:
    """The ``_pm`` record of the committed version of size ``parquet_size`` (default the
    newest) of the live file in ``directory``; ``_pm``'s CRC is verified.

    Raises:
        CorruptFileError: ``_pm`` is missing, unreadable or damaged (reopening the live file
            rebuilds a missing or damaged one from the footer chain).
        ConfigError: ``directory`` is a table's partition (segments inside, no ``_pm``), or
            ``parquet_size`` is not a committed size of the live file.
    """
    try:
        data = (directory / LiveFileName.PM.value).read_bytes()
    except OSError as exc:
        if (directory.parent / "_txn").is_file() or any(directory.glob("seg-*")):
            raise ConfigError(
                f"{str(directory)!r} is a partition of a table, not a live file: read the "
                "table's directory (its _txn names the committed segments)."
            ) from exc
        raise CorruptFileError(
            f"The live file {str(directory)!r} has no readable _pm: {exc}.", 0
        ) from exc
    try:
        header, _, footer = read_version(data, parquet_size)
    except CorruptFileError as exc:
        raise CorruptFileError(
            f"The _pm of the live file {str(directory)!r} is damaged: {exc}", exc.offset
        ) from exc
    except ConfigError as exc:
        raise ConfigError(
            f"Snapshot {parquet_size} of the live file {str(directory)!r} does not exist: {exc}"
        ) from exc
    return LiveVersion(directory, header, footer)


def _check_live_tail(source: _Bytes, live: LiveVersion) -> FooterCheck:
    """Check the Parquet tail against the offset, length and XXH64 ``_pm`` records for it,
    before anything in it is interpreted."""
    footer = live.footer
    where = f"data.parquet of the live file {str(live.directory)!r} at size {source.size}"
    tail_offset = footer.parquet_footer_offset
    tail_size = footer.parquet_footer_length + 8
    if tail_offset + tail_size != source.size or tail_offset < 4:
        raise CorruptFileError(
            f"The _pm footer of {where} names a Parquet footer at {tail_offset} of "
            f"{footer.parquet_footer_length} bytes, which does not end the snapshot.",
            max(tail_offset, 0),
        )
    stored = footer.parquet_footer_checksum
    if stored is None:
        return "unchecked"
    actual = parquet_footer_checksum(source.read(tail_offset, tail_size))
    if actual != stored:
        raise ChecksumError(
            f"The Parquet footer of {where} (bytes [{tail_offset}, {source.size})) has XXH64 "
            f"{actual:#018x}, but _pm recorded {stored:#018x}: the footer is damaged.",
            tail_offset,
        )
    return "verified"


def _decode_footer_struct(
    cls: type[_T], data: memoryview, what: str, offset: int
) -> tuple[_T, int]:
    try:
        return deserialize(cls, data)
    except FormatError as exc:
        raise CorruptFileError(f"The footer ({what}) does not decode: {exc}", offset) from exc
    except KERNEL_ERRORS as exc:
        raise CorruptFileError(
            f"The footer ({what}) does not decode ({type(exc).__name__}: {exc}).", offset
        ) from exc


def _read_footer(
    source: _Bytes, decryption: DecryptionConfig | None = None
) -> tuple[t.FileMetaData, int, FileDecryptor | None]:
    """The FileMetaData, the offset where the footer starts, and the file's decryptor (None
    for a plaintext file, or a plaintext-footer file read without keys).

    The footer is checked as the module docstring says (``source.footer_check`` records how).

    Raises:
        ChecksumError: a live file's Parquet footer does not have the XXH64 ``_pm`` recorded.
        CorruptFileError: Bad magic, footer length or footer bytes; a schema that does not
            match ``ARROW:schema`` or a live file's ``_pm`` column descriptors.
        EncryptionError: An encrypted footer without keys, a wrong footer key or AAD prefix, a
            tampered footer or footer signature.
    """
    if source.size < 12:
        raise CorruptFileError(
            f"A Parquet file needs at least 12 bytes, this one has {source.size}.", 0
        )
    if source.live is not None:
        source.footer_check = _check_live_tail(source, source.live)
    metadata, footer_offset, decryptor = _decode_tail(source, decryption)
    schema = metadata.schema or []
    check_arrow_schema(schema, metadata.key_value_metadata, footer_offset)
    if source.live is not None and schema:
        check_sidecar_columns(schema, source.live.header, footer_offset)
    return metadata, footer_offset, decryptor


def _decode_tail(
    source: _Bytes, decryption: DecryptionConfig | None
) -> tuple[t.FileMetaData, int, FileDecryptor | None]:
    tail = bytes(source.read(source.size - 8, 8))
    magic = tail[4:]
    # A ranged source would spend a request on the leading magic: it is checked when already
    # fetched (pyarrow never checks it); the trailing magic and the footer always are.
    head_checked = source.head_is_free()
    if magic not in (MAGIC, ENCRYPTED_MAGIC) or (
        head_checked and bytes(source.read(0, 4)) != magic
    ):
        raise CorruptFileError(
            "The file does not start and end with the same magic (PAR1, or PARE when "
            "its footer is encrypted).",
            source.size - 4,
        )
    footer_size = int.from_bytes(tail[:4], "little")
    footer_offset = source.size - 8 - footer_size
    if footer_size == 0 or footer_offset < 4:
        raise CorruptFileError(
            f"Footer length {footer_size} does not fit in the {source.size}-byte file.",
            source.size - 8,
        )
    footer = source.read(footer_offset, footer_size)
    if magic == ENCRYPTED_MAGIC:
        if decryption is None:
            raise EncryptionError(
                "The file has an encrypted footer (PARE magic): it needs decryption keys "
                "(decryption=DecryptionConfig...)."
            )
        crypto, end = _decode_footer_struct(
            t.FileCryptoMetaData, footer, "FileCryptoMetaData", footer_offset
        )
        assert crypto.encryption_algorithm is not None  # a required field
        decryptor = FileDecryptor(decryption, crypto.encryption_algorithm, crypto.key_metadata)
        try:
            metadata = decryptor.decrypt_footer(footer[end:])
        except FormatError as exc:
            raise CorruptFileError(str(exc), footer_offset + end) from exc
        return metadata, footer_offset, decryptor
    metadata, end = _decode_footer_struct(t.FileMetaData, footer, "FileMetaData", footer_offset)
    if metadata.encryption_algorithm is None:
        return metadata, footer_offset, None
    if footer_size - end != FOOTER_SIGNATURE_SIZE:
        raise CorruptFileError(
            f"The signed plaintext footer leaves {footer_size - end} bytes after its "
            f"FileMetaData for the {FOOTER_SIGNATURE_SIZE}-byte signature.",
            footer_offset + end,
        )
    if decryption is None:
        return metadata, footer_offset, None
    decryptor = FileDecryptor(
        decryption, metadata.encryption_algorithm, metadata.footer_signing_key_metadata
    )
    decryptor.verify_footer(footer[:end], footer[end:])
    return metadata, footer_offset, decryptor


def _leaf_paths(elements: list[t.SchemaElement]) -> list[tuple[str, t.SchemaElement, bool]]:
    """Every leaf of a (possibly nested) schema in column order: its dotted path, its element,
    and whether it is a flat top-level column (a direct, non-REPEATED child of the root)."""
    leaves: list[tuple[str, t.SchemaElement, bool]] = []
    stack: list[tuple[list[int], list[str]]] = [([max(elements[0].num_children or 0, 0)], [])]
    for element in elements[1:]:
        while stack and stack[-1][0][0] == 0:
            stack.pop()
        if not stack:
            raise FormatError("The schema has more elements than its groups have children.")
        remaining, prefix = stack[-1]
        remaining[0] -= 1
        path = [*prefix, element.name or ""]
        if element.num_children:
            stack.append(([max(element.num_children, 0)], path))
        else:
            flat = len(stack) == 1 and element.repetition_type != FieldRepetitionType.REPEATED
            leaves.append((".".join(path), element, flat))
    return leaves


_PARQUET_816_FIXED = (1, 2, 9)
_MAX_DICTIONARY_HEADER_SIZE = 100


def _needs_parquet_816_padding(created_by: str | None) -> bool:
    """parquet-mr up to 1.2.8 left the dictionary page header out of a chunk's size.

    Readers (parquet-cpp ``ComputeColumnChunkRange``) add up to 100 bytes to such chunks.
    """
    if not created_by:
        return False
    application, _, rest = created_by.lower().partition(" version ")
    if application.strip() != "parquet-mr":
        return False
    numbers = []
    for part in rest.split("(")[0].strip().split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        numbers.append(int(digits) if digits else 0)
    numbers += [0] * (3 - len(numbers))
    return tuple(numbers) < _PARQUET_816_FIXED
