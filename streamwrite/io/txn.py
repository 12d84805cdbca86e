"""Reading a table's ``_txn`` (blocking): every reader of a table goes through :func:`read_txn`.

A writer updates a format-4 ``_txn`` in place, one slot per commit
(:mod:`streamwrite.format.txn`), so a read that overlaps a commit may find that slot torn: it
decodes the other slot, the previous version. Only a read overlapping two commits (the writer
rewrote both slots while it ran) finds no slot intact; the file changed meanwhile, so the read
is tried again. A file that reads the same twice and decodes to nothing is damaged.
"""

from __future__ import annotations

import functools
from pathlib import Path

from streamwrite.errors import CorruptFileError
from streamwrite.format.txn import TXN_FILE, TxnRecord, decode_txn

__all__ = ["read_txn"]

READ_ATTEMPTS = 5


@functools.lru_cache(maxsize=8)
def _decode_shared(data: bytes) -> TxnRecord:
    """:func:`decode_txn` of ``data``, remembered: readers that query one table version many
    times decode (and check) its record once. The record is shared: read it, never change it."""
    return decode_txn(data)


def read_txn(directory: Path, *, shared: bool = False) -> TxnRecord:
    """The newest committed record of the table in ``directory`` (``shared``: a record
    decoded from the same bytes before may be returned, for readers that do not change it).

    Returns:
        The record (format 2, 3 or 4).

    Raises:
        FileNotFoundError: there is no ``_txn``.
        CorruptFileError: ``_txn`` is damaged (the same bytes twice, neither decoding).
        OSError: ``_txn`` cannot be read.
    """
    decode = _decode_shared if shared else decode_txn
    path = directory / TXN_FILE
    data = path.read_bytes()
    for _ in range(READ_ATTEMPTS - 1):
        try:
            return decode(data)
        except CorruptFileError:
            again = path.read_bytes()
            if again == data:
                raise
            data = again
    return decode(data)
