"""Repetition and definition levels of a column chunk: records, page sections, histograms.

A leaf's chunk is a sequence of *level entries* (parquet-format "Nested Encoding"): entry ``i``
has a repetition level ``rep[i]`` (0 starts a new record) and a definition level ``def[i]``;
it carries a value exactly when ``def[i] == max_definition_level``. A flat column has one
entry per row (no repetition levels; definition levels only when OPTIONAL)::

    l = [[1, 2, None], [], None, [4], [None]]        (optional list of optional int: max_def 3)
    entries  e:  0   1   2   3   4   5   6
    rep          0   1   1   0   0   0   0
    def          3   3   2   1   0   3   2
    records  r:  0 ---------  1   2   3   4
    values   v:  0   1                2

:class:`RecordMap` maps records to entries and values (the page splitter cuts at record starts
only, so a record never spans two pages). :func:`encode_levels` writes one page's section of
one kind of level with the RLE / bit-packing hybrid at width ``bit_length(max_level)``::

    v1 section := u32 LE byte length, hybrid runs        (inside the compressed body)
    v2 section := hybrid runs                            (byte length in the page header)

A page whose levels are all one value (no nulls: every def at max; no repeated entry: every
rep 0) is written as that one RLE run without looking at the levels, as parquet-cpp's run
choice writes it too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from streamwrite.errors import FormatError
from workers.encoding._varint import encode_uleb128
from workers.encoding.rle_hybrid import encode_rle_hybrid

__all__ = [
    "PageLevels",
    "RecordMap",
    "encode_levels",
    "level_histogram",
    "page_levels",
    "record_map",
]

_COMPARE_LEVELS = 12
"""Below this maximum level a histogram counts each level with a comparison (faster)."""


class RecordMap:
    """Where each record starts among the level entries and the values of a chunk.

    ``entry_of(r)`` is the first level entry of record ``r`` and ``value_of(r)`` the number of
    values in records ``[0, r)`` (``r`` may be ``num_rows``: the ends). ``entry_starts`` and
    ``value_starts`` are None when records are entries and entries are values respectively
    (the flat fast paths: no prefix sums are built).
    """

    __slots__ = ("entry_starts", "num_entries", "num_rows", "value_starts")

    def __init__(
        self,
        num_rows: int,
        num_entries: int,
        entry_starts: npt.NDArray[np.int64] | None,
        value_starts: npt.NDArray[np.int64] | None,
    ) -> None:
        self.num_rows = num_rows
        self.num_entries = num_entries
        self.entry_starts = entry_starts
        self.value_starts = value_starts

    def entry_of(self, row: int) -> int:
        """Returns: the index of the first level entry of record ``row``."""
        return row if self.entry_starts is None else int(self.entry_starts[row])

    def value_of(self, row: int) -> int:
        """Returns: the number of values in records ``[0, row)``."""
        return row if self.value_starts is None else int(self.value_starts[row])

    def row_of_value(self, value: int) -> int:
        """Returns: the first record ``r`` with ``value_of(r) >= value`` (``num_rows + 1`` if none).

        For a flat column (at most one value per record) the records before it hold exactly
        ``value`` values.
        """
        if self.value_starts is None:
            return value
        return int(np.searchsorted(self.value_starts, value, side="left"))

    def row_at_or_before_value(self, value: int) -> int:
        """Returns: the last record boundary ``r`` with ``value_of(r) <= value`` among those at
        or before :meth:`row_of_value` (the same record for a flat column; for a nested one it
        steps back when the record there would take values beyond ``value``)."""
        row = self.row_of_value(value)
        if row <= self.num_rows and self.value_of(row) > value:
            row -= 1
        return row


def record_map(
    num_rows: int,
    num_values: int,
    def_levels: npt.NDArray[np.uint8] | None,
    rep_levels: npt.NDArray[np.uint8] | None,
    max_definition_level: int,
    where: str,
) -> RecordMap:
    """Map the records of a chunk to its level entries and values (vectorised).

    Returns:
        The map.

    Raises:
        FormatError: the levels disagree with each other, with ``num_rows`` (records, i.e.
            entries with repetition level 0) or with the number of values.
    """
    if def_levels is not None:
        num_entries = int(def_levels.shape[0])
    elif rep_levels is not None:
        num_entries = int(rep_levels.shape[0])
    else:
        num_entries = num_values
    if rep_levels is not None and int(rep_levels.shape[0]) != num_entries:
        raise FormatError(
            f"Column {where} has {rep_levels.shape[0]} repetition levels but {num_entries} "
            "definition levels."
        )
    entry_starts = None
    if rep_levels is None:
        if num_entries != num_rows:
            raise FormatError(
                f"Column {where} has {num_entries} level entries for {num_rows} rows."
            )
    else:
        starts = np.flatnonzero(rep_levels == 0)
        if starts.shape[0] != num_rows or (num_entries > 0 and starts[0] != 0):
            raise FormatError(
                f"Column {where} has {starts.shape[0]} record starts (repetition level 0) for "
                f"{num_rows} rows, or its first level entry does not start a record."
            )
        if num_entries != num_rows:
            entry_starts = np.empty(num_rows + 1, dtype=np.int64)
            entry_starts[:-1] = starts
            entry_starts[-1] = num_entries
    value_starts = None
    if def_levels is not None and num_values != num_entries:
        # (0/1 levels count their values themselves: no comparison pass for a flat column)
        defined = def_levels if max_definition_level == 1 else def_levels == max_definition_level
        entry_values = np.zeros(num_entries + 1, dtype=np.int64)
        np.cumsum(defined, out=entry_values[1:])
        if int(entry_values[-1]) != num_values:
            raise FormatError(
                f"Column {where} has {num_values} values but {entry_values[-1]} definition "
                f"levels at the maximum {max_definition_level}."
            )
        value_starts = entry_values if entry_starts is None else entry_values[entry_starts]
    elif num_values != num_entries:
        raise FormatError(
            f"Column {where} has {num_values} values for {num_entries} required level entries."
        )
    elif entry_starts is not None:
        value_starts = entry_starts
    return RecordMap(num_rows, num_entries, entry_starts, value_starts)


def encode_levels(
    levels: npt.NDArray[np.uint8], max_level: int, constant: int | None, v1: bool
) -> bytes:
    """One page's levels of one kind (see the module doc for the layout).

    Args:
        levels: the page's levels (ignored when ``constant`` is given).
        max_level: the column's maximum level of this kind (gives the bit width).
        constant: the value every level of the page has, when the caller knows it (then the
            page is one RLE run and ``levels`` is not read), else None.
        v1: prefix the section with its u32 little-endian byte length (data page v1).

    Returns:
        The section bytes.
    """
    width = max_level.bit_length()
    count = int(levels.shape[0])
    if constant is not None and count > 0:
        runs = encode_uleb128(count << 1) + constant.to_bytes((width + 7) // 8, "little")
    else:
        runs = encode_rle_hybrid(levels, width)
    return (len(runs).to_bytes(4, "little") + runs) if v1 else runs


def level_histogram(levels: npt.NDArray[np.uint8], max_level: int) -> list[int]:
    """Returns: how many of ``levels`` are 0, 1, ..., ``max_level`` (SizeStatistics)."""
    if max_level < _COMPARE_LEVELS:
        # one SIMD comparison pass per level beats bincount's widening of uint8 to intp
        return [int(np.count_nonzero(levels == level)) for level in range(max_level + 1)]
    return [int(c) for c in np.bincount(levels, minlength=max_level + 1)]


@dataclass(frozen=True, slots=True)
class PageLevels:
    """One data page's level entries: counts, encoded sections and histograms."""

    num_rows: int
    num_entries: int
    num_values: int
    rep_section: bytes
    def_section: bytes
    def_histogram: list[int]
    rep_histogram: list[int]


