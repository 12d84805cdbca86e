"""The ILP fast path for a chunk whose lines all have one layout (what a client sends for one
table): the columns are cut by pyarrow's CSV reader and typed by Arrow compute kernels, in C++.

When it applies (any doubt returns None, and :func:`streamwrite.daemon.ilp.parse_chunk` takes
its general path, which gives the same rows or the right error)::

    every line: table[,tag=value]* field=value[,field=value]* [timestamp]\\n
    - the same table, tag keys, field names, value kinds and timestamp suffix as the first
      line (parsed by the reference parser: it also checks the names);
    - no quote, backslash, CR, '#' or empty line (no strings, escapes or comments);
    - binary doubles (``name==\\x10`` + 8 bytes) only where the first line has them;
    - no ``==\\x0e`` anywhere (arrays, whose lengths vary by line, take the general path).

Steps, each a few vectorised passes over the chunk::

    markers   positions of "==\\x10": payloads gathered as float64, then masked with '0's
              (binary bytes would confuse everything after); two markers closer than a
              payload -> None (a payload that looks like a marker)
    layout    per line: exactly 1 or 2 spaces, the right number of commas before the first
              space and in all, the right number of '='
    columns   spaces -> commas, pyarrow.csv.read_csv (all columns as strings); each column's
              "name=" prefix checked, its values sliced, matched against the kind's pattern
              (RE2) and cast; each marker must sit right after its field's name
"""

from __future__ import annotations

import io

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from streamwrite.daemon.errors import DaemonError
from streamwrite.daemon.ilp_reference import parse_line
from streamwrite.daemon.ilp_types import (
    FALSE_TOKENS,
    SUFFIX_NS,
    TRUE_TOKENS,
    VALUE_TYPES,
    Chunk,
    ChunkColumn,
    Kind,
)

__all__ = ["parse_uniform"]

MIN_LINES = 64
"""Fewer lines are not worth the fixed cost (the general path is as fast)."""
_PAYLOAD_SIZE = 8
_MARKER = np.array([61, 61, 16], dtype=np.uint8)  # "==\x10"
_ARRAY_MARKER = b"==\x0e"
_FLOAT = r"^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$"
_INT = r"^-?[0-9]+i$"
_DIGITS = r"^[0-9]+$"
_BOOLS = pa.array([t.decode() for t in (*TRUE_TOKENS, *FALSE_TOKENS)])
_TRUE = pa.array([t.decode() for t in TRUE_TOKENS])
_FORBIDDEN = (b'"', b"\\", b"\r")
_TS_SUFFIX = {Kind.TS_T: "t", Kind.TS_N: "n", Kind.TS_M: "m"}


def _all(mask: pa.Array | pa.ChunkedArray) -> bool:
    return bool(pc.all(mask).as_py()) and mask.null_count == 0


def _markers(data: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64] | None:
    """Positions of every "==\\x10", or None when two are closer than a payload."""
    if len(data) < 3:
        return np.zeros(0, dtype=np.int64)
    found = np.flatnonzero((data[:-2] == 61) & (data[1:-1] == 61) & (data[2:] == 16))
    if len(found) > 1 and int(np.diff(found).min()) < 3 + _PAYLOAD_SIZE + 1:
        return None
    if len(found) and int(found[-1]) + 3 + _PAYLOAD_SIZE > len(data):
        return None
    return found.astype(np.int64)


def parse_uniform(chunk: bytes, *, first_line: int, factor_ns: int, now_ns: int) -> Chunk | None:
    """The rows of ``chunk`` (whole lines; the last may lack its "\\n") as one :class:`Chunk`,
    or None when the chunk is not uniform (module docstring): the caller parses it then."""
    try:
        return _parse(chunk, first_line, factor_ns, now_ns)
    except (DaemonError, pa.ArrowException):
        return None


