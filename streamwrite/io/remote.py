"""Objects in any fsspec filesystem (S3, GCS, a local directory...), read by byte ranges.

An :class:`ObjectStore` is a root URL (``s3://bucket/prefix``, ``file:///abs/dir`` or a plain
local path) plus the fsspec ``storage_options`` that reach it; objects are named by keys
relative to the root (``ts_day=2026-11-22/seg-000003/data.parquet``). It pickles as those two
values and makes its fsspec filesystem lazily, once per process, so it crosses process
boundaries (Spark executors, subprocesses). Every failure of the filesystem surfaces as a
:class:`~streamwrite.errors.StreamwriteIOError` naming the object's URL (a missing object has
``errno`` ``ENOENT``); an object shorter than it should be is a
:class:`~streamwrite.errors.CorruptFileError`.

A :class:`~streamwrite.io.ranged.RangeSource` (re-exported here) reads one object by byte
ranges for :class:`streamwrite.ParquetFile`: the tail first, then exactly the ranges asked for,
through a bounded process-wide cache (:mod:`streamwrite.io.ranged` has the reading plan).

A local root (``file://`` or a path) has the same semantics as S3: :meth:`ObjectStore.put_file`
writes a temporary file (``.<name>.<uuid>.tmp``, never listed) and renames it, so an object
appears whole or not at all; :meth:`ObjectStore.put_if_absent` links a complete temporary file
to the name (``link`` fails when the name exists: an exclusive create that never shows a
partial object). Other fsspec filesystems put with ``mode="create"`` (fsspec's own check for
existence first where the backend has no conditional put).

:class:`FetchStats` counts the data requests (GETs) and the bytes they returned, per root URL and
process (every store of one root shares them), so that a test or benchmark can measure what a
read fetched whichever code made the store.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar
from urllib.parse import quote

import fsspec  # type: ignore[import-untyped]  # fsspec ships no type hints
from fsspec.utils import get_protocol  # type: ignore[import-untyped]

from streamwrite.errors import ConfigError, CorruptFileError, StreamwriteError, StreamwriteIOError
from streamwrite.io.range_cache import RANGE_CACHE, RangeCache
from streamwrite.io.ranged import DEFAULT_TAIL_SIZE, RangeSource

__all__ = [
    "DEFAULT_TAIL_SIZE",
    "RANGE_CACHE",
    "FetchStats",
    "ObjectStore",
    "RangeCache",
    "RangeSource",
    "open_store",
]

UPLOAD_BLOCK_SIZE = 8 * 1024 * 1024
"""Bytes :meth:`ObjectStore.put_file` reads from the local file per write."""
_LOCAL_PROTOCOLS = frozenset({"file", "local"})
_TEMPORARY_NAME = re.compile(r"\..+\.[0-9a-f]{32}\.tmp")
"""A local root's temporary files (:func:`_temporary_name`): never listed."""
_T = TypeVar("_T")


class FetchStats:
    """Data requests (GETs) and the bytes they returned, thread-safe (one per root URL and
    process: :meth:`for_url`)."""

    _registry: ClassVar[dict[str, FetchStats]] = {}
    _registry_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._num_requests = 0
        self._num_bytes = 0
        self._num_metadata_requests = 0

    @classmethod
    def for_url(cls, url: str) -> FetchStats:
        """The process's stats of the store rooted at ``url`` (a normalised root URL)."""
        with cls._registry_lock:
            stats = cls._registry.get(url)
            if stats is None:
                stats = cls._registry[url] = FetchStats()
            return stats

    @property
    def num_requests(self) -> int:
        """Data requests made (each GET of a range or of a whole object)."""
        return self._num_requests

    @property
    def num_bytes(self) -> int:
        """Bytes those requests returned."""
        return self._num_bytes

    @property
    def num_metadata_requests(self) -> int:
        """Size look-ups (HEAD) and listings made: not data, not in :attr:`num_requests`."""
        return self._num_metadata_requests

    def record(self, num_bytes: int) -> None:
        """Count one data request that returned ``num_bytes`` bytes."""
        with self._lock:
            self._num_requests += 1
            self._num_bytes += num_bytes

    def record_metadata(self) -> None:
        """Count one size look-up or listing."""
        with self._lock:
            self._num_metadata_requests += 1

    def reset(self) -> None:
        """Start counting from zero."""
        with self._lock:
            self._num_requests = 0
            self._num_bytes = 0
            self._num_metadata_requests = 0

    def __repr__(self) -> str:
        return (
            f"FetchStats(num_requests={self._num_requests}, num_bytes={self._num_bytes}, "
            f"num_metadata_requests={self._num_metadata_requests})"
        )


