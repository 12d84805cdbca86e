"""A real S3-compatible server on localhost for tests and benchmarks: moto's server mode
(``python -m moto.server``) in a subprocess, spoken to over HTTP by s3fs.

::

    with S3Server() as server:
        fs = server.filesystem()              # an s3fs.S3FileSystem for it
        server.create_bucket("cold")
        url, options = "s3://cold/ticks", server.storage_options
        # open_table(..., cold_storage=url, storage_options=options)

``storage_options`` are plain JSON-able keyword arguments of ``s3fs.S3FileSystem`` (they cross
process boundaries: Spark executors, SIGKILL test children). The server keeps its objects in
memory; :meth:`S3Server.restart` is not offered on purpose: a bucket lives as long as its
server. Needs the ``moto[server]`` and ``s3fs`` packages (the dev extra).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from typing import Any

from streamwrite.errors import StateError

__all__ = ["S3Server"]

ACCESS_KEY = "streamwrite-test"
SECRET_KEY = "streamwrite-test-secret"
REGION = "us-east-1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class S3Server:
    """moto's S3 server on ``127.0.0.1`` at a free port, for as long as the object lives
    (a context manager; :meth:`stop` ends it)."""

    def __init__(self, *, start_timeout: float = 30.0) -> None:
        self.port = _free_port()
        self.endpoint_url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
        self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        deadline = time.monotonic() + start_timeout
        while True:
            try:
                urllib.request.urlopen(f"{self.endpoint_url}/moto-api/", timeout=2).close()
                break
            except OSError:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise StateError(
                        f"The moto S3 server did not start on port {self.port} within "
                        f"{start_timeout} s (is moto[server] installed?)."
                    ) from None
                time.sleep(0.05)

    @property
    def storage_options(self) -> dict[str, Any]:
        """``s3fs.S3FileSystem`` keyword arguments reaching this server (JSON-able)."""
        return {
            "key": ACCESS_KEY,
            "secret": SECRET_KEY,
            "client_kwargs": {"endpoint_url": self.endpoint_url, "region_name": REGION},
            "skip_instance_cache": True,
        }

    def filesystem(self) -> Any:
        """A new ``s3fs.S3FileSystem`` for this server."""
        import s3fs

        return s3fs.S3FileSystem(**self.storage_options)

    def create_bucket(self, name: str) -> None:
        """Create bucket ``name`` (3 to 63 lowercase letters, digits, dots and hyphens)."""
        fs = self.filesystem()
        fs.call_s3("create_bucket", Bucket=name)
        fs.invalidate_cache()

    def reset(self) -> None:
        """Forget every bucket and object (moto's reset API)."""
        request = urllib.request.Request(f"{self.endpoint_url}/moto-api/reset", method="POST")
        urllib.request.urlopen(request, timeout=10).close()

    def stop(self) -> None:
        """End the server (idempotent)."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None

    def __enter__(self) -> S3Server:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
