"""The ``--skipping`` text of ``streamwrite index build``: which index kinds cover which
columns, in the form ``open_table(skipping=)`` takes.

Two spellings, which may be combined (a column given twice is an error)::

    --skipping '{"symbol": ["valuelist", "bloom"], "order_id": [["bloom", {"fpp": 0.001}]]}'
    symbol=valuelist,bloom  price=minmax  order_id=bloom:fpp=0.001:ndv=200000  ts=time_index

A ``COLUMN=KINDS`` item names one column (up to the first ``=``) and its kinds separated by
``,``; a kind may carry parameters ``:NAME=VALUE`` (numbers, else text). Which kinds exist and
which column types each takes is the table's to check (``SkippingConfig``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from streamwrite.errors import ConfigError

__all__ = ["parse_skipping"]

_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")


def _value(text: str) -> Any:
    if _NUMBER.fullmatch(text):
        return float(text) if any(c in text for c in ".eE") else int(text)
    return text


def _kind(text: str, item: str) -> str | list[Any]:
    name, *params = text.split(":")
    if not name:
        raise ConfigError(f"The skipping item {item!r} has an empty index kind.")
    if not params:
        return name
    values: dict[str, Any] = {}
    for param in params:
        key, equals, value = param.partition("=")
        if not key or not equals or not value:
            raise ConfigError(
                f"The parameter {param!r} of {name!r} in {item!r} is not NAME=VALUE "
                "(e.g. bloom:fpp=0.01:ndv=100000)."
            )
        values[key] = _value(value)
    return [name, values]


def parse_skipping(json_text: str | None, items: Sequence[str]) -> dict[str, list[Any]]:
    """The skipping configuration of ``--skipping JSON`` and ``COLUMN=KINDS`` items.

    Returns:
        ``{column: [kind or [kind, {params}], ...]}``.

    Raises:
        ConfigError: invalid JSON, an item that is not ``COLUMN=KINDS``, a column given
            twice, or nothing given.
    """
    config: dict[str, list[Any]] = {}
    if json_text is not None:
        try:
            loaded = json.loads(json_text)
        except ValueError as exc:
            raise ConfigError(f"--skipping is not valid JSON ({exc}): {json_text!r}.") from None
        if not isinstance(loaded, dict) or not all(
            isinstance(kinds, list) for kinds in loaded.values()
        ):
            raise ConfigError(
                "--skipping must be a JSON object of column -> list of kinds, e.g. "
                '\'{"symbol": ["valuelist", "bloom"]}\', got ' + repr(json_text) + "."
            )
        config.update({str(column): list(kinds) for column, kinds in loaded.items()})
    for item in items:
        column, equals, kinds = item.partition("=")
        if not column or not equals or not kinds:
            raise ConfigError(
                f"{item!r} is not COLUMN=KIND[,KIND...] (e.g. symbol=valuelist,bloom)."
            )
        if column in config:
            raise ConfigError(f"The column {column!r} is given twice (in {item!r}).")
        config[column] = [_kind(kind, item) for kind in kinds.split(",")]
    if not config:
        raise ConfigError(
            "No index given: use --skipping JSON or COLUMN=KINDS items "
            "(e.g. symbol=valuelist,bloom price=minmax)."
        )
    return config
