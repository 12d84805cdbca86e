"""The reader on nested columns written by others: pyarrow (every page version, encoding,
codec, page index, encryption with column keys on leaf paths), DuckDB and polars (written in a
subprocess), and what ``columns=``, filters, ``iter_batches`` and the metadata views do with
nested fields.
"""

from __future__ import annotations

import datetime
import decimal
import io
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
import pytest

import streamwrite
from streamwrite.crypto import InMemoryKms
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.errors import ConfigError, SchemaError
from streamwrite.reader.file import ParquetFile
from streamwrite.reader.verify import verify_file
from tests.crypto.test_keys import _PyarrowKms

N = 300

INNER = pa.struct([pa.field("d", pa.date32()), pa.field("e", pa.float64(), False)])
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), False),
        pa.field("l", pa.list_(pa.int64())),
        pa.field("ls", pa.large_list(pa.field("item", pa.string(), False))),
        pa.field("f", pa.list_(pa.int32(), 2)),
        pa.field(
            "s",
            pa.struct(
                [
                    pa.field("a", pa.int64()),
                    pa.field("b", pa.dictionary(pa.int32(), pa.string())),
                    pa.field("inner", INNER),
                ]
            ),
        ),
        pa.field("m", pa.map_(pa.string(), pa.list_(pa.decimal128(9, 2)), keys_sorted=True)),
        pa.field("nn", pa.list_(pa.list_(pa.timestamp("ms", "Europe/Paris")))),
        pa.field("req", pa.list_(pa.field("x", pa.int16(), False)), False),
    ]
)


def _row(i: int) -> dict[str, object]:
    """Nulls at every level, empty lists, lists of nulls, maps with null values."""
    return {
        "id": i,
        "l": None if i % 5 == 0 else [None if j % 3 == 1 else i * 10 + j for j in range(i % 4)],
        "ls": None if i % 6 == 0 else [f"v{i}-{j}" for j in range(i % 3)],
        "f": None if i % 4 == 0 else [i, None if i % 3 == 0 else -i],
        "s": None
        if i % 7 == 0
        else {
            "a": None if i % 2 else i,
            "b": None if i % 5 == 1 else f"k{i % 4}",
            "inner": None if i % 3 == 0 else {"d": None if i % 4 == 1 else i, "e": i / 4},
        },
        "m": None
        if i % 8 == 0
        else [
            (f"k{j}", None if j == 1 else [decimal.Decimal(i * 100 + j).scaleb(-2), None])
            for j in range(i % 3)
        ],
        "nn": None
        if i % 9 == 0
        else [None if j == 2 else [i * 1000 + k for k in range(j)] for j in range(i % 4)],
        "req": [i % 100] * (i % 3),
    }


def _table(n: int = N) -> pa.Table:
    return pa.Table.from_pylist([_row(i) for i in range(n)], schema=SCHEMA)


def _same(actual: pa.Table, expected: pa.Table, *, type_names: bool = True) -> None:
    """Same schema (and, with ``type_names``, the same item and map field names) and the same
    values. Values compare as Python values: Arrow's ``equals`` also compares the hidden child
    slots under null parents, where writers and readers differ (pyarrow leaves them null)."""
    assert actual.schema.equals(expected.schema), (actual.schema, expected.schema)
    if type_names:
        assert [str(f.type) for f in actual.schema] == [str(f.type) for f in expected.schema]
    for name in expected.column_names:
        assert actual.column(name).to_pylist() == expected.column(name).to_pylist(), name


WRITE_OPTIONS = [
    pytest.param(
        dict(data_page_version="1.0", use_dictionary=False, compression="none"), id="v1-plain"
    ),
    pytest.param(
        dict(data_page_version="1.0", use_dictionary=True, compression="snappy"),
        id="v1-dict-snappy",
    ),
    pytest.param(
        dict(data_page_version="2.0", use_dictionary=True, compression="zstd"), id="v2-dict-zstd"
    ),
    pytest.param(
        dict(
            data_page_version="2.0", use_dictionary=False, compression="zstd", write_page_index=True
        ),
        id="v2-zstd-index",
    ),
    pytest.param(
        dict(
            data_page_version="1.0",
            use_dictionary=False,
            compression="snappy",
            write_page_index=True,
            column_encoding={
                "id": "DELTA_BINARY_PACKED",
                "l.list.element": "DELTA_BINARY_PACKED",
                "ls.list.item": "DELTA_LENGTH_BYTE_ARRAY",
            },
        ),
        id="v1-delta-index",
    ),
    pytest.param(
        dict(
            version="1.0",
            data_page_version="1.0",
            use_dictionary=True,
            compression="none",
            store_schema=False,
        ),
        id="format1-no-arrow-schema",
    ),
]


