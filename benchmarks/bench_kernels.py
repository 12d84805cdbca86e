"""Encoding kernels alone, encode and decode, against pyarrow writing and reading the same column.

Two sections, each printed as markdown (see ``benchmarks/README.md`` for recorded figures):

1. Per kernel: for each (column, encoding) pair of the reference table, MB/s of input (MB = the
   Arrow buffer bytes of the column) for our encoder and our decoder alone, called once per page
   of ``--page-rows`` values on the physical values (obtained outside timing), against
   ``pq.write_table`` and ``pq.read_table`` of that single column, uncompressed, with the same
   encoding (pyarrow's time includes its whole file path, ours only the kernel), and the ratios.
2. Read: ``streamwrite.read_table`` against ``pq.read_table`` of one file written by streamwrite
   with its defaults and ``--row-group-rows`` rows per row group (the row groups of a stream of
   small commits, which compaction decodes).

Every time is the best of ``--repeat`` runs, the jobs of one row round-robin (the machine may be
shared; noise only slows runs). Run from the repository root::

    .venv/bin/python benchmarks/bench_kernels.py           # 1M rows, best of 5
    .venv/bin/python benchmarks/bench_kernels.py --quick   # smoke run, seconds
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _common import MB, Report, bench_parser, fmt_ratio, markdown_table, verdict

import streamwrite
from streamwrite.arrow.schema import arrow_to_parquet
from streamwrite.arrow.values import to_physical
from streamwrite.format.structs import Type
from streamwrite.testing import reference_table
from workers.encoding.byte_stream_split import decode_byte_stream_split, encode_byte_stream_split
from workers.encoding.delta_binary_packed import (
    decode_delta_binary_packed,
    encode_delta_binary_packed,
)
from workers.encoding.delta_byte_array import decode_delta_byte_array, encode_delta_byte_array
from workers.encoding.delta_length_byte_array import (
    decode_delta_length_byte_array,
    encode_delta_length_byte_array,
)
from workers.encoding.dictionary import (
    decode_dictionary_indices,
    dictionary_encode,
    dictionary_lookup,
    encode_dictionary_indices,
)
from workers.encoding.plain import decode_plain, encode_plain

DICTIONARY = "dictionary"
KERNEL_TARGET = 0.5  # ours >= 0.5x pyarrow's MB/s (within 2x)

Encoder = Callable[[Any], bytes]
Decoder = Callable[[bytes, int], Any]


def _codec(encoding: str, physical_type: Type, dictionary: Any) -> tuple[Encoder, Decoder]:
    """Our encoder and decoder of one page of ``encoding`` values."""
    if encoding == DICTIONARY:  # indices of a page (the dictionary page is built once)
        size = len(dictionary)
        return (
            lambda indices: encode_dictionary_indices(indices, size),
            lambda buf, n: dictionary_lookup(dictionary, decode_dictionary_indices(buf, n)[0]),
        )
    if encoding == "PLAIN":
        return (
            lambda v: encode_plain(v, physical_type),
            lambda buf, n: decode_plain(buf, physical_type, n),
        )
    if encoding == "DELTA_BINARY_PACKED":
        dtype = np.int32 if physical_type == Type.INT32 else np.int64
        return encode_delta_binary_packed, lambda buf, n: decode_delta_binary_packed(buf, dtype, n)
    if encoding == "BYTE_STREAM_SPLIT":
        return (
            encode_byte_stream_split,
            lambda buf, n: decode_byte_stream_split(buf, physical_type, n),
        )
    if encoding == "DELTA_LENGTH_BYTE_ARRAY":
        return encode_delta_length_byte_array, decode_delta_length_byte_array
    if encoding == "DELTA_BYTE_ARRAY":
        return encode_delta_byte_array, decode_delta_byte_array
    raise ValueError(f"No kernel for {encoding}.")


CASES: list[tuple[str, str]] = [
    ("ts", "DELTA_BINARY_PACKED"),
    ("qty", "DELTA_BINARY_PACKED"),
    ("qty", DICTIONARY),
    ("price", "BYTE_STREAM_SPLIT"),
    ("symbol", DICTIONARY),
    ("order_id", "PLAIN"),
    ("order_id", "DELTA_LENGTH_BYTE_ARRAY"),
    ("order_id", "DELTA_BYTE_ARRAY"),
]


def _best(jobs: list[Callable[[], object]], repeat: int) -> list[float]:
    best = [float("inf")] * len(jobs)
    for _ in range(repeat):
        for k, job in enumerate(jobs):
            start = time.perf_counter()
            job()
            best[k] = min(best[k], time.perf_counter() - start)
    return best


def _time_case(
    encode: Encoder,
    decode: Decoder,
    pages: list[Any],
    single: pa.Table,
    path: Path,
    options: dict[str, Any],
    repeat: int,
) -> list[float]:
    """Best seconds of: our encoder over the pages, pyarrow's write, our decoder, its read."""
    encoded = [(encode(page), len(page)) for page in pages]
    return _best(
        [
            lambda: [encode(page) for page in pages],
            lambda: pq.write_table(single, path, **options),
            lambda: [decode(buf, count) for buf, count in encoded],
            lambda: pq.read_table(path),
        ],
        repeat,
    )


