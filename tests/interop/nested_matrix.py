"""The nested interop matrix: a table of nested columns, the encodings that apply to its
leaves, and the cases (encoding family x codec x page version x nullability).

One table holds every nested shape of issue 15 over the flat leaf types::

    lf    list<float64>                      NaN, -0.0, inf among the elements
    ls    list<string>                       "" and non-ASCII among the elements
    ll    large_list<int64>
    fl    fixed_size_list<int32, 3>
    lb    list<bool>
    s     struct<a: int64, b: string>
    m     map<string, string>
    lst   list<struct<x: int32, y: string>>
    mli   map<string, list<int64>>
    nn    list<list<int32>>
    deep  struct<a: list<float64>, b: struct<c: string, d: int64>>

Nullable tables have nulls at every level (null lists, empty lists, null elements, null
structs and struct fields, null maps, empty maps, null map values, null inner lists) and null
list slots that hide a non-empty offset range; required tables declare every level required
(and hold no null). Lengths vary from 0 to 6 so that a chunk cut into small pages has records
of every size at page boundaries.

An *encoding family* picks one encoding per leaf physical type, so one file covers every
encoding that applies to each leaf type: ``PLAIN``, ``DICTIONARY`` (``use_dictionary``),
``DELTA`` (DELTA_BINARY_PACKED integers, DELTA_BYTE_ARRAY strings, BYTE_STREAM_SPLIT doubles,
RLE booleans) and ``DELTA_LENGTH`` (BYTE_STREAM_SPLIT integers and doubles,
DELTA_LENGTH_BYTE_ARRAY strings, RLE booleans).
"""

from __future__ import annotations

import itertools
import os
import random
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.format.enums import Type

NUM_ROWS = 1_200
CODECS = ["none", "snappy", "gzip", "brotli", "zstd", "lz4"]
VERSIONS = ["1.0", "2.0"]
FAMILIES: dict[str, dict[Type, str]] = {
    "PLAIN": {},
    "DICTIONARY": {},
    "DELTA": {
        Type.INT32: "DELTA_BINARY_PACKED",
        Type.INT64: "DELTA_BINARY_PACKED",
        Type.BYTE_ARRAY: "DELTA_BYTE_ARRAY",
        Type.DOUBLE: "BYTE_STREAM_SPLIT",
        Type.BOOLEAN: "RLE",
    },
    "DELTA_LENGTH": {
        Type.INT32: "BYTE_STREAM_SPLIT",
        Type.INT64: "BYTE_STREAM_SPLIT",
        Type.BYTE_ARRAY: "DELTA_LENGTH_BYTE_ARRAY",
        Type.DOUBLE: "BYTE_STREAM_SPLIT",
        Type.BOOLEAN: "RLE",
    },
}
CASES_ENV = "STREAMWRITE_NESTED_MATRIX_CASES"
"""How many cases of the full product to run: unset, the representative ones (every family,
codec, page version and nullability at least once); ``all``, the whole product; a number N,
the representative ones plus N more drawn from the product (seeded by the number)."""


@dataclass(frozen=True)
class Case:
    family: str
    codec: str
    version: str
    nullable: bool

    @property
    def name(self) -> str:
        return f"{self.family}-{self.codec}-v{self.version[0]}-{'null' if self.nullable else 'req'}"


ALL_CASES = [Case(*c) for c in itertools.product(FAMILIES, CODECS, VERSIONS, [True, False])]
REPRESENTATIVE = [
    Case("PLAIN", "none", "1.0", True),
    Case("PLAIN", "snappy", "2.0", False),
    Case("DICTIONARY", "zstd", "1.0", True),
    Case("DICTIONARY", "gzip", "2.0", True),
    Case("DELTA", "brotli", "2.0", True),
    Case("DELTA", "lz4", "1.0", False),
    Case("DELTA_LENGTH", "zstd", "2.0", True),
    Case("DELTA_LENGTH", "none", "1.0", True),
]


def selected_cases(environ: dict[str, str] | None = None) -> list[Case]:
    """The cases to run (see :data:`CASES_ENV`)."""
    value = (environ if environ is not None else dict(os.environ)).get(CASES_ENV, "").strip()
    if value == "all":
        return list(ALL_CASES)
    cases = list(REPRESENTATIVE)
    if value:
        rest = [c for c in ALL_CASES if c not in cases]
        count = min(int(value), len(rest))
        cases += random.Random(count).sample(rest, count)
    return cases


