"""Shared by the ILP parser tests: a canonical form of parsed batches, and body strategies."""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np
import numpy.typing as npt
from hypothesis import strategies as st

from streamwrite.daemon.errors import BadRequestError
from streamwrite.daemon.ilp import IlpBatch, IlpParser, parse_body
from streamwrite.daemon.ilp_reference import parse_body_reference

NOW_NS = 1_700_000_000_123_456_789


def _value(v: Any) -> Any:
    if isinstance(v, float):
        return ("f", struct.pack("<d", v))
    if isinstance(v, list):
        return ("list", tuple(_value(x) for x in v))
    return v


def array_bytes(values: npt.ArrayLike, elem: int = 10) -> bytes:
    """Returns the protocol-2 binary value (after ``name=``) of an array: ``=`` 0x0E elem ndims
    shape data."""
    array = np.asarray(values, dtype="<f8" if elem == 10 else "<i8")
    shape = struct.pack(f"<{array.ndim}I", *array.shape)
    return b"=\x0e" + bytes([elem, array.ndim]) + shape + array.tobytes()


def canon(batches: list[IlpBatch]) -> dict[int, tuple[str, int, dict[str, tuple[int, Any]]]]:
    """Returns ``{line: (table, timestamp_ns, {column: (kind, value)})}`` for every row."""
    rows: dict[int, tuple[str, int, dict[str, tuple[int, Any]]]] = {}
    for batch in batches:
        assert batch.num_rows == len(batch.line_numbers) == len(batch.timestamp_ns)
        lines = batch.line_numbers.tolist()
        assert lines == sorted(lines)
        for line, ts in zip(lines, batch.timestamp_ns.tolist(), strict=True):
            assert line not in rows
            rows[line] = (batch.table, ts, {})
        for name, col in batch.columns.items():
            assert col.name == name
            seen: set[int] = set()
            for part in col.parts:
                values = part.values.to_pylist()
                assert len(values) == len(part.rows)
                for row, value in zip(part.rows.tolist(), values, strict=True):
                    assert row not in seen
                    seen.add(row)
                    rows[lines[row]][2][name] = (int(part.kind), _value(value))
    return rows


def column_orders(batches: list[IlpBatch]) -> list[tuple[str, list[str]]]:
    """Returns each batch's table and column order."""
    return [(b.table, list(b.columns)) for b in batches]


def outcome(parse: Any, body: bytes, **kwargs: Any) -> tuple[str, Any]:
    """Returns ("ok", (canon, orders)) or ("error", (line, message)); BadRequestError only."""
    try:
        batches = parse(body, now_ns=NOW_NS, **kwargs)
    except BadRequestError as e:
        return "error", (e.line, str(e))
    return "ok", (canon(batches), column_orders(batches))


def feed_pieces(body: bytes, cuts: list[int], **kwargs: Any) -> tuple[str, Any]:
    """Returns the outcome of feeding ``body`` cut at ``cuts`` (rows only: batches differ)."""
    parser = IlpParser(now_ns=NOW_NS, **kwargs)
    batches: list[IlpBatch] = []
    try:
        last = 0
        for cut in [*sorted(cuts), len(body)]:
            batches += parser.feed(body[last:cut])
            last = cut
        batches += parser.close()
    except BadRequestError as e:
        return "error", (e.line, str(e))
    return "ok", canon(batches)


def check_same(body: bytes, **kwargs: Any) -> tuple[str, Any]:
    """Asserts the vectorised parser equals the reference on ``body``; returns the outcome."""
    fast = outcome(parse_body, body, **kwargs)
    ref = outcome(parse_body_reference, body, **kwargs)
    assert fast == ref, (body, fast, ref)
    return fast


# ---------------------------------------------------------------- body strategies

NAME_CHARS = st.sampled_from([*'abcxyz_AZ09é ,=\\"\n\r.-#日', "\x10", "\x7f"])
VALUE_TEXT = st.lists(
    st.sampled_from([*'abAZ09 ,=\\"\n\r#é.-', "\x10", "=\x10", "==\x10", "\x00"]), max_size=6
).map("".join)


def escape_name(text: str) -> bytes:
    out = bytearray()
    for ch in text.encode():
        if ch in b',= \\"\r\n':
            out.append(0x5C)
        out.append(ch)
    return bytes(out)


def escape_string(text: str) -> bytes:
    out = bytearray()
    for ch in text.encode():
        if ch in b'"\\\r\n':
            out.append(0x5C)
        out.append(ch)
    return b'"' + bytes(out) + b'"'


@st.composite
def names(draw: st.DrawFn, plain: bool = False) -> str:
    if plain or draw(st.integers(0, 9)) > 0:
        return draw(
            st.sampled_from(["trades", "cpu", "sym", "side", "price", "qty", "ok", "x", "y"])
        )
    return draw(st.text(NAME_CHARS, min_size=0, max_size=6))


FIELD_KINDS = [
    "float",
    "binary",
    "binary",
    "int",
    "string",
    "bool",
    "ts_t",
    "ts_n",
    "ts_m",
    "array:10:1",
    "array:10:2",
    "array:6:1",
    "array:10:3",
] * 3 + ["bad", "array", "bad_array"]
"""``array:elem:ndims`` arrays keep their type per template (vectorised groups); ``array`` draws
the type per value."""
ARRAY_BYTES = st.one_of(
    st.binary(min_size=8, max_size=8),
    st.sampled_from(
        [b"\n" * 8, b"==\x10\\==\x0e\n", b'" ,=\r\n#\\', b"\x0e\x0a\x01\x00\x00\x00\x00="]
    ),
    st.floats(width=64).map(lambda f: struct.pack("<d", f)),
)


