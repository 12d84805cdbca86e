"""A read-only fsspec filesystem that shows one committed version of a table.

Third-party engines that open a live ``data.parquet`` from its end can land in the middle of
an append (DESIGN section 6: "No magic bytes", "must end with PAR1"), and a table directory
holds retired segments during compaction. :func:`snapshot_filesystem` gives pyarrow, DuckDB
and polars a view with snapshot isolation and no copying::

    /                                    the table directory
    /<partition>/<segment>/data.parquet  one file per segment of ONE _txn version, cut at its
                                         committed size (the size _txn records)

Rules of the view:

- **One version.** The view reads ``_txn`` once (through
  :func:`streamwrite.table.state.read_snapshot`, or takes a pinned
  :class:`~streamwrite.table.state.TableSnapshot`) and never changes after that: ``fs.version`` is
  that ``_txn`` version. To read a newer version, make a new view. Each view has its own
  ``protocol`` (``streamwrite1``, ``streamwrite2``, ...) unless one is given: DuckDB refuses
  to register a second filesystem under a registered name, so a new view is registered beside
  the old one (then ``unregister_filesystem(old.protocol)``), and one URL never names the
  files of two versions.
- **Only committed data files.** The paths are the names ``TableSnapshot.files`` gives, with
  ``/data.parquet`` appended; the on-disk paths come from the snapshot too, never from this
  module. ``_txn``, ``_pm``, ``_lock``, retired and unpublished segments are not shown;
  directories exist only as the parents of those files.
- **Committed sizes.** ``size``/``info``/``ls`` give the committed size; a read never returns
  a byte at or past it (a read that starts there returns ``b""``). Committed bytes never
  change (live files only append), so every read is of the committed version.
- **Open file descriptors.** Every data file is opened when the view is made and stays open
  until :meth:`SnapshotFileSystem.close` (or the view's garbage collection). On POSIX an open
  descriptor survives rename and unlink, so a view keeps reading the segments of its version
  after compaction retires, moves or deletes them. Nothing is opened lazily: a file opened
  later would have to be opened within the table's ``grace_seconds`` after its version was
  superseded, which no caller could know.
- **Other processes cannot pin.** A process that is not the writer cannot stop compaction from
  deleting a retired segment; compaction deletes it only after ``CompactionPolicy.grace_seconds``.
  The view's only window is between reading ``_txn`` and opening the files (microseconds). A
  data file missing at open is damage (``CorruptFileError``) only if ``_txn`` still names the
  same version; otherwise compaction swept a segment of a superseded version, and the view
  takes the newer version (``version=None``) or raises ``ConfigError`` (a numbered version).
  The view holds one descriptor per segment of its version.
- **Read-only.** Every call that would change a file raises :class:`StreamwriteIOError`.
- **Segments keep the schema they were written with.** After ``Table.add_columns`` a version
  may show segments of several schemas of the table's history, each a prefix of the newest
  (``fs.schema``, the version's schema): an older segment lacks the added columns. Read them
  as one table by giving the engine that schema or letting it unify by name (as the table
  directory itself, tested in ``tests/table/test_schema_evolution.py``): pyarrow
  ``pyarrow.dataset.dataset(path, filesystem=fs, format="parquet", schema=fs.schema)``
  (missing columns read as nulls); DuckDB ``read_parquet(..., union_by_name=true)``; polars
  ``pl.scan_parquet(..., schema=..., missing_columns="insert")`` or
  ``pl.concat(frames, how="diagonal")``. Without that, pyarrow (``pq.read_table``,
  ``ds.dataset``) and DuckDB take the first file's schema: every row is read, but the added
  columns are silently dropped when that file is an older segment; polars refuses the files
  (``SchemaError: extra column in file``). ``streamwrite.read_table`` does it for you.

A bare live-file directory (``data.parquet`` + ``_pm``, no ``_txn``) is shown as
``/data.parquet`` at the committed size its ``_pm`` names (``fs.version`` is None).

**Cold segments and table URLs.** A segment tiered to cold storage (``Segment.is_cold``) is
shown at the same path and size; its bytes are read from its object by byte ranges
(:class:`streamwrite.io.remote.RangeSource`: the tail once, then exactly the ranges the engine
asks for, through the process-wide range cache), with no descriptor. Given a table URL
(``snapshot_filesystem("s3://bucket/prefix", storage_options=...)``) the view shows the
version the table published there (:mod:`streamwrite.table.remote`: only its cold segments),
so pyarrow, DuckDB and polars read a table from another machine with snapshot isolation and
nothing local touched. Cold objects are immutable, so no open step pins them.
"""

