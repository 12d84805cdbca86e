"""streamwrite.spark: re-exports."""

from streamwrite.spark.sink import (
    ForeachBatchSink,
    conform,
    default_app_id,
    foreach_batch_sink,
    read_table_df,
    table_schema_for,
)

__all__ = [
    "ForeachBatchSink",
    "conform",
    "default_app_id",
    "foreach_batch_sink",
    "read_table_df",
    "table_schema_for",
]
