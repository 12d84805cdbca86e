"""The ring 1 <-> ring 2 contract: an encoded column chunk, placed anywhere in a file.

A worker (ring 2, :func:`workers.chunk.encode_chunk`; or a raw copy out of an existing file,
:func:`streamwrite.layout.raw_copy.copy_row_group`) turns one column of one row group into an
:class:`EncodedChunk`; the file writer (ring 1,
:class:`streamwrite.layout.file_writer.FileWriter`) places it and rebases its offsets. The
chunk knows nothing of where it lands::

    data := [dictionary page] data page*             offsets below count from data[0]

    meta_data.data_page_offset, meta_data.dictionary_page_offset      relative to data[0]
    offset_index.page_locations[].offset                              relative to data[0]
    column_index                                                      no offsets
    bloom_filter := BloomFilterHeader bitset | enc(header) enc(bitset)    placed by the writer

Sizes (``total_compressed_size``, page locations) count the stored bytes, encrypted pages
included. An encrypted column's pages and bloom filter arrive sealed; its ColumnMetaData and
page index stay plaintext here because their offsets change on placement (the file writer
seals them once they are final).

Encoding decisions travel both ways as small frozen values: an :class:`EncodingDecision`
(dictionary or not, and the encoding of the values the dictionary does not cover) goes into a
job's settings, made once by the shell's planner (``streamwrite.encode.EncodingPlanner``)
instead of by sampling every chunk; the chunk comes back with a :class:`ChunkObservation` of
what its values looked like (the decision it took, the distinct count it saw), from which the
planner adopts a first decision or notices drift.

The encoder's settings (``workers.chunk.ChunkSettings``) stay in ring 2: they hold a
:class:`streamwrite.options.ColumnOptions`, and ``options`` ranks above ``format``.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamwrite.format import structs as t
from streamwrite.format.enums import Encoding
from streamwrite.format.index import ColumnIndexPart

__all__ = ["ChunkObservation", "EncodedChunk", "EncodingDecision"]


@dataclass(frozen=True, slots=True)
class EncodingDecision:
    """How a column's chunks are encoded, decided once and reused (picklable).

    Attributes:
        use_dictionary: Dictionary-encode the chunk (PLAIN dictionary page + RLE_DICTIONARY
            indices); the chunk still drops the dictionary when its own distinct count shows
            it would not pay off (and reports that as drift).
        fallback: The encoding of the values the dictionary does not cover (all of them when
            ``use_dictionary`` is False).
    """

    use_dictionary: bool
    fallback: Encoding


@dataclass(frozen=True, slots=True)
class ChunkObservation:
    """What an encoded chunk saw of its values, for the planner that decides its encodings.

    Attributes:
        decision: The decision the chunk was encoded with: the one it was given, or the one
            its own full analysis made (``analysed``).
        analysed: True when the chunk made ``decision`` itself from its values (no decision
            was given); the planner adopts it.
        drift: The values contradict the decision given: a dictionary that did not pay off or
            overflowed its page limit, integers encoded DELTA_BINARY_PACKED that decrease, or a
            sample of a non-dictionary column with few distinct values. The planner decides
            afresh on the next chunk.
        num_values: Non-null values in the chunk.
        num_distinct: Distinct values, when the chunk hashed them all (None otherwise).
    """

    decision: EncodingDecision
    analysed: bool
    drift: bool
    num_values: int
    num_distinct: int | None = None


@dataclass(frozen=True, slots=True)
class EncodedChunk:
    """A column chunk's bytes and metadata, with offsets relative to the chunk start.

    Attributes:
        data: The pages, dictionary page first (sealed if the column is encrypted).
        meta_data: The chunk's ColumnMetaData; page offsets relative to ``data[0]``.
        column_index: The chunk's ColumnIndex, or None without a page index.
        offset_index: The chunk's OffsetIndex (page offsets relative to ``data[0]``), or None.
        bloom_filter: The serialized bloom filter, or None; the file writer places it after
            the row group's chunks.
        observed: What the encoder saw of the values (None for chunks not encoded from
            values, such as raw copies); not part of the file.
        index_part: The chunk's contribution to the file's embedded index (from the Arrow
            values, ``streamwrite.encode.attach_index_parts``, or carried by a raw copy), or
            None; the file writer serialises it into the blob.
    """

    data: bytes
    meta_data: t.ColumnMetaData
    column_index: t.ColumnIndex | None
    offset_index: t.OffsetIndex | None
    bloom_filter: bytes | None
    observed: ChunkObservation | None = None
    index_part: ColumnIndexPart | None = None