from __future__ import annotations

import datetime
import errno
import hashlib
import os
import re
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
from fsspec.spec import (  # type: ignore[import-untyped]  # fsspec ships no type hints
    AbstractBufferedFile,
    AbstractFileSystem,
)

from streamwrite.errors import ConfigError, CorruptFileError, StateError, StreamwriteIOError
from streamwrite.format.txn import TXN_FILE
from streamwrite.io.remote import ObjectStore
from streamwrite.reader.tail import committed_size
from streamwrite.table.remote import is_table_url, read_remote_record
from streamwrite.table.snapshot_files import (
    DATA_FILE,
    DataFile,
    MissingDataFileError,
    close_fds,
    open_snapshot,
)
from streamwrite.table.snapshot_files import (
    open_files as _open_files,  # the name tests/table/test_snapshot_fs.py imports
)
from streamwrite.table.state import TableSnapshot, read_snapshot, snapshot_of

__all__ = ["PROTOCOL", "SnapshotFileSystem", "snapshot_filesystem"]

PROTOCOL = "streamwrite"
"""The prefix of each view's default URL scheme (``streamwrite1``, ``streamwrite2``, ...)."""
_OPEN_ATTEMPTS = 20
"""How many newer ``_txn`` versions the view takes when a data file vanished between reading
``_txn`` and opening it (compaction swept a segment of a superseded version)."""
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-_]*:(//)?")
_PROTOCOL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-_]*")


