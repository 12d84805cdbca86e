"""What is known about the rows of N containers (row groups, pages, fragments, segments,
partitions), per column, as arrays over the containers.

Bound semantics (the contract every producer keeps): for every non-null, non-NaN value ``v`` of
container ``i``, ``min[i] <= v <= max[i]`` (floats numerically: ``-0.0 == 0.0``; NaN never in a
bound; a NaN bound is ignored). ``min_exact[i]`` says ``min[i]`` is a value of the container (not
a truncated or widened bound); inexact bounds never prove that a value is present. Unknown
anything (``None``, a null entry, an absent column) means "might be anything": pruning keeps the
container. ``value_sets[i]`` holds (at least) every distinct non-null value of container ``i``;
``might_contain(literals)`` answers a bloom filter (False: the literal is surely absent).
String bounds may be given as binary (a truncated bound need not be valid UTF-8): they compare
as UTF-8 bytes either way. Arrays of the wrong length raise ConfigError when pruning.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

__all__ = ["ColumnStats", "Containers"]


@dataclass(frozen=True)
class ColumnStats:
    """Statistics of one column over N containers (module docstring: the semantics).

    Attributes:
        num_values: int64 per container: rows including nulls (None: unknown).
        null_count: int64 array; a null entry is unknown (None: unknown for all).
        min: the column's value type; a null entry is unknown (or the container is all null).
        max: as ``min``.
        min_exact: bool per container, True where ``min`` is a value present (None: all exact).
        max_exact: as ``min_exact``.
        nan_count: floats: int64 array, a null entry unknown (None: unknown for all).
        value_sets: per container, an array holding every distinct non-null value, or None.
        might_contain: bloom filters: ``might_contain(literals)`` is an (N, L) bool array,
            False where literal ``j`` is surely absent from container ``i``.
    """

    num_values: npt.NDArray[np.int64] | None = None
    null_count: pa.Array | None = None
    min: pa.Array | None = None
    max: pa.Array | None = None
    min_exact: npt.NDArray[np.bool_] | None = None
    max_exact: npt.NDArray[np.bool_] | None = None
    nan_count: pa.Array | None = None
    value_sets: Sequence[pa.Array | None] | None = None
    might_contain: Callable[[pa.Array], npt.NDArray[np.bool_]] | None = None


@dataclass(frozen=True)
class Containers:
    """N containers and what is known of their columns (an absent column: nothing known)."""

    num_containers: int
    columns: Mapping[str, ColumnStats]
