"""The embedded index blob (spec 001) and its payload grammar: byte-exact vectors, hypothesis
round trips through the incremental builder, damage refused."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwrite.errors import ConfigError, CorruptFileError
from streamwrite.format.index import (
    ColumnIndexPart,
    DistinctPart,
    EntryStatus,
    IndexColumnSpec,
    IndexKind,
    TimeIndexPart,
    ValueKind,
    blob,
    blob_payload_size,
    datafusion_payload,
    decode_payload,
    parse_embedded_index,
)
from streamwrite.layout.embedded_index import IndexBuilder


def _bytes_part(*values: bytes) -> ColumnIndexPart:
    return ColumnIndexPart(distinct=DistinctPart(ValueKind.BYTES, values))


def _time_part(block_rows: int, num_rows: int, blocks: list[tuple[int, int, int]]) -> TimeIndexPart:
    return TimeIndexPart(
        block_rows,
        num_rows,
        b"".join(struct.pack("<q", lo) for lo, _, _ in blocks),
        b"".join(struct.pack("<q", hi) for _, hi, _ in blocks),
        b"".join(struct.pack("<I", n) for _, _, n in blocks),
    )


def test_blob_is_the_spec_layout() -> None:
    assert blob(b"abc") == b"IDX1" + (3).to_bytes(8, "little") + b"abc"
    assert blob_payload_size(blob(b"abc")[:12], "here") == 3
    with pytest.raises(CorruptFileError, match="magic"):
        blob_payload_size(b"IDX2" + bytes(8), "here")


def test_distinct_bitmap_vector_byte_exact() -> None:
    """Two row groups: {"a", "b"} then {"b"}; the bitmap layout (4 + 1 bytes a row group) is
    smaller than the lists (4 + 4 per id)."""
    builder = IndexBuilder([IndexColumnSpec("sym", distinct=True)])
    builder.add_row_group({"sym": _bytes_part(b"a", b"b")})
    builder.add_row_group({"sym": _bytes_part(b"b")})
    body = (
        bytes([2])  # value_kind BYTES
        + struct.pack("<I", 2)  # num_values
        + struct.pack("<3I", 0, 1, 2)  # offsets
        + b"ab"  # data
        + bytes([0b11])  # known: both row groups
        + bytes([0])  # layout BITMAP
        + struct.pack("<I", 2)  # row group 0: 2 values seen so far
        + bytes([0b11])  # holds "a" and "b"
        + struct.pack("<I", 2)  # row group 1
        + bytes([0b10])  # holds "b"
    )
    expected = (
        struct.pack("<BIH", 1, 2, 1)
        + struct.pack("<H", 3)
        + b"sym"
        + struct.pack("<BBI", 1, 0, len(body))
        + body
    )
    assert builder.payload() == expected


def test_distinct_lists_vector_byte_exact() -> None:
    """Many values, few in each row group: the lists layout is smaller than the bitmaps."""
    builder = IndexBuilder([IndexColumnSpec("id", distinct=True)])
    builder.add_row_group({"id": ColumnIndexPart(DistinctPart(ValueKind.INT64, tuple(range(64))))})
    builder.add_row_group({})  # unknown
    builder.add_row_group({"id": ColumnIndexPart(DistinctPart(ValueKind.INT64, (63, 5)))})
    # bitmaps: 3 x 4 + 8 + 8 = 28 bytes; lists: 4 + 256 + 4 + 4 + 8 = 276: BITMAP
    (entry,) = decode_payload(builder.payload(), "test").entries
    values_end = 5 + 8 * 64
    assert entry.body[values_end : values_end + 2] == bytes([0b101, 0])
    assert entry.body[values_end + 1] == 0  # BITMAP
    membership = entry.body[values_end + 2 :]
    assert membership == (
        struct.pack("<I", 64)
        + b"\xff" * 8
        + struct.pack("<I", 0)
        + struct.pack("<I", 64)
        + ((1 << 5) | (1 << 63)).to_bytes(8, "little")
    )
    # one new value per row group, 80 of them: bitmaps 80 x 4 + sum(ceil(k/8)) = 1,172 bytes,
    # lists 80 x 8 = 640: LISTS, ids ascending
    builder = IndexBuilder([IndexColumnSpec("id", distinct=True)])
    for v in range(80):
        builder.add_row_group({"id": ColumnIndexPart(DistinctPart(ValueKind.INT64, (v,)))})
    (entry,) = decode_payload(builder.payload(), "test").entries
    values_end = 5 + 8 * 80
    assert entry.body[values_end + 10] == 1  # LISTS
    lists = entry.body[values_end + 11 :]
    assert lists == b"".join(struct.pack("<II", 1, v) for v in range(80))


def test_time_index_vector_byte_exact() -> None:
    builder = IndexBuilder([IndexColumnSpec("ts", time_index=True, block_rows=2)])
    builder.add_row_group(
        {"ts": ColumnIndexPart(time_index=_time_part(2, 3, [(5, 9, 0), (0, 0, 1)]))}
    )
    body = (
        struct.pack("<I", 2)
        + bytes([1])
        + struct.pack("<QI", 3, 2)
        + struct.pack("<2q", 5, 0)
        + struct.pack("<2q", 9, 0)
        + struct.pack("<2I", 0, 1)
    )
    assert builder.payload() == (
        struct.pack("<BIH", 1, 1, 1)
        + struct.pack("<H", 2)
        + b"ts"
        + struct.pack("<BBI", 2, 0, len(body))
        + body
    )


def test_over_cap_is_recorded_and_sticks() -> None:
    builder = IndexBuilder([IndexColumnSpec("sym", distinct=True, max_distinct=2)])
    builder.add_row_group({"sym": _bytes_part(b"a", b"b")})
    assert decode_payload(builder.payload(), "t").entries[0].status == EntryStatus.PRESENT
    builder.add_row_group({"sym": _bytes_part(b"c")})
    (entry,) = decode_payload(builder.payload(), "t").entries
    assert (entry.status, entry.body) == (EntryStatus.OVER_CAP, b"")
    builder.add_row_group({"sym": _bytes_part(b"a")})
    assert decode_payload(builder.payload(), "t").entries[0].status == EntryStatus.OVER_CAP
    assert builder.part_of("sym", 0) is None  # proves nothing any more
    resumed = IndexBuilder([IndexColumnSpec("sym", distinct=True, max_distinct=2)])
    resumed.resume(decode_payload(builder.payload(), "t"), 3)
    resumed.add_row_group({"sym": _bytes_part(b"a")})
    assert decode_payload(resumed.payload(), "t").entries[0].status == EntryStatus.OVER_CAP


def test_datafusion_payload_rules() -> None:
    assert datafusion_payload([b"foo", b"bar", b""]) == b"\nbar\nfoo"
    assert datafusion_payload([b""]) is None  # str::lines would lose it
    assert datafusion_payload([b"a\nb"]) is None
    assert datafusion_payload([b"a\r"]) is None
    assert datafusion_payload([]) == b""


def test_damage_is_a_corrupt_file_error() -> None:
    builder = IndexBuilder([IndexColumnSpec("sym", distinct=True)])
    builder.add_row_group({"sym": _bytes_part(b"a")})
    payload = builder.payload()
    with pytest.raises(CorruptFileError, match="damaged"):
        decode_payload(payload[:-1], "f")
    with pytest.raises(CorruptFileError, match="damaged"):
        decode_payload(payload + b"\0", "f")
    with pytest.raises(CorruptFileError, match="version 9"):
        decode_payload(b"\x09" + payload[1:], "f")
    bad = bytearray(payload)
    struct.pack_into("<I", bad, len(bad) - 7, 0xFF)  # the last value offset beyond the data
    with pytest.raises(CorruptFileError):
        IndexBuilder([IndexColumnSpec("sym", distinct=True)]).resume(
            decode_payload(bytes(bad), "f"), 1
        )


def test_option_parsing() -> None:
    specs = parse_embedded_index(
        {"s": ["datafusion_distinct"], "t": [("time_index", {"block_rows": 64}), "distinct"]},
        ["s", "t"],
    )
    assert specs == (
        IndexColumnSpec("s", distinct=True, datafusion=True),
        IndexColumnSpec("t", distinct=True, time_index=True, block_rows=64),
    )
    assert parse_embedded_index(None, ["s"]) == ()
    for bad, message in [
        ({"x": ["distinct"]}, "does not have"),
        ({"s": ["bloom"]}, "not a kind"),
        ({"s": [("time_index", {"rows": 3})]}, "parameters"),
        ({"s": [("distinct", {"max_values": 0})]}, "max_values"),
        ({"s": []}, "non-empty"),
        ({"s": ["datafusion_distinct"], "t": ["datafusion_distinct"]}, "one column"),
        (["s"], "must map"),
    ]:
        with pytest.raises(ConfigError, match=message):
            parse_embedded_index(bad, ["s", "t"])


_values = st.one_of(
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=6, unique=True).map(
        lambda v: DistinctPart(ValueKind.INT64, tuple(v))
    ),
)
_byte_values = st.lists(st.binary(max_size=5), max_size=6, unique=True).map(
    lambda v: DistinctPart(ValueKind.BYTES, tuple(v))
)


@st.composite
def _time_parts(draw: st.DrawFn, block_rows: int) -> TimeIndexPart:
    num_rows = draw(st.integers(1, 4 * block_rows))
    num_blocks = -(-num_rows // block_rows)
    blocks = [
        (
            draw(st.integers(-(2**63), 2**63 - 1)),
            draw(st.integers(-(2**63), 2**63 - 1)),
            draw(st.integers(0, block_rows)),
        )
        for _ in range(num_blocks)
    ]
    return _time_part(block_rows, num_rows, blocks)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.one_of(st.none(), _byte_values), st.one_of(st.none(), _time_parts(3))),
        max_size=12,
    ),
    cut=st.integers(0, 12),
)
def test_builder_round_trip(
    rows: list[tuple[DistinctPart | None, TimeIndexPart | None]], cut: int
) -> None:
    """Parts in, payload out, payload back (resume after any prefix, or of_payload): every
    row group's part comes back as it went in (value order aside); unknown stays unknown."""
    specs = [
        IndexColumnSpec("s", distinct=True),
        IndexColumnSpec("t", time_index=True, block_rows=3),
    ]
    builder = IndexBuilder(specs)
    cut = min(cut, len(rows))
    for distinct, time in rows[:cut]:
        builder.add_row_group(
            {"s": ColumnIndexPart(distinct=distinct), "t": ColumnIndexPart(time_index=time)}
        )
    resumed = IndexBuilder(specs)
    resumed.resume(decode_payload(builder.payload(), "t"), cut)
    for distinct, time in rows[cut:]:
        resumed.add_row_group(
            {"s": ColumnIndexPart(distinct=distinct), "t": ColumnIndexPart(time_index=time)}
        )
    payload = decode_payload(blob(resumed.payload())[12:], "t")
    assert payload.num_row_groups == len(rows)
    back = IndexBuilder.of_payload(payload)
    for rg, (distinct, time) in enumerate(rows):
        part = back.part_of("s", rg)
        if distinct is None:
            assert part is None or part.distinct is None
        else:
            assert part is not None and part.distinct is not None
            assert sorted(part.distinct.values) == sorted(distinct.values)  # type: ignore[type-var]
        tpart = back.part_of("t", rg)
        assert (None if tpart is None else tpart.time_index) == time
    assert {(e.column, e.kind) for e in payload.entries} == {
        ("s", IndexKind.DISTINCT),
        ("t", IndexKind.TIME_INDEX),
    }


@settings(max_examples=30, deadline=None)
@given(rows=st.lists(_values, min_size=1, max_size=20))
def test_int_values_round_trip_both_layouts(rows: list[DistinctPart]) -> None:
    builder = IndexBuilder([IndexColumnSpec("i", distinct=True)])
    for part in rows:
        builder.add_row_group({"i": ColumnIndexPart(distinct=part)})
    back = IndexBuilder.of_payload(decode_payload(builder.payload(), "t"))
    for rg, part in enumerate(rows):
        got = back.part_of("i", rg)
        assert got is not None and got.distinct is not None
        assert sorted(got.distinct.values) == sorted(part.values)  # type: ignore[type-var]
