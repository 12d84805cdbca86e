"""Footer statistics and page-index bounds as arrays: what pruning knows of a ParquetFile.

Row groups (from each chunk's ``Statistics``, decrypted ``encrypted_column_metadata``
included) and pages (from the ColumnIndex and OffsetIndex) become
:class:`~streamwrite.predicate.ColumnStats`: one entry per container, bounds typed as the
column's Arrow value type (a dictionary column's value type), a null entry where nothing is
known. Which bounds are trusted (parquet.thrift ``ColumnOrder`` and ``Statistics`` notes)::

    column_orders[c]        min_value/max_value    deprecated min/max
    missing / unknown       not used               signed ints, bool only
    TYPE_ORDER              used                   signed ints, bool only (when no min_value)
    IEEE_754_TOTAL_ORDER    floats: used, a NaN    not used
                            bound is unknown
    INT96 (any order)       never                  never

- A column's sort order (from its logical type) must be the one its Arrow value type compares
  in (``uint32`` UNSIGNED, ``decimal128`` SIGNED or SIGNED_BYTES, strings UNSIGNED_BYTES...);
  otherwise its bounds are not used.
- ``is_min_value_exact`` / ``is_max_value_exact`` unset: inexact for BYTE_ARRAY (writers may
  truncate them), exact for fixed-width values (a truncated one has the wrong size, and a
  bound of the wrong size is not used). Page-index bounds of BYTE_ARRAY columns are always
  inexact (parquet-java truncates them without a flag).
- A string bound that is not UTF-8 (a truncation that split a character): the min becomes its
  longest UTF-8 prefix (still a lower bound, inexact); the max is unknown.
- A NaN bound (writers that did not skip NaN) is unknown; so is a bound of the wrong size.
  FLOAT16 bounds are given as float32 (exactly; Arrow compute does not compare halffloat).
- ``null_count`` unset: unknown (a null entry), never 0. A ColumnIndex null page without
  ``null_counts`` holds only nulls: its null count is its row count.
- ``nan_count`` (Statistics field 9, ColumnIndex ``nan_counts``) for floating point columns;
  unset: unknown, so NaN may be present.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from streamwrite.arrow.assembly import from_physical
from streamwrite.arrow.schema import ColumnSpec
from streamwrite.errors import CorruptFileError, StreamwriteError
from streamwrite.format import structs as t
from streamwrite.format.enums import FieldRepetitionType, Type
from streamwrite.predicate import ColumnStats
from workers.decode import KERNEL_ERRORS
from workers.encoding.plain import decode_plain
from workers.stats import SortOrder

__all__ = ["bounds_order", "chunk_column_stats", "decode_bounds", "page_column_stats"]

_FIXED_SIZE = {Type.INT32: 4, Type.INT64: 8, Type.FLOAT: 4, Type.DOUBLE: 8, Type.BOOLEAN: 1}
_SIGNED_SAFE = (SortOrder.SIGNED, SortOrder.BOOLEAN)
"""Orders under which the deprecated ``min``/``max`` (signed comparison) are right."""


def value_spec(spec: ColumnSpec) -> ColumnSpec:
    """``spec`` with its Arrow value type (a dictionary's value type), nullable."""
    dtype = spec.field.type
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    return dataclasses.replace(
        spec,
        field=pa.field(spec.name, dtype, nullable=True),
        repetition=FieldRepetitionType.OPTIONAL,
        max_definition_level=1,
    )


def _arrow_order(dtype: pa.DataType, physical: Type) -> SortOrder | None:
    """The order values of Arrow type ``dtype`` compare in; None: none we use."""
    if pa.types.is_unsigned_integer(dtype):
        return SortOrder.UNSIGNED
    if (
        pa.types.is_signed_integer(dtype)
        or pa.types.is_temporal(dtype)
        or (pa.types.is_decimal(dtype) and physical in (Type.INT32, Type.INT64))
    ):
        return SortOrder.SIGNED
    if pa.types.is_decimal(dtype):
        return SortOrder.SIGNED_BYTES
    if pa.types.is_float16(dtype):
        return SortOrder.FLOAT16
    if pa.types.is_floating(dtype):
        return SortOrder.FLOAT
    if pa.types.is_boolean(dtype):
        return SortOrder.BOOLEAN
    if (
        pa.types.is_string(dtype)
        or pa.types.is_large_string(dtype)
        or pa.types.is_binary(dtype)
        or pa.types.is_large_binary(dtype)
        or pa.types.is_fixed_size_binary(dtype)
    ):
        return SortOrder.UNSIGNED_BYTES
    return None


def bounds_order(metadata: t.FileMetaData, spec: ColumnSpec) -> tuple[bool, bool]:
    """Which bounds of column ``spec`` are trusted (module docstring).

    Returns:
        ``(use_min_max_value, use_deprecated_min_max)``.
    """
    order = spec.sort_order
    vtype = value_spec(spec).field.type
    if (
        spec.physical_type == Type.INT96
        or order == SortOrder.UNDEFINED
        or _arrow_order(vtype, spec.physical_type) != order
    ):
        return False, False
    legacy = order in _SIGNED_SAFE
    orders = metadata.column_orders
    if orders is None or not 0 <= spec.index < len(orders):
        return False, legacy
    column_order = orders[spec.index]
    if column_order.TYPE_ORDER is not None:
        return True, legacy
    if column_order.IEEE_754_TOTAL_ORDER is not None:
        return order in (SortOrder.FLOAT, SortOrder.FLOAT16), False
    return False, legacy


def _utf8_prefix(raw: bytes) -> bytes:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return raw[: exc.start]
    return raw


def _decode_present(raws: list[bytes], spec: ColumnSpec) -> pa.Array:
    """The non-null bounds ``raws`` (PLAIN, no length prefix) as an array of the value type."""
    n = len(raws)
    if spec.physical_type == Type.BOOLEAN:
        values: Any = np.array([r[0] != 0 for r in raws], dtype=np.bool_)
    else:
        if spec.physical_type == Type.BYTE_ARRAY:
            data = b"".join(len(r).to_bytes(4, "little") + r for r in raws)
        else:
            data = b"".join(raws)
        values, _ = decode_plain(data, spec.physical_type, n, spec.type_length)
    return from_physical(values, None, n, spec, validate=True)


def decode_bounds(
    raws: Sequence[bytes | None], spec: ColumnSpec, *, is_min: bool
) -> tuple[pa.Array, npt.NDArray[np.bool_]]:
    """PLAIN-encoded bounds as an array of the column's value type (module docstring).

    Args:
        raws: One bound per container, None where there is none.
        spec: The column (its value type: :func:`value_spec`).
        is_min: The bounds are lower bounds (a non-UTF-8 string min is cut to a prefix).

    Returns:
        The bounds (null where unknown) and a mask of the bounds made inexact here.
    """
    vspec = value_spec(spec)
    n = len(raws)
    size = _FIXED_SIZE.get(spec.physical_type)
    if spec.physical_type == Type.FIXED_LEN_BYTE_ARRAY:
        size = spec.type_length
    kept = [r is not None and (size is None or len(r) == size) for r in raws]
    present = [bytes(r) for r, ok in zip(raws, kept, strict=True) if ok and r is not None]
    changed = np.zeros(n, dtype=np.bool_)
    try:
        values = _decode_present(present, vspec)
    except (StreamwriteError, pa.ArrowException, *KERNEL_ERRORS):
        # Rare (a truncated UTF-8 bound, a decimal out of its precision): one by one.
        positions = np.flatnonzero(kept)
        singles: list[Any] = []
        for k, raw in enumerate(present):
            singles.append(None)
            try:
                singles[k] = _decode_present([raw], vspec)[0].as_py()
                continue
            except (StreamwriteError, pa.ArrowException, *KERNEL_ERRORS):
                pass
            text = pa.types.is_unicode(vspec.field.type) or pa.types.is_large_unicode(
                vspec.field.type
            )
            if is_min and text:
                singles[k] = _utf8_prefix(raw).decode("utf-8")
                changed[positions[k]] = True
        values = pa.array(singles, type=vspec.field.type)
    mask = np.array(kept, dtype=np.bool_)
    full = _scatter(values, mask, vspec.field.type)
    if pa.types.is_float16(full.type):
        full = full.cast(pa.float32())  # exact; Arrow compute does not compare halffloat
    if pa.types.is_floating(full.type) and len(full):
        full = pc.if_else(pc.is_nan(full), pa.scalar(None, full.type), full)
    return full, changed


def _scatter(values: pa.Array, mask: npt.NDArray[np.bool_], dtype: pa.DataType) -> pa.Array:
    """``values`` placed at the True entries of ``mask``, nulls elsewhere."""
    if mask.all():
        return values
    positions = np.full(mask.shape[0], -1, dtype=np.int64)
    positions[mask] = np.arange(int(np.count_nonzero(mask)))
    indices = pa.array(positions, mask=~mask)
    return values.take(indices) if len(values) else pa.nulls(mask.shape[0], dtype)


def _exact(
    flags: Sequence[bool | None], spec: ColumnSpec, changed: npt.NDArray[np.bool_]
) -> npt.NDArray[np.bool_]:
    default = spec.physical_type != Type.BYTE_ARRAY
    exact = np.array([default if f is None else bool(f) for f in flags], dtype=np.bool_)
    return exact & ~changed


def _is_float(spec: ColumnSpec) -> bool:
    return bool(pa.types.is_floating(value_spec(spec).field.type))


def chunk_column_stats(
    metadata: t.FileMetaData,
    spec: ColumnSpec,
    metas: Sequence[t.ColumnMetaData],
    num_rows: npt.NDArray[np.int64],
) -> ColumnStats:
    """What the footer says of column ``spec`` in some row groups.

    Args:
        metadata: The file's footer (``column_orders``).
        spec: The column.
        metas: Its ColumnMetaData in each row group (decrypted).
        num_rows: Each row group's row count.

    Returns:
        One container per row group.
    """
    use_value, use_legacy = bounds_order(metadata, spec)
    lows: list[bytes | None] = []
    highs: list[bytes | None] = []
    low_flags: list[bool | None] = []
    high_flags: list[bool | None] = []
    stats = [meta.statistics for meta in metas]
    for s in stats:
        low = high = None
        low_exact = high_exact = None
        if s is not None:
            if use_value and s.min_value is not None and s.max_value is not None:
                low, high = s.min_value, s.max_value
                low_exact, high_exact = s.is_min_value_exact, s.is_max_value_exact
            elif use_legacy and s.min is not None and s.max is not None:
                low, high = s.min, s.max
        lows.append(low)
        highs.append(high)
        low_flags.append(low_exact)
        high_flags.append(high_exact)
    null_count = pa.array([None if s is None else s.null_count for s in stats], pa.int64())
    nan_count = None
    if _is_float(spec):
        nan_count = pa.array([None if s is None else s.nan_count for s in stats], pa.int64())
    if not any(low is not None for low in lows):
        return ColumnStats(num_values=num_rows, null_count=null_count, nan_count=nan_count)
    low_array, low_changed = decode_bounds(lows, spec, is_min=True)
    high_array, high_changed = decode_bounds(highs, spec, is_min=False)
    return ColumnStats(
        num_values=num_rows,
        null_count=null_count,
        min=low_array,
        max=high_array,
        min_exact=_exact(low_flags, spec, low_changed),
        max_exact=_exact(high_flags, spec, high_changed),
        nan_count=nan_count,
    )


def page_column_stats(
    metadata: t.FileMetaData,
    spec: ColumnSpec,
    index: t.ColumnIndex,
    first_rows: npt.NDArray[np.int64],
    num_rows: int,
    where: str,
    offset: int,
) -> ColumnStats:
    """What a chunk's ColumnIndex says of its pages.

    Args:
        metadata: The file's footer (``column_orders``).
        spec: The column.
        index: The chunk's ColumnIndex.
        first_rows: Each page's first row (from the OffsetIndex, checked).
        num_rows: Rows of the row group.
        where: How error messages name the chunk.
        offset: Absolute offset of the ColumnIndex (for error messages).

    Returns:
        One container per page.

    Raises:
        CorruptFileError: The ColumnIndex lists another number of pages than the OffsetIndex.
    """
    num_pages = first_rows.shape[0]
    null_pages = index.null_pages or []
    lows = index.min_values or []
    highs = index.max_values or []
    null_counts = index.null_counts
    nan_counts = index.nan_counts
    lengths = {len(null_pages), len(lows), len(highs), num_pages}
    lengths |= {len(x) for x in (null_counts, nan_counts) if x is not None}
    if lengths != {num_pages}:
        raise CorruptFileError(
            f"{where}: the ColumnIndex lists {len(null_pages)} pages, the OffsetIndex {num_pages}.",
            offset,
        )
    rows = np.diff(np.append(first_rows, np.int64(num_rows))).astype(np.int64)
    nulls = np.asarray(null_pages, dtype=np.bool_)
    if null_counts is not None:
        null_count = pa.array(null_counts, pa.int64())
    else:
        null_count = pa.array(rows, pa.int64(), mask=~nulls)  # a null page: all rows null
    nan_count = None
    if _is_float(spec) and nan_counts is not None:
        nan_count = pa.array(nan_counts, pa.int64())
    use_value, _ = bounds_order(metadata, spec)
    if not use_value or nulls.all():
        return ColumnStats(num_values=rows, null_count=null_count, nan_count=nan_count)
    page_lows = [None if null else low for null, low in zip(nulls, lows, strict=True)]
    page_highs = [None if null else high for null, high in zip(nulls, highs, strict=True)]
    low_array, low_changed = decode_bounds(page_lows, spec, is_min=True)
    high_array, high_changed = decode_bounds(page_highs, spec, is_min=False)
    exact = spec.physical_type != Type.BYTE_ARRAY
    flags = np.full(num_pages, exact, dtype=np.bool_)
    return ColumnStats(
        num_values=rows,
        null_count=null_count,
        min=low_array,
        max=high_array,
        min_exact=flags & ~low_changed,
        max_exact=flags & ~high_changed,
        nan_count=nan_count,
    )
