"""Automatic encoding choice for one column chunk.

Rules, applied per chunk on the chunk's own values (overridden by ``ColumnOptions.encoding``):

1. Dictionary (PLAIN dictionary page + RLE_DICTIONARY indices) when ``use_dictionary`` is on, the
   type is not BOOLEAN/INT96, and either (chunks of at most ``SMALL_CHUNK_SIZE`` values are
   dictionary-encoded whole and judged on the real distinct count, with the same thresholds)
   - a strided sample or the leading run of ``DICTIONARY_SAMPLE_SIZE`` values has at most
     ``MAX_DICTIONARY_RATIO`` distinct values (symbols, venues, slowly changing values), or
   - for INT32/INT64/FLOAT/DOUBLE chunks that are not non-decreasing integers, the whole chunk
     dictionary-encodes to at most ``DICTIONARY_GAIN`` of its PLAIN size (a random walk at fixed
     precision: every sample looks distinct, yet the chunk repeats values). The encoding
     computed for that check is handed to the chunk encoder, never computed twice.
   High-cardinality columns skip the dictionary page that would only be thrown away at the
   size limit.
2. The non-dictionary encoding (used alone, or for the rest of the chunk after the dictionary
   overflows its byte limit):
   - BOOLEAN: RLE in data page v2, PLAIN in v1;
   - INT32/INT64: DELTA_BINARY_PACKED when the values never decrease (timestamps, ids), else PLAIN;
   - FLOAT/DOUBLE: BYTE_STREAM_SPLIT when the column is compressed and a sample compresses at
     least ``BSS_GAIN`` smaller that way than PLAIN, else PLAIN;
   - BYTE_ARRAY: DELTA_LENGTH_BYTE_ARRAY in data page v2, PLAIN in v1 and for Arrow
     dictionary-typed columns (pyarrow cannot decode DELTA pages into a dictionary array);
   - FIXED_LEN_BYTE_ARRAY, INT96: PLAIN.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from streamwrite.format.enums import CompressionCodec, Encoding, Type
from streamwrite.options import (
    DICTIONARY_SAMPLE_SIZE,
    MAX_DICTIONARY_RATIO,
    ColumnOptions,
    DataPageVersion,
)
from workers.compression import compress
from workers.encoding.byte_stream_split import encode_byte_stream_split
from workers.encoding.dictionary import dictionary_encode
from workers.encoding.plain import encode_plain
from workers.values import BinaryValues, count_values

__all__ = ["EncodingChoice", "choose_encodings", "sample_values"]

BSS_SAMPLE_SIZE = 16384
BSS_GAIN = 0.95
DICTIONARY_GAIN = 0.5
SMALL_CHUNK_SIZE = 4 * DICTIONARY_SAMPLE_SIZE
_NUMERIC_WIDTH = {Type.INT32: 4, Type.INT64: 8, Type.FLOAT: 4, Type.DOUBLE: 8}


@dataclass(frozen=True, slots=True)
class EncodingChoice:
    """How a chunk is encoded; ``dictionary`` holds ``(distinct, indices)`` if already computed."""

    use_dictionary: bool
    fallback: Encoding
    dictionary: tuple[Any, npt.NDArray[np.int32]] | None = None


def sample_values(values: Any, size: int) -> Any:
    """Up to ``size`` values taken at an even stride over the whole column."""
    count = count_values(values)
    if count <= size:
        return values
    index = np.linspace(0, count - 1, size).astype(np.int64)
    if isinstance(values, BinaryValues):
        return values.take(index)
    return values[index]


def _distinct_ratio(sample: Any, physical_type: Type) -> float:
    count = count_values(sample)
    dictionary, _ = dictionary_encode(sample, physical_type)
    return count_values(dictionary) / count


def _sampled_low_cardinality(values: Any, physical_type: Type) -> bool:
    strided = sample_values(values, DICTIONARY_SAMPLE_SIZE)
    if _distinct_ratio(strided, physical_type) <= MAX_DICTIONARY_RATIO:
        return True
    if count_values(values) <= DICTIONARY_SAMPLE_SIZE:
        return False
    leading = values[:DICTIONARY_SAMPLE_SIZE]
    return _distinct_ratio(leading, physical_type) <= MAX_DICTIONARY_RATIO


def _num_distinct_sorted(values: npt.NDArray[np.integer]) -> int:
    """Distinct values of a non-decreasing array: one more than its steps."""
    return 1 + int(np.count_nonzero(values[1:] != values[:-1]))


def _pays_off(distinct: Any, count: int, physical_type: Type) -> bool:
    """For fixed-width numbers: dictionary page + indices at most DICTIONARY_GAIN of PLAIN."""
    width = _NUMERIC_WIDTH[physical_type]
    num_distinct = count_values(distinct)
    index_bits = max(1, (num_distinct - 1).bit_length())
    encoded_size = num_distinct * width + count * index_bits / 8
    return encoded_size <= DICTIONARY_GAIN * count * width


def _non_dictionary_encoding(
    values: Any,
    physical_type: Type,
    options: ColumnOptions,
    version: DataPageVersion,
    dictionary_typed: bool,
) -> Encoding:
    if options.encoding is not None:
        return options.encoding
    v2 = version == DataPageVersion.V2
    if physical_type == Type.BOOLEAN:
        return Encoding.RLE if v2 else Encoding.PLAIN
    if physical_type in (Type.INT32, Type.INT64):
        if count_values(values) > 1 and bool(np.all(values[1:] >= values[:-1])):
            return Encoding.DELTA_BINARY_PACKED
        return Encoding.PLAIN
    if physical_type in (Type.FLOAT, Type.DOUBLE):
        if options.compression == CompressionCodec.UNCOMPRESSED or count_values(values) < 64:
            return Encoding.PLAIN
        sample = values[:BSS_SAMPLE_SIZE]
        codec, level = options.compression, options.compression_level
        plain_size = len(compress(codec, encode_plain(sample, physical_type), level))
        split_size = len(compress(codec, encode_byte_stream_split(sample), level))
        return Encoding.BYTE_STREAM_SPLIT if split_size < BSS_GAIN * plain_size else Encoding.PLAIN
    if physical_type == Type.BYTE_ARRAY:
        return Encoding.DELTA_LENGTH_BYTE_ARRAY if v2 and not dictionary_typed else Encoding.PLAIN
    return Encoding.PLAIN


def choose_encodings(
    values: Any,
    physical_type: Type,
    options: ColumnOptions,
    version: DataPageVersion,
    dictionary_typed: bool = False,
) -> EncodingChoice:
    """Decide how a chunk's non-null ``values`` are encoded (rules in the module docstring).

    Returns:
        Whether to try a dictionary first, the encoding for values the dictionary does not
        cover (all of them when it is off), and the dictionary encoding if it was computed.
    """
    fallback = _non_dictionary_encoding(values, physical_type, options, version, dictionary_typed)
    if (
        not options.use_dictionary
        or physical_type in (Type.BOOLEAN, Type.INT96)
        or count_values(values) == 0
    ):
        return EncodingChoice(False, fallback)
    count = count_values(values)
    sorted_ints = fallback == Encoding.DELTA_BINARY_PACKED and options.encoding is None
    may_pay_off = physical_type in _NUMERIC_WIDTH and not sorted_ints
    if count <= SMALL_CHUNK_SIZE:
        # Small chunks (live-file commits): encode once and decide on the real dictionary.
        if sorted_ints and _num_distinct_sorted(values) > MAX_DICTIONARY_RATIO * count:
            return EncodingChoice(False, fallback)  # the same decision, without hashing
        distinct, indices = dictionary_encode(values, physical_type)
        if count_values(distinct) <= MAX_DICTIONARY_RATIO * count or (
            may_pay_off and _pays_off(distinct, count, physical_type)
        ):
            return EncodingChoice(True, fallback, (distinct, indices))
        return EncodingChoice(False, fallback)
    if _sampled_low_cardinality(values, physical_type):
        return EncodingChoice(True, fallback)
    if may_pay_off:
        distinct, indices = dictionary_encode(values, physical_type)
        if _pays_off(distinct, count, physical_type):
            return EncodingChoice(True, fallback, (distinct, indices))
    return EncodingChoice(False, fallback)
