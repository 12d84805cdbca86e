"""Codec of the ``_pm`` header (layout in :mod:`streamwrite.format.sidecar`)."""

from __future__ import annotations

import struct

from streamwrite.errors import ConfigError, CorruptFileError, UnsupportedError
from streamwrite.format.sidecar.records import (
    COLUMN_DESCRIPTOR_SIZE,
    FEATURE_BLOOM_FILTERS,
    FEATURE_BLOOM_FILTERS_EXTERNAL,
    FEATURE_SORTING_IS_DTS_ASC,
    HEADER_FIXED_SIZE,
    KNOWN_HEADER_FEATURES,
    REQUIRED_FEATURE_MASK,
    ColumnDescriptor,
    SidecarHeader,
    align8,
    pack,
    unpack_at,
)

__all__ = [
    "bit_names",
    "encode_header",
    "header_min_end",
    "patch_committed_size",
    "read_header",
    "validate_header",
]

_HEADER = struct.Struct("<QQiIII")
_DESCRIPTOR = struct.Struct("<QiiiiIBBBB")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_MAX_PHYSICAL_TYPE = 7


def bit_names(bits: int) -> str:
    return ", ".join(str(i) for i in range(64) if bits >> i & 1)


def validate_header(header: SidecarHeader) -> None:
    n = len(header.columns)
    ff = header.feature_flags
    if ff & ~KNOWN_HEADER_FEATURES:
        raise ConfigError(
            f"Header feature bit(s) {bit_names(ff & ~KNOWN_HEADER_FEATURES)} are not defined; "
            "streamwrite writes only bits 0-2."
        )
    if ff & FEATURE_BLOOM_FILTERS_EXTERNAL and not ff & FEATURE_BLOOM_FILTERS:
        raise ConfigError("Header feature bit 1 (BLOOM_FILTERS_EXTERNAL) requires bit 0.")
    if bool(header.bloom_columns) != bool(ff & FEATURE_BLOOM_FILTERS):
        raise ConfigError(
            "Header bloom_columns must be non-empty exactly when FEATURE_BLOOM_FILTERS is set, "
            f"got {header.bloom_columns} with feature flags {ff:#x}."
        )
    bc = header.bloom_columns
    if list(bc) != sorted(set(bc)) or any(not 0 <= i < n for i in bc):
        raise ConfigError(
            f"Bloom columns must be sorted, unique column indices below {n}, got {bc}."
        )
    if not -1 <= header.designated_timestamp < n:
        raise ConfigError(
            f"Designated timestamp {header.designated_timestamp} is not -1 or a column index "
            f"below {n}."
        )
    if any(not 0 <= i < n for i in header.sorting_columns):
        raise ConfigError(
            f"Sorting columns must be column indices below {n}, got {header.sorting_columns}."
        )
    if ff & FEATURE_SORTING_IS_DTS_ASC:
        dts = header.designated_timestamp
        if dts < 0 or header.sorting_columns or header.columns[dts].descending:
            raise ConfigError(
                "SORTING_IS_DTS_ASC needs a designated timestamp, no explicit sorting columns "
                "and no DESCENDING flag on the timestamp column."
            )
    for c in header.columns:
        if not 0 <= c.physical_type <= _MAX_PHYSICAL_TYPE:
            raise ConfigError(f"Column {c.name!r} has unknown physical type {c.physical_type}.")


def encode_header(header: SidecarHeader) -> bytes:
    """Encodes the whole header, with PARQUET_META_FILE_SIZE 0, zero-padded to 8 bytes.

    Returns:
        The header bytes; the first row group block may start right after them.

    Raises:
        ConfigError: an inconsistent header (see the spec's invariants) or a value too large.
    """
    validate_header(header)
    names = [c.name.encode("utf-8") for c in header.columns]
    n, s = len(names), len(header.sorting_columns)
    name_offset = HEADER_FIXED_SIZE + n * COLUMN_DESCRIPTOR_SIZE + 4 * s
    parts = [
        pack(_HEADER, "the header", 0, header.feature_flags, header.designated_timestamp, s, n, 0)
    ]
    for c, name in zip(header.columns, names, strict=True):
        parts.append(
            pack(
                _DESCRIPTOR,
                f"column {c.name!r}",
                name_offset,
                c.column_id,
                c.type_code,
                c.flags,
                c.fixed_byte_len,
                len(name),
                c.physical_type,
                c.max_rep_level,
                c.max_def_level,
                0,
            )
        )
        name_offset += len(name)
    parts += [_U32.pack(i) for i in header.sorting_columns]
    parts += names
    if header.feature_flags & FEATURE_BLOOM_FILTERS:
        parts.append(_U32.pack(len(header.bloom_columns)))
        parts += [_U32.pack(i) for i in header.bloom_columns]
    body = b"".join(parts)
    return body + bytes(align8(len(body)) - len(body))


