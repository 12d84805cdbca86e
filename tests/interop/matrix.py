"""The interop matrix: which Arrow types each value encoding applies to, and test data for them.

Each matrix file holds one column per Arrow type that the file's encoding can encode, so one
file covers a whole row of the type x encoding table; files vary over encoding x codec x page
version x nullability.
"""

from __future__ import annotations

import decimal
import zlib

import numpy as np
import pyarrow as pa

NUM_ROWS = 700

INT_TYPES = {
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint16": pa.uint16(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "date32": pa.date32(),
    "time32_s": pa.time32("s"),
    "time32_ms": pa.time32("ms"),
    "time64_us": pa.time64("us"),
    "time64_ns": pa.time64("ns"),
    "ts_s": pa.timestamp("s"),
    "ts_ms": pa.timestamp("ms"),
    "ts_us": pa.timestamp("us"),
    "ts_ns": pa.timestamp("ns"),
    "ts_ns_tz": pa.timestamp("ns", tz="UTC"),
    "ts_us_tz": pa.timestamp("us", tz="Europe/Paris"),
    "dec_9": pa.decimal128(9, 2),
    "dec_18": pa.decimal128(18, 4),
}
FLOAT_TYPES = {"float32": pa.float32(), "float64": pa.float64()}
BINARY_TYPES = {
    "string": pa.string(),
    "large_string": pa.large_string(),
    "binary": pa.binary(),
    "large_binary": pa.large_binary(),
    "dict_string": pa.dictionary(pa.int32(), pa.string()),
}
PLAIN_BINARY_TYPES = {k: v for k, v in BINARY_TYPES.items() if k != "dict_string"}
FIXED_TYPES = {"fsb_5": pa.binary(5), "dec_30": pa.decimal128(30, 3), "float16": pa.float16()}
BOOL_TYPES = {"bool": pa.bool_()}
ALL_TYPES = {**INT_TYPES, **FLOAT_TYPES, **BINARY_TYPES, **FIXED_TYPES, **BOOL_TYPES}

# The 32-bit integer types stored as INT32 (BYTE_STREAM_SPLIT / DELTA accept INT32 and INT64).
ENCODING_TYPES: dict[str, dict[str, pa.DataType]] = {
    "PLAIN": ALL_TYPES,
    "DICTIONARY": {**INT_TYPES, **FLOAT_TYPES, **BINARY_TYPES, **FIXED_TYPES},
    "DELTA_BINARY_PACKED": INT_TYPES,
    # pyarrow cannot read DELTA_*_BYTE_ARRAY pages into an Arrow dictionary column ("DecodeArrow
    # of DictAccumulator ... not yet implemented", its own files too): no dict_string there.
    "DELTA_LENGTH_BYTE_ARRAY": PLAIN_BINARY_TYPES,
    "DELTA_BYTE_ARRAY": {
        **PLAIN_BINARY_TYPES,
        "fsb_5": pa.binary(5),
        "dec_30": pa.decimal128(30, 3),
    },
    "BYTE_STREAM_SPLIT": {**INT_TYPES, **FLOAT_TYPES},
    "BYTE_STREAM_SPLIT_FIXED": FIXED_TYPES,
    "RLE": BOOL_TYPES,
}
# A matrix row name -> the Parquet encoding its columns are written with.
ENCODING_OF = {"BYTE_STREAM_SPLIT_FIXED": "BYTE_STREAM_SPLIT"}
# Valid files that a third-party reader cannot read yet (its gap, not ours).
READER_GAPS = {
    (
        "duckdb",
        "BYTE_STREAM_SPLIT_FIXED",
    ): "DuckDB reads BYTE_STREAM_SPLIT only for FLOAT, DOUBLE, INT32 and INT64",
}
CODECS = ["none", "snappy", "gzip", "brotli", "zstd", "lz4"]


def _ints(rng: np.random.Generator, dtype: np.dtype, n: int, low: bool) -> np.ndarray:
    info = np.iinfo(dtype)
    if low:
        values = rng.integers(0, 20, size=n).astype(dtype)
    else:
        values = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    values[:2] = [info.min, info.max]
    return values


