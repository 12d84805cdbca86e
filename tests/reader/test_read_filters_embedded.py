"""``ParquetFile.plan``/``read(filters=)`` with the embedded index (helper "embed"'s
``streamwrite.reader.embedded``): per row group value sets skip what footer statistics cannot
(``"embedded_index"``), the time index narrows the rows read inside a row group. Runs once
that module is merged (skipped before)."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import streamwrite
from streamwrite.predicate import bind, to_arrow
from tests.reader.test_read_filters import same

pytest.importorskip("streamwrite.reader.embedded")

NUM_ROWS = 60_000
ROW_GROUP = 10_000


def _table() -> pa.Table:
    rng = np.random.default_rng(1)
    band = np.arange(NUM_ROWS) // ROW_GROUP * 10 + rng.integers(0, 10, NUM_ROWS)
    symbols = np.array([f"S{k:03d}" for k in band], dtype=object)
    symbols[::ROW_GROUP] = "A"  # every row group spans [A, Z]: its min/max prune nothing
    symbols[1::ROW_GROUP] = "Z"
    return pa.table(
        {
            "ts": pa.array(np.arange(NUM_ROWS) * 1000, pa.timestamp("us", "UTC")),
            "sym": pa.array(symbols.tolist()),
            "v": pa.array(rng.normal(size=NUM_ROWS)),
        }
    )


@pytest.mark.parametrize("write_page_index", [True, False])
def test_embedded_index_skips_row_groups_and_rows(write_page_index: bool) -> None:
    sink = io.BytesIO()
    streamwrite.write_table(
        _table(),
        sink,
        row_group_size=ROW_GROUP,
        write_page_index=write_page_index,
        embedded_index={"sym": ["distinct"], "ts": ["time_index"]},
    )
    pf = streamwrite.ParquetFile(sink.getvalue())
    full = pf.read()
    needle = [("sym", "==", "S034")]
    plan = pf.plan(needle)
    assert plan.skipped("statistics") == 0
    assert plan.skipped("embedded_index") == 5
    assert [rg.index for rg in plan.row_groups if rg.skipped_by is None] == [3]
    hour = (pc.field("ts") >= pa.scalar(25_000_000, pa.timestamp("us", "UTC"))) & (
        pc.field("ts") < pa.scalar(25_500_000, pa.timestamp("us", "UTC"))
    )
    window = pf.plan(hour)
    assert window.num_row_groups_read == 1
    assert window.num_rows_read < ROW_GROUP
    for filters in (needle, hour, [("sym", "in", ["S001", "S059"]), ("v", ">", 0.5)]):
        truth = full.filter(to_arrow(bind(filters, full.schema)))
        assert same(pf.read(filters=filters), truth)
