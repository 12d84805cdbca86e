"""The store's fast lookup: bit-sliced membership and compact min/max, under a hidden directory.

Files of one generation (``_skipping/<h>/_lookup/g<generation>/``, hidden from Spark)::

    slices.<n>         index n (bloom or valuelist) of the config, bit_size = B bits per slot:
                       block* where block b covers slots [64 b, 64 b + 64):
                         block := u64 LE word[B];  bit s of word p = slot 64 b + s has bit p
                       (a needle reads k words per block: 8 k bytes per 64 segments)
    minmax.<seq>       Arrow IPC file, one row per slot (slot order, retired slots included):
                       for each indexed column c: "<c>.min", "<c>.max" (the column's type),
                       "<c>.nulls", "<c>.nans", "<c>.rows" (int64); rewritten whole under the
                       next seq by every add (a few KB per column at 1,000 segments)

Membership keys: a bloom index sets the bits of its segment's Spark bloom filter (the same
positions as the xskipper bloom column); a valuelist index hashes each distinct value with the
same scheme at its own (ndv, fpp): strings/binaries as bytes, integers, booleans, dates and
timestamps as longs (their integer value in the column's unit), floats as the longs of their
float64 bits (-0.0 folded into 0.0), decimals as their text at the column's scale.

Rules: bits are only ever set (a crash between writing bits and publishing the table's ``_txn``
leaves extra bits on an unpublished slot: a false "might contain", never a missed row); slots
are never reused within a generation; every file is fsync'd before the new state is returned.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from streamwrite.errors import StreamwriteIOError
from streamwrite.io.local import fsync_directory
from streamwrite.skipping.bloom import SparkBloomFilter, bit_positions_bytes, bit_positions_longs
from streamwrite.skipping.config import IndexSpec
from streamwrite.skipping.sketch import ColumnSketch

__all__ = ["SLOTS_PER_BLOCK", "SliceFile", "member_positions", "read_minmax", "write_minmax"]

SLOTS_PER_BLOCK = 64


def _key_arrays(
    values: pa.Array,
) -> tuple[
    npt.NDArray[np.int64] | None, tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]] | None
]:
    """Values as longs, or as byte strings (offsets, data): the membership key of each."""
    t = values.type
    if pa.types.is_decimal(t):
        values = values.cast(pa.string())
        t = values.type
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        large = values.cast(pa.large_binary())
        _, offsets_buf, data_buf = large.buffers()
        offsets = np.frombuffer(offsets_buf, dtype=np.int64)[
            large.offset : large.offset + len(large) + 1
        ]
        data = (
            np.zeros(0, np.uint8) if data_buf is None else np.frombuffer(data_buf, dtype=np.uint8)
        )
        return None, (offsets, data)
    if pa.types.is_floating(t):
        floats = np.asarray(values.cast(pa.float64()).to_numpy(zero_copy_only=False))
        return np.ascontiguousarray(floats + 0.0).view(np.int64), None
    if pa.types.is_boolean(t):
        return np.asarray(values.cast(pa.int64()).to_numpy(zero_copy_only=False)), None
    if pa.types.is_uint64(t):
        return np.asarray(values.to_numpy(zero_copy_only=False)).view(np.int64), None
    if pa.types.is_date64(t):
        values = values.cast(pa.date32())
    storage = pa.int32() if pa.types.is_date32(values.type) else pa.int64()
    ints = values.view(storage) if not pa.types.is_integer(values.type) else values
    return np.asarray(ints.cast(pa.int64()).to_numpy(zero_copy_only=False)), None


def member_positions(
    index: IndexSpec, k: int, bit_size: int, values: pa.Array
) -> npt.NDArray[np.int64]:
    """The ``(N, k)`` bit positions of non-null ``values`` under ``index``'s hashing.

    Returns:
        int64 positions (a bloom index hashes as Spark does: ints as longs, strings as UTF-8).
    """
    if values.null_count:
        values = pc.drop_null(values)
    longs, strings = _key_arrays(values)
    if longs is not None:
        return bit_positions_longs(longs, k, bit_size)
    assert strings is not None
    return bit_positions_bytes(strings[0], strings[1], k, bit_size)


def sketch_positions(
    index: IndexSpec, k: int, bit_size: int, sketch: ColumnSketch
) -> npt.NDArray[np.int64]:
    """Returns: the distinct bit positions a segment sets in ``index``'s slices."""
    if index.kind == "bloom":
        assert sketch.bloom is not None
        bits = np.unpackbits(sketch.bloom.words.view(np.uint8), bitorder="little")
        return np.flatnonzero(bits).astype(np.int64)
    distinct = sketch.distinct()
    if distinct is None or len(distinct) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.unique(member_positions(index, k, bit_size, distinct))


def slice_geometry(index: IndexSpec) -> tuple[int, int]:
    """Returns: ``(bit_size, k)`` of an index's slices (Spark's sizing at its ndv/fpp)."""
    num_bits, k = SparkBloomFilter.sizing(index.ndv, index.fpp)
    return (num_bits + 63) // 64 * 64, k


