"""Filters in, filters out: pyarrow's DNF tuples and ``pyarrow.compute.Expression`` to the model,
and the model back to the ``pyarrow.compute.Expression`` applied to the rows read.

``to_arrow`` is the truth: a pruned read equals the full read filtered with it. Its rows keep the
three-valued rules of :mod:`streamwrite.predicate.expr` (a NULL row is dropped by a filter, and
``Not`` keeps NULL). A ``pyarrow.compute.Expression`` is decoded from its serialized form (an
Arrow IPC file whose schema metadata holds the call tree in pre-order; :mod:`._ipc`)::

    node    = "literal" idx | "field_ref" name | "nested_field_ref" n ("field_ref" name){n}
            | "call" fname node* ["options" idx] "end" fname

``idx`` is a column of the file's one-row table. Functions understood: equal, not_equal, less,
less_equal, greater, greater_equal (a field against a literal, either side; the operator is
swapped when the literal is on the left), is_in (null_matching_behavior MATCH or SKIP), is_null
(``nan_is_null=True`` adds ``IsNan``), is_valid, is_nan, invert, and_kleene, or_kleene, and, or,
and_not(_kleene), starts_with (``ignore_case=False``), and a cast of a literal. Anything else
(another function, a comparison of two columns, a cast of a column, a nested field by index)
raises ConfigError naming it: a conjunct is never dropped silently. A nested field by names,
``pc.field("s", "a")``, is the column ``s.a`` (a struct field; :mod:`.fields`), as the DNF
term ``("s.a", ">", 3)``.

Deliberate difference from Arrow: ``IsIn`` compares floats numerically, so ``-0.0`` is in
``[0.0]`` (``to_arrow`` puts both zeros in the value set); Arrow's ``is_in`` hashes the bits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from streamwrite.errors import ConfigError
from streamwrite.predicate._ipc import schema_metadata_pairs
from streamwrite.predicate.expr import (
    COMPARE_OPS,
    And,
    Compare,
    Const,
    Expr,
    IsIn,
    IsNan,
    IsNull,
    Not,
    Or,
    StartsWith,
)
from streamwrite.predicate.fields import field_ref

__all__ = ["parse_filters", "to_arrow"]

_DNF_OPS = {"=": "==", "==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_ARROW_COMPARE = {
    "equal": "==",
    "not_equal": "!=",
    "less": "<",
    "less_equal": "<=",
    "greater": ">",
    "greater_equal": ">=",
}
_SWAPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NULL_MATCH, _NULL_SKIP = 0, 1


def parse_filters(filters: object) -> Expr:
    """The expression of ``filters``.

    Args:
        filters: pyarrow's DNF (``[("x", "<", 3), ...]`` = AND, ``[[...], [...]]`` = OR of ANDs;
            ops ``= == != < <= > >= in "not in"``), a ``pyarrow.compute.Expression``, or an
            :data:`Expr` (checked and returned).

    Returns:
        The :data:`Expr` (unbound: literals as given).

    Raises:
        ConfigError: the filter has a form, function, operator or operand the model cannot
            represent exactly (named in the message).
    """
    if isinstance(filters, pc.Expression):
        return _from_arrow(filters)
    if isinstance(filters, Compare | IsIn | IsNull | IsNan | StartsWith | And | Or | Not | Const):
        _check(filters)
        return filters
    if isinstance(filters, list | tuple) and filters:
        if all(isinstance(f, list | tuple) and f and not isinstance(f[0], str) for f in filters):
            return _flat(Or, tuple(_flat(And, tuple(map(_dnf_term, g))) for g in filters))
        return _flat(And, tuple(_dnf_term(t) for t in filters))
    raise ConfigError(
        f"Filters {filters!r} are neither pyarrow DNF tuples (a non-empty list), a "
        "pyarrow.compute.Expression nor a streamwrite.predicate expression."
    )


def _flat(kind: type[And] | type[Or], children: tuple[Expr, ...]) -> Expr:
    """One child stands for itself (as pyarrow's ``filters_to_expression`` does)."""
    return children[0] if len(children) == 1 else kind(children)


def _dnf_term(term: object) -> Expr:
    if not (isinstance(term, list | tuple) and len(term) == 3 and isinstance(term[0], str)):
        raise ConfigError(
            f"The DNF filter term {term!r} is not a (column name, op, value) tuple "
            "(a struct field is named by its dotted path, 's.a')."
        )
    column, op, value = term
    if op in _DNF_OPS:
        return Compare(column, _DNF_OPS[op], value)
    if op in ("in", "not in"):
        if isinstance(value, pa.Array | pa.ChunkedArray):
            value = value.to_pylist()
        elif hasattr(value, "tolist") and not isinstance(value, str | bytes):
            value = value.tolist()  # a numpy array
        if isinstance(value, str | bytes) or not isinstance(value, Sequence | set | frozenset):
            raise ConfigError(
                f"The DNF filter term {term!r} needs a collection of values for {op!r}."
            )
        found = IsIn(column, tuple(value))
        return found if op == "in" else Not(found)
    raise ConfigError(
        f"The DNF filter term {term!r} has operator {op!r}; supported: "
        f"{', '.join(repr(o) for o in [*_DNF_OPS, 'in', 'not in'])}."
    )


def _check(expr: Expr) -> None:
    if isinstance(expr, Compare) and expr.op not in COMPARE_OPS:
        raise ConfigError(f"Compare operator {expr.op!r} is not one of {COMPARE_OPS}.")
    if isinstance(expr, StartsWith) and not isinstance(expr.prefix, str | bytes):
        raise ConfigError(f"StartsWith prefix {expr.prefix!r} is neither str nor bytes.")
    if isinstance(expr, And | Or):
        for child in expr.children:
            _check(child)
    elif isinstance(expr, Not):
        _check(expr.child)


# --- pyarrow.compute.Expression ---------------------------------------------------------------


class _Field:
    def __init__(self, name: str) -> None:
        self.name = name


class _Call:
    def __init__(self, name: str, args: list[object], options: pa.StructScalar | None) -> None:
        self.name, self.args, self.options = name, args, options


def _from_arrow(expression: pc.Expression) -> Expr:
    try:
        _, (buffer,) = expression.__reduce__()
    except pa.ArrowNotImplementedError as exc:  # pc.field("s", 0): a nested field by index
        raise ConfigError(
            f"The expression {expression} names a nested field by index, which Arrow cannot "
            f"serialize ({exc}); name struct fields by name: pc.field('s', 'a')."
        ) from None
    data = buffer.to_pybytes() if isinstance(buffer, pa.Buffer) else bytes(buffer)
    pairs = schema_metadata_pairs(data)
    table = pa.ipc.open_file(pa.BufferReader(data)).read_all()
    text = str(expression)
    position = 0

    def value(index: str) -> pa.Scalar:
        if not index.isdigit() or int(index) >= table.num_columns:
            raise ConfigError(f"The expression {text} refers to a missing literal {index!r}.")
        return table.column(int(index))[0]

    def node() -> object:
        nonlocal position
        if position >= len(pairs):
            raise ConfigError(f"The serialized expression {text} ends inside a call.")
        key, val = pairs[position]
        position += 1
        if key == "literal":
            return value(val)
        if key == "field_ref":
            return _Field(val)
        if key == "nested_field_ref":  # pc.field("s", "a"): the struct field s.a
            names = []
            for _ in range(int(val) if val.isdigit() else 0):
                inner = node()
                if not isinstance(inner, _Field):
                    break
                names.append(inner.name)
            else:
                if names:
                    return _Field(".".join(names))
            raise ConfigError(
                f"The expression {text} refers to a nested field by something other than "
                "names (name struct fields: pc.field('s', 'a'))."
            )
        if key != "call":
            raise ConfigError(f"The serialized expression {text} has an unexpected {key!r}.")
        args: list[object] = []
        options = None
        while position < len(pairs) and pairs[position][0] not in ("end", "options"):
            args.append(node())
        if position < len(pairs) and pairs[position][0] == "options":
            options = value(pairs[position][1])
            position += 1
        if position >= len(pairs) or pairs[position] != ("end", val):
            raise ConfigError(f"The serialized expression {text} does not close call {val!r}.")
        position += 1
        return _Call(val, args, options)

    root = node()
    if position != len(pairs):
        raise ConfigError(f"The serialized expression {text} has trailing entries.")
    return _convert(root, text)


def _literal(arg: object, text: str) -> pa.Scalar | None:
    """``arg`` as a literal scalar (a cast of a literal is evaluated), None if not a literal."""
    if isinstance(arg, pa.Scalar):
        return arg
    if isinstance(arg, _Call) and arg.name == "cast" and len(arg.args) == 1:
        inner = _literal(arg.args[0], text)
        if inner is None or arg.options is None:
            return None
        to_type = arg.options.type.field("to_type").type
        flags = {k: bool(v.as_py()) for k, v in arg.options.items() if k.startswith("allow_")}
        try:
            return pc.cast(inner, options=pc.CastOptions(to_type, **flags))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise ConfigError(f"The literal cast in {text} fails: {exc}") from exc
    return None


def _convert(item: object, text: str) -> Expr:
    if isinstance(item, _Field):
        return Compare(item.name, "==", pa.scalar(True))
    literal = _literal(item, text)
    if literal is not None:
        if not pa.types.is_boolean(literal.type) or not literal.is_valid:
            raise ConfigError(f"The literal {literal} in {text} is not a boolean condition.")
        return Const(bool(literal.as_py()))
    if not isinstance(item, _Call):
        raise ConfigError(f"The expression {text} holds {item!r}, not a condition.")
    name, args, options = item.name, item.args, item.options
    if name in _ARROW_COMPARE and len(args) == 2:
        op = _ARROW_COMPARE[name]
        left, right = args
        if isinstance(right, _Field) and not isinstance(left, _Field):
            left, right, op = right, left, _SWAPPED[op]
        literal = _literal(right, text)
        if isinstance(left, _Field) and literal is not None:
            return Compare(left.name, op, literal)
        raise ConfigError(
            f"The comparison {name} in {text} is not between one column and a literal "
            "(a comparison of two columns or of a computed value is not supported)."
        )
    if name in ("and_kleene", "or_kleene", "and", "or", "and_", "or_") and len(args) == 2:
        children = (_convert(args[0], text), _convert(args[1], text))
        kleene = name.endswith("kleene")
        return And(children, kleene) if name.startswith("and") else Or(children, kleene)
    if name in ("and_not", "and_not_kleene") and len(args) == 2:
        children = (_convert(args[0], text), Not(_convert(args[1], text)))
        return And(children, name.endswith("kleene"))
    if name == "invert" and len(args) == 1:
        return Not(_convert(args[0], text))
    if len(args) == 1 and isinstance(args[0], _Field):
        column = args[0].name
        if name == "is_null":
            nan_is_null = options is not None and bool(options["nan_is_null"].as_py())
            return Or((IsNull(column), IsNan(column))) if nan_is_null else IsNull(column)
        if name == "is_valid":
            return Not(IsNull(column))
        if name == "is_nan":
            return IsNan(column)
        if name == "is_in" and options is not None:
            return _is_in(column, options, text)
        if name == "starts_with" and options is not None:
            if bool(options["ignore_case"].as_py()):
                raise ConfigError(f"starts_with with ignore_case=True in {text} is not supported.")
            return StartsWith(column, str(options["pattern"].as_py()))
    raise ConfigError(
        f"The function {name!r} ({len(args)} arguments) in the filter {text} is not supported: "
        "use comparisons, is_in, is_null, is_valid, is_nan, starts_with, and/or/invert."
    )


def _is_in(column: str, options: pa.StructScalar, text: str) -> Expr:
    behavior = int(options["null_matching_behavior"].as_py())
    values = cast(pa.ListScalar, options["value_set"]).values
    if behavior == _NULL_SKIP:
        values = values.drop_null()
    elif behavior != _NULL_MATCH:
        raise ConfigError(
            f"is_in with null_matching_behavior {behavior} in {text} is not supported "
            "(MATCH and SKIP are)."
        )
    return IsIn(column, tuple(values[i] for i in range(len(values))))


# --- back to Arrow ----------------------------------------------------------------------------


def _scalar(value: object) -> Any:
    if isinstance(value, pa.Scalar):
        return value
    try:
        return pa.scalar(value)
    except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise ConfigError(
            f"The filter literal {value!r} has no Arrow type of its own ({exc}); bind the "
            "filter to the schema first, which compares it with the column's type."
        ) from exc


def _value_set(values: tuple[object, ...]) -> pa.Array:
    scalars = [_scalar(v) for v in values]
    types = {s.type for s in scalars if not pa.types.is_null(s.type)}
    target = types.pop() if len(types) == 1 else None
    try:
        if target is not None and all(s.type == target or not s.is_valid for s in scalars):
            # from the scalars themselves: as_py() of a nanosecond timestamp needs pandas
            array = pa.array([s if s.type == target else None for s in scalars], type=target)
        else:
            array = pa.array([s.as_py() for s in scalars], type=target)
    except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise ConfigError(
            f"The IN values {values!r} do not make one Arrow array ({exc}); bind the filter "
            "to the schema first."
        ) from exc
    if pa.types.is_floating(array.type):
        floats = [s.as_py() for s in scalars]
        zero = [f for f in floats if f is not None and f == 0.0]
        if zero:
            extra = [
                z
                for z in (0.0, -0.0)
                if all(math.copysign(1, z) != math.copysign(1, f) for f in zero)
            ]
            array = pa.concat_arrays([array, pa.array(extra, type=array.type)])
    return array


def _prefix_expr(field: pc.Expression, prefix: str | bytes) -> pc.Expression:
    """``field`` starts with ``prefix``; the cast makes it work on dictionary columns too."""
    if isinstance(prefix, str):
        return pc.starts_with(field.cast(pa.large_string()), pattern=prefix)
    sliced = pc.binary_slice(field.cast(pa.large_binary()), 0, len(prefix))
    return pc.equal(sliced, pa.scalar(prefix, pa.large_binary()))


def to_arrow(expr: Expr, schema: pa.Schema | None = None) -> pc.Expression:
    """The ``pyarrow.compute.Expression`` that filters rows exactly as ``expr`` says.

    Args:
        expr: The filter.
        schema: The schema of the rows it filters: a dotted column that is no top-level
            column then refers to a struct field (``s.a`` -> ``pc.field("s", "a")``). Without
            it every column name is one top-level column.

    Returns:
        An expression for ``Table.filter`` / ``Dataset.to_table(filter=)``: the truth a pruned
        read must equal.
    """
    if isinstance(expr, Not):
        return ~to_arrow(expr.child, schema)
    if isinstance(expr, And | Or):
        return _combine(expr, schema)
    if isinstance(expr, Const):
        return pc.scalar(bool(expr.value))
    ref = field_ref(expr.column, schema)
    if isinstance(expr, Compare):
        field, value = ref, _scalar(expr.value)
        ops = {
            "==": pc.equal,
            "!=": pc.not_equal,
            "<": pc.less,
            "<=": pc.less_equal,
            ">": pc.greater,
            ">=": pc.greater_equal,
        }
        return ops[expr.op](field, value)
    if isinstance(expr, IsIn):
        if not expr.values:
            return pc.scalar(False)
        return ref.isin(_value_set(expr.values))
    if isinstance(expr, IsNull):
        return ref.is_null(nan_is_null=False)
    if isinstance(expr, IsNan):
        return ref.is_nan()
    assert isinstance(expr, StartsWith)
    return _prefix_expr(ref, expr.prefix)


def _combine(expr: And | Or, schema: pa.Schema | None) -> pc.Expression:
    if not expr.children:
        return pc.scalar(isinstance(expr, And))
    if expr.kleene:
        combine = pc.and_kleene if isinstance(expr, And) else pc.or_kleene
    else:
        name = "and" if isinstance(expr, And) else "or"

        def combine(a: pc.Expression, b: pc.Expression) -> pc.Expression:
            # pc.and_ / pc.or_ on expressions call "and_" / "or_", which Arrow does not know
            return pc.Expression._call(name, [a, b])

    result = to_arrow(expr.children[0], schema)
    for child in expr.children[1:]:
        result = combine(result, to_arrow(child, schema))
    return result
