"""The daemon's errors: each carries the HTTP status it answers with, and its QuestDB ``code``.

Every one is a :class:`streamwrite.errors.StreamwriteError` (the project's one hierarchy). The
HTTP layer turns them into QuestDB's JSON error body::

    {"code": "invalid", "message": "...", "line": 3, "errorId": "4f1c2a9b0d3e-17"}

(``line`` only when the error is about a line of the body), and the Flight layer into the
matching Flight error (401 -> unauthenticated, 403 -> unauthorized, 503 -> unavailable,
others -> invalid argument / internal).

| class            | HTTP | QuestDB ``code``    |
|------------------|------|---------------------|
| BadRequestError       | 400  | ``invalid``         |
| UnauthorizedError     | 401  | ``unauthorised``    |
| ForbiddenError        | 403  | ``unauthorised``    |
| NotFoundError         | 404  | ``invalid``         |
| TooLargeError         | 413  | ``request too large`` |
| UnsupportedMediaError | 415  | ``not supported``   |
| OverloadedError       | 503  | ``unavailable``     |
| DaemonInternalError    | 500  | ``internal error``  |
"""

from __future__ import annotations

from streamwrite.errors import StreamwriteError

__all__ = [
    "BadRequestError",
    "DaemonError",
    "ForbiddenError",
    "DaemonInternalError",
    "NotFoundError",
    "OverloadedError",
    "RequestTimeoutError",
    "TooLargeError",
    "UnauthorizedError",
    "UnsupportedMediaError",
]


class DaemonError(StreamwriteError):
    """A request the daemon refuses: ``status`` is the HTTP status, ``code`` QuestDB's."""

    status = 500
    code = "internal error"

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        """The 1-based line of the request body the error is about, if any."""


class BadRequestError(DaemonError):
    """Malformed input: a line that does not parse, a type conflict, a bad parameter."""

    status = 400
    code = "invalid"


class UnauthorizedError(DaemonError):
    """Missing or unknown credentials."""

    status = 401
    code = "unauthorised"


class ForbiddenError(DaemonError):
    """Known credentials without the right for this table."""

    status = 403
    code = "unauthorised"


class NotFoundError(DaemonError):
    """No such table (and the token may not create it, or auto-creation is off), or path."""

    status = 404
    code = "invalid"


class RequestTimeoutError(DaemonError):
    """The body did not arrive within ``http.body_timeout_seconds`` (slowloris)."""

    status = 408
    code = "invalid"


class TooLargeError(DaemonError):
    """A body (or its decompressed form) over the configured limit."""

    status = 413
    code = "request too large"


class UnsupportedMediaError(DaemonError):
    """A content encoding the daemon cannot decode."""

    status = 415
    code = "not supported"


class OverloadedError(DaemonError):
    """The in-flight budget or a table queue is full, or the daemon is draining: retry."""

    status = 503
    code = "unavailable"

    def __init__(self, message: str, *, retry_after_seconds: int = 1) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


class DaemonInternalError(DaemonError):
    """A commit or I/O failure: nothing of the request was acknowledged."""

    status = 500
    code = "internal error"
