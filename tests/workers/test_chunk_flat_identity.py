"""Flat columns encode byte-identically to the encoder before nested levels (issue 15).

The digests were taken from ``encode_chunk`` on main (commit a908167) for the same inputs:
chunk bytes, ColumnMetaData, ColumnIndex, OffsetIndex and bloom filter, each serialized.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from streamwrite.format.enums import CompressionCodec, Encoding, Type
from streamwrite.format.thrift.codec import serialize
from streamwrite.options import BloomFilterOptions, ColumnOptions, DataPageVersion
from workers.chunk import ChunkSettings, encode_chunk
from workers.stats import SortOrder
from workers.values import BinaryValues


def _settings(ptype: Type, max_def: int, version: DataPageVersion, **column: Any) -> ChunkSettings:
    sort = SortOrder.FLOAT if ptype in (Type.FLOAT, Type.DOUBLE) else SortOrder.SIGNED
    if ptype == Type.BYTE_ARRAY:
        sort = SortOrder.UNSIGNED_BYTES
    return ChunkSettings(
        path_in_schema=("c",),
        physical_type=ptype,
        type_length=None,
        max_definition_level=max_def,
        sort_order=sort,
        column=ColumnOptions(**column),
        data_page_size=2048,
        data_page_row_limit=300,
        dictionary_page_size_limit=1500,
        data_page_version=version,
        write_page_index=True,
        write_page_checksum=True,
        statistics_truncate_length=64,
    )


def _case(name: str) -> tuple[ChunkSettings, Any, npt.NDArray[np.uint8] | None, int]:
    rng = np.random.default_rng(7)
    n = 2000
    v1, v2 = DataPageVersion.V1, DataPageVersion.V2
    if name == "int64_required_v1":
        values = rng.integers(-50, 50, n).astype(np.int64)
        return _settings(Type.INT64, 0, v1), values, None, n
    if name == "int64_required_plain_v2_snappy":
        values = rng.integers(-(2**40), 2**40, n).astype(np.int64)
        s = _settings(Type.INT64, 0, v2, compression=CompressionCodec.SNAPPY, use_dictionary=False)
        return s, values, None, n
    if name == "double_nulls_nan_v1_bloom":
        defs = (rng.random(n) < 0.8).astype(np.uint8)
        values = rng.normal(size=int(defs.sum()))
        values[::17] = np.nan
        s = _settings(Type.DOUBLE, 1, v1, bloom_filter=BloomFilterOptions())
        return s, values, defs, n
    if name == "string_dict_overflow_v2":
        defs = (rng.random(n) < 0.7).astype(np.uint8)
        k = int(defs.sum())
        words = [f"w{int(x)}".encode() * 3 for x in rng.integers(0, 400, k)]
        s = _settings(Type.BYTE_ARRAY, 1, v2, compression=CompressionCodec.ZSTD)
        return s, BinaryValues.from_pylist(words), defs, n
    if name == "string_dict_overflow_v1_nulls_runs":
        defs = np.repeat((np.arange(40) % 3 != 0).astype(np.uint8), 50)
        k = int(defs.sum())
        words = [f"value-{int(x)}".encode() for x in rng.integers(0, 300, k)]
        s = _settings(Type.BYTE_ARRAY, 1, v1, bloom_filter=BloomFilterOptions(ndv=100))
        return s, BinaryValues.from_pylist(words), defs, n
    if name == "int32_all_null_v2":
        s = _settings(Type.INT32, 1, v2)
        return s, np.zeros(0, dtype=np.int32), np.zeros(n, dtype=np.uint8), n
    if name == "empty_v1":
        s = _settings(Type.INT32, 1, v1)
        return s, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint8), 0
    if name == "delta_int32_v1":
        values = np.cumsum(rng.integers(0, 9, n)).astype(np.int32)
        s = _settings(Type.INT32, 0, v1, encoding=Encoding.DELTA_BINARY_PACKED)
        return s, values, None, n
    raise AssertionError(name)


EXPECTED = {
    "int64_required_v1": "8ba223796ae7b1fc1b6e482de99e02ff",
    "int64_required_plain_v2_snappy": "891bce7fda470eb59799f1cb7924b800",
    "double_nulls_nan_v1_bloom": "5959bddfb01819f7ccc0f04985f76ec1",
    "string_dict_overflow_v2": "a1dc5e4fe88d68a9f14b7403ac31568e",
    # main: 325ba606592dfc1e66e37d65013495b7, with pages starting at rows [0, 254, 515, 727,
    # 988, 1200, 1461, 1723, 1935, 1950]: its last 50 rows are null and main gave them a page
    # of their own (test_trailing_null_rows_share_the_last_page); now rows 1935..2000 are one
    # page and every other page is main's.
    "string_dict_overflow_v1_nulls_runs": "1fca096a3bd4a44b514117b81e7da910",
    "int32_all_null_v2": "2f08c9d02a8944a5fe99c3284222c294",
    "empty_v1": "baf3b6eb6986f32b0ee556dd290a968c",
    "delta_int32_v1": "f6af752ca01d9eda4825fe778efb8ec2",
}


def _digest(name: str) -> str:
    settings, values, defs, num_rows = _case(name)
    chunk = encode_chunk(settings, values, defs, num_rows)
    h = hashlib.sha256(chunk.data)
    h.update(serialize(chunk.meta_data))
    for index in (chunk.column_index, chunk.offset_index):
        h.update(b"-" if index is None else serialize(index))
    h.update(chunk.bloom_filter or b"-")
    return h.hexdigest()[:32]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_flat_chunk_bytes_unchanged(name: str) -> None:
    assert _digest(name) == EXPECTED[name]


def test_trailing_null_rows_share_the_last_page() -> None:
    """Main split a BYTE_ARRAY chunk ending in nulls into an extra page of null rows only,
    even when every value fit one page (the byte-size cut stopped at the last value)."""
    settings = _settings(Type.BYTE_ARRAY, 1, DataPageVersion.V1, use_dictionary=False)
    values = BinaryValues.from_pylist([b"a", b"b"])
    chunk = encode_chunk(settings, values, np.array([1, 1, 0, 0], dtype=np.uint8), 4)
    assert chunk.offset_index is not None
    assert [p.first_row_index for p in chunk.offset_index.page_locations] == [0]
