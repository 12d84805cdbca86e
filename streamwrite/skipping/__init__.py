"""The table's skipping store: Spark's sketch bloom filter, xskipper v4 files, the fast lookup.

The contract with ``streamwrite.table`` (``/work/scratch/skipping_design.md`` section 4)::

    config = SkippingConfig.parse({"symbol": ["valuelist", "bloom"], "price": ["minmax"]}, schema)
    sketch = SegmentSketch(config, schema); sketch.update(batch)          # per live segment
    store = SkippingStore.open(table_path, config, state_from_txn, encryption)
    state = store.add_sealed([StoreEntry(name, path, committed_size, sketch)])  # -> _txn
    state = store.remove(retired_names)                                   # same _txn version
    keep = store.prune(bound_expr, segment_names)                         # bool per segment
"""

from __future__ import annotations

from streamwrite.skipping.bloom import SparkBloomFilter
from streamwrite.skipping.config import EMBEDDED_KINDS, STORE_KINDS, IndexSpec, SkippingConfig
from streamwrite.skipping.sketch import SegmentSketch
from streamwrite.skipping.store import SkippingStore
from streamwrite.skipping.xskipper import (
    StoreEntry,
    column_name,
    store_directory,
    table_identifier,
)

__all__ = [
    "EMBEDDED_KINDS",
    "STORE_KINDS",
    "IndexSpec",
    "SegmentSketch",
    "SkippingConfig",
    "SkippingStore",
    "SparkBloomFilter",
    "StoreEntry",
    "column_name",
    "store_directory",
    "table_identifier",
]
