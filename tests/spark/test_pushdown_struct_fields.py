"""Spark filters on struct fields (attribute ``("s", "a")``) translate to ``pc.field("s", "a")``
and keep every row Spark keeps (no Spark session: the filter objects are pyspark's own)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql.datasource import (
    EqualTo,
    GreaterThan,
    In,
    IsNotNull,
    IsNull,
    LessThanOrEqual,
    Not,
)

from streamwrite.spark.pushdown import spark_filters_to_arrow, translate_filter

TABLE = pa.table(
    {
        "id": [0, 1, 2, 3, 4],
        "s": pa.array(
            [
                {"a": 1, "t": {"x": 1.5}},
                None,
                {"a": None, "t": None},
                {"a": 5, "t": {"x": None}},
                {"a": 3, "t": {"x": 9.0}},
            ],
            pa.struct([("a", pa.int64()), ("t", pa.struct([("x", pa.float64())]))]),
        ),
        "l": pa.array([[1], None, [], [2, 3], [4]], pa.list_(pa.int64())),
    }
)


def _ids(spark_filter: object) -> list[int]:
    expression = translate_filter(spark_filter, TABLE.schema)
    assert expression is not None
    return TABLE.filter(expression)["id"].to_pylist()


@pytest.mark.parametrize(
    ("spark_filter", "spark_ids"),
    [
        (EqualTo(("s", "a"), 5), [3]),
        (GreaterThan(("s", "a"), 1), [3, 4]),
        (LessThanOrEqual(("s", "t", "x"), 2.0), [0]),
        (In(("s", "a"), (1, 3)), [0, 4]),
        (IsNull(("s", "a")), [1, 2]),  # a null struct's field is null, as in Spark
        (IsNotNull(("s", "t", "x")), [0, 4]),
    ],
    ids=str,
)
def test_struct_field_filters_keep_the_rows_spark_keeps(
    spark_filter: object, spark_ids: list[int]
) -> None:
    assert _ids(spark_filter) == spark_ids


def test_not_of_a_struct_field_comparison_drops_only_rows_spark_drops() -> None:
    kept = _ids(Not(GreaterThan(("s", "a"), 1)))
    assert set(kept) >= {0} and not set(kept) & {3, 4}


def test_whole_nested_columns_and_list_insides_are_left_to_spark() -> None:
    for spark_filter in (
        EqualTo(("s",), 1),
        IsNull(("s", "missing")),
        EqualTo(("l",), 1),
        EqualTo(("l", "element"), 1),
    ):
        assert translate_filter(spark_filter, TABLE.schema) is None
    assert spark_filters_to_arrow([EqualTo(("l",), 1)], TABLE.schema) is None
