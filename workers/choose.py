"""Automatic encoding choice for one column chunk.

Rules, applied per chunk on the chunk's own values (overridden by ``ColumnOptions.encoding``):

1. Dictionary (PLAIN dictionary page + RLE_DICTIONARY indices) when ``use_dictionary`` is on, the
   type is not BOOLEAN/INT96, and either (chunks of at most ``SMALL_CHUNK_SIZE`` values are
   dictionary-encoded whole and judged on the real distinct count, with the same thresholds)
   - a strided sample or the leading run of ``DICTIONARY_SAMPLE_SIZE`` values has at most
     ``MAX_DICTIONARY_RATIO`` distinct values (symbols, venues, slowly changing values), or
   - the whole chunk has at most ``MAX_DICTIONARY_RATIO`` distinct values although the samples
     look distinct (many values each repeated a few times over a long chunk: 20k names in 1M
     rows), or, for INT32/INT64/FLOAT/DOUBLE chunks that are not non-decreasing integers, it
     dictionary-encodes to at most ``DICTIONARY_GAIN`` of its PLAIN size (a random walk at fixed
     precision). A chunk is hashed for these checks only when the collision estimate of a
     ``LARGE_ESTIMATE_SAMPLE_SIZE`` sample says one may hold; the encoding computed for the
     check is handed to the chunk encoder, never computed twice.
   High-cardinality columns skip the dictionary page that would only be thrown away at the
   size limit. Before any chunk of ``ESTIMATE_MIN_VALUES`` or more is hashed whole, a strided
   sample of ``ESTIMATE_SAMPLE_SIZE`` values (``LARGE_ESTIMATE_SAMPLE_SIZE`` above
   ``SMALL_CHUNK_SIZE``) estimates its distinct count by collisions
   (:func:`estimate_distinct`); when the estimate is ``ESTIMATE_MARGIN`` times past the
   threshold the chunk would be judged on, the chunk is not hashed and takes no dictionary
   (unique ids, noise, ``price``-like random walks of a 10k-row batch).
2. The non-dictionary encoding (used alone, or for the rest of the chunk after the dictionary
   overflows its byte limit):
   - BOOLEAN: RLE in data page v2, PLAIN in v1;
   - INT32/INT64: DELTA_BINARY_PACKED when the values never decrease (timestamps, ids), else PLAIN;
   - FLOAT/DOUBLE: BYTE_STREAM_SPLIT when the column is compressed and a sample compresses at
     least ``BSS_GAIN`` smaller that way than PLAIN, else PLAIN;
   - BYTE_ARRAY: DELTA_LENGTH_BYTE_ARRAY in data page v2, PLAIN in v1 and for Arrow
     dictionary-typed columns (pyarrow cannot decode DELTA pages into a dictionary array);
   - FIXED_LEN_BYTE_ARRAY, INT96: PLAIN.

:func:`choose_encodings` is the full analysis above. :func:`apply_decision` follows an
:class:`~streamwrite.format.chunk.EncodingDecision` made earlier (by the planner, from a first
chunk's analysis) and only does what the decision needs, plus cheap checks whose failure it
reports as drift: a dictionary chunk judges its real distinct count (dropping a dictionary that
does not pay off); a DELTA_BINARY_PACKED integer chunk checks it never decreases; a chunk
without a dictionary (when asked: the planner asks every ``CARDINALITY_CHECK_EVERY``-th chunk)
estimates its distinct count on ``OBSERVE_SAMPLE_SIZE`` values and reports drift when the
estimate is under half the dictionary threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from streamwrite.format.chunk import EncodingDecision
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

__all__ = [
    "EncodingChoice",
    "apply_decision",
    "choose_encodings",
    "estimate_distinct",
    "estimate_distinct_reference",
    "sample_values",
]

BSS_SAMPLE_SIZE = 16384
BSS_GAIN = 0.95
DICTIONARY_GAIN = 0.5
SMALL_CHUNK_SIZE = 4 * DICTIONARY_SAMPLE_SIZE
ESTIMATE_SAMPLE_SIZE = 1024
"""Strided sample that estimates a chunk's distinct count before it is hashed whole."""
LARGE_ESTIMATE_SAMPLE_SIZE = 4096
"""The same for chunks above ``SMALL_CHUNK_SIZE`` values (fewer collisions per value there)."""
ESTIMATE_MIN_VALUES = 2 * ESTIMATE_SAMPLE_SIZE
"""Smaller chunks are hashed whole: a sample would cost nearly as much."""
ESTIMATE_MARGIN = 1.25
"""How far past the dictionary threshold the estimate must be to skip hashing (small chunks;
large chunks judged on the random-walk "pays off" size use twice their bound)."""
OBSERVE_SAMPLE_SIZE = 256
"""Sample a chunk without a dictionary estimates its distinct count on, to report drift."""
CARDINALITY_CHECK_EVERY = 4
"""A planner asks every this many chunks following a no-dictionary decision for that check."""
_NUMERIC_WIDTH = {Type.INT32: 4, Type.INT64: 8, Type.FLOAT: 4, Type.DOUBLE: 8}


