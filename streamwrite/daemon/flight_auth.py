"""Flight authentication and errors: the ``authorization`` header per call, the handshake.

Every call passes through :class:`AuthMiddlewareFactory`: its ``authorization`` header
(``Bearer <token>``, or ``Basic base64(<name>:<token>)``; ``Token <token>`` too) goes to the
daemon's :class:`~streamwrite.daemon.auth.Authenticator`; missing or unknown credentials end
the call with ``FlightUnauthenticatedError`` before any handler runs (when tokens are
configured). The handler reads the caller's principal with :func:`principal_of`.

The basic-token handshake (``client.authenticate_basic_token(name, token)``): the client
sends ``Basic ...`` on a HANDSHAKE call; the middleware checks it like any other call and
answers with the header ``authorization: Bearer <token>``, which the client returns as
``(b"authorization", b"Bearer <token>")`` to put in its call options. The handshake itself
runs through :class:`NoOpAuthHandler` (pyarrow answers "Unimplemented" without an auth
handler); it accepts every call, since the middleware has already decided.

Errors (:func:`flight_error`): a daemon error becomes the Flight error of its HTTP status,
with the message and ``extra_info`` JSON ``{"status": 400, "code": "invalid"}``:
401 -> ``FlightUnauthenticatedError``, 403 -> ``FlightUnauthorizedError``, 503 ->
``FlightUnavailableError``, 500 -> ``FlightInternalError``, others (400, 404, 413) ->
``FlightServerError``. Tokens and rows never appear in a message or a log.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
import traceback
from typing import Any

import pyarrow.flight as fl

from streamwrite.daemon.auth import Authenticator, Principal
from streamwrite.daemon.errors import (
    BadRequestError,
    DaemonError,
    DaemonInternalError,
    OverloadedError,
    UnauthorizedError,
)
from streamwrite.errors import ConfigError, SchemaError, StaleBatchError, StreamwriteError

__all__ = [
    "MIDDLEWARE_KEY",
    "AuthMiddleware",
    "AuthMiddlewareFactory",
    "NoOpAuthHandler",
    "as_daemon_error",
    "flight_error",
    "principal_of",
]

MIDDLEWARE_KEY = "streamwrite-auth"
logger = logging.getLogger("streamwrite.daemon.flight")


class AuthMiddleware(fl.ServerMiddleware):  # type: ignore[misc]
    """One call's principal (and, on a handshake, the bearer header to send back)."""

    def __init__(self, principal: Principal, bearer_token: str | None = None) -> None:
        self.principal = principal
        self._bearer_token = bearer_token

    def sending_headers(self) -> dict[str, str]:
        """The handshake's answer ``authorization: Bearer <token>`` (other calls: none)."""
        if self._bearer_token is None:
            return {}
        return {"authorization": f"Bearer {self._bearer_token}"}


class AuthMiddlewareFactory(fl.ServerMiddlewareFactory):  # type: ignore[misc]
    """Authenticates every call from its ``authorization`` header; once ``draining`` is set,
    refuses every new call with ``FlightUnavailableError`` (the server is stopping)."""

    def __init__(
        self, authenticator: Authenticator, draining: threading.Event | None = None
    ) -> None:
        self._authenticator = authenticator
        self._draining = draining or threading.Event()

    def start_call(self, info: Any, headers: dict[str, list[str]]) -> AuthMiddleware:
        """The call's :class:`AuthMiddleware`.

        Raises:
            FlightUnauthenticatedError: tokens are configured and the header is missing,
                malformed or unknown.
            FlightUnavailableError: the server is draining.
        """
        if self._draining.is_set():
            raise flight_error(OverloadedError("The server is shutting down: retry."))
        values = headers.get("authorization") or []
        header = values[0] if values and isinstance(values[0], str) else None
        try:
            principal = self._authenticator.authenticate(header)
        except UnauthorizedError as exc:
            raise flight_error(exc) from None
        bearer = None
        if info.method == fl.FlightMethod.HANDSHAKE and header is not None:
            bearer = _basic_token(header)
        return AuthMiddleware(principal, bearer)


def _basic_token(header: str) -> str | None:
    """The token of a ``Basic base64(name:token)`` header, else None."""
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    _, sep, token = decoded.partition(":")
    return token if sep else None


class NoOpAuthHandler(fl.ServerAuthHandler):  # type: ignore[misc]
    """Lets the basic-token handshake run; :class:`AuthMiddlewareFactory` does the checking."""

    def authenticate(self, outgoing: Any, incoming: Any) -> None:
        """Accept the handshake (its credentials were checked by the middleware)."""

    def is_valid(self, token: bytes) -> str:
        """Every call is valid here (the middleware authenticated it); no peer identity."""
        return ""


def principal_of(context: Any) -> Principal:
    """The principal :class:`AuthMiddlewareFactory` found for the call of ``context``."""
    middleware = context.get_middleware(MIDDLEWARE_KEY)
    if middleware is None:  # the factory is always installed: a missing one is a bug
        raise flight_error(DaemonInternalError("The call was not authenticated."))
    principal: Principal = middleware.principal
    return principal


def as_daemon_error(exc: BaseException) -> DaemonError:
    """``exc`` as the daemon error it answers with (an unexpected one is a logged 500)."""
    if isinstance(exc, DaemonError):
        return exc
    if isinstance(exc, (SchemaError, ConfigError, StaleBatchError)):
        return BadRequestError(str(exc))
    if isinstance(exc, StreamwriteError):
        return DaemonInternalError(str(exc))
    # the type and where, not the message: a third-party message may quote row values
    frames = traceback.extract_tb(exc.__traceback__)[-3:]
    where = " < ".join(f"{f.filename}:{f.lineno} in {f.name}" for f in reversed(frames))
    logger.error("Flight call failed: %s at %s", type(exc).__name__, where)
    return DaemonInternalError("The server failed to handle the call; see its log.")


def flight_error(exc: BaseException) -> fl.FlightError:
    """The Flight error a client sees for ``exc`` (see the module docstring)."""
    if isinstance(exc, fl.FlightError):
        return exc
    error = as_daemon_error(exc)
    extra = json.dumps({"status": error.status, "code": error.code}).encode()
    kind = {
        401: fl.FlightUnauthenticatedError,
        403: fl.FlightUnauthorizedError,
        503: fl.FlightUnavailableError,
        500: fl.FlightInternalError,
    }.get(error.status, fl.FlightServerError)
    flight_exc: fl.FlightError = kind(error.message, extra_info=extra)
    return flight_exc
