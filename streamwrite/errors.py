"""The one exception hierarchy of streamwrite.

Every error the library raises on purpose derives from :class:`StreamwriteError`::

    StreamwriteError
    +-- ConfigError (ValueError)          bad option or argument value
    +-- SchemaError (ValueError)          a schema we cannot map, or data that does not fit it
    |   +-- UnsupportedError              valid Parquet/Arrow we do not implement (yet)
    +-- FormatError (ValueError)          bytes that are not valid Parquet / Thrift / an encoding
    |   +-- CorruptFileError              damage inside a file (carries the absolute offset)
    |   +-- ChecksumError                 a page CRC32 mismatch
    +-- LimitError (ValueError)           input would exceed a configured safety limit
    +-- EncryptionError                   a module fails to decrypt/authenticate, or keys are wrong
    +-- StreamwriteIOError (OSError)      an I/O step failed
    +-- StateError (RuntimeError)         the object is closed, busy, or poisoned by a failed write
    +-- StaleBatchError                   a batch id below the last one committed for its app id
    +-- WorkerError                       a pool worker died, could not start, or the pool closed

``UnsupportedError`` is also raised for codecs (LZO) and types (nested) we do not handle.
Every exception pickles and unpickles to an equal exception, so it survives the process pool.
Messages are complete sentences naming the offending value and where it was found; key bytes
never appear in a message.
"""

from __future__ import annotations

__all__ = [
    "ChecksumError",
    "ConfigError",
    "CorruptFileError",
    "EncryptionError",
    "FormatError",
    "LimitError",
    "SchemaError",
    "StaleBatchError",
    "StateError",
    "StreamwriteError",
    "StreamwriteIOError",
    "UnsupportedError",
    "WorkerError",
]


class StreamwriteError(Exception):
    """Root of every error streamwrite raises on purpose."""


class ConfigError(StreamwriteError, ValueError):
    """An option or argument has a value streamwrite cannot use."""


class SchemaError(StreamwriteError, ValueError):
    """A schema cannot be mapped, or data does not match the schema."""


class UnsupportedError(SchemaError):
    """Valid input that streamwrite does not implement (nested types, LZO, ...)."""


class FormatError(StreamwriteError, ValueError):
    """Bytes that are not valid Parquet, Thrift compact protocol or page encoding."""


class CorruptFileError(FormatError):
    """Damage inside a file. ``offset`` is the absolute byte offset where it was found, if known."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        super().__init__(message, offset)
        self.message = message
        self.offset = offset

    def __str__(self) -> str:
        if self.offset is None:
            return self.message
        return f"{self.message} (at byte offset {self.offset})"


class ChecksumError(CorruptFileError):
    """A page's CRC32 does not match its bytes."""


class LimitError(StreamwriteError, ValueError):
    """Input would exceed a safety limit (decompressed size, string length, nesting depth...)."""


class EncryptionError(StreamwriteError):
    """A module fails to decrypt or authenticate (wrong key, missing AAD prefix, tampered or
    moved bytes), or key material cannot be unwrapped. Messages name the module, never a key."""


class StreamwriteIOError(StreamwriteError, OSError):
    """An I/O step (write, fsync, read) failed."""


class StateError(StreamwriteError, RuntimeError):
    """The object cannot take this call in its state: it is closed, busy with another call, or
    poisoned by an earlier failed write or sync (that failure is chained as ``__cause__``).
    A poisoned object accepts nothing more; reopen it to recover to its last commit."""


class StaleBatchError(StreamwriteError):
    """A batch id is below the last one committed for its app id: not a replay (which is the
    last id itself), so most likely a query restarted from a new checkpoint under the same
    app id. ``app_id``, ``batch_id`` and ``last_batch_id`` name the conflict."""

    def __init__(self, app_id: str, batch_id: int, last_batch_id: int) -> None:
        super().__init__(app_id, batch_id, last_batch_id)
        self.app_id = app_id
        self.batch_id = batch_id
        self.last_batch_id = last_batch_id

    def __str__(self) -> str:
        return (
            f"Batch id {self.batch_id} of app id {self.app_id!r} is below the last committed "
            f"batch id {self.last_batch_id}: it is not a replay of the last batch, so its rows "
            "would be dropped. A query restarted from a new checkpoint needs a new app id; pass "
            "on_stale='skip' to skip such batches anyway."
        )


class WorkerError(StreamwriteError):
    """A pool worker died while running a job, could not start, or the pool is closed.

    An exception raised *inside* a worker by the job itself (a SchemaError, say) is not wrapped:
    it reaches the caller as its own class, with the worker's traceback as a note.
    """
