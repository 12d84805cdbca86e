"""The footer's Parquet schema is cross-checked against its ``ARROW:schema`` on every read.

Files pyarrow (and polars, DuckDB) write keep reading, whatever the types and options; a
schema that contradicts its ``ARROW:schema`` (a renamed column, a lost annotation, a flipped
repetition, another unit) is a CorruptFileError naming the column and both sides, for plain
files and for live files whose ``_pm`` predates footer checksums.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import io
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.arrow.schema import encode_arrow_schema
from streamwrite.errors import CorruptFileError
from streamwrite.format import structs as t
from streamwrite.format.enums import FieldRepetitionType
from streamwrite.format.thrift.codec import deserialize, serialize
from streamwrite.layout.actions import LiveFileName
from streamwrite.live.file import recover
from tests.live._support import SMALL_SCHEMA, run, small_rows
from tests.live.test_footer_checks import make_live_file, strip_checksums

N = 3


def many_types() -> pa.Table:
    """Every Arrow type pyarrow writes to Parquet, nullable and not, flat and nested."""

    def a(dtype: pa.DataType, values: list[Any]) -> pa.Array:
        return pa.array(values, dtype)

    units = ("s", "ms", "us", "ns")
    day = datetime.date(2026, 1, 1)
    columns: dict[str, pa.Array] = {
        "null": pa.nulls(N),
        "bool": a(pa.bool_(), [True, None, False]),
        **{f"i{b}": a(getattr(pa, f"int{b}")(), [1, -2, None]) for b in (8, 16, 32, 64)},
        **{f"u{b}": a(getattr(pa, f"uint{b}")(), [1, 2, None]) for b in (8, 16, 32, 64)},
        "f16": pa.array(np.array([1, 2, 3], dtype=np.float16)),
        "f32": a(pa.float32(), [1.5, None, 3]),
        "f64": a(pa.float64(), [1.5, None, 3]),
        "d32": a(pa.decimal32(7, 2), [decimal.Decimal("1.25")] * N),
        "d64": a(pa.decimal64(15, 3), [decimal.Decimal("1.250")] * N),
        "d128": a(pa.decimal128(20, 4), [decimal.Decimal("1.2500"), None, None]),
        "d256": a(pa.decimal256(50, 5), [decimal.Decimal("1.25000")] * N),
        "string": a(pa.string(), ["a", None, "c"]),
        "large_string": a(pa.large_string(), ["a", "b", "c"]),
        "string_view": a(pa.string_view(), ["a", "b", None]),
        "binary": a(pa.binary(), [b"a", None, b"c"]),
        "large_binary": a(pa.large_binary(), [b"a"] * N),
        "binary_view": a(pa.binary_view(), [b"a"] * N),
        "fixed": a(pa.binary(3), [b"abc"] * N),
        "date32": a(pa.date32(), [day] * N),
        "date64": a(pa.date64(), [day, None, day]),
        "time32s": a(pa.time32("s"), [1, 2, 3]),
        "time32ms": a(pa.time32("ms"), [1, 2, 3]),
        "time64us": a(pa.time64("us"), [1, 2, 3]),
        "time64ns": a(pa.time64("ns"), [1000, 2000, 3000]),
        **{f"ts_{u}": a(pa.timestamp(u), [10**6, None, 3 * 10**6]) for u in units},
        **{f"tsz_{u}": a(pa.timestamp(u, "Europe/Paris"), [10**6] * N) for u in units},
        "ts_utc": a(pa.timestamp("us", "UTC"), [1, 2, 3]),
        **{f"duration_{u}": a(pa.duration(u), [1, 2, None]) for u in units},
        "dict_string": pa.array(["a", "b", "a"]).dictionary_encode(),
        "dict_int": pa.array([1, 2, 1]).dictionary_encode(),
        "json": a(pa.json_(pa.string()), ['{"a": 1}', "[]", None]),
        "uuid": a(pa.uuid(), [uuid.UUID(int=7).bytes] * N),
        "bool8": a(pa.bool8(), [1, 0, None]),
        "list": a(pa.list_(pa.int32()), [[1], [], None]),
        "large_list": a(pa.large_list(pa.string()), [["a"]] * N),
        "fixed_list": a(pa.list_(pa.float32(), 2), [[1, 2]] * N),
        "struct": a(pa.struct([("x", pa.int32()), ("y", pa.string())]), [{"x": 1, "y": "a"}] * N),
        "map": a(pa.map_(pa.string(), pa.int32()), [[("a", 1)]] * N),
    }
    fields = [pa.field(name, array.type) for name, array in columns.items()]
    arrays = list(columns.values())
    for name in ("i32", "string", "ts_us", "list", "struct", "dict_string", "d64"):
        array = columns[name]
        fields.append(pa.field(f"required_{name}", array.type, nullable=False))
        arrays.append(array if array.null_count == 0 else array.fill_null(array[0]))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"version": "1.0"},
        {"version": "2.4"},
        {"use_deprecated_int96_timestamps": True},
        {"coerce_timestamps": "ms", "allow_truncated_timestamps": True},
        {"coerce_timestamps": "us"},
        {"store_decimal_as_integer": True},
        {"use_dictionary": False},
        {"use_compliant_nested_type": False},
    ],
    ids=repr,
)
def test_pyarrow_files_of_every_type_keep_reading(options: dict[str, Any]) -> None:
    table = many_types()
    buffer = io.BytesIO()
    pq.write_table(table, buffer, **options)
    data = buffer.getvalue()
    assert b"ARROW:schema" in data
    with streamwrite.ParquetFile(data) as pf:  # the check runs when the footer is read
        # nested fields read too now: the leaves' top-level fields are every column
        tops = {spec.path_in_schema[0] for spec in pf._parquet_schema.columns}
        assert tops == set(table.column_names)
    simple = ["bool", "i8", "u32", "string", "large_string", "ts_us", "tsz_ms", "required_i32"]
    got = streamwrite.read_table(data, columns=simple)
    assert got.column_names == simple and got.num_rows == N


def test_polars_and_duckdb_files_keep_reading(tmp_path: Path) -> None:
    pytest.importorskip("polars")
    pytest.importorskip("duckdb")
    script = textwrap.dedent(
        """
        import datetime, sys
        import duckdb, polars as pl
        out = sys.argv[1]
        df = pl.DataFrame({
            "i": [1, None, 3], "s": ["a", "b", None], "f": [1.5, 2.5, None],
            "b": [True, False, None], "d": [datetime.date(2020, 1, 1)] * 3,
            "ts": [datetime.datetime(2020, 1, 1)] * 3,
            "cat": pl.Series(["x", "y", "x"], dtype=pl.Categorical),
            "dec": pl.Series(["1.25", "2.50", "3.75"]).str.to_decimal(scale=2),
            "u32": pl.Series([1, 2, 3], dtype=pl.UInt32),
            "i8": pl.Series([1, 2, 3], dtype=pl.Int8),
            "dur": pl.Series([datetime.timedelta(seconds=1)] * 3), "bin": [b"a", b"b", b"c"],
        }).with_columns(
            pl.col("ts").dt.replace_time_zone("Europe/Paris").alias("tsz"),
            pl.col("ts").cast(pl.Datetime("ns")).alias("tsns"),
        )
        df.write_parquet(out + "/polars.parquet")
        df.write_parquet(out + "/polars_pyarrow.parquet", use_pyarrow=True)
        duckdb.connect().execute(
            "COPY (SELECT 1::INTEGER AS i, 'a' AS s, TIMESTAMP '2020-01-01' AS ts, "
            "TIMESTAMPTZ '2020-01-01' AS tz, 1.5::DECIMAL(10,2) AS d, uuid() AS u) "
            f"TO '{out}/duckdb.parquet' (FORMAT parquet)"
        )
        """
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True, timeout=120)
    for name in ("polars.parquet", "polars_pyarrow.parquet", "duckdb.parquet"):
        path = tmp_path / name
        expected = pq.read_table(path, columns=["i", "s", "ts"])
        got = streamwrite.read_table(path, columns=["i", "s", "ts"])
        assert got.to_pylist() == expected.to_pylist(), name


# --------------------------------------------------------------------------- contradictions
def rewrite_footer(data: bytes, edit: Callable[[t.FileMetaData], t.FileMetaData]) -> bytes:
    """The file with its FileMetaData replaced by ``edit(FileMetaData)`` (pages untouched)."""
    length = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - length
    metadata, _ = deserialize(t.FileMetaData, data[start:-8])
    footer = serialize(edit(metadata))
    return data[:start] + footer + len(footer).to_bytes(4, "little") + b"PAR1"


def edit_leaf(leaf: str, **changes: Any) -> Callable[[t.FileMetaData], t.FileMetaData]:
    def edit(metadata: t.FileMetaData) -> t.FileMetaData:
        schema = [
            dataclasses.replace(e, **changes) if e.name == leaf else e
            for e in metadata.schema or []
        ]
        return dataclasses.replace(metadata, schema=schema)

    return edit


def with_arrow_schema(schema: pa.Schema) -> Callable[[t.FileMetaData], t.FileMetaData]:
    def edit(metadata: t.FileMetaData) -> t.FileMetaData:
        kv = [
            t.KeyValue(key=k.key, value=encode_arrow_schema(schema))
            if k.key == "ARROW:schema"
            else k
            for k in metadata.key_value_metadata or []
        ]
        return dataclasses.replace(metadata, key_value_metadata=kv)

    return edit


def micros_to_nanos(metadata: t.FileMetaData) -> t.FileMetaData:
    ts = next(e for e in metadata.schema or [] if e.name == "ts")
    assert ts.logicalType is not None and ts.logicalType.TIMESTAMP is not None
    nanos = t.TimeUnit(NANOS=t.NanoSeconds())
    logical = t.LogicalType(TIMESTAMP=dataclasses.replace(ts.logicalType.TIMESTAMP, unit=nanos))
    return edit_leaf("ts", logicalType=logical, converted_type=None)(metadata)


REQUIRED, OPTIONAL = FieldRepetitionType.REQUIRED, FieldRepetitionType.OPTIONAL
CONTRADICTIONS = {
    "renamed": (
        edit_leaf("symbol", name="cymbol"),
        "Column 1 is named 'cymbol' in the Parquet schema but 'symbol' in ARROW:schema",
    ),
    "string annotation lost": (
        edit_leaf("venue", logicalType=None, converted_type=None),
        "Column 'venue' is BYTE_ARRAY in the Parquet schema, which reads as binary, but "
        "string in ARROW:schema",
    ),
    "required became optional": (
        edit_leaf("symbol", repetition_type=OPTIONAL),
        "Column 'symbol' is OPTIONAL in the Parquet schema but not nullable in ARROW:schema",
    ),
    "optional became required": (
        edit_leaf("price", repetition_type=REQUIRED),
        "Column 'price' is REQUIRED in the Parquet schema but nullable in ARROW:schema",
    ),
    "int width": (
        edit_leaf(
            "qty",
            logicalType=t.LogicalType(INTEGER=t.IntType(bitWidth=16, isSigned=True)),
            converted_type=None,
        ),
        "Column 'qty' is INT32 .* which reads as int16, but int32 in ARROW:schema",
    ),
    "timestamp unit": (
        micros_to_nanos,
        "Column 'ts' is INT64 .* which reads as timestamp\\[ns\\], but timestamp\\[us\\]",
    ),
    "column count": (
        with_arrow_schema(SMALL_SCHEMA.append(pa.field("extra", pa.int8()))),
        "has 6 top-level columns .* but ARROW:schema has 7",
    ),
    "undecodable": (
        lambda m: dataclasses.replace(
            m,
            key_value_metadata=[t.KeyValue(key="ARROW:schema", value="not base64 of a schema!")],
        ),
        "ARROW:schema value is not a base64 IPC-serialized Arrow schema",
    ),
}


@pytest.mark.parametrize("case", sorted(CONTRADICTIONS))
def test_a_schema_contradicting_arrow_schema_is_corrupt(case: str) -> None:
    edit, message = CONTRADICTIONS[case]
    buffer = io.BytesIO()
    pq.write_table(pa.concat_tables([small_rows(0, 4), small_rows(4, 4)]), buffer)
    damaged = rewrite_footer(buffer.getvalue(), edit)
    with pytest.raises(CorruptFileError, match=message):
        streamwrite.read_table(damaged)


def test_an_old_live_file_is_still_cross_checked(tmp_path: Path) -> None:
    """A ``_pm`` without footer checksums cannot vouch for the footer: the schema checks
    still catch a renamed column, when reading and when reopening."""
    directory = tmp_path / "lf"
    sizes = make_live_file(directory, commits=2)
    strip_checksums(directory)
    path = directory / LiveFileName.DATA.value
    data = path.read_bytes()
    rewritten = rewrite_footer(data[: sizes[-1]], edit_leaf("symbol", name="cymbol"))
    assert len(rewritten) == sizes[-1]  # same length: the _pm still names this footer
    path.write_bytes(rewritten)
    with pytest.raises(CorruptFileError, match="'cymbol' in the Parquet schema"):
        streamwrite.read_table(directory)
    with pytest.raises(CorruptFileError, match="schemas do not continue"):
        recover(directory)  # the older footers still say 'symbol'

    async def reopen() -> None:
        await streamwrite.LiveFile.open(directory)

    with pytest.raises(CorruptFileError, match="schemas do not continue"):
        run(reopen)
    before = path.read_bytes()
    (directory / LiveFileName.PM.value).unlink()  # nor does a rebuild take it
    with pytest.raises(CorruptFileError, match="schemas do not continue"):
        run(reopen)
    assert path.read_bytes() == before
