"""The sink's Arrow side without Spark: schema choice, casts, lazy import of pyspark."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from streamwrite.errors import SchemaError
from streamwrite.spark import ForeachBatchSink, conform, default_app_id, table_schema_for

ROOT = Path(__file__).resolve().parents[2]

SPARK_LIKE = pa.schema(
    [
        pa.field("ts", pa.timestamp("us", tz="Asia/Kolkata"), nullable=False),
        pa.field("value", pa.int64(), nullable=False, metadata={"k": "v"}),
        pa.field("symbol", pa.large_string()),
    ]
)


def _batch(schema: pa.Schema = SPARK_LIKE) -> pa.Table:
    return pa.table(
        {"ts": pa.array([0, 86_400 * 10**6], pa.int64()), "value": [1, 2], "symbol": ["a", None]}
    ).cast(schema)


def test_new_table_schema_is_utc_nullable_and_session_independent() -> None:
    schema = table_schema_for(SPARK_LIKE)
    assert schema == pa.schema(
        [("ts", pa.timestamp("us", tz="UTC")), ("value", pa.int64()), ("symbol", pa.string())]
    )
    assert all(f.nullable and not f.metadata for f in schema)
    assert table_schema_for(pa.schema([("t", pa.timestamp("us"))])).field("t").type == (
        pa.timestamp("us")  # TimestampNTZ stays without a zone
    )


def test_conform_reorders_casts_and_keeps_instants() -> None:
    batch = _batch()
    target = pa.schema(
        [("symbol", pa.string()), ("ts", pa.timestamp("ns", tz="UTC")), ("value", pa.int64())]
    )
    out = conform(batch, target)
    assert out.schema == target
    assert out.column("ts").cast(pa.int64()).to_pylist() == [0, 86_400 * 10**9]
    assert out.column("symbol").to_pylist() == ["a", None]


def test_conform_rejects_what_does_not_fit() -> None:
    batch = _batch()
    with pytest.raises(SchemaError, match="columns"):
        conform(batch.drop_columns(["symbol"]), table_schema_for(SPARK_LIKE))
    strict = table_schema_for(SPARK_LIKE).set(2, pa.field("symbol", pa.string(), nullable=False))
    with pytest.raises(SchemaError, match="non-nullable"):
        conform(batch, strict)
    lossy = pa.schema(
        [("ts", pa.timestamp("s", tz="UTC")), ("value", pa.int8()), ("symbol", pa.string())]
    )
    with pytest.raises(SchemaError, match="does not cast"):
        conform(_batch().set_column(0, "ts", pa.array([1, 2], pa.timestamp("us", tz="UTC"))), lossy)


def test_default_app_id_is_stable_per_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert (
        default_app_id("t") == default_app_id(tmp_path / "t") == default_app_id(str(tmp_path / "t"))
    )
    assert default_app_id("t") != default_app_id("u")
    assert default_app_id("t").startswith("spark-") and len(default_app_id("t")) == 22


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )


def test_importing_streamwrite_and_its_spark_module_does_not_import_pyspark() -> None:
    proc = _run(
        "import sys, streamwrite, streamwrite.spark; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyspark'))"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_missing_pyspark_is_a_clear_unsupported_error() -> None:
    proc = _run(
        "import sys; sys.modules['pyspark'] = None\n"
        "from streamwrite.errors import UnsupportedError\n"
        "from streamwrite.spark import foreach_batch_sink\n"
        "try:\n    foreach_batch_sink('t')\nexcept UnsupportedError as exc:\n    print(exc)\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert "pip install 'streamwrite[spark]'" in proc.stdout


def test_the_sink_pickles_for_spark_connect(tmp_path: Path) -> None:
    sink = ForeachBatchSink(
        tmp_path / "t", "job-1", table_schema_for(SPARK_LIKE), {"timestamp": "ts"}
    )
    assert pickle.loads(pickle.dumps(sink)) == sink
