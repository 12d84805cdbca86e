"""Who may do what: tokens stored hashed, per-token table globs and rights; table names.

A token is configured by the SHA-256 of its secret (hex), never the secret itself::

    [[tokens]]
    name = "ingest"                       # shown in logs and metrics (never the secret)
    sha256 = "9f86d081884c7d65..."        # sha256 of the token (printf %s "$T" | sha256sum)
    tables = ["trades", "sensor_*"]       # fnmatch globs (case-sensitive)
    rights = ["write", "create", "add_column"]   # any of write, create, add_column, read

Credentials arrive as ``Authorization: Bearer <token>`` (questdb client, Flight),
``Token <token>`` (influxdb-client) or ``Basic base64(<name>:<token>)`` (questdb client's
``username``/``password``; the name must be the token's). The presented secret is hashed and
compared with every configured hash by :func:`hmac.compare_digest`, all of them every time, so
the time taken says nothing about which or how much matched. With no tokens configured the
daemon is open: every request acts as ``anonymous`` with every right (the server logs a
warning at start).

Table names (:func:`check_table_name`) are one path component under the data root: non-empty,
at most 127 UTF-8 bytes, none of QuestDB's forbidden characters (``/ \\ : ? , ' " ( ) + * % ~``,
controls, NUL), not starting with ``.`` or ``_`` (names the table layout and hidden files use)
and not ending with ``.``; so ``..``, ``a/b`` and ``x\\0`` can never reach the file system.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import hashlib
import hmac
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from streamwrite.daemon.errors import BadRequestError, ForbiddenError, UnauthorizedError
from streamwrite.errors import ConfigError

__all__ = [
    "RIGHTS",
    "Authenticator",
    "Principal",
    "TokenEntry",
    "check_table_name",
    "hash_token",
    "token_entries",
]

RIGHTS = frozenset({"write", "create", "add_column", "read"})
MAX_NAME_SIZE = 127
"""QuestDB's ``cairo.max.file.name.length``: the longest table name, in UTF-8 bytes."""
_FORBIDDEN = frozenset("/\\:?,'\"()+*%~\n\r\t")


def hash_token(secret: str) -> str:
    """The hex SHA-256 of a token, as the config stores it."""
    return hashlib.sha256(secret.encode()).hexdigest()


def check_table_name(name: str) -> str:
    """``name`` if it is a safe table name (one path component), else :class:`BadRequestError`."""
    problem = None
    if not name:
        problem = "it is empty"
    elif len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_SIZE:
        problem = f"it is longer than {MAX_NAME_SIZE} bytes"
    elif any(ch in _FORBIDDEN or ord(ch) < 32 or ord(ch) == 127 for ch in name):
        problem = "it holds a separator, a control character or one of / \\ : ? , ' \" ( ) + * % ~"
    elif name[0] in "._" or name.endswith("."):
        problem = "it starts with '.' or '_' or ends with '.'"
    if problem is not None:
        raise BadRequestError(f"Invalid table name {name!r}: {problem}.")
    return name


@dataclass(frozen=True)
class TokenEntry:
    """One configured token: its name, the SHA-256 (hex) of its secret, globs and rights."""

    name: str
    sha256: str
    tables: tuple[str, ...] = ("*",)
    rights: frozenset[str] = RIGHTS

    def __post_init__(self) -> None:
        try:
            digest = bytes.fromhex(self.sha256)
        except ValueError:
            digest = b""
        if len(digest) != 32:
            raise ConfigError(
                f"Token {self.name!r}: sha256 must be 64 hex digits (the SHA-256 of the "
                f"token), got {self.sha256!r}."
            )
        unknown = set(self.rights) - RIGHTS
        if unknown:
            raise ConfigError(
                f"Token {self.name!r}: unknown rights {sorted(unknown)}; "
                f"the rights are {sorted(RIGHTS)}."
            )


