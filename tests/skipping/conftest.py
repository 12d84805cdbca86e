"""The Spark session of tests/spark (one per run: ``getOrCreate`` returns the same session)."""

from __future__ import annotations

from tests.spark.conftest import spark

__all__ = ["spark"]
