"""Filter text of ``streamwrite scan --filter``: a small SQL-ish grammar to a
:class:`pyarrow.compute.Expression` (the form ``read_table(filters=)`` takes).

Grammar (keywords are case-insensitive; ``not`` binds tighter than ``and``, ``and`` tighter
than ``or``)::

    filter     := disjunct
    disjunct   := conjunct ("or" conjunct)*
    conjunct   := negation ("and" negation)*
    negation   := "not" negation | "(" disjunct ")" | "true" | "false" | predicate
    predicate  := column cmp literal
                | column ["not"] "in" "(" literal ("," literal)* ")"
                | column "is" ["not"] "null"
                | column ["not"] "like" string          (a prefix: 'p%' only)
    cmp        := "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
    column     := name | '"' text '"'                   ("" inside is one ")
    literal    := number | string | "true" | "false"
                | "timestamp" string | "date" string
    number     := ["-"] digits ["." digits] [("e" | "E") ["-" | "+"] digits]
    string     := "'" text "'"                          ('' inside is one ')

Meaning (SQL's, in Arrow's Kleene logic: a row is kept where the filter is true, not null):

* ``col = 'x'`` etc. compare with ``pyarrow.compute``; a null value makes the comparison null.
* ``col in (a, b)`` is ``is_in`` (false for a null value; a listed ``0`` or ``0.0`` lists
  ``-0.0`` too, since ``is_in`` tells them apart and ``=`` does not); ``col not in (a, b)`` is
  ``not is_in and is not null`` (SQL: a null value is not kept). ``not (col in (...))`` is
  ``not is_in`` and keeps null values (``is_in`` is never null).
* ``col like 'p%'`` is ``starts_with(col, 'p')``: a literal prefix and one trailing ``%``
  (``%`` or ``_`` elsewhere is an error: no pattern matching).
* ``timestamp '2026-11-22 10:00:00+00:00'`` is an instant (``timestamp[us, tz=UTC]``) when the
  text has an offset, a wall-clock time (``timestamp[us]``) without one; ``date '2026-11-22'``
  is a ``date32``. Integers are ``int64``, other numbers ``float64``.

Errors are :class:`FilterSyntaxError` (a :class:`~streamwrite.errors.ConfigError`) naming what
was found, what was expected and the 1-based character position.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from streamwrite.errors import ConfigError

__all__ = [
    "FilterSyntaxError",
    "parse_filter",
    "parse_filter_text",
    "quote_name",
    "quote_string",
]

KEYWORDS = frozenset(
    {"and", "or", "not", "in", "is", "null", "like", "true", "false", "timestamp", "date"}
)
COMPARISONS = {
    **{"=": "==", "==": "==", "!=": "!=", "<>": "!="},
    **{"<": "<", "<=": "<=", ">": ">", ">=": ">="},
}
"""Each comparison operator of the grammar and its ``pyarrow.compute`` meaning."""

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
  | (?P<string>'(?:[^']|'')*')
  | (?P<quoted>"(?:[^"]|"")*")
  | (?P<name>[A-Za-z_][A-Za-z0-9_.$]*)
  | (?P<op><=|>=|<>|!=|==|=|<|>)
  | (?P<punct>[(),])
    """,
    re.VERBOSE,
)


class FilterSyntaxError(ConfigError):
    """Filter text that is not in the grammar (the message gives the 1-based position)."""

    def __init__(self, message: str, text: str, position: int) -> None:
        self.text = text
        self.position = position
        """0-based offset in ``text`` where the problem is."""
        super().__init__(f"{message} (at position {position + 1} of the filter {text!r}).")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.args[0], self.text, self.position))


def _rebuild(
    cls: type[FilterSyntaxError], message: str, text: str, position: int
) -> FilterSyntaxError:
    error = cls.__new__(cls)
    ConfigError.__init__(error, message)
    error.text, error.position = text, position
    return error


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # number, string, quoted, name, keyword, op, punct, end
    text: str
    position: int

    def describe(self) -> str:
        return "the end of the filter" if self.kind == "end" else repr(self.text)


def _tokens(text: str) -> list[_Token]:
    found: list[_Token] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            char = text[position]
            what = (
                "A string or quoted column is not closed"
                if char in "'\""
                else (f"The character {char!r} is not part of the grammar")
            )
            raise FilterSyntaxError(what, text, position)
        kind = match.lastgroup or ""
        if kind != "space":
            word = match.group()
            if kind == "name" and word.lower() in KEYWORDS:
                kind, word = "keyword", word.lower()
            found.append(_Token(kind, word, position))
        position = match.end()
    found.append(_Token("end", "", len(text)))
    return found


