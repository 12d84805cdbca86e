"""A real daemon in a subprocess for the tests: ``streamwrite serve`` on ports the OS picks.

The daemon logs one JSON object per line on stderr; its ``ready`` line names the bound
addresses. A reader thread keeps every line (``Daemon.logs``) so that the pipe never fills.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

TOKEN = "s3cret-token"
READ_TOKEN = "reader-token"
NARROW_TOKEN = "narrow-token"


def sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def self_signed(host: str) -> tuple[bytes, bytes]:
    """A self-signed certificate for ``host`` and its key, both PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def write_config(path: Path, data_root: Path, extra: str = "", *, tokens: bool = True) -> Path:
    """A daemon.toml on ports 0 (the OS picks), with three tokens unless ``tokens=False``."""
    text = f'data_root = "{data_root}"\n{extra}\n'
    if tokens:
        text += f"""
[[tokens]]
name = "ingest"
sha256 = "{sha(TOKEN)}"
tables = ["*"]
rights = ["write", "create", "add_column", "read"]

[[tokens]]
name = "reader"
sha256 = "{sha(READ_TOKEN)}"
tables = ["*"]
rights = ["read"]

[[tokens]]
name = "narrow"
sha256 = "{sha(NARROW_TOKEN)}"
tables = ["sensor_*"]
rights = ["write"]
"""
    path.write_text(text)
    return path


class Daemon:
    """``streamwrite serve --config`` as a child process."""

    def __init__(
        self, config: Path, *, env: dict[str, str] | None = None, http_listen: str = "127.0.0.1:0"
    ) -> None:
        self.config = config
        self.http_listen = http_listen
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[str] | None = None
        self.logs: list[dict[str, Any]] = []
        self.addresses: dict[str, str] = {}

    def start(self, timeout: float = 60.0) -> Daemon:
        self.logs = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamwrite", "serve", "--config", str(self.config),
             "--http-listen", self.http_listen, "--flight-listen", "127.0.0.1:0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=self.env,
        )  # fmt: skip
        ready = threading.Event()
        threading.Thread(target=self._read, args=(self.proc, ready), daemon=True).start()
        if not ready.wait(timeout) or not self.addresses:
            self.kill()
            raise AssertionError(f"the daemon did not start: {self.logs[-5:]}")
        return self

    def _read(self, proc: subprocess.Popen[str], ready: threading.Event) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            try:
                entry = json.loads(line)
            except ValueError:
                entry = {"event": "non-json", "text": line.rstrip()}
            self.logs.append(entry)
            if entry.get("event") == "ready":
                self.addresses = entry["addresses"]
                ready.set()
        ready.set()

    @property
    def http(self) -> str:
        return f"http://{self.addresses['http']}"

    @property
    def http_addr(self) -> str:
        return self.addresses["http"]

    @property
    def flight(self) -> str:
        return f"grpc://{self.addresses['flight']}"

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)

    def terminate(self, timeout: float = 40.0) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def wait_log(self, event: str, timeout: float = 10.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for entry in self.logs:
                if entry.get("event") == event:
                    return entry
            time.sleep(0.02)
        raise AssertionError(f"no {event!r} log line: {self.logs[-5:]}")
