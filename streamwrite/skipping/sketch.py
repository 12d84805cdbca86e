"""One segment's skipping sketch, accumulated from Arrow batches as the segment is written.

Per indexed column (:class:`~streamwrite.skipping.config.SkippingConfig`)::

    minmax     min, max over non-null values (floats: over non-NaN values, NaNs counted apart;
               the xskipper row then carries max = NaN, Java's Double.compare order), null and
               NaN counts
    valuelist  the distinct non-null values (floats: -0.0 folded into 0.0)
    bloom      a Spark sketch bloom filter (V1, the index's ndv/fpp), strings as UTF-8, ints as
               longs

Every update is vectorised over the batch (``pyarrow.compute`` kernels, the numpy Murmur3); the
sketch of two parts of a segment is their :meth:`SegmentSketch.merge`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from streamwrite.errors import ConfigError
from streamwrite.skipping.bloom import SparkBloomFilter
from streamwrite.skipping.config import SkippingConfig, canonical_type

__all__ = ["ColumnSketch", "SegmentSketch", "normalize_values"]


def normalize_values(values: pa.Array | pa.ChunkedArray, dtype: pa.DataType) -> pa.Array:
    """Values in the column's canonical type: dictionaries decoded, extensions unwrapped, views
    cast to large types, floats with -0.0 folded into 0.0.

    Returns:
        A plain Arrow array.
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if isinstance(values.type, pa.BaseExtensionType):
        values = values.storage
    if pa.types.is_string_view(values.type):
        values = values.cast(pa.large_string())
    elif pa.types.is_binary_view(values.type):
        values = values.cast(pa.large_binary())
    if pa.types.is_floating(values.type):
        values = pc.add(values, pa.scalar(0.0, values.type))  # -0.0 + 0.0 == +0.0
    if not values.type.equals(dtype) and not pa.types.is_large_string(values.type):
        values = values.cast(dtype)
    return values


@dataclass
class ColumnSketch:
    """What a segment's sketch knows of one column.

    Attributes:
        dtype: The column's canonical Arrow type.
        num_rows: Rows seen.
        null_count: Nulls seen.
        nan_count: NaNs seen (floats).
        min: Smallest non-null, non-NaN value, or None.
        max: Largest, or None.
        values: Distinct non-null values (valuelist), or None when not kept.
        bloom: The Spark bloom filter, or None when not kept.
    """

    dtype: pa.DataType
    minmax: bool = False
    num_rows: int = 0
    null_count: int = 0
    nan_count: int = 0
    min: pa.Scalar | None = None
    max: pa.Scalar | None = None
    values: pa.Array | None = None
    bloom: SparkBloomFilter | None = None
    _parts: list[pa.Array] = field(default_factory=list)

    def update(self, column: pa.Array | pa.ChunkedArray) -> None:
        """Fold one batch's values of the column in."""
        arr = normalize_values(column, self.dtype)
        self.num_rows += len(arr)
        self.null_count += arr.null_count
        present = pc.drop_null(arr) if arr.null_count else arr
        if pa.types.is_floating(arr.type) and len(present):
            nan = pc.is_nan(present)
            num_nan = int(pc.sum(nan).as_py() or 0)
            if num_nan:
                self.nan_count += num_nan
                present = present.filter(pc.invert(nan))
        if self.minmax and len(present):
            bounds = pc.min_max(present)
            lo, hi = bounds["min"], bounds["max"]
            self.min = lo if self.min is None else _pick(self.min, lo, "min")
            self.max = hi if self.max is None else _pick(self.max, hi, "max")
        if (self.bloom is None and self.values is None) or not len(present):
            return
        distinct = pc.unique(present)  # hashing each distinct value once: tags repeat
        if self.bloom is not None:
            if pa.types.is_integer(distinct.type):
                self.bloom.put_longs(distinct)
            else:
                self.bloom.put_strings(distinct)
        if self.values is not None:
            self._parts.append(distinct)
            if len(self._parts) > 16:
                self._fold()

    def _fold(self) -> None:
        if self._parts:
            assert self.values is not None
            merged = pa.concat_arrays([self.values, *self._parts])
            self.values = pc.unique(merged)
            self._parts = []

    def distinct(self) -> pa.Array | None:
        """Returns: the distinct non-null non-NaN values (valuelist), or None when not kept."""
        self._fold()
        return self.values

    def merge(self, other: ColumnSketch) -> None:
        """Fold another segment part's sketch of the same column in."""
        self.num_rows += other.num_rows
        self.null_count += other.null_count
        self.nan_count += other.nan_count
        if other.min is not None:
            self.min = other.min if self.min is None else _pick(self.min, other.min, "min")
        if other.max is not None:
            self.max = other.max if self.max is None else _pick(self.max, other.max, "max")
        if self.bloom is not None and other.bloom is not None:
            self.bloom.merge(other.bloom)
        theirs = other.distinct()
        if self.values is not None and theirs is not None:
            self._parts.append(theirs)
            self._fold()


