"""``streamwrite scan PATH --filter TEXT [--columns A,B] [--format table|csv|json]
[--limit N]``: the rows of a Parquet file, a live file (its newest commit) or a table (its
newest ``_txn`` snapshot) that match a filter (the grammar of
:mod:`streamwrite.cli.filter_text`), printed on stdout.

Reads change nothing. Partitions, segments, row groups and pages that cannot match are not
read (``read_table(filters=)``), and the filter is applied to every row read, so the output
is exactly the matching rows; ``--limit`` keeps the first N of them in the path's row order.
``--explain`` prints what each level would skip and why, and the bytes read, instead of the
rows (:mod:`streamwrite.cli.explain`). Errors (a filter not in the grammar, a column the
data does not have, a literal its column cannot be compared with, such as ``symbol > 3``)
print one line and exit 2.

Formats: ``table`` (aligned columns, a header, a last line counting the rows), ``csv``
(header, RFC 4180 quoting; timestamps in ISO 8601), ``json`` (one JSON object per line;
timestamps, dates and decimals as strings, bytes as hex, NaN and infinities as strings).
Nested values: a struct is a JSON object, a list an array, a map an array of ``[key, value]``
pairs (in ``table`` and ``csv`` cells the same JSON text). A filter names a struct field by its
dotted path (``s.a > 3``); ``--columns`` takes top-level columns.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import decimal
import json
import math
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import streamwrite
from streamwrite.cli.explain import explain_file, explain_table
from streamwrite.cli.filter_text import parse_filter
from streamwrite.cli.keys import add_key_options, decryption_from_args
from streamwrite.errors import ConfigError, SchemaError

__all__ = ["FORMATS", "add_scan_parser", "scan_rows"]

FORMATS = ("table", "csv", "json")
MAX_CELL_CHARS = 40
"""``table`` format: longer values are cut (with an ellipsis) to keep the columns aligned."""


def _columns(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise ConfigError(f"--columns {text!r} has an empty column name (give A,B,C).")
    return names


def scan_rows(
    path: Path,
    filter_text: str,
    columns: list[str] | None,
    limit: int | None,
    decryption: streamwrite.DecryptionConfig | None = None,
) -> pa.Table:
    """The rows of ``path`` matching ``filter_text``, with ``columns`` (None: all).

    Returns:
        The rows, at most ``limit`` of them.

    Raises:
        FilterSyntaxError: the filter is not in the grammar.
        SchemaError: a column the data does not have.
        ConfigError: the filter does not apply to the columns' types (a literal that cannot
            be compared with its column, as the predicate core says); a negative limit.
    """
    if limit is not None and limit < 0:
        raise ConfigError(f"--limit must be 0 or more, got {limit}.")
    expression, filter_columns = parse_filter(filter_text)
    schema = _schema(path, decryption)
    tops = {name: _top_level(name, schema) for name in filter_columns}
    missing = [name for name, top in tops.items() if top is None]
    if missing:
        raise SchemaError(
            f"The filter names the column {missing[0]!r}, which {str(path)!r} does not have "
            f"(its columns: {schema.names}; a struct field is named by its dotted path, s.a)."
        )
    needed = None
    if columns is not None:
        needed = list(dict.fromkeys([*columns, *(top for top in tops.values() if top)]))
    table = streamwrite.read_table(path, columns=needed, filters=expression, decryption=decryption)
    if columns is not None:
        table = table.select(columns)
    if limit is not None:
        table = table.slice(0, limit)
    return table


def _top_level(name: str, schema: pa.Schema) -> str | None:
    """The top-level column a filter column is or lies in (``s`` for the struct field
    ``s.a``), None if the schema has none."""
    if name in schema.names:
        return name
    parts = name.split(".")
    return next(
        (
            ".".join(parts[:size])
            for size in range(len(parts) - 1, 0, -1)
            if ".".join(parts[:size]) in schema.names
        ),
        None,
    )


def _schema(path: Path, decryption: streamwrite.DecryptionConfig | None) -> pa.Schema:
    """The Arrow schema of a table (its newest ``_txn``), a live file or a Parquet file."""
    if path.is_dir() and (path / "_txn").is_file():
        snapshot = streamwrite.read_snapshot(path)
        return snapshot.schema or streamwrite.read_table(path, columns=[]).schema
    with streamwrite.ParquetFile(path, decryption=decryption) as parquet:
        schema: pa.Schema = parquet.schema_arrow
    return schema


def _text(value: Any) -> str:
    """A value as text for ``table`` and ``csv``."""
    if value is None:
        return ""
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict | list | tuple):  # struct, list, map (a list of pairs)
        return json.dumps(_json_value(value), ensure_ascii=False, separators=(", ", ": "))
    return str(value)


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal | datetime.timedelta):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    return value


def _iso_text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A nanosecond timestamp column as ISO 8601 text (Python's datetime stops at µs)."""
    text = pc.cast(column, pa.string())  # 2026-01-01 00:00:00.011658664Z
    text = pc.replace_substring_regex(text, r"^(\d{4}-\d{2}-\d{2}) ", r"\1T")
    return pc.replace_substring_regex(text, r"Z$", "+00:00")


