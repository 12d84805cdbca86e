"""The codec of the ``_pm`` row group blocks, and the QuestDB-specific column fields.

The byte layout is documented in :mod:`streamwrite.format.sidecar.codec`; the records and
constants are in :mod:`streamwrite.format.sidecar.records`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from streamwrite.errors import ConfigError, CorruptFileError
from streamwrite.format.enums import ConvertedType, Encoding, Type
from streamwrite.format.sidecar.records import (
    _CHUNK,
    _I32,
    _QDB_BINARY,
    _QDB_BOOLEAN,
    _QDB_BYTE,
    _QDB_DATE,
    _QDB_DOUBLE,
    _QDB_FLOAT,
    _QDB_INT,
    _QDB_LONG,
    _QDB_SHORT,
    _QDB_SYMBOL,
    _QDB_TIMESTAMP,
    _QDB_UUID,
    _QDB_VARCHAR,
    _U64,
    BLOCK_ALIGNMENT,
    COLUMN_CHUNK_SIZE,
    DISTINCT_COUNT_PRESENT,
    INLINE_STAT_MAX_SIZE,
    MAX_STAT_INLINED,
    MAX_STAT_PRESENT,
    MAX_STAT_VALUE_EXACT,
    MIN_STAT_INLINED,
    MIN_STAT_PRESENT,
    MIN_STAT_VALUE_EXACT,
    NULL_COUNT_PRESENT,
    OOL_STAT_MAX_SIZE,
    QUESTDB_TIMESTAMP_NANO,
    ROW_GROUP_HEAD_SIZE,
    ChunkRecord,
    RowGroupBlock,
    SidecarHeader,
    align8,
    pack,
)
from streamwrite.format.structs import LogicalType

__all__ = [
    "encode_row_group_block",
    "encoding_mask",
    "questdb_type_code",
    "read_bloom_bitset",
    "read_row_group_block",
]

# ---------------------------------------------------------------------------------- helpers
_ENCODING_BITS: dict[int, int] = {
    Encoding.PLAIN: 1 << 0,
    Encoding.PLAIN_DICTIONARY: 1 << 1,
    Encoding.RLE_DICTIONARY: 1 << 1,
    Encoding.DELTA_BINARY_PACKED: 1 << 2,
    Encoding.DELTA_LENGTH_BYTE_ARRAY: 1 << 3,
    Encoding.DELTA_BYTE_ARRAY: 1 << 4,
    Encoding.BYTE_STREAM_SPLIT: 1 << 5,
    Encoding.RLE: 0,  # levels only
    Encoding.BIT_PACKED: 0,  # levels only
}


def encoding_mask(encodings: Iterable[int]) -> int:
    """Maps parquet ``Encoding`` values to the ENCODINGS bitmask of a column chunk record.

    PLAIN_DICTIONARY counts as RLE_DICTIONARY; RLE and BIT_PACKED (level encodings) and values
    unknown to this version are ignored.

    Returns:
        The bitmask (bit 0 PLAIN ... bit 5 BYTE_STREAM_SPLIT).
    """
    mask = 0
    for enc in encodings:
        mask |= _ENCODING_BITS.get(int(enc), 0)
    return mask


_SIGNED_INT32: dict[int, int] = {8: _QDB_BYTE, 16: _QDB_SHORT, 32: _QDB_INT}
_CONVERTED_INT32: dict[int, int] = {
    ConvertedType.INT_8: _QDB_BYTE,
    ConvertedType.INT_16: _QDB_SHORT,
    ConvertedType.INT_32: _QDB_INT,
    ConvertedType.DATE: _QDB_DATE,
}
_CONVERTED_INT64: dict[int, int] = {
    ConvertedType.INT_64: _QDB_LONG,
    ConvertedType.TIMESTAMP_MICROS: _QDB_TIMESTAMP,
    ConvertedType.TIMESTAMP_MILLIS: _QDB_DATE,
}
_CONVERTED_BYTE_ARRAY: dict[int, int] = {
    ConvertedType.UTF8: _QDB_VARCHAR,
    ConvertedType.ENUM: _QDB_SYMBOL,
}


def questdb_type_code(
    physical_type: int,
    logical: LogicalType | None = None,
    converted_type: int | None = None,
    type_length: int = 0,
) -> int:
    """Maps a parquet column type to the QuestDB ``ColumnType`` code of a descriptor's TYPE.

    Only obvious matches are mapped: BOOLEAN 1, INT32 -> INT 5 (signed INT(8) BYTE 2, INT(16)
    SHORT 3, DATE -> DATE 7), INT64 -> LONG 6 (TIMESTAMP(MICROS) 8, TIMESTAMP(NANOS)
    ``1 << 18 | 8``, TIMESTAMP(MILLIS) -> DATE 7), FLOAT 9, DOUBLE 10, BYTE_ARRAY -> BINARY 18
    (STRING/UTF8 -> VARCHAR 26, ENUM -> SYMBOL 12), FIXED_LEN_BYTE_ARRAY(16) UUID -> UUID 19.

    Returns:
        The type code, or 0 (UNDEFINED) where there is no obvious QuestDB type.
    """
    lt = logical
    ct = converted_type
    if physical_type == Type.BOOLEAN:
        return _QDB_BOOLEAN
    if physical_type == Type.FLOAT:
        return _QDB_FLOAT
    if physical_type == Type.DOUBLE:
        return _QDB_DOUBLE
    if physical_type == Type.INT32:
        if lt is not None and lt.INTEGER is not None:
            if not lt.INTEGER.isSigned:
                return 0
            return _SIGNED_INT32.get(lt.INTEGER.bitWidth or 0, 0)
        if lt is not None:
            return _QDB_DATE if lt.DATE is not None else 0
        if ct is not None:
            return _CONVERTED_INT32.get(ct, 0)
        return _QDB_INT
    if physical_type == Type.INT64:
        if lt is not None and lt.TIMESTAMP is not None:
            unit = lt.TIMESTAMP.unit
            if unit is None:
                return 0
            if unit.MICROS is not None:
                return _QDB_TIMESTAMP
            if unit.NANOS is not None:
                return QUESTDB_TIMESTAMP_NANO
            return _QDB_DATE if unit.MILLIS is not None else 0
        if lt is not None and lt.INTEGER is not None:
            return _QDB_LONG if lt.INTEGER.isSigned and lt.INTEGER.bitWidth == 64 else 0
        if lt is not None:
            return 0
        if ct is not None:
            return _CONVERTED_INT64.get(ct, 0)
        return _QDB_LONG
    if physical_type == Type.BYTE_ARRAY:
        if lt is not None:
            if lt.STRING is not None:
                return _QDB_VARCHAR
            return _QDB_SYMBOL if lt.ENUM is not None else 0
        if ct is not None:
            return _CONVERTED_BYTE_ARRAY.get(ct, 0)
        return _QDB_BINARY
    is_uuid = lt is not None and lt.UUID is not None and type_length == 16
    if physical_type == Type.FIXED_LEN_BYTE_ARRAY and is_uuid:
        return _QDB_UUID
    return 0


# ---------------------------------------------------------------------------------- encoding
def _stat_slot(value: bytes | None, ool: bytearray) -> tuple[int, int, bool, bool]:
    """Places one stat: returns (u64 slot, inline size, present, inlined)."""
    if value is None or len(value) == 0 or len(value) > OOL_STAT_MAX_SIZE:
        return 0, 0, False, False
    if len(value) <= INLINE_STAT_MAX_SIZE:
        return int.from_bytes(value, "little"), len(value), True, True
    rel = len(ool)
    ool += value
    return (rel << 16) | len(value), 0, True, False


def _encode_chunk(chunk: ChunkRecord, ool: bytearray, where: str) -> bytes:
    min_slot, min_size, min_present, min_inl = _stat_slot(chunk.min_stat, ool)
    max_slot, max_size, max_present, max_inl = _stat_slot(chunk.max_stat, ool)
    flags = 0
    if min_present:
        flags |= MIN_STAT_PRESENT
        flags |= MIN_STAT_INLINED if min_inl else 0
        flags |= MIN_STAT_VALUE_EXACT if chunk.min_exact else 0
    if max_present:
        flags |= MAX_STAT_PRESENT
        flags |= MAX_STAT_INLINED if max_inl else 0
        flags |= MAX_STAT_VALUE_EXACT if chunk.max_exact else 0
    if chunk.distinct_count is not None:
        flags |= DISTINCT_COUNT_PRESENT
    if chunk.null_count is not None:
        flags |= NULL_COUNT_PRESENT
    return pack(
        _CHUNK,
        where,
        chunk.codec,
        chunk.encodings,
        flags,
        min_size | (max_size << 4),
        0,  # RESERVED (formerly the bloom filter offset)
        chunk.num_values,
        chunk.byte_range_start,
        chunk.total_compressed,
        chunk.null_count or 0,
        chunk.distinct_count or 0,
        min_slot,
        max_slot,
    )


def encode_row_group_block(
    block: RowGroupBlock, block_offset: int, header: SidecarHeader
) -> tuple[bytes, tuple[int, ...]]:
    """Encodes one row group block to be written at ``block_offset`` of the ``_pm`` file.

    The block is NUM_ROWS, one 64-byte chunk record per column, the out-of-line stats (min then
    max, in column order), then each present inlined bloom bitset as ``[i32 LENGTH][bitset]``
    starting 8-aligned; the whole block is zero-padded to a multiple of 8 bytes.

    Args:
        block: the row group.
        block_offset: absolute ``_pm`` offset the block will be written at (8-aligned).
        header: the file header (column count, bloom columns and mode).

    Returns:
        The block bytes, and the absolute offsets of its inlined bloom bitsets, one per header
        bloom column (0 where absent); empty unless the header is in inlined bloom mode.

    Raises:
        ConfigError: misaligned offset, wrong number of chunks or bitsets, bitsets given in
            external or no-bloom mode, or a value that does not fit its field.
    """
    if block_offset < 0 or block_offset % BLOCK_ALIGNMENT:
        raise ConfigError(f"A row group block offset must be 8-aligned, got {block_offset}.")
    ncols = len(header.columns)
    if len(block.chunks) != ncols:
        raise ConfigError(
            f"A row group block needs one chunk record per column ({ncols}), "
            f"got {len(block.chunks)}."
        )
    bitsets = block.bloom_bitsets
    nbloom = len(header.bloom_columns)
    if bitsets and not header.bloom_inlined:
        raise ConfigError(
            "Row group block carries bloom bitsets but the header is not in inlined bloom mode."
        )
    if bitsets and len(bitsets) != nbloom:
        raise ConfigError(
            f"A row group block needs one bloom bitset slot per bloom column ({nbloom}), "
            f"got {len(bitsets)}."
        )
    ool = bytearray()
    parts = [pack(_U64, "NUM_ROWS", block.num_rows)]
    for i, chunk in enumerate(block.chunks):
        parts.append(_encode_chunk(chunk, ool, f"column chunk {i}"))
    ool_start = block_offset + ROW_GROUP_HEAD_SIZE + ncols * COLUMN_CHUNK_SIZE
    offsets: list[int] = []
    for bitset in bitsets or (None,) * (nbloom if header.bloom_inlined else 0):
        if bitset is None:
            offsets.append(0)
            continue
        ool += bytes(align8(ool_start + len(ool)) - (ool_start + len(ool)))
        offsets.append(ool_start + len(ool))
        ool += pack(_I32, "bloom bitset LENGTH", len(bitset))
        ool += bitset
    parts.append(bytes(ool))
    body = b"".join(parts)
    body += bytes(align8(len(body)) - len(body))
    return body, tuple(offsets)


# ---------------------------------------------------------------------------------- decoding
def _decode_stat(
    data: bytes,
    slot: int,
    size: int,
    present: bool,
    inlined: bool,
    ool_start: int,
    limit: int,
    where: int,
) -> bytes | None:
    if not present:
        return None
    if inlined:
        if size > INLINE_STAT_MAX_SIZE:
            raise CorruptFileError(
                f"An inline stat claims {size} bytes in STAT_SIZES; at most 8 fit the slot.",
                where,
            )
        return slot.to_bytes(8, "little")[:size]
    rel, length = slot >> 16, slot & 0xFFFF
    start = ool_start + rel
    if start + length > limit:
        raise CorruptFileError(
            f"An out-of-line stat reference (offset {rel}, length {length}) points past the "
            f"committed data ({limit} bytes).",
            where,
        )
    return bytes(data[start : start + length])


def read_bloom_bitset(data: bytes, offset: int, limit: int | None = None) -> bytes:
    """Reads an inlined bloom bitset ``[i32 LENGTH][bitset]`` at absolute ``offset``.

    Returns:
        The bitset bytes.

    Raises:
        CorruptFileError: negative LENGTH or a bitset past ``limit`` (default ``len(data)``).
    """
    end = len(data) if limit is None else min(limit, len(data))
    if offset < 0 or offset + 4 > end:
        raise CorruptFileError(
            f"A bloom bitset offset {offset} lies outside the committed data ({end} bytes).",
            offset,
        )
    (length,) = _I32.unpack_from(data, offset)
    if length < 0 or offset + 4 + length > end:
        raise CorruptFileError(
            f"A bloom bitset claims {length} bytes, past the committed data ({end} bytes).",
            offset,
        )
    return bytes(data[offset + 4 : offset + 4 + length])


def read_row_group_block(
    data: bytes,
    offset: int,
    header: SidecarHeader,
    bloom_offsets: Sequence[int] = (),
) -> RowGroupBlock:
    """Decodes the row group block at absolute ``offset``.

    Args:
        data: the ``_pm`` bytes (cut at the committed size).
        offset: absolute offset of the block (from a footer entry).
        header: the decoded header.
        bloom_offsets: this row group's inlined bloom offsets from the footer (one per bloom
            column, 0 = absent); when given, the bitsets are read into ``bloom_bitsets``.

    Returns:
        The row group block.

    Raises:
        CorruptFileError: truncation, a bad inline stat size or an out-of-bounds reference.
    """
    ncols = len(header.columns)
    if offset < 0 or offset % BLOCK_ALIGNMENT:
        raise CorruptFileError(f"A row group block offset {offset} is not 8-aligned.", offset)
    end = offset + ROW_GROUP_HEAD_SIZE + ncols * COLUMN_CHUNK_SIZE
    if end > len(data):
        raise CorruptFileError(
            f"A row group block of {ncols} columns at offset {offset} runs past the committed "
            f"data ({len(data)} bytes).",
            offset,
        )
    (num_rows,) = _U64.unpack_from(data, offset)
    chunks = []
    for i in range(ncols):
        at = offset + ROW_GROUP_HEAD_SIZE + i * COLUMN_CHUNK_SIZE
        f = _CHUNK.unpack_from(data, at)
        codec, encodings, flags, sizes, _reserved = f[:5]
        num_values, brs, total, nulls, distinct, min_slot, max_slot = f[5:]
        chunks.append(
            ChunkRecord(
                codec=codec,
                encodings=encodings,
                num_values=num_values,
                byte_range_start=brs,
                total_compressed=total,
                null_count=nulls if flags & NULL_COUNT_PRESENT else None,
                distinct_count=distinct if flags & DISTINCT_COUNT_PRESENT else None,
                min_stat=_decode_stat(
                    data,
                    min_slot,
                    sizes & 0xF,
                    bool(flags & MIN_STAT_PRESENT),
                    bool(flags & MIN_STAT_INLINED),
                    end,
                    len(data),
                    at + 48,
                ),
                max_stat=_decode_stat(
                    data,
                    max_slot,
                    sizes >> 4,
                    bool(flags & MAX_STAT_PRESENT),
                    bool(flags & MAX_STAT_INLINED),
                    end,
                    len(data),
                    at + 56,
                ),
                min_exact=not flags & MIN_STAT_PRESENT or bool(flags & MIN_STAT_VALUE_EXACT),
                max_exact=not flags & MAX_STAT_PRESENT or bool(flags & MAX_STAT_VALUE_EXACT),
            )
        )
    bitsets = tuple(read_bloom_bitset(data, o) if o else None for o in bloom_offsets)
    return RowGroupBlock(num_rows=num_rows, chunks=tuple(chunks), bloom_bitsets=bitsets)