def header_min_end(header: SidecarHeader) -> int:
    """Lower bound of the header's end: nothing else may start before it."""
    end = HEADER_FIXED_SIZE + len(header.columns) * COLUMN_DESCRIPTOR_SIZE
    end += 4 * len(header.sorting_columns)
    end += sum(len(c.name.encode("utf-8")) for c in header.columns)
    if header.feature_flags & FEATURE_BLOOM_FILTERS:
        end += 4 + 4 * len(header.bloom_columns)
    return end


def read_header(data: bytes) -> tuple[SidecarHeader, int]:
    """Decodes the header (no CRC check: :func:`read_sidecar` verifies it first).

    Unknown optional feature bits (0-31) are kept in ``feature_flags`` and otherwise ignored.

    Returns:
        The header and the PARQUET_META_FILE_SIZE field (0 before the first commit).

    Raises:
        UnsupportedError: an unknown required feature bit (32-63) is set.
        CorruptFileError: truncation or a value that breaks the spec's invariants.
    """
    committed, ff, dts, s, n, _reserved = unpack_at(_HEADER, data, 0, "the header")
    unknown = ff & REQUIRED_FEATURE_MASK & ~KNOWN_HEADER_FEATURES
    if unknown:
        raise UnsupportedError(
            f"The _pm header sets required feature bit(s) {bit_names(unknown)}, which this "
            "streamwrite version does not know, so it cannot read the file."
        )
    if ff & FEATURE_BLOOM_FILTERS_EXTERNAL and not ff & FEATURE_BLOOM_FILTERS:
        raise CorruptFileError(
            "The _pm header sets BLOOM_FILTERS_EXTERNAL (bit 1) without BLOOM_FILTERS (bit 0).", 8
        )
    if ff & FEATURE_SORTING_IS_DTS_ASC and (dts < 0 or s):
        raise CorruptFileError(
            "The _pm header sets SORTING_IS_DTS_ASC with no designated timestamp or with "
            f"explicit sorting columns (designated timestamp {dts}, {s} sorting columns).",
            8,
        )
    table_end = HEADER_FIXED_SIZE + n * COLUMN_DESCRIPTOR_SIZE + 4 * s
    if table_end > len(data):
        raise CorruptFileError(
            f"The _pm header declares {n} columns and {s} sorting columns, which run past the "
            f"committed data ({len(data)} bytes).",
            20,
        )
    if not -1 <= dts < n:
        raise CorruptFileError(f"The designated timestamp index {dts} is not below {n}.", 16)
    columns = []
    names_end = table_end
    for i in range(n):
        at = HEADER_FIXED_SIZE + i * COLUMN_DESCRIPTOR_SIZE
        name_off, cid, ctype, flags, fbl, nlen, phys, rep, dfl, _r = _DESCRIPTOR.unpack_from(
            data, at
        )
        if name_off < table_end or name_off + nlen > len(data):
            raise CorruptFileError(
                f"Column {i}'s name ({nlen} bytes at offset {name_off}) lies outside the "
                "name strings.",
                at,
            )
        if phys > _MAX_PHYSICAL_TYPE:
            raise CorruptFileError(f"Column {i} has unknown physical type {phys}.", at + 28)
        try:
            name = bytes(data[name_off : name_off + nlen]).decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptFileError(f"Column {i}'s name is not valid UTF-8.", name_off) from None
        names_end = max(names_end, name_off + nlen)
        columns.append(ColumnDescriptor(name, phys, fbl, rep, dfl, cid, ctype, flags))
    sort_at = HEADER_FIXED_SIZE + n * COLUMN_DESCRIPTOR_SIZE
    sorting = tuple(_U32.unpack_from(data, sort_at + 4 * k)[0] for k in range(s))
    for k, idx in enumerate(sorting):
        if idx >= n:
            raise CorruptFileError(f"Sorting column {idx} is not below {n}.", sort_at + 4 * k)
    bloom: tuple[int, ...] = ()
    if ff & FEATURE_BLOOM_FILTERS:
        (count,) = unpack_at(_U32, data, names_end, "the bloom column count")
        if not 0 < count <= n or names_end + 4 + 4 * count > len(data):
            raise CorruptFileError(
                f"The bloom column count {count} is not in 1..{n} or runs past the data.",
                names_end,
            )
        bloom = tuple(_U32.unpack_from(data, names_end + 4 + 4 * k)[0] for k in range(count))
        if list(bloom) != sorted(set(bloom)) or bloom[-1] >= n:
            raise CorruptFileError(
                f"Bloom columns {bloom} are not sorted, unique indices below {n}.", names_end + 4
            )
    header = SidecarHeader(tuple(columns), dts, sorting, ff, bloom)
    return header, committed


def patch_committed_size(size: int) -> bytes:
    """Returns the 8 bytes of PARQUET_META_FILE_SIZE to write at offset 0 (the commit point)."""
    return pack(_U64, "PARQUET_META_FILE_SIZE", size)
