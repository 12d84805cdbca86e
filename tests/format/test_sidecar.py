"""The ``_pm`` sidecar codec, checked byte by byte against spec/002's tables."""

from __future__ import annotations

import contextlib
import struct
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamwrite.errors import ConfigError, CorruptFileError, UnsupportedError
from streamwrite.format.enums import ConvertedType, Encoding, Type
from streamwrite.format.sidecar.codec import (
    COLUMN_CHUNK_SIZE,
    FEATURE_BLOOM_FILTERS,
    FEATURE_BLOOM_FILTERS_EXTERNAL,
    FEATURE_SORTING_IS_DTS_ASC,
    FOOTER_FEATURE_PARQUET_FOOTER_XXH64,
    QUESTDB_TIMESTAMP_NANO,
    ChunkRecord,
    ColumnDescriptor,
    RowGroupBlock,
    SidecarFooter,
    SidecarHeader,
    SidecarWriter,
    column_flags,
    encode_footer,
    encode_header,
    encode_row_group_block,
    encoding_mask,
    parquet_footer_checksum,
    patch_committed_size,
    questdb_type_code,
    read_footer_at,
    read_header,
    read_row_group_block,
    read_sidecar,
    read_version,
)
from streamwrite.format.structs import (
    IntType,
    LogicalType,
    MicroSeconds,
    NanoSeconds,
    StringType,
    TimestampType,
    TimeUnit,
    UUIDType,
)

U8, U32, I32, U64 = (struct.Struct(f) for f in ("<B", "<I", "<i", "<Q"))


def u32(b: bytes, o: int) -> int:
    return int(U32.unpack_from(b, o)[0])


def u64(b: bytes, o: int) -> int:
    return int(U64.unpack_from(b, o)[0])


def three_columns(flags: int = FEATURE_BLOOM_FILTERS) -> SidecarHeader:
    cols = (
        ColumnDescriptor("ts", Type.INT64, type_code=8, flags=column_flags(0), column_id=0),
        ColumnDescriptor("price", Type.DOUBLE, max_def_level=1, type_code=10, flags=4),
        ColumnDescriptor("sym", Type.BYTE_ARRAY, max_def_level=1, type_code=26, flags=4),
    )
    bloom = (1, 2) if flags & FEATURE_BLOOM_FILTERS else ()
    return SidecarHeader(cols, designated_timestamp=0, sorting_columns=(0,), feature_flags=flags,
                         bloom_columns=bloom)  # fmt: skip


def chunk(
    mn: bytes | None = b"\x01" * 8, mx: bytes | None = b"\x02" * 8, **kw: object
) -> ChunkRecord:
    base: dict[str, object] = dict(
        codec=6, encodings=encoding_mask([Encoding.PLAIN, Encoding.RLE_DICTIONARY]),
        num_values=10, byte_range_start=4, total_compressed=100, null_count=0,
        distinct_count=None, min_stat=mn, max_stat=mx,
    )  # fmt: skip
    base.update(kw)
    return ChunkRecord(**base)  # type: ignore[arg-type]


def block(i: int = 0, bitsets: tuple[bytes | None, ...] = (b"\xaa" * 32, None)) -> RowGroupBlock:
    return RowGroupBlock(
        num_rows=10 + i,
        chunks=(chunk(), chunk(b"x" * 8, b"y" * 8), chunk(b"a" * 13, b"zz")),
        bloom_bitsets=bitsets,
    )


def build(commits: int = 3, header: SidecarHeader | None = None) -> tuple[bytearray, list[int]]:
    """A file of ``commits`` commits of one block each, with the size field patched."""
    h = header or three_columns()
    w = SidecarWriter(h)
    buf = bytearray(w.start())
    sizes = []
    for i in range(commits):
        bitsets = (b"\xaa" * 32, None) if h.bloom_inlined else ()
        out, size = w.commit([block(i, bitsets)], 1000 * (i + 1), 50 + i, 7 * i)
        buf += out
        buf[0:8] = patch_committed_size(size)
        sizes.append(size)
    return buf, sizes


def recrc(buf: bytearray, sizes: list[int]) -> None:
    """Recomputes every version's CHECKSUM after a deliberate edit."""
    for size in sorted(sizes):
        at = size - 8
        buf[at : at + 4] = U32.pack(zlib.crc32(bytes(buf[8:at])))


