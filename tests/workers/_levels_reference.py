"""Per-value reference implementations for the leveled chunk encoder, and a page walker.

Everything here is plain Python over lists (slow, obviously right): the tests compare the
vectorised kernels of ``workers.levels`` / ``workers.chunk`` with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from streamwrite.format import structs as t
from streamwrite.format.enums import CompressionCodec, PageType, Type
from streamwrite.format.thrift.codec import deserialize
from streamwrite.options import ColumnOptions, DataPageVersion
from workers.encoding.rle_hybrid import decode_levels_v1, decode_rle_hybrid
from workers.stats import SortOrder


def make_settings(
    ptype: Type,
    max_def: int,
    max_rep: int,
    version: DataPageVersion,
    *,
    data_page_size: int = 1 << 20,
    data_page_row_limit: int = 20_000,
    dictionary_page_size_limit: int = 1 << 20,
    path: tuple[str, ...] = ("c",),
    **column: Any,
) -> Any:
    """ChunkSettings of a leaf (uncompressed unless ``compression`` is given)."""
    from workers.chunk import ChunkSettings

    sort = {
        Type.FLOAT: SortOrder.FLOAT,
        Type.DOUBLE: SortOrder.FLOAT,
        Type.BYTE_ARRAY: SortOrder.UNSIGNED_BYTES,
        Type.BOOLEAN: SortOrder.BOOLEAN,
    }.get(ptype, SortOrder.SIGNED)
    column.setdefault("compression", CompressionCodec.UNCOMPRESSED)
    return ChunkSettings(
        path_in_schema=path,
        physical_type=ptype,
        type_length=None,
        max_definition_level=max_def,
        max_repetition_level=max_rep,
        sort_order=sort,
        column=ColumnOptions(**column),
        data_page_size=data_page_size,
        data_page_row_limit=data_page_row_limit,
        dictionary_page_size_limit=dictionary_page_size_limit,
        data_page_version=version,
        write_page_index=True,
        write_page_checksum=True,
        statistics_truncate_length=64,
    )


def reference_record_starts(rep: list[int]) -> list[int]:
    """Index of the first level entry of each record, then the number of entries."""
    return [i for i, r in enumerate(rep) if r == 0] + [len(rep)]


def reference_histogram(levels: list[int], max_level: int) -> list[int]:
    counts = [0] * (max_level + 1)
    for level in levels:
        counts[level] += 1
    return counts


@dataclass
class Page:
    """One data page of a chunk, decoded as far as the level tests need."""

    header: t.PageHeader
    num_entries: int
    num_rows: int | None  # v2 only
    num_nulls: int | None  # v2 only
    rep: npt.NDArray[np.uint64]
    defs: npt.NDArray[np.uint64]
    values: bytes


def walk_pages(data: bytes, max_def: int, max_rep: int) -> tuple[t.PageHeader | None, list[Page]]:
    """The dictionary page header (or None) and the data pages of an uncompressed chunk."""
    pos = 0
    dictionary = None
    pages = []
    while pos < len(data):
        header, size = deserialize(t.PageHeader, data[pos:])
        body = data[pos + size : pos + size + header.compressed_page_size]
        pos += size + header.compressed_page_size
        if header.type == PageType.DICTIONARY_PAGE:
            dictionary = header
            continue
        if header.type == PageType.DATA_PAGE:
            n = header.data_page_header.num_values
            at = 0
            rep = defs = np.zeros(0, dtype=np.uint64)
            if max_rep:
                rep, used = decode_levels_v1(body, max_rep.bit_length(), n)
                at += used
            if max_def:
                defs, used = decode_levels_v1(body[at:], max_def.bit_length(), n)
                at += used
            pages.append(Page(header, n, None, None, rep, defs, body[at:]))
        else:
            v2 = header.data_page_header_v2
            n = v2.num_values
            rep_size, def_size = v2.repetition_levels_byte_length, v2.definition_levels_byte_length
            if max_rep:
                rep, used = decode_rle_hybrid(body[:rep_size], max_rep.bit_length(), n)
                assert used == rep_size
            else:
                assert rep_size == 0
                rep = np.zeros(0, dtype=np.uint64)
            if max_def:
                section = body[rep_size : rep_size + def_size]
                defs, used = decode_rle_hybrid(section, max_def.bit_length(), n)
                assert used == def_size
            else:
                assert def_size == 0
                defs = np.zeros(0, dtype=np.uint64)
            values = body[rep_size + def_size :]
            pages.append(Page(header, n, v2.num_rows, v2.num_nulls, rep, defs, values))
    return dictionary, pages


def random_levels(
    rng: np.random.Generator, num_rows: int, max_def: int, max_rep: int, mean_entries: float
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8] | None]:
    """Random def/rep levels of ``num_rows`` records (rep 0 starts a record)."""
    per_record = 1 + rng.poisson(max(mean_entries - 1, 0), num_rows) if max_rep else None
    if per_record is None:
        defs = rng.integers(0, max_def + 1, num_rows).astype(np.uint8)
        return defs, None
    total = int(per_record.sum())
    rep = rng.integers(1, max_rep + 1, total).astype(np.uint8)
    starts = np.cumsum(per_record) - per_record
    rep[starts] = 0
    # bias towards the maximum so that pages hold values
    biased = np.where(rng.random(total) < 0.6, max_def, rng.integers(0, max_def + 1, total))
    return biased.astype(np.uint8), rep
