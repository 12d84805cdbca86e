"""Records of the ``_pm`` sidecar: constants, struct formats, and the frozen records.

The byte layout and the decisions taken where the spec is silent are documented in
:mod:`streamwrite.format.sidecar.codec`, which re-exports everything public from here. This module
holds the constants, the ``struct`` formats and the frozen records (column descriptors, header,
column chunk records, row group blocks); :mod:`streamwrite.format.sidecar.blocks` holds the
helpers that fill QuestDB-specific fields and the row group block encoder and decoder.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from streamwrite.errors import ConfigError, CorruptFileError

__all__ = [
    "COLUMN_CHUNK_SIZE",
    "COLUMN_DESCRIPTOR_SIZE",
    "DISTINCT_COUNT_PRESENT",
    "FEATURE_BLOOM_FILTERS",
    "FEATURE_BLOOM_FILTERS_EXTERNAL",
    "FEATURE_SORTING_IS_DTS_ASC",
    "FLAG_DESCENDING",
    "FLAG_IS_ASCII",
    "FLAG_LOCAL_KEY_IS_GLOBAL",
    "FOOTER_FEATURE_PARQUET_FOOTER_XXH64",
    "HEADER_FIXED_SIZE",
    "MAX_STAT_INLINED",
    "MAX_STAT_PRESENT",
    "MAX_STAT_VALUE_EXACT",
    "MIN_STAT_INLINED",
    "MIN_STAT_PRESENT",
    "MIN_STAT_VALUE_EXACT",
    "NULL_COUNT_PRESENT",
    "OOL_STAT_MAX_SIZE",
    "QUESTDB_TIMESTAMP_NANO",
    "ChunkRecord",
    "ColumnDescriptor",
    "RowGroupBlock",
    "SidecarHeader",
    "column_flags",
]

# ---------------------------------------------------------------------------------- constants
HEADER_FIXED_SIZE = 32
COLUMN_DESCRIPTOR_SIZE = 32
COLUMN_CHUNK_SIZE = 64
BLOCK_ALIGNMENT = 8
ROW_GROUP_HEAD_SIZE = 8  # NUM_ROWS

# Header FEATURE_FLAGS bits (spec "Defined feature flags").
FEATURE_BLOOM_FILTERS = 1 << 0
FEATURE_BLOOM_FILTERS_EXTERNAL = 1 << 1
FEATURE_SORTING_IS_DTS_ASC = 1 << 2
KNOWN_HEADER_FEATURES = (
    FEATURE_BLOOM_FILTERS | FEATURE_BLOOM_FILTERS_EXTERNAL | FEATURE_SORTING_IS_DTS_ASC
)
# Footer FOOTER_FEATURE_FLAGS bits. The spec defines none; streamwrite takes the highest
# optional bit (unknown to QuestDB, which may ignore it) to stay clear of bits QuestDB assigns
# from 0 upwards. Section: u64 XXH64 (seed 0) of the Parquet tail the footer names.
FOOTER_FEATURE_PARQUET_FOOTER_XXH64 = 1 << 31
KNOWN_FOOTER_FEATURES = FOOTER_FEATURE_PARQUET_FOOTER_XXH64
REQUIRED_FEATURE_MASK = 0xFFFF_FFFF_0000_0000  # bits 32-63: unknown ones reject the file

# Column descriptor FLAGS bits.
FLAG_LOCAL_KEY_IS_GLOBAL = 1 << 0
FLAG_IS_ASCII = 1 << 1
_REPETITION_SHIFT = 2
_REPETITION_MASK = 0b11 << _REPETITION_SHIFT
FLAG_DESCENDING = 1 << 4

# Column chunk STAT_FLAGS bits.
MIN_STAT_PRESENT = 1 << 0
MIN_STAT_INLINED = 1 << 1
MIN_STAT_VALUE_EXACT = 1 << 2
MAX_STAT_PRESENT = 1 << 3
MAX_STAT_INLINED = 1 << 4
MAX_STAT_VALUE_EXACT = 1 << 5
DISTINCT_COUNT_PRESENT = 1 << 6
NULL_COUNT_PRESENT = 1 << 7

INLINE_STAT_MAX_SIZE = 8
OOL_STAT_MAX_SIZE = 0xFFFF  # the low 16 bits of an out-of-line reference hold the length

# QuestDB ColumnType codes (io.questdb.cairo.ColumnType); TIMESTAMP_NANO = 1 << 18 | TIMESTAMP.
_QDB_BOOLEAN = 1
_QDB_BYTE = 2
_QDB_SHORT = 3
_QDB_INT = 5
_QDB_LONG = 6
_QDB_DATE = 7
_QDB_TIMESTAMP = 8
_QDB_FLOAT = 9
_QDB_DOUBLE = 10
_QDB_SYMBOL = 12
_QDB_BINARY = 18
_QDB_UUID = 19
_QDB_VARCHAR = 26
QUESTDB_TIMESTAMP_NANO = (1 << 18) | _QDB_TIMESTAMP

_HEADER = struct.Struct("<QQiIII")
_DESCRIPTOR = struct.Struct("<QiiiiIBBBB")
_CHUNK = struct.Struct("<BBBBIQQQQQQQ")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U64 = struct.Struct("<Q")

assert _HEADER.size == HEADER_FIXED_SIZE
assert _DESCRIPTOR.size == COLUMN_DESCRIPTOR_SIZE
assert _CHUNK.size == COLUMN_CHUNK_SIZE


def align8(n: int) -> int:
    """Returns ``n`` rounded up to a multiple of 8."""
    return (n + BLOCK_ALIGNMENT - 1) & ~(BLOCK_ALIGNMENT - 1)


def unpack_at(st: struct.Struct, data: bytes, offset: int, what: str) -> tuple[Any, ...]:
    """Unpacks ``st`` at ``offset``; raises CorruptFileError if it runs past the data."""
    if offset < 0 or offset + st.size > len(data):
        raise CorruptFileError(
            f"The _pm file is truncated: {what} needs {st.size} bytes at offset {offset} "
            f"but only {len(data)} bytes are committed.",
            offset,
        )
    return st.unpack_from(data, offset)


def pack(st: struct.Struct, what: str, *values: int) -> bytes:
    """Packs ``values``; raises ConfigError naming ``what`` if one does not fit its field."""
    try:
        return st.pack(*values)
    except struct.error as exc:
        raise ConfigError(f"A value of {what} does not fit its _pm field: {exc}.") from None


# ---------------------------------------------------------------------------------- records
def column_flags(
    repetition: int = 0,
    *,
    descending: bool = False,
    local_key_is_global: bool = False,
    is_ascii: bool = False,
) -> int:
    """Builds a column descriptor FLAGS value.

    Args:
        repetition: ``FieldRepetitionType`` value (0 required, 1 optional, 2 repeated).
        descending: the column is a sorting column in descending order.
        local_key_is_global: QuestDB SYMBOL flag (streamwrite writes False).
        is_ascii: QuestDB VARCHAR flag (streamwrite writes False).

    Returns:
        The FLAGS bits.

    Raises:
        ConfigError: ``repetition`` is not 0, 1 or 2.
    """
    if repetition not in (0, 1, 2):
        raise ConfigError(f"Column repetition must be 0, 1 or 2, got {repetition}.")
    flags = repetition << _REPETITION_SHIFT
    if descending:
        flags |= FLAG_DESCENDING
    if local_key_is_global:
        flags |= FLAG_LOCAL_KEY_IS_GLOBAL
    if is_ascii:
        flags |= FLAG_IS_ASCII
    return flags


@dataclass(frozen=True, slots=True)
class ColumnDescriptor:
    """One column of the header (32 bytes on disk, plus its name among the name strings)."""

    name: str
    physical_type: int
    fixed_byte_len: int = 0
    max_rep_level: int = 0
    max_def_level: int = 0
    column_id: int = -1
    type_code: int = 0
    flags: int = 0

    @property
    def repetition(self) -> int:
        """FIELD_REPETITION (bits 2-3 of FLAGS): 0 required, 1 optional, 2 repeated."""
        return (self.flags & _REPETITION_MASK) >> _REPETITION_SHIFT

    @property
    def descending(self) -> bool:
        """The DESCENDING flag (bit 4)."""
        return bool(self.flags & FLAG_DESCENDING)


@dataclass(frozen=True, slots=True)
class SidecarHeader:
    """The file-wide header: columns, sorting, feature flags and the bloom column list."""

    columns: tuple[ColumnDescriptor, ...]
    designated_timestamp: int = -1
    sorting_columns: tuple[int, ...] = ()
    feature_flags: int = 0
    bloom_columns: tuple[int, ...] = ()

    @property
    def bloom_inlined(self) -> bool:
        """Bloom bitsets live in ``_pm`` (bit 0 set, bit 1 clear)."""
        ff = self.feature_flags
        return bool(ff & FEATURE_BLOOM_FILTERS) and not ff & FEATURE_BLOOM_FILTERS_EXTERNAL

    @property
    def bloom_external(self) -> bool:
        """Bloom bitsets live in the parquet file (bits 0 and 1 set)."""
        ff = self.feature_flags
        return bool(ff & FEATURE_BLOOM_FILTERS) and bool(ff & FEATURE_BLOOM_FILTERS_EXTERNAL)


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """One column chunk record of a row group block (64 bytes plus out-of-line stats).

    ``min_stat``/``max_stat`` are the parquet stat bytes verbatim (physical width, parquet
    units). ``None`` (and, by our choice, an empty or over-65535-byte payload) is written as
    absent. ``*_exact`` are meaningful only when the stat is present; a decoded absent stat
    reports ``True``.
    """

    codec: int
    encodings: int
    num_values: int
    byte_range_start: int
    total_compressed: int
    null_count: int | None
    distinct_count: int | None
    min_stat: bytes | None
    max_stat: bytes | None
    min_exact: bool = True
    max_exact: bool = True


@dataclass(frozen=True, slots=True)
class RowGroupBlock:
    """One row group: its row count, one chunk record per column, and inlined bloom bitsets.

    ``bloom_bitsets`` has one entry per header bloom column (``None`` = absent) in inlined mode,
    or is empty (all absent, and always in external mode).
    """

    num_rows: int
    chunks: tuple[ChunkRecord, ...]
    bloom_bitsets: tuple[bytes | None, ...] = ()
