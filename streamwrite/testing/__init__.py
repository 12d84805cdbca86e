"""streamwrite.testing: re-exports."""

from streamwrite.testing.data import (
    reference_table,
)

__all__ = [
    "reference_table",
]