@pytest.mark.parametrize("options", WRITE_OPTIONS)
def test_pyarrow_written_nested_files_read_equal(options: dict[str, object]) -> None:
    table = _table()
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=120, data_page_size=256, **options)  # type: ignore[arg-type]
    raw = buf.getvalue()
    ours = streamwrite.read_table(raw)
    if options.get("store_schema") is False:
        theirs = pq.read_table(io.BytesIO(raw))
        assert ours.schema.equals(theirs.schema)
        assert ours.equals(theirs)
        return
    _same(ours, table)
    with ParquetFile(raw) as pf:
        for i in range(pf.num_row_groups):
            _same(pf.read_row_group(i), table.slice(i * 120, 120))
        batches = list(pf.iter_batches(batch_size=47, columns=["s", "m"]))
        assert [b.num_rows for b in batches[:-1]] == [47] * (len(batches) - 1)
        _same(pa.Table.from_batches(batches), table.select(["s", "m"]))
    assert verify_file(raw).problems == []


def test_metadata_views_name_leaves_by_path_with_their_levels() -> None:
    buf = io.BytesIO()
    pq.write_table(_table(20), buf)
    raw = buf.getvalue()
    theirs = pq.ParquetFile(io.BytesIO(raw))
    with ParquetFile(raw) as pf:
        assert len(pf.schema) == len(theirs.schema) == pf.metadata.num_columns
        for i in range(len(theirs.schema)):
            mine, ref = pf.schema.column(i), theirs.schema.column(i)
            assert (mine.path, mine.name, mine.physical_type) == (
                ref.path,
                ref.name,
                ref.physical_type,
            )
            assert mine.max_definition_level == ref.max_definition_level
            assert mine.max_repetition_level == ref.max_repetition_level
            chunk, ref_chunk = (
                pf.metadata.row_group(0).column(i),
                theirs.metadata.row_group(0).column(i),
            )
            assert chunk.path_in_schema == ref_chunk.path_in_schema
            assert chunk.num_values == ref_chunk.num_values
        assert pf.schema_arrow.equals(SCHEMA)


def test_columns_select_fields_struct_paths_and_leaf_paths() -> None:
    table = _table(50)
    buf = io.BytesIO()
    pq.write_table(table, buf)
    raw = buf.getvalue()
    with ParquetFile(raw) as pf:
        _same(pf.read(["m", "id"]), table.select(["m", "id"]))
        # a struct path gives the struct with only that child (pyarrow 26 returns the bare
        # child column "a" instead; the values agree)
        rows = table.column("s").to_pylist()
        cases = {
            ("s.a",): lambda v: {"a": v["a"]},
            ("s.inner.e", "s.a"): lambda v: {
                "a": v["a"],
                "inner": None if v["inner"] is None else {"e": v["inner"]["e"]},
            },
            ("s.inner",): lambda v: {"inner": v["inner"]},
            ("s.b", "s"): lambda v: v,
        }
        for columns, cut in cases.items():
            got = pf.read(list(columns))
            assert got.column_names == ["s"]
            assert got.column("s").to_pylist() == [None if v is None else cut(v) for v in rows]
        theirs = pq.read_table(io.BytesIO(raw), columns=["s.a"]).column(0).to_pylist()
        assert theirs == [None if v is None else v["a"] for v in rows]
        assert pf.read(["s.a"]).column("s").type == pa.struct([pa.field("a", pa.int64())])
        # a leaf column name selects its field, pruned to the path
        _same(pf.read(["l.list.element"]), table.select(["l"]))
        assert pf.read(["s.b"]).column("s").type == pa.struct(
            [pa.field("b", pa.dictionary(pa.int32(), pa.string()))]
        )
        with pytest.raises(SchemaError, match=r"\['s.zz'\]"):
            pf.read(["s.zz"])
        with pytest.raises(SchemaError):
            pf.read(["l.zz"])


