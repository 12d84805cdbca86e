"""The ``_pm`` sidecar: QuestDB's "Parquet partition metadata file" (spec/002), sans I/O.

Little-endian throughout. Offsets are absolute ``_pm`` offsets unless marked *rel*.

File (spec "File format")::

    0    HEADER  (fixed 32 B, descriptors, sorting columns, names, header feature sections,
                  zero-padded by streamwrite to a multiple of 8)
    ...  ROW GROUP BLOCK*     8-aligned; reused by later footers
    ...  FOOTER, CHECKSUM, FOOTER_LENGTH        <- commit 1 (PREV = 0)
    ...  zero padding to 8, new ROW GROUP BLOCK*, FOOTER, CHECKSUM, FOOTER_LENGTH  <- commit 2
    PARQUET_META_FILE_SIZE (header offset 0) = end of the newest trailer; patched last.

Header (32 B fixed)::

    0 u64 PARQUET_META_FILE_SIZE  8 u64 FEATURE_FLAGS  16 i32 DESIGNATED_TIMESTAMP
    20 u32 SORTING_COLUMN_COUNT   24 u32 COLUMN_COUNT  28 u32 RESERVED = 0
    32  COLUMN_COUNT x descriptor (32 B)
    ..  SORTING_COLUMN_COUNT x u32 column index
    ..  NAME_STRINGS (utf-8, not terminated, packed back to back by streamwrite)
    ..  bit 0 BLOOM_FILTERS: u32 BLOOM_COL_COUNT, BLOOM_COL_COUNT x u32 (sorted, unique)

Column descriptor (32 B)::

    0 u64 NAME_OFFSET  8 i32 ID  12 i32 TYPE  16 i32 FLAGS  20 i32 FIXED_BYTE_LEN
    24 u32 NAME_LENGTH  28 u8 PHYSICAL_TYPE  29 u8 MAX_REP_LEVEL  30 u8 MAX_DEF_LEVEL  31 u8 0
    FLAGS: bit 0 LOCAL_KEY_IS_GLOBAL, bit 1 IS_ASCII, bits 2-3 FIELD_REPETITION, bit 4 DESCENDING

Row group block (8-aligned)::

    0 u64 NUM_ROWS
    8 COLUMN_COUNT x column chunk (64 B)
    .. out-of-line region: OOL stats (min then max, column order), then each inlined bloom
       bitset as [i32 LENGTH][bitset] starting 8-aligned; block zero-padded to a multiple of 8

Column chunk (64 B)::

    0 u8 CODEC  1 u8 ENCODINGS  2 u8 STAT_FLAGS  3 u8 STAT_SIZES (lo: min, hi: max, inline only)
    4 u32 RESERVED = 0   8 u64 NUM_VALUES   16 u64 BYTE_RANGE_START   24 u64 TOTAL_COMPRESSED
    32 u64 NULL_COUNT    40 u64 DISTINCT_COUNT   48 u64 MIN_STAT   56 u64 MAX_STAT
    STAT_FLAGS: bit 0/3 MIN/MAX_PRESENT, 1/4 *_INLINED, 2/5 *_VALUE_EXACT,
                bit 6 DISTINCT_COUNT_PRESENT, bit 7 NULL_COUNT_PRESENT

Footer::

    0 u64 PARQUET_FOOTER_OFFSET  8 u32 PARQUET_FOOTER_LENGTH  12 u32 ROW_GROUP_COUNT
    16 u64 UNUSED_BYTES  24 u64 PREV_PARQUET_META_FILE_SIZE  32 u64 FOOTER_FEATURE_FLAGS
    40 ROW_GROUP_COUNT x u32 (block offset >> 3)
    .. header bit 0 (inlined): ROW_GROUP_COUNT x BLOOM_COL_COUNT x u32 (offset >> 3, 0 = absent)
       header bits 0+1 (external): ROW_GROUP_COUNT x BLOOM_COL_COUNT x (u64 offset, u64 length)
    .. u32 CHECKSUM = CRC32 of file bytes [8, CHECKSUM)   (all earlier blocks and footers too)
    .. u32 FOOTER_LENGTH = bytes from footer start through CHECKSUM (trailer, not in the CRC)

Decisions where the spec is silent or QuestDB's code differs:

* Out-of-line stat reference: ``(rel << 16) | length`` as the spec says, ``rel`` counted from the
  start of the block's out-of-line region (block offset + 8 + 64 x COLUMN_COUNT), as in
  QuestDB's ``RowGroupBlockBuilder.add_out_of_line_stat`` (whose stored code packs
  ``rel << 32``; we follow the spec). A stat is inline when its payload is 1..8 bytes
  (STAT_SIZES = its size), out-of-line when 9..65535 bytes (STAT_SIZES nibble 0). An empty
  payload or one over 65535 bytes is written as absent (PRESENT clear): QuestDB also drops
  empty stats, and the 16-bit length cannot express more.
* Block padding: streamwrite pads the header and every block to 8 bytes and the gap between
  a previous trailer and the next block; a footer follows a block directly. Readers accept
  unpadded footers, as QuestDB writes them.
* Header feature sections start right after the last name string (QuestDB reads them at
  ``max(NAME_OFFSET + NAME_LENGTH)``); no padding before them.
* Reserved fields are written 0 and ignored when read (QuestDB files may hold an old bloom
  offset in the chunk's RESERVED).
* ``read_sidecar`` verifies the newest CRC (which covers every byte from 8 up to it) before it
  interprets anything, so a damaged byte is a CorruptFileError, not a spurious
  UnsupportedError. FOOTER_LENGTH is outside every CRC, so a footer is also checked to be
  exactly as long as its content when no unknown feature bit can add a section.

What streamwrite writes into QuestDB-specific fields: descriptor ID = ``column_id`` (-1 unless
the caller gives one); TYPE = ``type_code`` (see :func:`questdb_type_code`, 0 where there is no
obvious QuestDB type); FLAGS = repetition and DESCENDING for descending sorting columns, with
LOCAL_KEY_IS_GLOBAL and IS_ASCII 0 (:func:`column_flags`); DISTINCT_COUNT = 0 with
DISTINCT_COUNT_PRESENT clear; NULL_COUNT_PRESENT whenever the null count is known.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from streamwrite.errors import ConfigError, CorruptFileError, UnsupportedError
from streamwrite.format._sidecar_blocks import (
    BLOCK_ALIGNMENT,
    COLUMN_CHUNK_SIZE,
    COLUMN_DESCRIPTOR_SIZE,
    DISTINCT_COUNT_PRESENT,
    FEATURE_BLOOM_FILTERS,
    FEATURE_BLOOM_FILTERS_EXTERNAL,
    FEATURE_SORTING_IS_DTS_ASC,
    FLAG_DESCENDING,
    FLAG_IS_ASCII,
    FLAG_LOCAL_KEY_IS_GLOBAL,
    HEADER_FIXED_SIZE,
    KNOWN_FOOTER_FEATURES,
    KNOWN_HEADER_FEATURES,
    MAX_STAT_INLINED,
    MAX_STAT_PRESENT,
    MAX_STAT_VALUE_EXACT,
    MIN_STAT_INLINED,
    MIN_STAT_PRESENT,
    MIN_STAT_VALUE_EXACT,
    NULL_COUNT_PRESENT,
    OOL_STAT_MAX_SIZE,
    QUESTDB_TIMESTAMP_NANO,
    REQUIRED_FEATURE_MASK,
    ROW_GROUP_HEAD_SIZE,
    ChunkRecord,
    ColumnDescriptor,
    RowGroupBlock,
    SidecarHeader,
    align8,
    column_flags,
    encode_row_group_block,
    encoding_mask,
    pack,
    questdb_type_code,
    read_bloom_bitset,
    read_row_group_block,
    unpack_at,
)
from streamwrite.format._sidecar_header import (
    bit_names,
    encode_header,
    header_min_end,
    patch_committed_size,
    read_header,
    validate_header,
)

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
    "FOOTER_FIXED_SIZE",
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
    "Sidecar",
    "SidecarFooter",
    "SidecarHeader",
    "SidecarWriter",
    "column_flags",
    "encode_footer",
    "encode_header",
    "encode_row_group_block",
    "encoding_mask",
    "patch_committed_size",
    "questdb_type_code",
    "read_bloom_bitset",
    "read_footer_at",
    "read_header",
    "read_row_group_block",
    "read_sidecar",
]

FOOTER_FIXED_SIZE = 40
_TRAILER_SIZE = 4
_CHECKSUM_SIZE = 4
_MIN_FOOTER_TOTAL = FOOTER_FIXED_SIZE + _CHECKSUM_SIZE + _TRAILER_SIZE

_FOOTER = struct.Struct("<QIIQQQ")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_EXTERNAL = struct.Struct("<QQ")


@dataclass(frozen=True, slots=True)
class SidecarFooter:
    """One footer (one MVCC version) of the ``_pm`` file.

    ``row_group_offsets``, ``bloom_offsets`` (inlined mode, row-major row group x bloom column,
    0 = absent) are absolute ``_pm`` offsets; ``external_bloom`` (external mode) holds
    ``(parquet offset, length)`` pairs, ``(0, 0)`` = absent.
    """

    parquet_footer_offset: int
    parquet_footer_length: int
    row_group_offsets: tuple[int, ...]
    unused_bytes: int
    prev_pm_size: int
    footer_feature_flags: int = 0
    bloom_offsets: tuple[int, ...] = ()
    external_bloom: tuple[tuple[int, int], ...] = ()

    @property
    def parquet_file_size(self) -> int:
        """The parquet file size of this version: footer offset + length + 8."""
        return self.parquet_footer_offset + self.parquet_footer_length + 8


@dataclass(frozen=True)
class Sidecar:
    """A decoded ``_pm`` file: header, committed size and every footer, newest first.

    ``footers`` holds ``(pm size of that version, footer)`` pairs.
    """

    header: SidecarHeader
    committed_size: int
    footers: list[tuple[int, SidecarFooter]]


# ---------------------------------------------------------------------------------- footer
def _bloom_geometry(header: SidecarHeader, rg_count: int) -> tuple[int, int]:
    """(entry size, entry count) of the bloom footer section; (0, 0) without one."""
    if not header.feature_flags & FEATURE_BLOOM_FILTERS:
        return 0, 0
    return (16 if header.bloom_external else 4), rg_count * len(header.bloom_columns)


def encode_footer(
    footer: SidecarFooter, footer_offset: int, header: SidecarHeader, crc_before: int
) -> bytes:
    """Encodes a footer with its CHECKSUM and FOOTER_LENGTH trailer.

    Args:
        footer: the footer; its row group (and bloom) offsets may name any earlier blocks.
        footer_offset: absolute offset the footer will be written at.
        header: the file header (bloom mode and columns).
        crc_before: ``zlib.crc32`` of the file bytes ``[8, footer_offset)``.

    Returns:
        Footer, CHECKSUM (CRC32 continued over the footer) and the FOOTER_LENGTH trailer.

    Raises:
        ConfigError: a misaligned or out-of-range offset, a bloom section that does not match
            the header's mode, an undefined footer feature bit, or a value too large.
    """
    if footer.footer_feature_flags & ~KNOWN_FOOTER_FEATURES:
        raise ConfigError(
            f"Footer feature bit(s) {bit_names(footer.footer_feature_flags)} are not defined."
        )
    if not 0 <= footer.prev_pm_size <= footer_offset:
        raise ConfigError(
            f"PREV_PARQUET_META_FILE_SIZE {footer.prev_pm_size} must not exceed the footer "
            f"offset {footer_offset}."
        )
    block_min = ROW_GROUP_HEAD_SIZE + len(header.columns) * COLUMN_CHUNK_SIZE
    rg_count = len(footer.row_group_offsets)
    parts = [
        pack(
            _FOOTER,
            "the footer",
            footer.parquet_footer_offset,
            footer.parquet_footer_length,
            rg_count,
            footer.unused_bytes,
            footer.prev_pm_size,
            footer.footer_feature_flags,
        )
    ]
    for o in footer.row_group_offsets:
        if o % BLOCK_ALIGNMENT or o < HEADER_FIXED_SIZE or o + block_min > footer_offset:
            raise ConfigError(
                f"Row group block offset {o} must be 8-aligned and hold a whole block before "
                f"the footer at {footer_offset}."
            )
        parts.append(pack(_U32, "a row group entry", o >> 3))
    entry_size, entries = _bloom_geometry(header, rg_count)
    inl, ext = footer.bloom_offsets, footer.external_bloom
    if entry_size == 4:
        if ext or len(inl) not in (0, entries):
            raise ConfigError(
                f"An inlined-bloom footer needs {entries} bloom offsets and no external "
                f"entries, got {len(inl)} and {len(ext)}."
            )
        for o in inl or (0,) * entries:
            if o % BLOCK_ALIGNMENT or (o and not HEADER_FIXED_SIZE <= o < footer_offset):
                raise ConfigError(f"Bloom bitset offset {o} must be 8-aligned and in the file.")
            parts.append(pack(_U32, "a bloom offset entry", o >> 3))
    elif entry_size == 16:
        if inl or len(ext) not in (0, entries):
            raise ConfigError(
                f"An external-bloom footer needs {entries} (offset, length) entries and no "
                f"inlined offsets, got {len(ext)} and {len(inl)}."
            )
        for off, length in ext or ((0, 0),) * entries:
            parts.append(pack(_EXTERNAL, "an external bloom entry", off, length))
    elif inl or ext:
        raise ConfigError("The footer has bloom entries but the header has no bloom columns.")
    body = b"".join(parts)
    crc = zlib.crc32(body, crc_before)
    return body + _U32.pack(crc) + _U32.pack(len(body) + _CHECKSUM_SIZE)


def _verify_crc(data: bytes, pm_size: int) -> int:
    """Checks the CHECKSUM of the version ending at ``pm_size``; returns the CRC offset."""
    crc_at = pm_size - _TRAILER_SIZE - _CHECKSUM_SIZE
    if crc_at < HEADER_FIXED_SIZE or pm_size > len(data):
        raise CorruptFileError(
            f"A _pm version of {pm_size} bytes cannot hold a header and a footer.", 0
        )
    (stored,) = _U32.unpack_from(data, crc_at)
    if zlib.crc32(memoryview(data)[8:crc_at]) != stored:
        raise CorruptFileError(
            f"The _pm CRC32 of bytes [8, {crc_at}) does not match the stored checksum.", crc_at
        )
    return crc_at


def _parse_footer(
    data: bytes, pm_size: int, header: SidecarHeader, min_end: int
) -> tuple[SidecarFooter, int]:
    """Decodes the footer of the version ending at ``pm_size`` (no CRC check)."""
    if pm_size > len(data) or pm_size < min_end + _MIN_FOOTER_TOTAL:
        raise CorruptFileError(
            f"A _pm version of {pm_size} bytes cannot hold the header and a footer "
            f"({len(data)} bytes committed).",
            0,
        )
    trailer_at = pm_size - _TRAILER_SIZE
    (length,) = _U32.unpack_from(data, trailer_at)
    start = trailer_at - length
    crc_at = trailer_at - _CHECKSUM_SIZE
    if length < FOOTER_FIXED_SIZE + _CHECKSUM_SIZE or start < min_end:
        raise CorruptFileError(
            f"FOOTER_LENGTH {length} does not fit between the header and the trailer.",
            trailer_at,
        )
    pq_off, pq_len, rg_count, unused, prev, fflags = _FOOTER.unpack_from(data, start)
    entries_end = start + FOOTER_FIXED_SIZE + 4 * rg_count
    if entries_end > crc_at:
        raise CorruptFileError(
            f"The footer's {rg_count} row group entries run past its CHECKSUM.", start + 12
        )
    if prev and not min_end + _MIN_FOOTER_TOTAL <= prev <= start:
        raise CorruptFileError(
            f"PREV_PARQUET_META_FILE_SIZE {prev} does not point before the footer at {start}.",
            start + 24,
        )
    block_min = ROW_GROUP_HEAD_SIZE + len(header.columns) * COLUMN_CHUNK_SIZE
    offsets = []
    for k in range(rg_count):
        o = _U32.unpack_from(data, start + FOOTER_FIXED_SIZE + 4 * k)[0] << 3
        if o < min_end or o + block_min > start:
            raise CorruptFileError(
                f"Row group entry {k} points at {o}, outside the blocks before the footer.",
                start + FOOTER_FIXED_SIZE + 4 * k,
            )
        offsets.append(o)
    unknown = fflags & REQUIRED_FEATURE_MASK & ~KNOWN_FOOTER_FEATURES
    if unknown:
        raise UnsupportedError(
            f"The _pm footer at offset {start} sets required feature bit(s) "
            f"{bit_names(unknown)}, which this streamwrite version does not know."
        )
    entry_size, entries = _bloom_geometry(header, rg_count)
    section_end = entries_end + entry_size * entries
    if section_end > crc_at:
        raise CorruptFileError("The footer's bloom section runs past its CHECKSUM.", entries_end)
    unknown_bits = (fflags & ~KNOWN_FOOTER_FEATURES) | (
        header.feature_flags & ~KNOWN_HEADER_FEATURES
    )
    if not unknown_bits and section_end != crc_at:
        raise CorruptFileError(
            f"FOOTER_LENGTH {length} does not match the footer's content "
            f"({section_end + _CHECKSUM_SIZE - start} bytes).",
            trailer_at,
        )
    bloom: list[int] = []
    external: list[tuple[int, int]] = []
    for k in range(entries):
        at = entries_end + entry_size * k
        if entry_size == 16:
            external.append(_EXTERNAL.unpack_from(data, at))
            continue
        o = _U32.unpack_from(data, at)[0] << 3
        if o and (o < min_end or o + 4 > start):
            raise CorruptFileError(f"Bloom offset entry {k} points at {o}, outside the file.", at)
        bloom.append(o)
    footer = SidecarFooter(
        pq_off, pq_len, tuple(offsets), unused, prev, fflags, tuple(bloom), tuple(external)
    )
    return footer, start


def read_footer_at(data: bytes, pm_size: int, header: SidecarHeader) -> SidecarFooter:
    """Decodes the footer of the version whose committed size is ``pm_size``.

    The footer is found through the trailer at ``pm_size - 4``; its CRC is verified first.

    Returns:
        The footer.

    Raises:
        CorruptFileError: CRC mismatch, truncation or inconsistent fields.
        UnsupportedError: an unknown required footer feature bit.
    """
    _verify_crc(data, pm_size)
    return _parse_footer(data, pm_size, header, header_min_end(header))[0]


# ---------------------------------------------------------------------------------- reading
def _read_versions(
    data: bytes, committed: int
) -> tuple[SidecarHeader, list[tuple[int, SidecarFooter]]]:
    if committed > len(data):
        raise CorruptFileError(
            f"The committed _pm size {committed} exceeds the {len(data)} bytes available.", 0
        )
    view = data[:committed]
    _verify_crc(view, committed)  # covers every byte interpreted below
    header, _ = read_header(view)
    min_end = header_min_end(header)
    versions: list[tuple[int, SidecarFooter]] = []
    size = committed
    while True:
        footer, _start = _parse_footer(view, size, header, min_end)
        versions.append((size, footer))
        if not footer.prev_pm_size:
            break
        size = footer.prev_pm_size  # <= _start < size, so the walk ends
    crc, pos = 0, 8
    for size, _footer in reversed(versions[1:]):
        crc_at = size - _TRAILER_SIZE - _CHECKSUM_SIZE
        crc = zlib.crc32(memoryview(view)[pos:crc_at], crc)
        if crc != _U32.unpack_from(view, crc_at)[0]:
            raise CorruptFileError(
                f"The CRC32 of the _pm version of {size} bytes does not match.", crc_at
            )
        pos = crc_at
    return header, versions


def read_sidecar(data: bytes) -> Sidecar:
    """Decodes a ``_pm`` file cut at the committed size in its header (never ``len(data)``).

    Verifies every version's CRC and walks the whole PREV chain.

    Returns:
        The header, committed size and footers (newest first).

    Raises:
        CorruptFileError: the file was never committed (size 0), the committed size exceeds
            the data, or any damage or inconsistency.
        UnsupportedError: an unknown required header or footer feature bit.
    """
    (committed,) = unpack_at(_U64, data, 0, "PARQUET_META_FILE_SIZE")
    if committed == 0:
        raise CorruptFileError("The _pm file has never been committed (size field 0).", 0)
    header, versions = _read_versions(data, committed)
    return Sidecar(header, committed, versions)


# ---------------------------------------------------------------------------------- writing
class SidecarWriter:
    """Produces the bytes of a live ``_pm`` file, commit by commit (no I/O).

    Offsets are counted, never read back. Each :meth:`commit` returns the bytes to append at
    :attr:`size`; the caller writes and fsyncs them, then writes :func:`patch_committed_size`
    at offset 0. If a write fails, discard the writer and :meth:`resume` from the file.

    Attributes:
        header: the file header.
        size: bytes produced so far (committed or not).
        committed_size: size after the last commit (PREV of the next footer); 0 before it.
    """

    def __init__(self, header: SidecarHeader) -> None:
        validate_header(header)
        self.header = header
        self.size = 0
        self.committed_size = 0
        self._crc = 0  # zlib.crc32 of bytes [8, size)
        self._row_groups: list[int] = []
        self._bloom: list[int] = []
        self._external: list[tuple[int, int]] = []

    def start(self) -> bytes:
        """Returns the header bytes of a new file (PARQUET_META_FILE_SIZE 0).

        Raises:
            ConfigError: the writer has already started.
        """
        if self.size:
            raise ConfigError("SidecarWriter.start() was called on a writer already started.")
        data = encode_header(self.header)
        self.size = len(data)
        self._crc = zlib.crc32(data[8:])
        return data

    @classmethod
    def resume(cls, data: bytes, committed_size: int) -> SidecarWriter:
        """Continues after an existing file: ``data`` must hold at least ``committed_size`` bytes.

        With ``committed_size`` 0 (never committed) the header in ``data`` must be intact.
        The caller truncates the file to the returned writer's :attr:`size` before appending.

        Returns:
            A writer whose next commit continues byte for byte as the original would have.

        Raises:
            CorruptFileError: damage in the committed prefix or a torn header.
            UnsupportedError: the header has feature bits this version cannot extend.
        """
        if committed_size == 0:
            header, _ = read_header(data)
            writer = cls._for_existing(header)
            head = encode_header(header)
            if bytes(data[8 : len(head)]) != head[8:]:
                raise CorruptFileError("The uncommitted _pm header is torn.", 8)
            writer.size = len(head)
            writer._crc = zlib.crc32(head[8:])
            return writer
        header, versions = _read_versions(data, committed_size)
        writer = cls._for_existing(header)
        newest = versions[0][1]
        if newest.footer_feature_flags & ~KNOWN_FOOTER_FEATURES:
            raise UnsupportedError("The newest _pm footer has feature bits streamwrite lacks.")
        writer.size = writer.committed_size = committed_size
        writer._crc = zlib.crc32(memoryview(data)[8:committed_size])
        writer._row_groups = list(newest.row_group_offsets)
        writer._bloom = list(newest.bloom_offsets)
        writer._external = list(newest.external_bloom)
        return writer

    @classmethod
    def _for_existing(cls, header: SidecarHeader) -> SidecarWriter:
        unknown = header.feature_flags & ~KNOWN_HEADER_FEATURES
        if unknown:
            raise UnsupportedError(
                f"The _pm header sets feature bit(s) {bit_names(unknown)}; streamwrite cannot "
                "append footers with their sections."
            )
        return cls(header)

    def commit(
        self,
        new_blocks: Sequence[RowGroupBlock],
        parquet_footer_offset: int,
        parquet_footer_length: int,
        unused_bytes: int,
        external_bloom: Sequence[tuple[int, int]] = (),
    ) -> tuple[bytes, int]:
        """Appends ``new_blocks`` and a footer listing every earlier block plus the new ones.

        Args:
            new_blocks: the row groups added by this commit, in order.
            parquet_footer_offset: offset of the new parquet FileMetaData in data.parquet.
            parquet_footer_length: its length.
            unused_bytes: dead bytes in data.parquet after this commit.
            external_bloom: external bloom mode only: ``(offset, length)`` in data.parquet per
                new row group x bloom column, row-major (empty = all absent).

        Returns:
            The bytes to append at the current :attr:`size`, and the new committed size.

        Raises:
            ConfigError: not started, or a block or value the format cannot hold.
        """
        if not self.size:
            raise ConfigError("SidecarWriter.commit() needs start() or resume() first.")
        header = self.header
        pos = align8(self.size)
        parts = [bytes(pos - self.size)]
        new_offsets: list[int] = []
        new_bloom: list[int] = []
        for block in new_blocks:
            data, bloom = encode_row_group_block(block, pos, header)
            new_offsets.append(pos)
            new_bloom += bloom
            parts.append(data)
            pos += len(data)
        nbloom = len(new_blocks) * len(header.bloom_columns)
        if external_bloom and not header.bloom_external:
            raise ConfigError("External bloom entries need a header in external bloom mode.")
        if external_bloom and len(external_bloom) != nbloom:
            raise ConfigError(
                f"Expected {nbloom} external bloom entries, got {len(external_bloom)}."
            )
        new_external = list(external_bloom) or ([(0, 0)] * nbloom if header.bloom_external else [])
        footer = SidecarFooter(
            parquet_footer_offset=parquet_footer_offset,
            parquet_footer_length=parquet_footer_length,
            row_group_offsets=tuple(self._row_groups + new_offsets),
            unused_bytes=unused_bytes,
            prev_pm_size=self.committed_size,
            bloom_offsets=tuple(self._bloom + new_bloom),
            external_bloom=tuple(self._external + new_external),
        )
        body = b"".join(parts)
        tail = encode_footer(footer, pos, header, zlib.crc32(body, self._crc))
        out = body + tail
        self._crc = zlib.crc32(out, self._crc)
        self.size = self.committed_size = pos + len(tail)
        self._row_groups += new_offsets
        self._bloom += new_bloom
        self._external += new_external
        return out, self.size