class SliceFile:
    """The bit slices of one index (``slices.<n>``): set bits of slots, test needles."""

    def __init__(self, path: Path, bit_size: int) -> None:
        self.path = path
        self.bit_size = bit_size
        self._map: npt.NDArray[np.uint64] | None = None
        self._mapped_blocks = 0

    @property
    def block_size(self) -> int:
        """Bytes per block of 64 slots."""
        return self.bit_size * 8

    def add(self, slots: Sequence[int], positions: Sequence[npt.NDArray[np.int64]]) -> None:
        """Set ``positions[i]`` for slot ``slots[i]`` (growing the file), then fsync.

        Raises:
            StreamwriteIOError: Writing or syncing fails.
        """
        if not slots:
            return
        num_blocks = max(slots) // SLOTS_PER_BLOCK + 1
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                size = os.fstat(fd).st_size
                if size < num_blocks * self.block_size:
                    os.ftruncate(fd, num_blocks * self.block_size)
                with mmap.mmap(fd, num_blocks * self.block_size) as region:
                    words = np.frombuffer(region, dtype="<u8")
                    for slot, pos in zip(slots, positions, strict=True):
                        if len(pos) == 0:
                            continue
                        block, bit = divmod(slot, SLOTS_PER_BLOCK)
                        words[block * self.bit_size + pos] |= np.uint64(1) << np.uint64(bit)
                    del words
                os.fsync(fd)  # writes back the mapping's dirty pages too (no msync needed)
            finally:
                os.close(fd)
        except OSError as exc:
            raise StreamwriteIOError(f"Writing skipping slices {self.path} failed: {exc}.") from exc
        self._map = None

    def might_contain(
        self, positions: npt.NDArray[np.int64], slots: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.bool_], int]:
        """Test needles against slots.

        Args:
            positions: ``(L, k)`` bit positions of L needles.
            slots: N slot numbers (-1: not in the store, answered True).

        Returns:
            ``((N, L) bool, bytes read)``.
        """
        n, num_needles = len(slots), len(positions)
        out = np.ones((n, num_needles), dtype=bool)
        known = slots >= 0
        if not known.any() or num_needles == 0:
            return out, 0
        words = self._words()
        if words is None:
            return out, 0
        blocks = np.unique(slots[known] // SLOTS_PER_BLOCK)
        blocks = blocks[blocks < len(words) // self.bit_size]
        # (blocks, L, k) words -> AND over k -> (blocks, L) 64-slot masks
        gathered = words[blocks[:, None, None] * self.bit_size + positions[None, :, :]]
        masks = np.bitwise_and.reduce(gathered, axis=2)
        bytes_read = int(gathered.size) * 8
        where = np.searchsorted(blocks, slots // SLOTS_PER_BLOCK)
        present = known & (where < len(blocks))
        present[present] &= blocks[where[present]] == slots[present] // SLOTS_PER_BLOCK
        rows = np.flatnonzero(present)
        bits = (slots[rows] % SLOTS_PER_BLOCK).astype(np.uint64)
        hit = (masks[where[rows]] >> bits[:, None]) & np.uint64(1)
        out[rows] = hit.astype(bool)
        # Known slots beyond the file's blocks have no bits: nothing was added for them.
        out[known & ~present] = False
        return out, bytes_read

    def _words(self) -> npt.NDArray[np.uint64] | None:
        try:
            size = os.stat(self.path).st_size
        except FileNotFoundError:
            return None
        blocks = size // self.block_size
        if blocks == 0:
            return None
        if self._map is None or self._mapped_blocks != blocks:
            self._map = np.memmap(
                self.path, dtype=np.uint64, mode="r", shape=(blocks * self.bit_size,)
            )
            self._mapped_blocks = blocks
        return self._map


def minmax_schema(columns: dict[str, pa.DataType]) -> pa.Schema:
    """Returns: the schema of a ``minmax.<seq>`` file for ``{column: type}``."""
    fields = []
    for name, dtype in columns.items():
        fields += [
            pa.field(f"{name}.min", dtype),
            pa.field(f"{name}.max", dtype),
            pa.field(f"{name}.nulls", pa.int64()),
            pa.field(f"{name}.nans", pa.int64()),
            pa.field(f"{name}.rows", pa.int64()),
        ]
    return pa.schema(fields)


def minmax_rows(schema: pa.Schema, sketches: Sequence[dict[str, ColumnSketch]]) -> pa.Table:
    """Returns: the rows of new slots (one per sketch mapping) in ``schema``."""
    arrays: list[pa.Array] = []
    for field in schema:
        column, what = field.name.rsplit(".", 1)
        cs = [s[column] for s in sketches]
        if what in ("min", "max"):
            scalars = [getattr(c, what) for c in cs]
            arrays.append(pa.array(scalars, field.type))
        else:
            attr = {"nulls": "null_count", "nans": "nan_count", "rows": "num_rows"}[what]
            arrays.append(pa.array([getattr(c, attr) for c in cs], pa.int64()))
    return pa.Table.from_arrays(arrays, schema=schema)


def write_minmax(path: Path, table: pa.Table) -> None:
    """Write ``table`` to ``path`` (temporary file, fsync, rename, fsync directory).

    Raises:
        StreamwriteIOError: Writing or syncing fails.
    """
    temp = path.with_name(f".{path.name}.tmp")
    try:
        with pa.OSFile(str(temp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        fd = os.open(temp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
        fsync_directory(path.parent)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise StreamwriteIOError(f"Writing skipping min/max {path} failed: {exc}.") from exc


def read_minmax(path: Path, columns: Sequence[str]) -> tuple[pa.Table | None, int]:
    """Read the named columns of a ``minmax`` file (memory-mapped: only their buffers).

    Returns:
        ``(table or None when the file is gone, bytes of the buffers read)``.
    """
    try:
        source = pa.memory_map(str(path), "r")
    except FileNotFoundError:
        return None, 0
    reader = pa.ipc.open_file(source)
    batches = [reader.get_batch(i).select(list(columns)) for i in range(reader.num_record_batches)]
    if not batches:
        return None, 0
    table = pa.Table.from_batches(batches).combine_chunks()
    return table, int(table.nbytes)
