"""A table's data skipping, kept by the writer: configuration, live sketches, the store.

``open_table(..., skipping={"symbol": ["valuelist", "bloom"], "price": ["minmax"]})`` configures
it; the configuration and the skipping store's state live in ``_txn`` (key ``"skipping"``,
:mod:`streamwrite.format.txn`), so they are published atomically with the segments they
describe::

    "skipping": {
      "config":   {"price": [["minmax", {}]], "symbol": [["valuelist", {...}], ["bloom", {...}]]},
                  SkippingConfig.to_json(): each kind with every parameter explicit
      "store":    {...}        streamwrite.skipping.SkippingStore.state: its files, lookup
                               generation, and the segments it holds an entry for, each at
                               the committed size the entry describes
    }

Kinds ``"minmax"``, ``"valuelist"`` and ``"bloom"`` go to the skipping store
(:mod:`streamwrite.skipping`, xskipper v4); ``"distinct"`` and ``"time_index"`` are embedded
indexes, written into every segment by the live-file writer (its write option
:data:`EMBEDDED_INDEX_OPTION`, :mod:`streamwrite.format.index`).

Rules (the invariant: **every entry describes its segment at the size the record lists**; a
segment the store does not hold, or holds at another size, is pruned by its own footer: row
group statistics, bloom filters, embedded index)::

    append        each row group's rows update the sketch of the segment they go to
                  (SegmentSketch; a sketch is complete when it saw every row of its segment:
                  a segment this process created; an older one is read once when needed);
                  the updates run in order on one thread of their own, beside encoding and
                  commits, and a sketch is used only once every update before is done
    commit        after the segments are synced and before _txn is published:
                  - a segment the commit grows loses its entry (remove)
                  - a segment that stops being its partition's newest (a new segment follows
                    it in the record: it is never written again) gets its entry (add_sealed)
                  - a partition's newest segment that this process sketched whole and that
                    neither this commit nor the one before wrote (a time partition the rows
                    moved past: it may never be written again) gets its entry too; should it
                    grow after all, it loses the entry in that commit, as any segment does
                  the store's files are written and fsynced there; the state goes in the record
    compaction    the merged segment's entry is added (sketched from its rows before the swap)
                  and the retired ones removed, in the record of the swap itself
    reopen        the record's state is the truth: files a crashed commit wrote for a version
                  never published are the store's to ignore (extra bits only cost a read);
                  sketches of live segments are rebuilt from their rows when needed
    config change reopening with another ``skipping=`` publishes the new configuration with
                  an empty store (never stale: every segment falls back to its footer), then
                  deletes the old store's files, until :func:`build_index` fills it (sealed
                  segments from then on are added at commit); ``skipping=None`` keeps the
                  table's
    readers       a reader that cannot open or read the store of its version (deleted by a
                  config change or a drop meanwhile) prunes without it: never wrongly
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from streamwrite.arrow.evolution import widen_table
from streamwrite.crypto.decryption import DecryptionConfig
from streamwrite.crypto.encryption import FileEncryption
from streamwrite.errors import ConfigError
from streamwrite.format.txn import DATA_FILE, Segment, TxnRecord
from streamwrite.io.local import SyncCall
from streamwrite.options import WRITE_OPTION_NAMES
from streamwrite.reader.file import ParquetFile
from streamwrite.skipping.config import EMBEDDED_KINDS, SkippingConfig
from streamwrite.skipping.sketch import SegmentSketch
from streamwrite.skipping.store import SkippingStore
from streamwrite.skipping.xskipper import StoreEntry

__all__ = [
    "EMBEDDED_INDEX_OPTION",
    "SKIPPING_DIRECTORY",
    "TableSkipping",
    "embedded_write_options",
    "parse_config",
    "partition_values",
    "sketch_segment",
]

SKIPPING_DIRECTORY = "_skipping"
"""The skipping store's directory in the table (hidden from engines: it starts with ``_``)."""
EMBEDDED_INDEX_OPTION = "embedded_index"
"""The live-file writer's option naming the embedded indexes per column (helper embed's; the
table passes the embedded kinds of its configuration through it)."""

