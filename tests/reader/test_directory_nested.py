"""``read_table`` on a directory of plain Parquet files with nested columns: with any
``columns=`` (top-level names, dotted struct paths, leaf paths) and any ``filters=``, the
result equals the files' own ``ParquetFile.read`` results concatenated (Hive columns after)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import streamwrite
from streamwrite import ParquetFile
from streamwrite.reader.directory import plain_parquet_files

_STRUCT = pa.struct([("a", pa.int64()), ("b", pa.string())])

COLUMNS = [
    None,
    ["s"],
    ["s.a"],
    ["s.b", "k"],
    ["k", "s.b", "s.a"],
    ["s.a", "s"],
    ["l.list.element"],
    ["m", "s.a"],
    ["s.b", "m.key_value.value"],
]
# keeps rows of both files; of the second only; of the first only; of none
FILTERS = [None, [("k", ">", 2)], [("k", "<", 2)], [("k", ">", 100)]]


def _table() -> pa.Table:
    return pa.table(
        {
            "k": pa.array([1, 2, 3, 4, 5], pa.int64()),
            "s": pa.array(
                [{"a": 1, "b": "x"}, None, {"a": 3, "b": None}, {"a": 4, "b": "w"}, None],
                _STRUCT,
            ),
            "l": pa.array([[1], [2, 3], None, [], [None]], pa.list_(pa.int32())),
            "m": pa.array(
                [[("p", 1)], None, [], [("q", None), ("r", 2)], [("s", 3)]],
                pa.map_(pa.string(), pa.int64()),
            ),
        }
    )


def _plain(tmp_path: Path) -> tuple[Path, list[Path]]:
    directory = tmp_path / "plain"
    directory.mkdir()
    files = [directory / "a.parquet", directory / "b.parquet"]
    pq.write_table(_table().slice(0, 2), files[0])
    pq.write_table(_table().slice(2), files[1])
    return directory, files


def _per_file(files: list[Path], columns: list[str] | None, filters: object) -> list[pa.Table]:
    parts = []
    for path in files:
        with ParquetFile(path) as pf:
            parts.append(pf.read(columns, filters=filters))
    return parts


@pytest.mark.parametrize("filters", FILTERS)
@pytest.mark.parametrize("columns", COLUMNS)
def test_directory_read_equals_the_file_reads_concatenated(
    tmp_path: Path, columns: list[str] | None, filters: object
) -> None:
    directory, files = _plain(tmp_path)
    expected = pa.concat_tables(_per_file(files, columns, filters))
    ours = streamwrite.read_table(directory, columns=columns, filters=filters)
    assert ours.schema == expected.schema
    assert ours.equals(expected), (ours, expected)
    if columns == ["s.a"]:
        assert ours.schema.field("s").type == pa.struct([("a", pa.int64())])


@pytest.mark.parametrize("filters", [None, [("k", ">", 2)], [("s.a", ">", 3)], [("k", ">", 100)]])
@pytest.mark.parametrize(
    "columns", [["s.a"], ["s.a", "k"], ["k", "s.b"], ["s.b", "k", "s.a"], ["k", "s"]]
)
def test_hive_directory_read_with_struct_paths(
    tmp_path: Path, columns: list[str], filters: list[tuple[str, str, int]] | None
) -> None:
    pq.write_to_dataset(_table(), tmp_path / "hive", partition_cols=["k"])
    files = plain_parquet_files(tmp_path / "hive")
    file_columns = [c for c in columns if c != "k"]
    # the unfiltered file reads with the Hive column (read_table equals pyarrow on it: above),
    # the filter's columns, filtered, then the columns asked for
    hive = streamwrite.read_table(tmp_path / "hive", columns=["k", "s"])
    expected = pa.concat_tables(_per_file(files, file_columns, None))
    expected = expected.append_column("k", hive.column("k")).append_column("s_all", hive["s"])
    if filters:
        ((name, op, value),) = filters
        assert op == ">"
        column = expected["s_all"].combine_chunks().field("a") if name == "s.a" else expected[name]
        expected = expected.filter(pc.greater(column, value))
    names = list(dict.fromkeys("k" if c == "k" else "s" for c in columns))
    expected = expected.select(names)
    ours = streamwrite.read_table(tmp_path / "hive", columns=columns, filters=filters)
    assert ours.schema == expected.schema
    assert ours.equals(expected), (ours, expected)
