"""``ParquetFile.iter_batches``, misspelt keywords, and ``read_table`` on a directory of plain
Parquet files, each checked against what pyarrow does on the same input."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite.errors import ConfigError, SchemaError
from streamwrite.format import structs as t
from streamwrite.format.thrift.codec import deserialize


def _table(num_rows: int, seed: int = 0) -> pa.Table:
    rng = random.Random(seed)
    return pa.table(
        {
            "k": pa.array([rng.randint(1, 3) for _ in range(num_rows)], pa.int64()),
            "sym": pa.array([rng.choice(["a b", "c", None]) for _ in range(num_rows)], pa.string()),
            "px": pa.array([rng.random() for _ in range(num_rows)]),
        }
    )


# -- iter_batches ------------------------------------------------------------------------------


@pytest.mark.parametrize("batch_size", [1, 7, 100, 65536])
@pytest.mark.parametrize("columns", [None, ["px", "k"]])
@pytest.mark.parametrize("row_groups", [None, [2, 0]])
def test_iter_batches_equals_pyarrow(
    tmp_path: Path, batch_size: int, columns: list[str] | None, row_groups: list[int] | None
) -> None:
    path = tmp_path / "f.parquet"
    streamwrite.write_table(_table(1000), path, row_group_size=300)
    theirs = list(
        pq.ParquetFile(path).iter_batches(
            batch_size=batch_size, columns=columns, row_groups=row_groups
        )
    )
    with streamwrite.ParquetFile(path) as pf:
        ours = list(pf.iter_batches(batch_size=batch_size, columns=columns, row_groups=row_groups))
    assert [b.num_rows for b in ours] == [b.num_rows for b in theirs]
    assert all(b.num_rows == batch_size for b in ours[:-1])
    assert pa.Table.from_batches(ours).equals(pa.Table.from_batches(theirs))


def test_iter_batches_reads_one_row_group_at_a_time(tmp_path: Path) -> None:
    """The generator reads a row group only when a batch needs its rows: a damaged later
    row group fails only when reached, after the earlier batches came out."""
    path = tmp_path / "f.parquet"
    streamwrite.write_table(_table(900), path, row_group_size=300)
    with streamwrite.ParquetFile(path) as pf:
        meta = pf.thrift_metadata.row_groups[2].columns[2].meta_data  # type: ignore[index]
        assert meta is not None and meta.data_page_offset is not None
        data = bytearray(path.read_bytes())
        _, end = deserialize(t.PageHeader, memoryview(data), meta.data_page_offset)
    data[end + 3] ^= 0xFF
    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(bytes(data))
    with streamwrite.ParquetFile(damaged) as pf:
        batches = pf.iter_batches(batch_size=300)
        assert next(batches).num_rows == 300
        assert next(batches).num_rows == 300
        with pytest.raises(streamwrite.CorruptFileError):
            next(batches)


def test_iter_batches_checks_its_arguments(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    streamwrite.write_table(_table(10), path)
    with streamwrite.ParquetFile(path) as pf:
        with pytest.raises(ConfigError, match="batch_size"):
            pf.iter_batches(batch_size=0)
        with pytest.raises(SchemaError, match="nope"):
            pf.iter_batches(columns=["nope"])
        with pytest.raises(IndexError, match="Row group 5"):
            pf.iter_batches(row_groups=[5])


# -- misspelt keywords ---------------------------------------------------------------------------


def test_misspelt_keyword_names_the_public_function(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    streamwrite.write_table(_table(10), path)
    with pytest.raises(TypeError) as info:
        streamwrite.read_table(path, colums=["k"])  # type: ignore[call-arg]
    assert "streamwrite.read_table() got an unexpected keyword argument 'colums'" in str(info.value)
    assert "Did you mean 'columns'?" in str(info.value)
    with pytest.raises(TypeError) as info:
        streamwrite.ParquetFile(path, verify_checksum=False)  # type: ignore[call-arg]
    message = str(info.value)
    assert message.startswith("streamwrite.ParquetFile() got an unexpected keyword argument")
    assert "Did you mean 'verify_checksums'?" in message and "__init__" not in message
    with pytest.raises(TypeError, match=r"streamwrite\.read_table\(\)"):
        streamwrite.read_table(path, None)  # type: ignore[misc]


# -- directories of plain Parquet files --------------------------------------------------------


def test_read_table_reads_write_to_dataset_output_as_pyarrow(tmp_path: Path) -> None:
    table = _table(500)
    pq.write_to_dataset(table, tmp_path / "plain")
    pq.write_to_dataset(_table(300, seed=1), tmp_path / "plain")  # a second file
    (tmp_path / "plain" / "_SUCCESS").write_bytes(b"")
    (tmp_path / "plain" / ".hidden").mkdir()
    (tmp_path / "plain" / ".hidden" / "x.parquet").write_bytes(b"not parquet")
    expected = pq.read_table(tmp_path / "plain")
    assert streamwrite.read_table(tmp_path / "plain").equals(expected)
    assert streamwrite.read_table(tmp_path / "plain", columns=["px"]).equals(
        pq.read_table(tmp_path / "plain", columns=["px"])
    )


def test_read_table_reads_hive_partitions_as_pyarrow(tmp_path: Path) -> None:
    pq.write_to_dataset(_table(600), tmp_path / "hive", partition_cols=["k", "sym"])
    expected = pq.read_table(tmp_path / "hive")
    ours = streamwrite.read_table(tmp_path / "hive")
    assert ours.equals(expected), (ours.schema, expected.schema)
    assert streamwrite.read_table(tmp_path / "hive", columns=["sym", "px"]).equals(
        pq.read_table(tmp_path / "hive", columns=["sym", "px"])
    )


def test_read_table_names_the_file_whose_schema_differs(tmp_path: Path) -> None:
    directory = tmp_path / "mixed"
    directory.mkdir()
    pq.write_table(_table(10), directory / "a.parquet")
    pq.write_table(_table(10).set_column(2, "px", pa.array(["x"] * 10)), directory / "b.parquet")
    with pytest.raises(SchemaError) as info:
        streamwrite.read_table(directory)
    message = str(info.value)
    assert str(directory / "b.parquet") in message and str(directory / "a.parquet") in message
    assert "column 'px' is string, not double" in message


def test_read_table_says_what_a_directory_is_not(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("hello")
    with pytest.raises(ConfigError) as info:
        streamwrite.read_table(tmp_path / "empty")
    message = str(info.value)
    assert "not a table (it has no _txn)" in message
    assert "not a live file (no data.parquet and _pm)" in message
    assert "no *.parquet under it" in message
    assert "no readable _pm" not in message


def test_read_table_refuses_a_directory_above_a_live_file(tmp_path: Path) -> None:
    """Globbing a live file's data.parquet could read bytes past its commit: refused."""
    import anyio

    async def make() -> None:
        async with await streamwrite.LiveFile.open(
            tmp_path / "above" / "lf", _table(1).schema
        ) as lf:
            await lf.append(_table(10))

    anyio.run(make)
    with pytest.raises(ConfigError, match="holds the live file"):
        streamwrite.read_table(tmp_path / "above")
    assert streamwrite.read_table(tmp_path / "above" / "lf").num_rows == 10


