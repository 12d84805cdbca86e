"""One object of a store, of a known size, read by byte ranges: what ``ParquetFile`` reads.

A :class:`RangeSource` is one object of a known size as a reader's byte source
(``.size``, ``.read(offset, size)``, ``.close()``: what :class:`streamwrite.ParquetFile`
reads). Its reading plan, for an object of ``size`` bytes::

    first read               GET [size - min(size, tail_size), size)    the tail: footer length,
                                                                        magic and (usually) the
                                                                        footer
    the footer, longer       GET [footer start, tail start), merged     the tail widens once
    a range inside the tail  nothing
    a range into the tail    GET [offset, tail start)                   a chunk ending in it
    any other range          GET [offset, offset + size) exactly        a column chunk, an
                                                                        index, a bloom filter

so a one-column read fetches the tail plus exactly the column chunks it decodes, never the whole
object. Fetched ranges go through a :class:`~streamwrite.io.range_cache.RangeCache`: bounded by
bytes, least recently used out first, shared by the whole process by default
(:data:`RANGE_CACHE`), keyed by ``(root URL, key, object size)``, so planning a read and then
reading the same object (two ``ParquetFile`` objects) fetch its footer once. Cold objects are
immutable once published, so a cached range never goes stale; a different size is a different
cache key. The reader checks the trailing magic and the footer always, the leading magic only
when the tail already holds it (a request of its own otherwise; pyarrow never reads it).

A reader that knows which ranges it reads next (the column chunks of a row group) announces them
(:meth:`RangeSource.prefetch`): the bytes not held yet are fetched at once, touching ranges merged
into one request (a full read makes one request per row group), the requests concurrent.

The store is anything with the few methods of :class:`RangeStore`
(:class:`streamwrite.io.remote.ObjectStore`).
"""

from __future__ import annotations

import errno
import threading
from collections.abc import Sequence
from typing import Any, Protocol

from streamwrite.errors import ConfigError, CorruptFileError, StreamwriteIOError
from streamwrite.io.range_cache import RANGE_CACHE, ObjectId, RangeCache

__all__ = ["DEFAULT_TAIL_SIZE", "RangeSource", "RangeStore"]

DEFAULT_TAIL_SIZE = 64 * 1024
"""Bytes a :class:`RangeSource` fetches from the end of an object on its first read: the
footer of most Parquet files fits (one request), a longer one widens it once."""


class RangeStore(Protocol):
    """What a :class:`RangeSource` needs of its store (``ObjectStore`` has it)."""

    @property
    def url(self) -> str: ...

    def full_path(self, key: str) -> str: ...

    def object_url(self, key: str) -> str: ...

    def size(self, key: str) -> int | None: ...

    def read_range(self, key: str, offset: int, size: int) -> bytes: ...

    def read_ranges(self, key: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]: ...