def _parse(chunk: bytes, first_line: int, factor_ns: int, now_ns: int) -> Chunk | None:
    if _ARRAY_MARKER in chunk:  # memmem
        return None
    data = np.frombuffer(chunk, dtype=np.uint8)
    markers = _markers(data)
    if markers is None:
        return None
    payloads = data[(markers + 3)[:, None] + np.arange(_PAYLOAD_SIZE)].copy()
    masked = data.copy()
    masked[(markers + 1)[:, None] + np.arange(2 + _PAYLOAD_SIZE)] = 48  # "=" + "0" * 10
    text = masked.tobytes()
    if any(bad in text for bad in _FORBIDDEN):  # single bytes: memchr
        return None
    ends = np.flatnonzero(masked == 10)
    if not len(ends) or int(ends[-1]) != len(text) - 1:
        ends = np.append(ends, len(text))
    num_lines = len(ends)
    if num_lines < MIN_LINES or masked[0] in (10, 35):
        return None
    if np.any(np.isin(masked[ends[:-1] + 1], (10, 35))):  # an empty or comment line
        return None
    starts = np.concatenate([[0], ends[:-1] + 1])
    record = parse_line(chunk[: int(ends[0])], first_line, factor_ns)
    if record is None:
        return None
    tags = [(n, v) for n, k, v in record.entities if k is Kind.TAG]
    fields = [(n, k) for n, k, _ in record.entities if k is not Kind.TAG]
    num_tags, num_fields = len(tags), len(fields)
    names = [n for n, _, _ in record.entities]
    if len(set(names)) != len(names) or record.entities[:num_tags] != [
        (n, Kind.TAG, v) for n, v in tags
    ]:
        return None
    has_ts = record.timestamp_ns is not None
    # Layout: spaces, commas and '=' per line.
    spaces = np.flatnonzero(masked == 32)
    per_line = 2 if has_ts else 1
    if len(spaces) != per_line * num_lines:
        return None
    space_lines = np.searchsorted(ends, spaces)
    if not np.array_equal(space_lines, np.repeat(np.arange(num_lines), per_line)):
        return None
    first_spaces = spaces[::per_line]
    commas = np.flatnonzero(masked == 44)
    if len(commas) != num_lines * (num_tags + num_fields - 1):
        return None
    line_commas = np.searchsorted(commas, starts)
    if not np.all(np.searchsorted(commas, first_spaces) - line_commas == num_tags):
        return None
    if has_ts and not np.all(
        np.searchsorted(commas, spaces[1::2]) == np.searchsorted(commas, ends)
    ):
        return None
    if int(np.count_nonzero(masked == 61)) != num_lines * (num_tags + num_fields):
        return None
    # Binary doubles: where the first line has them, after the right name, one per line each.
    first_text = chunk[: int(ends[0])]
    binary = [n for n, _ in fields if any(f"{c}{n}==".encode() in first_text for c in ", ")]
    if len(markers) != num_lines * len(binary):
        return None
    if binary:
        marker_lines = np.searchsorted(ends, markers)
        if not np.array_equal(marker_lines, np.repeat(np.arange(num_lines), len(binary))):
            return None
        for j, name in enumerate(binary):
            at = markers[j :: len(binary)]
            key = np.frombuffer(name.encode(), dtype=np.uint8)
            before = at[:, None] - len(key) - 1 + np.arange(len(key) + 1)
            if np.any(before < 0):
                return None
            window = masked[before]
            if not (np.all(window[:, 1:] == key) and np.all(np.isin(window[:, 0], (32, 44)))):
                return None
    table = pcsv.read_csv(
        io.BytesIO(text.replace(b" ", b",")),
        read_options=pcsv.ReadOptions(
            autogenerate_column_names=True, use_threads=False, block_size=len(text) + 1
        ),
        parse_options=pcsv.ParseOptions(
            delimiter=",", quote_char=False, escape_char=False, ignore_empty_lines=False
        ),
        convert_options=pcsv.ConvertOptions(
            column_types={f"f{i}": pa.string() for i in range(1 + num_tags + num_fields + has_ts)}
        ),
    )
    if table.num_rows != num_lines or table.num_columns != 1 + num_tags + num_fields + has_ts:
        return None
    columns = [c.combine_chunks() for c in table.columns]
    if not _all(pc.equal(columns[0], record.table)):
        return None
    out: list[ChunkColumn] = []
    for position, (name, _) in enumerate(tags):
        values = _after(columns[1 + position], name)
        if values is None or not _all(pc.greater(pc.utf8_length(values), 0)):
            return None
        out.append(ChunkColumn(name, position, Kind.TAG, None, values))
    doubles = payloads.view("<f8").reshape(num_lines, len(binary))
    for j, (name, kind) in enumerate(fields):
        values = _after(columns[1 + num_tags + j], name)
        if values is None:
            return None
        if name in binary:
            if not _all(pc.equal(values, "0" * (2 + _PAYLOAD_SIZE))):
                return None
            typed = pa.array(doubles[:, binary.index(name)].copy())
        else:
            typed = _typed(values, kind)
            if typed is None:
                return None
        out.append(ChunkColumn(name, num_tags + j, kind, None, typed))
    stamps: npt.NDArray[np.int64] | None = np.full(num_lines, now_ns, dtype=np.int64)
    if has_ts:
        stamps = _timestamps(columns[-1], text[int(first_spaces[0]) : int(ends[0])], factor_ns)
    if stamps is None:
        return None
    lines = first_line + np.arange(num_lines, dtype=np.int64)
    return Chunk(record.table, lines, stamps, out)