@dataclass(frozen=True, slots=True)
class EncodingChoice:
    """How a chunk is encoded; ``dictionary`` holds ``(distinct, indices)`` if already computed."""

    use_dictionary: bool
    fallback: Encoding
    dictionary: tuple[Any, npt.NDArray[np.int32]] | None = None
    num_distinct: int | None = None
    """The chunk's distinct values when the choice counted them exactly: hashed the whole chunk,
    or counted the steps of sorted integers (None: the chunk was not hashed)."""

    @property
    def decision(self) -> EncodingDecision:
        """The choice as a decision later chunks can follow."""
        return EncodingDecision(self.use_dictionary, self.fallback)


def sample_values(values: Any, size: int) -> Any:
    """Up to ``size`` values taken at an even stride over the whole column."""
    count = count_values(values)
    if count <= size:
        return values
    index = np.linspace(0, count - 1, size).astype(np.int64)
    if isinstance(values, BinaryValues):
        return values.take(index)
    return values[index]


def sample_positions(count: int, size: int) -> npt.NDArray[np.int64]:
    """The positions :func:`estimate_distinct` samples: every ``count // size``-th value from
    the first, ``size`` of them (all positions when ``count < 2 * size``)."""
    if count < 2 * size:
        return np.arange(count, dtype=np.int64)
    return np.arange(size, dtype=np.int64) * (count // size)


_LANES = np.arange(16, dtype=np.int64)
_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0x165667B19E3779F9))


def _sample_keys(values: Any, physical_type: Type, size: int) -> npt.NDArray[np.uint64] | None:
    """One uint64 key per sampled value, equal exactly when the values are equal; None when
    no such key is cheap (byte strings longer than 16 bytes)."""
    count = count_values(values)
    positions = sample_positions(count, size)
    if physical_type in _NUMERIC_WIDTH:
        sample = np.asarray(values)[positions]
        if physical_type in (Type.FLOAT, Type.DOUBLE):
            nan = np.isnan(sample)
            if nan.any():
                sample = sample.copy()
                sample[nan] = np.nan  # every NaN one key; -0.0 and +0.0 stay apart
        width = _NUMERIC_WIDTH[physical_type]
        return sample.view(f"<u{width}").astype(np.uint64)
    if isinstance(values, BinaryValues):
        starts = values.offsets[positions]
        lengths = values.offsets[positions + 1] - starts
        data = values.data
    elif physical_type in (Type.FIXED_LEN_BYTE_ARRAY, Type.INT96):
        matrix = np.asarray(values)
        width = int(matrix.shape[1]) if matrix.ndim == 2 else 0
        data = np.ascontiguousarray(matrix).reshape(-1)
        starts = positions * width
        lengths = np.full(positions.shape[0], width, dtype=np.int64)
    else:
        return None  # BOOLEAN: never dictionary-encoded
    if lengths.shape[0] == 0:
        return np.zeros(0, dtype=np.uint64)
    shortest, longest = int(lengths.min()), int(lengths.max())
    if longest > 16:
        return None
    if data.shape[0] == 0:
        return lengths.astype(np.uint64)
    # Each value's (up to) 8 or 16 bytes, zero-padded, as one or two words; and its length.
    num_lanes = 8 if longest <= 8 else 16
    lanes = _LANES[:num_lanes]
    at = starts[:, None] + lanes
    if shortest == num_lanes:  # every lane inside its value: no clipping, no mask
        window = data[at]
    else:
        window = data[np.minimum(at, data.shape[0] - 1)] * (lanes < lengths[:, None])
    words = np.ascontiguousarray(window, dtype=np.uint8).view("<u8")
    keys = words[:, 0] * _MIX[0] ^ lengths.astype(np.uint64) * _MIX[2]
    return keys if num_lanes == 8 else keys ^ words[:, 1] * _MIX[1]


