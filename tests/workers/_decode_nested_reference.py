"""Reference material for nested decoding tests (tests only): the per-value Dremel levels of
Arrow tables (``shred_table``, over :func:`streamwrite.testing.dremel.reference_shred`), a
reader of a file's leaf chunks with our footer codec and decoder, and a nested table with nulls
at every level.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from streamwrite.format import structs as t
from streamwrite.format.enums import FieldRepetitionType
from streamwrite.format.thrift.codec import deserialize
from streamwrite.testing.dremel import ReferenceLeaf, reference_shred
from workers.decode import DecodedChunk, decode_chunk
from workers.values import BinaryValues

LIMIT = 64 << 20

# --- reference levels (streamwrite.testing.dremel, per value) ----------------------------------


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


def shred_table(table: pa.Table) -> list[ReferenceLeaf]:
    """Every leaf's reference levels and values (temporal leaves as the integers Parquet
    stores), from :func:`streamwrite.testing.dremel.reference_shred`."""
    schema = pa.schema([f.with_type(_plain_type(f.type)) for f in table.schema])
    table = table.cast(schema)
    return [
        leaf
        for f, column in zip(schema, table.columns, strict=True)
        for leaf in reference_shred(column, f)
    ]


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
        want: list[ReferenceLeaf] | None = None
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
            want_values = [physical_py(v.as_py()) for v in expected.scalars]
            assert same_values(got_values, want_values), where
            outcome.values_compared += 1
            if _maps_one_to_one(pf, j, leaf, expected):
                n = decoded.num_levels
                got_defs = [0] * n if decoded.def_levels is None else decoded.def_levels.tolist()
                got_rep = [0] * n if decoded.rep_levels is None else decoded.rep_levels.tolist()
                assert got_defs == expected.def_levels, where
                assert got_rep == expected.rep_levels, where
                outcome.levels_compared += 1
    return outcome


def _maps_one_to_one(
    pf: pq.ParquetFile | None, j: int, leaf: LeafSchema, want: ReferenceLeaf
) -> bool:
    """True when pyarrow's view of the leaf has the same maximum levels as its Parquet schema
    (then the reference levels must equal the decoded ones)."""
    if pf is None:
        return False
    column = pf.schema.column(j)
    return bool(
        column.max_definition_level == leaf.max_def
        and column.max_repetition_level == leaf.max_rep
        and (want.max_definition_level, want.max_repetition_level) == (leaf.max_def, leaf.max_rep)
    )


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
