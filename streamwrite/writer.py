"""Single-file writing: ``write_table`` and ``ParquetWriter``, named as in ``pyarrow.parquet``.

The writer slices a table into row groups, turns each column slice into its physical form
(:mod:`streamwrite.schema`), encodes every column chunk through :func:`workers.run_job` (inline
here; the process pool uses the same entry point), and appends what the
:class:`~streamwrite.layout.file_writer.FileWriter` state machine returns.

With ``encryption=FileEncryption(...)`` the file is encrypted (spec 7.3): the writer opens one
:class:`~streamwrite.encryption.FileEncryptor` per file (fresh ``aad_file_unique``), each
column chunk's job carries its column's cipher and its row group and column ordinals (pages
and bloom filters are encrypted where the chunk is encoded), and the file writer encrypts
column metadata, page indexes and the footer.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

import pyarrow as pa

from streamwrite.encryption import FileEncryption, FileEncryptor
from streamwrite.errors import ConfigError, SchemaError, StreamwriteIOError
from streamwrite.layout.file_writer import FileWriter, chunk_settings
from streamwrite.options import WriteOptions, make_write_options
from streamwrite.schema import ParquetSchema, arrow_to_parquet, to_physical
from workers.chunk import EncodedChunk
from workers.jobs import EncodeChunkJob, run_job

__all__ = ["ParquetWriter", "write_table"]

Where = str | os.PathLike[str] | IO[bytes]


def as_table(
    data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch], schema: pa.Schema, owner: str
) -> pa.Table:
    """``data`` (a table, a batch or batches) as one table of ``schema``.

    Raises:
        SchemaError: the data's schema differs (metadata aside); ``owner`` names the target.
    """
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    elif not isinstance(data, pa.Table):
        data = pa.Table.from_batches(list(data), schema=schema)
    if not data.schema.equals(schema, check_metadata=False):
        raise SchemaError(f"Appended data has schema {data.schema}, {owner} has {schema}.")
    return data


def row_group_jobs(
    table: pa.Table,
    schema: ParquetSchema,
    options: WriteOptions,
    encryptor: FileEncryptor | None = None,
    row_group_ordinal: int = 0,
) -> list[EncodeChunkJob]:
    """One encoding job per column of ``table`` (one row group), in schema order.

    Args:
        table: The row group's rows.
        schema: The file's schema.
        options: The write options.
        encryptor: The file's encryption state, when the file is encrypted.
        row_group_ordinal: The ordinal the row group will have in the file (used in the
            module AADs of encrypted columns).

    Returns:
        The jobs, ready for :func:`workers.jobs.run_job` or an executor.

    Raises:
        LimitError: An encrypted file's ``row_group_ordinal`` exceeds 32767.
    """
    if encryptor is not None:
        encryptor.check_row_group_ordinal(row_group_ordinal)
    jobs = []
    for ordinal, (spec, column) in enumerate(zip(schema.columns, table.columns, strict=True)):
        physical = to_physical(column, spec)
        jobs.append(
            EncodeChunkJob(
                settings=chunk_settings(spec, options),
                values=physical.values,
                def_levels=physical.def_levels,
                num_rows=physical.num_rows,
                crypto=(
                    None
                    if encryptor is None
                    else encryptor.chunk_crypto(row_group_ordinal, ordinal)
                ),
            )
        )
    return jobs


def encode_row_group(
    table: pa.Table,
    schema: ParquetSchema,
    options: WriteOptions,
    run: Callable[[EncodeChunkJob], EncodedChunk] = run_job,
    encryptor: FileEncryptor | None = None,
    row_group_ordinal: int = 0,
) -> list[EncodedChunk]:
    """Encode every column of ``table`` (one row group) into column chunks, in schema order.

    ``encryptor`` and ``row_group_ordinal`` as in :func:`row_group_jobs`.

    Returns:
        One encoded chunk per column.

    Raises:
        LimitError: An encrypted file's ``row_group_ordinal`` exceeds 32767.
    """
    jobs = row_group_jobs(table, schema, options, encryptor, row_group_ordinal)
    return [run(job) for job in jobs]


class ParquetWriter:
    """Write a Parquet file from tables or record batches of one schema.

    ``ParquetWriter(where, schema, encryption=None, **options)`` takes the keyword arguments of
    :func:`write_table`. Use it as a context manager or call :meth:`close`, which writes the
    footer; until then the file is incomplete.

    Raises:
        ConfigError: Bad option values, or encryption settings naming unknown columns.
        EncryptionError: The KMS fails to wrap a data key.
        StreamwriteIOError: The file cannot be opened.
    """

    def __init__(
        self,
        where: Where,
        schema: pa.Schema,
        *,
        encryption: FileEncryption | None = None,
        **options: Any,
    ) -> None:
        self.schema = arrow_to_parquet(schema)
        self.options = make_write_options(schema.names, **options)
        if encryption is not None and not isinstance(encryption, FileEncryption):
            raise ConfigError(
                f"encryption must be a FileEncryption, not a {type(encryption).__name__}."
            )
        self._encryptor = (
            None
            if encryption is None
            else encryption.open_file([spec.name for spec in self.schema.columns])
        )
        self._writer = FileWriter(self.schema, self.options, encryptor=self._encryptor)
        self._owns_file = isinstance(where, str | os.PathLike)
        self._file: IO[bytes]
        if isinstance(where, str | os.PathLike):
            try:
                self._file = open(Path(where), "wb")  # noqa: SIM115 - closed in close()
            except OSError as exc:
                raise StreamwriteIOError(f"Cannot open {where!r} for writing: {exc}.") from exc
        else:
            self._file = where
        self._closed = False
        self._write(self._writer.start())

    def _write(self, data: bytes) -> None:
        try:
            self._file.write(data)
        except OSError as exc:
            raise StreamwriteIOError(f"Writing to the Parquet file failed: {exc}.") from exc

    def write_table(self, table: pa.Table, row_group_size: int | None = None) -> None:
        """Append ``table`` as row groups of at most ``row_group_size`` rows.

        Raises:
            SchemaError: The table's schema differs from the writer's.
            LimitError: An encrypted file would get more than 32768 row groups (nothing of
                the refused row group is written).
            StreamwriteIOError: Writing fails.
        """
        if not table.schema.equals(self.schema.arrow_schema, check_metadata=False):
            raise SchemaError(
                f"Table schema {table.schema} does not match the writer's schema "
                f"{self.schema.arrow_schema}."
            )
        size = row_group_size or self.options.row_group_size
        for start in range(0, table.num_rows, size):
            piece = table.slice(start, size)
            chunks = encode_row_group(
                piece,
                self.schema,
                self.options,
                encryptor=self._encryptor,
                row_group_ordinal=len(self._writer.row_groups),
            )
            self._write(self._writer.add_row_group(chunks, piece.num_rows))

    def write_batch(self, batch: pa.RecordBatch) -> None:
        """Append one record batch as a row group (or several, if it exceeds the row group size)."""
        self.write_table(pa.Table.from_batches([batch]))

    def write(self, data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch]) -> None:
        """Append a table, a batch or an iterable of batches."""
        if isinstance(data, pa.Table):
            self.write_table(data)
        elif isinstance(data, pa.RecordBatch):
            self.write_batch(data)
        else:
            for batch in data:
                self.write_batch(batch)

    def close(self) -> None:
        """Write the footer and close the file (if this writer opened it)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._write(self._writer.footer())
            self._file.flush()
        finally:
            if self._owns_file:
                self._file.close()

    def __enter__(self) -> ParquetWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def write_table(
    table: pa.Table, where: Where, *, encryption: FileEncryption | None = None, **options: Any
) -> None:
    """Write ``table`` to a Parquet file at ``where`` (a path or a binary file object).

    Keyword arguments, as ``pyarrow.parquet.write_table``: ``row_group_size``,
    ``compression`` (default ``"zstd"``), ``compression_level``, ``data_page_size``,
    ``data_page_row_limit``, ``data_page_version`` (``"1.0"`` or ``"2.0"``), ``use_dictionary``,
    ``column_encoding``, ``write_statistics``, ``write_page_index``, ``write_page_checksum``,
    ``bloom_filter_options`` (``{column: {"ndv": int, "fpp": float}}`` or ``{column: True}``),
    ``sorting_columns``, ``key_value_metadata``, ``dictionary_pagesize_limit``,
    ``statistics_truncate_length``; and ``encryption``, a
    :class:`~streamwrite.encryption.FileEncryption` to encrypt the file (Parquet modular
    encryption).

    Raises:
        ConfigError: bad option values, or encryption settings naming unknown columns.
        EncryptionError: the KMS fails to wrap a data key.
        LimitError: an encrypted file would get more than 32768 row groups.
        SchemaError: a type streamwrite cannot write (``UnsupportedError`` for nested types).
        StreamwriteIOError: the file cannot be written.
    """
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    with ParquetWriter(where, table.schema, encryption=encryption, **options) as writer:
        writer.write_table(table)
