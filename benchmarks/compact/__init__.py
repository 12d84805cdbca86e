"""The sections of ``bench_compact.py``, one module each (``common`` holds what they share)."""
