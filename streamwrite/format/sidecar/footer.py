"""Footers of the ``_pm`` sidecar: records, encoder, decoder and the readers of whole files.

The byte layout and the decisions taken where the spec is silent are documented in
:mod:`streamwrite.format.sidecar.codec`, which re-exports everything public from here.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

import xxhash

from streamwrite.errors import ConfigError, CorruptFileError, UnsupportedError
from streamwrite.format.sidecar.header import bit_names, header_min_end, read_header
from streamwrite.format.sidecar.records import (
    BLOCK_ALIGNMENT,
    COLUMN_CHUNK_SIZE,
    FEATURE_BLOOM_FILTERS,
    FOOTER_FEATURE_PARQUET_FOOTER_XXH64,
    HEADER_FIXED_SIZE,
    KNOWN_FOOTER_FEATURES,
    KNOWN_HEADER_FEATURES,
    REQUIRED_FEATURE_MASK,
    ROW_GROUP_HEAD_SIZE,
    SidecarHeader,
    pack,
    unpack_at,
)

__all__ = [
    "FOOTER_FIXED_SIZE",
    "Sidecar",
    "SidecarFooter",
    "encode_footer",
    "parquet_footer_checksum",
    "read_footer_at",
    "read_sidecar",
    "read_version",
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
    ``(parquet offset, length)`` pairs, ``(0, 0)`` = absent. ``parquet_footer_checksum`` is the
    XXH64 of the Parquet tail (:func:`parquet_footer_checksum`), None in footers written
    without it; its feature bit is not repeated in ``footer_feature_flags``, which holds the
    other (unknown) bits only.
    """

    parquet_footer_offset: int
    parquet_footer_length: int
    row_group_offsets: tuple[int, ...]
    unused_bytes: int
    prev_pm_size: int
    footer_feature_flags: int = 0
    bloom_offsets: tuple[int, ...] = ()
    external_bloom: tuple[tuple[int, int], ...] = ()
    parquet_footer_checksum: int | None = None

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
def parquet_footer_checksum(tail: bytes | bytearray | memoryview) -> int:
    """The checksum ``_pm`` records for a Parquet footer: XXH64 (seed 0) of ``tail``.

    ``tail`` is the whole tail of a committed version of data.parquet: FileMetaData (or
    FileCryptoMetaData and the encrypted footer module, or FileMetaData and its signature),
    the 4-byte length and the magic, ending at the committed size.

    Returns:
        The 64-bit digest as an int.
    """
    return int(xxhash.xxh64_intdigest(tail))


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
    if footer.footer_feature_flags:
        raise ConfigError(
            f"Footer feature bit(s) {bit_names(footer.footer_feature_flags)} are not written "
            "through footer_feature_flags; the Parquet footer checksum sets its own bit."
        )
    checksum = footer.parquet_footer_checksum
    flags = 0 if checksum is None else FOOTER_FEATURE_PARQUET_FOOTER_XXH64
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
            flags,
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
    if checksum is not None:
        parts.append(pack(_U64, "the Parquet footer checksum", checksum))
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
    checksum: int | None = None
    if fflags & FOOTER_FEATURE_PARQUET_FOOTER_XXH64:
        if section_end + _U64.size > crc_at:
            raise CorruptFileError(
                "The footer's Parquet footer checksum runs past its CHECKSUM.", section_end
            )
        (checksum,) = _U64.unpack_from(data, section_end)
        section_end += _U64.size
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
        pq_off,
        pq_len,
        tuple(offsets),
        unused,
        prev,
        fflags & ~KNOWN_FOOTER_FEATURES,
        tuple(bloom),
        tuple(external),
        checksum,
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


def read_version(
    data: bytes, parquet_size: int | None = None
) -> tuple[SidecarHeader, int, SidecarFooter]:
    """The header and the footer of one committed version, for a reader.

    Verifies the newest CRC (it covers every byte after the size field, older footers too),
    then walks the PREV chain from the committed size in the header to the footer whose
    Parquet size is ``parquet_size`` (the newest when None).

    Returns:
        The header, the ``_pm`` size of that version and its footer.

    Raises:
        CorruptFileError: the file was never committed, is truncated or damaged.
        ConfigError: ``parquet_size`` is not the size of any committed version.
        UnsupportedError: an unknown required header or footer feature bit.
    """
    (committed,) = unpack_at(_U64, data, 0, "PARQUET_META_FILE_SIZE")
    if committed == 0:
        raise CorruptFileError("The _pm file has never been committed (size field 0).", 0)
    if committed > len(data):
        raise CorruptFileError(
            f"The committed _pm size {committed} exceeds the {len(data)} bytes available.", 0
        )
    view = bytes(data[:committed])
    _verify_crc(view, committed)
    header, _ = read_header(view)
    min_end = header_min_end(header)
    size = committed
    sizes: list[int] = []
    while True:
        footer, _start = _parse_footer(view, size, header, min_end)
        if parquet_size is None or footer.parquet_file_size == parquet_size:
            return header, size, footer
        sizes.append(footer.parquet_file_size)
        if not footer.prev_pm_size:
            break
        size = footer.prev_pm_size  # <= start < size, so the walk ends
    raise ConfigError(
        f"{parquet_size} is not a committed size of data.parquet; _pm lists {sorted(sizes)}."
    )
