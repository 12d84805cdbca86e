"""``streamwrite scan PATH --filter TEXT --explain``: what a filtered read of PATH reads and
skips at each level, and why, without reading any data (footers and indexes only).

For a table (``TableSnapshot.plan``)::

    filter: (symbol == 'AAPL')
    table version: 12
    partitions: 1 of 3 read; 2 skipped by time range
    segments: 1 of 6 read; 2 skipped by partition; 3 skipped by store
    row groups: 1 of 2 read; 1 skipped by statistics
    pages: 3 of 6 read
    bytes read: 4096

    segment                          committed  read                  row groups  pages  bytes
    ts_day=2026-11-22/seg-000000     12,345     skipped by partition
    ts_day=2026-11-23/seg-000002     12,345     read                  1 of 2      3 of 6  4,096

For a Parquet file or a live file (``ParquetFile.plan``, the newest commit of a live file):
the file's lines, then one line per row group (rows, read or the level that skipped it, rows
decoded, pages and bytes read).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.compute as pc

import streamwrite

__all__ = ["explain_file", "explain_table"]


def _table_lines(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(line[k]) for line in [header, *rows]) for k in range(len(header))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in [header, *rows]
    ]


def explain_table(
    path: Path,
    expression: pc.Expression,
    columns: list[str] | None,
    decryption: streamwrite.DecryptionConfig | None,
) -> str:
    """Returns: the explanation of a filtered read of the table at ``path`` (its newest
    snapshot).

    Raises:
        ConfigError: a filter streamwrite's pruning cannot represent.
        SchemaError: a filter on a column the table does not have.
        CorruptFileError: a segment is missing or damaged.
    """
    snapshot = streamwrite.read_snapshot(path)
    plan = snapshot.plan(expression, columns, decryption=decryption)
    rows = []
    for segment in plan.segments:
        read_plan: Any = segment.read_plan
        groups = pages = size = ""
        if read_plan is not None:
            groups = f"{read_plan.num_row_groups_read} of {read_plan.num_row_groups}"
            pages = f"{read_plan.num_pages_read} of {read_plan.num_pages}"
            size = f"{read_plan.bytes_read:,}"
        state = "read" if segment.skipped_by is None else f"skipped by {segment.skipped_by}"
        rows.append([segment.name, f"{segment.committed_size:,}", state, groups, pages, size])
    header = ["segment", "committed", "read", "row groups", "pages", "bytes"]
    return "\n".join([plan.explain(), "", *_table_lines(header, rows)])


def explain_file(
    path: Path,
    expression: pc.Expression,
    columns: list[str] | None,
    decryption: streamwrite.DecryptionConfig | None,
) -> str:
    """Returns: the explanation of a filtered read of the Parquet file or live file at
    ``path``.

    Raises:
        ConfigError: a filter streamwrite's pruning cannot represent.
        SchemaError: a filter on a column the file does not have.
        CorruptFileError: the file is damaged.
    """
    with streamwrite.ParquetFile(path, decryption=decryption) as parquet:
        plan = parquet.plan(expression, columns)
    rows = []
    for group in plan.row_groups:
        state = "read" if group.skipped_by is None else f"skipped by {group.skipped_by}"
        rows.append(
            [
                str(group.index),
                f"{group.num_rows:,}",
                state,
                f"{group.num_rows_read:,}",
                f"{group.num_pages_read} of {group.num_pages}",
                f"{group.bytes_read:,}",
            ]
        )
    header = ["row group", "rows", "read", "rows decoded", "pages", "bytes"]
    index_line = f"index bytes read to plan: {plan.index_bytes_read:,}"
    return "\n".join([plan.explain(), index_line, "", *_table_lines(header, rows)])