def _equal_pairs(keys: npt.NDArray[Any]) -> int:
    """Pairs of equal entries in ``keys``."""
    ordered = np.sort(keys)
    if ordered.shape[0] < 2:
        return 0
    run_starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1], [True])))
    runs = np.diff(run_starts)
    return int(np.dot(runs, runs - 1)) // 2


def estimate_distinct(values: Any, physical_type: Type, sample_size: int) -> float:
    """The distinct values of ``values`` estimated from a strided sample by its collisions.

    With ``s`` sampled values (at :func:`sample_positions`) of which ``p`` pairs are equal,
    ``D = s * (s - 1) / 2 / p`` (each pair is equal with probability ``1 / D`` when the values
    are equally frequent; skewed frequencies make ``p`` larger and the estimate lower, so it
    errs towards hashing). A sample without a collision estimates infinity. Numbers and byte
    strings of up to 16 bytes are compared through one uint64 key each (bit patterns, every NaN
    one key; first and last 8 bytes and the length), longer strings by hashing the sample;
    the whole column is never hashed.

    Returns:
        The estimate (``math.inf`` for no collision; 0.0 for no values).
    """
    count = count_values(values)
    if count == 0:
        return 0.0
    keys: npt.NDArray[Any] | None = _sample_keys(values, physical_type, sample_size)
    if keys is None:
        positions = sample_positions(count, sample_size)
        sample = values.take(positions) if isinstance(values, BinaryValues) else values[positions]
        _, keys = dictionary_encode(sample, physical_type)
    size = int(keys.shape[0])
    pairs = _equal_pairs(keys)
    return math.inf if pairs == 0 else size * (size - 1) / 2 / pairs


