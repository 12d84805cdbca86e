"""Refuse to start pool workers from a script's unguarded top level.

Pool workers are ``forkserver`` or ``spawn`` processes, and both import the parent's main
module again (as ``__mp_main__``; the forkserver preloads it): every statement at the top level
of the user's script runs again in each worker, except what sits under
``if __name__ == "__main__":``. A script that opens a pool from its unguarded top level would
re-run itself (deleting output directories, opening pools of its own) in every worker, so
:func:`check_main_guard` fails before any worker starts.

The check walks the call stack for the main module's top-level frame and finds, in the main
file's syntax tree, the top-level ``if __name__ == "__main__":`` blocks; the call is guarded if
that frame's current line lies inside one. With no main file (``python -c``, a REPL, Jupyter)
or no top-level frame on the stack (a thread), there is nothing to re-run and nothing to check.
"""

from __future__ import annotations

import ast
import functools
import sys
from types import FrameType

from streamwrite.errors import ConfigError

__all__ = ["check_main_guard"]


def check_main_guard(caller: str) -> None:
    """Raise unless the main script's top level, if it is running, is under the guard.

    Args:
        caller: the public call being made, for the message (``"ProcessPool.open()"``).

    Raises:
        ConfigError: the call comes from the unguarded top level of the main script.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or not isinstance(path, str):
        return
    frame = _main_module_frame(sys._getframe(1), main.__dict__)
    if frame is None:
        return
    guarded = _guarded_lines(path)
    if guarded is None or any(first <= frame.f_lineno <= last for first, last in guarded):
        return
    raise ConfigError(
        f"{caller} was called from the top level of the script {path} (line {frame.f_lineno}), "
        'outside an `if __name__ == "__main__":` block. Pool workers import the script '
        "again and would run its top-level code once more in each worker. Put the code that "
        'starts the work under `if __name__ == "__main__":` (for example '
        '`if __name__ == "__main__": anyio.run(main)`).'
    )


def _main_module_frame(
    frame: FrameType | None, main_globals: dict[str, object]
) -> FrameType | None:
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals is main_globals:
            return frame
        frame = frame.f_back
    return None


@functools.lru_cache(maxsize=8)
def _guarded_lines(path: str) -> tuple[tuple[int, int], ...] | None:
    """Line ranges of the top-level ``if __name__ == "__main__":`` bodies of ``path``, or
    None when the file cannot be read or parsed (then nothing is checked)."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return None
    return tuple(
        (node.lineno, node.end_lineno or node.lineno)
        for node in tree.body
        if isinstance(node, ast.If) and _is_main_test(node.test)
    )


def _is_main_test(test: ast.expr) -> bool:
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and len(test.comparators) == 1
    ):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    values = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(values) == 1
