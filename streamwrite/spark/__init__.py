"""streamwrite.spark: the Spark Structured Streaming sink, writes on the executors, pruned reads
and the ``streamwrite`` Python data source (public API).

Names are imported on first access, so importing the package loads neither pyspark nor pyarrow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamwrite.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "ForeachBatchSink": "streamwrite.spark.sink",
    "conform": "streamwrite.spark.sink",
    "default_app_id": "streamwrite.spark.sink",
    "foreach_batch_sink": "streamwrite.spark.sink",
    "read": "streamwrite.spark.reading",
    "read_table_df": "streamwrite.spark.sink",
    "register": "streamwrite.spark.datasource",
    "table_schema_for": "streamwrite.spark.sink",
    "write": "streamwrite.spark.writing",
    "WriteResult": "streamwrite.spark.writing",
}
"""Each public name and the private module that defines (or re-exports) it."""

__all__ = (
    "ForeachBatchSink",
    "WriteResult",
    "conform",
    "default_app_id",
    "foreach_batch_sink",
    "read",
    "read_table_df",
    "register",
    "table_schema_for",
    "write",
)

if TYPE_CHECKING:
    from streamwrite.spark.datasource import register
    from streamwrite.spark.reading import read
    from streamwrite.spark.sink import (
        ForeachBatchSink,
        conform,
        default_app_id,
        foreach_batch_sink,
        read_table_df,
        table_schema_for,
    )
    from streamwrite.spark.writing import WriteResult, write

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
