"""The pyarrow 26 trap cases of issue 14 (facts file sections 4, 7 E-S6 and 8), on real files.

pyarrow 26.0.1's ``read_table(filters=)`` prunes row groups by footer statistics and drops
matching rows on each of these (checked on these very files: ``!=`` 3 rows of 4, ``not in`` 3 of
4, ``~(x < 10)`` 0 of 1, ``~(x <= 2)`` 3 of 4, ``is_nan`` 0 of 1, ``in [0.0]`` 0 of 3); our
pruning of the same footer statistics must keep every row group that holds a matching row, so
the pruned read equals the full read filtered with ``to_arrow``.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from streamwrite.predicate import bind, prune, to_arrow

from ._support import parquet_containers, pruned_read

NAN = float("nan")


def _file(tmp_path: Path, values: list[float]) -> tuple[str, list[pa.Table]]:
    path = str(tmp_path / "trap.parquet")
    table = pa.table({"x": pa.array(values, pa.float64()), "y": list(range(len(values)))})
    pq.write_table(table, path, row_group_size=3)
    groups = [pq.ParquetFile(path).read_row_group(i) for i in range(len(values) // 3)]
    return path, groups


def _check(tmp_path: Path, values: list[float], filters: object, num_rows: int) -> None:
    path, groups = _file(tmp_path, values)
    expr = bind(filters, pq.read_schema(path))
    full = pa.concat_tables(groups)
    truth = full.filter(to_arrow(expr))
    assert truth.num_rows == num_rows
    got = pruned_read(groups, expr, parquet_containers(path))
    assert got.column("y").to_pylist() == truth.column("y").to_pylist()


E_S6 = [3.0, NAN, 3.0, 5.0, 6.0, 7.0]


def test_trap_not_equal_with_nan(tmp_path: Path) -> None:
    _check(tmp_path, E_S6, [("x", "!=", 3.0)], 4)


def test_trap_not_in_with_nan(tmp_path: Path) -> None:
    _check(tmp_path, E_S6, [("x", "not in", [3.0])], 4)


def test_trap_not_less_than(tmp_path: Path) -> None:
    _check(tmp_path, E_S6, ~(pc.field("x") < 10), 1)


def test_trap_not_less_equal(tmp_path: Path) -> None:
    _check(tmp_path, [1.0, NAN, 2.0, 5.0, 6.0, 7.0], ~(pc.field("x") <= 2), 4)


def test_trap_is_nan(tmp_path: Path) -> None:
    _check(tmp_path, E_S6, pc.field("x").is_nan(), 1)


def test_trap_in_zero_against_negative_zero(tmp_path: Path) -> None:
    _check(tmp_path, [-0.0, -0.0, -0.0, 1.0, 2.0, 3.0], [("x", "in", [0.0])], 3)


def test_trap_equal_negative_zero_literal(tmp_path: Path) -> None:
    _check(tmp_path, [0.0, 0.0, 0.0, 1.0, 2.0, 3.0], [("x", "==", -0.0)], 3)


@pytest.mark.parametrize(
    ("filters", "num_rows"),
    [
        (pc.field("x") > 100, 0),  # NaN is not the largest value in Arrow compute
        (pc.field("x") == NAN, 0),  # NaN == NaN is false in Arrow compute
        (pc.field("x") != NAN, 6),
        (pc.field("x").isin([NAN]), 1),  # is_in matches NaN
        (pc.field("x").is_null(nan_is_null=True), 1),
    ],
)
def test_nan_literals_and_orders(tmp_path: Path, filters: object, num_rows: int) -> None:
    _check(tmp_path, E_S6, filters, num_rows)


def test_obvious_cases_do_prune(tmp_path: Path) -> None:
    path, _ = _file(tmp_path, E_S6)
    schema, containers = pq.read_schema(path), parquet_containers(path)
    assert prune(bind([("x", "==", 6.0)], schema), containers).tolist() == [False, True]
    assert prune(bind([("x", ">", 4.0)], schema), containers).tolist() == [False, True]
    assert prune(bind([("x", "<", 4.0)], schema), containers).tolist() == [True, False]
    # rg1 holds no NaN only if nan_count says so: pyarrow writes none, so != 6 keeps both
    assert prune(bind([("y", "!=", 4)], schema), containers).tolist() == [True, True]
    assert prune(bind([("y", "in", [9, 10])], schema), containers).tolist() == [False, False]