@st.composite
def field_value(draw: st.DrawFn, kind: str) -> bytes:
    if kind == "float":
        v = draw(st.floats(allow_nan=True, allow_infinity=True, width=64))
        text = (
            "NaN"
            if math.isnan(v)
            else "Infinity"
            if v == math.inf
            else "-Infinity"
            if v == -math.inf
            else repr(v)
        )
        return draw(
            st.sampled_from(
                [
                    text.encode(),
                    b"%d" % int(v) if math.isfinite(v) and abs(v) < 1e18 else b"1.5",
                    b"-0.0",
                    b"1e5",
                    b".5",
                ]
            )
        )
    if kind == "binary":
        raw = draw(
            st.one_of(
                st.binary(min_size=8, max_size=8),
                st.floats(width=64).map(lambda f: struct.pack("<d", f)),
            )
        )
        return b"=\x10" + raw
    if kind.startswith("array") or kind == "bad_array":
        # Plain ``array``: the type is drawn per value, so lines of one template may differ in
        # ndims and element type (a type conflict is to_arrow's business, not the parsers').
        if kind.startswith("array:"):
            elem, ndims = (int(x) for x in kind.split(":")[1:])
        else:
            elem, ndims = draw(st.sampled_from([10, 10, 6])), draw(st.integers(1, 3))
        shape = draw(st.lists(st.integers(0, 3), min_size=ndims, max_size=ndims))
        count = math.prod(shape)
        data = b"".join(draw(st.lists(ARRAY_BYTES, min_size=count, max_size=count)))
        value = b"=\x0e" + bytes([elem, len(shape)]) + struct.pack(f"<{len(shape)}I", *shape)
        value += data
        if kind == "bad_array":
            cut = draw(st.integers(0, len(value)))
            value = draw(
                st.sampled_from(
                    [
                        value[:cut],  # truncated anywhere
                        value + b"\x00",  # a byte too many
                        value[:2] + bytes([draw(st.integers(0, 255))]) + value[3:],  # elem
                        value[:3] + bytes([draw(st.sampled_from([0, 33, 255]))]) + value[4:],
                        value[:4] + b"\xff\xff\xff\xff" + value[8:],  # a huge first dim
                    ]
                )
            )
        return value
    if kind == "int":
        return b"%di" % draw(st.integers(-(2**63), 2**63 - 1))
    if kind == "string":
        return escape_string(draw(VALUE_TEXT))
    if kind == "bool":
        return draw(
            st.sampled_from(
                [b"t", b"T", b"true", b"True", b"TRUE", b"f", b"F", b"false", b"False", b"FALSE"]
            )
        )
    if kind.startswith("ts_"):
        return b"%d%s" % (draw(st.integers(-(2**40), 2**62)), kind[-1].encode())
    return draw(
        st.sampled_from(
            [
                b"123u",
                b"tru",
                b"1.2.3",
                b"",
                b"=\x0e\x0a",
                b"=\x07",
                b"0x10i",
                b'"open',
                b"99999999999999999999i",
                b"-",
            ]
        )
    )


@st.composite
def templates(draw: st.DrawFn) -> tuple[str, list[str], list[tuple[str, str]], str]:
    table = draw(names())
    tags = draw(st.lists(names(), max_size=3))
    fields = draw(
        st.lists(st.tuples(names(), st.sampled_from(FIELD_KINDS)), min_size=0, max_size=4)
    )
    ts = draw(st.sampled_from(["", "", "plain", "plain", "n", "n", "t", "m", "bad"]))
    return table, tags, fields, ts


@st.composite
def lines(draw: st.DrawFn, template: tuple[str, list[str], list[tuple[str, str]], str]) -> bytes:
    table, tags, fields, ts = template
    out = bytearray(escape_name(table))
    for key in tags:
        out += b"," + escape_name(key) + b"=" + escape_name(draw(VALUE_TEXT.filter(bool)))
    out += b" "
    out += b",".join(escape_name(k) + b"=" + draw(field_value(kind)) for k, kind in fields)
    if ts == "plain":
        out += b" %d" % draw(st.integers(0, 2**62))
    elif ts in ("n", "t", "m"):
        out += b" %d%s" % (draw(st.integers(0, 2**62)), ts.encode())
    elif ts == "bad":
        out += draw(st.sampled_from([b" -5", b" x", b" ", b" 1 2", b" 99999999999999999999"]))
    return bytes(out)


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    """A body of lines from 1-3 shapes (so the vectorised groups are exercised), comments, empty
    lines, LF / CR LF / CR line ends, with or without a final line end."""
    shapes = draw(st.lists(templates(), min_size=1, max_size=3))
    num_lines = draw(st.integers(0, 40))
    picks = draw(st.lists(st.integers(0, len(shapes) - 1), min_size=num_lines, max_size=num_lines))
    ending = draw(st.sampled_from([b"\n", b"\n", b"\r\n", b"\r"]))
    out = bytearray()
    for pick in picks:
        extra = draw(st.integers(0, 30))
        if extra == 0:
            out += b'# a comment, with = and "quotes"' + ending
        elif extra == 1:
            out += ending
        out += draw(lines(shapes[pick])) + ending
    if out and draw(st.booleans()):
        out = out[: len(out) - len(ending)]
    return bytes(out)
