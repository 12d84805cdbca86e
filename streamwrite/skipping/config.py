"""A table's skipping configuration: which index kinds cover which columns.

Given as ``skipping={"symbol": ["valuelist", "bloom"], "price": ["minmax"],
"ts": ["time_index"]}``; a kind is a name or ``(name, {params})``::

    kind        where             params (defaults)                 column types
    minmax      store (xskipper)  -                                 ints, floats, decimals, strings,
                                                                    binaries, bool, date, timestamp
    valuelist   store (xskipper)  ndv 20000, fpp 0.001 (its lookup  as minmax
                                  slices, not the Parquet column)
    bloom       store (xskipper)  ndv 100000, fpp 0.01 (xskipper's) ints, strings, binaries
    distinct    embedded index    passed on to the table's writer   any primitive
    time_index  embedded index    passed on                         timestamps, dates, ints

The JSON form kept in ``_txn`` (:meth:`SkippingConfig.to_json`) is
``{"<column>": [["<kind>", {params}], ...], ...}`` with every default filled in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from streamwrite.errors import ConfigError

__all__ = [
    "EMBEDDED_KINDS",
    "STORE_KINDS",
    "IndexSpec",
    "SkippingConfig",
    "canonical_type",
]

STORE_KINDS = ("minmax", "valuelist", "bloom")
"""Kinds kept in the skipping store."""
EMBEDDED_KINDS = ("distinct", "time_index")
"""Kinds written into each file's embedded index (by the table's writer)."""
_DEFAULTS: dict[str, dict[str, Any]] = {
    "minmax": {},
    "valuelist": {"ndv": 20000, "fpp": 0.001},
    "bloom": {"ndv": 100000, "fpp": 0.01},
    "distinct": {},
    "time_index": {},
}
_XSKIPPER_NAMES = {"minmax": "minmax", "valuelist": "valuelist", "bloom": "bloomfilter"}


def canonical_type(dtype: pa.DataType) -> pa.DataType:
    """The type a column's values are compared in (dictionaries and extensions unwrapped).

    Returns:
        The value type.
    """
    if pa.types.is_dictionary(dtype):
        return canonical_type(dtype.value_type)
    if isinstance(dtype, pa.BaseExtensionType):
        return canonical_type(dtype.storage_type)
    return dtype


def _is_stringish(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_string_view(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    )


def _orderable(t: pa.DataType) -> bool:
    return (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_boolean(t)
        or pa.types.is_date(t)
        or pa.types.is_timestamp(t)
        or _is_stringish(t)
    )


def _supported(kind: str, t: pa.DataType) -> bool:
    if kind == "bloom":
        return bool(pa.types.is_integer(t) and not pa.types.is_uint64(t)) or _is_stringish(t)
    if kind in ("minmax", "valuelist"):
        return _orderable(t) and not pa.types.is_float16(t)
    if kind == "time_index":
        return bool(pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_integer(t))
    return not bool(pa.types.is_nested(t))


@dataclass(frozen=True)
class IndexSpec:
    """One index: a kind over one column, with its parameters.

    Attributes:
        column: The indexed column.
        kind: One of :data:`STORE_KINDS` or :data:`EMBEDDED_KINDS`.
        params: The kind's parameters, defaults filled in.
    """

    column: str
    kind: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ndv(self) -> int:
        """The ``ndv`` parameter (bloom, valuelist)."""
        return int(self.params["ndv"])

    @property
    def fpp(self) -> float:
        """The ``fpp`` parameter (bloom, valuelist)."""
        return float(self.params["fpp"])

    @property
    def xskipper_name(self) -> str:
        """The xskipper index name (``minmax``, ``valuelist``, ``bloomfilter``)."""
        return _XSKIPPER_NAMES[self.kind]

    @property
    def key(self) -> str:
        """A name unique in the config, used for the store's hidden files (``col/kind``)."""
        return f"{self.column}/{self.kind}"


def _params(kind: str, given: object, where: str) -> dict[str, Any]:
    if given is None:
        given = {}
    if not isinstance(given, Mapping):
        raise ConfigError(f"The parameters of {where} must be a mapping, not {given!r}.")
    params = dict(_DEFAULTS[kind])
    if kind in ("bloom", "valuelist"):
        unknown = sorted(set(given) - {"ndv", "fpp"})
        if unknown:
            raise ConfigError(f"{where} takes parameters ndv and fpp, not {unknown}.")
        params.update(given)
        ndv, fpp = params["ndv"], params["fpp"]
        if not isinstance(ndv, int) or isinstance(ndv, bool) or ndv <= 0:
            raise ConfigError(f"{where}: ndv must be a positive integer, not {ndv!r}.")
        if isinstance(fpp, bool) or not isinstance(fpp, int | float) or not 0 < fpp < 1:
            raise ConfigError(f"{where}: fpp must be a number in (0, 1), not {fpp!r}.")
        params["fpp"] = float(fpp)
    elif kind == "minmax":
        if given:
            raise ConfigError(f"{where} takes no parameters, got {dict(given)}.")
    else:
        params.update(given)
    return params


