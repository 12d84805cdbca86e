"""pyspark's discovery hook for the ``streamwrite`` data source.

pyspark (>= 4.0) imports every top-level module whose name starts with ``pyspark_`` the first
time a session uses a Python data source, and registers the ``DefaultSource`` it exposes
under that class's ``name()``. So once streamwrite is installed,
``spark.read.format("streamwrite").load(path)`` works with no registration call
(:func:`streamwrite.spark.register` still registers it in one session, with the session's
default parallelism and filter pushdown when the session's conf allows it).
"""

from __future__ import annotations

from streamwrite.spark.datasource import StreamwriteDataSource

__all__ = ["DefaultSource"]


class DefaultSource(StreamwriteDataSource):
    """``spark.read.format("streamwrite")``: :class:`StreamwriteDataSource` without filter
    pushdown (the ``pushdown`` option turns it on), planning for ``os.cpu_count()`` cores
    unless the ``parallelism`` option says otherwise."""