class SnapshotFileSystem(AbstractFileSystem):  # type: ignore[misc]
    """A read-only fsspec filesystem of one committed table version (module docstring).

    Make it with :func:`snapshot_filesystem`. It implements what pyarrow datasets, DuckDB's
    ``register_filesystem`` and polars (through pyarrow) call: ``ls``, ``info``, ``find``,
    ``glob``, ``exists``, ``isdir``, ``isfile``, ``size``, ``modified``, ``checksum``,
    ``ukey``, ``cat_file`` and ``open`` (``"rb"`` only).

    DuckDB keeps registered filesystems by protocol, and registering a second one under a name
    already registered raises. Each view therefore has its own ``protocol`` by default
    (``streamwrite`` plus a per-view number, see :attr:`url`), so a newer view is registered
    beside an older one; call ``connection.unregister_filesystem(old.protocol)`` when done
    with the old one. A view made with a fixed ``protocol`` replaces the old one under the
    same name: unregister the old one first.

    The view owns the descriptors in ``files`` and closes them in :meth:`close`, which waits
    for reads in flight (engines read from several threads): a descriptor number is never read
    after it was closed (and perhaps reused by another open).

    Attributes:
        version: the ``_txn`` version shown (None for a bare live-file directory).
        table_path: the table (or live-file) directory on disk.
        schema: the Arrow schema of the version shown (None for a bare live-file directory):
            older segments may lack its last columns (module docstring).
    """

    protocol: str | tuple[str, ...] = PROTOCOL
    root_marker = "/"
    cachable = False  # every view is its own version: fsspec must never hand out an old one
    _counter: ClassVar[int] = 0
    _counter_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self,
        table_path: Path | str,
        version: int | None,
        files: dict[str, DataFile],
        protocol: str | None = None,
        schema: pa.Schema | None = None,
    ) -> None:
        super().__init__()
        if protocol is not None and not _PROTOCOL_NAME.fullmatch(protocol):
            raise ConfigError(
                f"protocol must be a URL scheme (a letter, then letters, digits, '+', '-', '.' "
                f"or '_'), got {protocol!r}."
            )
        if protocol is None:
            with SnapshotFileSystem._counter_lock:
                SnapshotFileSystem._counter += 1
                protocol = f"{PROTOCOL}{SnapshotFileSystem._counter}"
        self.protocol = protocol
        self.table_path = table_path
        self.version = version
        self.schema = schema
        self._files = files
        self._children: dict[str, dict[str, dict[str, Any]]] = {"/": {}}
        for name, data_file in sorted(files.items()):
            parts = name.strip("/").split("/")
            for depth in range(len(parts)):
                parent = "/" + "/".join(parts[:depth])
                path = "/" + "/".join(parts[: depth + 1])
                is_file = depth == len(parts) - 1
                entry: dict[str, Any] = (
                    {"name": path, "size": data_file.size, "type": "file", "mtime": data_file.mtime}
                    if is_file
                    else {"name": path, "size": 0, "type": "directory"}
                )
                self._children.setdefault(parent, {})[path] = entry
                if not is_file:
                    self._children.setdefault(path, {})
        self._fds = [f.fd for f in files.values() if f.fd >= 0]
        self._reads_in_flight = 0
        self._closing = False
        self._idle = threading.Condition()
        self._finalizer = weakref.finalize(self, close_fds, self._fds)

    # -- paths ---------------------------------------------------------------------------------

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        """``streamwrite7:///a/b``, ``/a/b/``, ``a//b`` -> ``/a/b`` (any scheme is stripped)."""
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        text = _SCHEME.sub("", os.fspath(path) if isinstance(path, os.PathLike) else str(path))
        parts = [part for part in text.split("/") if part not in ("", ".")]
        return "/" + "/".join(parts)

    def unstrip_protocol(self, name: str) -> str:
        """``/a/b`` -> ``<protocol>:///a/b`` (the form DuckDB globs return)."""
        return f"{self.protocol}://{self._strip_protocol(name)}"

    @property
    def url(self) -> str:
        """The root URL of this view for DuckDB: ``<protocol>://``; glob under it, e.g.
        ``read_parquet(fs.url + '/**/*.parquet')``."""
        return f"{self.protocol}://"

    @property
    def fsid(self) -> str:
        """An id of this view (table path and version)."""
        return f"streamwrite-snapshot:{self.table_path}:{self.version}"

    # -- listing -------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closing or not self._finalizer.alive:
            raise StateError(
                f"The snapshot view of {str(self.table_path)!r} (version {self.version}) is closed."
            )

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
        """Returns: the entries directly under ``path`` (dicts with ``name``, ``size``,
        ``type``, ``mtime`` when ``detail``, else names); a file lists itself.

        Raises:
            FileNotFoundError: nothing at ``path`` in this version.
        """
        path = self._strip_protocol(path)
        children = self._children.get(path)
        if children is not None:
            entries = [dict(entry) for entry in children.values()]
        else:
            entries = [self.info(path)]
        return entries if detail else [entry["name"] for entry in entries]

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        """Returns: ``{"name", "size", "type"[, "mtime"]}`` of ``path`` (size: committed size).

        Raises:
            FileNotFoundError: nothing at ``path`` in this version.
        """
        path = self._strip_protocol(path)
        if path == "/":
            return {"name": "/", "size": 0, "type": "directory"}
        parent = path.rsplit("/", 1)[0] or "/"
        entry = self._children.get(parent, {}).get(path)
        if entry is None:
            raise FileNotFoundError(
                errno.ENOENT,
                f"No {path!r} in version {self.version} of the table {str(self.table_path)!r}",
                path,
            )
        return dict(entry)

    def exists(self, path: str, **kwargs: Any) -> bool:
        """Returns: True when ``path`` is a file or directory of this version."""
        try:
            self.info(path)
        except FileNotFoundError:
            return False
        return True

    def modified(self, path: str) -> datetime.datetime:
        """Returns: the data file's modification time when the view opened it (UTC).

        Raises:
            FileNotFoundError: ``path`` is not a file of this version.
        """
        return datetime.datetime.fromtimestamp(self._data_file(path).mtime, datetime.UTC)

    def checksum(self, path: str) -> int:
        """Returns: a number that changes when the committed content of ``path`` may have
        (its segment's disk path and committed size: committed bytes never change)."""
        return int(hashlib.sha256(self.ukey(path).encode()).hexdigest()[:16], 16)

    def ukey(self, path: str) -> str:
        """Returns: a key of ``path``'s committed content (as :meth:`checksum`)."""
        data_file = self._data_file(path)
        return f"{data_file.disk_path}:{data_file.size}"

    def _data_file(self, path: str) -> DataFile:
        data_file = self._files.get(self._strip_protocol(path))
        if data_file is None:
            self.info(path)  # FileNotFoundError for a missing path
            raise IsADirectoryError(errno.EISDIR, "A directory of the snapshot view", path)
        return data_file

    # -- reading -------------------------------------------------------------------------------

    def _open(
        self,
        path: str,
        mode: str = "rb",
        block_size: int | None = None,
        autocommit: bool = True,
        cache_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> SnapshotFile:
        if mode != "rb":
            self._read_only(path)
        self._check_open()
        return SnapshotFile(self, self._strip_protocol(path), self._data_file(path), block_size)

    def cat_file(
        self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any
    ) -> bytes:
        """Returns: bytes ``start:end`` of ``path`` (Python slice rules), never past its
        committed size."""
        data_file = self._data_file(path)
        begin, stop, _ = slice(start, end).indices(data_file.size)
        return self._read_range(data_file, begin, stop)

    def _read_range(self, data_file: DataFile, start: int, end: int) -> bytes:
        """Returns: bytes ``[start, min(end, committed size))`` of an open data file."""
        end = min(end, data_file.size)
        with self._idle:
            self._check_open()
            if start >= end:
                return b""
            self._reads_in_flight += 1
        try:
            return self._pread(data_file, start, end)
        finally:
            with self._idle:
                self._reads_in_flight -= 1
                self._idle.notify_all()

    @staticmethod
    def _pread(data_file: DataFile, start: int, end: int) -> bytes:
        if data_file.source is not None:  # a cold segment: one ranged read (or the cache)
            return bytes(data_file.source.read(start, end - start))
        chunks = []
        while start < end:
            try:
                chunk = os.pread(data_file.fd, end - start, start)
            except OSError as exc:
                raise StreamwriteIOError(
                    f"Reading {str(data_file.disk_path)!r} at {start} failed: {exc}."
                ) from exc
            if not chunk:
                raise CorruptFileError(
                    f"{str(data_file.disk_path)!r} ended at {start}, before its committed size "
                    f"{data_file.size}.",
                    start,
                )
            chunks.append(chunk)
            start += len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    # -- read-only -----------------------------------------------------------------------------

    def _read_only(self, path: Any, *args: Any, **kwargs: Any) -> Any:
        raise StreamwriteIOError(
            f"The snapshot view of {str(self.table_path)!r} is read-only; {path!r} cannot be "
            "changed (write to the table with streamwrite.open_table)."
        )

    mkdir = makedirs = rmdir = _read_only
    rm_file = _rm = rm = _read_only
    cp_file = mv = pipe_file = put_file = touch = _read_only

    # -- life ----------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the view's file descriptors once the reads in flight are done (idempotent);
        later reads raise ``StateError``."""
        with self._idle:
            self._closing = True
            self._idle.wait_for(lambda: self._reads_in_flight == 0)
            self._finalizer()

    def __enter__(self) -> SnapshotFileSystem:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __reduce__(self) -> Any:
        raise StateError("A snapshot view holds open files and cannot be pickled.")

    def __repr__(self) -> str:
        return (
            f"<SnapshotFileSystem {str(self.table_path)!r} version={self.version} "
            f"protocol={self.protocol!r} files={len(self._files)}>"
        )


class SnapshotFile(AbstractBufferedFile):  # type: ignore[misc]
    """A file of the view: reads with ``os.pread`` on the view's descriptor, never past the
    committed size (``size``)."""

    def __init__(
        self, fs: SnapshotFileSystem, path: str, data_file: DataFile, block_size: int | None
    ) -> None:
        self._data_file = data_file
        super().__init__(
            fs, path, "rb", block_size=block_size, cache_type="none", size=data_file.size
        )
        self.details = {"name": path, "size": data_file.size, "type": "file"}

    def _fetch_range(self, start: int, end: int) -> bytes:
        fs: SnapshotFileSystem = self.fs
        return fs._read_range(self._data_file, start, end)


def _same_table(snapshot: TableSnapshot, path: Path | str) -> bool:
    if isinstance(path, Path) and isinstance(snapshot.path, Path):
        return snapshot.path.resolve() == path.resolve()
    if isinstance(path, str) and isinstance(snapshot.path, str):
        return ObjectStore(snapshot.path).url == ObjectStore(path).url
    return False


def _resolve(
    path: Path | str,
    version: int | TableSnapshot | None,
    protocol: str | None,
    storage_options: Mapping[str, Any] | None,
) -> SnapshotFileSystem:
    if isinstance(version, TableSnapshot):
        if not _same_table(version, path):
            raise ConfigError(
                f"The snapshot {version!r} is of the table {str(version.path)!r}, not "
                f"{str(path)!r}."
            )
        try:
            files = open_snapshot(version)
        except MissingDataFileError as exc:
            raise StateError(
                f"Version {version.version} of the table {str(path)!r} lost a data file "
                f"({exc}): a released snapshot's segments are not kept."
            ) from exc
        return SnapshotFileSystem(path, version.version, files, protocol, version.schema)
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise ConfigError(
            f"version must be None, an int or a TableSnapshot, got {version!r} for {str(path)!r}."
        )
    if isinstance(path, str):
        store = ObjectStore(path, storage_options)
        snapshot = snapshot_of(path, read_remote_record(store, version), None, storage_options)
        files = open_snapshot(snapshot)  # cold segments only: nothing to open
        return SnapshotFileSystem(path, snapshot.version, files, protocol, snapshot.schema)
    if not (path / TXN_FILE).is_file():
        if version is not None:
            raise ConfigError(
                f"{str(path)!r} is not a table (no _txn): version={version!r} applies to tables."
            )
        if not (path / DATA_FILE).is_file():
            raise ConfigError(
                f"{str(path)!r} is neither a table (no _txn) nor a live file (no {DATA_FILE})."
            )
        files = _open_files([(f"/{DATA_FILE}", committed_size(path), path / DATA_FILE)])
        return SnapshotFileSystem(path, None, files, protocol)
    return _open_table(path, version, protocol, storage_options)


def _check_version(path: Path, version: int | None, newest: int) -> None:
    if version is None or version == newest:
        return
    if version < newest:
        raise ConfigError(
            f"Version {version} of the table {str(path)!r} is gone: only the newest _txn record "
            f"(version {newest}) is kept on disk. Pin a version with Table.snapshot() in the "
            "writing process to read it later."
        )
    raise ConfigError(
        f"Version {version} of the table {str(path)!r} is not committed; the newest is {newest}."
    )


def _open_table(
    path: Path,
    version: int | None,
    protocol: str | None,
    storage_options: Mapping[str, Any] | None,
) -> SnapshotFileSystem:
    """Open the data files of the newest ``_txn`` version (which must be ``version`` if set).

    A data file missing at open time is damage only if ``_txn`` still names the same version;
    otherwise compaction swept it after a newer version superseded ours: take the newer one.
    """
    snapshot = read_snapshot(path, storage_options=storage_options)
    for _ in range(_OPEN_ATTEMPTS):
        _check_version(path, version, snapshot.version)
        try:
            files = open_snapshot(snapshot)
        except MissingDataFileError as exc:
            newer = read_snapshot(path, storage_options=storage_options)
            if newer.version == snapshot.version:
                raise CorruptFileError(
                    f"Version {snapshot.version} of the table {str(path)!r} lists a data file "
                    f"that is gone ({exc}).",
                    0,
                ) from exc
            snapshot = newer
            continue
        return SnapshotFileSystem(path, snapshot.version, files, protocol, snapshot.schema)
    raise StreamwriteIOError(
        f"The table {str(path)!r} moved past {_OPEN_ATTEMPTS} versions while its data files "
        "were being opened (compaction with a grace period of 0 s?); try again."
    )


def snapshot_filesystem(
    path: str | os.PathLike[str],
    version: int | TableSnapshot | None = None,
    *,
    protocol: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> SnapshotFileSystem:
    """A read-only fsspec filesystem showing one committed version of the table at ``path``.

    Its root ``/`` is the table; it shows ``/<partition>/<segment>/data.parquet`` for each
    segment of the version, cut at its committed size, and nothing else (module docstring:
    the rules). Local data files are opened now and stay open until ``fs.close()``; cold
    segments are read from their objects by byte ranges.

    Args:
        path: a table directory (or a bare live-file directory: ``/data.parquet``), or a
            table URL (``s3://bucket/prefix``, any fsspec URL: the version the table
            published there, its cold segments).
        version: None for the newest ``_txn`` version; an int that must equal it (only the
            newest ``_txn`` record is kept on disk; a table URL also serves the published
            versions that retention kept); or a :class:`TableSnapshot` pinned with
            ``Table.snapshot()`` in this process (or read from the same URL).
        protocol: the view's URL scheme (``fs.protocol``, used by DuckDB); default a new
            ``streamwrite<N>`` for each view, so views of several versions can be registered
            at once.
        storage_options: fsspec keyword arguments (credentials, endpoint) reaching the cold
            storage or the table URL.

    Returns:
        The view; ``fs.version`` is the ``_txn`` version it shows. Use ``with`` or
        ``fs.close()`` to release its file descriptors.

    Raises:
        ConfigError: ``path`` is neither a table nor a live file, ``version`` is not the
            newest (or not committed), a live file was given a version, a snapshot of another
            table, or a ``protocol`` that is not a URL scheme.
        CorruptFileError: a data file listed by the version is gone or shorter than its
            committed size; a damaged ``_txn`` or ``_pm``.
        StateError: a released snapshot whose files were deleted.
        StreamwriteIOError: a data file cannot be opened; a table URL with no published
            version (``errno`` ``ENOENT``), or cold storage that cannot be reached.
    """
    location: Path | str = path if is_table_url(path) else Path(path)  # type: ignore[assignment]
    return _resolve(location, version, protocol, storage_options)
