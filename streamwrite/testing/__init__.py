"""streamwrite.testing: reference data, hypothesis strategies, reusable stateful machines.

Exported here (imported on first access): :func:`reference_table` and :class:`ManualClock`,
which need nothing beyond the library. The hypothesis parts are submodules
(``pip install 'streamwrite[testing]'``): :mod:`streamwrite.testing.strategies` (Arrow types,
arrays, schemas, tables, record batches, write options, Parquet physical values) and
:mod:`streamwrite.testing.live_machine` (the stateful machine of a live file with failures
injected between its actions). The library itself never imports this package.
"""

from __future__ import annotations

from importlib import import_module as _import_module
from types import FunctionType as _FunctionType
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "ManualClock": "streamwrite.testing.clock",
    "reference_table": "streamwrite.testing.data",
}
"""Each public name and the private module that defines (or re-exports) it."""

__all__ = ("ManualClock", "reference_table")

if TYPE_CHECKING:
    from streamwrite.testing.clock import ManualClock
    from streamwrite.testing.data import reference_table


def __getattr__(name: str) -> Any:
    """Import a public name on first access; a class or function defined in a private module
    below this package reports ``__module__ == "streamwrite.testing"`` from then on.

    Raises:
        AttributeError: ``name`` is not public.
    """
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_import_module(module), name)
    if isinstance(value, type | _FunctionType) and value.__module__.startswith(f"{__name__}."):
        value.__module__ = __name__
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """Returns: the public names and the module's dunder attributes."""
    return sorted({*__all__, *(n for n in globals() if n.startswith("__"))})
