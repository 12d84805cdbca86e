"""Decoding column chunks of nested leaves: repetition and definition levels, records.

Hypothesis builds random level arrays (any repetition and definition levels up to their
maxima, the first entry of the chunk starting a record), values for the entries at the maximum
definition level, cuts them into pages (at record starts, or anywhere for v1 pages as old
writers did), writes the pages with the page builders and the RLE hybrid encoder (plain or
dictionary values, compressed, encrypted) and checks that ``decode_chunk`` and
``decode_pages`` return exactly those levels, values and records. Then the spec's byte
examples and every way a page can contradict its column.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwrite.errors import (
    ConfigError,
    CorruptFileError,
    EncryptionError,
    LimitError,
    UnsupportedError,
)
from streamwrite.format import structs as t
from streamwrite.format.enums import CompressionCodec, PageType
from tests.workers._decode_nested_pages import (
    EXAMPLES,
    LIMIT,
    OFFSET,
    Built,
    Chunk,
    Layout,
    as_list,
    assert_decoded,
    bit_packed_reference,
    build,
    chunks,
    cuts,
    decode,
    layouts,
)
from workers.decode import decode_chunk
from workers.decode_levels import record_bounds, unpack_bit_packed_levels
from workers.decode_pages import PageSlice, decode_pages

# --- round trips ------------------------------------------------------------------------------


@given(st.data(), chunks(), layouts)
@settings(max_examples=EXAMPLES, deadline=None)
def test_chunk_round_trips(data: st.DataObject, chunk: Chunk, layout: Layout) -> None:
    at_records = layout.v2 or data.draw(st.booleans())
    bounds = data.draw(cuts(chunk, at_records))
    built = build(chunk, bounds, layout)
    decoded = decode(built, chunk)
    n = len(chunk.def_levels)
    assert_decoded(decoded, chunk, 0, n)
    data_pages = [p for p in decoded.pages if p.page_type != PageType.DICTIONARY_PAGE]
    assert [p.num_values for p in data_pages] == [hi - lo for lo, hi in itertools.pairwise(bounds)]
    assert [p.num_rows for p in data_pages] == [records for *_, records in built.pages]
    assert [p.num_nulls for p in data_pages] == [
        int(np.count_nonzero(chunk.def_levels[lo:hi] != chunk.max_def))
        for lo, hi in itertools.pairwise(bounds)
    ]
    assert [p.offset - OFFSET for p in data_pages] == [offset for offset, *_ in built.pages]


@given(st.data(), chunks(), layouts)
@settings(max_examples=EXAMPLES, deadline=None)
def test_records_spanning_pages_are_counted_over_the_chunk(
    data: st.DataObject, chunk: Chunk, layout: Layout
) -> None:
    """Old writers cut records across pages (v1, and V2 before Arrow 12): the chunk still
    decodes to its levels, and its records are the entries with repetition level 0."""
    bounds = data.draw(cuts(chunk, False))
    decoded = decode(build(chunk, bounds, layout), chunk)
    assert_decoded(decoded, chunk, 0, len(chunk.def_levels))


@given(st.data(), chunks(), layouts)
@settings(max_examples=EXAMPLES, deadline=None)
def test_keep_dictionary_returns_indices(data: st.DataObject, chunk: Chunk, layout: Layout) -> None:
    layout = Layout(layout.v2, layout.codec, True, layout.bit_packed, layout.encrypted)
    bounds = data.draw(cuts(chunk, True))
    built = build(chunk, bounds, layout)
    decoded = decode(built, chunk, keep_dictionary=True)
    assert decoded.dictionary is not None
    physical = chunk.physical(0, len(chunk.def_levels))
    got = as_list(decoded.dictionary)
    assert [got[i] for i in decoded.values.tolist()] == as_list(physical)
    assert decoded.rep_levels is not None
    assert decoded.rep_levels.tolist() == chunk.rep_levels.tolist()


@given(st.data(), chunks(), layouts)
@settings(max_examples=EXAMPLES, deadline=None)
def test_selected_pages_hold_whole_records(
    data: st.DataObject, chunk: Chunk, layout: Layout
) -> None:
    """Page-index reads: each selected page starts a record; the pages decode to exactly their
    entries, and their rows are the records the OffsetIndex gives them."""
    bounds = data.draw(cuts(chunk, True))
    built = build(chunk, bounds, layout)
    num_pages = len(built.pages)
    chosen = sorted(set(data.draw(st.lists(st.integers(0, num_pages - 1), max_size=num_pages))))
    slices = [
        PageSlice(built.data[offset : offset + size], OFFSET + offset, k, records)
        for k, (offset, size, _, records) in enumerate(built.pages)
        if k in chosen
    ]
    decoded = decode_pages(
        built.data[: built.dictionary_size],
        OFFSET,
        slices,
        built.meta,
        type_length=None,
        max_definition_level=chunk.max_def,
        max_repetition_level=chunk.max_rep,
        verify_checksums=True,
        max_decompressed_page_size=LIMIT,
        where="Column 'x.list.element' of row group 3",
        cipher=built.cipher,
        dictionary_first=built.dictionary_size > 0,
    )
    entries = np.concatenate(
        [np.arange(bounds[k], bounds[k + 1]) for k in chosen] or [np.zeros(0, np.int64)]
    ).astype(np.int64)
    assert decoded.def_levels is not None and decoded.rep_levels is not None
    assert decoded.def_levels.tolist() == chunk.def_levels[entries].tolist()
    assert decoded.rep_levels.tolist() == chunk.rep_levels[entries].tolist()
    want: list[Any] = []
    for k in chosen:
        want += as_list(chunk.physical(bounds[k], bounds[k + 1]))
    assert as_list(decoded.values) == want
    assert decoded.num_rows == sum(built.pages[k][3] for k in chosen)


@given(st.data(), chunks(max_rep_range=(0, 3)))
@settings(max_examples=EXAMPLES, deadline=None)
def test_record_bounds_equal_the_reference(data: st.DataObject, chunk: Chunk) -> None:
    """``record_bounds`` against a per-entry walk: records ``[start, stop)`` are the entries
    from the start-th entry with repetition level 0 to the stop-th (or the end)."""
    n = len(chunk.def_levels)
    flat = chunk.max_rep == 0
    rep = None if flat else chunk.rep_levels
    num_records = n if flat else int(np.count_nonzero(chunk.rep_levels == 0))
    start = data.draw(st.integers(0, num_records))
    stop = data.draw(st.integers(start, num_records))
    record_of = []
    record = -1
    for i in range(n):
        record += 1 if flat or chunk.rep_levels[i] == 0 else 0
        record_of.append(record)
    entries = [i for i in range(n) if start <= record_of[i] < stop]
    level_start = n if start == num_records else record_of.index(start)
    got = record_bounds(rep, chunk.def_levels, chunk.max_def, n, start, stop)
    value_start = sum(1 for i in range(level_start) if chunk.def_levels[i] == chunk.max_def)
    values = sum(1 for i in entries if chunk.def_levels[i] == chunk.max_def)
    assert got == (level_start, level_start + len(entries), value_start, value_start + values)
    assert record_bounds(rep, None, chunk.max_def, n, start, stop)[2:] == got[:2]
    with pytest.raises(ConfigError, match="not within"):
        record_bounds(rep, chunk.def_levels, chunk.max_def, n, start, num_records + 1)


# --- the spec's bytes ---------------------------------------------------------------------------


def test_bit_packed_levels_follow_the_spec_example() -> None:
    """parquet-format Encodings.md, BIT_PACKED: 0..7 in 3 bits is 00000101 00111001 01110111."""
    data = bytes([0b00000101, 0b00111001, 0b01110111])
    assert bit_packed_reference(list(range(8)), 3) == data
    levels, used = unpack_bit_packed_levels(data, 3, 8)
    assert levels.tolist() == list(range(8)) and used == 3


@given(
    st.integers(1, 8).flatmap(lambda w: st.tuples(st.just(w), st.lists(st.integers(0, 2**w - 1))))
)
@settings(max_examples=EXAMPLES, deadline=None)
def test_bit_packed_levels_equal_the_reference(case: tuple[int, list[int]]) -> None:
    width, levels = case
    data = bit_packed_reference(levels, width) + b"\xff"  # what follows is not read
    got, used = unpack_bit_packed_levels(data, width, len(levels))
    assert got.tolist() == levels and used == len(data) - 1


def test_dremel_document_levels() -> None:
    """The Dremel paper's ``Name.Language.Code`` column (repeated Name, repeated Language,
    required Code: max rep 2, max def 2) of its documents r1 and r2: values en-us, en, NULL,
    en-gb, NULL with r = 0 2 1 1 0 and d = 2 2 1 2 1; as one v1 page and as two v2 pages."""
    rep = np.array([0, 2, 1, 1, 0], np.uint8)
    defs = np.array([2, 2, 1, 2, 1], np.uint8)
    values = [b"en-us", b"en", b"en-gb"]
    chunk = Chunk(defs, rep, values, 2, 2)
    for layout, bounds in (
        (Layout(False, CompressionCodec.UNCOMPRESSED, False, False, False), [0, 5]),
        (Layout(True, CompressionCodec.SNAPPY, True, False, False), [0, 4, 5]),
    ):
        decoded = decode(build(chunk, bounds, layout), chunk)
        assert_decoded(decoded, chunk, 0, 5)
        assert decoded.num_rows == 2


# --- pages that contradict their column ---------------------------------------------------------


def _simple(rep: list[int], defs: list[int], max_rep: int = 1, max_def: int = 2) -> Chunk:
    count = sum(d == max_def for d in defs)
    return Chunk(
        np.array(defs, np.uint8), np.array(rep, np.uint8), np.arange(count), max_def, max_rep
    )


@pytest.mark.parametrize("v2", [False, True])
def test_repetition_level_above_the_maximum_is_corrupt(v2: bool) -> None:
    chunk = _simple([0, 1, 3, 0], [2, 2, 2, 2], max_rep=3)  # 2 bits: built with max 3, read with 2
    layout = Layout(v2, CompressionCodec.UNCOMPRESSED, False, False, False)
    built = build(chunk, [0, 4], layout)
    with pytest.raises(CorruptFileError, match=r"Column 'x.list.element'.*repetition level 3") as e:
        decode(built, Chunk(chunk.def_levels, chunk.rep_levels, chunk.values, 2, 2))
    assert e.value.offset == OFFSET


@pytest.mark.parametrize("v2", [False, True])
def test_definition_level_above_the_maximum_is_corrupt(v2: bool) -> None:
    chunk = _simple([0, 1, 0], [3, 1, 3], max_def=3)
    built = build(chunk, [0, 3], Layout(v2, CompressionCodec.UNCOMPRESSED, False, False, False))
    with pytest.raises(CorruptFileError, match="definition level 3 exceeds"):
        decode(built, Chunk(chunk.def_levels, chunk.rep_levels, chunk.values, 2, 1))


@pytest.mark.parametrize("v2", [False, True])
def test_chunk_starting_inside_a_record_is_corrupt(v2: bool) -> None:
    chunk = _simple([1, 0, 1], [2, 2, 2])
    built = build(chunk, [0, 3], Layout(v2, CompressionCodec.UNCOMPRESSED, False, False, False))
    with pytest.raises(CorruptFileError, match="does not start a record") as e:
        decode(built, chunk)
    assert e.value.offset == OFFSET


def test_empty_first_page_then_a_page_inside_a_record_is_corrupt() -> None:
    chunk = _simple([1, 0], [2, 2])
    built = build(
        chunk, [0, 0, 2], Layout(True, CompressionCodec.UNCOMPRESSED, False, False, False)
    )
    with pytest.raises(CorruptFileError, match="does not start a record"):
        decode(built, chunk)


def test_selected_page_inside_a_record_is_corrupt() -> None:
    chunk = _simple([0, 1, 1, 0], [2, 2, 2, 2])
    built = build(
        chunk, [0, 2, 4], Layout(False, CompressionCodec.UNCOMPRESSED, False, False, False)
    )
    offset, size, _, records = built.pages[1]
    page = PageSlice(built.data[offset : offset + size], OFFSET + offset, 1, records)
    with pytest.raises(CorruptFileError, match="page 1 starts with repetition level 1") as e:
        decode_pages(
            b"",
            OFFSET,
            [page],
            built.meta,
            type_length=None,
            max_definition_level=2,
            max_repetition_level=1,
            verify_checksums=True,
            max_decompressed_page_size=LIMIT,
            where="Column 'x.list.element' of row group 0",
        )
    assert e.value.offset == OFFSET + offset


def test_selected_page_with_other_records_than_the_offset_index_is_corrupt() -> None:
    chunk = _simple([0, 1, 0, 0], [2, 2, 2, 2])
    built = build(chunk, [0, 4], Layout(False, CompressionCodec.UNCOMPRESSED, False, False, False))
    offset, size, _, records = built.pages[0]
    assert records == 3
    page = PageSlice(built.data[offset : offset + size], OFFSET + offset, 0, 4)  # 4 levels
    with pytest.raises(CorruptFileError, match=r"holds 3 rows .* OffsetIndex says 4 rows"):
        decode_pages(
            b"",
            OFFSET,
            [page],
            built.meta,
            type_length=None,
            max_definition_level=2,
            max_repetition_level=1,
            verify_checksums=True,
            max_decompressed_page_size=LIMIT,
            where="Column 'x.list.element' of row group 0",
        )


def test_page_claiming_more_levels_than_the_chunk_is_corrupt() -> None:
    chunk = _simple([0, 1, 0, 0], [2, 2, 2, 2])
    built = build(chunk, [0, 4], Layout(False, CompressionCodec.UNCOMPRESSED, False, False, False))
    meta = t.ColumnMetaData(
        type=built.meta.type, path_in_schema=["x"], codec=built.meta.codec, num_values=3
    )
    with pytest.raises(CorruptFileError, match="page holds 4 values but the chunk has 3 left"):
        decode_chunk(
            built.data,
            OFFSET,
            meta,
            type_length=None,
            max_definition_level=2,
            max_repetition_level=1,
            verify_checksums=True,
            max_decompressed_page_size=LIMIT,
        )


def test_truncated_repetition_levels_are_corrupt() -> None:
    chunk = _simple([0, 1, 2, 0, 1, 2, 0, 2, 1, 0], [2] * 10, max_rep=2)
    built = build(chunk, [0, 10], Layout(True, CompressionCodec.UNCOMPRESSED, False, False, False))
    data = built.data[:-1]  # the page's body runs past the chunk
    with pytest.raises(CorruptFileError, match="runs past the column chunk"):
        decode(Built(data, built.meta, 0, built.pages, None), chunk)


def test_level_deeper_than_uint8_is_unsupported() -> None:
    chunk = _simple([0], [2])
    built = build(chunk, [0, 1], Layout(False, CompressionCodec.UNCOMPRESSED, False, False, False))
    with pytest.raises(UnsupportedError, match="maximum repetition level 300"):
        decode(built, Chunk(chunk.def_levels, chunk.rep_levels, chunk.values, 2, 300))


def test_flat_column_has_no_repetition_levels() -> None:
    """A V2 page of a flat column may still store repetition levels (a run of zeros): they are
    skipped, and ``rep_levels`` stays None."""
    chunk = _simple([0, 0, 0], [1, 0, 1], max_rep=1, max_def=1)
    built = build(chunk, [0, 3], Layout(True, CompressionCodec.UNCOMPRESSED, False, False, False))
    decoded = decode_chunk(
        built.data,
        OFFSET,
        built.meta,
        type_length=None,
        max_definition_level=1,
        verify_checksums=True,
        max_decompressed_page_size=LIMIT,
    )
    assert decoded.rep_levels is None and decoded.num_rows == 3 and decoded.num_levels == 3
    assert decoded.def_levels is not None and decoded.def_levels.tolist() == [1, 0, 1]


@given(st.data(), chunks(), layouts, st.lists(st.tuples(st.integers(0), st.integers(0, 255))))
@settings(max_examples=EXAMPLES, deadline=None)
def test_damaged_chunks_raise_typed_errors(
    data: st.DataObject, chunk: Chunk, layout: Layout, flips: list[tuple[int, int]]
) -> None:
    """Any bytes changed in a nested chunk (no CRCs checked, so the damage reaches the
    kernels) decode or raise a StreamwriteError naming the column, never anything else."""
    bounds = data.draw(cuts(chunk, layout.v2))
    built = build(chunk, bounds, layout)
    damaged = bytearray(built.data)
    for at, value in flips:
        damaged[at % len(damaged)] = value
    try:
        decode_chunk(
            bytes(damaged),
            OFFSET,
            built.meta,
            type_length=None,
            max_definition_level=chunk.max_def,
            max_repetition_level=chunk.max_rep,
            verify_checksums=False,
            max_decompressed_page_size=LIMIT,
            cipher=built.cipher,
            dictionary_first=built.dictionary_size > 0,
        )
    except (CorruptFileError, LimitError, UnsupportedError, EncryptionError) as exc:
        assert "Column 'x.list.element'" in str(exc) or isinstance(exc, EncryptionError)
