"""Automatic encoding choice: the sorted-integer shortcut decides as hashing would."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from streamwrite.format.enums import Encoding, Type
from streamwrite.options import MAX_DICTIONARY_RATIO, ColumnOptions, DataPageVersion
from workers.choose import SMALL_CHUNK_SIZE, choose_encodings
from workers.encoding.dictionary import dictionary_encode


@given(
    st.lists(st.integers(0, 5), min_size=2, max_size=3000),
    st.integers(-(2**40), 2**40),
    st.sampled_from([Type.INT32, Type.INT64]),
)
def test_sorted_integers_choose_the_dictionary_exactly_when_hashing_would(
    steps: list[int], start: int, physical_type: Type
) -> None:
    dtype = np.int32 if physical_type == Type.INT32 else np.int64
    values = (np.int64(start % 2**30) + np.cumsum(steps)).astype(dtype)
    assert len(values) <= SMALL_CHUNK_SIZE
    choice = choose_encodings(values, physical_type, ColumnOptions(), DataPageVersion.V1)
    assert choice.fallback == Encoding.DELTA_BINARY_PACKED
    distinct, _ = dictionary_encode(values, physical_type)
    assert choice.use_dictionary == (len(distinct) <= MAX_DICTIONARY_RATIO * len(values))
