"""Malformed ILP: BadRequestError (HTTP 400) naming the line, with QuestDB's message if it has one.

Each bad line is checked alone and after 12 good lines (the vectorised path runs on those, the
bad line falls back to the per-line path): the error names the right 1-based line."""

from __future__ import annotations

import pytest

from streamwrite.daemon.errors import BadRequestError
from streamwrite.daemon.ilp import IlpParser, parse_body
from streamwrite.errors import StateError
from tests.daemon._ilp_support import NOW_NS, check_same

GOOD = b"trades,sym=a price=1.5,qty=3i 1700000000000000000\n" * 12

CASES = [
    (b"t", "No fields were provided"),
    (b"t ", "No fields were provided"),
    (b"t,a=b", "No fields were provided"),
    (b"t,a=b ", "No fields were provided"),
    (b"t,a= f=1", "Could not parse entire line. Symbol value is missing: a"),
    (b"t,a f=1", "Could not parse entire line. Symbol value is missing: a"),
    (b"t f=", "Could not parse entire line. Field value is missing: f"),
    (b"t f=,g=1", "Could not parse entire line. Field value is missing: f"),
    (b"t f", "Could not parse entire line. Field value is missing: f"),
    (b"t f=123u", "Could not parse entire line, field value is invalid. Field: f; value: 123u"),
    (b"t f=1.2.3", "Could not parse entire line, field value is invalid. Field: f; value: 1.2.3"),
    (b"t f=tru", "Could not parse entire line, field value is invalid. Field: f; value: tru"),
    (
        b"t f=99999999999999999999i",
        "Could not parse entire line, field value is invalid. Field: f; value: 9999999999999999"
        "9999i",
    ),
    (b't f="open', 'Could not parse entire line, field value is invalid. Field: f; value: "open'),
    (b't f="a"b', 'Could not parse entire line, field value is invalid. Field: f; value: "a"'),
    (
        b"t f==\x0e\x07\x01",
        "ARRAY_INVALID_TYPE: field 'f' has array element type 7; 10 (float64) and 6 (int64) are "
        "accepted.",
    ),
    (
        b"t f==\x0e\x0a\x21",
        "ARRAY_TOO_MANY_DIMENSIONS: field 'f' has an array of 33 dimensions; 1 to 32 are accepted.",
    ),
    (
        b"t f==\x0e\x06\x00",
        "ARRAY_TOO_MANY_DIMENSIONS: field 'f' has an array of 0 dimensions; 1 to 32 are accepted.",
    ),
    (
        b"t f==\x07abc",
        "unsupported binary value type 7 in field 'f': only 16 (float64) and 14 (array) are "
        "accepted.",
    ),
    (
        b"t f==\x10abc",
        "Could not parse entire line, field value is invalid. Field: f; value: =\x10abc",
    ),
    (b"t f=1 -5", "Could not parse timestamp: -5"),
    (b"t f=1 12x", "Could not parse timestamp: 12x"),
    (b"t f=1 1 2", "Could not parse timestamp: 1 2"),
    (b"t f=1 99999999999999999999", "Could not parse timestamp: 99999999999999999999"),
    (b"t f=1 9300000000000000000", "Could not parse timestamp: 9300000000000000000"),
    (b"a/b f=1", "invalid table name: 'a/b'"),
    (b".t f=1", "invalid table name: '.t'"),
    (b"x" * 128 + b" f=1", "invalid table name: '" + "x" * 128 + "'"),
    (b"t a.b=1", "table: t; invalid column name: a.b"),
    (b"t,a-b=1 f=1", "table: t; invalid column name: a-b"),
    (b"t " + b"c" * 128 + b"=1", "table: t; invalid column name: " + "c" * 128),
    (b"t\xff f=1", "table name b't\\xff' is not valid UTF-8."),
    (b't f="\xff"', "the string value of field 'f' b'\\xff' is not valid UTF-8."),
]


@pytest.mark.parametrize(("line", "message"), CASES, ids=[repr(c[0])[:40] for c in CASES])
def test_bad_line_names_its_line(line: bytes, message: str) -> None:
    for body, number in (
        (line, 1),
        (GOOD + line + b"\n" + GOOD, 13),
        (GOOD + (line + b"\n") * 10, 13),
    ):
        with pytest.raises(BadRequestError) as info:
            parse_body(body, now_ns=NOW_NS)
        assert info.value.line == number
        assert str(info.value).startswith(message), str(info.value)
        assert info.value.status == 400
        check_same(body)


def test_precision_is_checked() -> None:
    with pytest.raises(BadRequestError, match="unsupported precision 'x'"):
        IlpParser(precision="x", now_ns=0)
    with pytest.raises(BadRequestError, match="unsupported precision"):
        parse_body(b"t f=1", precision="", now_ns=0)


def test_timestamp_overflow_after_precision() -> None:
    with pytest.raises(BadRequestError, match="Could not parse timestamp: 9300000000"):
        parse_body(b"t f=1 9300000000\n", precision="s", now_ns=0)
    assert (
        parse_body(b"t f=1 9200000000\n", precision="s", now_ns=0)[0].timestamp_ns[0] == 92 * 10**17
    )


def test_parser_fails_then_refuses_and_closed_refuses() -> None:
    parser = IlpParser(now_ns=0)
    assert [b.num_rows for b in parser.feed(b"t f=1 5\nt f")] == [1]
    assert parser.feed(b"") == []
    with pytest.raises(BadRequestError):
        parser.feed(b"=x\n")
    with pytest.raises(StateError):
        parser.feed(b"t f=1\n")
    parser = IlpParser(now_ns=0)
    assert len(parser.close()) == 0
    with pytest.raises(StateError):
        parser.close()


def test_duplicate_column_first_wins() -> None:
    for n in (1, 12):
        body = b"t,a=x,a=y f=1i,f=2.5,a=3i,g=t 1\n" * n
        (batch,) = parse_body(body, now_ns=0)
        assert list(batch.columns) == ["a", "f", "g"]
        assert batch.columns["a"].parts[0].values.to_pylist() == ["x"] * n
        assert batch.columns["f"].parts[0].values.to_pylist() == [1] * n
        check_same(body)