def test_filters_with_page_index_keep_nested_fields_aligned() -> None:
    """A flat filter column cut to page ranges; the nested fields read whole and cut to the
    same records (their pages start at other records)."""
    table = _table(2000)
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=1000, data_page_size=300, write_page_index=True,
                   use_dictionary=False, write_batch_size=50)  # fmt: skip
    raw = buf.getvalue()
    with ParquetFile(raw) as pf:
        for low, high in ((100, 130), (990, 1010), (1500, 1999), (-5, 3)):
            flt = [("id", ">=", low), ("id", "<=", high)]
            plan = pf.plan(flt)
            assert plan.num_rows_read < 2000  # the page index cut rows
            expected = table.filter((pc.field("id") >= low) & (pc.field("id") <= high))
            _same(pf.read(filters=flt), expected)
            got = pf.read(["s.inner.d", "nn", "id"], filters=flt)
            _same(got.select(["nn", "id"]), expected.select(["nn", "id"]))
            assert got.column("s").to_pylist() == [
                None
                if s is None
                else {"inner": None if s["inner"] is None else {"d": s["inner"]["d"]}}
                for s in expected.column("s").to_pylist()
            ]
            batches = list(pf.iter_batches(batch_size=7, filters=flt, columns=["f", "m"]))
            schema = pa.schema([SCHEMA.field("f"), SCHEMA.field("m")])
            _same(pa.Table.from_batches(batches, schema=schema), expected.select(["f", "m"]))


def test_filters_cannot_name_list_leaves() -> None:
    buf = io.BytesIO()
    pq.write_table(_table(30), buf)
    with ParquetFile(buf.getvalue()) as pf:
        with pytest.raises(ConfigError, match="inside the list"):
            pf.read(filters=[("l.list.element", "=", 3)])
        with pytest.raises((ConfigError, SchemaError)):
            pf.read(filters=[("l", "=", 3)])


# --- other writers ---------------------------------------------------------------------------

_DUCKDB = r"""
import sys, duckdb
con = duckdb.connect()
con.execute('''
COPY (
  SELECT i AS id,
         CASE WHEN i % 5 = 0 THEN NULL ELSE list_transform(range(i % 4),
              lambda j: CASE WHEN j = 1 THEN NULL ELSE i * 10 + j END) END AS l,
         CASE WHEN i % 7 = 0 THEN NULL ELSE {'a': CASE WHEN i % 2 = 0 THEN i END,
              'b': 'x' || (i % 3)::VARCHAR, 't': [i, i + 1]} END AS s,
         CASE WHEN i % 4 = 0 THEN NULL ELSE MAP(['k' || (i % 3)::VARCHAR],
              [CASE WHEN i % 6 = 1 THEN NULL ELSE i * 1.5 END]) END AS m,
         [[i], [], NULL, [NULL, i]] AS nn
  FROM range(2000) t(i)
) TO 'PATH' (FORMAT PARQUET, ROW_GROUP_SIZE 700, COMPRESSION CODEC)
'''.replace('PATH', sys.argv[1]).replace('CODEC', sys.argv[2]))
"""

_POLARS = r"""
import sys, polars as pl
n = 1500
df = pl.DataFrame({
    "id": list(range(n)),
    "l": [None if i % 5 == 0 else [None if j == 1 else float(i + j) for j in range(i % 4)]
          for i in range(n)],
    "s": [None if i % 7 == 0 else {"a": i if i % 2 else None, "b": [str(i)] * (i % 3)}
          for i in range(n)],
    "ll": [[[i] * (j % 3) for j in range(i % 3)] for i in range(n)],
    "a": [[i, i + 1, i + 2] if i % 3 else None for i in range(n)],
}, schema_overrides={"a": pl.Array(pl.Int64, 3)}, strict=False)
df.write_parquet(sys.argv[1], compression=sys.argv[2], row_group_size=600, statistics=True)
"""


