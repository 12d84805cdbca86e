"""The daemon's Prometheus series (``GET /metrics``), in a registry of its own.

| series | type | labels |
|---|---|---|
| ``streamwrite_requests_total`` | counter | endpoint, status |
| ``streamwrite_rows_total`` | counter | table (rows acknowledged durable) |
| ``streamwrite_bytes_total`` | counter | table (request body bytes acknowledged) |
| ``streamwrite_parse_errors_total`` | counter | protocol |
| ``streamwrite_rejections_total`` | counter | reason (too_large, overloaded, draining, auth) |
| ``streamwrite_commit_seconds`` | histogram | (accept to durable, per write) |
| ``streamwrite_in_flight_bytes`` | gauge | (bodies being parsed or committed) |
| ``streamwrite_queue_depth`` | gauge | table (writes accepted, not yet durable) |
| ``streamwrite_tables_open`` | gauge | |
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["Metrics"]

_COMMIT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """One daemon's series; ``registry`` is what ``/metrics`` renders."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "streamwrite_requests", "HTTP and Flight requests by endpoint and status.",
            ["endpoint", "status"], registry=r,
        )  # fmt: skip
        self.rows = Counter(
            "streamwrite_rows", "Rows acknowledged durable, per table.", ["table"], registry=r
        )
        self.bytes = Counter(
            "streamwrite_bytes", "Request bytes acknowledged, per table.", ["table"], registry=r
        )
        self.parse_errors = Counter(
            "streamwrite_parse_errors", "Requests refused for their content.", ["protocol"],
            registry=r,
        )  # fmt: skip
        self.rejections = Counter(
            "streamwrite_rejections", "Requests refused before their content was read.",
            ["reason"], registry=r,
        )  # fmt: skip
        self.commit_seconds = Histogram(
            "streamwrite_commit_seconds", "Seconds from a write's acceptance to its durability.",
            buckets=_COMMIT_BUCKETS, registry=r,
        )  # fmt: skip
        self.in_flight_bytes = Gauge(
            "streamwrite_in_flight_bytes", "Body bytes being parsed or committed.", registry=r
        )
        self.queue_depth = Gauge(
            "streamwrite_queue_depth", "Writes accepted and not yet durable, per table.",
            ["table"], registry=r,
        )  # fmt: skip
        self.tables_open = Gauge("streamwrite_tables_open", "Tables open.", registry=r)
