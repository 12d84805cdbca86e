"""Reference material for nested decoding tests (tests only): a per-value Dremel shredder over
Arrow tables, a reader of a file's leaf chunks with our footer codec and decoder, and a nested
table with nulls at every level.

``shred_table`` is the Dremel algorithm value by value: a null node gives each leaf under it one
entry at the parent's definition level; an empty list one entry at the list's level; the first
element of a list repeats at the enclosing repetition level, the others at the list's own.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from streamwrite.format import structs as t
from streamwrite.format.enums import FieldRepetitionType
from streamwrite.format.thrift.codec import deserialize
from workers.decode import DecodedChunk, decode_chunk
from workers.values import BinaryValues

LIMIT = 64 << 20

# --- reference shredder (per value; tests only) ---------------------------------------------


@dataclass
class Leaf:
    rep: list[int] = field(default_factory=list)
    defs: list[int] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)


def _is_list(typ: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ)
    )


def leaf_count(typ: pa.DataType) -> int:
    if pa.types.is_struct(typ):
        return sum(leaf_count(typ.field(i).type) for i in range(typ.num_fields))
    if pa.types.is_map(typ):
        return leaf_count(typ.key_type) + leaf_count(typ.item_type)
    if _is_list(typ):
        return leaf_count(typ.value_type)
    return 1


def emit(
    value: Any,
    typ: pa.DataType,
    nullable: bool,
    d: int,
    r: int,
    depth: int,
    leaves: list[Leaf],
    start: int,
) -> None:
    """Shreds one value of a node into the leaves ``leaves[start:start + leaf_count(typ)]``:
    ``d`` is the parent's definition level, ``r`` the repetition level of this entry and
    ``depth`` the number of repeated ancestors."""
    count = leaf_count(typ)
    if value is None:
        assert nullable, f"a null in a non-nullable {typ}"
        for leaf in leaves[start : start + count]:
            leaf.rep.append(r)
            leaf.defs.append(d)
        return
    if nullable:
        d += 1
    if pa.types.is_struct(typ):
        pos = start
        for i in range(typ.num_fields):
            child = typ.field(i)
            emit(value[child.name], child.type, child.nullable, d, r, depth, leaves, pos)
            pos += leaf_count(child.type)
        return
    if _is_list(typ) or pa.types.is_map(typ):
        if len(value) == 0:
            for leaf in leaves[start : start + count]:
                leaf.rep.append(r)
                leaf.defs.append(d)
            return
        for i, element in enumerate(value):
            rr = r if i == 0 else depth + 1
            if pa.types.is_map(typ):
                key, item = element
                emit(key, typ.key_type, False, d + 1, rr, depth + 1, leaves, start)
                after = start + leaf_count(typ.key_type)
                item_field = typ.item_field
                emit(
                    item, item_field.type, item_field.nullable, d + 1, rr, depth + 1, leaves, after
                )
            else:
                element_field = typ.value_field
                emit(
                    element,
                    element_field.type,
                    element_field.nullable,
                    d + 1,
                    rr,
                    depth + 1,
                    leaves,
                    start,
                )
        return
    leaf = leaves[start]
    leaf.rep.append(r)
    leaf.defs.append(d)
    leaf.values.append(value)


def _plain_type(typ: pa.DataType) -> pa.DataType:
    """``typ`` with temporal leaves as their integers (what Parquet stores)."""
    if pa.types.is_struct(typ):
        return pa.struct([f.with_type(_plain_type(f.type)) for f in typ])
    if pa.types.is_map(typ):
        return pa.map_(typ.key_field, typ.item_field.with_type(_plain_type(typ.item_type)))
    if pa.types.is_fixed_size_list(typ):
        return pa.list_(typ.value_field.with_type(_plain_type(typ.value_type)), typ.list_size)
    if pa.types.is_large_list(typ):
        return pa.large_list(typ.value_field.with_type(_plain_type(typ.value_type)))
    if pa.types.is_list(typ):
        return pa.list_(typ.value_field.with_type(_plain_type(typ.value_type)))
    if pa.types.is_timestamp(typ) or pa.types.is_time64(typ) or pa.types.is_date64(typ):
        return pa.int64()
    if pa.types.is_date32(typ) or pa.types.is_time32(typ):
        return pa.int32()
    return typ


def shred_table(table: pa.Table) -> list[Leaf]:
    schema = pa.schema([f.with_type(_plain_type(f.type)) for f in table.schema])
    table = table.cast(schema)
    leaves = [Leaf() for _ in range(sum(leaf_count(f.type) for f in schema))]
    start = 0
    for f, column in zip(schema, table.columns, strict=True):
        for value in column.to_pylist():
            emit(value, f.type, f.nullable, 0, 0, 0, leaves, start)
        start += leaf_count(f.type)
    return leaves


def physical_py(value: Any) -> Any:
    return value.encode() if isinstance(value, str) else value


def as_list(values: Any) -> list[Any]:
    if isinstance(values, BinaryValues):
        return [bytes(values.data[a:b]) for a, b in itertools.pairwise(values.offsets)]
    arr = np.asarray(values)
    if arr.ndim == 2:  # FIXED_LEN_BYTE_ARRAY, INT96
        return [bytes(row) for row in arr]
    return list(arr.tolist())


def same_values(got: list[Any], want: list[Any]) -> bool:
    if len(got) != len(want):
        return False
    for a, b in zip(got, want, strict=True):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            continue
        if a != b:
            return False
    return True


# --- reading a file's leaves with our footer and decoder ------------------------------------


@dataclass(frozen=True)
class LeafSchema:
    path: tuple[str, ...]
    max_def: int
    max_rep: int
    type_length: int | None


def footer(data: bytes) -> t.FileMetaData:
    assert data[-4:] == b"PAR1"
    size = int.from_bytes(data[-8:-4], "little")
    meta, _ = deserialize(t.FileMetaData, data[-8 - size : -8])
    return meta


def leaves_of(meta: t.FileMetaData) -> list[LeafSchema]:
    """Each leaf's path and maximum levels (every OPTIONAL or REPEATED node adds a definition
    level, every REPEATED one a repetition level)."""
    elements = meta.schema or []
    out: list[LeafSchema] = []

    def walk(i: int, path: tuple[str, ...], d: int, r: int) -> int:
        element = elements[i]
        rep = element.repetition_type
        d += rep in (FieldRepetitionType.OPTIONAL, FieldRepetitionType.REPEATED)
        r += rep == FieldRepetitionType.REPEATED
        path = (*path, element.name or "")
        if not element.num_children:
            out.append(LeafSchema(path, d, r, element.type_length))
            return i + 1
        j = i + 1
        for _ in range(element.num_children):
            j = walk(j, path, d, r)
        return j

    j = 1
    for _ in range(elements[0].num_children or 0):
        j = walk(j, (), 0, 0)
    return out


def chunk_bytes(data: bytes, meta: t.ColumnMetaData) -> tuple[int, bytes]:
    start = meta.data_page_offset or 0
    dictionary = meta.dictionary_page_offset
    if dictionary is not None and 0 < dictionary < start:
        start = dictionary
    end = start + (meta.total_compressed_size or 0)
    footer_start = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    end = min(end + 100, footer_start)  # PARQUET-816: old writers undercount a little
    return start, data[start:end]


def decode_leaf(
    data: bytes, rg: t.RowGroup, j: int, leaf: LeafSchema
) -> tuple[DecodedChunk, t.ColumnMetaData, int]:
    meta = (rg.columns or [])[j].meta_data
    assert meta is not None
    start, chunk = chunk_bytes(data, meta)
    decoded = decode_chunk(
        chunk,
        start,
        meta,
        type_length=leaf.type_length,
        max_definition_level=leaf.max_def,
        max_repetition_level=leaf.max_rep,
        verify_checksums=True,
        max_decompressed_page_size=LIMIT,
        dictionary_first=meta.dictionary_page_offset == start,
    )
    return decoded, meta, start


def row_groups(data: bytes) -> Iterator[tuple[int, t.RowGroup]]:
    yield from enumerate(footer(data).row_groups or [])


@dataclass
class Outcome:
    levels_compared: int = 0
    values_compared: int = 0
    leaves: int = 0


def check_file(path: Path, reference: bool = True) -> Outcome:
    """Decodes every leaf of every row group of ``path``; compares with the reference
    shredder over pyarrow's table of that row group (``reference``)."""
    data = path.read_bytes()
    meta = footer(data)
    leaves = leaves_of(meta)
    outcome = Outcome()
    pf = pq.ParquetFile(path) if reference else None
    for i, rg in row_groups(data):
        want: list[Leaf] | None = None
        if pf is not None:
            want = shred_table(pf.read_row_group(i))
            if len(want) != len(leaves):
                want = None
        for j, leaf in enumerate(leaves):
            decoded, chunk_meta, _ = decode_leaf(data, rg, j, leaf)
            where = f"{path.name} row group {i} leaf {'.'.join(leaf.path)}"
            outcome.leaves += 1
            assert decoded.num_rows == rg.num_rows, where
            assert decoded.num_levels == chunk_meta.num_values, where
            if leaf.max_rep:
                assert decoded.rep_levels is not None, where
                assert int(np.count_nonzero(decoded.rep_levels == 0)) == rg.num_rows, where
            else:
                assert decoded.rep_levels is None, where
            if want is None:
                continue
            expected = want[j]
            got_values = as_list(decoded.values)
            assert same_values(got_values, [physical_py(v) for v in expected.values]), where
            outcome.values_compared += 1
            if _maps_one_to_one(pf, j, leaf):
                n = decoded.num_levels
                got_defs = [0] * n if decoded.def_levels is None else decoded.def_levels.tolist()
                got_rep = [0] * n if decoded.rep_levels is None else decoded.rep_levels.tolist()
                assert got_defs == expected.defs, where
                assert got_rep == expected.rep, where
                outcome.levels_compared += 1
    return outcome


