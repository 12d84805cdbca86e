"""Misspelt keywords name the public function they were given to, with a suggestion."""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["public_keywords"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def public_keywords(public_name: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Check a call's arguments against the signature first, so that a misspelt keyword
    names ``public_name`` (not an internal function) and suggests the closest keyword."""

    def decorate(function: Callable[_P, _R]) -> Callable[_P, _R]:
        signature = inspect.signature(function)
        keywords = [
            name
            for name, p in signature.parameters.items()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and name != "self"
        ]

        @functools.wraps(function)
        def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                signature.bind(*args, **kwargs)
            except TypeError as exc:
                unknown = [k for k in kwargs if k not in signature.parameters]
                if not unknown:
                    raise TypeError(f"{public_name}(): {exc}") from None
                name = unknown[0]
                close = difflib.get_close_matches(name, keywords, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise TypeError(
                    f"{public_name}() got an unexpected keyword argument {name!r}.{hint} "
                    f"It takes {', '.join(keywords)}."
                ) from None
            return function(*args, **kwargs)

        return checked

    return decorate
