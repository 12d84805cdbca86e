"""Hypothesis strategies for the data streamwrite writes and the options it writes them with.

Needs ``hypothesis`` (``pip install 'streamwrite[testing]'``); nothing in the library imports
this module. What each strategy draws::

    WRITABLE_TYPES           every flat Arrow type the writer maps (a list, to parametrize over)
    arrow_types()            one of WRITABLE_TYPES
    python_values(dtype)     Python values pa.array(values, type=dtype) accepts (the storage
                             values of extension and dictionary types)
    arrays(dtype, ...)       arrays of dtype: no, some or only nulls; often a slice with an
                             offset (a non-zero array offset is a classic writer bug)
    schemas(...)             schemas of 1..max_columns fields "c0", "c1"..., nullable or not
    record_batches(...)      a record batch of a drawn (or given) schema
    tables(...)              a table of a drawn (or given) schema, split into 1..3 chunks
    write_options(...)       keyword arguments of write_table / ParquetWriter / LiveFile.open

nested types (list, large_list, fixed_size_list, struct, map at any depth over the flat
types), with the cases a shredder gets wrong drawn often: empty lists, null lists whose
offsets hide a non-empty range, lists of nulls, null structs whose children hold values
(REQUIRED children included), maps with null values, slices at every level::

    NESTED_KINDS             "list", "large_list", "fixed_size_list", "struct", "map"
    nested_types(...)        a nested type of depth 1..max_depth over leaf_types
    nested_arrays(dtype...)  arrays of any nested (or flat) dtype
    nested_schemas(...)      schemas of fields "c0", "c1"... of nested (and some flat) types
    nested_tables(...)       a table of a drawn (or given) nested schema, in 1..3 chunks

and, for the kernels in ``workers/``, Parquet physical values::

    physical_values(ptype)   one INT32 / INT64 / FLOAT / DOUBLE / BYTE_ARRAY value, edge values
                             (extremes, 0.0 and -0.0, NaN, infinities, b"") drawn often
    int_lists(bits)          random, sorted and constant runs of signed ``bits``-bit integers
    byte_array_lists()       random, sorted, shared-prefix and constant lists of bytes

Every value is one the writer must accept: a failure on a drawn example is a bug (or a
strategy that draws more than the writer supports, which the failing example shows).
"""

from __future__ import annotations

import decimal
import itertools
import math
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

from streamwrite.format.enums import Type

__all__ = [
    "CODEC_NAMES",
    "FLOAT_SPECIALS",
    "MAP_KEY_TYPES",
    "NESTED_KINDS",
    "WRITABLE_TYPES",
    "arrays",
    "arrow_types",
    "byte_array_lists",
    "int_lists",
    "nested_arrays",
    "nested_schemas",
    "nested_tables",
    "nested_types",
    "physical_values",
    "python_values",
    "record_batches",
    "schemas",
    "tables",
    "write_options",
]

WRITABLE_TYPES: list[pa.DataType] = [
    pa.bool_(),
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
    pa.float16(),
    pa.float32(),
    pa.float64(),
    pa.string(),
    pa.large_string(),
    pa.string_view(),
    pa.binary(),
    pa.large_binary(),
    pa.binary_view(),
    pa.binary(1),
    pa.binary(7),
    pa.decimal32(9, 2),
    pa.decimal64(18, 4),
    pa.decimal128(1, 0),
    pa.decimal128(5, 2),
    pa.decimal128(9, 9),
    pa.decimal128(10, 1),
    pa.decimal128(18, 3),
    pa.decimal128(19, 0),
    pa.decimal128(30, 4),
    pa.decimal128(38, 10),
    pa.decimal256(12, 2),
    pa.decimal256(40, 5),
    pa.decimal256(76, 0),
    pa.date32(),
    pa.date64(),
    pa.time32("s"),
    pa.time32("ms"),
    pa.time64("us"),
    pa.time64("ns"),
    pa.timestamp("s"),
    pa.timestamp("ms"),
    pa.timestamp("us"),
    pa.timestamp("ns"),
    pa.timestamp("s", "UTC"),
    pa.timestamp("ms", "Europe/Paris"),
    pa.timestamp("us", "+05:30"),
    pa.timestamp("ns", "UTC"),
    pa.duration("s"),
    pa.duration("ms"),
    pa.duration("us"),
    pa.duration("ns"),
    pa.dictionary(pa.int32(), pa.string()),
    pa.dictionary(pa.int8(), pa.large_string()),
    pa.dictionary(pa.int16(), pa.binary()),
    pa.dictionary(pa.int64(), pa.int64()),
    pa.dictionary(pa.int32(), pa.float64(), ordered=True),
    pa.uuid(),
    pa.json_(),
]
"""Every flat Arrow type streamwrite writes (``pa.null()`` aside: it has no values to draw)."""

