"""Single-file writing: ``write_table`` and ``ParquetWriter``, named as in ``pyarrow.parquet``.

The writer slices a table into row groups, turns each into one job per column chunk
(:func:`streamwrite.encode.row_group_jobs`, which every writer shares), runs the jobs through
:func:`workers.run_job` (inline here; the process pool uses the same entry point), and appends
what the :class:`~streamwrite.layout.file_writer.FileWriter` state machine returns.

With ``encryption=FileEncryption(...)`` the file is encrypted (spec 7.3): the writer opens one
:class:`~streamwrite.crypto.encryption.FileEncryptor` per file (fresh ``aad_file_unique``), each
column chunk's job carries its column's cipher and its row group and column ordinals (pages
and bloom filters are encrypted where the chunk is encoded), and the file writer encrypts
column metadata, page indexes and the footer.

A failed write never destroys data. Every option (and the encryption settings) is checked
before the path is touched. A path target is written to a hidden temporary file beside it,
``.<name>.<random hex>.tmp`` (no engine's glob or dataset discovery picks it up), which
:meth:`ParquetWriter.close` renames over the target only once the file is complete::

    write magic, row groups, footer -> flush -> fsync(file) -> rename(temp, target)
                                    -> fsync(directory)

so a failure or a crash at any point leaves a file already at the path byte-identical (a
crash, which runs no cleanup, may leave the ``.tmp`` file behind). A file-object target
(``IO[bytes]``) is written directly, and the caller owns what a failure leaves in it.

``ParquetWriter`` states::

    open --write_table ok / input refused before any byte of it is written--> open
    open --I/O error (or any error once bytes of the call reached the file)--> failed
    open --close()--> closed (published)        failed --close()--> closed (discarded)
    open --abort() / with-block left on an exception--> closed (discarded)

Input refused before anything is written (a ``SchemaError`` such as a null in a REQUIRED column
or a schema mismatch, a ``ConfigError``, a ``LimitError``) leaves the writer open: the whole
table's values are checked (:func:`~streamwrite.encode.check_values`) before its first row
group is written, so a bad value in its last row group writes nothing of it. In the failed
state every call raises :class:`~streamwrite.errors.StateError` chained to the failure;
``close()`` writes no footer, removes the temporary file and raises that ``StateError``. A
closed writer refuses writes.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

import pyarrow as pa

from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.encode import (
    EncodingPlanner,
    as_table,
    attach_index_parts,
    check_values,
    check_write_options,
    row_group_jobs,
)
from streamwrite.errors import ConfigError, StateError, StreamwriteIOError
from streamwrite.io.local import fsync_directory
from streamwrite.layout.file_writer import FileWriter
from streamwrite.options import (
    check_option_names,
    check_positive_int,
    make_write_options,
)
from workers.jobs import run_job

__all__ = ["ParquetWriter", "write_table"]

Where = str | os.PathLike[str] | IO[bytes]


class _Target:
    """Where the bytes go: a file object, written directly (the caller owns it)."""

    def __init__(self, file: IO[bytes], name: str = "the file object") -> None:
        self.file = file
        self.name = name
        self.left_as_it_was = "no footer was written to it"

    def write(self, data: bytes) -> None:
        written = self.file.write(data)
        while isinstance(written, int) and written < len(data):  # a raw file's short write
            if written <= 0:
                raise OSError(f"the file object took {written} of {len(data)} bytes")
            data = data[written:]
            written = self.file.write(data)

    def publish(self) -> None:
        self.file.flush()

    def discard(self) -> None:
        """Nothing to undo: the caller owns the file object."""


class _PathTarget(_Target):
    """A hidden temporary file beside ``target``, renamed over it by :meth:`publish`."""

    def __init__(self, where: str | os.PathLike[str]) -> None:
        name = repr(os.fspath(where))
        self.target = Path(os.path.realpath(where))  # through a symlink, as open() would go
        self.temp = self.target.with_name(f".{self.target.name}.{secrets.token_hex(8)}.tmp")
        if self.target.is_dir():
            raise StreamwriteIOError(f"Cannot write a Parquet file at {name}: a directory.")
        try:
            file = open(self.temp, "xb")  # noqa: SIM115 - closed by publish() or discard()
        except OSError as exc:
            raise StreamwriteIOError(f"Cannot open {name} for writing: {exc}.") from exc
        super().__init__(file, name)
        self.left_as_it_was = f"a file already at {name} was left as it was"
        try:
            os.chmod(self.temp, stat.S_IMODE(self.target.stat().st_mode))  # keep the old mode
        except FileNotFoundError:
            pass
        except OSError as exc:
            self.discard()
            raise StreamwriteIOError(f"Cannot open {name} for writing: {exc}.") from exc

    def publish(self) -> None:
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        os.replace(self.temp, self.target)
        self.left_as_it_was = f"the complete new file is at {self.name}"
        try:
            fsync_directory(self.target.parent)
        except OSError as exc:
            raise StreamwriteIOError(
                f"The file {self.name} is complete and in place, but syncing its directory "
                f"failed ({exc}): the rename may not survive a crash."
            ) from exc

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.file.close()  # flushes what it buffers: that may fail again
        self.temp.unlink(missing_ok=True)


class ParquetWriter:
    """Write a Parquet file from tables or record batches of one schema.

    ``ParquetWriter(where, schema, encryption=None, **options)`` takes the keyword arguments of
    :func:`write_table`. Use it as a context manager or call :meth:`close`, which writes the
    footer and publishes the file; until then a path holds what it held before.

    Unlike ``pyarrow.parquet.ParquetWriter``, leaving the ``with`` block on an exception does
    not publish a partial file: the writer is aborted and a file already at the path stays as
    it was. After a failed write or sync every call raises
    :class:`~streamwrite.errors.StateError`; input refused before anything is written leaves
    the writer usable (the module docstring has the state rules). A file object given as
    ``where`` is written directly and never closed by the writer.

    Raises:
        TypeError: A keyword argument that is not an option.
        ConfigError: Bad option values, or encryption settings naming unknown columns.
        SchemaError: A type streamwrite cannot write (``UnsupportedError``: unions, empty
            structs...).
        EncryptionError: The KMS fails to wrap a data key.
        StreamwriteIOError: The temporary file cannot be created.
    """

    def __init__(
        self,
        where: Where,
        schema: pa.Schema,
        *,
        encryption: FileEncryption | None = None,
        **options: Any,
    ) -> None:
        check_option_names(options, "ParquetWriter", ("encryption",))
        self.schema = arrow_to_parquet(schema)
        self.options = make_write_options(
            [spec.path_in_schema for spec in self.schema.columns], caller="ParquetWriter", **options
        )
        check_write_options(self.schema, self.options)
        if encryption is not None and not isinstance(encryption, FileEncryption):
            raise ConfigError(
                f"encryption must be a FileEncryption, not a {type(encryption).__name__}."
            )
        self._encryptor = (
            None
            if encryption is None
            else encryption._open_file([spec.path_in_schema for spec in self.schema.columns])
        )
        self._writer = FileWriter(self.schema, self.options, encryptor=self._encryptor)
        self._planner = EncodingPlanner()  # each column's encoding decided once, re-sampled
        self._failure: BaseException | None = None
        self._closed = False
        # Everything above only checks; from here on the target is touched.
        self._target = (
            _PathTarget(where) if isinstance(where, str | os.PathLike) else _Target(where)
        )
        try:
            self._target.write(self._writer.start())
        except OSError as exc:
            self._target.discard()
            raise StreamwriteIOError(f"Writing to {self._target.name} failed: {exc}.") from exc

    def _check_open(self) -> None:
        if self._failure is not None:
            closed = " and is closed" if self._closed else ""
            raise StateError(
                f"This ParquetWriter of {self._target.name} failed ({self._failure}){closed}: "
                f"it takes no more calls; {self._target.left_as_it_was}."
            ) from self._failure
        if self._closed:
            raise StateError(f"This ParquetWriter of {self._target.name} is closed.")

    def _fail(self, exc: BaseException) -> BaseException:
        """Enter the failed state; returns the exception to raise (an ``OSError`` becomes a
        :class:`StreamwriteIOError` chained to it)."""
        error = exc
        if isinstance(exc, OSError) and not isinstance(exc, StreamwriteIOError):
            error = StreamwriteIOError(f"Writing {self._target.name} failed: {exc}.")
            error.__cause__ = exc
        self._failure = error
        return error

    def write_table(
        self, table: pa.Table | pa.RecordBatch, row_group_size: int | None = None
    ) -> None:
        """Append ``table`` as row groups of at most ``row_group_size`` rows.

        The whole table's values are checked first: input refused raises before any byte of
        it is written, and the writer stays usable.

        Raises:
            StateError: The writer is closed, or failed earlier (chained to that failure).
            SchemaError: The table's schema differs from the writer's (the message names the
                first column that differs), or a value does not fit (a null in a REQUIRED
                column, a decimal beyond its precision...).
            ConfigError: ``row_group_size`` is not a positive integer.
            LimitError: An encrypted file would get more than 32768 row groups.
            StreamwriteIOError: Writing fails; the writer is failed from then on.
        """
        self._check_open()
        table = as_table(table, self.schema.arrow_schema, "the writer's schema")
        size = (
            self.options.row_group_size
            if row_group_size is None
            else check_positive_int("row_group_size", row_group_size)
        )
        pieces = [table.slice(start, size) for start in range(0, table.num_rows, size)]
        first = len(self._writer.row_groups)
        if self._encryptor is not None and pieces:
            self._encryptor.check_row_group_ordinal(first + len(pieces) - 1)
        check_values(table, self.schema)
        try:
            for i, piece in enumerate(pieces):
                jobs = row_group_jobs(
                    piece, self.schema, self.options, self._encryptor, first + i, self._planner
                )
                chunks = [run_job(job) for job in jobs]
                self._planner.observe(chunks)
                chunks = attach_index_parts(chunks, piece, self.options)
                self._target.write(self._writer.add_row_group(chunks, piece.num_rows))
        except BaseException as exc:
            if len(self._writer.row_groups) == first:
                raise  # nothing of this call was accounted or written: still usable
            error = self._fail(exc)  # a partial table is in the file: never publish it
            if error is exc:
                raise
            raise error from exc

    def write_batch(self, batch: pa.RecordBatch) -> None:
        """Append one record batch as a row group (or several, if it exceeds the row group size).

        Raises:
            As :meth:`write_table`.
        """
        self.write_table(batch)

    def write(self, data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch]) -> None:
        """Append a table, a batch or an iterable of batches.

        The batches of an iterable are written one by one as it yields them: a batch refused
        raises with the batches before it written (and the writer usable).

        Raises:
            As :meth:`write_table`.
        """
        self._check_open()
        if isinstance(data, pa.Table | pa.RecordBatch):
            self.write_table(data)
        else:
            for batch in data:
                self.write_batch(batch)

    def close(self) -> None:
        """Write the footer and publish the file: flush, fsync, rename it over the path and
        fsync the directory (a file object is flushed, never closed). A second call does
        nothing.

        Raises:
            StateError: The writer failed earlier: no footer is written, the temporary file
                is removed and a file already at the path is left as it was.
            StreamwriteIOError: Writing the footer or a sync fails: nothing is published (but
                for a failed sync of the directory after the rename, which the message says).
        """
        if self._closed:
            return
        self._closed = True
        if self._failure is not None:
            self._target.discard()
            self._check_open()
        try:
            self._target.write(self._writer.footer())
            self._target.publish()
        except BaseException as exc:
            self._target.discard()
            error = self._fail(exc)
            if error is exc:
                raise
            raise error from exc

    def abort(self) -> None:
        """Discard the file: no footer, the temporary file is removed and a file already at
        the path stays as it was (a file object keeps what was written to it). The writer is
        closed; a second call, or a call after :meth:`close`, does nothing."""
        if self._closed:
            return
        self._closed = True
        self._target.discard()

    def __enter__(self) -> ParquetWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc_info: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_table(
    table: pa.Table | pa.RecordBatch,
    where: Where,
    *,
    encryption: FileEncryption | None = None,
    **options: Any,
) -> None:
    """Write ``table`` to a Parquet file at ``where`` (a path or a binary file object).

    Keyword arguments, as ``pyarrow.parquet.write_table``: ``row_group_size``,
    ``compression`` (default ``"zstd"``; also ``"snappy"``, ``"gzip"``, ``"brotli"``,
    ``"lz4"``/``"lz4_raw"``, ``None``), ``compression_level``, ``data_page_size``,
    ``data_page_row_limit``, ``data_page_version`` (``"1.0"`` or ``"2.0"``), ``use_dictionary``,
    ``column_encoding``, ``write_statistics``, ``write_page_index``, ``write_page_checksum``,
    ``bloom_filter_options`` (``{column: {"ndv": int, "fpp": float}}`` or ``{column: True}``),
    ``sorting_columns``, ``key_value_metadata``, ``dictionary_pagesize_limit``,
    ``statistics_truncate_length``; and ``encryption``, a
    :class:`~streamwrite.crypto.encryption.FileEncryption` to encrypt the file (Parquet modular
    encryption).

    A path is written to a temporary file beside it and renamed into place once complete:
    whatever fails, a file already at the path stays byte-identical. A file object is written
    directly.

    Raises:
        TypeError: A keyword argument that is not an option (naming the closest one).
        ConfigError: Bad option values, or encryption settings naming unknown columns.
        EncryptionError: The KMS fails to wrap a data key.
        LimitError: An encrypted file would get more than 32768 row groups.
        SchemaError: A type streamwrite cannot write (``UnsupportedError``: unions, empty
            structs...).
            or a value that does not fit its column (a null in a REQUIRED column...).
        StreamwriteIOError: The file cannot be written.
    """
    check_option_names(options, "write_table", ("encryption",))
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if not isinstance(table, pa.Table):
        raise ConfigError(
            f"write_table() writes a pyarrow Table or RecordBatch, not a {type(table).__name__}."
        )
    with ParquetWriter(where, table.schema, encryption=encryption, **options) as writer:
        writer.write_table(table)
