"""The table's skipping store: xskipper v4 files for other engines, a fast lookup for us.

Directory ``<table>/_skipping/<sha256(tableIdentifier)>/`` (:mod:`.xskipper`)::

    part-00000-<hex>-c000          xskipper v4 files, one per add_sealed call (or rebuild)
    _lookup/g<generation>/         the fast lookup of the current generation (:mod:`.lookup`)
    .<name>.tmp                    files being written (hidden, removed on failure)

State (a JSON-able dict the table keeps in ``_txn``; :attr:`SkippingStore.state`)::

    {"format": 1, "config": <SkippingConfig.to_json()>, "generation": g, "next_slot": n,
     "segments": {name: [slot, committed_size, file]}, "files": [file, ...],
     "minmax": "minmax.<seq>" | null, "seq": seq, "slices": {"<col>/<kind>": [n, bit_size, k]},
     "types": <base64 Arrow schema of the indexed columns' types>,
     "partitions": <base64 Arrow schema of the partition columns> | null}

Rules: every call writes new files (or only adds bits), fsyncs them and returns the new state;
the table publishes it in ``_txn`` afterwards. A crash before the publish leaves files that
the published state does not name: the next maintenance call deletes those xskipper files, and
extra bits of unpublished slots only cost reads. A call assumes the state returned by the
previous call was published; it then deletes the lookup generations and min/max files that
neither that state nor the one before it names (one call of grace for readers pinned to the
previous ``_txn``; a reader whose files are gone finds nothing and reads every segment).
Retired segments leave the state at once, and their xskipper rows with them: a file all of
whose rows are retired is deleted, a file with live rows is rewritten without the retired ones
(read back with pyarrow, through the table's KMS when encrypted), in the same call.
Segments not in the store are always read.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from streamwrite.crypto.encryption import FileEncryption
from streamwrite.errors import ConfigError, StateError, StreamwriteIOError
from streamwrite.io.local import fsync_directory
from streamwrite.predicate import ColumnStats, Containers, Expr, columns, prune
from streamwrite.skipping.config import IndexSpec, SkippingConfig
from streamwrite.skipping.lookup import (
    SliceFile,
    member_positions,
    minmax_rows,
    minmax_schema,
    read_minmax,
    sketch_positions,
    slice_geometry,
    write_minmax,
)
from streamwrite.skipping.sketch import normalize_values
from streamwrite.skipping.xskipper import (
    ROWS_KEY,
    SPARK_SCHEMA_KEY,
    StoreEntry,
    read_store_file,
    store_directory,
    store_encryption,
    table_identifier,
    write_store_file,
    xskipper_table,
)

__all__ = ["SkippingStore"]

FORMAT = 1
MAX_ROWS_PER_FILE = 50_000  # xskipper's maxRecordsPerMetadataFile


def _schema_b64(schema: pa.Schema | None) -> str | None:
    return None if schema is None else base64.b64encode(schema.serialize().to_pybytes()).decode()


def _schema_of(text: str | None) -> pa.Schema | None:
    return None if text is None else pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


class SkippingStore:
    """A table's skipping store (make one with :meth:`open`).

    Attributes:
        directory: ``<table>/_skipping/<sha256(tableIdentifier)>``.
        config: The skipping config.
        last_lookup_size: Bytes of lookup structures the last :meth:`prune` read.
    """

    def __init__(
        self,
        table_path: Path,
        config: SkippingConfig,
        state: Mapping[str, Any],
        encryption: FileEncryption | None,
        read_only: bool = False,
    ) -> None:
        self.table_path = table_path
        self.directory = store_directory(table_path)
        self.config = config
        self._encryption = encryption
        self._read_only = read_only
        # a reader's store shares the published state (never changed); a writer's copies it
        self._state: dict[str, Any] = dict(state) if read_only else _copy(state)
        self._previous: dict[str, Any] = self._state if read_only else _copy(state)
        self._slices: dict[str, SliceFile] = {}
        self._minmax_cache: tuple[tuple[str, int, int], pa.Table] | None = None
        self.last_lookup_size = 0

    # -- opening and state ----------------------------------------------------------------

    @classmethod
    def open(
        cls,
        table_path: str | os.PathLike[str],
        config: SkippingConfig | Mapping[str, Any],
        state: Mapping[str, Any] | None = None,
        encryption: FileEncryption | None = None,
        *,
        read_only: bool = False,
    ) -> SkippingStore:
        """Open a table's store at its published ``state`` (None: an empty store).

        Opening only reads: the first maintenance call deletes what a crash left (files the
        published state does not name), so readers may open the store concurrently.

        Args:
            table_path: The table's directory.
            config: Its skipping config (or the mapping :meth:`SkippingConfig.parse` takes).
            state: The store state from the table's ``_txn``, or None.
            encryption: The table's encryption (the store encrypts its files alike: index
                columns with their column's key, ``obj_name`` with the footer key).
            read_only: For a reader (``prune``, ``containers``, ``show``): the state is used
                as given, not copied, and maintenance raises StateError.

        Returns:
            The store. With a state made under another config, :attr:`needs_rebuild` is True
            and :meth:`prune` keeps every segment until :meth:`rebuild`.

        Raises:
            ConfigError: A bad config or state, or encryption without key labels.
        """
        parsed = SkippingConfig.parse(config)
        if state is None:
            state = _empty_state(parsed, 0)
        elif not isinstance(state, Mapping) or state.get("format") != FORMAT:
            raise ConfigError(f"The skipping store state {state!r} is not of format {FORMAT}.")
        return cls(Path(table_path), parsed, state, encryption, read_only)

    def _check_writable(self) -> None:
        if self._read_only:
            raise StateError("This skipping store was opened read-only (by a reader).")

    @property
    def state(self) -> dict[str, Any]:
        """The JSON-able state to publish in ``_txn`` (a copy)."""
        return _copy(self._state)

    @property
    def needs_rebuild(self) -> bool:
        """True when the state was built under another config."""
        return bool(self._state["config"] != self.config.to_json())

    @property
    def segments(self) -> dict[str, int]:
        """Indexed segments and their committed sizes."""
        return {name: int(v[1]) for name, v in self._state["segments"].items()}

    def _lookup_dir(self, generation: int | None = None) -> Path:
        g = self._state["generation"] if generation is None else generation
        return self.directory / "_lookup" / f"g{g}"

    def _remove_orphans(self) -> None:
        if not self.directory.is_dir():
            return
        # the state before the last call may be the published one still (a table's step
        # removes and adds in two calls before it publishes): its files stay too
        named = set(self._state["files"]) | set(self._previous["files"])
        for path in self.directory.iterdir():
            orphan = path.name.startswith("part-") and path.name not in named
            temporary = path.name.startswith(".") and path.name.endswith(".tmp")
            if path.is_file() and (orphan or temporary):
                path.unlink(missing_ok=True)

    def _collect(self) -> None:
        """Delete what neither the previous (published) state nor the current one names."""
        self._remove_orphans()
        keep_generations = {self._state["generation"], self._previous["generation"]}
        lookup_root = self.directory / "_lookup"
        if lookup_root.is_dir():
            for path in lookup_root.iterdir():
                generation = path.name[1:]
                stale = generation.isdigit() and int(generation) not in keep_generations
                if path.name.startswith("g") and stale:
                    shutil.rmtree(path, ignore_errors=True)
        current = self._lookup_dir()
        keep_minmax = {self._state["minmax"], self._previous["minmax"]}
        if current.is_dir():
            for path in current.iterdir():
                if path.name.startswith("minmax.") and path.name not in keep_minmax:
                    path.unlink(missing_ok=True)

    # -- maintenance ----------------------------------------------------------------------

    def add_sealed(self, entries: Sequence[StoreEntry]) -> dict[str, Any]:
        """Index sealed segments: one new xskipper file, their slices and min/max.

        A segment already in the store is replaced (its old row becomes stale).

        Returns:
            The new state (publish it in ``_txn``).

        Raises:
            ConfigError: An entry's sketch is of another config.
            StreamwriteIOError: Writing fails; the store's published state stays valid.
        """
        self._check_writable()
        entries = list(entries)
        self._collect()
        self._previous = _copy(self._state)
        if not entries:
            return self.state
        for e in entries:
            if e.sketch.config != self.config:
                raise ConfigError(
                    f"The sketch of segment {e.segment!r} was made under another skipping "
                    "config than the store's."
                )
        if self.needs_rebuild:
            raise ConfigError(
                "The skipping store was built under another config: rebuild() it first."
            )
        new = _copy(self._state)
        self._fix_types(new, entries)
        files = self._write_files(new, entries)
        first = int(new["next_slot"])
        slots = list(range(first, first + len(entries)))
        self._write_lookup(new, entries, slots)
        for e, slot in zip(entries, slots, strict=True):
            new["segments"][e.segment] = [slot, int(e.committed_size), files[e.segment]]
        new["next_slot"] = first + len(entries)
        self._state = new
        return self.state

    def remove(self, segment_names: Iterable[str]) -> dict[str, Any]:
        """Drop retired segments from the store (in the step that retires them).

        Returns:
            The new state.
        """
        self._check_writable()
        self._collect()
        self._previous = _copy(self._state)
        new = _copy(self._state)
        touched = set()
        for name in segment_names:
            found = new["segments"].pop(name, None)
            if found is not None:
                touched.add(found[2])
        live_files = {v[2] for v in new["segments"].values()}
        gone = [f for f in new["files"] if f not in live_files]
        replaced = [f for f in new["files"] if f in live_files and f in touched]
        for name in replaced:
            rewritten = self._rewrite_without(name, new["segments"])
            new["files"][new["files"].index(name)] = rewritten
            for entry in new["segments"].values():
                if entry[2] == name:
                    entry[2] = rewritten
        new["files"] = [f for f in new["files"] if f not in gone]
        self._state = new
        # the files of gone and replaced segments stay until a later maintenance call: the
        # published state names them until the caller publishes this one (a crash between
        # must find them); _collect deletes what neither of the two newest states names
        return self.state

    def _rewrite_without(self, name: str, live: Mapping[str, Any]) -> str:
        """Write a copy of store file ``name`` holding only the rows of ``live`` segments.

        Returns:
            The new file's name.
        """
        table, meta = read_store_file(self.directory / name, self._encryption)
        rows = json.loads(meta[ROWS_KEY])
        keep = [str(segment) in live for segment, _ in rows]
        kept_rows = [(str(seg), int(size)) for (seg, size), k in zip(rows, keep, strict=True) if k]
        partitions = self._partition_types(self._state)
        encryption = store_encryption(self._encryption, self.config, list(partitions))
        new_name, _ = write_store_file(
            self.directory,
            table.filter(pa.array(keep, pa.bool_())),
            meta[SPARK_SCHEMA_KEY],
            kept_rows,
            encryption,
        )
        return new_name

    def rebuild(self, entries: Sequence[StoreEntry]) -> dict[str, Any]:
        """Replace the whole store with ``entries`` (a new generation: consolidation,
        ``streamwrite index build``, or a changed config).

        Returns:
            The new state.

        Raises:
            ConfigError: An entry's sketch is of another config.
            StreamwriteIOError: Writing fails.
        """
        self._check_writable()
        entries = list(entries)
        self._collect()
        self._previous = _copy(self._state)
        for e in entries:
            if e.sketch.config != self.config:
                raise ConfigError(
                    f"The sketch of segment {e.segment!r} was made under another skipping config."
                )
        new = _empty_state(self.config, int(self._state["generation"]) + 1)
        self._state = new  # the lookup directory of the new generation
        try:
            if entries:
                self._fix_types(new, entries)
                files = self._write_files(new, entries)
                slots = list(range(len(entries)))
                self._write_lookup(new, entries, slots)
                for e, slot in zip(entries, slots, strict=True):
                    new["segments"][e.segment] = [slot, int(e.committed_size), files[e.segment]]
                new["next_slot"] = len(entries)
        except BaseException:
            self._state = self._previous
            raise
        # the old files stay until the next maintenance call (see remove)
        self._slices.clear()
        return self.state

    def _fix_types(self, new: dict[str, Any], entries: Sequence[StoreEntry]) -> None:
        sketch = entries[0].sketch
        if new["types"] is None:
            types = pa.schema([(c, s.dtype) for c, s in sketch.columns.items()])
            new["types"] = _schema_b64(types)
            parts = entries[0].partition
            new["partitions"] = (
                _schema_b64(pa.schema([(k, v.type) for k, v in parts.items()])) if parts else None
            )

    def _partition_types(self, state: Mapping[str, Any]) -> dict[str, pa.DataType]:
        schema = _schema_of(state["partitions"])
        return {} if schema is None else {f.name: f.type for f in schema}

    def _write_files(self, new: dict[str, Any], entries: Sequence[StoreEntry]) -> dict[str, str]:
        partitions = self._partition_types(new)
        encryption = store_encryption(self._encryption, self.config, list(partitions))
        identifier = table_identifier(self.table_path)
        out: dict[str, str] = {}
        for start in range(0, len(entries), MAX_ROWS_PER_FILE):
            part = entries[start : start + MAX_ROWS_PER_FILE]
            table, spark_json = xskipper_table(
                part, self.config, identifier, partitions, encryption
            )
            rows = [(e.segment, int(e.committed_size)) for e in part]
            name, _ = write_store_file(self.directory, table, spark_json, rows, encryption)
            new["files"].append(name)
            out.update((e.segment, name) for e in part)
        return out

    def _slice_file(self, index: IndexSpec, state: Mapping[str, Any]) -> SliceFile:
        number, bit_size, _ = state["slices"][index.key]
        key = f"{state['generation']}/{number}"
        found = self._slices.get(key)
        if found is None:
            path = self.directory / "_lookup" / f"g{state['generation']}" / f"slices.{number}"
            found = self._slices[key] = SliceFile(path, int(bit_size))
        return found

    def _write_lookup(
        self, new: dict[str, Any], entries: Sequence[StoreEntry], slots: Sequence[int]
    ) -> None:
        lookup = self.directory / "_lookup" / f"g{new['generation']}"
        try:
            if not lookup.is_dir():
                lookup.mkdir(parents=True)
                current = lookup
                while current != self.table_path and current.parent != current:
                    fsync_directory(current.parent)
                    current = current.parent
        except OSError as exc:
            raise StreamwriteIOError(f"Creating {lookup} failed: {exc}.") from exc
        for index in self.config.store_indexes:
            if index.kind == "minmax":
                continue
            _, bit_size, k = new["slices"][index.key]
            positions = [
                sketch_positions(index, int(k), int(bit_size), e.sketch.columns[index.column])
                for e in entries
            ]
            self._slice_file(index, new).add(list(slots), positions)
        minmax_columns = {
            i.column: entries[0].sketch.columns[i.column].dtype
            for i in self.config.store_indexes
            if i.kind == "minmax"
        }
        if not minmax_columns:
            return
        schema = minmax_schema(minmax_columns)
        added = minmax_rows(schema, [e.sketch.columns for e in entries])
        old = None
        if new["minmax"] is not None:
            old, _ = read_minmax(lookup / new["minmax"], schema.names)
        table = added if old is None else pa.concat_tables([old.cast(schema), added])
        if table.num_rows != slots[-1] + 1:
            # Rows of slots without a row (never expected): pad with unknown bounds.
            table = _pad(table, slots[-1] + 1, schema, added, slots[0])
        seq = int(new["seq"]) + 1
        name = f"minmax.{seq}"
        write_minmax(lookup / name, table)
        new["minmax"], new["seq"] = name, seq

    # -- lookup ---------------------------------------------------------------------------

    def containers(
        self, segments: Sequence[str], needed: Iterable[str] | None = None
    ) -> Containers:
        """What the store knows of ``segments`` (unknown segments: nothing).

        Args:
            segments: Segment names.
            needed: Columns to load (None: every indexed column).

        Returns:
            The segments as :class:`~streamwrite.predicate.Containers`.
        """
        n = len(segments)
        self.last_lookup_size = 0
        if self.needs_rebuild or not self._state["segments"] or self._state["types"] is None:
            return Containers(n, {})
        table_slots = self._state["segments"]
        slots = np.array(
            [table_slots[s][0] if s in table_slots else -1 for s in segments], np.int64
        )
        types = _schema_of(self._state["types"])
        assert types is not None
        wanted = set(self.config.columns if needed is None else needed) & set(types.names)
        stats: dict[str, ColumnStats] = {}
        for column in self.config.columns:
            if column not in wanted:
                continue
            kinds = [i for i in self.config.store_indexes if i.column == column]
            if not kinds:
                continue
            dtype = types.field(column).type
            stats[column] = self._column_stats(column, dtype, kinds, slots)
        return Containers(n, stats)

    def _column_stats(
        self, column: str, dtype: pa.DataType, kinds: list[IndexSpec], slots: npt.NDArray[np.int64]
    ) -> ColumnStats:
        n = len(slots)
        unknown = slots < 0
        take = pa.array(np.where(unknown, 0, slots), pa.int64(), mask=unknown)
        lo: pa.Array = pa.nulls(n, dtype)
        hi: pa.Array = pa.nulls(n, dtype)
        null_count = nan_count = None
        num_values = None
        if any(i.kind == "minmax" for i in kinds) and self._state["minmax"] is not None:
            names = [f"{column}.{w}" for w in ("min", "max", "nulls", "nans", "rows")]
            table = self._minmax_table()
            if table is not None:
                table = table.select(names)
                self.last_lookup_size += int(table.nbytes)
                lo, hi, nulls, nans, rows = (table.column(c).chunk(0).take(take) for c in names)
                null_count, nan_count = nulls, nans
                if not unknown.any():
                    num_values = np.asarray(rows.to_numpy(zero_copy_only=False), np.int64)
        slice_kinds = [i for i in kinds if i.kind != "minmax"]
        might_contain = None
        if slice_kinds:

            def might_contain(literals: pa.Array) -> npt.NDArray[np.bool_]:
                values = normalize_values(literals, dtype)
                out = np.ones((n, len(values)), dtype=bool)
                valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), bool)
                for index in slice_kinds:
                    _, bit_size, k = self._state["slices"][index.key]
                    pos = member_positions(index, int(k), int(bit_size), values.filter(valid))
                    found, size = self._slice_file(index, self._state).might_contain(pos, slots)
                    self.last_lookup_size += size
                    out[:, valid] &= found
                return out

        return ColumnStats(
            num_values=num_values,
            null_count=null_count,
            min=lo,
            max=hi,
            nan_count=nan_count if pa.types.is_floating(dtype) else None,
            might_contain=might_contain,
        )

    def _minmax_table(self) -> pa.Table | None:
        """The current min/max file, cached by (name, mtime, size): files are written once
        under a name (a crashed call's file may be replaced, with a new mtime)."""
        path = self._lookup_dir() / self._state["minmax"]
        try:
            info = path.stat()
        except FileNotFoundError:
            return None
        key = (str(path), info.st_mtime_ns, info.st_size)
        if self._minmax_cache is None or self._minmax_cache[0] != key:
            names = pa.ipc.open_file(pa.memory_map(str(path), "r")).schema.names
            table, _ = read_minmax(path, names)
            if table is None:
                return None
            self._minmax_cache = (key, table)
        return self._minmax_cache[1]

    def prune(self, expr: Expr, segments: Sequence[str]) -> npt.NDArray[np.bool_]:
        """Which segments might hold a row where ``expr`` (a bound filter) is TRUE.

        Segments the store does not hold (live ones, unknown names) are always True.

        Returns:
            A bool array, one entry per segment.
        """
        containers = self.containers(segments, columns(expr))
        if not containers.columns:
            return np.ones(len(segments), dtype=bool)
        return np.asarray(prune(expr, containers), dtype=bool)

    def show(self) -> str:
        """Returns: a description of the store (for ``streamwrite index show``)."""
        s = self._state
        lines = [
            f"skipping store {self.directory}",
            f"  generation {s['generation']}, {len(s['segments'])} segments indexed, "
            f"{len(s['files'])} xskipper v4 files"
            + (" (needs rebuild: the config changed)" if self.needs_rebuild else ""),
        ]
        for index in self.config.indexes:
            detail = ""
            if index.key in s["slices"]:
                _, bit_size, k = s["slices"][index.key]
                detail = (
                    f" (lookup slices: {bit_size} bits, k={k}, ndv={index.ndv}, fpp={index.fpp})"
                )
            elif index.kind not in ("minmax",):
                detail = " (embedded index, written by the table's files)"
            lines.append(f"  {index.column}: {index.kind}{detail}")
        total = 0
        for name in s["files"]:
            try:
                total += (self.directory / name).stat().st_size
            except OSError:
                continue
        lines.append(f"  xskipper files: {total} bytes")
        return "\n".join(lines)

    @staticmethod
    def drop(table_path: str | os.PathLike[str]) -> None:
        """Delete a table's whole store directory (``streamwrite index drop``)."""
        shutil.rmtree(store_directory(table_path), ignore_errors=True)


def _empty_state(config: SkippingConfig, generation: int) -> dict[str, Any]:
    slices: dict[str, list[int]] = {}
    for n, index in enumerate(config.store_indexes):
        if index.kind != "minmax":
            bit_size, k = slice_geometry(index)
            slices[index.key] = [n, bit_size, k]
    return {
        "format": FORMAT,
        "config": config.to_json(),
        "generation": generation,
        "next_slot": 0,
        "segments": {},
        "files": [],
        "minmax": None,
        "seq": 0,
        "slices": slices,
        "types": None,
        "partitions": None,
        "created_ms": int(time.time() * 1000),
    }


def _copy(state: Mapping[str, Any]) -> dict[str, Any]:
    copied: dict[str, Any] = json.loads(json.dumps(state))
    return copied


def _pad(
    table: pa.Table, num_rows: int, schema: pa.Schema, added: pa.Table, first: int
) -> pa.Table:
    head = table.slice(0, min(first, table.num_rows))
    gap = first - head.num_rows
    filler = pa.Table.from_arrays([pa.nulls(gap, f.type) for f in schema], schema=schema)
    return pa.concat_tables([head, filler, added])
