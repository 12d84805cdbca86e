"""Value comparison for interop tests: exact, NaN-aware, tolerant of reader type choices."""

from __future__ import annotations

import contextlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def _plain(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks else pa.array([], array.type)
    if pa.types.is_dictionary(array.type):
        array = array.cast(array.type.value_type)
    return array


def same_values(
    expected: pa.Array | pa.ChunkedArray, actual: pa.Array | pa.ChunkedArray
) -> str | None:
    """None when equal (types may differ if values cast losslessly), else a description."""
    expected, actual = _plain(expected), _plain(actual)
    if len(expected) != len(actual):
        return f"length {len(actual)} != {len(expected)}"
    if pa.types.is_nested(expected.type) or pa.types.is_nested(actual.type):
        return _same_nested(expected, actual)
    if actual.type != expected.type:
        try:
            actual = actual.cast(expected.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            return f"type {actual.type} does not cast to {expected.type}: {exc}"
    if not expected.is_valid().equals(actual.is_valid()):
        return "null positions differ"
    if pa.types.is_floating(expected.type):
        e = expected.fill_null(0).to_numpy(zero_copy_only=False)
        a = actual.fill_null(0).to_numpy(zero_copy_only=False)
        width = {2: np.uint16, 4: np.uint32, 8: np.uint64}[e.dtype.itemsize]
        nan_e, nan_a = np.isnan(e), np.isnan(a)
        if not np.array_equal(nan_e, nan_a):
            return "NaN positions differ"
        if not np.array_equal(e[~nan_e].view(width), a[~nan_a].view(width)):
            return "float bit patterns differ"
        return None
    if len(expected) and not pc.all(pc.equal(expected, actual).fill_null(True)).as_py():
        return "values differ"
    return None


def _same_nested(expected: pa.Array, actual: pa.Array) -> str | None:
    """Nested values: equal after casting to the expected type (list item and map field
    names may differ), else equal as Python values (dictionaries decoded)."""
    if not actual.type.equals(expected.type):
        with contextlib.suppress(pa.ArrowInvalid, pa.ArrowNotImplementedError):
            actual = actual.cast(expected.type)
    if actual.type.equals(expected.type) and actual.equals(expected):
        return None
    if actual.to_pylist() == expected.to_pylist():
        return None
    return "nested values differ"


def same_tables(expected: pa.Table, actual: pa.Table) -> list[str]:
    """Per-column differences (empty when the tables hold the same values)."""
    problems = []
    if actual.column_names != expected.column_names:
        return [f"columns {actual.column_names} != {expected.column_names}"]
    for name in expected.column_names:
        diff = same_values(expected[name], actual[name])
        if diff:
            problems.append(f"{name}: {diff}")
    return problems
