"""What ring 1 needs of a schema and of an encryptor: small structural protocols.

The machines of ``layout/`` take the file's schema and its encryption state from the shell, but
import neither pyarrow nor cryptography: they name only what they use. The shell's types fit
by their shape (mypy checks it where they are passed in):

- :class:`SchemaPort`: :class:`streamwrite.arrow.schema.ParquetSchema` (its ``columns`` are
  :class:`streamwrite.arrow.schema.ColumnSpec`, a :class:`ColumnPort`);
- :class:`EncryptorPort`: :class:`streamwrite.crypto.encryption.FileEncryptor` (its ciphers,
  ``workers.cipher.ModuleCipher``, are a :class:`CipherPort`).

Each member is what the file writer puts in the file (FileMetaData schema, ARROW:schema value,
``_pm`` column descriptors) or a sealing step of spec 7.3 it asks for once offsets are final::

    start()          magic                             "PARE" (encrypted footer) | "PAR1"
    add_row_group()  check_row_group_ordinal(rg)       refuse rg > 32767 (i16 AADs)
                     seal_column_chunk(column, rg, col)
    footer()         seal_index(module, data, rg, col) COLUMN_INDEX / OFFSET_INDEX modules
                     footer_tail(FileMetaData)         (tail, closing magic)
    _pm rebuild      column_cipher(col).decrypt(COLUMN_META_DATA, data, rg, col)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from streamwrite.format import structs as t
from streamwrite.format.aad import ModuleType
from streamwrite.format.enums import FieldRepetitionType, Type

__all__ = ["CipherPort", "ColumnPort", "EncryptorPort", "EncryptorT", "SchemaPort"]


class ColumnPort(Protocol):
    """One leaf column, as the Parquet side of a schema describes it."""

    @property
    def index(self) -> int:
        """Leaf column ordinal."""

    @property
    def name(self) -> str:
        """Column name: a flat column's name, a nested leaf's dotted ``path_in_schema``."""

    @property
    def physical_type(self) -> Type:
        """Parquet physical type."""

    @property
    def type_length(self) -> int | None:
        """Byte width of a FIXED_LEN_BYTE_ARRAY column, else None."""

    @property
    def repetition(self) -> FieldRepetitionType:
        """REQUIRED or OPTIONAL."""

    @property
    def max_definition_level(self) -> int:
        """Flat: 1 for OPTIONAL, 0 for REQUIRED; nested: the leaf's definition level."""

    @property
    def max_repetition_level(self) -> int:
        """Repeated (LIST / MAP) ancestors of the leaf; 0 for a flat column."""


class SchemaPort(Protocol):
    """The Parquet side of a file's schema: what its footers and its ``_pm`` hold."""

    @property
    def elements(self) -> list[t.SchemaElement]:
        """``FileMetaData.schema``: the root element first, then the groups and leaves of
        each field, depth first."""

    @property
    def columns(self) -> Sequence[ColumnPort]:
        """One descriptor per leaf column, in order."""

    @property
    def arrow_schema_value(self) -> str:
        """The footer's ``ARROW:schema`` value (base64 of the IPC-serialized schema)."""


class CipherPort(Protocol):
    """The module cipher of one column (or of the footer)."""

    def decrypt(
        self,
        module_type: ModuleType,
        buf: bytes,
        row_group_ordinal: int,
        column_ordinal: int,
        /,
    ) -> tuple[bytes, int]:
        """Returns: the plaintext of the module at the start of ``buf`` and its stored size.

        Raises:
            EncryptionError: the module does not authenticate.
        """


class EncryptorPort(Protocol):
    """The encryption state of one file, as the file writer and the appender use it."""

    @property
    def magic(self) -> bytes:
        """The file's leading and trailing magic: ``PARE`` (encrypted footer) or ``PAR1``."""

    def check_row_group_ordinal(self, ordinal: int, /) -> None:
        """Raises: LimitError if ``ordinal`` exceeds 32767."""

    def column_cipher(self, column_ordinal: int, /) -> CipherPort | None:
        """Returns: the cipher of a leaf column, or None if the column is plaintext."""

    def seal_column_chunk(
        self, column: t.ColumnChunk, row_group_ordinal: int, column_ordinal: int, /
    ) -> None:
        """Set the crypto metadata of an encrypted column's ColumnChunk (offsets final)."""

    def seal_index(
        self, module_type: ModuleType, data: bytes, row_group_ordinal: int, column_ordinal: int, /
    ) -> bytes:
        """Returns: a serialized ColumnIndex / OffsetIndex as stored (a module if encrypted)."""

    def footer_tail(self, metadata: t.FileMetaData, /) -> tuple[bytes, bytes]:
        """Returns: ``(tail, magic)``: the bytes before the footer length, and the magic."""


EncryptorT = TypeVar("EncryptorT", bound=EncryptorPort)
"""The encryptor type a machine is given (the shell's ``FileEncryptor``): the machine uses it
only as an :class:`EncryptorPort` and hands it back with its own type
(``FileWriter[FileEncryptor].encryptor``), so the shell keeps its other members."""
