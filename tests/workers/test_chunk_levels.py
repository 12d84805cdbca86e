"""Chunks of nested leaves: level sections, record-aligned pages, counts and histograms.

The vectorised kernels (``workers.levels``, the page loop of ``workers.chunk``) are checked
against per-value references (``tests/workers/_levels_reference.py``) and against the level
bytes of the spec's examples, derived by hand below.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwrite.errors import FormatError
from streamwrite.format import structs as t
from streamwrite.format.enums import Encoding, Type
from streamwrite.format.thrift.codec import deserialize
from streamwrite.options import BloomFilterOptions, DataPageVersion
from tests.workers._levels_reference import (
    make_settings,
    random_levels,
    reference_histogram,
    reference_record_starts,
    walk_pages,
)
from workers.bloom import SplitBlockBloomFilter, hash_values, optimal_num_bytes
from workers.chunk import encode_chunk
from workers.encoding.rle_hybrid import (
    decode_levels_v1,
    decode_rle_hybrid,
    encode_rle_hybrid_reference,
)
from workers.levels import encode_levels, level_histogram, record_map
from workers.values import BinaryValues

EXAMPLES = int(os.environ.get("STREAMWRITE_HYPOTHESIS_EXAMPLES", "40"))
V1, V2 = DataPageVersion.V1, DataPageVersion.V2


# --- level sections ---------------------------------------------------------------------------


@settings(max_examples=EXAMPLES * 3, deadline=None)
@given(
    st.integers(1, 40).flatmap(
        lambda m: st.tuples(st.just(m), st.lists(st.integers(0, m), max_size=300))
    ),
    st.booleans(),
)
def test_encode_levels_equals_reference_and_round_trips(
    case: tuple[int, list[int]], v1: bool
) -> None:
    max_level, levels = case
    array = np.asarray(levels, dtype=np.uint8)
    width = max_level.bit_length()
    runs = encode_rle_hybrid_reference(levels, width)
    expected = (len(runs).to_bytes(4, "little") + runs) if v1 else runs
    got = encode_levels(array, max_level, None, v1)
    assert got == expected
    if v1:
        back, used = decode_levels_v1(got, width, len(levels))
    else:
        back, used = decode_rle_hybrid(got, width, len(levels))
    assert used == len(got)
    assert back.tolist() == levels
    if levels and len(set(levels)) == 1:  # the one-run fast path writes the same bytes
        assert encode_levels(array, max_level, levels[0], v1) == expected
    assert level_histogram(array, max_level) == reference_histogram(levels, max_level)


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 60), st.integers(1, 4), st.integers(0, 3))
def test_record_map_equals_reference(seed: int, num_rows: int, max_def: int, max_rep: int) -> None:
    rng = np.random.default_rng(seed)
    defs, rep = random_levels(rng, num_rows, max_def, max_rep, 3.0)
    num_values = int(np.count_nonzero(defs == max_def))
    records = record_map(num_rows, num_values, defs, rep, max_def, "c")
    starts = reference_record_starts(rep.tolist() if rep is not None else [0] * num_rows)
    defined = [int(d == max_def) for d in defs.tolist()]
    assert records.num_entries == len(defs)
    for row in range(num_rows + 1):
        assert records.entry_of(row) == starts[row]
        assert records.value_of(row) == sum(defined[: starts[row]])
    value_starts = [sum(defined[: starts[row]]) for row in range(num_rows + 1)]
    for value in range(num_values + 2):
        # the first record boundary with at least ``value`` values before it, stepped back
        # when the record before it crosses ``value``
        first = next((r for r, v in enumerate(value_starts) if v >= value), num_rows + 1)
        if first <= num_rows and value_starts[first] > value:
            first -= 1
        assert records.row_at_or_before_value(value) == first


def test_levels_that_disagree_are_refused() -> None:
    defs = np.array([1, 1, 0], dtype=np.uint8)
    with pytest.raises(FormatError, match="record starts"):
        record_map(3, 2, defs, np.array([0, 1, 0], dtype=np.uint8), 1, "l.list.element")
    with pytest.raises(FormatError, match="repetition levels"):
        record_map(2, 2, defs, np.array([0, 1], dtype=np.uint8), 1, "l.list.element")
    with pytest.raises(FormatError, match="values"):
        record_map(3, 1, defs, None, 1, "c")


# --- the spec's examples, byte for byte -------------------------------------------------------
#
# Dremel paper (Melnik et al. 2010), Figure 2/3: records r1, r2 of
#   message Document { required int64 DocId;
#     optional group Links { repeated int64 Backward; repeated int64 Forward; }
#     repeated group Name { repeated group Language { required string Code;
#                                                     optional string Country; }
#                           optional string Url; } }
# and the AddressBook example of parquet-format's nested encoding description (Twitter's
# "Dremel made simple with Parquet"): contacts.phoneNumber of
#   AddressBook{contacts{phoneNumber "555 987 6543"} contacts{}}  AddressBook{}.
#
# Hybrid runs (Encodings.md): fewer than 8 levels that are not all equal form one bit-packed run
# of one 8-level group: header uleb128(1 << 1 | 1) = 0x03, then the levels packed LSB first at
# width w = bit_length(max level), padded with zeros to 8 levels (w bytes). Levels all equal
# form one RLE run: header uleb128(count << 1), then the level in ceil(w / 8) bytes.
#
# Name.Language.Code (max_rep 2, max_def 2, w 2): rep 0 2 1 1 0, def 2 2 1 2 1
#   rep byte0 = 0<<0 | 2<<2 | 1<<4 | 1<<6 = 0x58, byte1 = 0 (level 4 is 0)  -> 03 58 00
#   def byte0 = 2<<0 | 2<<2 | 1<<4 | 2<<6 = 0x9a, byte1 = 1                 -> 03 9a 01
# Name.Language.Country (max_rep 2, max_def 3, w 2): rep as Code, def 3 2 1 3 1
#   def byte0 = 3 | 2<<2 | 1<<4 | 3<<6 = 0xdb, byte1 = 1                    -> 03 db 01
# Links.Forward (max_rep 1 w 1, max_def 2 w 2): rep 0 1 1 0, def 2 2 2 2
#   rep byte0 = 1<<1 | 1<<2 = 0x06                                          -> 03 06
#   def all 2: RLE run of 4                                                 -> 08 02
# Links.Backward (max_rep 1, max_def 2): rep 0 0 1, def 1 2 2
#   rep byte0 = 1<<2 = 0x04                                                 -> 03 04
#   def byte0 = 1 | 2<<2 | 2<<4 = 0x29, byte1 = 0                           -> 03 29 00
# Name.Url (max_rep 1, max_def 2): rep 0 1 1 0, def 2 2 1 1
#   rep                                                                     -> 03 06
#   def byte0 = 2 | 2<<2 | 1<<4 | 1<<6 = 0x5a, byte1 = 0                    -> 03 5a 00
# contacts.phoneNumber (max_rep 1, max_def 2): rep 0 1 0, def 2 1 0
#   rep byte0 = 1<<1 = 0x02                                                 -> 03 02
#   def byte0 = 2 | 1<<2 = 0x06, byte1 = 0                                  -> 03 06 00
# DocId is REQUIRED and not repeated: no level sections at all.

SPEC_EXAMPLES: list[tuple[str, int, int, list[int], list[int], Any, str, str]] = [
    # name, max_rep, max_def, rep, def, values, rep hex, def hex
    ("Name.Language.Code", 2, 2, [0, 2, 1, 1, 0], [2, 2, 1, 2, 1],
     [b"en-us", b"en", b"en-gb"], "035800", "039a01"),
    ("Name.Language.Country", 2, 3, [0, 2, 1, 1, 0], [3, 2, 1, 3, 1],
     [b"us", b"gb"], "035800", "03db01"),
    ("Links.Forward", 1, 2, [0, 1, 1, 0], [2, 2, 2, 2], [20, 40, 60, 80], "0306", "0802"),
    ("Links.Backward", 1, 2, [0, 0, 1], [1, 2, 2], [10, 30], "0304", "032900"),
    ("Name.Url", 1, 2, [0, 1, 1, 0], [2, 2, 1, 1], [b"http://A", b"http://B"], "0306", "035a00"),
    ("contacts.phoneNumber", 1, 2, [0, 1, 0], [2, 1, 0], [b"555 987 6543"], "0302", "030600"),
    ("DocId", 0, 0, [0, 0], [0, 0], [10, 20], "", ""),
]  # fmt: skip


@pytest.mark.parametrize("version", [V1, V2])
@pytest.mark.parametrize("example", SPEC_EXAMPLES, ids=[e[0] for e in SPEC_EXAMPLES])
def test_spec_example_level_bytes(
    example: tuple[str, int, int, list[int], list[int], Any, str, str], version: DataPageVersion
) -> None:
    name, max_rep, max_def, rep, defs, values, rep_hex, def_hex = example
    binary = isinstance(values[0], bytes)
    ptype = Type.BYTE_ARRAY if binary else Type.INT64
    column_values = (
        BinaryValues.from_pylist(values) if binary else np.asarray(values, dtype=np.int64)
    )
    settings_ = make_settings(
        ptype, max_def, max_rep, version, path=tuple(name.split(".")), encoding=Encoding.PLAIN
    )
    chunk = encode_chunk(
        settings_,
        column_values,
        np.asarray(defs, dtype=np.uint8) if max_def else None,
        rep.count(0),
        rep_levels=np.asarray(rep, dtype=np.uint8) if max_rep else None,
    )
    _, pages = walk_pages(chunk.data, max_def, max_rep)
    (page,) = pages
    header_size = len(chunk.data) - page.header.compressed_page_size
    body = chunk.data[header_size:]
    rep_bytes, def_bytes = bytes.fromhex(rep_hex), bytes.fromhex(def_hex)
    if version == V1:
        sections = b"".join(
            len(part).to_bytes(4, "little") + part for part in (rep_bytes, def_bytes) if part
        )
        assert page.header.data_page_header.num_values == len(defs)
    else:
        sections = rep_bytes + def_bytes
        v2 = page.header.data_page_header_v2
        assert (v2.repetition_levels_byte_length, v2.definition_levels_byte_length) == (
            len(rep_bytes),
            len(def_bytes),
        )
        assert (v2.num_values, v2.num_nulls, v2.num_rows) == (
            len(defs),
            len(defs) - len(values),
            rep.count(0),
        )
    assert body[: len(sections)] == sections
    assert chunk.meta_data.num_values == len(defs)


# --- whole chunks against the reference -------------------------------------------------------


def _values(ptype: Type, count: int, rng: np.random.Generator, distinct: int) -> Any:
    picks = rng.integers(0, distinct, count)
    if ptype == Type.BYTE_ARRAY:
        return BinaryValues.from_pylist([b"v%05d" % int(p) for p in picks])
    return picks.astype(np.int64) * 1_000_003


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    num_rows=st.integers(0, 400),
    max_def=st.integers(1, 5),
    max_rep=st.integers(0, 3),
    version=st.sampled_from([V1, V2]),
    ptype=st.sampled_from([Type.INT64, Type.BYTE_ARRAY]),
    dictionary=st.sampled_from(["none", "fits", "overflows"]),
    row_limit=st.integers(1, 50),
    page_size=st.sampled_from([16, 100, 1000, 1 << 20]),
    mean_entries=st.sampled_from([1.0, 2.5, 8.0]),
)
def test_chunk_pages_follow_records(
    seed: int,
    num_rows: int,
    max_def: int,
    max_rep: int,
    version: DataPageVersion,
    ptype: Type,
    dictionary: str,
    row_limit: int,
    page_size: int,
    mean_entries: float,
) -> None:
    rng = np.random.default_rng(seed)
    defs, rep = random_levels(rng, num_rows, max_def, max_rep, mean_entries)
    num_values = int(np.count_nonzero(defs == max_def))
    values = _values(ptype, num_values, rng, 50 if dictionary != "none" else 1 << 30)
    settings_ = make_settings(
        ptype,
        max_def,
        max_rep,
        version,
        data_page_size=page_size,
        data_page_row_limit=row_limit,
        dictionary_page_size_limit=(1 << 20) if dictionary == "fits" else 120,
        use_dictionary=dictionary != "none",
    )
    chunk = encode_chunk(settings_, values, defs, num_rows, rep_levels=rep)

    rep_list = rep.tolist() if rep is not None else [0] * len(defs)
    def_list = defs.tolist()
    _, pages = walk_pages(chunk.data, max_def, max_rep)
    locations = chunk.offset_index.page_locations
    index = chunk.column_index
    assert len(pages) == len(locations)
    # The pages' levels are the chunk's levels, cut at record starts only.
    got_rep = [lv for p in pages for lv in (p.rep.tolist() if max_rep else [0] * p.num_entries)]
    assert got_rep == rep_list
    assert [lv for p in pages for lv in p.defs.tolist()] == def_list
    first_row = 0
    entry = 0
    def_hists: list[int] = []
    rep_hists: list[int] = []
    for i, page in enumerate(pages):
        page_rep = rep_list[entry : entry + page.num_entries]
        page_def = def_list[entry : entry + page.num_entries]
        records = page_rep.count(0)
        assert not page_rep or page_rep[0] == 0  # a page starts a record
        assert 1 <= records <= row_limit or num_rows == 0
        assert locations[i].first_row_index == first_row
        nulls = sum(1 for d in page_def if d < max_def)
        if version == V2:
            assert (page.num_rows, page.num_nulls) == (records, nulls)
        assert index is not None
        assert index.null_counts[i] == nulls
        assert index.null_pages[i] == (nulls == len(page_def))
        def_hists += reference_histogram(page_def, max_def)
        rep_hists += reference_histogram(page_rep, max_rep)
        first_row += records
        entry += page.num_entries
    assert first_row == num_rows
    assert entry == len(def_list)
    assert chunk.meta_data.num_values == len(def_list)
    assert chunk.meta_data.statistics.null_count == len(def_list) - num_values
    assert index.definition_level_histograms == def_hists
    size = chunk.meta_data.size_statistics
    assert size.definition_level_histogram == reference_histogram(def_list, max_def)
    assert size.definition_level_histogram == np.bincount(defs, minlength=max_def + 1).tolist()
    if max_rep:
        assert index.repetition_level_histograms == rep_hists
        assert size.repetition_level_histogram == reference_histogram(rep_list, max_rep)
        assert Encoding.RLE in chunk.meta_data.encodings
    else:
        assert index.repetition_level_histograms is None
        assert size.repetition_level_histogram is None


@pytest.mark.parametrize("dictionary", [True, False])
def test_bloom_filter_of_a_nested_leaf_holds_its_values(dictionary: bool) -> None:
    rng = np.random.default_rng(5)
    defs, rep = random_levels(rng, 300, 3, 2, 4.0)
    num_values = int(np.count_nonzero(defs == 3))
    values = _values(Type.BYTE_ARRAY, num_values, rng, 200)
    settings_ = make_settings(
        Type.BYTE_ARRAY,
        3,
        2,
        V2,
        use_dictionary=dictionary,
        bloom_filter=BloomFilterOptions(),
        data_page_row_limit=40,
    )
    chunk = encode_chunk(settings_, values, defs, 300, rep_levels=rep)
    assert chunk.bloom_filter is not None
    header, size = deserialize(t.BloomFilterHeader, chunk.bloom_filter)
    bloom = SplitBlockBloomFilter.from_bitset(chunk.bloom_filter[size:])
    assert header.numBytes == bloom.num_bytes
    distinct = set(values.to_pylist())
    assert bloom.num_bytes == optimal_num_bytes(len(distinct), BloomFilterOptions().fpp)
    assert bloom.check_hashes(hash_values(values, Type.BYTE_ARRAY)).all()
    absent = BinaryValues.from_pylist([b"absent-%d" % i for i in range(2000)])
    assert bloom.check_hashes(hash_values(absent, Type.BYTE_ARRAY)).mean() < 0.05


def test_dictionary_fallback_cut_moves_back_to_a_record_start() -> None:
    """Records of 10 strings (14 PLAIN bytes per dictionary entry): records 0, 1, 2 bring words
    0-9, 10-19, 20-29 and the others repeat them. The dictionary page limit holds 25 entries,
    so the value cut (value 25) falls inside record 2: the dictionary part ends at record 2 and
    its page keeps the 20 entries records 0-1 use; record 2 on goes to PLAIN pages."""
    num_rows, per_row = 200, 10
    words = [b"word-%05d" % i for i in range(30)]
    picks = np.concatenate(
        (np.arange(30), np.random.default_rng(1).integers(0, 30, (num_rows - 3) * per_row))
    )
    rep = np.tile(np.r_[0, np.ones(per_row - 1)].astype(np.uint8), num_rows)
    defs = np.full(num_rows * per_row, 3, dtype=np.uint8)
    values = BinaryValues.from_pylist([words[i] for i in picks])
    settings_ = make_settings(
        Type.BYTE_ARRAY, 3, 1, V1, dictionary_page_size_limit=14 * 25, data_page_row_limit=40
    )
    chunk = encode_chunk(settings_, values, defs, num_rows, rep_levels=rep)
    dictionary, pages = walk_pages(chunk.data, 3, 1)
    assert dictionary is not None
    assert dictionary.dictionary_page_header.num_values == 2 * per_row
    encodings = [p.header.data_page_header.encoding for p in pages]
    assert encodings[0] == Encoding.RLE_DICTIONARY
    assert set(encodings[1:]) == {Encoding.PLAIN}
    assert chunk.offset_index is not None
    assert [p.first_row_index for p in chunk.offset_index.page_locations][:2] == [0, 2]
    # the dictionary part's indices: 0..19, bit width 5 (the byte before the hybrid runs)
    first = pages[0]
    assert first.num_entries == 2 * per_row and first.rep.tolist().count(0) == 2
    assert first.values[0] == 5
    indices, _ = decode_rle_hybrid(first.values[1:], 5, 2 * per_row)
    assert indices.tolist() == list(range(2 * per_row))
    # the PLAIN part starts with record 2's first value: u32 length, then the bytes
    assert pages[1].rep.tolist()[0] == 0
    assert pages[1].values[4:14] == words[20]


def test_repeated_leaf_without_rep_levels_writes_records_of_one_entry() -> None:
    """rep_levels=None for a repeated leaf means one entry per record: the pages still carry
    the repetition level section a reader of a max_rep 1 column expects (all 0)."""
    defs = np.array([2, 1, 0, 2], dtype=np.uint8)
    settings_ = make_settings(Type.INT64, 2, 1, V1)
    chunk = encode_chunk(settings_, np.array([7, 8], dtype=np.int64), defs, 4)
    _, pages = walk_pages(chunk.data, 2, 1)
    assert pages[0].rep.tolist() == [0, 0, 0, 0]
    assert pages[0].defs.tolist() == [2, 1, 0, 2]
    with pytest.raises(FormatError, match=r"4 record starts .* for 3 rows"):
        encode_chunk(settings_, np.array([7, 8], dtype=np.int64), defs, 3)