@dataclass(frozen=True)
class Principal:
    """Who a request acts as: a token's name, its table globs and rights."""

    name: str
    tables: tuple[str, ...]
    rights: frozenset[str]

    def allows(self, right: str, table: str) -> bool:
        """True when this principal holds ``right`` on ``table``."""
        return right in self.rights and any(
            fnmatch.fnmatchcase(table, glob) for glob in self.tables
        )

    def require(self, right: str, table: str) -> None:
        """Raise :class:`ForbiddenError` unless this principal holds ``right`` on ``table``."""
        if not self.allows(right, table):
            raise ForbiddenError(
                f"The token {self.name!r} has no {right!r} right on table {table!r}."
            )


ANONYMOUS = Principal("anonymous", ("*",), RIGHTS)


class Authenticator:
    """Maps an ``Authorization`` header to a :class:`Principal` (or raises 401)."""

    def __init__(self, tokens: Sequence[TokenEntry]) -> None:
        names = [t.name for t in tokens]
        if len(set(names)) != len(names):
            raise ConfigError(f"Token names must be unique, got {names}.")
        self._tokens = [(bytes.fromhex(t.sha256), t) for t in tokens]

    @property
    def open(self) -> bool:
        """True when no token is configured: everyone acts as ``anonymous``."""
        return not self._tokens

    def authenticate(self, authorization: str | None) -> Principal:
        """The principal an ``Authorization`` header value names.

        Raises:
            UnauthorizedError: tokens are configured and the header is missing, malformed or
                names no configured token.
        """
        if self.open:
            return ANONYMOUS
        if not authorization:
            raise UnauthorizedError("Credentials are required: send Authorization: Bearer <token>.")
        scheme, _, value = authorization.strip().partition(" ")
        scheme, value = scheme.lower(), value.strip()
        name: str | None = None
        if scheme in ("bearer", "token"):
            secret = value
        elif scheme == "basic":
            try:
                decoded = base64.b64decode(value, validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                raise UnauthorizedError("Malformed Basic credentials.") from None
            name, sep, secret = decoded.partition(":")
            if not sep:
                raise UnauthorizedError("Malformed Basic credentials.")
        else:
            raise UnauthorizedError("Unsupported Authorization scheme: use Bearer, Token or Basic.")
        entry = self._match(secret.encode())
        if entry is None or (name is not None and not hmac.compare_digest(name, entry.name)):
            raise UnauthorizedError("Unknown credentials.")
        return Principal(entry.name, entry.tables, entry.rights)

    def _match(self, secret: bytes) -> TokenEntry | None:
        digest = hashlib.sha256(secret).digest()
        found = None
        for expected, entry in self._tokens:  # all of them, whatever matches
            if hmac.compare_digest(digest, expected):
                found = entry
        return found


def token_entries(raw: Iterable[dict[str, object]]) -> list[TokenEntry]:
    """Config ``[[tokens]]`` tables as :class:`TokenEntry` values (ConfigError if invalid)."""
    entries = []
    for i, item in enumerate(raw):
        unknown = set(item) - {"name", "sha256", "tables", "rights"}
        if unknown or "name" not in item or "sha256" not in item:
            raise ConfigError(
                f"tokens[{i}] needs name and sha256 (and may have tables, rights); "
                f"got keys {sorted(item)}."
            )
        tables = item.get("tables", ["*"])
        rights = item.get("rights", sorted(RIGHTS))
        if not isinstance(tables, list) or not all(isinstance(t, str) for t in tables):
            raise ConfigError(f"tokens[{i}].tables must be a list of globs, got {tables!r}.")
        if not isinstance(rights, list) or not all(isinstance(r, str) for r in rights):
            raise ConfigError(f"tokens[{i}].rights must be a list of rights, got {rights!r}.")
        entries.append(
            TokenEntry(str(item["name"]), str(item["sha256"]), tuple(tables), frozenset(rights))
        )
    return entries
