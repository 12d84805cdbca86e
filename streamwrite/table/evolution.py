"""Schema evolution of a table: which schema and encryption each segment has.

``Table.add_columns`` appends nullable columns to the table's schema and publishes the new
schema in a new ``_txn`` version (its ``"schemas"`` history, ``format/txn.py``). A live file's
schema cannot change (every committed prefix must stay a valid Parquet file), so each
segment keeps the schema it was created with: the change seals every partition's newest
segment, and the next row group of each partition starts a new segment written with the
wider schema. Rules::

    a segment's schema      one of the table's history (a prefix of the current schema); its
                            _pm header names its leaf columns (:func:`segment_column_names`;
                            a nested field's leaves by dotted path, :func:`leaf_names`)
    appending               only to a segment of the current schema: a reopened table whose
                            listed newest segment has an older schema starts a new segment
    encryption              a column added to an encrypted table is encrypted with the
                            footer key (``ENCRYPTION_WITH_FOOTER_KEY``), unless the key
                            source gives it (or, nested, a leaf of it) a key of its own;
                            never plaintext. A segment's
                            settings are derived from its columns (:func:`segment_encryption`),
                            so reopening checks each segment against the settings it was
                            written with
    reading                 older segments read as the current schema, nulls in the added
                            columns (``TableSnapshot.read``; compaction re-encodes them)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from streamwrite.arrow.schema import arrow_to_parquet, decode_arrow_schema
from streamwrite.arrow.schema_diff import schema_mismatch
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.crypto.kms import KeyWrapper
from streamwrite.errors import CorruptFileError
from streamwrite.format.sidecar.header import read_header
from streamwrite.format.txn import TxnRecord
from streamwrite.layout.actions import LiveFileName

__all__ = [
    "leaf_names",
    "older_schema_message",
    "schema_history",
    "segment_column_names",
    "segment_encryption",
]

_HEADER_READ_SIZE = 1 << 16
"""Bytes of ``_pm`` read first for its header (the whole file when the header is longer)."""


def schema_history(record: TxnRecord) -> list[pa.Schema]:
    """Returns: every schema of the table, oldest first (the last is the current one)."""
    return [decode_arrow_schema(schema) for _, schema in record.schema_history]


def leaf_names(schema: pa.Schema) -> tuple[str, ...]:
    """The leaf column names of ``schema`` as a segment's ``_pm`` header lists them (a flat
    column's name, a nested leaf's dotted path)."""
    return tuple(spec.name for spec in arrow_to_parquet(schema).columns)


def segment_column_names(directory: Path) -> tuple[str, ...]:
    """The leaf column names of the segment in ``directory``, from its ``_pm`` header (no key
    needed, nothing decrypted; blocking).

    Raises:
        CorruptFileError: the header is damaged.
        OSError: ``_pm`` cannot be read.
    """
    with open(directory / LiveFileName.PM.value, "rb") as f:
        data = f.read(_HEADER_READ_SIZE)
        try:
            header, _ = read_header(data)
        except CorruptFileError:
            if len(data) < _HEADER_READ_SIZE:
                raise
            header, _ = read_header(data + f.read())
    return tuple(column.name for column in header.columns)


def segment_encryption(
    encryption: FileEncryption | None, history: Sequence[pa.Schema], schema: pa.Schema
) -> FileEncryption | None:
    """The encryption settings of a segment of ``schema``, in a table created with
    ``encryption`` whose schema history is ``history``: the caller's settings, with every
    added column the key source gives no key of its own encrypted with the footer key (an
    added struct, list or map by its name, which covers its leaves; a leaf of it that the
    key source lists keeps its own key).

    Returns:
        ``encryption`` itself when the segment has no added column (so a table that never
        changed its schema uses the caller's settings unchanged); None for a plaintext table.

    Raises:
        ConfigError: as :class:`FileEncryption` (settings that contradict the key source).
    """
    if encryption is None:
        return None
    keys = encryption.keys
    listed = set(keys.config.column_keys if isinstance(keys, KeyWrapper) else keys.columns)
    original = set(history[0].names)
    footer = set(encryption.footer_key_columns)
    added = [n for n in schema.names if n not in original and n not in listed and n not in footer]
    if not added:
        return encryption
    return FileEncryption(
        keys,
        algorithm=encryption.algorithm,
        plaintext_footer=encryption.plaintext_footer,
        aad_prefix=encryption.aad_prefix,
        store_aad_prefix=encryption.store_aad_prefix,
        footer_key_columns=(*encryption.footer_key_columns, *added),
        v2_page_layout=encryption.v2_page_layout,
    )


def older_schema_message(directory: Path, record: TxnRecord, given: pa.Schema) -> str:
    """The error for :func:`~streamwrite.table.api.open_table` given ``given``, which is not
    the table's current schema: it says when ``given`` is an older schema of the history."""
    history = record.schema_history
    current = decode_arrow_schema(record.schema)
    for (_, schema), (version, _) in itertools.pairwise(history):
        if given.equals(decode_arrow_schema(schema), check_metadata=False):
            added = [name for name in current.names if name not in given.names]
            return (
                f"The table at {str(directory)!r} has schema {current}; the schema given is "
                f"the one it had before version {version}: columns {added} were added since "
                "(Table.add_columns). Pass the current schema, or None to take the table's."
            )
    first = schema_mismatch(current, given, "the table")
    return (
        f"{first or 'The schema given differs.'} The table at {str(directory)!r} has schema "
        f"{current}, not {given}."
    )