# ------------------------------------------------------------------------------------ header
def test_header_fields_at_documented_offsets() -> None:
    h = three_columns()
    data = encode_header(h)
    assert u64(data, 0) == 0  # PARQUET_META_FILE_SIZE
    assert u64(data, 8) == FEATURE_BLOOM_FILTERS
    assert I32.unpack_from(data, 16)[0] == 0  # DESIGNATED_TIMESTAMP
    assert u32(data, 20) == 1  # SORTING_COLUMN_COUNT
    assert u32(data, 24) == 3  # COLUMN_COUNT
    assert u32(data, 28) == 0  # RESERVED
    names_start = 32 + 3 * 32 + 4
    expect_off = names_start
    for i, c in enumerate(h.columns):
        d = 32 + 32 * i
        name_off, cid, ctype, flags, fbl, nlen = struct.unpack_from("<QiiiiI", data, d)
        phys, rep, dfl, res = struct.unpack_from("<BBBB", data, d + 28)
        assert name_off == expect_off and nlen == len(c.name)
        assert data[name_off : name_off + nlen] == c.name.encode()
        assert (cid, ctype, flags, fbl) == (c.column_id, c.type_code, c.flags, 0)
        assert (phys, rep, dfl, res) == (c.physical_type, 0, c.max_def_level, 0)
        expect_off += nlen
    assert u32(data, 32 + 3 * 32) == 0  # SORTING_COLUMNS[0]
    bloom_at = names_start + len(b"tspricesym")
    assert u32(data, bloom_at) == 2 and u32(data, bloom_at + 4) == 1
    assert u32(data, bloom_at + 8) == 2
    end = bloom_at + 12
    assert len(data) == (end + 7) // 8 * 8 and len(data) % 8 == 0
    assert data[end:] == bytes(len(data) - end)
    assert read_header(data) == (h, 0)


def test_column_flags_bits() -> None:
    assert column_flags(0) == 0
    assert column_flags(1) == 0b0100 and column_flags(2) == 0b1000
    assert column_flags(descending=True) == 1 << 4
    assert column_flags(local_key_is_global=True) == 1 and column_flags(is_ascii=True) == 2
    d = ColumnDescriptor("c", Type.INT32, flags=column_flags(2, descending=True))
    assert d.repetition == 2 and d.descending
    with pytest.raises(ConfigError):
        column_flags(3)


def test_header_validation() -> None:
    cols = three_columns().columns
    bad = [
        SidecarHeader(cols, feature_flags=1 << 7),  # undefined bit
        SidecarHeader(cols, feature_flags=FEATURE_BLOOM_FILTERS_EXTERNAL),
        SidecarHeader(cols, feature_flags=FEATURE_BLOOM_FILTERS),  # no bloom columns
        SidecarHeader(cols, feature_flags=FEATURE_BLOOM_FILTERS, bloom_columns=(2, 1)),
        SidecarHeader(cols, feature_flags=FEATURE_BLOOM_FILTERS, bloom_columns=(3,)),
        SidecarHeader(cols, feature_flags=FEATURE_SORTING_IS_DTS_ASC),  # no timestamp
        SidecarHeader(cols, 0, (0,), FEATURE_SORTING_IS_DTS_ASC),  # explicit sorting
        SidecarHeader(cols, designated_timestamp=3),
        SidecarHeader(cols, sorting_columns=(5,)),
    ]
    for h in bad:
        with pytest.raises(ConfigError):
            encode_header(h)
    ok = SidecarHeader(cols, 0, (), FEATURE_SORTING_IS_DTS_ASC)
    assert read_header(encode_header(ok))[0] == ok


# ------------------------------------------------------------------------------------ chunks
def encode_one(c: ChunkRecord, offset: int = 64) -> tuple[bytes, int]:
    h = SidecarHeader((ColumnDescriptor("c", Type.BYTE_ARRAY),))
    data, blooms = encode_row_group_block(RowGroupBlock(5, (c,)), offset, h)
    assert blooms == ()
    return data, 8  # chunk record starts after NUM_ROWS


def test_column_chunk_record_fields() -> None:
    c = ChunkRecord(
        codec=6, encodings=0b100001, num_values=1234, byte_range_start=4, total_compressed=999,
        null_count=17, distinct_count=None, min_stat=b"\x05\x00\x00\x00",
        max_stat=b"\x09\x00\x00\x00\x00\x00\x00\x00", min_exact=True, max_exact=False,
    )  # fmt: skip
    data, at = encode_one(c)
    assert u64(data, 0) == 5  # NUM_ROWS
    assert len(data) == 8 + COLUMN_CHUNK_SIZE
    assert data[at] == 6 and data[at + 1] == 0b100001
    flags, sizes = data[at + 2], data[at + 3]
    assert flags == 0b1001_1111  # min present/inlined/exact, max present/inlined, nulls
    assert sizes == 4 | (8 << 4)
    assert u32(data, at + 4) == 0  # RESERVED
    assert u64(data, at + 8) == 1234 and u64(data, at + 16) == 4 and u64(data, at + 24) == 999
    assert u64(data, at + 32) == 17 and u64(data, at + 40) == 0
    assert u64(data, at + 48) == 5 and u64(data, at + 56) == 9