Canonical = dict[str, list[list[Any]]]
"""The JSON form of a configuration (:meth:`SkippingConfig.to_json`, every parameter
explicit): two configurations are the same when their forms are equal."""


def parse_config(skipping: Mapping[str, Any], schema: pa.Schema) -> SkippingConfig:
    """``open_table(skipping=...)`` (or its JSON form from ``_txn``) checked against ``schema``.

    Raises:
        ConfigError: not a mapping of column -> kinds, an unknown column or kind, a kind its
            column's type cannot take, bad params.
    """
    return SkippingConfig.parse(skipping, schema)


def embedded_write_options(
    config: SkippingConfig, write_options: Mapping[str, Any]
) -> dict[str, Any]:
    """The table's write options with the embedded kinds of ``config`` added (the seam to the
    live-file writer's embedded index option).

    Raises:
        ConfigError: embedded kinds configured, and this build's writer has no embedded index
            option; or the caller gave that option too, differently.
    """
    embedded = config.embedded
    if not embedded:
        return dict(write_options)
    if EMBEDDED_INDEX_OPTION not in WRITE_OPTION_NAMES:
        raise ConfigError(
            f"The skipping kinds {list(EMBEDDED_KINDS)} are embedded indexes, and this writer "
            f"has no {EMBEDDED_INDEX_OPTION!r} option to write them; configured: {embedded}."
        )
    given = write_options.get(EMBEDDED_INDEX_OPTION)
    if given is not None and given != embedded:
        raise ConfigError(
            f"{EMBEDDED_INDEX_OPTION}={given!r} disagrees with the embedded kinds of "
            f"skipping= ({embedded}); give one of them."
        )
    return {**write_options, EMBEDDED_INDEX_OPTION: embedded}


def sketch_segment(
    directory: Path,
    size: int,
    config: SkippingConfig,
    schema: pa.Schema,
    decryption: DecryptionConfig | None,
) -> SegmentSketch:
    """Returns: the sketch of the segment in ``directory`` at committed ``size``, built from
    its rows (the indexed columns only; a column the segment lacks, added later, is null).

    Raises:
        CorruptFileError: the segment is damaged or missing.
    """
    target = pa.schema([schema.field(c) for c in config.columns])
    sketch = SegmentSketch(config, target)
    with ParquetFile(directory, snapshot=size, decryption=decryption) as pf:
        present = [c for c in target.names if c in pf.schema_arrow.names]
        for batch in pf.iter_batches(columns=present):
            sketch.update(widen_table(pa.Table.from_batches([batch]), target))
    return sketch


def partition_values(name: str) -> dict[str, pa.Scalar]:
    """The ``virtual_<partition column>`` values of segment ``name`` (``partition/segment``),
    as Spark's partition discovery types them: a day as a DATE, an hour or month (and the
    unpartitioned ``sw_partition=all``) as a STRING."""
    partition = name.partition("/")[0]
    column, _, value = partition.partition("=")
    if column.endswith("_day"):
        try:
            days = np.array([value], dtype="datetime64[D]").astype(np.int64)
            return {column: pa.array(days).cast(pa.int32()).cast(pa.date32())[0]}
        except ValueError:
            pass
    return {column: pa.scalar(value, pa.string())}


