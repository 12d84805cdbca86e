"""SkippingConfig: parsing, defaults, the JSON form, and the errors."""

from __future__ import annotations

import pyarrow as pa
import pytest

from streamwrite.errors import ConfigError
from streamwrite.skipping.config import SkippingConfig

SCHEMA = pa.schema(
    [
        ("symbol", pa.dictionary(pa.int32(), pa.string())),
        ("price", pa.float64()),
        ("ts", pa.timestamp("us", "UTC")),
        ("qty", pa.int64()),
        ("tags", pa.list_(pa.string())),
    ]
)


def test_parse_kinds_params_and_embedded() -> None:
    config = SkippingConfig.parse(
        {
            "symbol": ["valuelist", "bloom"],
            "price": ["minmax"],
            "ts": ["time_index", "minmax"],
            "qty": [("bloom", {"ndv": 20000, "fpp": 0.01})],
        },
        SCHEMA,
    )
    kinds = [(i.column, i.kind) for i in config.indexes]
    assert kinds == [
        ("symbol", "valuelist"),
        ("symbol", "bloom"),
        ("price", "minmax"),
        ("ts", "time_index"),
        ("ts", "minmax"),
        ("qty", "bloom"),
    ]
    assert [i.kind for i in config.store_indexes] == [
        "valuelist",
        "bloom",
        "minmax",
        "minmax",
        "bloom",
    ]
    assert config.embedded == {"ts": ["time_index"]}
    bloom = config.indexes[1]
    assert (bloom.ndv, bloom.fpp) == (100000, 0.01)  # xskipper's defaults
    assert config.indexes[-1].ndv == 20000
    assert SkippingConfig.parse(config.to_json(), SCHEMA) == config


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ({"symbol": ["zonemap"]}, "'zonemap'"),
        ({"nope": ["minmax"]}, "'nope'"),
        ({"price": ["bloom"]}, "bloom.*'price'.*double"),
        ({"tags": ["minmax"]}, "'tags'"),
        ({"symbol": "minmax"}, "non-empty list"),
        ({"symbol": []}, "non-empty list"),
        ({"symbol": ["minmax", "minmax"]}, "twice"),
        ({"qty": [("bloom", {"ndv": 0})]}, "ndv"),
        ({"qty": [("bloom", {"fpp": 1.5})]}, "fpp"),
        ({"qty": [("bloom", {"size": 3})]}, "size"),
        ({"qty": [("minmax", {"x": 1})]}, "no parameters"),
        ({"qty": [("bloom", 3)]}, "mapping"),
        ({"qty": [("bloom",)]}, "kind name or"),
        (["qty"], "map column names"),
    ],
)
def test_errors_name_the_problem(spec: object, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        SkippingConfig.parse(spec, SCHEMA)  # type: ignore[arg-type]
