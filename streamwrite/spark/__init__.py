"""streamwrite.spark: the Spark Structured Streaming sink (public API).

Names are imported on first access, so importing the package loads neither pyspark nor pyarrow.
"""

from __future__ import annotations

from importlib import import_module as _import_module
from types import FunctionType as _FunctionType
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "ForeachBatchSink": "streamwrite.spark.sink",
    "conform": "streamwrite.spark.sink",
    "default_app_id": "streamwrite.spark.sink",
    "foreach_batch_sink": "streamwrite.spark.sink",
    "read_table_df": "streamwrite.spark.sink",
    "table_schema_for": "streamwrite.spark.sink",
}
"""Each public name and the private module that defines (or re-exports) it."""

__all__ = (
    "ForeachBatchSink",
    "conform",
    "default_app_id",
    "foreach_batch_sink",
    "read_table_df",
    "table_schema_for",
)

if TYPE_CHECKING:
    from streamwrite.spark.sink import (
        ForeachBatchSink,
        conform,
        default_app_id,
        foreach_batch_sink,
        read_table_df,
        table_schema_for,
    )


def __getattr__(name: str) -> Any:
    """Import a public name on first access; a class or function defined in a private module
    below this package reports ``__module__ == "streamwrite.spark"`` from then on.

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