def _merge_adjacent(ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``(offset, size)`` ranges sorted, overlapping or touching ones merged (no byte added)."""
    merged: list[list[int]] = []
    for offset, size in sorted(ranges):
        if merged and offset <= merged[-1][0] + merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], offset + size - merged[-1][0])
        else:
            merged.append([offset, size])
    return [(offset, size) for offset, size in merged]


class RangeSource:
    """The first ``size`` bytes of one object as a reader's byte source (the reading plan of
    the module docstring); what ``ParquetFile(RangeSource(...))`` reads. Picklable (the store,
    the key, the size; the process's :data:`RANGE_CACHE` on the other side).

    Args:
        store: the object's store.
        key: the object's key.
        size: its expected size in bytes (a cold segment's committed size).
        cache: the range cache (default :data:`RANGE_CACHE`, the process's).
        tail_size: bytes fetched from the end on the first read.

    Raises:
        ConfigError: a negative size, a non-positive ``tail_size``, a bad key.
    """

    verify_head = False
    """Readers check the 4-byte leading magic only when it is already fetched: reading it
    would cost a request of its own (pyarrow never reads it); the trailing magic and the
    footer are always checked."""

    def __init__(
        self,
        store: RangeStore,
        key: str,
        size: int,
        *,
        cache: RangeCache | None = None,
        tail_size: int = DEFAULT_TAIL_SIZE,
    ) -> None:
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ConfigError(f"An object size must be an integer >= 0, not {size!r}.")
        if not isinstance(tail_size, int) or isinstance(tail_size, bool) or tail_size < 1:
            raise ConfigError(f"tail_size must be a positive integer, not {tail_size!r}.")
        store.full_path(key)  # checks the key
        self.store = store
        self.key = key
        self.size = size
        self.cache = RANGE_CACHE if cache is None else cache
        self.tail_size = tail_size
        self._id: ObjectId = (store.url, key, size)
        self._lock = threading.Lock()
        self._tail_offset = size
        self._tail = b""
        self._tail_read = False
        self._prefetched: list[tuple[int, bytes]] = []

    def __reduce__(self) -> tuple[Any, ...]:
        return (_make_range_source, (self.store, self.key, self.size, self.tail_size))

    @property
    def url(self) -> str:
        """The object's URL."""
        return self.store.object_url(self.key)

    def __repr__(self) -> str:
        return f"RangeSource({self.url!r}, size={self.size})"

    def holds(self, offset: int, size: int) -> bool:
        """Whether ``[offset, offset + size)`` is already fetched (reading it costs no
        request)."""
        with self._lock:
            if self._tail_read and offset >= self._tail_offset:
                return True
        return self.cache.get(self._id, offset, size) is not None

    def read(self, offset: int, size: int) -> memoryview:
        """Bytes ``[offset, offset + size)`` of the object, fetched as the module docstring
        plans.

        Raises:
            CorruptFileError: the range runs past ``size``, or the object is shorter than
                ``size`` bytes.
            StreamwriteIOError: the object is missing (``errno`` ``ENOENT``), or the request
                failed; the message names the object's URL.
        """
        if offset < 0 or size < 0 or offset + size > self.size:
            raise CorruptFileError(
                f"A read of {size} bytes at {offset} runs past the end of the "
                f"{self.size}-byte object {self.url}.",
                offset,
            )
        if size == 0:
            return memoryview(b"")
        with self._lock:
            if not self._tail_read:
                self._read_tail()
            end = offset + size
            if offset < self._tail_offset < end and end >= self.size - 8:
                self._widen_tail(offset)  # the footer is longer than the first tail
        held = self._held(offset, size)
        if held is not None:
            return held
        if end <= self._tail_offset:
            data = self._fetch(offset, size)
        else:  # a chunk running into the tail: fetch the rest only
            head_size = self._tail_offset - offset
            head = self._held(offset, head_size)
            if head is None:
                head = memoryview(self._fetch(offset, head_size))
            data = bytes(head) + self._tail[: end - self._tail_offset]
        self.cache.put(self._id, offset, data)
        return memoryview(data)

    def _held(self, offset: int, size: int) -> memoryview | None:
        """``[offset, offset + size)`` from the tail, the prefetched blocks or the cache, or
        None."""
        with self._lock:
            if offset >= self._tail_offset:
                start = offset - self._tail_offset
                return memoryview(self._tail)[start : start + size]
            for start, block in self._prefetched:
                if start <= offset and offset + size <= start + len(block):
                    return memoryview(block)[offset - start : offset - start + size]
        cached = self.cache.get(self._id, offset, size)
        if cached is None:
            return None
        start, data = cached
        return memoryview(data)[offset - start : offset - start + size]

    def prefetch(self, ranges: Sequence[tuple[int, int]]) -> None:
        """Fetch the ``(offset, size)`` ranges a reader is about to read (the column chunks
        of one row group): the bytes not held yet (the tail, the cache), touching ranges
        merged into one request, the requests concurrent (``store.read_ranges``).
        Reads inside them are then served from memory until the next prefetch replaces them
        (``prefetch([])`` releases them; so does :meth:`close`).

        Raises:
            CorruptFileError, StreamwriteIOError: as :meth:`read`.
        """
        with self._lock:
            self._prefetched = []
        if not self._tail_read and ranges:
            self.read(self.size - 1, 1)  # the tail first, as every plan does
        wanted = []
        for offset, size in ranges:
            size = min(offset + size, self._tail_offset) - offset  # the tail holds the rest
            if size > 0 and offset >= 0 and self._held(offset, size) is None:
                wanted.append((offset, size))
        if len(wanted) < 2:
            return  # one request either way: read() makes it
        merged = _merge_adjacent(wanted)
        try:
            blocks = self.store.read_ranges(self.key, merged)
        except StreamwriteIOError as exc:
            if exc.errno != errno.ENOENT:
                self._check_length(exc)
            raise
        for (offset, size), block in zip(merged, blocks, strict=True):
            if len(block) != size:
                self._check_length(None)
                raise CorruptFileError(
                    f"A read of bytes [{offset}, {offset + size}) of {self.url} returned "
                    f"{len(block)} bytes.",
                    offset + len(block),
                )
        with self._lock:
            self._prefetched = [
                (offset, block) for (offset, _), block in zip(merged, blocks, strict=True)
            ]

    def _read_tail(self) -> None:
        """Take the tail from the cache (another reader of the object fetched it), or fetch
        ``min(size, tail_size)`` bytes from the end in one request."""
        cached = self.cache.get(self._id, self.size - 1, 1) if self.size else None
        if cached is not None:
            self._tail_offset, self._tail = cached
        else:
            length = min(self.size, self.tail_size)
            self._tail = self._fetch(self.size - length, length)
            self._tail_offset = self.size - length
            self.cache.put(self._id, self._tail_offset, self._tail, tail=True)
        self._tail_read = True

    def _widen_tail(self, offset: int) -> None:
        """Fetch ``[offset, tail start)`` and make the tail start at ``offset`` (a footer
        longer than the first tail)."""
        prefix = self._fetch(offset, self._tail_offset - offset)
        self.cache.discard(self._id, self._tail_offset)
        self._tail_offset, self._tail = offset, prefix + self._tail
        self.cache.put(self._id, offset, self._tail, tail=True)

    def _fetch(self, offset: int, size: int) -> bytes:
        """One request for ``[offset, offset + size)``, checked to return every byte."""
        try:
            data = self.store.read_range(self.key, offset, size)
        except StreamwriteIOError as exc:
            if exc.errno != errno.ENOENT:
                self._check_length(exc)
            raise
        if len(data) != size:
            self._check_length(None)
            raise CorruptFileError(
                f"A read of bytes [{offset}, {offset + size}) of {self.url} returned "
                f"{len(data)} bytes.",
                offset + len(data),
            )
        return data

    def _check_length(self, cause: BaseException | None) -> None:
        """Raise CorruptFileError when the object is shorter than :attr:`size` (what a
        failed or short range request most likely means)."""
        try:
            actual = self.store.size(self.key)
        except StreamwriteIOError:
            return  # the request's own error says more
        if actual is None:
            raise StreamwriteIOError(errno.ENOENT, f"The object {self.url} does not exist.")
        if actual < self.size:
            raise CorruptFileError(
                f"The object {self.url} has {actual} bytes, fewer than the {self.size} "
                "expected: it is truncated, or not the object recorded.",
                actual,
            ) from cause

    def close(self) -> None:
        """Release the prefetched bytes (requests hold nothing between reads)."""
        with self._lock:
            self._prefetched = []


def _make_range_source(store: RangeStore, key: str, size: int, tail_size: int) -> RangeSource:
    return RangeSource(store, key, size, tail_size=tail_size)
