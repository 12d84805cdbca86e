"""Random nested schemas and data, encoded leaf by leaf with ``encode_chunk``, read by pyarrow
and DuckDB.

Each case draws a schema (struct, list, large_list, fixed_size_list and map up to depth 3 over
bool, int32, int64, double, string and binary leaves, nullable or required at each level), data
with empty lists, null lists, null elements, null structs and maps with null values, and writer
settings (page version, dictionary, codec, page size and row limits, row group size). The
levels come from the per-value reference shredder of ``_nested_files``. pyarrow (page checksums
verified) and DuckDB read all the files in one subprocess, and pyarrow's own file of each
table: each reader must read ours exactly as it reads pyarrow's (pyarrow 26 cannot read a
fixed_size_list below a null or empty ancestor from its own files either: both fail alike,
and such cases are a minority). ``STREAMWRITE_NESTED_CASES`` sets the number of cases
(default 16).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from streamwrite.format.enums import CompressionCodec
from streamwrite.options import ColumnOptions, DataPageVersion, WriteOptions
from tests.workers._nested_files import write_nested_file

CASES = int(os.environ.get("STREAMWRITE_NESTED_CASES", "16"))
READ_CHECK = Path(__file__).with_name("_nested_read_check.py")
LEAVES = [pa.bool_(), pa.int32(), pa.int64(), pa.float64(), pa.string(), pa.binary()]


def random_type(rng: np.random.Generator, depth: int) -> pa.DataType:
    kind = rng.choice(["leaf", "struct", "list", "large_list", "fixed", "map"])
    if depth == 0 or kind == "leaf":
        return LEAVES[int(rng.integers(0, len(LEAVES)))]
    if kind == "struct":
        return pa.struct(
            [random_field(rng, depth - 1, f"f{i}") for i in range(int(rng.integers(1, 4)))]
        )
    if kind == "map":
        key = [pa.int32(), pa.int64(), pa.string()][int(rng.integers(0, 3))]
        return pa.map_(key, random_field(rng, depth - 1, "value"))
    item = random_field(rng, depth - 1, "item")
    if kind == "list":
        return pa.list_(item)
    if kind == "large_list":
        return pa.large_list(item)
    return pa.list_(item, int(rng.integers(1, 4)))


def random_field(rng: np.random.Generator, depth: int, name: str) -> pa.Field:
    return pa.field(name, random_type(rng, depth), nullable=bool(rng.random() < 0.7))


def random_value(rng: np.random.Generator, dtype: pa.DataType, nullable: bool) -> Any:
    if nullable and rng.random() < 0.2:
        return None
    if pa.types.is_struct(dtype):
        return {
            dtype.field(i).name: random_value(rng, dtype.field(i).type, dtype.field(i).nullable)
            for i in range(dtype.num_fields)
        }
    if pa.types.is_map(dtype):
        count = int(rng.choice([0, 1, 2, 5]))
        item = dtype.item_field
        return [
            (random_value(rng, dtype.key_type, False), random_value(rng, item.type, item.nullable))
            for _ in range(count)
        ]
    if pa.types.is_fixed_size_list(dtype):
        item = dtype.value_field
        return [random_value(rng, item.type, item.nullable) for _ in range(dtype.list_size)]
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        item = dtype.value_field
        count = int(rng.choice([0, 1, 2, 3, 9]))
        return [random_value(rng, item.type, item.nullable) for _ in range(count)]
    if pa.types.is_boolean(dtype):
        return bool(rng.random() < 0.5)
    if pa.types.is_integer(dtype):
        return int(rng.integers(-50, 50))
    if pa.types.is_floating(dtype):
        return float(np.round(rng.normal(), 1))
    word = f"s{int(rng.integers(0, 40))}"
    return word if pa.types.is_string(dtype) else word.encode()


def random_case(seed: int) -> tuple[pa.Table, WriteOptions, int]:
    rng = np.random.default_rng(seed)
    fields = [random_field(rng, 3, f"c{i}") for i in range(int(rng.integers(1, 4)))]
    num_rows = int(rng.integers(0, 400))
    columns = [
        pa.array([random_value(rng, f.type, f.nullable) for _ in range(num_rows)], f.type)
        for f in fields
    ]
    table = pa.Table.from_arrays(columns, schema=pa.schema(fields))
    codec = [CompressionCodec.UNCOMPRESSED, CompressionCodec.SNAPPY, CompressionCodec.ZSTD][
        int(rng.integers(0, 3))
    ]
    options = WriteOptions(
        data_page_version=DataPageVersion.V2 if rng.random() < 0.5 else DataPageVersion.V1,
        default_column=ColumnOptions(compression=codec, use_dictionary=bool(rng.random() < 0.6)),
        data_page_size=int(rng.choice([64, 512, 1 << 20])),
        data_page_row_limit=int(rng.choice([1, 7, 50, 20_000])),
        dictionary_page_size_limit=int(rng.choice([40, 400, 1 << 20])),
    )
    return table, options, int(rng.choice([37, 150, 1000]))


def test_random_nested_files_read_by_pyarrow(tmp_path: Path) -> None:
    names = []
    for seed in range(CASES):
        table, options, row_group_size = random_case(seed)
        name = f"case{seed:03d}"
        data = write_nested_file(table, options, row_group_size)
        (tmp_path / f"{name}.parquet").write_bytes(data)
        pq.write_table(table, tmp_path / f"{name}-pyarrow.parquet")
        for arrow in (f"{name}.arrow", f"{name}-pyarrow.arrow"):
            with (
                pa.OSFile(str(tmp_path / arrow), "wb") as sink,
                pa.ipc.new_file(sink, table.schema) as ipc,
            ):
                ipc.write_table(table)
        names.append(name)
    done = subprocess.run(
        [sys.executable, str(READ_CHECK), str(tmp_path), "pyarrow", "duckdb"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            found = json.loads(line)
            results[found["file"], found["reader"]] = found["problems"]
    for reader in ("pyarrow", "duckdb"):
        failures = {
            name: (results.get((f"{name}.parquet", reader)), str(random_case(int(name[4:]))[0]))
            for name in names
            if results.get((f"{name}.parquet", reader))
            != results.get((f"{name}-pyarrow.parquet", reader))
        }
        assert not failures, reader
        read = [name for name in names if results.get((f"{name}.parquet", reader)) == []]
        assert len(read) * 4 >= len(names) * 3, (reader, results)
