"""The sections of ``bench_ingest.py``, one module each."""
