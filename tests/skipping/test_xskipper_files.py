"""xskipper v4 store files: names, Spark schema JSON, rows; read back by pyarrow and Spark,
encrypted ones with the keys (pyarrow and Spark in subprocesses, as tests/crypto and
tests/spark/test_spark_encryption.py do)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq

from streamwrite.crypto import EncryptionConfig, InMemoryKms, KeyWrapper
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.skipping.bloom import SparkBloomFilter
from streamwrite.skipping.config import SkippingConfig
from streamwrite.skipping.sketch import SegmentSketch
from streamwrite.skipping.store import SkippingStore
from streamwrite.skipping.xskipper import (
    BLOOM_UDT,
    ROWS_KEY,
    SPARK_SCHEMA_KEY,
    StoreEntry,
    column_name,
    store_directory,
    store_encryption,
    table_identifier,
    xskipper_table,
)
from tests.crypto.test_writer_encryption import MASTER_KEYS, _job, run_pyarrow

CONFIG = SkippingConfig.parse(
    {
        "symbol": ["valuelist", ("bloom", {"ndv": 1000, "fpp": 0.01})],
        "price": ["minmax"],
        "qty": ["bloom", "minmax"],
        "ts": ["minmax"],
    }
)
TS = pa.timestamp("us", "UTC")


def _segment(i: int) -> pa.Table:
    if i == 2:  # an all-null segment
        return pa.table(
            {
                "symbol": pa.array([None, None], pa.string()),
                "price": pa.array([None, None], pa.float64()),
                "qty": pa.array([None, None], pa.int64()),
                "ts": pa.array([None, None], TS),
            }
        )
    return pa.table(
        {
            "symbol": [f"S{i}", "日本", None, f"S{i}"],
            "price": [1.5 * i, -2.0, None, 7.25],
            "qty": [i, -(2**63), 2**63 - 1, None],
            "ts": pa.array([10**15 + i, 10**15, None, 10**15 + 99], TS),
        }
    )


def _entries(table_dir: Path, num: int = 4) -> list[StoreEntry]:
    out = []
    for i in range(num):
        path = table_dir / f"2026-01-0{i + 1}" / "data.parquet"
        out.append(
            StoreEntry(
                segment=f"2026-01-0{i + 1}/0",
                path=str(path),
                committed_size=1000 + i,
                sketch=SegmentSketch.of(CONFIG, _segment(i)),
                mtime_ms=1_700_000_000_000 + i,
            )
        )
    return out


def _expected_rows(table_dir: Path) -> list[dict[str, Any]]:
    rows = []
    for i, e in enumerate(_entries(table_dir)):
        t = _segment(i)
        empty = i == 2
        bloom_sym = SparkBloomFilter.create(1000, 0.01)
        bloom_qty = SparkBloomFilter.create(100000, 0.01)
        if not empty:
            bloom_sym.put_strings(t.column("symbol"))
            bloom_qty.put_longs(t.column("qty"))
        rows.append(
            {
                "obj_name": f"{e.path}#{e.mtime_ms}",
                "symbol_valuelist_6": [] if empty else sorted({f"S{i}", "日本"}),
                "symbol_bloomfilter_6": bloom_sym.to_java_bytes(),
                "price_minmax_5": {"min": None, "max": None}
                if empty
                else {"min": min(1.5 * i, -2.0), "max": max(1.5 * i, 7.25)},
                "qty_bloomfilter_3": bloom_qty.to_java_bytes(),
                "qty_minmax_3": {"min": None, "max": None}
                if empty
                else {"min": -(2**63), "max": 2**63 - 1},
                "ts_minmax_2": {"min": None, "max": None}
                if empty
                else {
                    "min": pa.scalar(10**15, TS).as_py(),
                    "max": pa.scalar(10**15 + 99, TS).as_py(),
                },
            }
        )
    return rows


def _sorted_lists(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "symbol_valuelist_6": sorted(r["symbol_valuelist_6"])} for r in rows]


def test_column_names_and_directory_follow_xskipper() -> None:
    # The spec's own example (version 2 naming).
    assert (
        column_name(["lat#_.$_new", "$_lng.#"], "someindex")
        == "lat##_$#$$_new_$_lng$#$##_someindex_14-10"
    )
    assert column_name(["temp"], "minmax") == "temp_minmax_4"
    assert column_name(["a.b"], "minmax") == "a$#$b_minmax_5"
    assert column_name(["account_name"], "valuelist") == "account_name_valuelist_12"
    ident = table_identifier("/data/tables/t1/")
    assert ident == "/data/tables/t1"
    assert store_directory("/data/tables/t1").name == hashlib.sha256(ident.encode()).hexdigest()


def test_pyarrow_reads_the_v4_shape_json_and_rows(tmp_path: Path) -> None:
    store = SkippingStore.open(tmp_path, CONFIG)
    state = store.add_sealed(_entries(tmp_path))
    (name,) = state["files"]
    assert "." not in name and name.startswith("part-00000-")
    path = store_directory(tmp_path) / name
    pf = pq.ParquetFile(path)
    schema = pf.schema_arrow
    assert schema.names == [
        "obj_name",
        "symbol_valuelist_6",
        "symbol_bloomfilter_6",
        "price_minmax_5",
        "qty_bloomfilter_3",
        "qty_minmax_3",
        "ts_minmax_2",
    ]
    assert schema.field("price_minmax_5").type == pa.struct(
        [("min", pa.float64()), ("max", pa.float64())]
    )
    assert pa.types.is_list(schema.field("symbol_valuelist_6").type)
    assert pf.schema.column(1).path == "symbol_valuelist_6.list.element"
    meta = pf.metadata.metadata
    spark = json.loads(meta[SPARK_SCHEMA_KEY.encode()])
    fields = {f["name"]: f for f in spark["fields"]}
    assert fields["obj_name"]["metadata"] == {
        "tableIdentifier": table_identifier(tmp_path),
        "version": 4,
    }
    assert fields["symbol_bloomfilter_6"]["type"] == {
        "type": "udt",
        "class": BLOOM_UDT,
        "pyClass": None,
        "sqlType": "binary",
    }
    assert fields["symbol_bloomfilter_6"]["metadata"] == {
        "index": {
            "cols": ["symbol"],
            "name": "bloomfilter",
            "params": {
                "io.xskipper.index.bloom.ndv": "1000",
                "io.xskipper.index.bloom.fpp": "0.01",
            },
        }
    }
    assert fields["price_minmax_5"]["type"]["fields"][0] == {
        "name": "min",
        "type": "double",
        "nullable": True,
        "metadata": {},
    }
    assert fields["symbol_valuelist_6"]["type"] == {
        "type": "array",
        "elementType": "string",
        "containsNull": True,
    }
    assert fields["ts_minmax_2"]["type"]["fields"][1]["type"] == "timestamp"
    assert json.loads(meta[ROWS_KEY.encode()]) == [
        [e.segment, e.committed_size] for e in _entries(tmp_path)
    ]
    rows = _sorted_lists(pq.read_table(path).to_pylist())
    assert rows == _expected_rows(tmp_path)
    bloom = SparkBloomFilter.from_java_bytes(rows[0]["symbol_bloomfilter_6"])
    assert bloom.might_contain_strings(["S0", "日本"]).all()


def test_partition_columns_become_virtual(tmp_path: Path) -> None:
    entries = [
        StoreEntry(
            e.segment,
            e.path,
            e.committed_size,
            e.sketch,
            e.mtime_ms,
            {"date": pa.scalar(20454 + i, pa.date32())},
        )
        for i, e in enumerate(_entries(tmp_path))
    ]
    state = SkippingStore.open(tmp_path, CONFIG).add_sealed(entries)
    path = store_directory(tmp_path) / state["files"][0]
    table = pq.read_table(path)
    assert table.column_names[:2] == ["obj_name", "virtual_date"]
    assert table.column("virtual_date").type == pa.date32()
    spark = json.loads(pq.ParquetFile(path).metadata.metadata[SPARK_SCHEMA_KEY.encode()])
    assert spark["fields"][1] == {
        "name": "virtual_date",
        "type": "date",
        "nullable": True,
        "metadata": {},
    }


def test_spark_reads_the_store_and_parses_its_json(spark: Any, tmp_path: Path) -> None:
    store = SkippingStore.open(tmp_path, CONFIG)
    entries = _entries(tmp_path)
    store.add_sealed(entries[:2])
    state = store.add_sealed(entries[2:])
    assert len(state["files"]) == 2
    directory = store_directory(tmp_path)
    got = spark.read.parquet(str(directory)).toArrow()
    rows = sorted(_sorted_lists(got.to_pylist()), key=lambda r: r["obj_name"])
    expected = _expected_rows(tmp_path)
    assert [r["obj_name"] for r in rows] == [r["obj_name"] for r in expected]
    for r, e in zip(rows, expected, strict=True):
        for key in ("symbol_valuelist_6", "price_minmax_5", "qty_minmax_3"):
            assert r[key] == e[key], key
        assert bytes(r["symbol_bloomfilter_6"]) == e["symbol_bloomfilter_6"]
        assert r["ts_minmax_2"]["min"] == (
            None if e["ts_minmax_2"]["min"] is None else e["ts_minmax_2"]["min"]
        )
    # The JSON is Spark's own serialization: Spark parses it and writes it back identically
    # (the UDT class is xskipper's, absent here: compare with its sqlType in its place).
    text = (
        pq.ParquetFile(directory / state["files"][0])
        .metadata.metadata[SPARK_SCHEMA_KEY.encode()]
        .decode()
    )
    udt = json.dumps(
        {"type": "udt", "class": BLOOM_UDT, "pyClass": None, "sqlType": "binary"},
        separators=(",", ":"),
    )
    plain = text.replace(udt, '"binary"')
    parsed = spark._jvm.org.apache.spark.sql.types.DataType.fromJson(plain)
    assert json.loads(parsed.json()) == json.loads(plain), (parsed.json(), plain)


def _encryption() -> FileEncryption:
    config = EncryptionConfig(footer_key_id="kf", column_keys={"price": "kc", "symbol": "kd"})
    return FileEncryption(KeyWrapper(InMemoryKms(MASTER_KEYS), config))


def test_encrypted_store_labels_and_pyarrow_with_keys(tmp_path: Path) -> None:
    table_dir = tmp_path / "table"
    store = SkippingStore.open(table_dir, CONFIG, None, _encryption())
    state = store.add_sealed(_entries(table_dir))
    path = store_directory(table_dir) / state["files"][0]
    assert path.read_bytes()[:4] == b"PARE"
    expected_path = tmp_path / "expected.feather"
    feather.write_feather(pa.Table.from_pylist(_expected_rows(table_dir)), expected_path)
    columns = ["obj_name", "price_minmax_5", "qty_minmax_3", "ts_minmax_2", "symbol_bloomfilter_6"]
    jobs = [
        _job("store", path, expected_path, columns=[*columns, "symbol_valuelist_6"]),
        _job("nokeys", path, expected_path, keys=False, columns=["obj_name"]),
    ]
    results = run_pyarrow(tmp_path, jobs)
    assert results["store"] == "ok"
    assert results["nokeys"].startswith("error")
    raw = path.read_bytes()
    assert all(key not in raw for key in MASTER_KEYS.values())
    # Retiring a segment rewrites the encrypted file without its row (read back via the KMS).
    state = store.remove([_entries(table_dir)[1].segment])
    (rewritten,) = state["files"]
    remaining = [r for i, r in enumerate(_expected_rows(table_dir)) if i != 1]
    feather.write_feather(pa.Table.from_pylist(remaining), expected_path)
    new_path = store_directory(table_dir) / rewritten
    assert new_path.read_bytes()[:4] == b"PARE"
    again = run_pyarrow(tmp_path, [_job("rewritten", new_path, expected_path, columns=columns)])
    assert again == {"rewritten": "ok"}


def test_encryption_labels_in_obj_name_metadata(tmp_path: Path) -> None:
    encryption = store_encryption(_encryption(), CONFIG, ["date"])
    assert encryption is not None
    entries = [
        StoreEntry(
            e.segment,
            e.path,
            e.committed_size,
            e.sketch,
            e.mtime_ms,
            {"date": pa.scalar(1, pa.date32())},
        )
        for e in _entries(tmp_path)
    ]
    _, text = xskipper_table(entries, CONFIG, "/t", {"date": pa.date32()}, encryption)
    fields = {f["name"]: f for f in json.loads(text)["fields"]}
    assert fields["obj_name"]["metadata"] == {
        "tableIdentifier": "/t",
        "version": 4,
        "encryption": {
            "encryption.column.keys": "kf:obj_name,virtual_date;"
            "kd:symbol_valuelist_6,symbol_bloomfilter_6;kc:price_minmax_5",
            "encryption.footer.key": "kf",
        },
    }
    assert fields["price_minmax_5"]["metadata"]["index"]["key_metadata"] == "kc"
    assert "key_metadata" not in fields["qty_minmax_3"]["metadata"]["index"]


def test_spark_reads_the_encrypted_store(tmp_path: Path) -> None:
    from tests.spark.conftest import skip_or_fail_without_spark
    from tests.spark.test_spark_encryption import _compile_kms, run_spark

    skip_or_fail_without_spark()
    classes = _compile_kms(tmp_path / "kms")
    table_dir = tmp_path / "table"
    store = SkippingStore.open(table_dir, CONFIG, None, _encryption())
    store.add_sealed(_entries(table_dir)[:2])
    store.add_sealed(_entries(table_dir)[2:])
    expected_path = tmp_path / "expected.feather"
    feather.write_feather(pa.Table.from_pylist(_expected_rows(table_dir)), expected_path)
    job = {
        "name": "store",
        "path": str(store_directory(table_dir)),
        "expected": str(expected_path),
        "sort_by": "obj_name",
    }
    assert run_spark(tmp_path, classes, [job]) == {"store": "ok"}