def test_stat_flags_without_counts_and_stats() -> None:
    data, at = encode_one(chunk(None, None, null_count=None, distinct_count=None))
    assert data[at + 2] == 0 and data[at + 3] == 0
    data, at = encode_one(chunk(None, None, null_count=None, distinct_count=42))
    assert data[at + 2] == 1 << 6 and u64(data, at + 40) == 42
    data, at = encode_one(chunk(None, b"\x01", null_count=3, max_exact=True))
    assert data[at + 2] == (1 << 3) | (1 << 4) | (1 << 5) | (1 << 7)
    assert data[at + 3] == 1 << 4


@pytest.mark.parametrize(
    "value",
    [
        b"\x01",  # BOOLEAN
        struct.pack("<i", -7),  # INT32
        struct.pack("<q", -(2**40)),  # INT64
        struct.pack("<d", 3.5),  # DOUBLE
        b"abc",  # short BYTE_ARRAY
    ],
)
def test_inline_stats(value: bytes) -> None:
    data, at = encode_one(chunk(value, value))
    assert data[at + 2] & 0b11011 == 0b11011  # both present and inlined
    assert data[at + 3] == len(value) | (len(value) << 4)
    for slot in (at + 48, at + 56):
        assert data[slot : slot + 8] == value + bytes(8 - len(value))
    assert len(data) == 8 + 64  # nothing out of line
    got = read_row_group_block(bytes(64) + data, 64, encode_header_for_one())
    assert got.chunks[0].min_stat == value == got.chunks[0].max_stat


def encode_header_for_one() -> SidecarHeader:
    return SidecarHeader((ColumnDescriptor("c", Type.BYTE_ARRAY),))


@pytest.mark.parametrize(
    ("mn", "mx"),
    [(bytes(range(16)), bytes(range(100, 116))), (b"m" * 9, b"long string value" * 20)],
)
def test_out_of_line_stats(mn: bytes, mx: bytes) -> None:
    offset = 128
    data, at = encode_one(chunk(mn, mx), offset)
    assert data[at + 2] & 0b11011 == 0b01001  # present, not inlined
    assert data[at + 3] == 0  # STAT_SIZES only for inline stats
    ool = 8 + 64  # block-relative start of the out-of-line region
    for slot, value, rel in ((at + 48, mn, 0), (at + 56, mx, len(mn))):
        ref = u64(data, slot)
        assert ref == (rel << 16) | len(value)
        start = ool + (ref >> 16)
        assert data[start : start + (ref & 0xFFFF)] == value
    assert len(data) % 8 == 0 and len(data) == (ool + len(mn) + len(mx) + 7) // 8 * 8
    got = read_row_group_block(bytes(offset) + data, offset, encode_header_for_one())
    assert (got.chunks[0].min_stat, got.chunks[0].max_stat) == (mn, mx)


def test_empty_or_oversized_stats_are_absent() -> None:
    data, at = encode_one(chunk(b"", b"x" * 70000))
    assert data[at + 2] & 0b11011 == 0
    assert len(data) == 72


def test_inlined_bloom_bitset_layout() -> None:
    h = three_columns()
    offset = 1024
    data, blooms = encode_row_group_block(block(), offset, h)
    assert len(data) % 8 == 0
    ool_start = offset + 8 + 3 * 64
    ool = 13 + 2  # the 13-byte min and 2-byte max of column 2
    assert blooms[1] == 0 and blooms[0] == (ool_start + ool + 7) // 8 * 8
    rel = blooms[0] - offset
    assert data[ool_start - offset + ool : rel] == bytes(rel - (ool_start - offset + ool))
    assert I32.unpack_from(data, rel)[0] == 32
    assert data[rel + 4 : rel + 36] == b"\xaa" * 32
    assert data[rel + 36 :] == bytes(len(data) - rel - 36)
    got = read_row_group_block(bytes(offset) + data, offset, h, blooms)
    assert got == block()
    with pytest.raises(ConfigError):
        encode_row_group_block(block(), offset + 4, h)  # misaligned
    with pytest.raises(ConfigError):
        encode_row_group_block(block(bitsets=(None,)), offset, h)  # one per bloom column
    with pytest.raises(ConfigError):
        encode_row_group_block(block(), offset, three_columns(0))  # no bloom columns


# ------------------------------------------------------------------------------------ footer
def test_footer_fields_crc_and_trailer() -> None:
    buf, sizes = build(2)
    data = bytes(buf)
    size = sizes[-1]
    length = u32(data, size - 4)
    start = size - 4 - length
    assert u64(data, start) == 2000 and u32(data, start + 8) == 51
    assert u32(data, start + 12) == 2  # ROW_GROUP_COUNT
    assert u64(data, start + 16) == 7 and u64(data, start + 24) == sizes[0]
    assert u64(data, start + 32) == 0  # FOOTER_FEATURE_FLAGS
    footer = read_sidecar(data).footers[0][1]
    entries = [u32(data, start + 40 + 4 * k) for k in range(2)]
    assert [e << 3 for e in entries] == list(footer.row_group_offsets)
    assert all(o % 8 == 0 for o in footer.row_group_offsets)
    bloom_at = start + 48
    bloom = [u32(data, bloom_at + 4 * k) << 3 for k in range(4)]
    assert bloom == list(footer.bloom_offsets) and bloom[1] == bloom[3] == 0
    for rg, o in zip(footer.row_group_offsets, bloom[::2], strict=True):
        assert o > rg and I32.unpack_from(data, o)[0] == 32  # bitset inside its block
    crc_at = bloom_at + 16
    assert crc_at == size - 8 and length == crc_at + 4 - start
    assert u32(data, crc_at) == zlib.crc32(data[8:crc_at])
    assert footer.parquet_file_size == 2000 + 51 + 8


