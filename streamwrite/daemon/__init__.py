"""The ingest daemon ``streamwrite serve``: ILP over HTTP and Arrow Flight into live tables."""

__all__: list[str] = []
