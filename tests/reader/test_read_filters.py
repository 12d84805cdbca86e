"""``ParquetFile.read(filters=)``, ``plan``, ``iter_batches(filters=)``, ``read_table(filters=)``:
the rows are those of the full read filtered with ``to_arrow`` (same rows, same order), and the
plan shows what was skipped and why, so each pruning level is seen to work.

The files are real: written by streamwrite and by pyarrow, plaintext and encrypted; the pyarrow
trap cases of issue 14 run against files with bloom filters and page indexes.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.crypto import ExplicitKeys
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.errors import ConfigError, CorruptFileError, SchemaError
from streamwrite.format import structs as t
from streamwrite.format.thrift.codec import deserialize, serialize
from streamwrite.predicate import bind, to_arrow
from workers.cipher import Algorithm

NAN = float("nan")
KEY = bytes(range(16))


def _sw(table: pa.Table, encryption: FileEncryption | None = None, **options: Any) -> bytes:
    sink = io.BytesIO()
    streamwrite.write_table(table, sink, encryption=encryption, **options)
    return sink.getvalue()


def _pa(table: pa.Table, **options: Any) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, **options)
    return sink.getvalue()


def _truth(
    pf: streamwrite.ParquetFile, filters: object, columns: list[str] | None = None
) -> pa.Table:
    full = pf.read()
    expr = bind(filters, full.schema)
    kept = full.filter(to_arrow(expr))
    return kept if columns is None else kept.select(columns)


def rows(table: pa.Table) -> list[list[Any]]:
    """The values of each column, floats as ``float.hex`` (NaN equal to NaN, -0.0 not 0.0)."""
    return [
        [v.hex() if isinstance(v, float) else v for v in column.to_pylist()]
        for column in table.columns
    ]


def same(got: pa.Table, truth: pa.Table) -> bool:
    """Same schema, same rows in the same order (NaN-aware, chunking aside)."""
    return got.schema == truth.schema and rows(got) == rows(truth)


def _check(
    pf: streamwrite.ParquetFile, filters: object, columns: list[str] | None = None
) -> pa.Table:
    got = pf.read(columns, filters=filters)
    assert same(got, _truth(pf, filters, columns))
    return got


def _sorted_table(num_rows: int = 10_000) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table(
        {
            "x": pa.array(np.arange(num_rows, dtype=np.int64)),
            "id": pa.array(rng.permutation(num_rows * 7)[:num_rows].astype(np.int64)),
            "y": pa.array(rng.normal(size=num_rows)),
            "s": pa.array([f"sym{i % 50:03d}" for i in range(num_rows)]),
        }
    )


OPTIONS: dict[str, Any] = {
    "row_group_size": 1000,
    "data_page_row_limit": 100,
    "bloom_filter_options": {"id": True, "s": True},
}


@pytest.mark.parametrize("writer", ["streamwrite", "pyarrow"])
def test_statistics_skip_row_groups(writer: str) -> None:
    table = _sorted_table()
    data = _sw(table, **OPTIONS) if writer == "streamwrite" else _pa(table, row_group_size=1000)
    pf = streamwrite.ParquetFile(data)
    plan = pf.plan([("x", ">=", 2500), ("x", "<", 4200)])
    assert plan.num_row_groups == 10
    assert plan.num_row_groups_read == 3
    assert plan.skipped("statistics") == 7
    assert [rg.index for rg in plan.row_groups if rg.skipped_by is None] == [2, 3, 4]
    got = _check(pf, [("x", ">=", 2500), ("x", "<", 4200)])
    assert got.column("x").to_pylist() == list(range(2500, 4200))


def test_page_index_reads_only_the_pages_of_the_rows() -> None:
    pf = streamwrite.ParquetFile(_sw(_sorted_table(), **OPTIONS))
    plan = pf.plan([("x", ">=", 2550), ("x", "<", 2560)], columns=["y"])
    assert plan.num_row_groups_read == 1
    assert plan.row_groups[2].row_ranges == [(500, 600)]
    # x and y, one page each (of 10 per chunk), in the one row group read
    assert (plan.num_pages_read, plan.num_pages) == (2, 200)
    full = pf.plan(None, columns=["y"])
    assert plan.bytes_read < full.bytes_read / 50
    got = _check(pf, [("x", ">=", 2550), ("x", "<", 2560)], columns=["y"])
    assert got.column_names == ["y"]
    assert got.num_rows == 10


@pytest.mark.parametrize("writer", ["streamwrite", "pyarrow"])
def test_bloom_filter_skips_row_groups(writer: str) -> None:
    table = _sorted_table()
    if writer == "streamwrite":
        data = _sw(table, **OPTIONS)
    else:
        data = _pa(table, row_group_size=1000, bloom_filter_options={"id": {}, "s": {}})
    pf = streamwrite.ParquetFile(data)
    ids = table.column("id").to_numpy()
    present = int(ids[4321])
    middle, taken = int(np.median(ids)), set(ids.tolist())
    absent = next(v for v in range(middle, middle + 100) if v not in taken)
    plan = pf.plan([("id", "==", present)])
    # the id column is a random permutation: every row group's [min, max] holds both needles
    assert plan.skipped("statistics") == 0
    assert plan.num_row_groups_read <= 2  # the one holding it, rarely a false positive
    assert any(rg.index == 4 and rg.skipped_by is None for rg in plan.row_groups)
    assert plan.skipped("bloom_filter") >= 8
    assert plan.index_bytes_read > 0
    assert _check(pf, [("id", "==", present)]).column("x").to_pylist() == [4321]
    needle = pf.plan([("id", "in", [absent])])
    assert needle.num_row_groups_read <= 1
    assert needle.skipped("bloom_filter") >= 9 - needle.skipped("statistics")
    assert _check(pf, [("id", "in", [absent, present])]).num_rows == 1


def test_dictionary_column_and_strings() -> None:
    table = _sorted_table().set_column(3, "s", _sorted_table().column("s").dictionary_encode())
    pf = streamwrite.ParquetFile(_sw(table, **OPTIONS))
    got = _check(pf, [("s", "in", ["sym007", "sym049"]), ("x", "<", 3000)])
    assert got.num_rows == 120
    assert pa.types.is_dictionary(got.schema.field("s").type)
    _check(pf, pc.field("s").isin(["nope"]))
    assert pf.plan([("s", "==", "zzz")]).num_row_groups_read == 0  # above every max


def test_columns_stay_aligned_when_page_boundaries_differ() -> None:
    """parquet-java GH-3747: pages cut at different rows in each column (long strings fill
    pages by size, ints by row count); every column is cut to the same row ranges."""
    num_rows = 3000
    table = pa.table(
        {
            "x": pa.array(np.arange(num_rows, dtype=np.int64)),
            "text": pa.array([f"{i:06d}" + "z" * (i % 97) for i in range(num_rows)]),
            "n": pa.array(np.arange(num_rows, dtype=np.int32) * 3),
        }
    )
    data = _sw(table, data_page_size=2048, data_page_row_limit=700, use_dictionary=False)
    pf = streamwrite.ParquetFile(data)
    for filters in (
        [("x", ">=", 1000), ("x", "<", 1010)],
        [("text", ">=", "002500"), ("text", "<", "002510")],
        [[("x", "<", 5)], [("text", ">=", "002990")]],
    ):
        plan = pf.plan(filters)
        assert plan.num_pages_read < plan.num_pages
        got = _check(pf, filters)
        assert got.column("n").to_pylist() == [3 * x for x in got.column("x").to_pylist()]
        assert got.column("text").to_pylist() == [
            f"{x:06d}" + "z" * (x % 97) for x in got.column("x").to_pylist()
        ]


def test_iter_batches_and_read_row_group_with_filters() -> None:
    pf = streamwrite.ParquetFile(_sw(_sorted_table(), **OPTIONS))
    filters = [("x", ">=", 1950), ("x", "<", 3100)]
    batches = list(pf.iter_batches(500, columns=["x", "s"], filters=filters))
    assert [b.num_rows for b in batches] == [500, 500, 150]
    assert same(pa.Table.from_batches(batches), _truth(pf, filters, ["x", "s"]))
    assert pf.read_row_group(2, ["y"], filters=filters).num_rows == 1000
    assert pf.read_row_group(1, filters=filters).column("x").to_pylist() == list(range(1950, 2000))
    assert pf.read_row_group(5, filters=filters).num_rows == 0


def test_nan_count_lets_not_equal_prune() -> None:
    """A chunk with nan_count 0 (streamwrite writes it) can prune ``!=`` when min = max; a
    chunk without it (pyarrow) may hold NaN, so it cannot."""
    table = pa.table({"x": pa.array([3.0] * 6 + [1.0, 2.0, 3.0], pa.float64())})
    filters = [("x", "!=", 3.0)]
    ours = streamwrite.ParquetFile(_sw(table, row_group_size=3))
    theirs = streamwrite.ParquetFile(_pa(table, row_group_size=3))
    assert [rg.skipped_by for rg in ours.plan(filters).row_groups] == [
        "statistics",
        "statistics",
        None,
    ]
    assert theirs.plan(filters).num_row_groups_read == 3
    assert _check(ours, filters).column("x").to_pylist() == [1.0, 2.0]
    assert _check(theirs, filters).column("x").to_pylist() == [1.0, 2.0]


E_S6 = [3.0, NAN, 3.0, 5.0, 6.0, 7.0]
TRAPS = [
    ("not_equal_nan", E_S6, [("x", "!=", 3.0)], [1, 3, 4, 5]),
    ("not_in_nan", E_S6, [("x", "not in", [3.0])], [1, 3, 4, 5]),
    ("not_less", E_S6, ~(pc.field("x") < 10), [1]),
    ("not_less_equal", E_S6, ~(pc.field("x") <= 2), [0, 1, 2, 3, 4, 5]),
    ("is_nan", E_S6, pc.field("x").is_nan(), [1]),
    ("in_zero_negative_zero", [-0.0, -0.0, -0.0, 1.0, 2.0, 3.0], [("x", "in", [0.0])], [0, 1, 2]),
    ("eq_zero_negative_zero", [-0.0, -0.0, -0.0, 1.0, 2.0, 3.0], [("x", "==", 0.0)], [0, 1, 2]),
    ("eq_negative_zero_literal", [0.0, 0.0, 0.0, 1.0, 2.0, 3.0], [("x", "==", -0.0)], [0, 1, 2]),
    ("greater_nan_not_largest", E_S6, pc.field("x") > 100, []),
    ("isin_nan", E_S6, pc.field("x").isin([NAN]), [1]),
]


@pytest.mark.parametrize("writer", ["streamwrite", "pyarrow"])
@pytest.mark.parametrize(("name", "values", "filters", "rows"), TRAPS, ids=[c[0] for c in TRAPS])
def test_pyarrow_traps(
    writer: str, name: str, values: list[float], filters: object, rows: list[int]
) -> None:
    """The issue's pyarrow 26 cases, on files with statistics, bloom filters on ``x`` and a
    page index (pages of 1 row): the right rows, at every level."""
    table = pa.table({"x": pa.array(values, pa.float64()), "row": list(range(len(values)))})
    if writer == "streamwrite":
        data = _sw(table, row_group_size=3, data_page_row_limit=1, bloom_filter_options={"x": True})
    else:
        data = _pa(
            table,
            row_group_size=3,
            write_page_index=True,
            data_page_size=1,
            write_batch_size=1,
            bloom_filter_options={"x": {}},
        )
    pf = streamwrite.ParquetFile(data)
    assert _check(pf, filters).column("row").to_pylist() == rows
    assert (
        streamwrite.read_table(io.BytesIO(data), filters=filters).column("row").to_pylist() == rows
    )


def _encryption(algorithm: Algorithm, plaintext_footer: bool = False) -> FileEncryption:
    keys = ExplicitKeys({"k": KEY, "f": KEY[::-1]}, "f", {"x": "k", "id": "k", "s": "k"})
    return FileEncryption(keys, algorithm=algorithm.value, plaintext_footer=plaintext_footer)


@pytest.mark.parametrize("algorithm", [Algorithm.AES_GCM_V1, Algorithm.AES_GCM_CTR_V1])
@pytest.mark.parametrize("plaintext_footer", [False, True])
def test_encrypted_file_prunes_like_a_plaintext_one(
    algorithm: Algorithm, plaintext_footer: bool
) -> None:
    """Statistics from encrypted column metadata, encrypted bloom filters and page indexes,
    and single pages decrypted with their true page ordinals (page 5 of a chunk is read alone)."""
    table = _sorted_table()
    plain = streamwrite.ParquetFile(_sw(table, **OPTIONS))
    data = _sw(table, encryption=_encryption(algorithm, plaintext_footer), **OPTIONS)
    keys = ExplicitKeys({"k": KEY, "f": KEY[::-1]}, "f", {"x": "k", "id": "k", "s": "k"})
    pf = streamwrite.ParquetFile(data, decryption=DecryptionConfig(keys))
    ids = table.column("id").to_numpy()
    for filters in (
        [("x", ">=", 2550), ("x", "<", 2560)],
        [("id", "==", int(ids[7777]))],
        [("s", "==", "sym003"), ("x", "<", 1000)],
    ):
        ours, reference = pf.plan(filters), plain.plan(filters)
        assert [(r.skipped_by, r.row_ranges) for r in ours.row_groups] == [
            (r.skipped_by, r.row_ranges) for r in reference.row_groups
        ]
        assert ours.num_pages_read == reference.num_pages_read
        assert same(pf.read(filters=filters), plain.read(filters=filters))
    assert pf.plan([("x", ">=", 2550), ("x", "<", 2560)]).row_groups[2].row_ranges == [(500, 600)]


def test_bad_filters_raise() -> None:
    pf = streamwrite.ParquetFile(_sw(_sorted_table(100)))
    with pytest.raises(SchemaError, match="nope"):
        pf.read(filters=[("nope", "==", 1)])
    with pytest.raises(SchemaError, match="nope"):
        pf.plan([("x", "==", 1)], columns=["nope"])
    with pytest.raises(ConfigError):
        pf.read(filters=pc.field("x") < pc.field("id"))
    with pytest.raises(ConfigError):
        list(pf.iter_batches(filters=[("x", "~", 1)]))


def test_damaged_offset_index_raises(tmp_path: Path) -> None:
    """A page index that does not describe the chunk is refused, never trusted to pick pages."""
    data = bytearray(_sw(_sorted_table(2000), row_group_size=2000, data_page_row_limit=100))
    pf = streamwrite.ParquetFile(bytes(data))
    chunk = pf._chunk(0, 0)
    assert chunk.offset_index_offset is not None and chunk.offset_index_length is not None
    start, length = chunk.offset_index_offset, chunk.offset_index_length
    index, _ = deserialize(t.OffsetIndex, bytes(data[start : start + length]))
    assert index.page_locations is not None
    index.page_locations[3].first_row_index = 250  # page 3 holds rows 300..399
    damaged = serialize(index)
    assert len(damaged) == length
    data[start : start + length] = damaged
    pf = streamwrite.ParquetFile(bytes(data))
    with pytest.raises(CorruptFileError, match="OffsetIndex"):
        pf.read(filters=[("x", "==", 320)])
    assert pf.read().num_rows == 2000  # the unfiltered read does not use it


def test_live_file_snapshots(tmp_path: Path) -> None:
    table = _sorted_table(3000)

    async def write() -> list[int]:
        sizes = []
        async with await streamwrite.LiveFile.open(
            tmp_path / "lf", table.schema, data_page_row_limit=100
        ) as lf:
            for start in range(0, 3000, 1000):
                commit = await lf.append(table.slice(start, 1000))
                sizes.append(commit.parquet_size)
        return sizes

    sizes = anyio.run(write)
    filters = [("x", ">=", 950), ("x", "<", 1100)]
    got = streamwrite.read_table(tmp_path / "lf", filters=filters)
    assert got.column("x").to_pylist() == list(range(950, 1100))
    old = streamwrite.read_table(tmp_path / "lf", filters=filters, snapshot=sizes[0])
    assert old.column("x").to_pylist() == list(range(950, 1000))
    with streamwrite.ParquetFile(tmp_path / "lf") as pf:
        assert pf.plan(filters).num_row_groups_read == 2


def test_plain_directory_with_hive_partitions(tmp_path: Path) -> None:
    table = _sorted_table(4000).append_column("day", pa.array([i // 1000 for i in range(4000)]))
    pq.write_to_dataset(table, tmp_path / "ds", partition_cols=["day"])
    full = streamwrite.read_table(tmp_path / "ds")
    for filters in (
        [("day", "==", 2)],
        [("day", ">=", 1), ("x", "<", 1500)],
        [[("day", "==", 0), ("x", "<", 10)], [("day", "==", 3), ("s", "==", "sym001")]],
        ~pc.field("day").isin([1, 2]),
    ):
        got = streamwrite.read_table(tmp_path / "ds", filters=filters)
        truth = full.filter(to_arrow(bind(filters, full.schema)))
        assert same(got, truth)
        columns = ["x", "day"]
        narrow = streamwrite.read_table(tmp_path / "ds", columns=columns, filters=filters)
        assert same(narrow, truth.select(columns))


README_SNIPPET = """
import pyarrow.compute as pc
import streamwrite