def test_external_bloom_footer_entries() -> None:
    h = three_columns(FEATURE_BLOOM_FILTERS | FEATURE_BLOOM_FILTERS_EXTERNAL)
    w = SidecarWriter(h)
    buf = bytearray(w.start())
    out, size = w.commit([block(bitsets=())], 100, 10, 0, external_bloom=[(4, 5), (0, 0)])
    buf += out
    buf[0:8] = patch_committed_size(size)
    data = bytes(buf)
    start = size - 4 - u32(data, size - 4)
    at = start + 40 + 4
    assert struct.unpack_from("<QQQQ", data, at) == (4, 5, 0, 0)
    assert at + 32 == size - 8
    assert read_sidecar(data).footers[0][1].external_bloom == ((4, 5), (0, 0))
    with pytest.raises(ConfigError):
        w.commit([block()], 100, 10, 0)  # inlined bitsets in external mode


def test_encode_footer_validation() -> None:
    h = three_columns(0)
    ok = SidecarFooter(0, 0, (64,), 0, 0)
    encode_footer(ok, 64 + 8 + 3 * 64, h, 0)
    for bad, at in [
        (SidecarFooter(0, 0, (60,), 0, 0), 1000),  # misaligned block
        (SidecarFooter(0, 0, (64,), 0, 0), 100),  # block overlaps the footer
        (SidecarFooter(0, 0, (), 0, 2000), 1000),  # prev after the footer
        (SidecarFooter(0, 0, (), 0, 0, footer_feature_flags=1), 1000),
        (SidecarFooter(0, 0, (), 0, 0, bloom_offsets=(8,)), 1000),  # no bloom columns
    ]:
        with pytest.raises(ConfigError):
            encode_footer(bad, at, h, 0)


# ------------------------------------------------------------------------------------ chain
def test_three_commits_chain_and_reuse() -> None:
    buf, sizes = build(3)
    sc = read_sidecar(bytes(buf))
    assert sc.committed_size == sizes[2]
    assert [s for s, _ in sc.footers] == sizes[::-1]
    assert [f.prev_pm_size for _, f in sc.footers] == [sizes[1], sizes[0], 0]
    newest, middle, oldest = (f for _, f in sc.footers)
    assert newest.row_group_offsets[:2] == middle.row_group_offsets  # reused blocks
    assert middle.row_group_offsets[:1] == oldest.row_group_offsets
    assert [f.parquet_file_size for _, f in sc.footers] == [3060, 2059, 1058]
    for k, o in enumerate(newest.row_group_offsets):
        got = read_row_group_block(
            bytes(buf), o, sc.header, newest.bloom_offsets[2 * k : 2 * k + 2]
        )
        assert got == block(k)
    # A reader pinned to the second commit sees two versions (data beyond is ignored).
    buf[0:8] = patch_committed_size(sizes[1])
    sc2 = read_sidecar(bytes(buf))
    assert [s for s, _ in sc2.footers] == sizes[1::-1]
    assert read_footer_at(bytes(buf), sizes[0], sc.header) == oldest


def test_resume_is_byte_identical() -> None:
    full, sizes = build(3)
    for k in (0, 1, 2):
        part, _ = build(k) if k else (bytearray(encode_header(three_columns())), [])
        w = SidecarWriter.resume(bytes(part) + b"torn tail", sizes[k - 1] if k else 0)
        assert w.size == len(part)
        buf = bytearray(part)
        for i in range(k, 3):
            out, size = w.commit([block(i)], 1000 * (i + 1), 50 + i, 7 * i)
            buf += out
            buf[0:8] = patch_committed_size(size)
        assert buf == full


def test_writer_misuse() -> None:
    w = SidecarWriter(three_columns())
    with pytest.raises(ConfigError):
        w.commit([], 0, 0, 0)
    w.start()
    with pytest.raises(ConfigError):
        w.start()
    with pytest.raises(CorruptFileError):
        SidecarWriter.resume(b"\x00" * 8 + b"\x01" + bytes(300), 0)  # torn header