def quote_name(name: str) -> str:
    """Returns: ``name`` as a column of the grammar (double-quoted when it must be)."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.$]*", name) and name.lower() not in KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


def quote_string(value: str) -> str:
    """Returns: ``value`` as a string literal of the grammar."""
    return "'" + value.replace("'", "''") + "'"


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.index = 0
        self.columns: list[str] = []
        """The columns named, in order of first appearance."""

    @property
    def token(self) -> _Token:
        return self.tokens[self.index]

    def fail(self, expected: str, token: _Token | None = None) -> FilterSyntaxError:
        token = token or self.token
        return FilterSyntaxError(
            f"Expected {expected}, found {token.describe()}", self.text, token.position
        )

    def take(self) -> _Token:
        token = self.token
        self.index += 1
        return token

    def keyword(self, *words: str) -> bool:
        """Consume the keyword if it is one of ``words``."""
        if self.token.kind == "keyword" and self.token.text in words:
            self.index += 1
            return True
        return False

    def punct(self, char: str) -> bool:
        if self.token.kind == "punct" and self.token.text == char:
            self.index += 1
            return True
        return False

    def parse(self) -> pc.Expression:
        if self.token.kind == "end":
            raise self.fail("a filter (e.g. symbol = 'AAPL')")
        expression = self.disjunct()
        if self.token.kind != "end":
            raise self.fail("'and', 'or' or the end of the filter")
        return expression

    def disjunct(self) -> pc.Expression:
        expression = self.conjunct()
        while self.keyword("or"):
            expression = expression | self.conjunct()
        return expression

    def conjunct(self) -> pc.Expression:
        expression = self.negation()
        while self.keyword("and"):
            expression = expression & self.negation()
        return expression

    def negation(self) -> pc.Expression:
        if self.keyword("not"):
            return ~self.negation()
        if self.punct("("):
            expression = self.disjunct()
            if not self.punct(")"):
                raise self.fail("')' or 'and' or 'or'")
            return expression
        if self.keyword("true"):
            return pc.scalar(True)
        if self.keyword("false"):
            return pc.scalar(False)
        return self.predicate()

    def column(self) -> str:
        token = self.token
        if token.kind == "name":
            self.index += 1
            return self.named(token.text)
        if token.kind == "quoted":
            self.index += 1
            name = token.text[1:-1].replace('""', '"')
            if not name:
                raise FilterSyntaxError("A quoted column name is empty", self.text, token.position)
            return self.named(name)
        if token.kind == "keyword":
            raise self.fail(f'a column (write "{token.text}" for a column of that name)')
        raise self.fail("a column, 'not', 'true', 'false' or '('")

    def named(self, name: str) -> str:
        if name not in self.columns:
            self.columns.append(name)
        return name

    def predicate(self) -> pc.Expression:
        name = self.column()
        field = pc.field(name)
        token = self.token
        if token.kind == "op":
            self.index += 1
            value = self.literal()
            return _compare(field, COMPARISONS[token.text], value)
        if self.keyword("is"):
            negated = self.keyword("not")
            if not self.keyword("null"):
                raise self.fail("'null'" if negated else "'null' or 'not null'")
            return field.is_valid() if negated else field.is_null()
        negated = self.keyword("not")
        if self.keyword("in"):
            member = field.isin(self.literal_list())
            return (~member & field.is_valid()) if negated else member
        if self.keyword("like"):
            like = pc.starts_with(field, pattern=self.prefix())
            return ~like if negated else like
        expected = "'in' or 'like'" if negated else "a comparison, 'in', 'is' or 'like'"
        raise self.fail(f"{expected} after the column {name!r}", token)

    def literal_list(self) -> pa.Array:
        start = self.token
        if not self.punct("("):
            raise self.fail("'(' starting the list of values")
        values = [self.literal()]
        while self.punct(","):
            values.append(self.literal())
        if not self.punct(")"):
            raise self.fail("',' or ')'")
        try:
            return _same_type(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            types = sorted({str(value.type) for value in values})
            raise FilterSyntaxError(
                f"The values of the list have types that do not mix ({', '.join(types)}): {exc}",
                self.text,
                start.position,
            ) from None

    def prefix(self) -> str:
        token = self.take()
        if token.kind != "string":
            raise self.fail("a string pattern such as 'AA%'", token)
        pattern = token.text[1:-1].replace("''", "'")
        body = pattern[:-1]
        if not pattern.endswith("%") or "%" in body or "_" in body:
            raise FilterSyntaxError(
                f"Only a prefix pattern is supported by like ('p%': literal text and one "
                f"trailing %, no _), got {quote_string(pattern)}",
                self.text,
                token.position,
            )
        return body

    def literal(self) -> pa.Scalar:
        token = self.take()
        if token.kind == "number":
            if re.fullmatch(r"-?\d+", token.text):
                value = int(token.text)
                if not -(2**63) <= value < 2**63:
                    raise FilterSyntaxError(
                        f"The integer {token.text} does not fit in 64 bits",
                        self.text,
                        token.position,
                    )
                return pa.scalar(value, pa.int64())
            return pa.scalar(float(token.text), pa.float64())
        if token.kind == "string":
            return pa.scalar(token.text[1:-1].replace("''", "'"), pa.string())
        if token.kind == "keyword" and token.text in ("true", "false"):
            return pa.scalar(token.text == "true", pa.bool_())
        if token.kind == "keyword" and token.text in ("timestamp", "date"):
            text_token = self.take()
            if text_token.kind != "string":
                example = f"{token.text} '2026-11-22'"
                raise self.fail(f"a string after {token.text} (e.g. {example})", text_token)
            return self.temporal(token.text, text_token)
        if token.kind == "keyword" and token.text == "null":
            raise FilterSyntaxError(
                "A comparison with null is never true: write 'is null' or 'is not null'",
                self.text,
                token.position,
            )
        raise self.fail(
            "a value (a number, 'text', true, false, timestamp '...', date '...')", token
        )

    def temporal(self, kind: str, token: _Token) -> pa.Scalar:
        text = token.text[1:-1].replace("''", "'")
        try:
            if kind == "date":
                return pa.scalar(datetime.date.fromisoformat(text), pa.date32())
            moment = datetime.datetime.fromisoformat(text)
        except ValueError:
            example = "2026-11-22" if kind == "date" else "2026-11-22 10:00:00+00:00"
            raise FilterSyntaxError(
                f"{text!r} is not an ISO {kind} (e.g. {kind} '{example}')",
                self.text,
                token.position,
            ) from None
        if moment.tzinfo is None:
            return pa.scalar(moment, pa.timestamp("us"))
        utc = moment.astimezone(datetime.UTC)
        return pa.scalar(utc, pa.timestamp("us", tz="UTC"))


def _compare(field: pc.Expression, op: str, value: pa.Scalar) -> pc.Expression:
    literal = pc.scalar(value)
    if op == "==":
        return field == literal
    if op == "!=":
        return field != literal
    if op == "<":
        return field < literal
    if op == "<=":
        return field <= literal
    if op == ">":
        return field > literal
    return field >= literal


def _same_type(values: list[pa.Scalar]) -> pa.Array:
    """One array of the values (ints and floats mix as float64)."""
    types = {value.type for value in values}
    if types == {pa.int64(), pa.float64()}:
        types = {pa.float64()}
    if len(types) > 1:
        raise pa.ArrowTypeError("a list holds values of one type")
    python = [value.as_py() for value in values]
    if types == {pa.float64()}:  # is_in tells -0.0 from 0.0: list both, as = does
        python += [-float(value) for value in python if value == 0]
    return pa.array(python, types.pop())


def parse_filter_text(text: str) -> pc.Expression:
    """Parse filter text (the grammar of this module).

    Args:
        text: e.g. ``"symbol in ('AAPL', 'MSFT') and ts >= timestamp '2026-11-22 10:00Z'"``.

    Returns:
        The filter as a ``pyarrow.compute.Expression``.

    Raises:
        FilterSyntaxError: the text is not in the grammar (the message says where and why).
    """
    return _Parser(text).parse()


def parse_filter(text: str) -> tuple[pc.Expression, tuple[str, ...]]:
    """Parse filter text, and say which columns it names.

    Returns:
        The expression (as :func:`parse_filter_text`) and the columns it names, in order of
        first appearance.

    Raises:
        FilterSyntaxError: the text is not in the grammar.
    """
    parser = _Parser(text)
    expression = parser.parse()
    return expression, tuple(parser.columns)
