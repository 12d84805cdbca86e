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
    .. footer bit 31 PARQUET_FOOTER_XXH64 (streamwrite): u64 XXH64 (seed 0) of the Parquet tail
       data.parquet[PARQUET_FOOTER_OFFSET, PARQUET_FOOTER_OFFSET + PARQUET_FOOTER_LENGTH + 8)
       = FileMetaData (or FileCryptoMetaData + footer module), its u32 length and the magic
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
* The Parquet footer checksum (spec "Feature flags": footer bits 0-31 are optional, unknown ones
  may be ignored; footer-gated sections sit after the row group entries, before the CRC, and
  FOOTER_LENGTH bounds them). Parquet has no footer checksum: page CRCs cover the pages, but a
  flipped bit in FileMetaData can read as a renamed column or a changed type. So every footer
  streamwrite writes sets footer bit 31 and carries the XXH64 of the Parquet tail it names;
  readers check it before decoding that footer. Bit 31, the highest optional bit, keeps clear of
  the bits QuestDB assigns from 0 upwards; a reader that does not know it skips the section.
  Sections are laid out header-gated first (the bloom section, where every reader of the file
  expects it), then footer-gated in bit order. A footer without the bit (files written before
  it) is read as before and its Parquet footer is "unchecked".
* PARQUET_META_FILE_SIZE is outside every CRC. So that no single flipped bit of it can name
  another committed version (an older snapshot silently read as the newest), the writer pads
  (8 zero bytes at a time, before the new row group blocks) until the new committed size
  differs from every earlier committed size, and from 0, in at least two bits.

What streamwrite writes into QuestDB-specific fields: descriptor ID = ``column_id`` (-1 unless
the caller gives one); TYPE = ``type_code`` (see :func:`questdb_type_code`, 0 where there is no
obvious QuestDB type); FLAGS = repetition and DESCENDING for descending sorting columns, with
LOCAL_KEY_IS_GLOBAL and IS_ASCII 0 (:func:`column_flags`); DISTINCT_COUNT = 0 with
DISTINCT_COUNT_PRESENT clear; NULL_COUNT_PRESENT whenever the null count is known.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from streamwrite.errors import ConfigError, CorruptFileError, UnsupportedError
from streamwrite.format.sidecar.blocks import (
    encode_row_group_block,
    encoding_mask,
    questdb_type_code,
    read_bloom_bitset,
    read_row_group_block,
)
from streamwrite.format.sidecar.footer import (
    FOOTER_FIXED_SIZE,
    Sidecar,
    SidecarFooter,
    _read_versions,
    encode_footer,
    parquet_footer_checksum,
    read_footer_at,
    read_sidecar,
    read_version,
)
from streamwrite.format.sidecar.header import (
    bit_names,
    encode_header,
    patch_committed_size,
    read_header,
    validate_header,
)
from streamwrite.format.sidecar.records import (
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
    FOOTER_FEATURE_PARQUET_FOOTER_XXH64,
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
    ChunkRecord,
    ColumnDescriptor,
    RowGroupBlock,
    SidecarHeader,
    align8,
    column_flags,
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
    "FOOTER_FEATURE_PARQUET_FOOTER_XXH64",
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
    "parquet_footer_checksum",
    "read_footer_at",
    "read_header",
    "read_row_group_block",
    "read_sidecar",
    "read_version",
]


# ---------------------------------------------------------------------------------- writing
def _distinct(size: int, earlier: Sequence[int]) -> bool:
    """True when no single flipped bit turns ``size`` into 0 or into one of ``earlier``."""
    return size.bit_count() >= 2 and all((size ^ e).bit_count() >= 2 for e in earlier)


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
        self._committed_sizes: list[int] = []  # every earlier commit point
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
        writer._committed_sizes = [size for size, _ in versions]
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
        parquet_footer_checksum: int | None = None,
    ) -> tuple[bytes, int]:
        """Appends ``new_blocks`` and a footer listing every earlier block plus the new ones.

        The blocks start at the next multiple of 8, or 8 * k bytes later where that makes the
        new committed size differ from every earlier one (and from 0) in at least two bits.

        Args:
            new_blocks: the row groups added by this commit, in order.
            parquet_footer_offset: offset of the new parquet FileMetaData in data.parquet.
            parquet_footer_length: its length.
            unused_bytes: dead bytes in data.parquet after this commit.
            external_bloom: external bloom mode only: ``(offset, length)`` in data.parquet per
                new row group x bloom column, row-major (empty = all absent).
            parquet_footer_checksum: :func:`parquet_footer_checksum` of the Parquet tail this
                version names (None writes a footer without it, as older versions did).

        Returns:
            The bytes to append at the current :attr:`size`, and the new committed size.

        Raises:
            ConfigError: not started, or a block or value the format cannot hold.
        """
        if not self.size:
            raise ConfigError("SidecarWriter.commit() needs start() or resume() first.")
        header = self.header
        nbloom = len(new_blocks) * len(header.bloom_columns)
        if external_bloom and not header.bloom_external:
            raise ConfigError("External bloom entries need a header in external bloom mode.")
        if external_bloom and len(external_bloom) != nbloom:
            raise ConfigError(
                f"Expected {nbloom} external bloom entries, got {len(external_bloom)}."
            )
        new_external = list(external_bloom) or ([(0, 0)] * nbloom if header.bloom_external else [])
        start = align8(self.size)
        while True:  # usually one round; each further one moves the blocks 8 bytes on
            pos = start
            parts = [bytes(pos - self.size)]
            new_offsets: list[int] = []
            new_bloom: list[int] = []
            for block in new_blocks:
                data, bloom = encode_row_group_block(block, pos, header)
                new_offsets.append(pos)
                new_bloom += bloom
                parts.append(data)
                pos += len(data)
            footer = SidecarFooter(
                parquet_footer_offset=parquet_footer_offset,
                parquet_footer_length=parquet_footer_length,
                row_group_offsets=tuple(self._row_groups + new_offsets),
                unused_bytes=unused_bytes,
                prev_pm_size=self.committed_size,
                bloom_offsets=tuple(self._bloom + new_bloom),
                external_bloom=tuple(self._external + new_external),
                parquet_footer_checksum=parquet_footer_checksum,
            )
            body = b"".join(parts)
            tail = encode_footer(footer, pos, header, zlib.crc32(body, self._crc))
            if _distinct(pos + len(tail), self._committed_sizes):
                break
            start += BLOCK_ALIGNMENT
        out = body + tail
        self._crc = zlib.crc32(out, self._crc)
        self.size = self.committed_size = pos + len(tail)
        self._committed_sizes.append(self.size)
        self._row_groups += new_offsets
        self._bloom += new_bloom
        self._external += new_external
        return out, self.size
