"""The daemon tests' fixtures: a ``streamwrite serve`` subprocess factory, and a Flight front
end over a real service in this process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon._flight_support import FlightDaemon, serve_flight
from tests.daemon._support import Daemon, write_config


@pytest.fixture
def daemon_factory(tmp_path: Path):  # type: ignore[no-untyped-def]
    started: list[Daemon] = []

    def make(extra: str = "", *, tokens: bool = True, env: dict[str, str] | None = None) -> Daemon:
        config = write_config(tmp_path / "daemon.toml", tmp_path / "data", extra, tokens=tokens)
        daemon = Daemon(config, env=env).start()
        started.append(daemon)
        return daemon

    yield make
    for daemon in started:
        daemon.kill()


@pytest.fixture
def flight_daemon(tmp_path: Path) -> Iterator[FlightDaemon]:
    yield from serve_flight(tmp_path)
