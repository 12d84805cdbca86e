"""Each RLE_DICTIONARY page takes the bit width of its own largest index: a chunk's early
pages, which use only the first dictionary entries, are narrower (pyarrow narrows them too)."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import streamwrite
from streamwrite.format import structs as t
from streamwrite.format.enums import PageType
from streamwrite.format.thrift.codec import deserialize
from workers.compression import decompress


def _page_widths(raw: bytes) -> list[tuple[int, int]]:
    """(bit width byte, the page's value count) of every RLE_DICTIONARY data page (v1, zstd)."""
    meta = pq.ParquetFile(io.BytesIO(raw)).metadata.row_group(0).column(0)
    pos = meta.data_page_offset
    end = (meta.dictionary_page_offset or pos) + meta.total_compressed_size
    widths = []
    while pos < end:
        header, body = deserialize(t.PageHeader, raw, pos)
        data = raw[body : body + header.compressed_page_size]
        pos = body + header.compressed_page_size
        assert header.type == PageType.DATA_PAGE and header.data_page_header is not None
        plain = decompress(6, data, header.uncompressed_page_size, max_size=1 << 30)
        def_size = int.from_bytes(plain[:4], "little")
        widths.append((plain[4 + def_size], header.data_page_header.num_values))
    return widths


def test_early_pages_of_a_growing_dictionary_are_narrower() -> None:
    walk = np.round(np.cumsum(np.random.default_rng(7).normal(size=60_000)), 1)
    table = pa.table({"x": walk})
    buf = io.BytesIO()
    streamwrite.write_table(
        table, buf, column_encoding=None, data_page_row_limit=5_000, use_dictionary=True
    )
    raw = buf.getvalue()
    assert pq.read_table(io.BytesIO(raw)).equals(table)
    widths = [w for w, _ in _page_widths(raw)]
    # the page's own largest index: first-occurrence order makes it a running count
    _, first = np.unique(walk, return_index=True)
    order = np.sort(first)
    expected = []
    for start in range(0, len(walk), 5_000):
        largest = int(np.searchsorted(order, start + 5_000)) - 1
        expected.append(max(1, largest.bit_length()))
    assert widths == expected
    assert widths[0] < widths[-1]
