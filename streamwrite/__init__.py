"""streamwrite: streaming Parquet ingest into live files every reader can read.

The public names are re-exported lazily, so that a worker process importing
``streamwrite.format`` does not load pyarrow readers or the async stack.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Commit": "streamwrite.layout.appender",
    "DecryptionConfig": "streamwrite.crypto.decryption",
    "EncryptionError": "streamwrite.errors",
    "FileEncryption": "streamwrite.crypto.encryption",
    "InlineExecutor": "streamwrite.pool.process",
    "ProcessPool": "streamwrite.pool.process",
    "WorkerError": "streamwrite.pool.process",
    "CompactionPolicy": "streamwrite.compaction.policy",
    "Table": "streamwrite.table.api",
    "TableCommit": "streamwrite.table.api",
    "TableSnapshot": "streamwrite.table.api",
    "open_table": "streamwrite.table.api",
    "read_snapshot": "streamwrite.table.api",
    "LiveFile": "streamwrite.live.file",
    "Snapshot": "streamwrite.live.info",
    "ParquetFile": "streamwrite.reader.file",
    "read_table": "streamwrite.reader.file",
    "ParquetWriter": "streamwrite.writer",
    "write_table": "streamwrite.writer",
    "snapshot_filesystem": "streamwrite.table.snapshot_fs",
    "SortingColumn": "streamwrite.options",
    "StreamwriteError": "streamwrite.errors",
    "ConfigError": "streamwrite.errors",
    "SchemaError": "streamwrite.errors",
    "UnsupportedError": "streamwrite.errors",
    "FormatError": "streamwrite.errors",
    "CorruptFileError": "streamwrite.errors",
    "ChecksumError": "streamwrite.errors",
    "LimitError": "streamwrite.errors",
    "StreamwriteIOError": "streamwrite.errors",
    "StateError": "streamwrite.errors",
    "StaleBatchError": "streamwrite.errors",
}

__all__ = [
    "ChecksumError",
    "Commit",
    "CompactionPolicy",
    "ConfigError",
    "CorruptFileError",
    "DecryptionConfig",
    "EncryptionError",
    "FileEncryption",
    "FormatError",
    "InlineExecutor",
    "LimitError",
    "LiveFile",
    "ParquetFile",
    "ParquetWriter",
    "ProcessPool",
    "SchemaError",
    "Snapshot",
    "SortingColumn",
    "StaleBatchError",
    "StateError",
    "StreamwriteError",
    "StreamwriteIOError",
    "Table",
    "TableCommit",
    "TableSnapshot",
    "UnsupportedError",
    "WorkerError",
    "open_table",
    "read_snapshot",
    "read_table",
    "snapshot_filesystem",
    "write_table",
]

if TYPE_CHECKING:
    from streamwrite.compaction.policy import CompactionPolicy
    from streamwrite.crypto.decryption import DecryptionConfig
    from streamwrite.crypto.encryption import FileEncryption
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
    )
    from streamwrite.layout.appender import Commit
    from streamwrite.live.file import LiveFile
    from streamwrite.live.info import Snapshot
    from streamwrite.options import SortingColumn
    from streamwrite.pool.process import InlineExecutor, ProcessPool, WorkerError
    from streamwrite.reader.file import ParquetFile, read_table
    from streamwrite.table.api import Table, TableCommit, TableSnapshot, open_table, read_snapshot
    from streamwrite.table.snapshot_fs import snapshot_filesystem
    from streamwrite.writer import ParquetWriter, write_table


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'streamwrite' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
