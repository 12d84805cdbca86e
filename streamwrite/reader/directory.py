"""What a directory given to ``read_table`` is, and reading a directory of plain Parquet files.

A directory is, checked in this order::

    TABLE      it holds _txn                                 read its newest _txn version
    LIVE       it holds data.parquet or _pm (a live file),   read its newest commit (a table's
               or is a table's partition                     partition raises ConfigError)
    PLAIN      *.parquet files under it, none inside a       read as pyarrow.parquet.read_table
               live file or table                            reads it (below)
    otherwise  ConfigError saying what it is not

A plain directory is read as ``pyarrow.parquet.read_table(directory)`` reads what
``pyarrow.parquet.write_to_dataset`` writes: every ``*.parquet`` file under it, skipping
files and directories whose names start with ``_`` or ``.``, in sorted path order; the files'
schemas must agree. Hive directories (``key=value``, URI-escaped, ``__HIVE_DEFAULT_PARTITION__``
for null) become dictionary columns after the file's columns, their values int32 when every
value is an integer, else strings, as pyarrow's Hive partitioning infers them.
``columns`` selects as ``ParquetFile.read`` does (top-level names, dotted struct paths, leaf
paths; :mod:`streamwrite.reader.selection`): the result is the files' reads concatenated,
then the Hive columns named, each field where it is first named.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa

from streamwrite.arrow.column import FieldNode
from streamwrite.errors import ConfigError, SchemaError
from streamwrite.format.txn import TXN_FILE
from streamwrite.layout.actions import LiveFileName
from streamwrite.reader.file import ParquetFile
from streamwrite.reader.pruned_read import filtered_tables
from streamwrite.reader.pruning import plan_read
from streamwrite.reader.selection import select_fields

__all__ = ["DirectoryKind", "classify_directory", "plain_parquet_files", "read_plain_directory"]

_HIVE = re.compile(r"([^=/]+)=([^/]*)")
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_INT32 = re.compile(r"[+-]?\d+")


class DirectoryKind(enum.Enum):
    """What a directory holds (module docstring)."""

    TABLE = "table"
    LIVE = "live file"
    PLAIN = "directory of Parquet files"


def _hidden(name: str) -> bool:
    return name.startswith(("_", "."))


def plain_parquet_files(directory: Path) -> list[Path]:
    """Every ``*.parquet`` file under ``directory`` that pyarrow reads, in sorted path order.

    Raises:
        ConfigError: a live file or table lies under ``directory`` (its ``data.parquet`` may
            hold uncommitted bytes: read that directory itself).
    """
    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not _hidden(d))
        inner = Path(root)
        if inner != directory and (TXN_FILE in files or LiveFileName.PM.value in files):
            what = "table" if TXN_FILE in files else "live file"
            raise ConfigError(
                f"{str(directory)!r} holds the {what} {str(inner)!r}: read that directory "
                "itself (its committed data only), not the directory above it."
            )
        found += [inner / f for f in files if f.endswith(".parquet") and not _hidden(f)]
    return sorted(found, key=lambda path: path.relative_to(directory).parts)


def classify_directory(directory: Path) -> DirectoryKind:
    """Returns: what ``directory`` is (module docstring).

    Raises:
        ConfigError: it is none of them (the message says what each needs).
    """
    names = {entry.name for entry in os.scandir(directory)}
    if TXN_FILE in names:
        return DirectoryKind.TABLE
    partition = (directory.parent / TXN_FILE).is_file() or any(n.startswith("seg-") for n in names)
    if partition or LiveFileName.DATA.value in names or LiveFileName.PM.value in names:
        return DirectoryKind.LIVE
    if plain_parquet_files(directory):
        return DirectoryKind.PLAIN
    raise ConfigError(
        f"{str(directory)!r} is not a table (it has no {TXN_FILE}), not a live file (no "
        f"{LiveFileName.DATA.value} and {LiveFileName.PM.value}), and holds no Parquet file "
        "(no *.parquet under it; names starting with _ or . are skipped)."
    )


def _schema_difference(first: pa.Schema, other: pa.Schema) -> str:
    """How ``other`` differs from ``first``: the first column that differs."""
    for n in range(max(len(first), len(other))):
        if n >= len(first):
            return f"it has an extra column {other.field(n).name!r} ({other.field(n).type})"
        if n >= len(other):
            return f"it lacks column {first.field(n).name!r} ({first.field(n).type})"
        a, b = first.field(n), other.field(n)
        if a.name != b.name:
            return f"its column {n} is {b.name!r}, not {a.name!r}"
        if a.type != b.type:
            return f"its column {a.name!r} is {b.type}, not {a.type}"
        if a.nullable != b.nullable:
            how = "nullable" if b.nullable else "not nullable"
            return f"its column {a.name!r} is {how} there"
    return "their field metadata differ"


def _partition_values(directory: Path, files: list[Path]) -> list[dict[str, str | None]] | None:
    """Each file's Hive ``key=value`` directories, or None when they are not all Hive with
    the same keys."""
    result: list[dict[str, str | None]] = []
    for path in files:
        parts = path.parent.relative_to(directory).parts
        matches = [_HIVE.fullmatch(part) for part in parts]
        if not all(matches):
            return None
        values: dict[str, str | None] = {}
        for match in matches:
            assert match is not None
            value = unquote(match.group(2))
            values[unquote(match.group(1))] = None if value == _HIVE_NULL else value
        result.append(values)
    keys = {tuple(values) for values in result}
    return result if len(keys) == 1 and next(iter(keys)) else None


def _partition_columns(
    partitions: list[dict[str, str | None]], num_rows: list[int]
) -> dict[str, pa.ChunkedArray]:
    """The Hive columns, one chunk per file, dictionary-encoded as pyarrow makes them."""
    columns = {}
    for key in partitions[0]:
        raw = [values[key] for values in partitions]
        unique = list(dict.fromkeys(v for v in raw if v is not None))
        as_int = all(_INT32.fullmatch(v) and -(2**31) <= int(v) < 2**31 for v in unique)
        dictionary = pa.array(
            [int(v) for v in unique] if as_int else unique, pa.int32() if as_int else pa.string()
        )
        position = {v: i for i, v in enumerate(unique)}
        null = pa.array([None], dictionary.type)  # pyarrow's chunk for a null partition
        chunks = [
            pa.DictionaryArray.from_arrays(
                pa.array([0 if v is None else position[v]] * n, pa.int32()),
                null if v is None else dictionary,
            )
            for v, n in zip(raw, num_rows, strict=True)
        ]
        columns[key] = pa.chunked_array(chunks, pa.dictionary(pa.int32(), dictionary.type))
    return columns


def _partition_types(partitions: list[dict[str, str | None]]) -> dict[str, pa.DataType]:
    """Each Hive column's value type, as :func:`_partition_columns` infers it."""
    types = {}
    for key in partitions[0]:
        values = {value for v in partitions if (value := v[key]) is not None}
        as_int = all(_INT32.fullmatch(v) and -(2**31) <= int(v) < 2**31 for v in values)
        types[key] = pa.int32() if as_int else pa.string()
    return types


