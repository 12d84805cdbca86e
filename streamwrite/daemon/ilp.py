"""Sans-I/O InfluxDB Line Protocol parser (h11 style): bytes in, typed batches out.

State rules of :class:`IlpParser`::

    OPEN   --feed(bytes)--> OPEN      returns batches of the complete lines so far
    OPEN   --close()------> CLOSED    the bytes after the last line end form the last line
    any    --BadRequestError---> FAILED    every later call raises StateError
    CLOSED --feed/close---> StateError

Each call scans only the new bytes for a line end (``resume`` of :mod:`.ilp_split`), and parses
from the first unparsed line to the last line end when one arrived, so a body fed in any pieces
costs linear time and gives the batches of one :func:`parse_body` (split differently).
Parsing: :mod:`.ilp_fast` (vectorised, whole groups of same-shaped lines), falling back line by
line to :mod:`.ilp_reference` for escapes, odd lines and every error. Typing to Arrow:
:mod:`.ilp_arrow`. Protocol-2 binary values (doubles, and arrays -> nested lists: the grammar
and limits in :mod:`.ilp_types`) are skipped by every scan and parsed by both paths.
"""

from __future__ import annotations

import numpy as np

from streamwrite.daemon.errors import BadRequestError
from streamwrite.daemon.ilp_arrow import to_arrow
from streamwrite.daemon.ilp_fast import parse_easy_lines
from streamwrite.daemon.ilp_reference import parse_line, records_to_chunks
from streamwrite.daemon.ilp_split import Specials, find_specials
from streamwrite.daemon.ilp_types import IlpBatch, IlpColumn, Kind, assemble, precision_factor
from streamwrite.daemon.ilp_uniform import parse_uniform
from streamwrite.errors import StateError

__all__ = ["IlpBatch", "IlpColumn", "IlpParser", "Kind", "parse_body", "parse_chunk", "to_arrow"]


def parse_chunk(
    chunk: bytes,
    *,
    first_line: int,
    factor_ns: int,
    now_ns: int,
    specials: Specials | None = None,
) -> tuple[list[IlpBatch], int]:
    """Returns the batches of ``chunk`` (whole lines, the last one may lack its end), and its lines.

    ``specials``: those of ``chunk`` when the caller has them already (its scan to find the
    line ends), else the chunk is scanned here.

    Raises:
        BadRequestError: the first malformed line (``line`` counts from ``first_line``).
    """
    uniform = parse_uniform(chunk, first_line=first_line, factor_ns=factor_ns, now_ns=now_ns)
    if uniform is not None:
        return assemble([uniform]), len(uniform.line_numbers)
    sp = find_specials(chunk, 0, final=True) if specials is None else specials
    ends = sp.line_ends
    starts = np.concatenate([[0], sp.next_starts]).astype(np.int64)
    if starts[-1] < len(chunk):
        ends = np.append(ends, len(chunk))
    else:
        starts = starts[:-1]
    numbers = first_line + np.arange(len(starts), dtype=np.int64)
    chunks, slow = parse_easy_lines(chunk, sp, starts, ends, numbers, factor_ns, now_ns)
    if len(slow):
        records = []
        for i in slow.tolist():
            record = parse_line(chunk[starts[i] : ends[i]], int(numbers[i]), factor_ns)
            if record is not None:
                records.append(record)
        chunks += records_to_chunks(records, now_ns)
    return assemble(chunks), len(starts)


class IlpParser:
    """Incremental parser of one request body.

    Args:
        precision: unit of unsuffixed designated timestamps (``n ns u us ms s m h``).
        now_ns: the server time given to lines without a timestamp (one value per request).

    Raises:
        BadRequestError: ``precision`` is not supported.
    """

    def __init__(self, *, precision: str = "n", now_ns: int) -> None:
        self._factor_ns = precision_factor(precision)
        self._now_ns = now_ns
        self._buffer = bytearray()
        self._resume = 0
        self._next_line = 1
        self._state = "open"

    def feed(self, data: bytes) -> list[IlpBatch]:
        """Returns batches (one per table) of the lines completed by ``data``; may be empty.

        Raises:
            BadRequestError: a malformed line (the parser is then failed).
            StateError: the parser is closed or failed.
        """
        self._check_open()
        if not self._buffer and data.endswith(b"\n"):  # whole lines, as a client's body
            uniform = parse_uniform(
                data, first_line=self._next_line, factor_ns=self._factor_ns, now_ns=self._now_ns
            )
            if uniform is not None:  # no scan for line ends first: the common case
                self._next_line += len(uniform.line_numbers)
                return assemble([uniform])
        self._buffer += data
        if b"\n" not in data and b"\r" not in data:
            return []
        # Scan from the buffer's first line start when the carried tail is no longer than the new
        # bytes (its specials then serve the parse too: one scan); else only the new bytes.
        rescan = self._resume <= len(data)
        sp = find_specials(self._buffer, 0 if rescan else self._resume, final=False)
        self._resume = sp.resume
        if not len(sp.line_ends):
            return []
        cut = int(sp.next_starts[-1])
        batches = self._parse(bytes(self._buffer[:cut]), sp.head(cut) if rescan else None)
        del self._buffer[:cut]
        self._resume = max(self._resume, cut) - cut
        return batches

    def close(self) -> list[IlpBatch]:
        """Returns the batches of the rest of the body (a last line without its line end).

        Raises:
            BadRequestError: a malformed line.
            StateError: the parser is closed or failed.
        """
        self._check_open()
        body = bytes(self._buffer)
        self._buffer.clear()
        batches = self._parse(body) if body else []
        self._state = "closed"
        return batches

    def _check_open(self) -> None:
        if self._state != "open":
            raise StateError(f"the ILP parser is {self._state}; start a new one per request.")

    def _parse(self, chunk: bytes, specials: Specials | None = None) -> list[IlpBatch]:
        try:
            batches, num_lines = parse_chunk(
                chunk,
                first_line=self._next_line,
                factor_ns=self._factor_ns,
                now_ns=self._now_ns,
                specials=specials,
            )
        except BadRequestError:
            self._state = "failed"
            raise
        self._next_line += num_lines
        return batches


def parse_body(body: bytes, *, precision: str = "n", now_ns: int) -> list[IlpBatch]:
    """Returns the batches (one per table, in order of first line) of a whole request body.

    Raises:
        BadRequestError: the first malformed line, or an unsupported precision.
    """
    factor_ns = precision_factor(precision)
    batches, _ = parse_chunk(body, first_line=1, factor_ns=factor_ns, now_ns=now_ns)
    return batches
