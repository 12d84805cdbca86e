"""streamwrite.testing: reference data for tests, examples and benchmarks (public API).

Names are imported on first access.
"""

from __future__ import annotations

from importlib import import_module as _import_module
from types import FunctionType as _FunctionType
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "reference_table": "streamwrite.testing.data",
}
"""Each public name and the private module that defines (or re-exports) it."""

__all__ = ("reference_table",)

if TYPE_CHECKING:
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