def _maps_one_to_one(pf: pq.ParquetFile | None, j: int, leaf: LeafSchema) -> bool:
    """True when pyarrow's view of the leaf has the same maximum levels as its Parquet schema
    (then the reference levels must equal the decoded ones)."""
    if pf is None:
        return False
    column = pf.schema.column(j)
    return bool(
        column.max_definition_level == leaf.max_def
        and column.max_repetition_level == leaf.max_rep
        and _arrow_max_levels(pf.schema_arrow, j) == (leaf.max_def, leaf.max_rep)
    )


def _arrow_max_levels(schema: pa.Schema, j: int) -> tuple[int, int]:
    """The maximum levels the reference shredder gives leaf ``j`` of ``schema``."""
    found: list[tuple[int, int]] = []

    def walk(typ: pa.DataType, nullable: bool, d: int, r: int) -> None:
        d += nullable
        if pa.types.is_struct(typ):
            for i in range(typ.num_fields):
                walk(typ.field(i).type, typ.field(i).nullable, d, r)
        elif pa.types.is_map(typ):
            walk(typ.key_type, False, d + 1, r + 1)
            walk(typ.item_type, typ.item_field.nullable, d + 1, r + 1)
        elif _is_list(typ):
            walk(typ.value_type, typ.value_field.nullable, d + 1, r + 1)
        else:
            found.append((d, r))

    for f in schema:
        walk(f.type, f.nullable, 0, 0)
    return found[j] if j < len(found) else (-1, -1)