def _after(column: pa.Array, name: str) -> pa.Array | None:
    """The values of ``name=value`` cells, or None when a cell has another name."""
    prefix = name + "="
    if not _all(pc.starts_with(column, prefix)):
        return None
    return pc.utf8_slice_codeunits(column, len(prefix))


def _typed(values: pa.Array, kind: Kind) -> pa.Array | None:
    """Text values of one kind as its :data:`VALUE_TYPES` type, or None if one does not fit."""
    if kind is Kind.FLOAT:
        if not _all(pc.match_substring_regex(values, _FLOAT)):
            return None
        return pc.cast(values, pa.float64())
    if kind is Kind.INT:
        if not _all(pc.match_substring_regex(values, _INT)):
            return None
        return pc.cast(pc.utf8_slice_codeunits(values, 0, -1), pa.int64())
    if kind is Kind.BOOL:
        if not _all(pc.is_in(values, _BOOLS)):
            return None
        return pc.is_in(values, _TRUE)
    if kind in _TS_SUFFIX:
        if not _all(pc.ends_with(values, _TS_SUFFIX[kind])):
            return None
        digits = pc.utf8_slice_codeunits(values, 0, -1)
        if not _all(pc.match_substring_regex(digits, r"^-?[0-9]+$")):
            return None
        return pc.cast(digits, VALUE_TYPES[kind])
    return None


def _timestamps(column: pa.Array, sample: bytes, factor_ns: int) -> npt.NDArray[np.int64] | None:
    """The designated timestamps in ns: one suffix (or none) for every line, as the first."""
    token = sample.split(b" ")[2] if sample.count(b" ") == 2 else b""
    suffix = token[-1:] if token[-1:] and token[-1] in SUFFIX_NS else b""
    if suffix:
        if not _all(pc.ends_with(column, suffix.decode())):
            return None
        column = pc.utf8_slice_codeunits(column, 0, -1)
        factor_ns = SUFFIX_NS[suffix[0]]
    if not _all(pc.match_substring_regex(column, _DIGITS)):
        return None
    stamps: npt.NDArray[np.int64] = pc.multiply_checked(
        pc.cast(column, pa.int64()), factor_ns
    ).to_numpy()
    return stamps