def _normalise_root(url: str) -> tuple[str, str, str]:
    """``(url, protocol, root_path)`` of a store root: a local path becomes ``file://`` plus
    its absolute path; no trailing ``/``."""
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(f"An object store root must be a non-empty URL or path, not {url!r}.")
    protocol = get_protocol(url)
    if isinstance(protocol, list | tuple):  # chained URLs ("simplecache::s3://...")
        raise ConfigError(f"Chained fsspec URLs are not supported as a store root: {url!r}.")
    if protocol in _LOCAL_PROTOCOLS:
        path = url.split("://", 1)[1] if "://" in url else url
        root = os.path.abspath(os.path.expanduser(path))
        return f"file://{root}", "file", root
    try:
        cls = fsspec.get_filesystem_class(protocol)
    except (ImportError, ValueError) as exc:
        raise ConfigError(
            f"No fsspec filesystem for the URL {url!r} (protocol {protocol!r}): {exc}"
        ) from exc
    root = str(cls._strip_protocol(url)).rstrip("/")
    if not root:
        raise ConfigError(f"The store root {url!r} names no bucket or directory.")
    return f"{protocol}://{root}", str(protocol), root


def _check_key(key: str) -> str:
    if (
        not isinstance(key, str)
        or not key
        or key.startswith("/")
        or key.endswith("/")
        or any(part in ("", ".", "..") for part in key.split("/"))
    ):
        raise ConfigError(
            f"An object key must be a relative path of non-empty names without '.' or '..', "
            f"not {key!r}."
        )
    return key


def open_store(url: str, storage_options: Mapping[str, Any] | None = None) -> ObjectStore:
    """The object store rooted at ``url`` (``s3://bucket/prefix``, ``file:///dir``, a local
    path, any fsspec URL), reached with ``storage_options`` (fsspec keyword arguments).

    Returns:
        An :class:`ObjectStore`; nothing is contacted until it is used.

    Raises:
        ConfigError: ``url`` is empty or has no fsspec filesystem installed; the options are
            not a mapping with string keys.
    """
    return ObjectStore(url, storage_options)


