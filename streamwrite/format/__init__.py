"""Ring 1, pure byte layout (sans-I/O): Thrift codec, Parquet structs, AAD, footer tail, the
``_pm`` and ``_txn`` codecs, and the encoded column chunk (the contract with ``workers``)."""