def _constants(
    values: dict[str, str | None], types: dict[str, pa.DataType]
) -> dict[str, pa.Scalar]:
    """A file's Hive values as the scalars filters compare them as."""
    return {
        key: pa.scalar(
            None if value is None else int(value) if types[key] == pa.int32() else value,
            types[key],
        )
        for key, value in values.items()
    }


def read_plain_directory(
    directory: Path, columns: Sequence[str] | None, filters: object = None, **options: Any
) -> pa.Table:
    """Read a directory of plain Parquet files (module docstring).

    With ``filters`` (as ``ParquetFile.read``; they may use the Hive columns), only the rows
    matching them, in the same order: a file whose Hive values cannot match is not opened
    beyond its footer, and each file is read with pruning
    (:func:`streamwrite.reader.pruning.plan_read`, its Hive values as constants).

    Returns:
        The rows of every file, files in sorted path order.

    Raises:
        SchemaError: two files' schemas differ (names both files and the first column that
            differs), or ``columns`` names a column none has.
        As :func:`streamwrite.read_table` for each file.
    """

    files = plain_parquet_files(directory)
    partitions = _partition_values(directory, files)
    hive = set(partitions[0]) if partitions else set()
    file_columns = None if columns is None else [c for c in columns if c not in hive]
    first_schema: pa.Schema | None = None
    first_fields: Sequence[FieldNode] = ()
    tables = []
    for path in files:
        with ParquetFile(path, **options) as pf:
            schema = pf.schema_arrow
            if first_schema is None:
                first_schema, first_fields = schema, pf._parquet_schema.fields
            elif not schema.equals(first_schema, check_metadata=False):
                raise SchemaError(
                    f"The file {str(path)!r} does not have the schema of {str(files[0])!r}: "
                    f"{_schema_difference(first_schema, schema)}. Every Parquet file of a "
                    "directory must share one schema."
                )
            if filters is None:
                tables.append(pf.read(file_columns))
                continue
            constants = {}
            if partitions is not None:
                constants = _constants(partitions[len(tables)], _partition_types(partitions))
            plan = plan_read(pf, filters, file_columns, constants=constants)
            parts = list(filtered_tables(pf, plan))
            # the fields as pf.read(file_columns) returns them (structs pruned to the paths)
            out = pa.schema([node.field for node in pf._select(file_columns)])
            tables.append(pa.concat_tables(parts) if parts else out.empty_table())
    table = pa.concat_tables(tables)
    if partitions:
        added = _partition_columns(partitions, [t.num_rows for t in tables])
        for key, column in added.items():
            if columns is None or key in columns:
                table = table.append_column(key, column)
        if columns is not None:
            table = table.select(_output_names(first_fields, columns, hive))
    return table


def _output_names(fields: Sequence[FieldNode], columns: Sequence[str], hive: set[str]) -> list[str]:
    """The fields ``columns`` returns, in order of first mention: a Hive key, or the
    top-level field a name or path selects (``"s.a"`` -> ``"s"``, as ``ParquetFile.read``)."""
    names = [
        name if name in hive else select_fields(fields, [name])[0].field.name for name in columns
    ]
    return list(dict.fromkeys(names))
