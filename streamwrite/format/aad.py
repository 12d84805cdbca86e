"""Additional authenticated data (AAD) of Parquet modular encryption modules.

Implements the Parquet format spec, section 7.3 "Parquet Modular Encryption", 4.4 "Additional
Authenticated Data" (parquet-format ``Encryption.md``). Every AAD is built here and nowhere
else::

    file_aad    := aad_prefix aad_file_unique      aad_prefix may be empty (none stored/supplied)
    footer_aad  := file_aad module_type            module_type = 0 (FOOTER), 1 byte
    module_aad  := file_aad module_type rg col     ColumnMetaData, dictionary page (+header),
                                                   ColumnIndex, OffsetIndex, bloom filter
                                                   header and bitset
                 | file_aad module_type rg col page   data page and data page header only
    rg | col | page := i16 little endian           row group, column and page ordinal

``rg`` is the row group's ordinal in the file (``RowGroup.ordinal``), ``col`` the leaf column's
ordinal in the schema, ``page`` the data page's ordinal in its column chunk (0-based; the
dictionary page is not counted). A data page and its header share the same page ordinal.
Ordinals are 16-bit signed on the wire, so none may exceed 32767 (Arrow's ``CheckPageOrdinal``
and the spec's i16 ``RowGroup.ordinal``).

Pure: no I/O, no cryptography.
"""

from __future__ import annotations

import struct
from enum import IntEnum

from streamwrite.errors import ConfigError, LimitError

__all__ = ["MAX_ORDINAL", "ModuleType", "file_aad", "module_aad"]

MAX_ORDINAL = 32767
"""Largest row group, column or page ordinal an AAD can carry (i16)."""

_RG_COL = struct.Struct("<Bhh")
_RG_COL_PAGE = struct.Struct("<Bhhh")


class ModuleType(IntEnum):
    """Module types of the AAD suffix (spec 7.3, section 4.4.2), one byte on the wire."""

    FOOTER = 0
    COLUMN_META_DATA = 1
    DATA_PAGE = 2
    DICTIONARY_PAGE = 3
    DATA_PAGE_HEADER = 4
    DICTIONARY_PAGE_HEADER = 5
    COLUMN_INDEX = 6
    OFFSET_INDEX = 7
    BLOOM_FILTER_HEADER = 8
    BLOOM_FILTER_BITSET = 9


_PAGE_TYPES = frozenset({ModuleType.DATA_PAGE, ModuleType.DATA_PAGE_HEADER})


def file_aad(aad_prefix: bytes, aad_file_unique: bytes) -> bytes:
    """Returns the file part common to every module AAD of one file.

    Args:
        aad_prefix: The AAD prefix stored in ``aad_prefix`` or supplied by the reader; ``b""``
            when the file has none.
        aad_file_unique: The file's random ``aad_file_unique`` (8 bytes in Arrow and parquet-java
            files).

    Returns:
        ``aad_prefix || aad_file_unique``.
    """
    return bytes(aad_prefix) + bytes(aad_file_unique)


def _check_ordinal(name: str, value: int, module_type: ModuleType) -> None:
    if value > MAX_ORDINAL:
        raise LimitError(
            f"The {name} ordinal {value} of a {module_type.name} module exceeds {MAX_ORDINAL}, "
            "the largest an encrypted Parquet file can hold (i16 in the module AAD)."
        )
    if value < 0:
        raise ConfigError(f"A {module_type.name} module needs a {name} ordinal >= 0, got {value}.")


def module_aad(
    file_aad: bytes,
    module_type: ModuleType,
    row_group_ordinal: int = -1,
    column_ordinal: int = -1,
    page_ordinal: int = -1,
) -> bytes:
    """Returns the AAD of one module.

    Args:
        file_aad: ``aad_prefix || aad_file_unique`` from :func:`file_aad`.
        module_type: Which module is encrypted.
        row_group_ordinal: The row group's ordinal; ignored for ``FOOTER``.
        column_ordinal: The leaf column's ordinal; ignored for ``FOOTER``.
        page_ordinal: The data page's ordinal in its column chunk; used only for ``DATA_PAGE``
            and ``DATA_PAGE_HEADER``, ignored otherwise.

    Returns:
        ``file_aad || type`` for the footer, ``file_aad || type || rg || col`` for most modules,
        ``file_aad || type || rg || col || page`` for data pages and data page headers.

    Raises:
        LimitError: A used ordinal exceeds 32767 (the message names which one).
        ConfigError: A used ordinal is negative (not given), or ``module_type`` is unknown.
    """
    try:
        module_type = ModuleType(module_type)
    except ValueError:
        raise ConfigError(f"{module_type!r} is not a Parquet encryption module type.") from None
    if module_type is ModuleType.FOOTER:
        return file_aad + b"\x00"
    _check_ordinal("row group", row_group_ordinal, module_type)
    _check_ordinal("column", column_ordinal, module_type)
    if module_type in _PAGE_TYPES:
        _check_ordinal("page", page_ordinal, module_type)
        return file_aad + _RG_COL_PAGE.pack(
            module_type, row_group_ordinal, column_ordinal, page_ordinal
        )
    return file_aad + _RG_COL.pack(module_type, row_group_ordinal, column_ordinal)