# --- pyarrow-written files --------------------------------------------------------------------


def _maybe(rng: np.random.Generator, p: float, value: Any) -> Any:
    return None if rng.random() < p else value


def nested_table(num_rows: int, seed: int) -> pa.Table:
    """Nested columns with nulls at every level, empty lists and maps with null values."""
    rng = np.random.default_rng(seed)

    def ints(n: int, p: float = 0.2) -> list[Any]:
        return [_maybe(rng, p, int(v)) for v in rng.integers(-50, 50, n)]

    def words(n: int, p: float = 0.2) -> list[Any]:
        return [_maybe(rng, p, f"w{int(v)}") for v in rng.integers(0, 30, n)]

    def length() -> int:
        return int(rng.integers(0, 5))

    item_required = pa.field("item", pa.int64(), nullable=False)
    columns: dict[str, tuple[pa.DataType | pa.Field, list[Any]]] = {
        "li": (pa.list_(pa.int64()), [_maybe(rng, 0.15, ints(length())) for _ in range(num_rows)]),
        "lls": (
            pa.list_(pa.list_(pa.string())),
            [
                _maybe(rng, 0.1, [_maybe(rng, 0.2, words(length())) for _ in range(length())])
                for _ in range(num_rows)
            ],
        ),
        "ls_large": (
            pa.large_list(pa.string()),
            [_maybe(rng, 0.1, words(length())) for _ in range(num_rows)],
        ),
        "s": (
            pa.struct(
                [
                    ("a", pa.int64()),
                    ("b", pa.list_(pa.string())),
                    ("c", pa.struct([("d", pa.float64())])),
                ]
            ),
            [
                _maybe(
                    rng,
                    0.15,
                    {
                        "a": _maybe(rng, 0.2, int(rng.integers(0, 9))),
                        "b": _maybe(rng, 0.2, words(length())),
                        "c": _maybe(rng, 0.2, {"d": _maybe(rng, 0.2, float(rng.random()))}),
                    },
                )
                for _ in range(num_rows)
            ],
        ),
        "m": (
            pa.map_(pa.string(), pa.int64()),
            [
                _maybe(
                    rng,
                    0.15,
                    [(f"k{k}", _maybe(rng, 0.3, int(k))) for k in range(length())],
                )
                for _ in range(num_rows)
            ],
        ),
        "fsl": (
            pa.list_(pa.int32(), 3),
            [_maybe(rng, 0.2, ints(3)) for _ in range(num_rows)],
        ),
        "req_list": (
            pa.field("req_list", pa.list_(item_required), nullable=False),
            [[int(v) for v in rng.integers(0, 9, length())] for _ in range(num_rows)],
        ),
        "flat": (pa.int64(), ints(num_rows)),
    }
    fields = []
    arrays = []
    for name, (typ, values) in columns.items():
        f = typ if isinstance(typ, pa.Field) else pa.field(name, typ)
        fields.append(f)
        arrays.append(pa.array(values, type=f.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
