"""Write options name nested leaves by their dotted paths; a group name covers its leaves."""

from __future__ import annotations

import pyarrow as pa
import pytest

from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.errors import ConfigError
from streamwrite.format.enums import CompressionCodec, Encoding
from streamwrite.options import SortingColumn, make_write_options

SCHEMA = pa.schema(
    [
        pa.field("ts", pa.timestamp("us"), nullable=False),
        pa.field("s", pa.struct([pa.field("a", pa.int64()), pa.field("b", pa.string())])),
        pa.field("l", pa.list_(pa.float64())),
        pa.field("m", pa.map_(pa.string(), pa.int32())),
    ]
)
PATHS = [spec.path_in_schema for spec in arrow_to_parquet(SCHEMA).columns]
LEAVES = ["ts", "s.a", "s.b", "l.list.element", "m.key_value.key", "m.key_value.value"]


def test_leaf_paths_are_the_column_names() -> None:
    assert [".".join(p) for p in PATHS] == LEAVES
    options = make_write_options(PATHS)
    assert list(options.columns) == LEAVES


def test_group_name_covers_its_leaves_and_the_most_specific_wins() -> None:
    options = make_write_options(
        PATHS,
        compression={"s": "snappy", "s.b": "gzip", "m.key_value": "lz4_raw"},
        use_dictionary=["l"],
        write_statistics=["m.key_value.value", "ts"],
        column_encoding={"l.list.element": "BYTE_STREAM_SPLIT"},
        bloom_filter_options={"m": True, "m.key_value.key": {"ndv": 10}},
    )
    codecs = {name: options.column(name).compression for name in LEAVES}
    assert codecs == {
        "ts": CompressionCodec.ZSTD,
        "s.a": CompressionCodec.SNAPPY,
        "s.b": CompressionCodec.GZIP,
        "l.list.element": CompressionCodec.ZSTD,
        "m.key_value.key": CompressionCodec.LZ4_RAW,
        "m.key_value.value": CompressionCodec.LZ4_RAW,
    }
    # an explicit encoding turns the dictionary off, as pyarrow does
    assert [options.column(n).use_dictionary for n in LEAVES] == [False] * 6
    assert options.column("l.list.element").encoding is Encoding.BYTE_STREAM_SPLIT
    assert [options.column(n).write_statistics for n in LEAVES] == [
        True, False, False, False, False, True,
    ]  # fmt: skip
    blooms = {n: options.column(n).bloom_filter for n in LEAVES}
    assert blooms["m.key_value.key"] is not None and blooms["m.key_value.key"].ndv == 10
    assert blooms["m.key_value.value"] is not None and blooms["m.key_value.value"].ndv is None
    assert blooms["s.a"] is None and blooms["ts"] is None


def test_use_dictionary_list_by_group() -> None:
    options = make_write_options(PATHS, use_dictionary=["s", "m.key_value.key"])
    assert [options.column(n).use_dictionary for n in LEAVES] == [
        False, True, True, False, True, False,
    ]  # fmt: skip


@pytest.mark.parametrize(
    "kwargs",
    [
        {"compression": {"s.c": "snappy"}},
        {"column_encoding": {"element": "PLAIN"}},
        {"bloom_filter_options": {"l.element": True}},
        {"compression_level": {"m.key": 3}},
        {"use_dictionary": ["s.a", "nope"]},
        {"write_statistics": ["l.list.item"]},
    ],
)
def test_unknown_names_list_the_leaf_paths(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError) as info:
        make_write_options(PATHS, **kwargs)
    message = str(info.value)
    assert "unknown columns" in message
    for leaf in LEAVES:
        assert leaf in message
    assert "m.key_value" in message  # groups are offered too


def test_sorting_columns_must_be_flat_top_level() -> None:
    options = make_write_options(PATHS, sorting_columns=[SortingColumn(0, descending=True)])
    assert options.sorting_columns == (SortingColumn(0, True, False),)
    with pytest.raises(ConfigError, match=r"'s\.a', a leaf of the nested field 's'.*flat"):
        make_write_options(PATHS, sorting_columns=[SortingColumn(1)])
    with pytest.raises(ConfigError, match="out of range for 6 columns"):
        make_write_options(PATHS, sorting_columns=[SortingColumn(6)])


def test_pyarrow_sorting_columns_index_leaves() -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    sorting = pq.SortingColumn.from_ordering(SCHEMA, [("ts", "descending")])
    options = make_write_options(PATHS, sorting_columns=sorting)
    assert options.sorting_columns == (SortingColumn(0, True, False),)


def test_embedded_index_names_flat_columns_only() -> None:
    make_write_options(PATHS, embedded_index={"ts": ["time_index"]})
    with pytest.raises(ConfigError, match=r"'s\.a', a leaf of a nested field.*flat top-level"):
        make_write_options(PATHS, embedded_index={"s.a": ["distinct"]})
    with pytest.raises(ConfigError, match="'s', which the schema does not have"):
        make_write_options(PATHS, embedded_index={"s": ["distinct"]})


def test_flat_column_with_a_dot_is_its_own_name() -> None:
    """A flat column named ``a.b`` is one leaf; no group ``a`` exists to name it by."""
    options = make_write_options(["a.b", ("c",)], compression={"a.b": "snappy"})
    assert options.column("a.b").compression is CompressionCodec.SNAPPY
    with pytest.raises(ConfigError, match="unknown columns"):
        make_write_options(["a.b"], compression={"a": "snappy"})