@pytest.mark.parametrize("codec", ["zstd", "snappy", "uncompressed"])
@pytest.mark.parametrize("writer", ["duckdb", "polars"])
def test_duckdb_and_polars_nested_files_read_equal_to_pyarrow(
    tmp_path: Path, writer: str, codec: str
) -> None:
    path = tmp_path / f"{writer}.parquet"
    script = _DUCKDB if writer == "duckdb" else _POLARS
    subprocess.run([sys.executable, "-c", script, str(path), codec], check=True, timeout=120,
                   capture_output=True)  # fmt: skip
    expected = pq.read_table(path)
    ours = streamwrite.read_table(path)
    _same(ours, expected, type_names=False)  # pyarrow names map entries after the field
    assert verify_file(path).problems == []


# --- encrypted ------------------------------------------------------------------------------

MASTER_KEYS = {"kf": b"FOOTERMASTERKEY!", "kc": b"COLUMNMASTERKEY!", "kd": b"OTHERMASTERKEY!!"}


@pytest.mark.parametrize("plaintext_footer", [False, True])
@pytest.mark.parametrize("algorithm", ["AES_GCM_V1", "AES_GCM_CTR_V1"])
def test_pyarrow_encrypted_nested_files_with_leaf_column_keys(
    tmp_path: Path, plaintext_footer: bool, algorithm: str
) -> None:
    kms = InMemoryKms(MASTER_KEYS)
    factory = pe.CryptoFactory(lambda _cfg: _PyarrowKms(kms, []))
    cfg = pe.EncryptionConfiguration(
        footer_key="kf",
        column_keys={
            "kc": ["s.a", "l.list.element", "m.key_value.key"],
            "kd": ["nn.list.element.list.element"],
        },
        encryption_algorithm=algorithm,
        plaintext_footer=plaintext_footer,
        cache_lifetime=datetime.timedelta(minutes=10),
    )
    props = factory.file_encryption_properties(pe.KmsConnectionConfig(), cfg)
    table = _table()
    path = tmp_path / "enc.parquet"
    pq.write_table(table, path, encryption_properties=props, write_page_index=True,
                   data_page_size=512, row_group_size=100)  # fmt: skip
    config = DecryptionConfig.from_kms(InMemoryKms(MASTER_KEYS))
    _same(streamwrite.read_table(path, decryption=config), table)
    with ParquetFile(path, decryption=config) as pf:
        _same(pf.read(["f"]), table.select(["f"]))
        flt = [("id", ">=", 120), ("id", "<", 140)]
        _same(pf.read(filters=flt), table.filter((pc.field("id") >= 120) & (pc.field("id") < 140)))
    assert verify_file(path, decryption=config).problems == []


def test_filters_on_struct_fields_prune_by_statistics_and_page_index() -> None:
    """``s.a`` is a struct leaf: its footer statistics skip row groups and its page index
    (first_row_index counts records = rows) cuts pages; lists read alongside stay aligned."""
    n = 3000
    table = pa.table(
        {
            "x": list(range(n)),
            "s": [{"a": i, "b": str(i)} if i % 7 else None for i in range(n)],
            "l": [[i, None] if i % 3 else None for i in range(n)],
        }
    )
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=500, write_page_index=True, data_page_size=200,
                   write_batch_size=50)  # fmt: skip
    flt = [("s.a", ">=", 1210), ("s.a", "<", 1240)]
    expected = table.filter((pc.field("s", "a") >= 1210) & (pc.field("s", "a") < 1240))
    with ParquetFile(buf.getvalue()) as pf:
        plan = pf.plan(flt)
        assert plan.skipped("statistics") == 5
        assert plan.num_rows_read < 500  # the page index of s.a cut rows
        _same(pf.read(filters=flt), expected)
        _same(pf.read(["l", "x"], filters=flt), expected.select(["l", "x"]))
        # a struct path asked for and another child of it in the filter
        got = pf.read(["s.b"], filters=flt)
        assert got.column("s").to_pylist() == [{"b": s["b"]} for s in expected["s"].to_pylist()]
        nulls = pf.read(filters=pc.field("s", "a").is_null())
        assert nulls.num_rows == sum(1 for i in range(n) if i % 7 == 0)
