"""Opening one segment of a table snapshot, wherever its bytes are: the local disk or cold storage.

Every reader of a snapshot (``TableSnapshot.read`` and ``plan``, the pruned scan, the snapshot
filesystem, the Spark data source) opens segments through
:meth:`streamwrite.table.state.TableSnapshot.open_segment`, which picks one of the two
functions here from what ``_txn`` says of the segment (:attr:`Segment.is_cold`)::

    local  <table>/<partition>/<segment>/{data.parquet | _data.retired, _pm}
           open_local_segment: the live file at its committed size, _pm's CRC and its
           record of the footer's XXH64 checked; when _pm is unreadable (inside a table _pm
           is no commit point: a power loss may leave its header ahead of its blocks) the
           data file alone, if the footer ending at the committed size has the XXH64 _txn
           recorded
    cold   <cold root>/<partition>/<segment>/data.parquet, an object of exactly the size
           _txn records, immutable once published
           open_cold_segment: ParquetFile(RangeSource(...)): the tail (footer) in one
           request, then only the column chunks a read needs (streamwrite.io.remote); the
           footer's XXH64 checked against _txn's when it recorded one

What is checked of a cold object: that it has at least the recorded size (a shorter object,
or a missing one, is :class:`~streamwrite.errors.CorruptFileError`: committed data is gone),
the footer's XXH64 when recorded, then everything ``ParquetFile`` checks (magic, footer, schema,
page CRCs as pages are read). The XXH64 of the whole object (``Segment.object_xxh64``) is
checked by the tiering when it uploads, not by readers: it would need every byte.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.errors import ChecksumError, CorruptFileError, StreamwriteIOError
from streamwrite.format.sidecar.codec import parquet_footer_checksum
from streamwrite.format.txn import cold_object_key
from streamwrite.io.remote import ObjectStore, RangeSource
from streamwrite.io.txn import read_txn
from streamwrite.reader.file import ParquetFile
from streamwrite.table.paths import _missing, segment_data_path

__all__ = ["footer_checksum", "open_cold_segment", "open_local_segment"]


def footer_checksum(read: Callable[[int, int], bytes | memoryview], size: int) -> int | None:
    """The XXH64 of the Parquet tail (footer, its length and the magic) ending at ``size``,
    read through ``read(offset, size)``; None when no footer fits there."""
    if size < 12:
        return None
    footer_size = int.from_bytes(bytes(read(size - 8, 4)), "little") + 8
    if footer_size > size - 4:
        return None
    return parquet_footer_checksum(bytes(read(size - footer_size, footer_size)))


class _FileSource:
    """The first ``size`` bytes of an open file descriptor, as a reader's byte source (it
    owns the descriptor: a segment retired and deleted after it was opened stays readable)."""

    verify_head = True

    def __init__(self, fd: int, size: int) -> None:
        self._fd = fd
        self.size = size

    def read(self, offset: int, size: int) -> bytes:
        data = os.pread(self._fd, size, offset)
        if len(data) != size:
            raise CorruptFileError(f"Short read: {len(data)} of {size} bytes.", offset)
        return data

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _open_data_file(directory: Path) -> int:
    """A descriptor of the segment's data file (``data.parquet``, or ``_data.retired`` once
    retired: the rename goes one way, so asking again after a miss finds it)."""
    for _ in range(3):
        try:
            return os.open(segment_data_path(directory), os.O_RDONLY)
        except FileNotFoundError:
            continue
    raise _missing(directory)


def _tiered_since(
    table_path: Path, name: str, size: int, storage_options: Mapping[str, Any] | None
) -> ObjectStore | None:
    """The cold storage of segment ``name`` at ``size`` if the table's newest ``_txn`` lists
    it as cold (tiered after the caller's snapshot), else None."""
    try:
        now = read_txn(table_path, shared=True)
    except (OSError, CorruptFileError):
        return None
    partition, _, segment = name.partition("/")
    listed = now.partitions.get(partition, ())
    if now.cold is None or not any(
        s.name == segment and s.size == size and s.is_cold for s in listed
    ):
        return None
    return ObjectStore(now.cold, storage_options)


def open_local_segment(
    table_path: Path,
    name: str,
    size: int,
    footer_xxh64: int | None,
    decryption: DecryptionConfig | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> ParquetFile:
    """Segment ``name`` (``partition/segment``) of the local table at ``table_path``, at its
    committed ``size`` (module docstring). A segment whose directory is gone because it was
    tiered since (the table's newest ``_txn`` lists it as cold) is opened from cold storage,
    reached with ``storage_options``.

    Returns:
        The open :class:`ParquetFile` (close it).

    Raises:
        CorruptFileError: the segment has no data file, its ``_pm`` is unreadable and its
            footer is not the one ``_txn`` recorded (``footer_xxh64``), or it is damaged.
        StreamwriteIOError: the cold storage of a segment tiered since cannot be reached.
    """
    directory = table_path / name
    if not directory.is_dir():
        store = _tiered_since(table_path, name, size, storage_options)
        if store is None:
            raise _missing(directory)
        return open_cold_segment(store, name, size, footer_xxh64, decryption)
    try:
        return ParquetFile(directory, snapshot=size, decryption=decryption)
    except CorruptFileError:
        if footer_xxh64 is None:
            raise
        fd = _open_data_file(directory)
        source = _FileSource(fd, size)
        try:
            if os.fstat(fd).st_size < size or footer_checksum(source.read, size) != footer_xxh64:
                raise
            return ParquetFile(source, snapshot=size, decryption=decryption)
        except BaseException:
            source.close()
            raise


def open_cold_segment(
    store: ObjectStore,
    name: str,
    size: int,
    footer_xxh64: int | None,
    decryption: DecryptionConfig | None = None,
) -> ParquetFile:
    """Segment ``name`` (``partition/segment``) in the cold storage ``store``: the object
    :func:`~streamwrite.format.txn.cold_object_key` of ``size`` bytes (module docstring).

    Returns:
        The open :class:`ParquetFile` reading it by byte ranges (close it).

    Raises:
        CorruptFileError: the object is missing or shorter than ``size``, its footer is not
            the one ``_txn`` recorded (:class:`~streamwrite.errors.ChecksumError`), or it is
            damaged.
        StreamwriteIOError: the store cannot be reached (the message names the URL).
    """
    source = RangeSource(store, cold_object_key(name), size)
    try:
        if footer_xxh64 is not None:
            actual = footer_checksum(source.read, size)
            if actual != footer_xxh64:
                raise ChecksumError(
                    f"The Parquet footer of the cold segment {source.url} at size {size} has "
                    + ("no valid length" if actual is None else f"XXH64 {actual:#018x}")
                    + f", but the table's _txn recorded {footer_xxh64:#018x}: the object is "
                    "damaged or not the one tiered.",
                    size,
                )
        return ParquetFile(source, snapshot=size, decryption=decryption)
    except StreamwriteIOError as exc:
        if exc.errno == errno.ENOENT:
            raise CorruptFileError(
                f"The cold segment {source.url} that the table's _txn names is missing: "
                "committed data is gone.",
                0,
            ) from exc
        raise
