"""Arrow <-> Parquet: the schema mapping, column values both ways, routing rows to partitions."""
