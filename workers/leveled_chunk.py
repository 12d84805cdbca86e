"""Column chunk of a nested leaf: repetition and definition levels of any width (minimal).

The flat encoder (:mod:`workers.chunk`) writes 0/1 definition levels and no repetition levels.
This one writes the leaves of the two nested shapes of :mod:`streamwrite.arrow.nested`
(struct children, 3-level LIST elements) as one DATA_PAGE (v1) of PLAIN values::

    chunk := data_page
    data_page := PageHeader(DATA_PAGE, num_values = level entries, PLAIN, RLE, RLE)
                 body = [u32 LE len, RLE/bit-packed hybrid rep levels (width bits(max_rep))]
                        [u32 LE len, RLE/bit-packed hybrid def levels (width bits(max_def))]
                        PLAIN values (the non-null leaf values)

Rep levels are present only when ``max_repetition_level > 0``, def levels only when
``max_definition_level > 0``. Statistics: null count (level entries below ``max_def``) and
min/max of the values. No dictionary, page index or bloom filter: issue 15 generalises the
flat encoder's page splitting, encodings and indexes to nested leaves.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from streamwrite.format import structs as t
from streamwrite.format.chunk import EncodedChunk
from streamwrite.format.enums import Encoding, PageType
from workers.chunk import ChunkSettings
from workers.encoding.rle_hybrid import encode_levels_v1
from workers.encodings import encode_values
from workers.page import ChunkCrypto, build_data_page_v1
from workers.stats import compute_stats
from workers.values import count_values

__all__ = ["encode_leveled_chunk"]


def encode_leveled_chunk(
    settings: ChunkSettings,
    max_repetition_level: int,
    values: Any,
    def_levels: npt.NDArray[np.uint8] | None,
    rep_levels: npt.NDArray[np.uint8] | None,
    num_rows: int,
    crypto: ChunkCrypto | None = None,
) -> EncodedChunk:
    """Encode one nested leaf's chunk as a single PLAIN data page with its levels.

    Args:
        settings: The leaf's physical type, max definition level, compression, statistics.
        max_repetition_level: 0 or 1.
        values: The non-null leaf values (:mod:`workers.values` form).
        def_levels: One definition level per level entry (None when max_def is 0).
        rep_levels: One repetition level per entry (None when max_rep is 0).
        num_rows: Records in the chunk.
        crypto: The column's cipher and ordinals when the column is encrypted.

    Returns:
        The chunk bytes and metadata (offsets relative to the chunk start).
    """
    ptype = settings.physical_type
    num_values = count_values(values)
    num_entries = num_rows if def_levels is None else int(def_levels.shape[0])
    levels = b""
    if max_repetition_level > 0:
        assert rep_levels is not None
        levels += encode_levels_v1(rep_levels, max_repetition_level.bit_length())
    if settings.max_definition_level > 0:
        assert def_levels is not None
        levels += encode_levels_v1(def_levels, settings.max_definition_level.bit_length())
    column = settings.column
    page = build_data_page_v1(
        levels=levels,
        values=encode_values(values, ptype, Encoding.PLAIN),
        num_values=num_entries,
        encoding=Encoding.PLAIN,
        codec=column.compression,
        compression_level=column.compression_level,
        write_crc=settings.write_page_checksum,
        crypto=crypto,
        page_ordinal=0,
    )
    statistics = None
    if column.write_statistics:
        stats = compute_stats(
            values, ptype, settings.sort_order, max_size=settings.statistics_truncate_length
        )
        statistics = t.Statistics(
            null_count=num_entries - num_values,
            min_value=stats.min_value,
            max_value=stats.max_value,
            is_min_value_exact=stats.is_min_value_exact if stats.min_value is not None else None,
            is_max_value_exact=stats.is_max_value_exact if stats.max_value is not None else None,
        )
    meta = t.ColumnMetaData(
        type=ptype,
        encodings=[Encoding.PLAIN, Encoding.RLE],
        path_in_schema=list(settings.path_in_schema),
        codec=column.compression,
        num_values=num_entries,
        total_uncompressed_size=page.uncompressed_total_size,
        total_compressed_size=len(page.data),
        data_page_offset=0,
        statistics=statistics,
        encoding_stats=[
            t.PageEncodingStats(page_type=PageType.DATA_PAGE, encoding=Encoding.PLAIN, count=1)
        ],
    )
    return EncodedChunk(
        data=page.data, meta_data=meta, column_index=None, offset_index=None, bloom_filter=None
    )
