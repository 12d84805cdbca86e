"""A bounded cache of byte ranges of immutable objects, shared by the process.

Entries are ``(object id, offset) -> bytes``, the object id being ``(root URL, key, object
size)``; a lookup finds any cached range of the object that covers the bytes asked for. The
budget is in bytes (the sum of the cached ranges' lengths): a put evicts least recently used
ranges until the sum fits, and a range longer than ``max_range_size`` is not kept unless it is
a tail (footers are what every reader of an object needs again; column chunks rarely are, and
kept, they would push the footers of the other objects of a scan out).

Objects read through the cache must be immutable (a cold segment, a published log object): a
cached range is never checked against the object again. Thread-safe.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from streamwrite.errors import ConfigError

__all__ = [
    "DEFAULT_CACHE_SIZE",
    "DEFAULT_MAX_RANGE_SIZE",
    "RANGE_CACHE",
    "ObjectId",
    "RangeCache",
]

DEFAULT_CACHE_SIZE = 64 * 1024 * 1024
"""Byte budget of the process-wide :data:`RANGE_CACHE`."""
DEFAULT_MAX_RANGE_SIZE = 1024 * 1024
"""The longest range (other than a tail) the cache keeps: page indexes, bloom filters and
small column chunks fit."""

ObjectId = tuple[str, str, int]
"""``(root URL, key, object size)``: what the cache keys an object by."""


def _check_size(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"{name} must be an integer number of bytes >= 0, not {value!r}.")
    return value


class RangeCache:
    """Byte ranges of immutable objects (module docstring), least recently used out first.

    Args:
        max_size: the byte budget (0 keeps nothing).
        max_range_size: the longest range kept, tails aside.

    Raises:
        ConfigError: a negative or non-integer size.
    """

    def __init__(
        self, max_size: int = DEFAULT_CACHE_SIZE, max_range_size: int = DEFAULT_MAX_RANGE_SIZE
    ) -> None:
        self.max_size = _check_size("max_size", max_size)
        self.max_range_size = _check_size("max_range_size", max_range_size)
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[ObjectId, int], bytes] = OrderedDict()
        self._offsets: dict[ObjectId, set[int]] = {}
        self._size = 0
        self.num_hits = 0
        """Lookups a cached range answered."""
        self.num_misses = 0
        """Lookups no cached range answered."""
        self.num_evictions = 0
        """Ranges dropped to keep within the budget."""

    def __repr__(self) -> str:
        return (
            f"RangeCache(size={self._size}, max_size={self.max_size}, "
            f"num_ranges={len(self._entries)}, num_hits={self.num_hits}, "
            f"num_misses={self.num_misses}, num_evictions={self.num_evictions})"
        )

    @property
    def size(self) -> int:
        """Bytes held now (at most ``max_size``)."""
        return self._size

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, object_id: ObjectId, offset: int, size: int) -> tuple[int, bytes] | None:
        """A cached range of the object covering ``[offset, offset + size)``.

        Returns:
            ``(its offset, its bytes)``, or None (counted as a hit or a miss).
        """
        with self._lock:
            for start in self._offsets.get(object_id, ()):
                data = self._entries[(object_id, start)]
                if start <= offset and offset + size <= start + len(data):
                    self._entries.move_to_end((object_id, start))
                    self.num_hits += 1
                    return start, data
            self.num_misses += 1
            return None

    def put(self, object_id: ObjectId, offset: int, data: bytes, *, tail: bool = False) -> bool:
        """Keep ``data``, the object's bytes at ``offset`` (replacing a range at the same
        offset), evicting the least recently used ranges beyond the budget.

        Args:
            object_id: the object.
            offset: where ``data`` starts in it.
            data: the bytes.
            tail: the range ends the object (kept whatever ``max_range_size`` says).

        Returns:
            Whether the range is kept.
        """
        with self._lock:
            self._discard(object_id, offset)
            if len(data) > self.max_size or (not tail and len(data) > self.max_range_size):
                return False
            self._entries[(object_id, offset)] = data
            self._offsets.setdefault(object_id, set()).add(offset)
            self._size += len(data)
            while self._size > self.max_size:
                (victim, victim_offset), evicted = self._entries.popitem(last=False)
                self._size -= len(evicted)
                self._forget_offset(victim, victim_offset)
                self.num_evictions += 1
            return True

    def discard(self, object_id: ObjectId, offset: int) -> None:
        """Drop the object's range at ``offset``, if cached."""
        with self._lock:
            self._discard(object_id, offset)

    def _discard(self, object_id: ObjectId, offset: int) -> None:
        old = self._entries.pop((object_id, offset), None)
        if old is not None:
            self._size -= len(old)
            self._forget_offset(object_id, offset)

    def _forget_offset(self, object_id: ObjectId, offset: int) -> None:
        offsets = self._offsets[object_id]
        offsets.discard(offset)
        if not offsets:
            del self._offsets[object_id]

    def clear(self) -> None:
        """Forget every range and reset the counters."""
        with self._lock:
            self._entries.clear()
            self._offsets.clear()
            self._size = 0
            self.num_hits = self.num_misses = self.num_evictions = 0


RANGE_CACHE = RangeCache()
"""The process-wide cache every ``RangeSource`` uses unless given its own."""
