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

Every function here but :func:`recover_live_file` is read-only: it takes no lock and creates
no file, so it runs while a writer appends to the file or table. Results are frozen
dataclasses.
"""

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
    PartitionStatus,
    RetiredSegment,
    SegmentInfo,
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

__all__ = [
    "PINS_NOTE",
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
    "PartitionRecord",
    "PartitionStatus",
    "PathKind",
    "Progress",
    "RetiredSegment",
    "RowGroupInfo",
    "SegmentInfo",
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
]
