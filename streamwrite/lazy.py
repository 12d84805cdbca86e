"""Lazy re-exports for the public packages (anyio's style of a curated public API).

A public package (``streamwrite``, ``streamwrite.crypto``, ``streamwrite.inspect``,
``streamwrite.spark``, ``streamwrite.testing``) lists each public name and the private module
defining it, and installs the two module hooks this returns::

    _EXPORTS = {"LiveFile": "streamwrite.live.file", ...}
    __all__ = ("LiveFile", ...)
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)

A name is imported on first access (so importing the package loads nothing heavy), cached in
the package, and a class or function defined below the package reports the package as its
``__module__`` from then on, so reprs, tracebacks and pickles name the public path.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Mapping
from importlib import import_module
from types import FunctionType
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str], public: Collection[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` for its ``exports``.

    Returns:
        ``(__getattr__, __dir__)``: the first imports a public name on first access (raising
        AttributeError for any other name), the second lists the public names and the
        package's dunder attributes.
    """
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:  # noqa: N807 (the module hook's name)
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        if isinstance(value, type | FunctionType) and value.__module__.startswith(f"{package}."):
            value.__module__ = package
        namespace[name] = value
        return value

    def __dir__() -> list[str]:  # noqa: N807 (the module hook's name)
        return sorted({*public, *(n for n in namespace if n.startswith("__"))})

    return __getattr__, __dir__