def page_levels(
    def_levels: npt.NDArray[np.uint8] | None,
    rep_levels: npt.NDArray[np.uint8] | None,
    max_definition_level: int,
    max_repetition_level: int,
    num_rows: int,
    num_values: int,
    v1: bool,
) -> PageLevels:
    """Encode a page's levels (already cut to the page) and count them.

    Returns:
        The page's counts, level sections (v1: length-prefixed) and histograms (definition:
        ``[nulls, values]`` when ``max_definition_level`` is 0 or 1; repetition: empty when
        ``max_repetition_level`` is 0).
    """
    max_def, max_rep = max_definition_level, max_repetition_level
    num_entries = num_values if def_levels is None else int(def_levels.shape[0])
    def_section = b""
    def_histogram = [num_entries - num_values, num_values]  # flat: [nulls, values]
    if def_levels is not None:
        no_nulls = num_values == num_entries
        def_section = encode_levels(def_levels, max_def, max_def if no_nulls else None, v1)
        if max_def > 1:
            if no_nulls:
                def_histogram = [0] * max_def + [num_entries]
            else:
                def_histogram = level_histogram(def_levels, max_def)
    rep_section = b""
    rep_histogram: list[int] = []
    if rep_levels is not None:
        num_entries = int(rep_levels.shape[0])
        flat = num_entries == num_rows  # every entry starts a record: all levels 0
        rep_section = encode_levels(rep_levels, max_rep, 0 if flat else None, v1)
        if max_rep > 0:
            if flat:
                rep_histogram = [num_entries] + [0] * max_rep
            else:
                rep_histogram = level_histogram(rep_levels, max_rep)
    return PageLevels(
        num_rows, num_entries, num_values, rep_section, def_section, def_histogram, rep_histogram
    )
