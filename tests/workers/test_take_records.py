"""take_records (compaction's row ranges of a decoded chunk) against a per-entry reference."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.workers._levels_reference import random_levels, reference_record_starts
from workers.jobs import take_records
from workers.values import BinaryValues

EXAMPLES = int(os.environ.get("STREAMWRITE_HYPOTHESIS_EXAMPLES", "40"))


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(0, 40),
    st.integers(0, 3),
    st.integers(0, 2),
    st.booleans(),
    st.data(),
)
def test_take_records_equals_reference(
    seed: int, num_rows: int, max_def: int, max_rep: int, binary: bool, data: st.DataObject
) -> None:
    rng = np.random.default_rng(seed)
    if max_rep and not max_def:
        max_def = 1  # a repeated field always has a definition level
    defs, rep = random_levels(rng, num_rows, max(max_def, 1), max_rep, 2.5)
    if not max_def:
        defs = np.zeros(len(defs), dtype=np.uint8)
    defined = [d == max_def for d in defs.tolist()]
    num_values = sum(defined)
    raw = [b"x" * int(i % 5) + bytes([i % 250]) for i in range(num_values)]
    values = BinaryValues.from_pylist(raw) if binary else np.arange(num_values, dtype=np.int64)
    row_start = data.draw(st.integers(0, num_rows))
    row_stop = data.draw(st.integers(row_start, num_rows))
    got_values, got_defs, got_rep = take_records(
        values, defs if max_def else None, rep, num_rows, row_start, row_stop, max_def
    )
    starts = reference_record_starts(rep.tolist() if rep is not None else [0] * len(defs))
    e0, e1 = starts[row_start], starts[row_stop]
    v0, v1 = sum(defined[:e0]), sum(defined[:e1])
    want = raw[v0:v1] if binary else list(range(v0, v1))
    assert (got_values.to_pylist() if binary else got_values.tolist()) == want
    if max_def:
        assert got_defs is not None and got_defs.tolist() == defs.tolist()[e0:e1]
    else:
        assert got_defs is None
    if max_rep:
        assert got_rep is not None and got_rep.tolist() == rep.tolist()[e0:e1]
    else:
        assert got_rep is None