def column_data(
    name: str, arrow_type: pa.DataType, nullable: bool, low_cardinality: bool, seed: int = 7
) -> pa.Array:
    """``NUM_ROWS`` values of ``arrow_type`` with edge cases (min/max, NaN, -0.0, empty values)."""
    rng = np.random.default_rng(zlib.crc32(name.encode()) + seed)
    n = NUM_ROWS
    base_type = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    if pa.types.is_boolean(base_type):
        array = pa.array(rng.random(n) < 0.3)
    elif pa.types.is_integer(base_type):
        array = pa.array(_ints(rng, base_type.to_pandas_dtype(), n, low_cardinality), base_type)
    elif pa.types.is_date32(base_type):
        array = pa.array(rng.integers(-100_000, 100_000, size=n).astype(np.int32), pa.int32()).cast(
            base_type
        )
    elif pa.types.is_time32(base_type) or pa.types.is_time64(base_type):
        per_day = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}[
            base_type.unit
        ]
        width = np.int32 if pa.types.is_time32(base_type) else np.int64
        array = pa.array(rng.integers(0, per_day, size=n).astype(width)).cast(base_type)
    elif pa.types.is_timestamp(base_type):
        # Within +-2**40 of the epoch in every unit: DuckDB converts to microseconds internally.
        raw = rng.integers(-(1 << 40), 1 << 40, size=n, dtype=np.int64)
        if low_cardinality:
            raw = raw[rng.integers(0, 20, size=n)]
        array = pa.array(raw).cast(base_type)
    elif pa.types.is_floating(base_type):
        width = {16: np.float16, 32: np.float32, 64: np.float64}[base_type.bit_width]
        values = (
            rng.integers(0, 10, size=n) if low_cardinality else rng.normal(0, 1e3, size=n)
        ).astype(width)
        values[:4] = [np.nan, -0.0, 0.0, np.inf]
        if base_type.bit_width == 16:
            array = pa.array(values, pa.float16())
        else:
            array = pa.array(values, base_type)
    elif pa.types.is_decimal(base_type):
        limit = 10**base_type.precision - 1
        picks = (
            rng.integers(0, 20, size=n)
            if low_cardinality
            else rng.integers(-(1 << 62), 1 << 62, size=n)
        )
        exponent = -base_type.scale
        values = [decimal.Decimal(f"{int(v) % limit}E{exponent}") for v in picks]
        values[0] = decimal.Decimal(f"{limit}E{exponent}")
        values[1] = decimal.Decimal(f"-{limit}E{exponent}")
        array = pa.array(values, base_type)
    elif pa.types.is_fixed_size_binary(base_type):
        k = base_type.byte_width
        pool = rng.integers(0, 256, size=(20 if low_cardinality else n, k), dtype=np.uint8)
        rows = pool[rng.integers(0, pool.shape[0], size=n)]
        array = pa.array([bytes(r) for r in rows], base_type)
    else:
        words = [f"w{i}" * (i % 7) for i in range(20 if low_cardinality else n)]
        words[0] = ""
        picks = rng.integers(0, len(words), size=n)
        texts = [words[i] + ("é" if i % 5 == 0 else "") for i in picks]
        if pa.types.is_binary(base_type) or pa.types.is_large_binary(base_type):
            array = pa.array([s.encode() for s in texts], base_type)
        else:
            array = pa.array(texts, base_type)
    if nullable:
        mask = rng.random(n) < 0.2
        mask[n // 2 : n // 2 + 50] = True  # a run of nulls
        array = _with_nulls(array, mask)
    if pa.types.is_dictionary(arrow_type):
        array = array.dictionary_encode()
    return array


def _with_nulls(array: pa.Array, mask: np.ndarray) -> pa.Array:
    """``array`` with the slots where ``mask`` is True turned null (values stay behind them)."""
    validity = pa.py_buffer(np.packbits(~mask, bitorder="little").tobytes())
    return pa.Array.from_buffers(array.type, len(array), [validity, *array.buffers()[1:]])


def matrix_table(encoding: str, nullable: bool) -> pa.Table:
    """One column per type the encoding applies to."""
    types = ENCODING_TYPES[encoding]
    low = encoding == "DICTIONARY"
    fields = [pa.field(name, t, nullable=nullable) for name, t in types.items()]
    arrays = [column_data(name, t, nullable, low) for name, t in types.items()]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
