"""Parquet value encodings: one module per encoding, each with encoder, decoder and reference."""
