"""streamwrite.testing: reference data, hypothesis strategies, reusable stateful machines.

Exported here (imported on first access): :func:`reference_table` and :class:`ManualClock`,
which need nothing beyond the library. The hypothesis parts are submodules
(``pip install 'streamwrite[testing]'``): :mod:`streamwrite.testing.strategies` (Arrow types,
arrays, schemas, tables, record batches, write options, Parquet physical values) and
:mod:`streamwrite.testing.live_machine` (the stateful machine of a live file with failures
injected between its actions). The library itself never imports this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamwrite.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "ManualClock": "streamwrite.testing.clock",
    "reference_table": "streamwrite.testing.data",
}
"""Each public name and the private module that defines (or re-exports) it."""

__all__ = ("ManualClock", "reference_table")

if TYPE_CHECKING:
    from streamwrite.testing.clock import ManualClock
    from streamwrite.testing.data import reference_table

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
