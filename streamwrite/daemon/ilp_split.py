"""Vectorised line splitting and delimiter finding (the rules of :mod:`.ilp_reference`).

Only *special* bytes are looked at after one ``bytes.translate`` pass: LF CR ``\\`` ``=`` ``,``
space ``"`` ``#``. The left-to-right scan of the splitting rules (an escape pair covers the byte
after ``\\``; a binary double ``==\\x10`` covers its next 10 bytes) is resolved on *events* only
(backslashes and ``==\\x10`` candidates): event ``k`` jumps the scan to the first event at or past
``pos[k] + len[k]``; events it jumps over are not visited. Only events that jump over another
event need a Python step, so a protocol-2 body costs a loop over ~3% of its doubles (payload
bytes that look like ``\\`` or ``==\\x10``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["Specials", "find_specials"]

LF, CR, BACKSLASH, EQUALS, COMMA, SPACE, QUOTE = 10, 13, 92, 61, 44, 32, 34
BINARY_DOUBLE = 16
_CLASS_TABLE = bytes(
    {LF: 1, CR: 2, BACKSLASH: 3, EQUALS: 4, COMMA: 5, SPACE: 6, QUOTE: 7}.get(i, 0)
    for i in range(256)
)
C_LF, C_CR, C_BACKSLASH, C_EQUALS, C_COMMA, C_SPACE, C_QUOTE = 1, 2, 3, 4, 5, 6, 7


@dataclass
class Specials:
    """The special bytes at or after ``start`` that the scan sees, and the line ends."""

    positions: npt.NDArray[np.int64]
    """Position of each uncovered special byte (no visited backslash, escaped byte, payload)."""
    classes: npt.NDArray[np.uint8]
    """Its class (``C_*``)."""
    escape_positions: npt.NDArray[np.int64]
    """Visited backslashes (lines holding one take the per-line path)."""
    marker_positions: npt.NDArray[np.int64]
    """First ``=`` of each visited binary double ``==\\x10``."""
    line_of: npt.NDArray[np.int64]
    """Line index (0-based, counted from ``start``) of each special."""
    line_ends: npt.NDArray[np.int64]
    """Position of each line end (the CR of a CR LF)."""
    next_starts: npt.NDArray[np.int64]
    """Where the line after each end starts."""
    resume: int
    """Where the scan resumes when more bytes arrive."""

    def head(self, cut: int) -> Specials:
        """Returns the specials of ``body[:cut]`` (``cut``: a line start after a line end)."""
        keep = self.positions < cut
        num_ends = int(np.searchsorted(self.line_ends, cut))
        return Specials(
            self.positions[keep],
            self.classes[keep],
            self.escape_positions[self.escape_positions < cut],
            self.marker_positions[self.marker_positions < cut],
            self.line_of[keep],
            self.line_ends[:num_ends],
            self.next_starts[:num_ends],
            cut,
        )


def find_specials(body: bytes | bytearray, start: int, final: bool) -> Specials:
    """Returns the specials of ``body[start:]`` under the splitting rules.

    ``start`` must be a position the scan visits (a line start, or a previous ``resume``);
    only ``body[start:]`` is read (so an incremental caller pays for its new bytes only).
    Without ``final`` a CR at the very end is not yet a line end (an LF may follow). No
    returned array is a view of ``body`` (a bytearray may be resized afterwards).
    """
    size = len(body)
    view = np.frombuffer(body[start:].translate(_CLASS_TABLE), dtype=np.uint8)
    positions = np.flatnonzero(view != 0) + start  # on a bool array: 3x faster
    classes = view[positions - start]
    buf = np.frombuffer(body, dtype=np.uint8)

    eq = positions[classes == C_EQUALS]
    eq = eq[eq + 2 < size]
    markers = eq[(buf[eq + 1] == EQUALS) & (buf[eq + 2] == BINARY_DOUBLE)]
    escapes = positions[classes == C_BACKSLASH]
    resume = size
    events = lengths = np.zeros(0, dtype=np.int64)
    if len(markers) or len(escapes):
        events = np.concatenate([escapes, markers])
        lengths = np.concatenate(
            [np.full(len(escapes), 2, np.int64), np.full(len(markers), 11, np.int64)]
        )
        order = np.argsort(events, kind="stable")
        events, lengths = events[order], lengths[order]
        succ = np.searchsorted(events, events + lengths)
        jumpers = np.flatnonzero(succ > np.arange(len(events)) + 1)
        visited = np.ones(len(events), dtype=np.bool_)
        blocked_end = -1
        for j in jumpers.tolist():
            if j < blocked_end:
                continue
            end = int(succ[j])
            visited[j + 1 : end] = False
            blocked_end = end
        events, lengths = events[visited], lengths[visited]
        is_escape = lengths == 2
        escapes, markers = events[is_escape], events[~is_escape]
        resume = max(size, int(events[-1] + lengths[-1]))
        # A special is covered when it lies inside (pos, pos + len) of a visited event: the
        # specials each event covers are a range of the sorted specials (ranges never overlap).
        first = np.searchsorted(positions, events + 1)
        stop = np.searchsorted(positions, events + lengths)
        size_specials = len(positions) + 1
        depth = np.bincount(first, minlength=size_specials) - np.bincount(
            stop, minlength=size_specials
        )
        covered = np.cumsum(depth[:-1]) > 0
        keep = ~covered & (classes != C_BACKSLASH)
        positions, classes = positions[keep], classes[keep]

    if not final and resume == size:
        # '=' in the last two bytes may yet start a binary double: scan them again with more bytes.
        last_jump_end = int(events[-1] + lengths[-1]) if len(markers) or len(escapes) else start
        resume = max(last_jump_end, start, size - 2)
    ends_index = np.flatnonzero(classes <= C_CR)
    ends = positions[ends_index]
    end_classes = classes[ends_index]
    next_starts = ends + 1
    if len(ends):
        crlf = (end_classes == C_CR) & (next_starts < size)
        crlf[crlf] = buf[next_starts[crlf]] == LF
        # The LF of a CR LF pair is no line end of its own.
        drop = np.zeros(len(ends), dtype=np.bool_)
        drop[1:] = crlf[:-1] & (ends[1:] == ends[:-1] + 1)
        next_starts = np.where(crlf, ends + 2, next_starts)
        ends, next_starts, end_classes = ends[~drop], next_starts[~drop], end_classes[~drop]
        ends_index = ends_index[~drop]
        if not final and len(ends) and ends[-1] == size - 1 and end_classes[-1] == C_CR:
            resume = int(ends[-1])
            ends, next_starts, ends_index = ends[:-1], next_starts[:-1], ends_index[:-1]
    is_end = np.zeros(len(positions), dtype=np.int64)
    is_end[ends_index] = 1
    line_of = np.cumsum(is_end) - is_end
    return Specials(positions, classes, escapes, markers, line_of, ends, next_starts, resume)