def estimate_distinct_reference(sample: list[bytes]) -> float:
    """Pure-Python :func:`estimate_distinct` of an already drawn sample (each value's bytes)."""
    if not sample:
        return 0.0
    counts: dict[bytes, int] = {}
    for value in sample:
        counts[value] = counts.get(value, 0) + 1
    pairs = sum(c * (c - 1) // 2 for c in counts.values())
    size = len(sample)
    return math.inf if pairs == 0 else size * (size - 1) / 2 / pairs


def _pays_off_bound(count: int, physical_type: Type) -> float:
    """The largest distinct count for which :func:`_pays_off` holds for ``count`` values.

    With ``D <= 2**b`` distinct values the indices take at most ``b`` bits, so the bound is
    the best over index widths ``b`` of ``min(2**b, (GAIN * count * width - count * b / 8) /
    width)``.
    """
    width = _NUMERIC_WIDTH[physical_type]
    budget = DICTIONARY_GAIN * count * width
    return max(min(2.0**bits, (budget - count * bits / 8) / width) for bits in range(1, 33))


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
        if sorted_ints:
            num_sorted = _num_distinct_sorted(values)
            if num_sorted > MAX_DICTIONARY_RATIO * count:
                # The same decision as hashing, without hashing.
                return EncodingChoice(False, fallback, None, num_sorted)
        # (Paying off needs fewer distinct values than the ratio: the ratio decides alone.)
        if count >= ESTIMATE_MIN_VALUES and estimate_distinct(
            values, physical_type, ESTIMATE_SAMPLE_SIZE
        ) > (ESTIMATE_MARGIN * MAX_DICTIONARY_RATIO * count):
            return EncodingChoice(False, fallback)  # clearly high cardinality: never hashed
        distinct, indices = dictionary_encode(values, physical_type)
        num_distinct = count_values(distinct)
        if num_distinct <= MAX_DICTIONARY_RATIO * count or (
            may_pay_off and _pays_off(distinct, count, physical_type)
        ):
            return EncodingChoice(True, fallback, (distinct, indices), num_distinct)
        return EncodingChoice(False, fallback, None, num_distinct)
    if _sampled_low_cardinality(values, physical_type):
        return EncodingChoice(True, fallback)
    estimate = estimate_distinct(values, physical_type, LARGE_ESTIMATE_SAMPLE_SIZE)
    pays_off_bound = 2 * _pays_off_bound(count, physical_type) if may_pay_off else 0.0
    if estimate <= max(MAX_DICTIONARY_RATIO * count, pays_off_bound):
        # Many values each repeated a few times over a long chunk (20k names in 1M rows): every
        # sample looks distinct, yet the chunk repeats; the collisions of a larger sample see it.
        distinct, indices = dictionary_encode(values, physical_type)
        num_distinct = count_values(distinct)
        if num_distinct <= MAX_DICTIONARY_RATIO * count or (
            may_pay_off and _pays_off(distinct, count, physical_type)
        ):
            return EncodingChoice(True, fallback, (distinct, indices), num_distinct)
        return EncodingChoice(False, fallback, None, num_distinct)
    return EncodingChoice(False, fallback)


def _dictionary_allowed(physical_type: Type, options: ColumnOptions) -> bool:
    return options.use_dictionary and physical_type not in (Type.BOOLEAN, Type.INT96)


def apply_decision(
    decision: EncodingDecision,
    values: Any,
    physical_type: Type,
    options: ColumnOptions,
    check_cardinality: bool = True,
) -> tuple[EncodingChoice, bool, int | None]:
    """Follow ``decision`` for a chunk's non-null ``values`` (rules in the module docstring).

    Returns:
        The choice (with the dictionary encoding when one was computed), whether the values
        contradict the decision (drift), and the exact distinct count if the chunk was hashed.
    """
    fallback = decision.fallback
    count = count_values(values)
    if count == 0 or not _dictionary_allowed(physical_type, options):
        return EncodingChoice(False, fallback), False, None
    if decision.use_dictionary:
        distinct, indices = dictionary_encode(values, physical_type)
        num_distinct = count_values(distinct)
        may_pay_off = physical_type in _NUMERIC_WIDTH and fallback != Encoding.DELTA_BINARY_PACKED
        if num_distinct <= MAX_DICTIONARY_RATIO * count or (
            may_pay_off and _pays_off(distinct, count, physical_type)
        ):
            choice = EncodingChoice(True, fallback, (distinct, indices), num_distinct)
            return choice, False, num_distinct
        return EncodingChoice(False, fallback, None, num_distinct), True, num_distinct
    if fallback == Encoding.DELTA_BINARY_PACKED and options.encoding is None and count > 1:
        if not bool(np.all(values[1:] >= values[:-1])):
            return EncodingChoice(False, fallback), True, None  # chosen for sorted integers
        num_distinct = _num_distinct_sorted(values)
        drift = num_distinct <= MAX_DICTIONARY_RATIO * count
        return EncodingChoice(False, fallback), drift, num_distinct
    drift = False
    if check_cardinality and count >= 2 * OBSERVE_SAMPLE_SIZE:
        estimate = estimate_distinct(values, physical_type, OBSERVE_SAMPLE_SIZE)
        drift = estimate <= MAX_DICTIONARY_RATIO * count / 2
    return EncodingChoice(False, fallback), drift, None
