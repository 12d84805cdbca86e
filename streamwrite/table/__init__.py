"""Tables: time-partitioned live files committed together through ``_txn``.

The async shell over ``layout.table`` and ``layout.table_recovery``.
"""