def test_empty_commit_and_no_bloom() -> None:
    buf, sizes = build(1, SidecarHeader(three_columns().columns))
    w = SidecarWriter.resume(bytes(buf), sizes[0])
    out, size = w.commit([], 5, 5, 0)
    buf += out
    buf[0:8] = patch_committed_size(size)
    sc = read_sidecar(bytes(buf))
    assert sc.footers[0][1].row_group_offsets == sc.footers[1][1].row_group_offsets


# ------------------------------------------------------------------------------------ flags
def test_optional_header_bit_is_ignored() -> None:
    buf, sizes = build(2)
    buf[8:16] = U64.pack(FEATURE_BLOOM_FILTERS | 1 << 9)
    recrc(buf, sizes)
    sc = read_sidecar(bytes(buf))
    assert sc.header.feature_flags == FEATURE_BLOOM_FILTERS | 1 << 9
    assert len(sc.footers) == 2
    with pytest.raises(UnsupportedError):
        SidecarWriter.resume(bytes(buf), sizes[1])  # cannot add sections it does not know


def test_required_header_bit_is_rejected() -> None:
    buf, sizes = build(1)
    buf[8:16] = U64.pack(FEATURE_BLOOM_FILTERS | 1 << 40)
    recrc(buf, sizes)
    with pytest.raises(UnsupportedError, match="40"):
        read_sidecar(bytes(buf))


def test_required_footer_bit_is_rejected() -> None:
    buf, sizes = build(2)
    start = sizes[1] - 4 - u32(bytes(buf), sizes[1] - 4)
    buf[start + 32 : start + 40] = U64.pack(1 << 40)
    recrc(buf, sizes)
    with pytest.raises(UnsupportedError, match="40"):
        read_sidecar(bytes(buf))
    # The older version does not carry the bit and stays readable.
    header, _ = read_header(bytes(buf))
    assert read_footer_at(bytes(buf), sizes[0], header).prev_pm_size == 0


def test_external_bit_without_bloom_bit_is_corrupt() -> None:
    buf, sizes = build(1, SidecarHeader(three_columns().columns))
    buf[8:16] = U64.pack(FEATURE_BLOOM_FILTERS_EXTERNAL)
    recrc(buf, sizes)
    with pytest.raises(CorruptFileError):
        read_sidecar(bytes(buf))


# ------------------------------------------------------------------------------------ damage
def test_every_single_byte_flip_is_detected() -> None:
    buf, sizes = build(2)
    data = bytes(buf)
    for pos in range(8, sizes[-1]):
        for mask in (0x01, 0x80, 0xFF):
            damaged = bytearray(data)
            damaged[pos] ^= mask
            with pytest.raises(CorruptFileError):
                read_sidecar(bytes(damaged))


def test_truncations_and_bad_sizes_are_corrupt() -> None:
    buf, sizes = build(2)
    data = bytes(buf)
    for cut in range(sizes[-1]):
        with pytest.raises(CorruptFileError):
            read_sidecar(data[:cut])
    for size in range(0, sizes[-1] + 64):
        if size in sizes:
            continue
        with pytest.raises(CorruptFileError):
            read_sidecar(patch_committed_size(size) + data[8:] + bytes(64))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_damage_raises_only_format_errors(data: st.DataObject) -> None:
    buf, _ = build(2)
    edits = data.draw(st.lists(st.tuples(st.integers(0, len(buf) - 1), st.integers(0, 255))))
    for pos, value in edits:
        buf[pos] = value
    with contextlib.suppress(CorruptFileError, UnsupportedError):
        read_sidecar(bytes(buf))


@given(st.binary(max_size=300))
def test_garbage_raises_only_format_errors(blob: bytes) -> None:
    with contextlib.suppress(CorruptFileError, UnsupportedError):
        read_sidecar(blob)


# ------------------------------------------------------------------------------------ helpers
def test_encoding_mask() -> None:
    assert encoding_mask([Encoding.PLAIN, Encoding.RLE, Encoding.BIT_PACKED]) == 1
    assert encoding_mask([Encoding.PLAIN_DICTIONARY]) == 2 == encoding_mask([8])
    assert encoding_mask([5, 6, 7, 9]) == 0b111100


def test_questdb_type_codes() -> None:
    ts = LogicalType(
        TIMESTAMP=TimestampType(isAdjustedToUTC=True, unit=TimeUnit(MICROS=MicroSeconds()))
    )
    ns = LogicalType(
        TIMESTAMP=TimestampType(isAdjustedToUTC=True, unit=TimeUnit(NANOS=NanoSeconds()))
    )
    assert questdb_type_code(Type.BOOLEAN) == 1
    assert questdb_type_code(Type.INT32) == 5 and questdb_type_code(Type.INT64) == 6
    assert (
        questdb_type_code(Type.INT32, LogicalType(INTEGER=IntType(bitWidth=8, isSigned=True))) == 2
    )
    assert (
        questdb_type_code(Type.INT32, LogicalType(INTEGER=IntType(bitWidth=8, isSigned=False))) == 0
    )
    assert questdb_type_code(Type.INT64, ts) == 8
    assert questdb_type_code(Type.INT64, ns) == QUESTDB_TIMESTAMP_NANO == (1 << 18) | 8
    assert questdb_type_code(Type.INT32, converted_type=ConvertedType.DATE) == 7
    assert questdb_type_code(Type.FLOAT) == 9 and questdb_type_code(Type.DOUBLE) == 10
    assert questdb_type_code(Type.BYTE_ARRAY, LogicalType(STRING=StringType())) == 26
    assert questdb_type_code(Type.BYTE_ARRAY) == 18
    uuid = LogicalType(UUID=UUIDType())
    assert questdb_type_code(Type.FIXED_LEN_BYTE_ARRAY, uuid, type_length=16) == 19
    assert questdb_type_code(Type.INT96) == 0


