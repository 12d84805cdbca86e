"""The vectorised ILP path: whole groups of same-shaped lines, typed with numpy and pyarrow.

Steps over a run of complete lines (the specials come from :mod:`.ilp_split`):

1. *Easy lines*: no escape, not a comment, quotes only as ``="..."`` field strings outside the
   tag section, no binary marker inside a string, delimiters in the order of the grammar
   (``(,=)* ' ' =(,=)* [' ' ts]``), no empty token. Every other line goes to the per-line path
   (:func:`.ilp_reference.parse_line`), which also produces every error.
2. *Shape groups*: easy lines with the same token count and tag count, then the same
   names and value classes (compared as one byte matrix, so equal keys are exact, no hashing).
3. Per group and column: gather the token bytes into one Arrow string array and validate and
   convert it in C (RE2 grammar match, cast); binary doubles are an 8-byte gather viewed as
   ``<f8``; arrays (one element type and ndims per group: both are in the value class code)
   are a shape gather and one gather of every row's element bytes, viewed as ``<f8``/``<i8``
   and wrapped in nested list offsets (:func:`.nested_lists`). A row whose value fails goes to
   the per-line path; groups of fewer than :data:`MIN_GROUP_ROWS` lines go there too (one
   vectorised group costs ~0.1 ms).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from streamwrite.daemon.errors import BadRequestError
from streamwrite.daemon.ilp_array import MIN_ARRAY_CODE, array_code, array_tokens
from streamwrite.daemon.ilp_reference import NAME_ESCAPES, unescape_name
from streamwrite.daemon.ilp_split import (
    BINARY_ARRAY,
    BINARY_DOUBLE,
    C_COMMA,
    C_CR,
    C_EQUALS,
    C_QUOTE,
    C_SPACE,
    COMMA,
    EQUALS,
    SPACE,
    Specials,
)
from streamwrite.daemon.ilp_types import (
    FALSE_TOKENS,
    FLOAT_PATTERN,
    INT64_MAX,
    MAX_NAME_SIZE,
    SUFFIX_NS,
    TRUE_TOKENS,
    Chunk,
    ChunkColumn,
    Kind,
    check_column_name,
    check_table_name,
)

__all__ = ["MIN_GROUP_ROWS", "parse_easy_lines"]

PAD_SIZE = 128
"""Zero bytes after the body in the vectorised path (>= the longest name, MAX_NAME_SIZE)."""
MIN_GROUP_ROWS = 8
"""Shape groups smaller than this are parsed line by line (cheaper than one vectorised group)."""
HASH = 0x23
_PAIR_OK = np.zeros(64, dtype=np.bool_)
_PAIR_OK[[0 * 8 + C_COMMA, 0 * 8 + C_SPACE, C_COMMA * 8 + C_EQUALS]] = True
_PAIR_OK[[C_EQUALS * 8 + C_COMMA, C_EQUALS * 8 + C_SPACE, C_SPACE * 8 + C_EQUALS]] = True
"""Allowed (previous delimiter class, delimiter class) pairs; class 0 is the line start."""
_NAME_ESCAPES = np.array(sorted(NAME_ESCAPES), dtype=np.uint8)
_BOOL_TOKENS = pa.array([t.decode() for t in TRUE_TOKENS + FALSE_TOKENS])
# Value class codes (skeleton bytes): 0 = a tag value; Kind values for fields; 20 + suffix for
# the designated timestamp (0 = no suffix); 30 = binary double; 31 = a bad binary value;
# arrays: :func:`.array_code` (64 and up).
_CODE_BINARY = 30
_CODE_BAD_BINARY = 31


def _gather(
    buf: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    dropped: npt.NDArray[np.bool_] | None = None,
) -> pa.StringArray:
    """Returns the bytes of each non-empty token as one string array (not validated).

    ``dropped`` marks escaping backslashes to leave out (names and tag values).
    """
    lengths = ends - starts
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    width = int(lengths.max()) if len(starts) else 0
    if dropped is None and 0 < width <= 32:
        # Short tokens: one row of a sliding window each, then the bytes of each token.
        rows = np.lib.stride_tricks.sliding_window_view(_tail_padded(buf, width), width)[starts]
        if int(lengths.min()) < width:
            rows = rows[np.arange(width)[None, :] < lengths[:, None]]
        return pa.StringArray.from_buffers(
            len(starts), pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(rows.reshape(-1))
        )
    index = np.repeat(starts - offsets[:-1], lengths) + np.arange(total, dtype=np.int64)
    if dropped is not None and total:
        keep = ~dropped[index]
        if not keep.all():
            kept = np.add.reduceat(keep.astype(np.int64), offsets[:-1])
            index = index[keep]
            offsets[1:] = np.cumsum(kept)
    data = buf[index]
    return pa.StringArray.from_buffers(
        len(starts), pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)
    )


def _value_codes(
    buf: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> npt.NDArray[np.uint8]:
    """Returns the class code of each field value token (see :func:`.classify_bare`)."""
    first = buf[starts]
    last = buf[ends - 1]
    long = ends - starts >= 2
    codes = np.full(len(starts), Kind.FLOAT, dtype=np.uint8)
    codes[np.isin(first, np.frombuffer(b"tTfF", np.uint8))] = Kind.BOOL
    codes[long & (last == ord("m"))] = Kind.TS_M
    codes[long & (last == ord("t"))] = Kind.TS_T
    codes[long & (last == ord("n"))] = Kind.TS_N
    codes[last == ord("i")] = Kind.INT
    codes[first == ord('"')] = Kind.STRING
    binary = np.flatnonzero(first == EQUALS)
    if len(binary):
        b_start = starts[binary]
        kind = buf[b_start + 1]  # the body is padded: a short token reads zeros
        array = array_code(buf, b_start)
        codes[binary] = np.where(
            kind == BINARY_DOUBLE,
            _CODE_BINARY,
            np.where((kind == BINARY_ARRAY) & (array > 0), array, _CODE_BAD_BINARY),
        )
    return codes


def _easy_lines(
    buf: npt.NDArray[np.uint8],
    sp: Specials,
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
) -> tuple[
    npt.NDArray[np.bool_], npt.NDArray[np.int64], npt.NDArray[np.uint8], npt.NDArray[np.int64]
]:
    """Returns (easy mask per line, delimiter positions, their classes, their line index)."""
    num_lines = len(starts)
    keep = sp.classes > C_CR
    pos, cls, line_of = sp.positions[keep], sp.classes[keep], sp.line_of[keep]
    easy = ends > starts
    easy[easy] = buf[starts[easy]] != HASH
    bad = np.zeros(num_lines + 1, dtype=np.bool_)
    # Quotes: openers (even ordinal in the line) right after '=' past the first space; closers
    # followed by ',', ' ' or the line end; an even count per line.
    is_quote = cls == C_QUOTE
    if is_quote.any():
        q_pos, q_line = pos[is_quote], line_of[is_quote]
        q_first = np.searchsorted(q_line, q_line, side="left")
        q_ord = np.arange(len(q_pos)) - q_first
        counts = np.bincount(q_line, minlength=num_lines + 1)
        bad |= counts % 2 == 1
        opener = q_ord % 2 == 0
        sp_pos, sp_line = pos[cls == C_SPACE], line_of[cls == C_SPACE]
        first_space = np.full(num_lines + 1, np.iinfo(np.int64).max, dtype=np.int64)
        if len(sp_line):  # specials are sorted: a line's first space is where its line starts
            first = np.ones(len(sp_line), dtype=np.bool_)
            np.not_equal(sp_line[1:], sp_line[:-1], out=first[1:])
            first_space[sp_line[first]] = sp_pos[first]
        o_pos = q_pos[opener]
        bad[q_line[opener][(buf[o_pos - 1] != EQUALS) | (o_pos < first_space[q_line[opener]])]] = (
            True
        )
        c_pos, c_line = q_pos[~opener], q_line[~opener]
        after = c_pos + 1
        at_end = after >= ends[np.minimum(c_line, num_lines - 1)]
        nxt = buf[np.minimum(after, len(buf) - 1)]
        bad[c_line[~at_end & (nxt != COMMA) & (nxt != SPACE)]] = True
        # Specials inside a string (after an opener of the same line) are not delimiters.
        quote_at = np.full(len(pos), -1, dtype=np.int64)
        quote_at[is_quote] = np.arange(len(q_pos))
        k = np.maximum.accumulate(quote_at)
        kk = np.maximum(k, 0)
        inside = (k >= 0) & (q_line[kk] == line_of) & (q_ord[kk] % 2 == 0) & ~is_quote
        # A binary marker or an escape inside a string: that line goes line by line (escapes
        # are resolved vectorised in names and tag values only).
        for events in (sp.marker_positions, sp.escape_positions):
            if len(events):
                mk = np.searchsorted(q_pos, events, side="left") - 1
                mkk = np.maximum(mk, 0)
                m_line = np.searchsorted(ends, events)
                m_inside = (mk >= 0) & (q_line[mkk] == m_line) & (q_ord[mkk] % 2 == 0)
                bad[m_line[m_inside]] = True
        keep = ~inside & ~is_quote
        pos, cls, line_of = pos[keep], cls[keep], line_of[keep]
    easy &= ~bad[:num_lines]
    # Delimiter order (line = table (,k=v)* ' ' k=v (,k=v)* [' ' ts]), checked pairwise: from the
    # line start ',' or ' '; after ',' '='; after '=' ',' or ' '; after the first ' ' '='; then
    # per line one space ending on '=' or two spaces ending on the second.
    if not len(pos):
        return easy & False, pos, cls, line_of
    first_of_line = np.empty(len(pos), dtype=np.bool_)
    first_of_line[0] = True
    np.not_equal(line_of[1:], line_of[:-1], out=first_of_line[1:])
    prev_cls = np.empty(len(pos), dtype=np.uint8)
    prev_cls[0] = 0
    prev_cls[1:] = cls[:-1]
    prev_cls[first_of_line] = 0
    wrong = ~_PAIR_OK[prev_cls * np.uint8(8) + cls]
    # No empty token: every delimiter is more than one byte past the previous boundary.
    prev_pos = np.empty(len(pos), dtype=np.int64)
    prev_pos[1:] = pos[:-1]
    prev_pos[first_of_line] = starts[line_of[first_of_line]] - 1
    wrong |= pos - prev_pos <= 1
    easy &= np.bincount(line_of[wrong], minlength=num_lines) == 0
    is_space = cls == C_SPACE
    num_spaces = np.bincount(line_of[is_space], minlength=num_lines)
    last_index = np.empty(len(pos), dtype=np.bool_)
    last_index[-1] = True
    last_index[:-1] = first_of_line[1:]
    last_cls = np.zeros(num_lines, dtype=np.uint8)
    last_pos = np.zeros(num_lines, dtype=np.int64)
    last_cls[line_of[last_index]] = cls[last_index]
    last_pos[line_of[last_index]] = pos[last_index]
    easy &= ((num_spaces == 1) & (last_cls == C_EQUALS)) | (
        (num_spaces == 2) & (last_cls == C_SPACE)
    )
    easy &= ends - last_pos > 1
    return easy, pos, cls, line_of


def parse_easy_lines(
    body: bytes,
    sp: Specials,
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    numbers: npt.NDArray[np.int64],
    factor_ns: int,
    now_ns: int,
) -> tuple[list[Chunk], npt.NDArray[np.int64]]:
    """Returns chunks for the easy lines and the indices of the lines left to the per-line path."""
    # The body plus PAD_SIZE zero bytes: windows of up to PAD_SIZE bytes at any token start.
    buf = np.zeros(len(body) + PAD_SIZE, dtype=np.uint8)
    buf[: len(body)] = np.frombuffer(body, dtype=np.uint8)
    easy, pos, cls, line_of = _easy_lines(buf, sp, starts, ends)
    nonempty = ends > starts
    if len(starts):
        nonempty[nonempty] = buf[starts[nonempty]] != HASH
    easy_idx = np.flatnonzero(easy)
    dropped = None
    escapes = sp.escape_positions
    if len(escapes):
        # An escaping backslash is left out of names and tag values when it escapes one of
        # NAME_ESCAPES (else it is a literal backslash, as the per-line parser reads it).
        escapes = escapes[escapes + 1 < len(buf)]
        dropped = np.zeros(len(buf), dtype=np.bool_)
        dropped[escapes[np.isin(buf[escapes + 1], _NAME_ESCAPES)]] = True
    slow = [np.flatnonzero(nonempty & ~easy)]
    chunks: list[Chunk] = []
    if len(easy_idx):
        sel = easy[line_of]
        d_pos, d_line = pos[sel], line_of[sel]
        first_idx = np.searchsorted(d_line, easy_idx, side="left")
        num_delims = np.diff(np.append(first_idx, len(d_pos)))
        tag_delims = np.zeros(len(starts), dtype=np.int64)
        is_space = cls[sel] == C_SPACE
        first_space = np.searchsorted(d_line[is_space], easy_idx, side="left")
        tag_delims[easy_idx] = np.flatnonzero(is_space)[first_space] - first_idx
        shape = (num_delims << 20) | tag_delims[easy_idx]
        for rows in _split_by(shape):
            lines = easy_idx[rows]
            if len(rows) < MIN_GROUP_ROWS:  # a rare layout: cheaper line by line
                slow.append(lines)
                continue
            key = int(shape[rows[0]])
            num_tokens = (key >> 20) + 1
            d_index = first_idx[rows][:, None] + np.arange(num_tokens - 1)
            tok_start = np.empty((len(lines), num_tokens), dtype=np.int64)
            tok_end = np.empty((len(lines), num_tokens), dtype=np.int64)
            tok_start[:, 0] = starts[lines]
            tok_start[:, 1:] = d_pos[d_index] + 1
            tok_end[:, :-1] = d_pos[d_index]
            tok_end[:, -1] = ends[lines]
            left = _parse_shape(
                buf,
                dropped,
                tok_start,
                tok_end,
                key & 0xFFFFF,
                lines,
                numbers,
                factor_ns,
                now_ns,
                chunks,
            )
            slow.append(left)
    rest = np.unique(np.concatenate(slow)) if slow else np.zeros(0, dtype=np.int64)
    return chunks, rest


def _parse_shape(
    buf: npt.NDArray[np.uint8],
    dropped: npt.NDArray[np.bool_] | None,
    tok_start: npt.NDArray[np.int64],
    tok_end: npt.NDArray[np.int64],
    num_tag_delims: int,
    lines: npt.NDArray[np.int64],
    numbers: npt.NDArray[np.int64],
    factor_ns: int,
    now_ns: int,
    chunks: list[Chunk],
) -> npt.NDArray[np.int64]:
    """Groups lines of one token layout by names and classes; returns the lines left over."""
    num_lines, num_tokens = tok_start.shape
    num_tags = num_tag_delims // 2
    has_ts = (num_tokens - 1 - num_tag_delims) % 2 == 1
    name_cols = [0] + [1 + 2 * t for t in range(num_tags)]
    field_start = 1 + 2 * num_tags
    num_fields = (num_tokens - field_start - (1 if has_ts else 0)) // 2
    name_cols += [field_start + 2 * f for f in range(num_fields)]
    field_value_cols = [field_start + 2 * f + 1 for f in range(num_fields)]
    key_parts = []
    same = True
    windows = np.lib.stride_tricks.sliding_window_view(
        _tail_padded(buf, MAX_NAME_SIZE), MAX_NAME_SIZE
    )
    for c in name_cols:
        lengths = tok_end[:, c] - tok_start[:, c]
        width = int(lengths.max())
        if width > MAX_NAME_SIZE:  # an invalid name: the per-line path says so
            return lines
        mat = windows[tok_start[:, c], :width]
        if int(lengths.min()) < width:
            mat = np.where(np.arange(width) < lengths[:, None], mat, 0).astype(np.uint8)
        key_parts += [lengths.astype("<i8").view(np.uint8).reshape(-1, 8), mat]
        same = same and bool((lengths == lengths[0]).all() and (mat == mat[0]).all())
    codes = np.empty((num_lines, num_fields + 1), dtype=np.uint8)
    for f, c in enumerate(field_value_cols):
        codes[:, f] = _value_codes(buf, tok_start[:, c], tok_end[:, c])
    if has_ts:
        last = buf[tok_end[:, -1] - 1]
        codes[:, -1] = np.where((last >= 0x30) & (last <= 0x39), 0, last)
    else:
        codes[:, -1] = 0
    if same and (codes == codes[0]).all():
        groups = [np.arange(num_lines)]
    else:
        key = np.hstack([*key_parts, codes])
        _, inverse = np.unique(key, axis=0, return_inverse=True)
        groups = _split_by(inverse.reshape(-1))
    left = []
    for rows in groups:
        if len(rows) < MIN_GROUP_ROWS:
            left.append(lines[rows])
            continue
        ok = _convert_group(
            buf,
            dropped,
            tok_start[rows],
            tok_end[rows],
            name_cols,
            num_tags,
            field_value_cols,
            has_ts,
            codes[rows[0]],
            lines[rows],
            numbers,
            factor_ns,
            now_ns,
            chunks,
        )
        left.append(lines[rows][~ok])
    return np.concatenate(left) if left else np.zeros(0, dtype=np.int64)


def _tail_padded(buf: npt.NDArray[np.uint8], width: int) -> npt.NDArray[np.uint8]:
    """Returns ``buf`` if it ends in ``width`` zero bytes of padding or more, else a copy."""
    if width <= PAD_SIZE:
        return buf
    return np.concatenate([buf, np.zeros(width, dtype=np.uint8)])


def _split_by(keys: npt.NDArray[np.int64]) -> list[npt.NDArray[np.int64]]:
    """Returns the row indices of each distinct key (ascending within a group)."""
    order = np.argsort(keys, kind="stable")
    cuts = np.flatnonzero(np.diff(keys[order])) + 1
    return np.split(order, cuts)


def _name(buf: npt.NDArray[np.uint8], start: int, end: int) -> str:
    raw = bytes(buf[start:end])
    if b"\\" in raw:
        raw = unescape_name(raw)
    return raw.decode()


def _convert_group(
    buf: npt.NDArray[np.uint8],
    dropped: npt.NDArray[np.bool_] | None,
    tok_start: npt.NDArray[np.int64],
    tok_end: npt.NDArray[np.int64],
    name_cols: list[int],
    num_tags: int,
    field_value_cols: list[int],
    has_ts: bool,
    codes: npt.NDArray[np.uint8],
    lines: npt.NDArray[np.int64],
    numbers: npt.NDArray[np.int64],
    factor_ns: int,
    now_ns: int,
    chunks: list[Chunk],
) -> npt.NDArray[np.bool_]:
    """Converts one group into a chunk (rows that fail stay out); returns the ok mask per row."""
    num_rows = len(lines)
    first = numbers[lines[0]]
    try:
        names = [_name(buf, int(tok_start[0, c]), int(tok_end[0, c])) for c in name_cols]
        table = names[0]
        check_table_name(table, int(first))
        for name in names[1:]:
            check_column_name(table, name, int(first))
    except (UnicodeDecodeError, BadRequestError):
        return np.zeros(num_rows, dtype=np.bool_)
    ok = np.ones(num_rows, dtype=np.bool_)
    columns: list[ChunkColumn] = []
    seen: set[str] = set()
    value_cols = [1 + 2 * t + 1 for t in range(num_tags)] + field_value_cols
    for position, (name, col) in enumerate(zip(names[1:], value_cols, strict=True)):
        # Every value is checked; of a name repeated in the line, the first one is kept.
        starts, ends = tok_start[:, col], tok_end[:, col]
        if position < num_tags:
            kind, (values, valid) = Kind.TAG, _strings(buf, starts, ends, dropped)
            valid &= buf[starts] != EQUALS  # a binary marker in a tag value: refused line by line
        else:
            kind, values, valid = _field(buf, starts, ends, int(codes[position - num_tags]))
        ok &= valid
        if name not in seen:
            seen.add(name)
            columns.append(ChunkColumn(name, position, kind, None, values))
    if has_ts:
        starts, ends = tok_start[:, -1], tok_end[:, -1]
        code = int(codes[-1])
        factor = factor_ns if code == 0 else SUFFIX_NS.get(code, 0)
        if factor == 0:
            return np.zeros(num_rows, dtype=np.bool_)
        stamps, valid = _integers(buf, starts, ends if code == 0 else ends - 1, negative=False)
        valid &= stamps <= INT64_MAX // factor
        ok &= valid
        stamps = stamps * factor
    else:
        stamps = np.full(num_rows, now_ns, dtype=np.int64)
    if not ok.all():
        if not ok.any():
            return ok
        keep = np.flatnonzero(ok)
        columns = [
            ChunkColumn(c.name, c.position, c.kind, None, c.values.take(pa.array(keep)))
            for c in columns
        ]
        stamps, lines = stamps[keep], lines[keep]
    chunks.append(Chunk(table, numbers[lines], stamps, columns))
    return ok


def _strings(
    buf: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    dropped: npt.NDArray[np.bool_] | None = None,
) -> tuple[pa.Array, npt.NDArray[np.bool_]]:
    values = _gather(buf, starts, ends, dropped)
    try:
        values.validate(full=True)
    except pa.ArrowInvalid:
        return values, np.zeros(len(starts), dtype=np.bool_)
    return values, np.ones(len(starts), dtype=np.bool_)


def _swar8(words: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """Returns the values of 8 ASCII digits per little-endian word (first digit in the low byte)."""
    x = words - np.uint64(0x3030303030303030)
    x = (x * np.uint64(10) + (x >> np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
    x = (x * np.uint64(100) + (x >> np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
    return (x * np.uint64(10000) + (x >> np.uint64(32))) & np.uint64(0xFFFFFFFF)


def _integers(
    buf: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    *,
    negative: bool,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Parses ``-?[0-9]+`` tokens (no sign unless ``negative``); rows that fail are not valid.

    Up to 19 digits: the 8, 16 or 24 bytes ending at each token are copied (one row of a sliding
    window each), the bytes before the digits set to '0', and read 8 digits per uint64 (SWAR);
    longer tokens (leading zeros) go through Arrow's cast.
    """
    num_rows = len(starts)
    if not num_rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.bool_)
    lengths = ends - starts
    neg = buf[starts] == ord("-")
    digits_len = lengths - neg
    if int(digits_len.max()) > 19:
        return _integers_arrow(buf, starts, ends, negative=negative)
    valid = digits_len > 0
    if not negative:
        valid &= ~neg
    width = max(8, 8 * ((int(digits_len.max()) + 7) // 8))
    if int(ends.min()) >= width:
        window = np.lib.stride_tricks.sliding_window_view(buf, width)[ends - width]
    else:  # a token near the body's start: pad in front
        padded = np.concatenate([np.full(width, 48, dtype=np.uint8), buf])
        window = np.lib.stride_tricks.sliding_window_view(padded, width)[ends]
    shortest = int(digits_len.min())
    if shortest == int(digits_len.max()):
        window[:, : width - shortest] = 48
    else:
        window[np.arange(width)[None, :] < (width - digits_len)[:, None]] = 48
    words = np.ascontiguousarray(window).view("<u8")
    digit_bytes = words - np.uint64(0x3030303030303030)
    bad = (digit_bytes | (words + np.uint64(0x4646464646464646))) & np.uint64(0x8080808080808080)
    valid &= ~bad.any(axis=1)
    parts = _swar8(words)
    values = parts[:, 0]
    for w in range(1, width // 8):
        values = values * np.uint64(10**8) + parts[:, w]
    # At most 19 digits: no uint64 overflow.
    valid &= (values <= np.uint64(INT64_MAX)) | (neg & (values == np.uint64(INT64_MAX + 1)))
    signed = values.astype(np.int64)
    return np.where(neg, -signed, signed), valid


def _integers_arrow(
    buf: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    *,
    negative: bool,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    text = _gather(buf, starts, ends)
    valid = ends > starts
    if not negative:
        valid &= buf[starts] != ord("-")
    try:
        values = pc.cast(text, pa.int64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return np.zeros(len(starts), dtype=np.int64), np.zeros(len(starts), dtype=np.bool_)
    return values.astype(np.int64), valid


def _field(
    buf: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    code: int,
) -> tuple[Kind, pa.Array, npt.NDArray[np.bool_]]:
    num_rows = len(starts)
    if code >= MIN_ARRAY_CODE:
        return Kind.ARRAY, *array_tokens(buf, starts, ends, code)
    if code == _CODE_BAD_BINARY:
        return Kind.FLOAT, pa.nulls(num_rows, pa.float64()), np.zeros(num_rows, dtype=np.bool_)
    if code == _CODE_BINARY:
        valid = ends - starts == 10
        index = (starts + 2)[:, None] + np.arange(8)
        payload = buf[np.minimum(index, len(buf) - 1)]
        valid &= buf[starts + 1] == BINARY_DOUBLE
        return Kind.FLOAT, pa.array(np.ascontiguousarray(payload).view("<f8").reshape(-1)), valid
    kind = Kind(code)
    if kind is Kind.STRING:
        values, valid = _strings(buf, starts + 1, ends - 1)
        return kind, values, valid
    if kind is Kind.FLOAT:
        text = _gather(buf, starts, ends)
        valid = pc.match_substring_regex(text, FLOAT_PATTERN).to_numpy(zero_copy_only=False)
        if not valid.all():
            text = pc.if_else(pa.array(valid), text, pa.scalar("0"))
        return kind, pc.cast(text, pa.float64()), valid.astype(np.bool_)
    if kind is Kind.BOOL:
        index = pc.index_in(_gather(buf, starts, ends), value_set=_BOOL_TOKENS)
        valid = index.is_valid().to_numpy(zero_copy_only=False)
        values = pc.less(pc.fill_null(index, 0), len(TRUE_TOKENS))
        return kind, values, valid
    ints, valid = _integers(buf, starts, ends - 1, negative=True)
    return kind, pa.array(ints), valid & np.ones(num_rows, dtype=np.bool_)
