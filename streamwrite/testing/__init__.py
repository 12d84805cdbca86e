"""streamwrite.testing: reference data, hypothesis strategies, reusable stateful machines.

Re-exports what needs no extra dependency: :func:`reference_table` and :class:`ManualClock`.
The hypothesis parts are submodules (``pip install 'streamwrite[testing]'``):
:mod:`streamwrite.testing.strategies` (Arrow types, arrays, schemas, tables, record batches,
write options, Parquet physical values) and :mod:`streamwrite.testing.live_machine` (the
stateful machine of a live file with failures injected between its actions).
The library itself never imports this package.
"""

from streamwrite.testing.clock import ManualClock
from streamwrite.testing.data import reference_table

__all__ = [
    "ManualClock",
    "reference_table",
]