CODEC_NAMES = ("none", "snappy", "gzip", "brotli", "zstd", "lz4")
"""The ``compression=`` names the writer writes."""

FLOAT_SPECIALS = (0.0, -0.0, math.nan, math.inf, -math.inf, 1.5, -2.25)
"""Floats every float kernel must get right (exact in float16, float32 and float64)."""

_INT64_RANGE = (-(2**63), 2**63 - 1)
_MAX_PAD = 16  # most values drawn before and after the slice :func:`arrays` returns


def _decimals(precision: int, scale: int) -> st.SearchStrategy[decimal.Decimal]:
    bound = 10**precision - 1
    context = decimal.Context(prec=100)
    return st.integers(-bound, bound).map(lambda v: decimal.Decimal(v).scaleb(-scale, context))


def _storage(dtype: pa.DataType) -> pa.DataType:
    if isinstance(dtype, pa.BaseExtensionType):
        return dtype.storage_type
    if pa.types.is_dictionary(dtype):
        return dtype.value_type
    return dtype


def arrow_types() -> st.SearchStrategy[pa.DataType]:
    """Returns: a strategy of one of :data:`WRITABLE_TYPES`."""
    return st.sampled_from(WRITABLE_TYPES)


def python_values(dtype: pa.DataType) -> st.SearchStrategy[Any]:
    """Python values ``pa.array(values, type=dtype)`` accepts (storage values for extension
    and dictionary types; ``int`` counts of the unit for dates, times, timestamps, durations).

    Returns:
        A strategy of one value (never None; :func:`arrays` adds the nulls).

    Raises:
        ValueError: ``dtype`` is not one of :data:`WRITABLE_TYPES` (or their storage types).
    """
    dtype = _storage(dtype)
    if pa.types.is_boolean(dtype):
        return st.booleans()
    if pa.types.is_integer(dtype):
        info = np.iinfo(dtype.to_pandas_dtype())
        return st.integers(int(info.min), int(info.max))
    if pa.types.is_float16(dtype):
        return st.floats(width=16, allow_nan=False).map(np.float16)
    if pa.types.is_float32(dtype):
        return st.floats(width=32, allow_nan=False)
    if pa.types.is_floating(dtype):
        return st.floats(allow_nan=False)
    if (
        pa.types.is_string(dtype)
        or pa.types.is_large_string(dtype)
        or pa.types.is_string_view(dtype)
    ):
        return st.text(max_size=12)
    if (
        pa.types.is_binary(dtype)
        or pa.types.is_large_binary(dtype)
        or pa.types.is_binary_view(dtype)
    ):
        return st.binary(max_size=12)
    if pa.types.is_decimal(dtype):
        return _decimals(dtype.precision, dtype.scale)
    if pa.types.is_fixed_size_binary(dtype):
        return st.binary(min_size=dtype.byte_width, max_size=dtype.byte_width)
    if pa.types.is_date32(dtype):
        return st.integers(-(2**31), 2**31 - 1)
    if pa.types.is_date64(dtype):
        return st.integers(-(2**31), 2**31 - 1).map(lambda d: d * 86_400_000)
    if pa.types.is_time32(dtype):
        per_day = 86_400 if dtype.unit == "s" else 86_400_000
        return st.integers(0, per_day - 1)
    if pa.types.is_time64(dtype):
        per_day = 86_400_000_000 if dtype.unit == "us" else 86_400_000_000_000
        return st.integers(0, per_day - 1)
    if pa.types.is_timestamp(dtype) and dtype.unit == "s":
        return st.integers(-(2**63) // 1000 + 1, (2**63 - 1) // 1000)
    if pa.types.is_timestamp(dtype) or pa.types.is_duration(dtype):
        return st.integers(*_INT64_RANGE)
    raise ValueError(f"python_values has no strategy for the Arrow type {dtype}")


def _make_array(dtype: pa.DataType, values: list[Any]) -> pa.Array:
    storage = _storage(dtype)
    if pa.types.is_float16(storage):
        mask = np.array([v is None for v in values], dtype=bool)
        data = np.array([0 if v is None else v for v in values], dtype=np.float16)
        dense = pa.array(data, type=pa.float16(), mask=mask)
    elif pa.types.is_time32(storage) or pa.types.is_time64(storage) or pa.types.is_date64(storage):
        base = pa.int32() if pa.types.is_time32(storage) else pa.int64()
        dense = pa.array(values, type=base).view(storage)
    else:
        dense = pa.array(values, type=storage)
    if isinstance(dtype, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(dtype, dense)
    if pa.types.is_dictionary(dtype):
        encoded = dense.dictionary_encode()
        indices, dictionary = encoded.indices, encoded.dictionary
        limit = 2 ** (dtype.index_type.bit_width - 1) - 1  # the index type's largest index + 1
        if len(dictionary) > limit:  # more distinct values than int8 indices reach: fold them
            folded = np.asarray(indices.fill_null(0).to_numpy(zero_copy_only=False)) % limit
            indices = pa.array(folded, mask=np.asarray(indices.is_null()))
            dictionary = dictionary.slice(0, limit)
        return pa.DictionaryArray.from_arrays(
            indices.cast(dtype.index_type), dictionary, ordered=dtype.ordered
        )
    return dense


@st.composite
def arrays(
    draw: st.DrawFn,
    dtype: pa.DataType,
    nullable: bool = True,
    *,
    min_size: int = 0,
    max_size: int = 40,
) -> pa.Array:
    """Arrays of ``dtype`` with ``min_size..max_size`` values.

    A nullable array has some nulls, none, or only nulls; the array is a slice of a longer
    one (values before and after it, so its offset is often not zero).

    Returns:
        A strategy of ``pa.Array`` (a ``DictionaryArray`` or ``ExtensionArray`` for those types).
    """
    element = python_values(dtype)
    if nullable:
        mode = draw(st.sampled_from(["mixed", "mixed", "none", "all"]))
        if mode == "all":
            element = st.none()
        elif mode == "mixed":
            element = st.one_of(st.none(), element)
    size = draw(st.integers(min_size, max_size))
    before = draw(st.integers(0, _MAX_PAD))
    after = draw(st.integers(0, _MAX_PAD))
    total = before + size + after
    values = draw(st.lists(element, min_size=total, max_size=total))
    return _make_array(dtype, values).slice(before, size)


@st.composite
def schemas(
    draw: st.DrawFn,
    types: st.SearchStrategy[pa.DataType] | None = None,
    *,
    min_columns: int = 1,
    max_columns: int = 6,
) -> pa.Schema:
    """Schemas of ``min_columns..max_columns`` fields named ``c0``, ``c1``... of ``types``
    (default :func:`arrow_types`), each nullable or not.

    Returns:
        A strategy of ``pa.Schema``.
    """
    types = arrow_types() if types is None else types
    dtypes = draw(st.lists(types, min_size=min_columns, max_size=max_columns))
    return pa.schema(
        [pa.field(f"c{i}", dtype, nullable=draw(st.booleans())) for i, dtype in enumerate(dtypes)]
    )


def _columns(
    draw: st.DrawFn, schema: pa.Schema | None, min_rows: int, max_rows: int
) -> tuple[pa.Schema, list[pa.Array]]:
    if schema is None:
        schema = draw(schemas())
    num_rows = draw(st.integers(min_rows, max_rows))
    columns = [
        draw(arrays(field.type, field.nullable, min_size=num_rows, max_size=num_rows))
        for field in schema
    ]
    return schema, columns


@st.composite
def record_batches(
    draw: st.DrawFn, schema: pa.Schema | None = None, *, min_rows: int = 0, max_rows: int = 40
) -> pa.RecordBatch:
    """Record batches of ``schema`` (default: drawn by :func:`schemas`) with
    ``min_rows..max_rows`` rows.

    Returns:
        A strategy of ``pa.RecordBatch``.
    """
    schema, columns = _columns(draw, schema, min_rows, max_rows)
    return pa.RecordBatch.from_arrays(columns, schema=schema)


@st.composite
def tables(
    draw: st.DrawFn, schema: pa.Schema | None = None, *, min_rows: int = 0, max_rows: int = 40
) -> pa.Table:
    """Tables of ``schema`` (default: drawn by :func:`schemas`) with ``min_rows..max_rows`` rows,
    in 1 to 3 chunks (writers must not depend on chunk boundaries).

    Returns:
        A strategy of ``pa.Table``.
    """
    schema, columns = _columns(draw, schema, min_rows, max_rows)
    table = pa.Table.from_arrays(columns, schema=schema)
    num_rows = table.num_rows
    cuts = sorted(draw(st.lists(st.integers(0, num_rows), max_size=2)))
    bounds = [0, *cuts, num_rows]
    pieces = [table.slice(a, b - a) for a, b in itertools.pairwise(bounds)]
    return pa.concat_tables(pieces)


@st.composite
def write_options(draw: st.DrawFn, *, max_row_group_size: int = 64) -> dict[str, Any]:
    """Keyword arguments of ``write_table`` (also ``ParquetWriter`` and ``LiveFile.open``) that
    hold for every schema: codec, page version, dictionary, statistics, page index, checksums,
    and row group, page and dictionary-page sizes small enough to cut the drawn tables.

    Returns:
        A strategy of ``dict`` (keyword name to value).
    """
    options: dict[str, Any] = {
        "compression": draw(st.sampled_from(CODEC_NAMES)),
        "data_page_version": draw(st.sampled_from(["1.0", "2.0"])),
        "use_dictionary": draw(st.booleans()),
        "write_statistics": draw(st.booleans()),
        "write_page_index": draw(st.booleans()),
        "write_page_checksum": draw(st.booleans()),
    }
    if draw(st.booleans()):
        options["row_group_size"] = draw(st.integers(1, max_row_group_size))
    if draw(st.booleans()):
        options["data_page_row_limit"] = draw(st.integers(1, 32))
    if draw(st.booleans()):
        options["data_page_size"] = draw(st.integers(1, 4096))
    if draw(st.booleans()):
        options["dictionary_pagesize_limit"] = draw(st.integers(1, 4096))
    return options


# ------------------------------------------------------------------------------ physical values


def physical_values(ptype: Type) -> st.SearchStrategy[Any]:
    """One Parquet physical value of ``ptype`` as the kernels take it in a numpy array or a
    ``BinaryValues`` list: INT32 / INT64 ``int`` (extremes, 0 and -1 often), FLOAT / DOUBLE
    ``float`` (:data:`FLOAT_SPECIALS` often, NaN and infinities included), BYTE_ARRAY ``bytes``.

    Returns:
        A strategy of one value.

    Raises:
        ValueError: ``ptype`` is BOOLEAN, INT96 or FIXED_LEN_BYTE_ARRAY (draw those with
            ``st.booleans()`` or ``hypothesis.extra.numpy`` byte matrices).
    """
    if ptype in (Type.INT32, Type.INT64):
        bits = 32 if ptype == Type.INT32 else 64
        lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        return st.integers(lo, hi) | st.sampled_from([lo, hi, 0, -1, 1])
    if ptype in (Type.FLOAT, Type.DOUBLE):
        floats = st.floats(width=32) if ptype == Type.FLOAT else st.floats()
        return floats | st.sampled_from(FLOAT_SPECIALS)
    if ptype == Type.BYTE_ARRAY:
        return st.binary(max_size=40) | st.sampled_from([b"", b"a"])
    raise ValueError(f"physical_values has no strategy for the physical type {ptype.name}")


def int_lists(bits: int, *, max_size: int = 600) -> st.SearchStrategy[list[int]]:
    """Lists of signed ``bits``-bit integers: random, sorted (small deltas) or one value
    repeated (zero deltas), up to ``max_size`` long.

    Returns:
        A strategy of ``list[int]``.
    """
    values = physical_values(Type.INT32 if bits == 32 else Type.INT64)
    if bits not in (32, 64):
        lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        values = st.integers(lo, hi) | st.sampled_from([lo, hi, 0, -1, 1])
    return st.one_of(
        st.lists(values, max_size=max_size),
        st.lists(values, max_size=max_size).map(sorted),
        st.tuples(values, st.integers(0, max_size)).map(lambda t: [t[0]] * t[1]),
    )


def byte_array_lists(*, max_size: int = 80) -> st.SearchStrategy[list[bytes]]:
    """Lists of byte strings: random, sorted, from a small alphabet of shared prefixes, or one
    value repeated (the cases of DELTA_BYTE_ARRAY prefixes and dictionary hits).

    Returns:
        A strategy of ``list[bytes]``, up to ``max_size`` long.
    """
    blobs = physical_values(Type.BYTE_ARRAY)
    return st.one_of(
        st.lists(blobs, max_size=max_size),
        st.lists(blobs, max_size=max_size).map(sorted),
        st.lists(st.sampled_from([b"", b"a", b"ab", b"abc", b"abd", b"b"]), max_size=max_size),
        st.tuples(blobs, st.integers(0, max_size)).map(lambda t: [t[0]] * t[1]),
    )


# ------------------------------------------------------------------------------ nested types

NESTED_KINDS = ("list", "large_list", "fixed_size_list", "struct", "map")
"""The nested type kinds :func:`nested_types` draws."""

MAP_KEY_TYPES: list[pa.DataType] = [
    pa.int32(),
    pa.int64(),
    pa.string(),
    pa.large_string(),
    pa.binary(),
    pa.date32(),
    pa.timestamp("us"),
]
"""The key types of drawn maps (Parquet map keys are REQUIRED primitives)."""

_NESTED_PAD = 3  # most slots drawn before and after each nested slice


@st.composite
def nested_types(
    draw: st.DrawFn,
    *,
    max_depth: int = 4,
    leaf_types: st.SearchStrategy[pa.DataType] | None = None,
    kinds: tuple[str, ...] = NESTED_KINDS,
) -> pa.DataType:
    """A nested type: ``kinds`` nested 1..``max_depth`` deep over ``leaf_types`` (default
    :func:`arrow_types`), each child nullable or not.

    Returns:
        A strategy of ``pa.DataType`` (a list, large_list, fixed_size_list, struct or map type).
    """
    leaves = arrow_types() if leaf_types is None else leaf_types
    return _nested_type(draw, draw(st.integers(1, max_depth)), leaves, kinds)


def _nested_type(
    draw: st.DrawFn, depth: int, leaves: st.SearchStrategy[pa.DataType], kinds: tuple[str, ...]
) -> pa.DataType:
    kind = draw(st.sampled_from(kinds))

    def child() -> pa.DataType:
        if depth <= 1 or draw(st.integers(0, 3)) == 0:
            return draw(leaves)
        return _nested_type(draw, depth - 1, leaves, kinds)

    nullable = draw(st.booleans())
    if kind == "struct":
        count = draw(st.integers(1, 3))
        return pa.struct([pa.field(f"f{i}", child(), draw(st.booleans())) for i in range(count)])
    if kind == "map":
        key = draw(st.sampled_from(MAP_KEY_TYPES))
        return pa.map_(key, pa.field("value", child(), nullable))
    item = pa.field(draw(st.sampled_from(["item", "element"])), child(), nullable)
    if kind == "large_list":
        return pa.large_list(item)
    if kind == "fixed_size_list":
        return pa.list_(item, draw(st.integers(1, 3)))
    return pa.list_(item)


def _group_storage(dtype: pa.DataType) -> pa.DataType:
    if isinstance(dtype, pa.BaseExtensionType) and pa.types.is_nested(dtype.storage_type):
        return dtype.storage_type
    return dtype


def _null_mask(
    draw: st.DrawFn, nullable: bool, hidden: np.ndarray[Any, np.dtype[np.bool_]]
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Null slots: any (some, none or all) if nullable, else only slots hidden by a parent."""
    n = hidden.shape[0]
    mode = draw(st.sampled_from(["mixed", "mixed", "none", "all"]))
    if mode == "none" or n == 0:
        return np.zeros(n, dtype=np.bool_)
    drawn = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=np.bool_)
    mask = np.ones(n, dtype=np.bool_) if mode == "all" else drawn
    return mask if nullable else mask & hidden


def _build(
    draw: st.DrawFn,
    dtype: pa.DataType,
    nullable: bool,
    hidden: np.ndarray[Any, np.dtype[np.bool_]],
) -> pa.Array:
    """An array of ``dtype``, one slot per entry of ``hidden`` (True: a parent is null there,
    so the slot may hold anything, a null in a REQUIRED field included)."""
    storage = _group_storage(dtype)
    if not pa.types.is_nested(storage):
        before = draw(st.integers(0, _NESTED_PAD))
        mask = _null_mask(draw, nullable, np.concatenate([np.ones(before, bool), hidden]))
        element = python_values(dtype)
        values = [None if m else draw(element) for m in mask.tolist()]
        return _make_array(dtype, values).slice(before, hidden.shape[0])
    before = draw(st.integers(0, _NESTED_PAD))
    after = draw(st.integers(0, _NESTED_PAD))
    length = hidden.shape[0]
    padded = np.concatenate([np.ones(before, bool), hidden, np.ones(after, bool)])
    mask = _null_mask(draw, nullable, padded)
    below = padded | mask
    null_mask = pa.array(mask, pa.bool_()) if mask.any() else None
    if pa.types.is_struct(storage):
        children = [
            _build(draw, storage.field(i).type, storage.field(i).nullable, below)
            for i in range(storage.num_fields)
        ]
        array = pa.StructArray.from_arrays(children, fields=list(storage), mask=null_mask)
    elif pa.types.is_fixed_size_list(storage):
        size = storage.list_size
        item = storage.value_field
        values = _build(draw, item.type, item.nullable, np.repeat(below, size))
        array = pa.FixedSizeListArray.from_arrays(values, type=storage, mask=null_mask)
    else:
        total = padded.shape[0]
        lengths = np.array(
            draw(st.lists(st.integers(0, 3), min_size=total, max_size=total)), dtype=np.int64
        )
        offsets = np.zeros(total + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        child_hidden = np.repeat(below, lengths)
        if pa.types.is_map(storage):
            keys = _build(draw, storage.key_type, False, np.zeros(int(offsets[-1]), bool))
            item = storage.item_field
            items = _build(draw, item.type, item.nullable, child_hidden)
            array = pa.MapArray.from_arrays(
                pa.array(offsets, pa.int32()), keys, items, type=storage, mask=null_mask
            )
        else:
            item = storage.value_field
            values = _build(draw, item.type, item.nullable, child_hidden)
            large = pa.types.is_large_list(storage)
            cls = pa.LargeListArray if large else pa.ListArray
            array = cls.from_arrays(
                pa.array(offsets, pa.int64() if large else pa.int32()),
                values,
                type=storage,
                mask=null_mask,
            )
    array = array.slice(before, length)
    if storage is not dtype:
        return pa.ExtensionArray.from_storage(dtype, array)
    return array


@st.composite
def nested_arrays(
    draw: st.DrawFn,
    dtype: pa.DataType,
    nullable: bool = True,
    *,
    min_size: int = 0,
    max_size: int = 20,
) -> pa.Array:
    """Arrays of ``dtype`` (nested or flat) with ``min_size..max_size`` slots; nested arrays
    are slices at every level, with the cases listed in the module docstring.

    Returns:
        A strategy of ``pa.Array``.
    """
    size = draw(st.integers(min_size, max_size))
    return _build(draw, dtype, nullable, np.zeros(size, dtype=np.bool_))


@st.composite
def nested_schemas(
    draw: st.DrawFn,
    *,
    max_fields: int = 3,
    max_depth: int = 4,
    leaf_types: st.SearchStrategy[pa.DataType] | None = None,
    kinds: tuple[str, ...] = NESTED_KINDS,
) -> pa.Schema:
    """Schemas of 1..``max_fields`` fields ``c0``, ``c1``...: nested types of
    :func:`nested_types` (now and then a flat one), each nullable or not.

    Returns:
        A strategy of ``pa.Schema``.
    """
    leaves = arrow_types() if leaf_types is None else leaf_types
    count = draw(st.integers(1, max_fields))
    fields = []
    for i in range(count):
        if draw(st.integers(0, 4)) == 0:
            dtype = draw(leaves)
        else:
            dtype = draw(nested_types(max_depth=max_depth, leaf_types=leaves, kinds=kinds))
        fields.append(pa.field(f"c{i}", dtype, nullable=draw(st.booleans())))
    return pa.schema(fields)


@st.composite
def nested_tables(
    draw: st.DrawFn, schema: pa.Schema | None = None, *, min_rows: int = 0, max_rows: int = 20
) -> pa.Table:
    """Tables of ``schema`` (default: drawn by :func:`nested_schemas`) with
    ``min_rows..max_rows`` rows, in 1 to 3 chunks.

    Returns:
        A strategy of ``pa.Table``.
    """
    if schema is None:
        schema = draw(nested_schemas())
    num_rows = draw(st.integers(min_rows, max_rows))
    columns = [
        draw(nested_arrays(field.type, field.nullable, min_size=num_rows, max_size=num_rows))
        for field in schema
    ]
    table = pa.Table.from_arrays(columns, schema=schema)
    cuts = sorted(draw(st.lists(st.integers(0, num_rows), max_size=2)))
    bounds = [0, *cuts, num_rows]
    return pa.concat_tables([table.slice(a, b - a) for a, b in itertools.pairwise(bounds)])