# ------------------------------------------------------------------------------------ round trips
names = st.text(max_size=8)


@st.composite
def headers(draw: st.DrawFn) -> SidecarHeader:
    n = draw(st.integers(0, 5))
    cols = tuple(
        ColumnDescriptor(
            name=draw(names),
            physical_type=draw(st.integers(0, 7)),
            fixed_byte_len=draw(st.integers(0, 64)),
            max_rep_level=draw(st.integers(0, 255)),
            max_def_level=draw(st.integers(0, 255)),
            column_id=draw(st.integers(-(2**31), 2**31 - 1)),
            type_code=draw(st.integers(-(2**31), 2**31 - 1)),
            flags=draw(st.integers(0, 31)),
        )
        for _ in range(n)
    )
    dts = draw(st.integers(-1, n - 1))
    flags = 0
    bloom: tuple[int, ...] = ()
    if n and draw(st.booleans()):
        bloom = tuple(sorted(draw(st.sets(st.integers(0, n - 1), min_size=1))))
        flags |= FEATURE_BLOOM_FILTERS
        if draw(st.booleans()):
            flags |= FEATURE_BLOOM_FILTERS_EXTERNAL
    sorting: tuple[int, ...] = ()
    if dts >= 0 and not cols[dts].descending and draw(st.booleans()):
        flags |= FEATURE_SORTING_IS_DTS_ASC
    elif n:
        sorting = tuple(draw(st.lists(st.integers(0, n - 1), max_size=3)))
    return SidecarHeader(cols, dts, sorting, flags, bloom)


def stats() -> st.SearchStrategy[bytes | None]:
    return st.none() | st.binary(min_size=1, max_size=40)


@st.composite
def chunks(draw: st.DrawFn) -> ChunkRecord:
    u64s = st.integers(0, 2**64 - 1)
    mn, mx = draw(stats()), draw(stats())
    return ChunkRecord(
        codec=draw(st.integers(0, 7)),
        encodings=draw(st.integers(0, 63)),
        num_values=draw(u64s),
        byte_range_start=draw(u64s),
        total_compressed=draw(u64s),
        null_count=draw(st.none() | u64s),
        distinct_count=draw(st.none() | u64s),
        min_stat=mn,
        max_stat=mx,
        min_exact=draw(st.booleans()) if mn is not None else True,
        max_exact=draw(st.booleans()) if mx is not None else True,
    )


@st.composite
def blocks(draw: st.DrawFn, header: SidecarHeader) -> RowGroupBlock:
    bitsets: tuple[bytes | None, ...] = ()
    if header.bloom_inlined and draw(st.booleans()):
        bitsets = tuple(draw(st.none() | st.binary(max_size=40)) for _ in header.bloom_columns)
    return RowGroupBlock(
        num_rows=draw(st.integers(0, 2**64 - 1)),
        chunks=tuple(draw(chunks()) for _ in header.columns),
        bloom_bitsets=bitsets,
    )


@given(headers())
def test_header_round_trip(header: SidecarHeader) -> None:
    data = encode_header(header)
    assert len(data) % 8 == 0
    assert read_header(data) == (header, 0)


