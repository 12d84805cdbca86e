"""Where the vendored independent test vectors live (inside the repository, so a clone alone
runs every test): ``tests/data/parquet-testing`` is apache/parquet-testing at the commit in its
``COMMIT`` file (Apache-2.0, ``LICENSE.txt``); ``KEYS.md`` there lists the encryption keys."""

from __future__ import annotations

from pathlib import Path

PARQUET_TESTING = Path(__file__).resolve().parent / "data" / "parquet-testing"
"""The vendored apache/parquet-testing checkout (``data/``, ``bad_data/``)."""
