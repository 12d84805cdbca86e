"""``read_table``: one entry point for a Parquet file, a live file, a table or a directory.

Dispatch on what ``source`` is::

    bytes / file object / file path      -> ParquetFile(source, snapshot=).read()
    live-file directory (data.parquet)   -> ParquetFile(directory, snapshot=).read()  newest commit
    table directory (_txn)               -> the newest table snapshot, partition by partition
                                            (cold segments from its cold storage)
    table URL (s3://..., any scheme://)  -> the newest version the table published to its
                                            cold storage (streamwrite.table.remote)
    directory of plain *.parquet files   -> read_plain_directory (pyarrow's dataset rules)

The dataset layer sits above the reader and the table (DESIGN section 2), so neither of them
imports the other to read what the other wrote.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.errors import ConfigError
from streamwrite.options import public_keywords
from streamwrite.reader.directory import DirectoryKind, classify_directory, read_plain_directory
from streamwrite.reader.file import ParquetFile
from streamwrite.reader.tail import Source
from streamwrite.table.remote import is_table_url
from streamwrite.table.state import read_snapshot

__all__ = ["read_table"]


@public_keywords("streamwrite.read_table")
def read_table(
    source: Source,
    *,
    columns: Sequence[str] | None = None,
    verify_checksums: bool = True,
    max_decompressed_page_size: int | None = None,
    snapshot: int | None = None,
    decryption: DecryptionConfig | None = None,
    filters: object = None,
    storage_options: Mapping[str, Any] | None = None,
) -> pa.Table:
    """Read a Parquet file, a live file or a table, or a directory of plain Parquet files.

    ``source`` is a path, a binary file object, the bytes, a live-file directory (read at
    its newest commit), a table directory (its newest ``_txn`` version; segments tiered to
    cold storage are read from there by byte ranges), a table URL (``"s3://bucket/prefix"``,
    any fsspec URL: the newest version the table published there, as a reader on another
    machine sees it; ``storage_options`` are the fsspec keyword arguments reaching it), or a
    directory of
    plain Parquet files (as ``pyarrow.parquet.write_to_dataset`` makes: every ``*.parquet``
    under it, names starting with ``_`` or ``.`` skipped, in sorted path order, Hive
    ``key=value`` directories added as columns as pyarrow adds them). ``snapshot`` (a
    committed ``data.parquet`` size, e.g. ``Commit.parquet_size``) reads exactly that prefix of
    a file or live file. ``decryption`` holds the keys of an encrypted file.

    ``filters`` keeps only the rows matching them: pyarrow's DNF (``[("x", "<", 3)]``,
    ``[[...], [...]]``, as ``pyarrow.parquet.read_table(filters=)``) or a
    ``pyarrow.compute.Expression``. The result is
    the full read filtered with them, same rows in the same order; what cannot match is
    skipped unread (row groups by statistics, bloom filters and the embedded index, pages by
    the page index; a directory's Hive columns; a table's partitions and segments).

    Returns:
        The rows as a ``pyarrow.Table``.

    Raises:
        CorruptFileError: damaged file (ChecksumError for a CRC mismatch), with the offset.
        LimitError: a page over the decompressed size limit.
        EncryptionError: an encrypted file without ``decryption`` (or an encrypted column of a
            plaintext-footer file), a wrong key or AAD prefix, a tampered or moved module.
        UnsupportedError: nested columns, external key material, LZO.
        SchemaError: ``columns`` or ``filters`` names a column the file does not have; the
            files of a directory do not share one schema (the message names the first that
            differs).
        ConfigError: a non-positive ``max_decompressed_page_size``; a directory that is none
            of the above (the message says what it lacks for each); a filter that cannot be
            represented, or a literal that does not compare with its column; ``snapshot=``
            or ``storage_options`` where they do not apply.
        StreamwriteIOError: a table URL with no published version (``errno`` ``ENOENT``), or
            cold storage that cannot be reached.
    """
    options = {
        "verify_checksums": verify_checksums,
        "max_decompressed_page_size": max_decompressed_page_size,
        "decryption": decryption,
    }
    table_options: dict[str, Any] = {"decryption": decryption}
    if filters is not None:
        table_options["filters"] = filters  # TableSnapshot.read(filters=), issue 14
    selected = None if columns is None else list(columns)
    if is_table_url(source):
        assert isinstance(source, str)
        if snapshot is not None:
            raise ConfigError(
                f"snapshot= pins a committed size of one live file; {source!r} is a table URL "
                "(read_snapshot(url) pins a version)."
            )
        return read_snapshot(source, storage_options=storage_options).read(
            selected, **table_options
        )
    if isinstance(source, str | os.PathLike) and Path(source).is_dir():
        directory = Path(source)
        kind = classify_directory(directory)
        if kind is DirectoryKind.TABLE:
            if snapshot is not None:
                raise ConfigError("A table is pinned with Table.snapshot(), not snapshot=.")
            found = read_snapshot(directory, storage_options=storage_options)
            return found.read(selected, **table_options)
        if kind is DirectoryKind.PLAIN:
            if snapshot is not None:
                raise ConfigError(
                    f"snapshot= pins a committed size of one live file; {str(directory)!r} is "
                    "a directory of plain Parquet files."
                )
            return read_plain_directory(directory, columns, filters, **options)
    if storage_options is not None:
        what = repr(os.fspath(source)) if isinstance(source, str | os.PathLike) else "the source"
        raise ConfigError(
            f"storage_options reach a table's cold storage or a table URL; {what} is neither."
        )
    with ParquetFile(source, snapshot=snapshot, **options) as pf:  # type: ignore[arg-type]
        return pf.read(columns, filters=filters)