def _python_rows(table: pa.Table) -> list[dict[str, Any]]:
    for index, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type) and field.type.unit == "ns":
            table = table.set_column(index, field.name, _iso_text(table.column(index)))
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


def print_rows(table: pa.Table, output_format: str, out: Any = None) -> None:
    """Print ``table`` in ``output_format`` (one of :data:`FORMATS`) to ``out`` (stdout)."""
    out = out or sys.stdout
    rows = _python_rows(table)
    names = table.column_names
    if output_format == "json":
        for row in rows:
            out.write(json.dumps({k: _json_value(v) for k, v in row.items()}) + "\n")
        return
    if output_format == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(names)
        for row in rows:
            writer.writerow([_text(row[name]) for name in names])
        return
    cells = [[_cut(name) for name in names]] + [
        [_cut("null" if row[name] is None else _text(row[name])) for name in names] for row in rows
    ]
    widths = [max(len(line[k]) for line in cells) for k in range(len(names))]
    for line in cells:
        padded = (cell.ljust(width) for cell, width in zip(line, widths, strict=True))
        out.write("  ".join(padded).rstrip())
        out.write("\n")
    out.write(f"({table.num_rows} row{'s' if table.num_rows != 1 else ''})\n")


def _cut(text: str) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "…"


def _scan(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if not path.exists():
        raise ConfigError(f"{args.path!r} does not exist (no such file or directory).")
    args.interrupted = "interrupted: nothing was changed"
    decryption = decryption_from_args(args)
    columns = _columns(args.columns)
    if args.explain:
        expression, _ = parse_filter(args.filter)
        if path.is_dir() and (path / "_txn").is_file():
            print(explain_table(path, expression, columns, decryption))
        else:
            print(explain_file(path, expression, columns, decryption))
        return 0
    table = scan_rows(path, args.filter, columns, args.limit, decryption)
    print_rows(table, args.format)
    return 0


def add_scan_parser(sub: Any, parents: list[argparse.ArgumentParser], epilog: str) -> None:
    """Add ``scan`` to the command line's subparsers."""
    text = "the rows of a file, live file or table that match a filter (read-only)"
    scan = sub.add_parser(
        "scan",
        help=text,
        description=text,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=parents,
    )
    scan.add_argument("path", help="a Parquet file, live file or table")
    scan.add_argument(
        "--filter",
        required=True,
        help="e.g. \"symbol in ('AAPL','MSFT') and ts >= timestamp '2026-11-22 10:00Z'\"",
    )
    scan.add_argument("--columns", help="the columns to print, comma-separated (default: all)")
    scan.add_argument("--format", choices=FORMATS, default="table", help="output format")
    scan.add_argument("--limit", type=int, help="print at most N rows")
    scan.add_argument(
        "--explain",
        action="store_true",
        help="print what each level (partition, segment, row group, page) would skip and why, "
        "and the bytes read; no rows (footers and indexes are read, no data)",
    )
    add_key_options(scan)
    scan.set_defaults(run=_scan)
