"""Filter expressions, their parsing and binding, three-valued pruning of containers, row ranges.

The contract of issue 14 (``/work/scratch/skipping_design.md`` section 1)::

    expr = bind(parse_filters(filters), schema)   # DNF tuples | pc.Expression | Expr
    keep = prune(expr, containers)                # bool per container: might hold a TRUE row
    rows = prune_fragments(expr, pages, num_rows) # RowRanges of the page fragments kept
    table.filter(to_arrow(expr))                  # the truth every pruned read equals

Three-valued rules: a row is TRUE, FALSE or NULL (:mod:`streamwrite.predicate.expr`); pruning
tracks, per node and container, whether a TRUE row and a FALSE row might exist
(:mod:`streamwrite.predicate.prune`); anything unknown means "might".
"""

from __future__ import annotations

from streamwrite.predicate.bind import bind
from streamwrite.predicate.expr import (
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
    columns,
    describe,
)
from streamwrite.predicate.fields import arrow_path
from streamwrite.predicate.parse import parse_filters, to_arrow
from streamwrite.predicate.prune import prune
from streamwrite.predicate.ranges import RowRanges, prune_fragments
from streamwrite.predicate.stats import ColumnStats, Containers

__all__ = [
    "And",
    "ColumnStats",
    "Compare",
    "Const",
    "Containers",
    "Expr",
    "IsIn",
    "IsNan",
    "IsNull",
    "Not",
    "Or",
    "RowRanges",
    "StartsWith",
    "arrow_path",
    "bind",
    "columns",
    "describe",
    "parse_filters",
    "prune",
    "prune_fragments",
    "to_arrow",
]
