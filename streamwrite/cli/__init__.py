"""The ``streamwrite`` command (``main``); it uses only the public API."""

from streamwrite.cli.main import main

__all__ = ["main"]