@given(st.data())
def test_block_round_trip(data: st.DataObject) -> None:
    header = data.draw(headers())
    blk = data.draw(blocks(header))
    offset = data.draw(st.integers(4, 64)) * 8
    encoded, blooms = encode_row_group_block(blk, offset, header)
    assert len(encoded) % 8 == 0
    got = read_row_group_block(bytes(offset) + encoded, offset, header, blooms)
    expect_bitsets = blk.bloom_bitsets or (None,) * len(blooms)
    assert got == RowGroupBlock(blk.num_rows, blk.chunks, expect_bitsets)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_footer_round_trip(data: st.DataObject) -> None:
    header = data.draw(headers())
    file = bytearray(encode_header(header))
    offsets, inlined = [], []
    for _ in range(data.draw(st.integers(0, 3))):
        encoded, blooms = encode_row_group_block(data.draw(blocks(header)), len(file), header)
        offsets.append(len(file))
        inlined.append(blooms or (0,) * len(header.bloom_columns))
        file += encoded
    picks = data.draw(st.lists(st.integers(0, len(offsets) - 1), max_size=5)) if offsets else []
    u64s = st.integers(0, 2**64 - 1)
    nb = len(header.bloom_columns)
    external = tuple(
        (data.draw(u64s), data.draw(u64s))
        for _ in range(len(picks) * nb if header.bloom_external else 0)
    )
    footer = SidecarFooter(
        parquet_footer_offset=data.draw(u64s),
        parquet_footer_length=data.draw(st.integers(0, 2**32 - 1)),
        row_group_offsets=tuple(offsets[p] for p in picks),
        unused_bytes=data.draw(u64s),
        prev_pm_size=0,
        bloom_offsets=tuple(o for p in picks for o in inlined[p]) if header.bloom_inlined else (),
        external_bloom=external,
        parquet_footer_checksum=data.draw(st.none() | u64s),
    )
    file += encode_footer(footer, len(file), header, zlib.crc32(bytes(file[8:])))
    assert read_footer_at(bytes(file), len(file), header) == footer
    file[0:8] = patch_committed_size(len(file))
    assert read_sidecar(bytes(file)).footers == [(len(file), footer)]


# ------------------------------------------------------------------- Parquet footer checksum
def build_checked(commits: int, header: SidecarHeader | None = None) -> tuple[bytearray, list[int]]:
    """Like :func:`build`, each footer recording the checksum of a made-up Parquet tail."""
    h = header or three_columns()
    w = SidecarWriter(h)
    buf = bytearray(w.start())
    sizes = []
    for i in range(commits):
        bitsets = (b"\xaa" * 32, None) if h.bloom_inlined else ()
        checksum = parquet_footer_checksum(b"tail %d" % i)
        out, size = w.commit([block(i, bitsets)], 1000 * (i + 1), 50 + i, 7 * i,
                             parquet_footer_checksum=checksum)  # fmt: skip
        buf += out
        buf[0:8] = patch_committed_size(size)
        sizes.append(size)
    return buf, sizes


def test_parquet_footer_checksum_is_xxh64_seed_0() -> None:
    # XXH64 reference values (xxhash's own test vectors): "" and "a", seed 0.
    assert parquet_footer_checksum(b"") == 0xEF46DB3751D8E999
    assert parquet_footer_checksum(b"a") == 0xD24EC4F1A98C6E5B
    assert parquet_footer_checksum(memoryview(b"xa")[1:]) == 0xD24EC4F1A98C6E5B


def test_footer_checksum_section_layout() -> None:
    """Footer bit 31 set; the u64 sits after the bloom section, right before the CRC."""
    buf, sizes = build_checked(2)
    data = bytes(buf)
    size = sizes[-1]
    length = u32(data, size - 4)
    start = size - 4 - length
    assert u64(data, start + 32) == FOOTER_FEATURE_PARQUET_FOOTER_XXH64 == 1 << 31
    bloom_at = start + 40 + 4 * 2
    checksum_at = bloom_at + 4 * 2 * 2  # two row groups x two bloom columns, u32 each
    assert u64(data, checksum_at) == parquet_footer_checksum(b"tail 1")
    crc_at = checksum_at + 8
    assert crc_at == size - 8 and length == crc_at + 4 - start
    assert u32(data, crc_at) == zlib.crc32(data[8:crc_at])
    footers = read_sidecar(data).footers
    assert [f.parquet_footer_checksum for _, f in footers] == [
        parquet_footer_checksum(b"tail 1"),
        parquet_footer_checksum(b"tail 0"),
    ]
    assert all(f.footer_feature_flags == 0 for _, f in footers)  # the bit lives in the field


def test_footer_without_checksum_still_reads() -> None:
    """Footers written before the checksum existed: no bit, no section, checksum None."""
    buf, sizes = build(2)
    footers = read_sidecar(bytes(buf)).footers
    assert [f.parquet_footer_checksum for _, f in footers] == [None, None]
    # A file mixing both (an old file appended to by this version) reads too.
    w = SidecarWriter.resume(bytes(buf), sizes[-1])
    out, size = w.commit([block(5)], 9000, 60, 1, parquet_footer_checksum=12345)
    buf += out
    buf[0:8] = patch_committed_size(size)
    footers = read_sidecar(bytes(buf)).footers
    assert [f.parquet_footer_checksum for _, f in footers] == [12345, None, None]


