"""Inspect, verify and recover Parquet files, live files and tables (what ``streamwrite
inspect|verify|recover|compact --status`` print, as typed values).

::

    from streamwrite import inspect

    inspect.path_kind("ticks")                        # PathKind.TABLE
    info = inspect.describe_file("trades.parquet")    # footer, schema, typed statistics
    inspect.verify_file("trades.parquet").ok          # every page, CRC, index, bloom filter
    inspect.describe_live_file("live/").snapshots     # a live file's committed versions
    record = inspect.read_table_record("ticks")       # _txn: partitions, segments, batch ids
    inspect.verify_table("ticks").problems
    inspect.compaction_status("ticks").partitions     # what compaction would merge, and why

Names are imported on first access. Every function here but :func:`recover_live_file` is
read-only: it takes no lock and creates no file, so it runs while a writer appends to the file
or table. Results are frozen dataclasses; a compaction decision is a
:class:`streamwrite.PartitionStatus` (with :class:`streamwrite.SegmentInfo` per segment).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamwrite.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "ChunkMetadata": "streamwrite.inspect.files",
    "ColumnChunkInfo": "streamwrite.inspect.files",
    "ColumnInfo": "streamwrite.inspect.files",
    "ColumnStatistics": "streamwrite.inspect.files",
    "CompactionStatus": "streamwrite.inspect.tables",
    "FileInfo": "streamwrite.inspect.files",
    "FooterLink": "streamwrite.inspect.live",
    "LiveFileInfo": "streamwrite.inspect.live",
    "LiveFileSize": "streamwrite.inspect.live",
    "LiveRecovery": "streamwrite.inspect.live",
    "PINS_NOTE": "streamwrite.inspect.tables",
    "PartitionRecord": "streamwrite.inspect.tables",
    "PathKind": "streamwrite.inspect.files",
    "Progress": "streamwrite.inspect.files",
    "RetiredSegment": "streamwrite.inspect.tables",
    "RowGroupInfo": "streamwrite.inspect.files",
    "SegmentRecord": "streamwrite.inspect.tables",
    "SegmentState": "streamwrite.inspect.tables",
    "SidecarInfo": "streamwrite.inspect.live",
    "TableInfo": "streamwrite.inspect.tables",
    "TableRecord": "streamwrite.inspect.tables",
    "Verification": "streamwrite.inspect.files",
    "compaction_status": "streamwrite.inspect.tables",
    "describe_file": "streamwrite.inspect.files",
    "describe_live_file": "streamwrite.inspect.live",
    "describe_table": "streamwrite.inspect.tables",
    "is_table": "streamwrite.inspect.tables",
    "live_file_size": "streamwrite.inspect.live",
    "path_kind": "streamwrite.inspect.files",
    "read_table_record": "streamwrite.inspect.tables",
    "recover_live_file": "streamwrite.inspect.live",
    "verify_file": "streamwrite.inspect.files",
    "verify_table": "streamwrite.inspect.tables",
}
"""Each public name and the private module that defines (or re-exports) it."""

__all__ = (
    "ChunkMetadata",
    "ColumnChunkInfo",
    "ColumnInfo",
    "ColumnStatistics",
    "CompactionStatus",
    "FileInfo",
    "FooterLink",
    "LiveFileInfo",
    "LiveFileSize",
    "LiveRecovery",
    "PINS_NOTE",
    "PartitionRecord",
    "PathKind",
    "Progress",
    "RetiredSegment",
    "RowGroupInfo",
    "SegmentRecord",
    "SegmentState",
    "SidecarInfo",
    "TableInfo",
    "TableRecord",
    "Verification",
    "compaction_status",
    "describe_file",
    "describe_live_file",
    "describe_table",
    "is_table",
    "live_file_size",
    "path_kind",
    "read_table_record",
    "recover_live_file",
    "verify_file",
    "verify_table",
)

if TYPE_CHECKING:
    from streamwrite.inspect.files import (
        ChunkMetadata,
        ColumnChunkInfo,
        ColumnInfo,
        ColumnStatistics,
        FileInfo,
        PathKind,
        Progress,
        RowGroupInfo,
        Verification,
        describe_file,
        path_kind,
        verify_file,
    )
    from streamwrite.inspect.live import (
        FooterLink,
        LiveFileInfo,
        LiveFileSize,
        LiveRecovery,
        SidecarInfo,
        describe_live_file,
        live_file_size,
        recover_live_file,
    )
    from streamwrite.inspect.tables import (
        PINS_NOTE,
        CompactionStatus,
        PartitionRecord,
        RetiredSegment,
        SegmentRecord,
        SegmentState,
        TableInfo,
        TableRecord,
        compaction_status,
        describe_table,
        is_table,
        read_table_record,
        verify_table,
    )

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