rows = streamwrite.read_table(path, filters=[("symbol", "==", "S007"), ("price", ">", 10)])
with streamwrite.ParquetFile(path) as pf:
    needle = pc.field("order_id") == 123_456
    plan = pf.plan(needle, columns=["price"])
    print(plan.explain())
    one = pf.read(columns=["price"], filters=needle)
"""


def test_readme_snippet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's filter example (pasted from the report), on a real file."""
    num_rows = 200_000
    rng = np.random.default_rng(3)
    order_ids = rng.permutation(num_rows * 2)[:num_rows] * 2 + 1  # odd: 123_456 is unique
    order_ids[123_000] = 123_456
    table = pa.table(
        {
            "symbol": pa.array([f"S{i % 50:03d}" for i in range(num_rows)]),
            "price": pa.array(np.abs(rng.normal(10, 3, num_rows))),
            "order_id": pa.array(order_ids.astype(np.int64)),
        }
    )
    path = tmp_path / "trades.parquet"
    streamwrite.write_table(
        table,
        path,
        row_group_size=20_000,
        bloom_filter_options={"order_id": {"ndv": 20_000, "fpp": 0.001}},
    )
    scope: dict[str, Any] = {"path": path}
    exec(README_SNIPPET, scope)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "filter: order_id = 123456"
    assert lines[1].startswith("row groups: 1 of 10 read")
    assert scope["one"].num_rows == 1
    truth = table.filter((pc.field("symbol") == "S007") & (pc.field("price") > 10))
    assert same(scope["rows"], truth)