def test_read_table_copy_of_plain_dir_keeps_working(tmp_path: Path) -> None:
    """Plain files copied next to each other read in sorted path order (as pyarrow)."""
    src = tmp_path / "src"
    src.mkdir()
    for n in (10, 2, 1):
        pq.write_table(_table(n, seed=n), src / f"part-{n}.parquet")
    shutil.copytree(src, tmp_path / "dst")
    os.utime(tmp_path / "dst" / "part-1.parquet")
    assert streamwrite.read_table(tmp_path / "dst").equals(pq.read_table(tmp_path / "dst"))


README_SNIPPET = """
pf = streamwrite.ParquetFile("trades.parquet")
md = pf.metadata  # shaped as pyarrow.parquet.ParquetFile("trades.parquet").metadata
print(md.num_rows, md.num_row_groups, md.num_columns, md.created_by, md.serialized_size)
column = md.row_group(0).column(1)
print(column.path_in_schema, column.physical_type, column.compression, column.encodings)
stats = column.statistics  # min/max typed as pyarrow types them: datetime, str, Decimal, date...
print(stats.min, stats.max, stats.null_count, stats.num_values)
raw = pf.thrift_metadata  # the Thrift FileMetaData struct, as parsed
for batch in pf.iter_batches(batch_size=65_536, columns=["sym"]):
    print(batch.num_rows)  # a pyarrow.RecordBatch; one row group in memory at a time
pq.write_to_dataset(pa.table({"day": [1, 1, 2], "px": [1.0, 2.0, 3.0]}), "plain", ["day"])
print(streamwrite.read_table("plain"))  # a directory of plain Parquet files, as pq.read_table
"""


def test_readme_parquet_file_snippet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    table = pa.table({"ts": pa.array([1, 2, 3], pa.timestamp("ns")), "sym": ["a", "b", "a"]})
    streamwrite.write_table(table, "trades.parquet")
    scope = {"streamwrite": streamwrite, "pa": pa, "pq": pq}
    exec(README_SNIPPET, scope)  # the README's own text
    assert scope["stats"].min == "a" and scope["stats"].max == "b"
    assert scope["column"].compression == "ZSTD" and scope["md"].num_rows == 3
    assert isinstance(scope["raw"], t.FileMetaData)
    assert scope["batch"].num_rows == 3
