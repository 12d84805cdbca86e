"""streamwrite.daemon: the ingest daemon ``streamwrite serve`` (public API).

ILP over HTTP for the questdb and influxdb clients and Arrow Flight, into live tables under
one data root, each write acknowledged once durable. ``load_config`` reads ``daemon.toml``
(:mod:`streamwrite.daemon.config` lists every key); ``run(config)`` serves until SIGTERM;
``serve(config)`` is the same as a coroutine, to embed the daemon in an anyio program.
Names are imported on first access (aiohttp and prometheus-client load only then).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamwrite.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "DaemonConfig": "streamwrite.daemon.config",
    "hash_token": "streamwrite.daemon.auth",
    "load_config": "streamwrite.daemon.config",
    "run": "streamwrite.daemon.server",
    "serve": "streamwrite.daemon.server",
}
"""Each public name and the private module that defines it."""

__all__ = ("DaemonConfig", "hash_token", "load_config", "run", "serve")

if TYPE_CHECKING:
    from streamwrite.daemon.auth import hash_token
    from streamwrite.daemon.config import DaemonConfig, load_config
    from streamwrite.daemon.server import run, serve

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