def write_options(case: Case, schema: pa.Schema) -> dict[str, Any]:
    """``write_table`` options of a case: the family's encodings by leaf path, small pages,
    the page index, and a bloom filter on every leaf but BOOLEAN ones."""
    leaves = arrow_to_parquet(schema).columns
    options: dict[str, Any] = {
        "compression": case.codec,
        "data_page_version": case.version,
        "data_page_size": 1024,  # several pages per chunk, cut at record starts
        "data_page_row_limit": 500,  # several pages for small dictionary-encoded leaves too
        "write_page_index": True,
        "write_page_checksum": True,
        "bloom_filter_options": {
            leaf.name: True for leaf in leaves if leaf.physical_type != Type.BOOLEAN
        },
    }
    if case.family == "DICTIONARY":
        options["use_dictionary"] = True
        return options
    options["use_dictionary"] = False
    encodings = FAMILIES[case.family]
    options["column_encoding"] = {
        leaf.name: encodings.get(leaf.physical_type, "PLAIN") for leaf in leaves
    }
    return options


# --- data --------------------------------------------------------------------------------


class _Maker:
    """Builds the arrays of one table: a seeded generator, nullable or not, low cardinality
    (dictionary-friendly) or not."""

    def __init__(
        self, nullable: bool, low_cardinality: bool, seed: int, special_floats: bool
    ) -> None:
        self.nullable = nullable
        self.low = low_cardinality
        self.seed = seed
        self.special_floats = special_floats

    def rng(self, name: str) -> np.random.Generator:
        return np.random.default_rng(zlib.crc32(name.encode()) + self.seed)

    def field(self, name: str, dtype: pa.DataType) -> pa.Field:
        return pa.field(name, dtype, nullable=self.nullable)

    def mask(self, rng: np.random.Generator, n: int, rate: float = 0.15) -> pa.Array | None:
        if not self.nullable:
            return None
        mask = rng.random(n) < rate
        if n > 40:
            mask[n // 3 : n // 3 + 12] = True  # a run of nulls
        return pa.array(mask)

    # leaves (n values each)
    def floats(self, rng: np.random.Generator, n: int) -> pa.Array:
        values = (rng.integers(0, 8, n) if self.low else rng.normal(0, 1e3, n)).astype(np.float64)
        if self.special_floats:
            values[: min(n, 4)] = [np.nan, -0.0, 0.0, np.inf][: min(n, 4)]
        return pa.array(values, pa.float64(), mask=self._leaf_mask(rng, n))

    def ints(self, rng: np.random.Generator, n: int, dtype: pa.DataType) -> pa.Array:
        width = np.int32 if dtype == pa.int32() else np.int64
        info = np.iinfo(width)
        if self.low:
            values = rng.integers(-5, 15, n).astype(width)
        else:
            values = rng.integers(info.min, info.max, n, dtype=width, endpoint=True)
        values[: min(n, 2)] = [info.min, info.max][: min(n, 2)]
        return pa.array(values, dtype, mask=self._leaf_mask(rng, n))

    def strings(self, rng: np.random.Generator, n: int) -> pa.Array:
        words = [
            f"w{i}" * (i % 5) + ("é" if i % 4 == 0 else "") for i in range(12 if self.low else 400)
        ]
        words[0] = ""
        picks = rng.integers(0, len(words), n)
        return pa.array([words[i] for i in picks], pa.string(), mask=self._leaf_mask(rng, n))

    def bools(self, rng: np.random.Generator, n: int) -> pa.Array:
        return pa.array(rng.random(n) < 0.4, pa.bool_(), mask=self._leaf_mask(rng, n))

    def _leaf_mask(self, rng: np.random.Generator, n: int) -> np.ndarray | None:
        return (rng.random(n) < 0.1) if self.nullable else None

    # nesting
    def offsets(self, rng: np.random.Generator, n: int, max_length: int = 6) -> np.ndarray:
        lengths = rng.integers(0, max_length + 1, n)
        lengths[rng.random(n) < 0.1] = 0  # more empty lists
        return np.concatenate([[0], np.cumsum(lengths)])

    def list_of(
        self,
        name: str,
        n: int,
        element: Callable[[np.random.Generator, int], pa.Array],
        *,
        large: bool = False,
        item: str = "item",
    ) -> pa.Array:
        rng = self.rng(name)
        offsets = self.offsets(rng, n)
        values = element(rng, int(offsets[-1]))
        value_field = pa.field(item, values.type, nullable=self.nullable)
        if large:
            dtype = pa.large_list(value_field)
            return pa.LargeListArray.from_arrays(
                pa.array(offsets, pa.int64()), values, type=dtype, mask=self.mask(rng, n)
            )
        dtype = pa.list_(value_field)
        return pa.ListArray.from_arrays(
            pa.array(offsets, pa.int32()), values, type=dtype, mask=self.mask(rng, n)
        )

    def fixed_list_of(self, name: str, n: int, size: int) -> pa.Array:
        rng = self.rng(name)
        values = self.ints(rng, n * size, pa.int32())
        dtype = pa.list_(pa.field("item", pa.int32(), nullable=self.nullable), size)
        return pa.FixedSizeListArray.from_arrays(values, type=dtype, mask=self.mask(rng, n))

    def struct_of(self, name: str, n: int, children: dict[str, pa.Array]) -> pa.Array:
        rng = self.rng(name)
        fields = [self.field(child, array.type) for child, array in children.items()]
        return pa.StructArray.from_arrays(
            list(children.values()), fields=fields, mask=self.mask(rng, n)
        )

    def map_of(
        self, name: str, n: int, items: Callable[[np.random.Generator, int], pa.Array]
    ) -> pa.Array:
        rng = self.rng(name)
        lengths = rng.integers(0, 5, n)
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        total = int(offsets[-1])
        # keys unique within a map (readers may fold duplicates): the position in the map
        first = np.repeat(offsets[:-1], lengths)
        keys = pa.array([f"k{i}" for i in np.arange(total) - first], pa.string())
        values = items(rng, total)
        dtype = pa.map_(
            pa.field("key", pa.string(), nullable=False),
            pa.field("value", values.type, nullable=self.nullable),
        )
        return pa.MapArray.from_arrays(
            pa.array(offsets, pa.int32()), keys, values, type=dtype, mask=self.mask(rng, n)
        )


def nested_table(
    nullable: bool,
    low_cardinality: bool = False,
    num_rows: int = NUM_ROWS,
    seed: int = 11,
    special_floats: bool = True,
) -> pa.Table:
    """The matrix table (module docstring): ``num_rows`` rows of every nested shape.

    ``special_floats=False`` leaves out NaN, -0.0 and inf (for comparisons by ``to_pylist``).
    """
    mk = _Maker(nullable, low_cardinality, seed, special_floats)
    n = num_rows
    columns: dict[str, pa.Array] = {
        "lf": mk.list_of("lf", n, mk.floats),
        "ls": mk.list_of("ls", n, mk.strings),
        "ll": mk.list_of("ll", n, lambda r, k: mk.ints(r, k, pa.int64()), large=True),
        "fl": mk.fixed_list_of("fl", n, 3),
        "lb": mk.list_of("lb", n, mk.bools),
        "s": mk.struct_of(
            "s",
            n,
            {"a": mk.ints(mk.rng("s.a"), n, pa.int64()), "b": mk.strings(mk.rng("s.b"), n)},
        ),
        "m": mk.map_of("m", n, mk.strings),
        "lst": mk.list_of(
            "lst",
            n,
            lambda r, k: mk.struct_of(
                "lst.x", k, {"x": mk.ints(r, k, pa.int32()), "y": mk.strings(r, k)}
            ),
        ),
        "mli": mk.map_of(
            "mli",
            n,
            lambda r, k: mk.list_of("mli.v", k, lambda r2, k2: mk.ints(r2, k2, pa.int64())),
        ),
        "nn": mk.list_of(
            "nn", n, lambda r, k: mk.list_of("nn.i", k, lambda r2, k2: mk.ints(r2, k2, pa.int32()))
        ),
        "deep": mk.struct_of(
            "deep",
            n,
            {
                "a": mk.list_of("deep.a", n, mk.floats),
                "b": mk.struct_of(
                    "deep.b",
                    n,
                    {
                        "c": mk.strings(mk.rng("deep.c"), n),
                        "d": mk.ints(mk.rng("deep.d"), n, pa.int64()),
                    },
                ),
            },
        ),
    }
    schema = pa.schema([mk.field(name, array.type) for name, array in columns.items()])
    return pa.Table.from_arrays(list(columns.values()), schema=schema)
