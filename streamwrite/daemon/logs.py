"""One JSON object per log line, on standard error.

Each line has ``ts`` (ISO 8601, UTC), ``level``, ``logger`` and ``event`` (the message), then
the fields a call passed in ``extra`` (``endpoint``, ``status``, ``errorId``, ``table``,
``rows``, ``version``...) and ``error`` with the traceback when there is one. Tokens and
request bodies are never logged: no handler passes them.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

__all__ = ["JsonFormatter", "configure_logging"]

_STANDARD = frozenset(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object (one line)."""

    def format(self, record: logging.LogRecord) -> str:
        seconds = record.created
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
            + f".{int(seconds % 1 * 1000):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(level: str) -> None:
    """Send the ``streamwrite`` loggers' records to standard error as JSON lines."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    for name in ("streamwrite", "aiohttp"):
        log = logging.getLogger(name)
        log.handlers[:] = [handler]
        log.propagate = False
        log.setLevel(level.upper() if name == "streamwrite" else logging.WARNING)