class TableSkipping:
    """The skipping state of one open table (module docstring: the rules)."""

    def __init__(
        self,
        path: Path,
        config: SkippingConfig,
        schema: pa.Schema,
        store: SkippingStore | None,
        decryption: DecryptionConfig | None,
    ) -> None:
        self.path = path
        self.config = config
        self.schema = schema
        self.store_config = config if config.store_indexes else None
        """The configuration, when it has store kinds (None: embedded indexes only)."""
        self.store = store
        self.decryption = decryption
        self._sketches: dict[str, SegmentSketch] = {}
        """Sketches of segments written since open; complete for those in :attr:`_complete`."""
        self._complete: set[str] = set()
        self._sketcher = ThreadPoolExecutor(1, thread_name_prefix="streamwrite-sketch")
        """Runs the sketch updates, in order, beside encoding and commits (off their path);
        a sketch is read only after every update submitted before is done."""
        self._last: Future[None] | None = None
        self._num_commits = 0
        self._written_at: dict[str, int] = {}
        """The commit number (of this process) that last wrote each segment."""

    @classmethod
    def open(
        cls,
        path: Path,
        record: TxnRecord,
        schema: pa.Schema,
        skipping: Mapping[str, Sequence[object]] | None,
        encryption: FileEncryption | None,
        decryption: DecryptionConfig | None,
    ) -> tuple[TableSkipping | None, bool]:
        """The table's skipping state: the record's, or ``skipping`` (compared in its JSON
        form) replacing it with an empty store.

        Returns:
            The state (None: the table has no skipping configuration), and whether the record
            must be republished with it (:meth:`value`): a new or changed configuration (then
            delete the old store's files once it is published: :meth:`drop_old_store`).

        Raises:
            ConfigError: a bad ``skipping``, or a stored state the store cannot read.
        """
        stored = record.skipping
        if skipping is None and stored is None:
            return None, False
        config = parse_config(skipping, schema) if skipping is not None else None
        changed = True
        state = None
        if stored is not None:
            kept = parse_config(stored["config"], schema)
            if config is None or config.to_json() == kept.to_json():
                config, changed, state = kept, False, stored.get("store")
        assert config is not None
        store = None
        if config.store_indexes:
            store = SkippingStore.open(path, config, state, encryption)
        return cls(path, config, schema, store, decryption), changed

    def value(self) -> dict[str, Any]:
        """The record's ``"skipping"`` value now."""
        return {
            "config": self.config.to_json(),
            "store": None if self.store is None else self.store.state,
        }

    def drop_old_store(self) -> None:
        """Delete every store file (blocking): after publishing a changed configuration with
        an empty store, the old one's files are named by no version from now on."""
        SkippingStore.drop(self.path)

    def held(self) -> dict[str, int]:
        """The segments the store holds an entry for, each at its committed size."""
        return {} if self.store is None else self.store.segments

    # -- appends ------------------------------------------------------------------------

    def created(self, name: str) -> None:
        """``name`` (``partition/segment``) is a new segment: its sketch sees all its rows."""
        if self.store_config is not None:
            self._sketches[name] = SegmentSketch(self.store_config, self.schema)
            self._complete.add(name)

    def observe(self, name: str, rows: pa.Table) -> None:
        """Rows of segment ``name`` (a row group cut for it) update its sketch. Rows whose
        commit fails stay in it: a sketch that holds more than its segment never prunes
        wrongly (and the table is poisoned then: reopening starts afresh)."""
        if self.store_config is None:
            return
        sketch = self._sketches.get(name)
        if sketch is None:
            sketch = self._sketches[name] = SegmentSketch(self.store_config, self.schema)
        self._last = self._sketcher.submit(sketch.update, rows)

    def _settle(self) -> None:
        """Wait for every sketch update submitted so far (raising the first failure)."""
        last = self._last
        if last is not None:
            last.result()

    def close(self) -> None:
        """Stop the sketch thread (the sketches are not needed any more)."""
        self._sketcher.shutdown(wait=False, cancel_futures=True)

    def entry(self, name: str, size: int, sketch: SegmentSketch) -> StoreEntry:
        """The store entry of segment ``name`` at committed ``size``."""
        return StoreEntry(
            name,
            str((self.path / name / DATA_FILE).absolute()),
            size,
            sketch,
            partition=partition_values(name),
        )

    def _sketch(self, name: str, size: int, keep: bool = False) -> SegmentSketch:
        """The complete sketch of segment ``name`` at ``size`` (read from its rows unless this
        process saw them all; ``keep``: a copy, the segment's own goes on seeing its rows)."""
        assert self.store_config is not None
        if name in self._complete:
            self._settle()
            if keep:
                copy = SegmentSketch(self.store_config, self.schema)
                copy.merge(self._sketches[name])
                return copy
            self._complete.discard(name)
            return self._sketches.pop(name)
        self._sketches.pop(name, None)
        return sketch_segment(
            self.path / name, size, self.store_config, self.schema, self.decryption
        )

    # -- commits ------------------------------------------------------------------------

    def sync_call(
        self,
        published: TxnRecord,
        written: Iterable[tuple[str, Segment]],
        out: list[dict[str, Any]],
    ) -> SyncCall:
        """The commit's sync-round call (it runs beside the segments' fsyncs) that maintains
        the store for the segments ``written`` (``(partition, segment)``: their data written,
        sizes final) over ``published``, and puts the record's ``"skipping"`` value in
        ``out``."""
        segments: dict[str, list[Segment]] = {}
        for partition, segment in written:
            segments.setdefault(partition, []).append(segment)
        record = published.next(segments)

        def call() -> None:
            out.append(self.commit(published, record))

        return ("the skipping store's maintenance", call)

    def commit(self, published: TxnRecord, record: TxnRecord) -> dict[str, Any]:
        """Maintain the store for the commit from ``published`` to ``record`` (blocking:
        writes and fsyncs the store's files; the table runs it in the commit's sync round,
        beside the segments' fsyncs, before ``record`` is published).

        Returns:
            The record's new ``"skipping"`` value.
        """
        store = self.store
        if store is None:
            return self.value()
        held = store.segments
        self._num_commits += 1
        grown: list[str] = []
        sealed: list[tuple[str, int]] = []
        quiet: list[tuple[str, int]] = []
        for partition, segments in record.partitions.items():
            before = {s.name: s.size for s in published.partitions.get(partition, ())}
            newest = list(before)[-1] if before else None
            for index, segment in enumerate(segments):
                name = f"{partition}/{segment.name}"
                if before.get(segment.name) != segment.size:
                    self._written_at[name] = self._num_commits
                if name in held:
                    if held[name] == segment.size:
                        continue
                    grown.append(name)  # appended to: its entry no longer covers it
                if index < len(segments) - 1:
                    if segment.name not in before or newest == segment.name:
                        # it was its partition's newest (or is new) and is followed now
                        sealed.append((name, segment.size))
                elif (
                    name in self._complete and self._written_at.get(name, 0) < self._num_commits - 1
                ):
                    quiet.append((name, segment.size))  # its partition's newest, quiet
        if not grown and not sealed and not quiet and published.skipping is not None:
            return dict(published.skipping)  # unchanged: no copy of the store's state
        if grown:
            store.remove(grown)
        entries = [self.entry(n, size, self._sketch(n, size)) for n, size in sealed]
        entries += [self.entry(n, size, self._sketch(n, size, keep=True)) for n, size in quiet]
        if entries:
            store.add_sealed(entries)
        for name, _ in sealed:
            self._written_at.pop(name, None)
        return self.value()

    def compacted(
        self,
        record: TxnRecord,
        partition: str,
        replaced: Iterable[str],
        merged: Segment,
        sketch: SegmentSketch | None,
    ) -> TxnRecord:
        """``record`` (the swap's) with the merged segment's entry added and the retired
        segments' removed (blocking: the store's files are written and fsynced)."""
        store = self.store
        if store is not None and sketch is not None:
            held = store.segments
            gone = [f"{partition}/{n}" for n in replaced if f"{partition}/{n}" in held]
            if gone:
                store.remove(gone)
            store.add_sealed([self.entry(f"{partition}/{merged.name}", merged.size, sketch)])
        for old in replaced:
            self._sketches.pop(f"{partition}/{old}", None)
            self._complete.discard(f"{partition}/{old}")
        return replace(record, skipping=self.value())

    def merged_sketch(self, partition: str, merged: Segment) -> SegmentSketch | None:
        """The sketch of a merged segment, from its rows (blocking; None: no store)."""
        if self.store_config is None:
            return None
        return sketch_segment(
            self.path / partition / merged.name,
            merged.size,
            self.store_config,
            self.schema,
            self.decryption,
        )

    def evolved(self, schema: pa.Schema) -> None:
        """The table's schema widened (``add_columns``): new segments are sketched with it."""
        self.schema = schema