@dataclass(frozen=True)
class SkippingConfig:
    """A table's indexes (parse with :meth:`parse`).

    Attributes:
        indexes: Every index, in the order given (columns in order, kinds in order).
    """

    indexes: tuple[IndexSpec, ...]

    @classmethod
    def parse(
        cls, spec: SkippingConfig | Mapping[str, Any], schema: pa.Schema | None = None
    ) -> SkippingConfig:
        """Parse ``{"column": ["kind", ("kind", {params})...]}`` (or its JSON form).

        Args:
            spec: The mapping, or a config (checked against ``schema`` and returned).
            schema: The table's schema; when given, columns and types are checked.

        Returns:
            The config.

        Raises:
            ConfigError: An unknown kind, bad parameters, a kind given twice for a column, a
                column not in ``schema``, or a type the kind cannot index (a bloom filter on a
                float column...).
        """
        if isinstance(spec, SkippingConfig):
            config = spec
        else:
            if not isinstance(spec, Mapping):
                raise ConfigError(
                    f"skipping must map column names to lists of index kinds, not {spec!r}."
                )
            indexes: list[IndexSpec] = []
            for column, kinds in spec.items():
                if not isinstance(column, str) or not column:
                    raise ConfigError(f"skipping has a column name {column!r}: use a string.")
                if isinstance(kinds, str) or not isinstance(kinds, Sequence) or not kinds:
                    raise ConfigError(
                        f"skipping[{column!r}] must be a non-empty list of index kinds, "
                        f"not {kinds!r}."
                    )
                seen: set[str] = set()
                for item in kinds:
                    kind, given = (item, None) if isinstance(item, str) else _pair(item, column)
                    where = f"Index {kind!r} on column {column!r}"
                    if kind not in _DEFAULTS:
                        raise ConfigError(
                            f"skipping[{column!r}] names index kind {kind!r}, which is not one "
                            f"of {', '.join((*STORE_KINDS, *EMBEDDED_KINDS))}."
                        )
                    if kind in seen:
                        raise ConfigError(f"{where} is given twice.")
                    seen.add(kind)
                    indexes.append(IndexSpec(column, kind, _params(kind, given, where)))
            config = cls(tuple(indexes))
        if schema is not None:
            config.check(schema)
        return config

    def check(self, schema: pa.Schema) -> None:
        """Check every index's column exists in ``schema`` with a type its kind can index.

        Raises:
            ConfigError: A missing column or an unsupported type.
        """
        for index in self.indexes:
            if index.column not in schema.names:
                raise ConfigError(
                    f"skipping names column {index.column!r}, which the table does not have "
                    f"(its columns: {schema.names})."
                )
            dtype = canonical_type(schema.field(index.column).type)
            if not _supported(index.kind, dtype):
                raise ConfigError(
                    f"Index {index.kind!r} cannot cover column {index.column!r} of type "
                    f"{dtype}"
                    + (
                        ": Spark's bloom filter hashes integers and strings/binaries only."
                        if index.kind == "bloom"
                        else "."
                    )
                )

    @property
    def store_indexes(self) -> tuple[IndexSpec, ...]:
        """The indexes kept in the skipping store."""
        return tuple(i for i in self.indexes if i.kind in STORE_KINDS)

    @property
    def embedded(self) -> dict[str, list[str | tuple[str, dict[str, Any]]]]:
        """The embedded-index kinds, in the writer's option form (``{"ts": ["time_index"]}``;
        a kind with parameters as ``(kind, params)``)."""
        out: dict[str, list[str | tuple[str, dict[str, Any]]]] = {}
        for i in self.indexes:
            if i.kind in EMBEDDED_KINDS:
                out.setdefault(i.column, []).append(
                    (i.kind, dict(i.params)) if i.params else i.kind
                )
        return out

    @property
    def columns(self) -> tuple[str, ...]:
        """Indexed columns, in order, once each."""
        return tuple(dict.fromkeys(i.column for i in self.indexes))

    def to_json(self) -> dict[str, list[list[Any]]]:
        """Returns: the JSON form (every parameter explicit); :meth:`parse` reads it back."""
        out: dict[str, list[list[Any]]] = {}
        for i in self.indexes:
            out.setdefault(i.column, []).append([i.kind, dict(i.params)])
        return out


def _pair(item: object, column: str) -> tuple[str, object]:
    if (
        isinstance(item, Sequence)
        and not isinstance(item, str | bytes)
        and len(item) == 2
        and isinstance(item[0], str)
    ):
        return item[0], item[1]
    raise ConfigError(
        f"skipping[{column!r}] holds {item!r}: an index is a kind name or (kind, {{params}})."
    )
