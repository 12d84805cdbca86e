"""The filter text of ``streamwrite scan --filter``: a property test (random filters printed
as text, parsed back, filter a table exactly as the same filter built with
``pyarrow.compute``), SQL's null rules, and the typed errors with their positions.

``STREAMWRITE_FILTER_TEXT_EXAMPLES`` sets the number of random filters (CI default 300).
"""

from __future__ import annotations

import datetime
import os
import pickle
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamwrite.cli.filter_text import (
    FilterSyntaxError,
    parse_filter_text,
    quote_name,
    quote_string,
)
from streamwrite.errors import ConfigError

EXAMPLES = int(os.environ.get("STREAMWRITE_FILTER_TEXT_EXAMPLES", "300"))
UTC = datetime.UTC
BASE = datetime.datetime(2026, 11, 22, tzinfo=UTC)
STRINGS = ["AAPL", "AA", "", "it's", 'say "hi"', "é", "Z" * 40, "a%b"]


def _table() -> pa.Table:
    rng = np.random.default_rng(7)
    n = 400
    valid = rng.random(n) > 0.1
    floats = rng.choice([0.0, -0.0, 1.5, -2.0, np.nan, 3.0, 1e20], n)
    return pa.table(
        {
            "i": pa.array(rng.integers(-5, 6, n), pa.int64(), mask=~valid),
            "f": pa.array(floats, pa.float64(), mask=rng.random(n) < 0.1),
            "s": pa.array([STRINGS[k] for k in rng.integers(0, len(STRINGS), n)], mask=~valid),
            "a b": pa.array(rng.integers(0, 3, n), pa.int32()),
            "and": pa.array(rng.integers(0, 3, n), pa.int8()),
            "ts": pa.array(
                [BASE + datetime.timedelta(hours=int(h)) for h in rng.integers(0, 48, n)],
                pa.timestamp("us", tz="UTC"),
                mask=rng.random(n) < 0.1,
            ),
            "d": pa.array(
                [BASE.date() + datetime.timedelta(days=int(k)) for k in rng.integers(0, 5, n)],
                pa.date32(),
            ),
            "b": pa.array(rng.random(n) > 0.5, mask=rng.random(n) < 0.1),
            "row": pa.array(np.arange(n)),
        }
    )


TABLE = _table()

# A random filter is a tree of tuples: ("cmp", column, op, value), ("in", column, values,
# negated), ("null", column, negated), ("like", column, prefix, negated), ("and"|"or", a, b),
# ("not", a), ("const", bool). Each is printed as text and built with pyarrow.compute.

OPS = {"==": ["=", "=="], "!=": ["!=", "<>"], "<": ["<"], "<=": ["<="], ">": [">"], ">=": [">="]}


def _values(column: str) -> st.SearchStrategy[Any]:
    if column in ("i", "a b", "and"):
        return st.integers(-6, 6)
    if column == "f":
        return st.sampled_from([0.0, -0.0, 1.5, -2.0, 3.0, 1e20, 2.5e-7, -1])
    if column == "s":
        return st.sampled_from(STRINGS) | st.text(max_size=5)
    if column == "ts":
        return st.builds(
            lambda hours, offset: (BASE + datetime.timedelta(hours=hours)).astimezone(
                datetime.timezone(datetime.timedelta(minutes=offset))
            ),
            st.integers(-2, 50),
            st.sampled_from([0, 330, -300, 60]),
        )
    if column == "d":
        return st.builds(lambda k: BASE.date() + datetime.timedelta(days=k), st.integers(-1, 6))
    return st.booleans()


COLUMNS = ["i", "f", "s", "a b", "and", "ts", "d", "b"]


@st.composite
def _leaf(draw: st.DrawFn) -> tuple[Any, ...]:
    column = draw(st.sampled_from(COLUMNS))
    kind = draw(st.sampled_from(["cmp", "cmp", "in", "null", "like"]))
    if kind == "like" and column != "s":
        kind = "cmp"
    if kind == "cmp":
        return ("cmp", column, draw(st.sampled_from(sorted(OPS))), draw(_values(column)))
    if kind == "in":
        values = draw(st.lists(_values(column), min_size=1, max_size=4))
        return ("in", column, values, draw(st.booleans()))
    if kind == "null":
        return ("null", column, draw(st.booleans()))
    prefix = draw(st.sampled_from(["A", "AA", "", "it'", "é", "Z" * 3]))
    return ("like", column, prefix, draw(st.booleans()))


