"""Vectorised line splitting and delimiter finding (the rules of :mod:`.ilp_reference`).

Only *special* bytes are looked at after one ``bytes.translate`` pass: LF CR ``\\`` ``=`` ``,``
space ``"`` ``#``. The left-to-right scan of the splitting rules (an escape pair covers the byte
after ``\\``; a binary double ``==\\x10`` covers its next 10 bytes; an array ``==\\x0e`` covers
its header and elements, :func:`.ilp_reference.array_extent`, computed here for all candidates
at once) is resolved on *events* only (backslashes, ``==\\x10`` and ``==\\x0e`` candidates):
event ``k`` jumps the scan to ``succ[k]``, the first event at or past ``pos[k] + len[k]``;
events it jumps over are not visited. The visited events are the chain ``0 -> succ[0] -> ...``;
only *jumpers* (``succ[k] > k + 1``) matter, and the chain through them is found by pointer
doubling (``log2(jumpers)`` vectorised rounds), so array payloads full of bytes that look like
events cost no Python step each.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["Specials", "find_specials"]

LF, CR, BACKSLASH, EQUALS, COMMA, SPACE, QUOTE = 10, 13, 92, 61, 44, 32, 34
BINARY_DOUBLE, BINARY_ARRAY = 16, 14
_ESCAPE, _DOUBLE, _ARRAY = 0, 1, 2  # event types
_ARRAY_ELEMS = (6, 10)
_MAX_DIMS = 32
_HEADER_SIZE = 5  # '==' 0x0E elem ndims
_FAR = 1 << 62  # a length past any body
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
    """First ``=`` of each visited binary value (double ``==\\x10`` or array ``==\\x0e``)."""
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


def _array_lengths(
    buf: npt.NDArray[np.uint8], at: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Returns the extent of each array candidate at ``at`` (as :func:`.array_extent`; a value
    past the body: at least to its end) and whether its header is incomplete (length unknown)."""
    size = len(buf)
    last = size - 1
    elem = buf[np.minimum(at + 3, last)]
    ndims = buf[np.minimum(at + 4, last)].astype(np.int64)
    incomplete = at + _HEADER_SIZE > size
    valid = ~incomplete & np.isin(elem, _ARRAY_ELEMS) & (ndims >= 1) & (ndims <= _MAX_DIMS)
    lengths = np.full(len(at), _HEADER_SIZE, dtype=np.int64)
    if valid.any():
        v_at, v_dims = at[valid], ndims[valid]
        head = _HEADER_SIZE + 4 * v_dims
        width = int(v_dims.max())
        byte_index = v_at[:, None] + _HEADER_SIZE + np.arange(4 * width)[None, :]
        raw = buf[np.minimum(byte_index, last)].reshape(-1, width, 4).astype(np.float64)
        dims = raw @ np.array([1.0, 256.0, 65536.0, 16777216.0])  # exact: < 2**32
        dims[np.arange(width)[None, :] >= v_dims[:, None]] = 1.0
        # A float product is exact while below 2**53 (dims >= 1 never shrink it); larger is past
        # any body anyway.
        data_size = 8.0 * np.prod(dims, axis=1)
        extent = np.minimum(head + data_size, float(_FAR)).astype(np.int64)
        head_missing = v_at + head > size
        lengths[valid] = np.where(head_missing, _FAR, extent)
        incomplete[np.flatnonzero(valid)[head_missing]] = True
    lengths[incomplete] = _FAR
    return lengths, incomplete


def _visited(
    events: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    """Returns which events (sorted positions; the first is visited) the scan visits."""
    num_events = len(events)
    succ = np.searchsorted(events, events + lengths)
    jumpers = np.flatnonzero(succ > np.arange(num_events) + 1)
    if not len(jumpers):
        return np.ones(num_events, dtype=np.bool_)
    # Between jumpers the scan steps event by event, so after a visited jumper the next visited
    # jumper is the first at or past its successor; the first jumper is visited.
    num_jumpers = len(jumpers)
    step = np.append(np.searchsorted(jumpers, succ[jumpers]), num_jumpers)
    on = np.zeros(num_jumpers + 1, dtype=np.bool_)
    on[0] = True
    while True:  # round r: every jumper within 2**(r+1) - 1 steps of the first is on
        on[step[on]] = True
        if (step[:num_jumpers] == num_jumpers).all():
            break
        step = step[step]
    chosen = jumpers[on[:num_jumpers]]
    depth = np.bincount(chosen + 1, minlength=num_events + 1) - np.bincount(
        succ[chosen], minlength=num_events + 1
    )
    visited: npt.NDArray[np.bool_] = np.cumsum(depth[:num_events]) == 0
    return visited


def find_specials(body: bytes | bytearray, start: int, final: bool) -> Specials:
    """Returns the specials of ``body[start:]`` under the splitting rules.

    ``start`` must be a position the scan visits (a line start, or a previous ``resume``);
    only ``body[start:]`` is read (so an incremental caller pays for its new bytes only).
    Without ``final`` a CR at the very end is not yet a line end (an LF may follow), and an
    array value whose header is not complete stops the scan (``resume`` is its position). No
    returned array is a view of ``body`` (a bytearray may be resized afterwards).
    """
    size = len(body)
    view = np.frombuffer(body[start:].translate(_CLASS_TABLE), dtype=np.uint8)
    positions = np.flatnonzero(view != 0) + start  # on a bool array: 3x faster
    classes = view[positions - start]
    buf = np.frombuffer(body, dtype=np.uint8)

    eq = positions[classes == C_EQUALS]
    eq = eq[eq + 2 < size]
    eq = eq[buf[eq + 1] == EQUALS]
    third = buf[eq + 2]
    markers = eq[third == BINARY_DOUBLE]
    arrays = eq[third == BINARY_ARRAY]
    escapes = positions[classes == C_BACKSLASH]
    resume = size
    events = lengths = np.zeros(0, dtype=np.int64)
    any_events = bool(len(markers) or len(escapes) or len(arrays))
    if any_events:
        array_lengths, incomplete = _array_lengths(buf, arrays)
        events = np.concatenate([escapes, markers, arrays])
        lengths = np.concatenate(
            [np.full(len(escapes), 2, np.int64), np.full(len(markers), 11, np.int64), array_lengths]
        )
        types = np.concatenate(
            [
                np.full(len(escapes), _ESCAPE, np.int8),
                np.full(len(markers), _DOUBLE, np.int8),
                np.where(incomplete, -_ARRAY, _ARRAY).astype(np.int8),
            ]
        )
        order = np.argsort(events, kind="stable")
        events, lengths, types = events[order], lengths[order], types[order]
        visited = _visited(events, lengths)
        events, lengths, types = events[visited], lengths[visited], types[visited]
        escapes = events[types == _ESCAPE]
        markers = events[(types == _DOUBLE) | (np.abs(types) == _ARRAY)]
        if final:  # a value past the body's end covers the rest of it
            lengths = np.minimum(lengths, size - events)
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
        if not final and types[-1] == -_ARRAY:  # its header is incomplete: scan it again
            resume = int(events[-1])

    if not final and resume == size:
        # '=' in the last two bytes may yet start a binary value: scan them again with more bytes.
        last_jump_end = int(events[-1] + lengths[-1]) if any_events else start
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