def _show(value: pa.Scalar | None) -> object:
    if value is None:
        return None
    try:
        return value.as_py()
    except ValueError:  # nanosecond timestamps without pandas
        return value.cast(pa.string()).as_py()


def _pick(a: pa.Scalar, b: pa.Scalar, which: str) -> pa.Scalar:
    both = pa.array([a, b], a.type)
    result: pa.Scalar = pc.min_max(both)[which]
    return result


class SegmentSketch:
    """The skipping sketch of one segment (the store's indexes over the table's schema).

    Args:
        config: The table's skipping config.
        schema: The table's Arrow schema.

    Raises:
        ConfigError: The config does not fit the schema.
    """

    def __init__(self, config: SkippingConfig, schema: pa.Schema) -> None:
        config.check(schema)
        self.config = config
        self.schema = schema
        self.num_rows = 0
        self.columns: dict[str, ColumnSketch] = {}
        for index in config.store_indexes:
            sketch = self.columns.get(index.column)
            if sketch is None:
                dtype = canonical_type(schema.field(index.column).type)
                if pa.types.is_string_view(dtype):
                    dtype = pa.large_string()
                elif pa.types.is_binary_view(dtype):
                    dtype = pa.large_binary()
                sketch = self.columns[index.column] = ColumnSketch(dtype)
            if index.kind == "minmax":
                sketch.minmax = True
            elif index.kind == "valuelist":
                sketch.values = pa.array([], sketch.dtype)
            else:
                sketch.bloom = SparkBloomFilter.create(index.ndv, index.fpp)

    def update(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Fold in a batch of the segment's rows.

        Raises:
            ConfigError: The batch lacks an indexed column.
        """
        for name, sketch in self.columns.items():
            if name not in batch.schema.names:
                raise ConfigError(
                    f"The batch has no column {name!r}, which the skipping config indexes "
                    f"(its columns: {batch.schema.names})."
                )
            sketch.update(batch.column(name))
        self.num_rows += batch.num_rows

    def merge(self, other: SegmentSketch) -> None:
        """Fold in the sketch of other rows of the same segment (compaction: the sources).

        Raises:
            ConfigError: The sketches have different configs.
        """
        if other.config != self.config:
            raise ConfigError("Cannot merge sketches of different skipping configs.")
        for name, sketch in self.columns.items():
            sketch.merge(other.columns[name])
        self.num_rows += other.num_rows

    @classmethod
    def of(cls, config: SkippingConfig, table: pa.Table | pa.RecordBatch) -> SegmentSketch:
        """Returns: the sketch of a whole segment's rows (``build_index`` of an existing table)."""
        sketch = cls(config, table.schema)
        sketch.update(table)
        return sketch

    def summary(self) -> Mapping[str, Mapping[str, object]]:
        """Returns: per column, counts and bounds (for ``show()`` and debugging)."""
        out: dict[str, dict[str, object]] = {}
        for name, s in self.columns.items():
            distinct = s.distinct()
            out[name] = {
                "num_rows": s.num_rows,
                "null_count": s.null_count,
                "nan_count": s.nan_count,
                "min": _show(s.min),
                "max": _show(s.max),
                "num_distinct": None if distinct is None else len(distinct),
                "bloom_bits_set": None if s.bloom is None else s.bloom.cardinality(),
            }
        return out