FILTERS = st.recursive(
    _leaf() | st.tuples(st.just("const"), st.booleans()),
    lambda inner: (
        st.tuples(st.sampled_from(["and", "or"]), inner, inner) | st.tuples(st.just("not"), inner)
    ),
    max_leaves=6,
)


def _literal(value: Any, upper: bool) -> str:
    word = str.upper if upper else str.lower
    if isinstance(value, bool):
        return word(str(value))
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return quote_string(value)
    if isinstance(value, datetime.datetime):
        return f"{word('timestamp')} '{value.isoformat(sep=' ')}'"
    return f"{word('date')} '{value.isoformat()}'"


def to_text(node: tuple[Any, ...], style: int) -> str:
    """The filter as text; ``style`` varies keyword case, spelling and spaces."""
    upper, space = bool(style & 1), " " * (1 + (style >> 1 & 1))
    word = str.upper if upper else str.lower
    kind = node[0]
    if kind == "const":
        return word(str(node[1]))
    if kind in ("and", "or"):
        return f"({to_text(node[1], style)}{space}{word(kind)}{space}{to_text(node[2], style)})"
    if kind == "not":
        return f"{word('not')} ({to_text(node[1], style)})"
    name = quote_name(node[1])
    if kind == "cmp":
        spellings = OPS[node[2]]
        op = spellings[style % len(spellings)]
        return f"{name}{space}{op}{space}{_literal(node[3], upper)}"
    if kind == "in":
        values = ",".join(_literal(v, upper) for v in node[2])
        return f"{name} {word('not in') if node[3] else word('in')} ({values})"
    if kind == "null":
        return f"{name} {word('is not null') if node[2] else word('is null')}"
    prefix = quote_string(node[2] + "%")
    return f"{name} {word('not like') if node[3] else word('like')} {prefix}"


def _scalar(value: Any) -> pa.Scalar:
    if isinstance(value, bool):
        return pa.scalar(value)
    if isinstance(value, int):
        return pa.scalar(value, pa.int64())
    if isinstance(value, float):
        return pa.scalar(value, pa.float64())
    if isinstance(value, datetime.datetime):
        return pa.scalar(value.astimezone(UTC), pa.timestamp("us", tz="UTC"))
    if isinstance(value, datetime.date):
        return pa.scalar(value, pa.date32())
    return pa.scalar(value, pa.string())


