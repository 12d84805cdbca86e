"""streamwrite.cli: re-exports."""

from streamwrite.cli.main import (
    EPILOG,
    main,
)

__all__ = [
    "EPILOG",
    "main",
]