class ObjectStore:
    """Objects under one root of an fsspec filesystem (module docstring); picklable.

    Args:
        url: the root (``s3://bucket/prefix``, ``file:///dir``, a local path).
        storage_options: keyword arguments of the fsspec filesystem (credentials, endpoint).

    Raises:
        ConfigError: as for :func:`open_store`.
    """

    def __init__(self, url: str, storage_options: Mapping[str, Any] | None = None) -> None:
        if storage_options is None:
            storage_options = {}
        if not isinstance(storage_options, Mapping) or not all(
            isinstance(name, str) for name in storage_options
        ):
            raise ConfigError(
                "storage_options must be a mapping of fsspec keyword arguments, not "
                f"{type(storage_options).__name__}."
            )
        self.url, self.protocol, self._root = _normalise_root(url)
        self.storage_options: dict[str, Any] = dict(storage_options)
        self.is_local = self.protocol == "file"
        self._fs: Any = None
        self._fs_pid = 0
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "storage_options": self.storage_options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["url"], state["storage_options"])  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"ObjectStore({self.url!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ObjectStore)
            and other.url == self.url
            and other.storage_options == self.storage_options
        )

    def __hash__(self) -> int:
        return hash(self.url)

    @property
    def stats(self) -> FetchStats:
        """The data requests made to this root in this process (shared by its stores)."""
        return FetchStats.for_url(self.url)

    @property
    def fs(self) -> Any:
        """The fsspec filesystem (an ``fsspec.AbstractFileSystem``), made once per process.

        Raises:
            StreamwriteIOError: the filesystem cannot be made from the storage options.
        """
        pid = os.getpid()
        if self._fs is None or self._fs_pid != pid:
            with self._lock:
                if self._fs is None or self._fs_pid != pid:
                    try:
                        self._fs = fsspec.filesystem(self.protocol, **self.storage_options)
                    except Exception as exc:
                        raise StreamwriteIOError(
                            f"Cannot make the {self.protocol!r} filesystem of {self.url!r} "
                            f"from its storage options: {type(exc).__name__}: {exc}"
                        ) from exc
                    self._fs_pid = pid
        return self._fs

    def full_path(self, key: str) -> str:
        """The filesystem path (no protocol) of the object ``key``.

        Raises:
            ConfigError: ``key`` is not a relative path of plain names.
        """
        return f"{self._root}/{_check_key(key)}"

    def object_url(self, key: str) -> str:
        """The URL of the object ``key`` (how messages name it)."""
        return f"{self.url}/{key}"

    def _call(self, what: str, key: str | None, call: Callable[[], _T]) -> _T:
        """Run one filesystem call, its failures as StreamwriteIOError naming the object (the
        store's root for ``key`` None)."""
        where = self.url if key is None else self.object_url(key)
        try:
            return call()
        except StreamwriteError:
            raise
        except FileNotFoundError as exc:
            raise StreamwriteIOError(
                errno.ENOENT,
                f"Cannot {what} {where}: no such object.",
            ) from exc
        except Exception as exc:  # backends raise their own client errors, not only OSError
            raise StreamwriteIOError(f"Cannot {what} {where}: {type(exc).__name__}: {exc}") from exc

    def size(self, key: str) -> int | None:
        """The size in bytes of the object ``key``, or None when there is no such object.

        Raises:
            StreamwriteIOError: the filesystem cannot be reached or refuses the request.
        """
        path = self.full_path(key)

        def info() -> int | None:
            fs = self.fs
            fs.invalidate_cache(path)
            self.stats.record_metadata()
            try:
                entry = fs.info(path)
            except FileNotFoundError:
                return None
            if entry.get("type") == "directory":
                return None
            return int(entry["size"])

        return self._call("find the size of", key, info)

    def read_range(self, key: str, offset: int, size: int) -> bytes:
        """Bytes ``[offset, offset + size)`` of the object ``key``, in one request (counted in
        :attr:`stats`). Fewer bytes come back when the object ends before ``offset + size``.

        Raises:
            ConfigError: a negative offset or size.
            StreamwriteIOError: no such object (``errno`` ``ENOENT``), or the request failed.
        """
        if offset < 0 or size < 0:
            raise ConfigError(
                f"A range needs a non-negative offset and size, not {offset}, {size}."
            )
        path = self.full_path(key)
        if size == 0:
            return b""

        def cat() -> Any:
            self.fs.invalidate_cache(path)  # a listing cached before it was put hides it
            return self.fs.cat_file(path, start=offset, end=offset + size)

        data = self._call(f"read bytes [{offset}, {offset + size}) of", key, cat)
        self.stats.record(len(data))
        return bytes(data)

    def read_all(self, key: str) -> bytes:
        """Every byte of the object ``key``, in one request (counted in :attr:`stats`).

        Raises:
            StreamwriteIOError: no such object (``errno`` ``ENOENT``), or the request failed.
        """
        path = self.full_path(key)

        def cat() -> Any:
            self.fs.invalidate_cache(path)  # a listing cached before it was put hides it
            return self.fs.cat_file(path)

        data = self._call("read", key, cat)
        self.stats.record(len(data))
        return bytes(data)

    def read_ranges(self, key: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """The bytes of each ``(offset, size)`` range of the object ``key``, one request per
        range, made concurrently where the filesystem can (s3fs: at once, in batches). Each
        request is counted in :attr:`stats`.

        Raises:
            StreamwriteIOError: no such object (``errno`` ``ENOENT``), or a request failed.
        """
        path = self.full_path(key)
        if len(ranges) < 2:
            return [self.read_range(key, offset, size) for offset, size in ranges]
        starts = [offset for offset, _ in ranges]
        ends = [offset + size for offset, size in ranges]

        def cat() -> Any:
            self.fs.invalidate_cache(path)  # a listing cached before it was put hides it
            return self.fs.cat_ranges([path] * len(ranges), starts, ends, on_error="return")

        found = self._call(f"read {len(ranges)} ranges of", key, cat)
        out: list[bytes] = []
        for (offset, size), data in zip(ranges, found, strict=True):
            if isinstance(data, BaseException):
                self._call(f"read bytes [{offset}, {offset + size}) of", key, _raiser(data))
            self.stats.record(len(data))
            out.append(bytes(data))
        return out

    def put_file(
        self,
        key: str,
        local_path: str | os.PathLike[str],
        size: int,
        *,
        on_block: Callable[[bytes], None] | None = None,
    ) -> None:
        """Upload bytes ``[0, size)`` of the local file ``local_path`` as the object ``key``
        (replacing it). The object appears whole or not at all: S3 completes an upload (or
        aborts a failed one) atomically; a local root writes a temporary file and renames it.
        ``on_block`` sees each block uploaded, in order (to hash what was read, say).

        Raises:
            CorruptFileError: the local file is shorter than ``size``.
            StreamwriteIOError: the local file cannot be read, or the upload failed.
        """
        path = self.full_path(key)
        if size < 0:
            raise ConfigError(f"An upload needs a non-negative size, not {size}.")
        try:
            source = open(local_path, "rb")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise StreamwriteIOError(
                f"Cannot read {str(local_path)!r} to upload it: {exc}"
            ) from exc
        with source:

            def write(target: Any) -> None:
                remaining = size
                while remaining:
                    block = source.read(min(remaining, UPLOAD_BLOCK_SIZE))
                    if not block:
                        raise CorruptFileError(
                            f"{str(local_path)!r} ends {remaining} bytes before the {size} "
                            f"bytes to upload to {self.object_url(key)}.",
                            size - remaining,
                        )
                    if on_block is not None:
                        on_block(block)
                    target.write(block)
                    remaining -= len(block)

            if self.is_local:
                self._call("write", key, lambda: _local_replace(path, write))
            else:

                def upload() -> None:
                    target = self.fs.open(path, "wb")
                    try:
                        write(target)
                    except BaseException:
                        # closing would complete the upload: abort it instead
                        with contextlib.suppress(Exception):
                            target.discard()
                        target.closed = True
                        raise
                    target.close()
                    self.fs.invalidate_cache(path)

                self._call("upload", key, upload)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        """Create the object ``key`` holding ``data`` unless it exists (a conditional put:
        S3's ``If-None-Match: *``; a local root links a complete temporary file into place).

        Returns:
            True when this call created it, False when it existed (its bytes untouched).

        Raises:
            StreamwriteIOError: the request failed, or the filesystem has no conditional put.
        """
        path = self.full_path(key)
        if self.is_local:
            return self._call("create", key, lambda: _local_create(path, bytes(data)))

        def create() -> bool:
            try:
                self.fs.pipe_file(path, bytes(data), mode="create")
            except FileExistsError:
                return False
            finally:
                self.fs.invalidate_cache(path)
            return True

        return self._call("create", key, create)

    def list(self, prefix: str = "") -> list[str]:
        """Keys of the objects under the directory ``prefix`` (every depth; ``""``: the whole
        store), relative to the root, sorted; ``[]`` when there are none.

        Raises:
            StreamwriteIOError: the listing failed.
        """
        base = self._root if not prefix else self.full_path(prefix.rstrip("/"))

        def find() -> list[str]:
            fs = self.fs
            fs.invalidate_cache(base)
            for cached in [p for p in fs.dircache if str(p).startswith(base + "/")]:
                fs.dircache.pop(cached, None)  # find() keeps stale listings of subdirectories
            self.stats.record_metadata()
            try:
                found = fs.find(base)
            except FileNotFoundError:
                return []
            keys = []
            for name in found:
                name = str(fs._strip_protocol(name))
                if name.startswith(self._root + "/") and not (
                    self.is_local and _TEMPORARY_NAME.fullmatch(name.rpartition("/")[2])
                ):
                    keys.append(name[len(self._root) + 1 :])
            return sorted(keys)

        return self._call("list", prefix or None, find)

    def delete(self, keys: Sequence[str]) -> None:
        """Delete the objects ``keys``; keys without an object are fine.

        Raises:
            StreamwriteIOError: a deletion failed.
        """
        for key in keys:
            path = self.full_path(key)

            def remove(path: str = path) -> None:
                try:
                    self.fs.rm_file(path)
                except FileNotFoundError:
                    pass
                finally:
                    self.fs.invalidate_cache(path)

            self._call("delete", key, remove)


def _raiser(error: BaseException) -> Callable[[], bytes]:
    def call() -> bytes:
        raise error

    return call


def _temporary_name(path: str) -> str:
    directory, _, name = path.rpartition("/")
    return f"{directory}/.{quote(name)}.{uuid.uuid4().hex}.tmp"


def _sync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_temporary(path: str, write: Callable[[Any], None]) -> str:
    """A durable temporary file beside ``path`` holding what ``write`` writes; its name."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = _temporary_name(path)
    try:
        with open(temporary, "wb") as target:
            write(target)
            target.flush()
            os.fsync(target.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return temporary


def _local_replace(path: str, write: Callable[[Any], None]) -> None:
    """Make ``path`` hold what ``write`` writes, whole or not at all, durably."""
    temporary = _write_temporary(path, write)
    try:
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    _sync_directory(os.path.dirname(path))


def _local_create(path: str, data: bytes) -> bool:
    """Create ``path`` holding ``data`` unless it exists (whole or not at all, durably).

    Returns:
        Whether this call created it.
    """
    temporary = _write_temporary(path, lambda target: target.write(data))
    try:
        os.link(temporary, path)  # atomic, and fails when the name exists
    except FileExistsError:
        return False
    finally:
        os.unlink(temporary)
    _sync_directory(os.path.dirname(path))
    return True
