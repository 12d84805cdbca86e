"""Reading Parquet files: tails, pyarrow-shaped metadata, page decoding, verification."""