def to_expression(node: tuple[Any, ...]) -> pc.Expression:
    """The filter built with pyarrow.compute (SQL's ``not in``: null values are not kept)."""
    kind = node[0]
    if kind == "const":
        return pc.scalar(node[1])
    if kind == "and":
        return to_expression(node[1]) & to_expression(node[2])
    if kind == "or":
        return to_expression(node[1]) | to_expression(node[2])
    if kind == "not":
        return ~to_expression(node[1])
    field = pc.field(node[1])
    if kind == "cmp":
        function = {"==": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal"}
        function |= {">": "greater", ">=": "greater_equal"}
        compare: Any = getattr(pc, function[node[2]])
        result: pc.Expression = compare(field, pc.scalar(_scalar(node[3])))
        return result
    if kind == "in":
        scalars = [_scalar(v) for v in node[2]]
        kinds = {s.type for s in scalars}
        value_type = pa.float64() if kinds == {pa.int64(), pa.float64()} else scalars[0].type
        python = [s.as_py() for s in scalars]
        if value_type == pa.float64():
            python += [-float(v) for v in python if v == 0]  # as x = 0.0, not is_in
        member = field.isin(pa.array(python, value_type))
        return (~member & field.is_valid()) if node[3] else member
    if kind == "null":
        return field.is_valid() if node[2] else field.is_null()
    like = pc.starts_with(field, pattern=node[2])
    return ~like if node[3] else like


@settings(max_examples=EXAMPLES, deadline=None)
@given(FILTERS, st.integers(0, 7))
def test_printed_filters_parse_back_and_filter_the_same_rows(
    node: tuple[Any, ...], style: int
) -> None:
    text = to_text(node, style)
    expected = TABLE.filter(to_expression(node)).column("row")  # NaN != NaN: compare row ids
    assert TABLE.filter(parse_filter_text(text)).column("row").equals(expected), text


def test_sql_null_rules() -> None:
    table = pa.table({"x": pa.array([1, 2, None, 3]), "s": ["AB", None, "AC", "B"]})

    def rows(text: str) -> list[Any]:
        return table.filter(parse_filter_text(text)).column("x").to_pylist()

    assert rows("x not in (1, 2)") == [3]  # SQL: a null value is not kept
    assert rows("not (x in (1, 2))") == [None, 3]  # is_in is never null
    assert rows("x != 1") == [2, 3]
    zeros = pa.table({"f": [0.0, -0.0, 1.0]})
    assert zeros.filter(parse_filter_text("f in (0.0)")).num_rows == 2  # as f = 0.0
    assert rows("x is null or x = 3") == [None, 3]
    assert rows("s like 'A%'") == [1, None]
    assert rows("s NOT LIKE 'A%'") == [3]
    assert rows("not x = 1 and true") == [2, 3]
    assert rows("x = 1 or x = 2 and s = 'nope'") == [1]  # and binds tighter than or


def test_literal_types() -> None:
    table = pa.table(
        {
            "ts": pa.array([BASE, BASE + datetime.timedelta(hours=6)], pa.timestamp("ns", "UTC")),
            "d": pa.array([BASE.date(), BASE.date() + datetime.timedelta(days=1)]),
            "wall": pa.array([datetime.datetime(2026, 1, 1, 10)], pa.timestamp("ms")).take([0, 0]),
            "q": ["it's", "x"],
            'we"ird': [1, 2],
        }
    )

    def count(text: str) -> int:
        return table.filter(parse_filter_text(text)).num_rows

    assert count("ts >= timestamp '2026-11-22 11:00:00+05:30'") == 1  # 05:30 UTC
    assert count("ts < timestamp '2026-11-22T05:30Z'") == 1
    assert count("d = date '2026-11-23'") == 1
    assert count("wall = timestamp '2026-01-01 10:00:00'") == 2  # no offset: wall clock
    assert count("q = 'it''s'") == 1
    assert count('"we""ird" in (2, 3.5)') == 1
    assert count('"we""ird" >= -1e0') == 2


@pytest.mark.parametrize(
    ("text", "position", "words"),
    [
        ("", 1, "Expected a filter"),
        ("x =", 4, "found the end of the filter"),
        ("x = null", 5, "is null"),
        ("s like '%A'", 8, "prefix"),
        ("s like 'A_%'", 8, "prefix"),
        ("s like 'A'", 8, "prefix"),
        ("x in (1, 'a')", 6, "do not mix"),
        ("x in 1", 6, "'('"),
        ("and = 1", 1, 'write "and"'),
        ("x = 'abc", 5, "not closed"),
        ("x ~ 1", 3, "'~'"),
        ("(x = 1", 7, "')'"),
        ("x = 1 y", 7, "'and', 'or'"),
        ("ts = timestamp 'noon'", 16, "ISO timestamp"),
        ("d = date 5", 10, "a string after date"),
        ("x is 3", 6, "'null'"),
        ("x between 1", 3, "a comparison, 'in', 'is' or 'like'"),
        ("x = 99999999999999999999", 5, "64 bits"),
        ('"" = 1', 1, "empty"),
    ],
)
def test_errors_name_the_position(text: str, position: int, words: str) -> None:
    with pytest.raises(FilterSyntaxError) as caught:
        parse_filter_text(text)
    assert caught.value.position == position - 1
    assert isinstance(caught.value, ConfigError)
    message = str(caught.value)
    assert f"at position {position} " in message and words in message, message
    again = pickle.loads(pickle.dumps(caught.value))  # crosses a process pool intact
    assert type(again) is FilterSyntaxError and str(again) == message
    assert again.position == caught.value.position
