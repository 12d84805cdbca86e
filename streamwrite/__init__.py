"""streamwrite: streaming Parquet ingest into live files every reader can read.

The public API is the names of :data:`__all__` (plus the public subpackages
``streamwrite.crypto``, ``streamwrite.spark`` and ``streamwrite.testing``); every other module
is private. The names are re-exported lazily from the private modules that define them, so that
a worker process importing ``streamwrite.format`` loads neither pyarrow nor the async stack. On
first access each one is given ``__module__ == "streamwrite"`` (as anyio does), so reprs,
tracebacks and pickles name ``streamwrite.LiveFile``, never a private module; pickles resolve
through this module and so keep working, in a pool worker too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamwrite.lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # errors (the one hierarchy)
    "StreamwriteError": "streamwrite.errors",
    "ConfigError": "streamwrite.errors",
    "SchemaError": "streamwrite.errors",
    "UnsupportedError": "streamwrite.errors",
    "FormatError": "streamwrite.errors",
    "CorruptFileError": "streamwrite.errors",
    "ChecksumError": "streamwrite.errors",
    "LimitError": "streamwrite.errors",
    "EncryptionError": "streamwrite.errors",
    "StreamwriteIOError": "streamwrite.errors",
    "StateError": "streamwrite.errors",
    "StaleBatchError": "streamwrite.errors",
    "WorkerError": "streamwrite.errors",
    # plain files
    "ByteSource": "streamwrite.reader.tail",
    "ParquetFile": "streamwrite.reader.file",
    "ReadPlan": "streamwrite.reader.plan",
    "RowGroupPlan": "streamwrite.reader.plan",
    "FileMetaData": "streamwrite.reader.metadata",
    "RowGroupMetaData": "streamwrite.reader.metadata",
    "ColumnChunkMetaData": "streamwrite.reader.metadata",
    "Statistics": "streamwrite.reader.metadata",
    "ParquetSchemaView": "streamwrite.reader.metadata",
    "ColumnSchema": "streamwrite.reader.metadata",
    "ParquetWriter": "streamwrite.writer",
    "SortingColumn": "streamwrite.options",
    "read_table": "streamwrite.dataset",
    "write_table": "streamwrite.writer",
    # encryption
    "DecryptionConfig": "streamwrite.crypto.decryption",
    "FileEncryption": "streamwrite.crypto.encryption",
    # live files
    "Commit": "streamwrite.layout.appender",
    "LiveFile": "streamwrite.live.file",
    # executors
    "Executor": "streamwrite.pool.executor",
    "InlineExecutor": "streamwrite.pool.executor",
    "ProcessPool": "streamwrite.pool.process",
    # tables
    "Table": "streamwrite.table.api",
    "TableCommit": "streamwrite.table.api",
    "CommitTicket": "streamwrite.table.api",
    "TableSnapshot": "streamwrite.table.api",
    "Segment": "streamwrite.format.txn",
    "Retired": "streamwrite.format.txn",
    "DedupLog": "streamwrite.format.txn",
    "TxnRecord": "streamwrite.format.txn",
    "open_table": "streamwrite.table.api",
    "read_snapshot": "streamwrite.table.api",
    "SnapshotFileSystem": "streamwrite.table.snapshot_fs",
    "StagedBatch": "streamwrite.table.staged",
    "StagedSegment": "streamwrite.table.staged",
    "snapshot_filesystem": "streamwrite.table.snapshot_fs",
    # data skipping
    "TablePlan": "streamwrite.table.plans",
    "SegmentFiles": "streamwrite.table.state",
    "SegmentPlan": "streamwrite.table.plans",
    "build_index": "streamwrite.table.index",
    "drop_index": "streamwrite.table.index",
    "prune": "streamwrite.table.index",
    # compaction
    "CompactionPolicy": "streamwrite.options",
    "CompactionResult": "streamwrite.compaction.policy",
    "PartitionStatus": "streamwrite.layout.compaction",
    "SegmentInfo": "streamwrite.layout.compaction",
}
"""Each public name and the private module that defines (or re-exports) it."""

__all__ = (
    "ByteSource",
    "ChecksumError",
    "ColumnChunkMetaData",
    "ColumnSchema",
    "Commit",
    "CommitTicket",
    "CompactionPolicy",
    "CompactionResult",
    "ConfigError",
    "CorruptFileError",
    "DecryptionConfig",
    "DedupLog",
    "EncryptionError",
    "Executor",
    "FileEncryption",
    "FileMetaData",
    "FormatError",
    "InlineExecutor",
    "LimitError",
    "LiveFile",
    "ParquetFile",
    "ParquetSchemaView",
    "ParquetWriter",
    "PartitionStatus",
    "ProcessPool",
    "ReadPlan",
    "Retired",
    "RowGroupMetaData",
    "RowGroupPlan",
    "SchemaError",
    "Segment",
    "SegmentFiles",
    "SegmentInfo",
    "SegmentPlan",
    "SnapshotFileSystem",
    "SortingColumn",
    "StagedBatch",
    "StagedSegment",
    "StaleBatchError",
    "StateError",
    "Statistics",
    "StreamwriteError",
    "StreamwriteIOError",
    "Table",
    "TableCommit",
    "TablePlan",
    "TableSnapshot",
    "TxnRecord",
    "UnsupportedError",
    "WorkerError",
    "build_index",
    "drop_index",
    "open_table",
    "prune",
    "read_snapshot",
    "read_table",
    "snapshot_filesystem",
    "write_table",
)

if TYPE_CHECKING:
    from streamwrite.compaction.policy import CompactionResult
    from streamwrite.crypto.decryption import DecryptionConfig
    from streamwrite.crypto.encryption import FileEncryption
    from streamwrite.dataset import read_table
    from streamwrite.errors import (
        ChecksumError,
        ConfigError,
        CorruptFileError,
        EncryptionError,
        FormatError,
        LimitError,
        SchemaError,
        StaleBatchError,
        StateError,
        StreamwriteError,
        StreamwriteIOError,
        UnsupportedError,
        WorkerError,
    )
    from streamwrite.format.txn import DedupLog, Retired, Segment, TxnRecord
    from streamwrite.layout.appender import Commit
    from streamwrite.layout.compaction import PartitionStatus, SegmentInfo
    from streamwrite.live.file import LiveFile
    from streamwrite.options import CompactionPolicy, SortingColumn
    from streamwrite.pool.executor import Executor, InlineExecutor
    from streamwrite.pool.process import ProcessPool
    from streamwrite.reader.file import ParquetFile
    from streamwrite.reader.metadata import (
        ColumnChunkMetaData,
        ColumnSchema,
        FileMetaData,
        ParquetSchemaView,
        RowGroupMetaData,
        Statistics,
    )
    from streamwrite.reader.plan import ReadPlan, RowGroupPlan
    from streamwrite.reader.tail import ByteSource
    from streamwrite.table.api import (
        CommitTicket,
        Table,
        TableCommit,
        TableSnapshot,
        open_table,
        read_snapshot,
    )
    from streamwrite.table.index import build_index, drop_index, prune
    from streamwrite.table.plans import SegmentPlan, TablePlan
    from streamwrite.table.snapshot_fs import SnapshotFileSystem, snapshot_filesystem
    from streamwrite.table.staged import StagedBatch, StagedSegment
    from streamwrite.table.state import SegmentFiles
    from streamwrite.writer import ParquetWriter, write_table

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