def test_a_reader_that_does_not_know_bit_31_skips_the_section() -> None:
    """Bit 31 is optional (spec: bits 0-31 may be ignored). Played by a file whose footer sets
    an unknown optional bit and carries an unknown section where ours would be: read as
    before, and so is ours by a reader that does not know it (FOOTER_LENGTH bounds both)."""
    buf, sizes = build(1, three_columns(0))
    data = bytes(buf)
    start = sizes[0] - 4 - u32(data, sizes[0] - 4)
    crc_at = sizes[0] - 8
    extended = bytearray(data[:crc_at]) + b"\x11" * 8
    extended[start + 32 : start + 40] = U64.pack(1 << 30)
    extended += U32.pack(zlib.crc32(bytes(extended[8:])))
    extended += U32.pack(len(extended) - start)
    extended[0:8] = patch_committed_size(len(extended))
    footer = read_sidecar(bytes(extended)).footers[0][1]
    assert footer.footer_feature_flags == 1 << 30 and footer.parquet_footer_checksum is None
    assert footer.row_group_offsets == read_sidecar(data).footers[0][1].row_group_offsets


def test_checksum_bit_without_room_for_it_is_corrupt() -> None:
    buf, sizes = build(1, three_columns(0))
    start = sizes[0] - 4 - u32(bytes(buf), sizes[0] - 4)
    buf[start + 32 : start + 40] = U64.pack(FOOTER_FEATURE_PARQUET_FOOTER_XXH64)
    recrc(buf, sizes)
    with pytest.raises(CorruptFileError, match="checksum runs past"):
        read_sidecar(bytes(buf))


def test_footer_feature_flags_are_not_written_directly() -> None:
    h = three_columns(0)
    with pytest.raises(ConfigError, match="footer_feature_flags"):
        encode_footer(
            SidecarFooter(0, 0, (), 0, 0, footer_feature_flags=FOOTER_FEATURE_PARQUET_FOOTER_XXH64),
            1000,
            h,
            0,
        )


# ------------------------------------------------------------------ commit point distance
@pytest.mark.parametrize("header_flags", [0, FEATURE_BLOOM_FILTERS])
def test_no_single_bit_flip_of_the_commit_point_names_another_version(header_flags: int) -> None:
    """PARQUET_META_FILE_SIZE is outside the CRC: every committed size differs from 0 and from
    every earlier one in at least two bits, also across resume."""
    h = three_columns(header_flags)
    w = SidecarWriter(h)
    buf = bytearray(w.start())
    sizes: list[int] = []
    for i in range(200):
        if i == 100:
            w = SidecarWriter.resume(bytes(buf), sizes[-1])
        bitsets = (b"\xaa" * 32, None) if h.bloom_inlined else ()
        new = [block(i, bitsets)] * (i % 3)
        out, size = w.commit(new, 1000 * (i + 1), 50, 0, parquet_footer_checksum=i)
        buf += out
        buf[0:8] = patch_committed_size(size)
        sizes.append(size)
    assert all(s.bit_count() >= 2 for s in sizes)
    for k, size in enumerate(sizes):
        assert all((size ^ earlier).bit_count() >= 2 for earlier in sizes[:k]), k
    assert len(read_sidecar(bytes(buf)).footers) == 200
    flipped_onto_a_version = 0
    for bit in range(64):
        damaged = bytearray(buf)
        damaged[0:8] = U64.pack(sizes[-1] ^ (1 << bit))
        with contextlib.suppress(CorruptFileError, UnsupportedError):
            read_sidecar(bytes(damaged))
            flipped_onto_a_version += 1
    assert flipped_onto_a_version == 0


def test_padding_is_needed_sometimes_and_then_8_bytes_at_a_time() -> None:
    """Without the rule some commits would land one bit from an earlier size: the writer pads
    those by a few multiples of 8 bytes."""
    w = SidecarWriter(three_columns(0))
    w.start()
    footer_size = 40 + 8 + 4 + 4  # fixed part, checksum section, CRC, FOOTER_LENGTH
    paddings = []
    for i in range(300):
        out, _ = w.commit([], 1000 * (i + 1), 50, 0, parquet_footer_checksum=i)
        paddings.append(len(out) - footer_size)
    assert all(p % 8 == 0 and 0 <= p <= 64 for p in paddings)
    assert 0 < sum(p > 0 for p in paddings) < 100


# ------------------------------------------------------------------------------ read_version
def test_read_version_finds_each_committed_version() -> None:
    buf, sizes = build_checked(3)
    data = bytes(buf)
    header, pm_size, newest = read_version(data)
    assert pm_size == sizes[-1] and newest.parquet_file_size == 3000 + 52 + 8
    for i, size in enumerate(sizes):
        _, pm_size, footer = read_version(data, 1000 * (i + 1) + 50 + i + 8)
        assert pm_size == size
        assert footer.parquet_footer_checksum == parquet_footer_checksum(b"tail %d" % i)
    assert header == read_sidecar(data).header
    with pytest.raises(ConfigError, match="1058, 2059, 3060"):
        read_version(data, 1234)
    damaged = bytearray(data)
    damaged[100] ^= 1
    with pytest.raises(CorruptFileError):
        read_version(bytes(damaged))
    with pytest.raises(CorruptFileError, match="never been committed"):
        read_version(bytes(8) + data[8:])