def bench_kernels(
    table: pa.Table, page_rows: int, repeat: int, workdir: Path
) -> tuple[str, list[str]]:
    """Section 1. Returns the markdown and the (column, direction) pairs under the target."""
    specs = {spec.name: spec for spec in arrow_to_parquet(table.schema).columns}
    rows = []
    misses = []
    for column, encoding in CASES:
        array = table.column(column).combine_chunks()
        spec = specs[column]
        values = to_physical(array, spec).values
        dictionary = None
        if encoding == DICTIONARY:
            dictionary, values = dictionary_encode(values, spec.physical_type)
        encode, decode = _codec(encoding, spec.physical_type, dictionary)
        n = len(values)
        pages = [values[i : min(i + page_rows, n)] for i in range(0, n, page_rows)]
        path = workdir / f"{column}_{encoding}.parquet"
        options: dict[str, Any] = {"compression": "none", "use_dictionary": dictionary is not None}
        if dictionary is None:
            options["column_encoding"] = {column: encoding}
        single = pa.table({column: array})
        pq.write_table(single, path, **options)
        t_enc, t_write, t_dec, t_read = _time_case(
            encode, decode, pages, single, path, options, repeat
        )
        mb = array.nbytes / MB
        for direction, ours, theirs in (("encode", t_enc, t_write), ("decode", t_dec, t_read)):
            if theirs / ours < KERNEL_TARGET:
                misses.append(f"{column}/{encoding} {direction} ({theirs / ours:.2f}x)")
        rows.append(
            [
                column,
                encoding,
                f"{mb:,.1f}",
                f"{mb / t_enc:,.0f}",
                f"{mb / t_write:,.0f}",
                fmt_ratio(t_write / t_enc),
                f"{mb / t_dec:,.0f}",
                f"{mb / t_read:,.0f}",
                fmt_ratio(t_read / t_dec),
            ]
        )
    headers = [
        "column",
        "encoding",
        "input MB",
        "encode MB/s",
        "pyarrow write MB/s",
        "encode ratio",
        "decode MB/s",
        "pyarrow read MB/s",
        "decode ratio",
    ]
    return markdown_table(headers, rows), misses


def bench_read(table: pa.Table, row_group_rows: int, repeat: int, workdir: Path) -> float:
    """Section 2. Prints the table and returns pyarrow's time over ours."""
    path = workdir / "read.parquet"
    streamwrite.write_table(table, path, row_group_size=row_group_rows)
    ours, theirs = _best(
        [lambda: streamwrite.read_table(path), lambda: pq.read_table(path)], repeat
    )
    mb = table.nbytes / MB
    print(
        markdown_table(
            ["reader", "seconds", "MB/s", "ours / pyarrow"],
            [
                ["streamwrite.read_table", f"{ours:.3f}", f"{mb / ours:,.0f}", ""],
                ["pq.read_table", f"{theirs:.3f}", f"{mb / theirs:,.0f}", fmt_ratio(theirs / ours)],
            ],
        )
        + "\n"
    )
    return theirs / ours


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the reference table")
    parser.add_argument("--page-rows", type=int, default=20_000, help="values per kernel call")
    parser.add_argument("--row-group-rows", type=int, default=10_000, help="section 2 row groups")
    parser.add_argument("--repeat", type=int, default=5, help="best of N runs")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows = min(args.rows, 100_000)
        args.repeat = min(args.repeat, 2)
    report = Report(
        "kernels", args, [f"- every time is the best of {args.repeat} run(s), round-robin"]
    )
    table = reference_table(args.rows)
    verdicts = []
    with report.workdir() as workdir:
        print(f"## 1. Per kernel ({args.rows:,} rows, pages of {args.page_rows:,} values)\n")
        text, misses = bench_kernels(table, args.page_rows, args.repeat, workdir)
        print(text + "\n")
        verdicts.append(
            f"- each kernel >= {KERNEL_TARGET}x pyarrow, encode and decode: "
            + ("PASS" if not misses else "FAIL: " + ", ".join(misses))
        )
        print(f"## 2. Read ({args.rows:,} rows, row groups of {args.row_group_rows:,})\n")
        ratio = bench_read(table, args.row_group_rows, args.repeat, workdir)
        report.data["read_ratio"] = ratio
        verdicts.append(verdict("read_table >= 0.5x pyarrow", fmt_ratio(ratio), ratio >= 0.5))
    return report.finish(verdicts)


if __name__ == "__main__":
    raise SystemExit(main())
