"""ILP over HTTP against a real ``streamwrite serve`` subprocess: raw requests, the bad-input
table (each refusal with its code, nothing written, the daemon still serving), the operations
endpoints, retries, and SIGTERM draining."""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import socket
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import streamwrite
from tests.daemon._support import NARROW_TOKEN, READ_TOKEN, TOKEN, Daemon

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def request(
    daemon: Daemon,
    method: str,
    path: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(daemon.http_addr, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def write(
    daemon: Daemon, body: bytes, headers: dict[str, str] | None = None, query: str = ""
) -> tuple[int, dict[str, Any]]:
    status, got_headers, payload = request(
        daemon, "POST", f"/write{query}", body, {**AUTH, **(headers or {})}
    )
    if status == 204:
        assert payload == b""
        return status, {}
    assert got_headers["Content-Type"] == "application/json", got_headers
    return status, json.loads(payload)


def table_rows(daemon: Daemon, name: str) -> pa.Table | None:
    path = Path(str(daemon.config.parent / "data" / name))
    if not (path / "_txn").exists():
        return None
    return streamwrite.read_table(path)


def test_write_types_and_read_back(daemon_factory) -> None:  # type: ignore[no-untyped-def]
    daemon = daemon_factory()
    body = (
        b'trades,sym=ETH-USD,side=sell price=2615.54,qty=3i,ok=t,note="a \\"q\\" b" '
        b"1700000000000000000\n"
        b'trades,sym=BTC-USD,side=buy price=39269.98,qty=1i,ok=f,note="x" 1700000000500000000'
    )
    status, error = write(daemon, body)
    assert status == 204, error
    table = table_rows(daemon, "trades")
    assert table is not None and table.num_rows == 2
    rows = table.sort_by("price").to_pylist()
    assert rows[0]["sym"] == "ETH-USD" and rows[0]["qty"] == 3 and rows[0]["ok"] is True
    assert rows[0]["note"] == 'a "q" b' and rows[0]["price"] == 2615.54
    assert table.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert rows[1]["timestamp"].timestamp() == 1700000000.5


def test_retry_of_a_committed_body_writes_nothing(daemon_factory) -> None:  # type: ignore[no-untyped-def]
    daemon = daemon_factory()
    body = b"cpu,host=a usage=1.5\ncpu,host=b usage=2.5\n"
    assert write(daemon, body)[0] == 204
    assert write(daemon, body)[0] == 204  # the client's resend after a lost response
    assert table_rows(daemon, "cpu").num_rows == 2  # type: ignore[union-attr]
    # An Idempotency-Key tells two equal bodies apart.
    assert write(daemon, body, {"Idempotency-Key": "one"})[0] == 204
    assert write(daemon, body, {"Idempotency-Key": "two"})[0] == 204
    assert write(daemon, body, {"Idempotency-Key": "two"})[0] == 204
    assert table_rows(daemon, "cpu").num_rows == 6  # type: ignore[union-attr]


def test_gzip_body(daemon_factory) -> None:  # type: ignore[no-untyped-def]
    daemon = daemon_factory()
    body = b"".join(b"m,t=x v=%di %d\n" % (i, 1_700_000_000_000_000_000 + i) for i in range(1000))
    status, error = write(daemon, gzip.compress(body), {"Content-Encoding": "gzip"})
    assert status == 204, error
    assert table_rows(daemon, "m").num_rows == 1000  # type: ignore[union-attr]


def _slowloris(daemon: Daemon) -> tuple[int, bytes]:
    host, port = daemon.http_addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            f"POST /write HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            "Content-Length: 1000\r\n\r\nslow,t=a v=1\n".encode()
        )
        answer = sock.recv(65536)
    return int(answer.split()[1]), answer


BOMB = gzip.compress(b"x" * (64 << 20))
"""64 MiB of one byte in ~64 KB of gzip: past the test daemon's 1 MiB decompressed limit."""

BAD_INPUTS: list[tuple[str, dict[str, Any], int, str | None]] = [
    # (name, request, status, table that must not exist)
    ("malformed line", {"body": b"bad,t=a v=1\nbad,t=b v=\n"}, 400, "bad"),
    ("no fields", {"body": b"bad2,t=a\n"}, 400, "bad2"),
    ("unsigned", {"body": b"bad3 v=1u\n"}, 400, "bad3"),
    (
        "array of an unknown element type (protocol 2)",
        {"body": b"bad4 v==\x0e\x07\x01\x01\x00\x00\x00" + b"\x00" * 8 + b"\n"},
        400,
        "bad4",
    ),
    (
        "array claiming more bytes than sent (protocol 2)",
        {"body": b"bad4 v==\x0e\x0a\x01\x02\x00\x00\x00" + b"\x00" * 8 + b"\n"},
        400,
        "bad4",
    ),
    ("wrong precision", {"body": b"bad5 v=1 1\n", "query": "?precision=fortnight"}, 400, "bad5"),
    ("missing credentials", {"body": b"bad6 v=1\n", "headers": {"Authorization": ""}}, 401, "bad6"),
    (
        "wrong token",
        {"body": b"bad7 v=1\n", "headers": {"Authorization": "Bearer nope"}},
        401,
        "bad7",
    ),
    (
        "wrong scheme",
        {"body": b"bad8 v=1\n", "headers": {"Authorization": f"Digest {TOKEN}"}},
        401,
        "bad8",
    ),
    (
        "read-only token",
        {"body": b"bad9 v=1\n", "headers": {"Authorization": f"Token {READ_TOKEN}"}},
        403,
        "bad9",
    ),
    (
        "outside the globs",
        {"body": b"other v=1\n", "headers": {"Authorization": f"Bearer {NARROW_TOKEN}"}},
        403,
        "other",
    ),
    (
        "no create right",
        {"body": b"sensor_1 v=1\n", "headers": {"Authorization": f"Bearer {NARROW_TOKEN}"}},
        403,
        "sensor_1",
    ),
    ("dot-dot table", {"body": b".. v=1\n"}, 400, None),
    ("separator in table", {"body": b"a/b v=1\n"}, 400, None),
    ("NUL in table", {"body": b"a\x00b v=1\n"}, 400, None),
    ("two tables", {"body": b"ta v=1\ntb v=2\n"}, 400, "ta"),
    ("oversized", {"body": b"big v=1\n" * 200_000}, 413, "big"),
    ("gzip bomb", {"body": BOMB, "headers": {"Content-Encoding": "gzip"}}, 413, None),
    (
        "bad gzip",
        {"body": b"\x1f\x8b not gzip", "headers": {"Content-Encoding": "gzip"}},
        415,
        None,
    ),
    ("unknown encoding", {"body": b"enc v=1\n", "headers": {"Content-Encoding": "br"}}, 415, "enc"),
]


@pytest.fixture(scope="module")
def limited_daemon(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from tests.daemon._support import write_config

    root = tmp_path_factory.mktemp("limited")
    config = write_config(
        root / "daemon.toml",
        root / "data",
        "[http]\nmax_body_size = 1048576\nmax_decompressed_size = 1048576\n"
        "body_timeout_seconds = 1.0\n",
    )
    daemon = Daemon(config).start()
    yield daemon
    daemon.kill()


@pytest.mark.parametrize(
    ("name", "spec", "status", "table"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS]
)
def test_bad_input(
    limited_daemon: Daemon, name: str, spec: dict[str, Any], status: int, table: str | None
) -> None:
    daemon = limited_daemon
    headers = {**AUTH, **spec.get("headers", {})}
    headers = {k: v for k, v in headers.items() if v}
    got, got_headers, payload = request(
        daemon, "POST", "/write" + spec.get("query", ""), spec["body"], headers
    )
    assert got == status, payload
    assert got_headers["Content-Type"] == "application/json"
    error = json.loads(payload)
    assert set(error) >= {"code", "message", "errorId"}, error
    if name in ("malformed line",):
        assert error["line"] == 2 and error["code"] == "invalid"
    if table is not None:
        assert table_rows(daemon, table) is None
    # Every input of the table is refused: the data root holds no table at all.
    tables = [p.name for p in (daemon.config.parent / "data").iterdir()]
    assert tables == [".streamwrite-daemon.lock"], tables
    assert request(daemon, "GET", "/ping")[0] == 204  # still serving


def test_slowloris_and_nothing_outside_the_root(limited_daemon: Daemon) -> None:
    started = time.monotonic()
    status, _ = _slowloris(limited_daemon)
    assert status == 408 and time.monotonic() - started < 10
    assert table_rows(limited_daemon, "slow") is None
    root = limited_daemon.config.parent
    assert sorted(p.name for p in root.iterdir()) == ["daemon.toml", "data"]
    assert request(limited_daemon, "GET", "/ping")[0] == 204


def test_type_conflict_names_line_and_column(daemon_factory) -> None:  # type: ignore[no-untyped-def]
    daemon = daemon_factory()
    assert write(daemon, b"stat avg=1.5 1\n")[0] == 204
    status, error = write(daemon, b'stat avg=2.5 2\nstat avg="text" 3\n')
    assert status == 400 and error["line"] == 2, error
    assert "avg" in error["message"]
    assert table_rows(daemon, "stat").num_rows == 1  # type: ignore[union-attr]


def test_new_column_is_added_nullable(daemon_factory) -> None:  # type: ignore[no-untyped-def]
    daemon = daemon_factory()
    assert write(daemon, b"evo a=1i 1000000000\n")[0] == 204
    assert write(daemon, b'evo a=2i,b="new" 2000000000\n')[0] == 204
    rows = table_rows(daemon, "evo").sort_by("a").to_pylist()  # type: ignore[union-attr]
    assert [(r["a"], r["b"]) for r in rows] == [(1, None), (2, "new")]


def test_auto_create_off(daemon_factory) -> None:  # type: ignore[no-untyped-def]
    daemon = daemon_factory("[ilp]\nauto_create_tables = false\nauto_create_columns = false\n")
    status, error = write(daemon, b"nope v=1\n")
    assert status == 404, error
    assert table_rows(daemon, "nope") is None


def test_declared_table(daemon_factory) -> None:  # type: ignore[no-untyped-def]
    daemon = daemon_factory(
        '[tables.ticks]\ntimestamp = "timestamp"\npartition_by = "hour"\n'
        'schema = { timestamp = "timestamp[us, UTC] not null", sym = "symbol", px = "float64" }\n'
        "[ilp]\nauto_create_columns = false\n"
    )
    assert write(daemon, b"ticks,sym=A px=1 1700000000000000000\n")[0] == 204
    status, error = write(daemon, b"ticks,sym=A px=1,extra=2 1700000000000000000\n")
    assert status == 400 and "extra" in error["message"]
    assert table_rows(daemon, "ticks").num_rows == 1  # type: ignore[union-attr]


def test_operations_endpoints(daemon_factory) -> None:  # type: ignore[no-untyped-def]
    daemon = daemon_factory()
    status, headers, _ = request(daemon, "GET", "/ping")
    assert status == 204 and "X-Influxdb-Version" in headers
    assert request(daemon, "HEAD", "/ping")[0] == 204
    status, _, body = request(daemon, "GET", "/settings")
    assert status == 200 and json.loads(body)["config"]["line.proto.support.versions"] == [1, 2]
    assert request(daemon, "GET", "/health")[0] == 200
    assert request(daemon, "GET", "/ready")[0] == 200
    assert write(daemon, b"met v=1\n")[0] == 204
    write(daemon, b"met v=\n")
    status, headers, body = request(daemon, "GET", "/metrics")
    text = body.decode()
    assert status == 200 and 'streamwrite_rows_total{table="met"} 1.0' in text
    assert 'streamwrite_requests_total{endpoint="write",status="400"} 1.0' in text
    assert "streamwrite_commit_seconds_bucket" in text
    assert request(daemon, "GET", "/nowhere")[0] == 404
    basic = base64.b64encode(f"ingest:{TOKEN}".encode()).decode()
    assert write(daemon, b"met v=2\n", {"Authorization": f"Basic {basic}"})[0] == 204
    wrong = base64.b64encode(f"reader:{TOKEN}".encode()).decode()
    assert write(daemon, b"met v=3\n", {"Authorization": f"Basic {wrong}"})[0] == 401
    assert all(isinstance(entry, dict) and "ts" in entry for entry in daemon.logs)
    assert not any(TOKEN in json.dumps(entry) for entry in daemon.logs)


def test_sigterm_drains_and_exits_zero(daemon_factory) -> None:  # type: ignore[no-untyped-def]
    daemon = daemon_factory()
    assert write(daemon, b"drain v=1\n")[0] == 204
    started = time.monotonic()
    assert daemon.terminate() == 0
    assert time.monotonic() - started < 30
    daemon.wait_log("stopped")
    assert table_rows(daemon, "drain").num_rows == 1  # type: ignore[union-attr]
    restarted = Daemon(daemon.config).start()
    try:
        assert write(restarted, b"drain v=2\n")[0] == 204
        assert table_rows(restarted, "drain").num_rows == 2  # type: ignore[union-attr]
    finally:
        restarted.kill()


def test_in_flight_budget_answers_503_with_retry_after(daemon_factory) -> None:  # type: ignore[no-untyped-def]
    daemon = daemon_factory(
        "[limits]\nin_flight_bytes = 4096\nretry_after_seconds = 2\n"
        "[http]\nbody_timeout_seconds = 5.0\n"
    )
    host, port = daemon.http_addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as slow:
        # A body the daemon has been promised (Content-Length) holds the budget while it comes.
        slow.sendall(
            f"POST /write HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
            "Content-Length: 4000\r\n\r\nheld v=1\n".encode()
        )
        time.sleep(0.5)
        status, headers, payload = request(daemon, "POST", "/write", b"other v=1\n" * 20, {**AUTH})
        assert status == 503 and headers["Retry-After"] == "2", payload
        assert json.loads(payload)["code"] == "unavailable"
        slow.sendall(b"x" * (4000 - len("held v=1\n")))
        answer = slow.recv(65536)
        assert int(answer.split()[1]) == 400  # the held body was not ILP; its budget returns
    assert write(daemon, b"other v=1\n" * 20)[0] == 204
    status, _, body = request(daemon, "GET", "/metrics")
    assert 'streamwrite_rejections_total{reason="overloaded"} 1.0' in body.decode()


def test_https_when_certificates_are_configured(daemon_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import ssl

    from tests.daemon._support import self_signed

    cert, key = self_signed("localhost")
    (tmp_path / "cert.pem").write_bytes(cert)
    (tmp_path / "key.pem").write_bytes(key)
    daemon = daemon_factory(
        f'[http]\ntls_cert = "{tmp_path / "cert.pem"}"\ntls_key = "{tmp_path / "key.pem"}"\n'
    )
    context = ssl.create_default_context(cadata=cert.decode())
    port = daemon.http_addr.rsplit(":", 1)[1]
    conn = http.client.HTTPSConnection("localhost", int(port), context=context, timeout=30)
    conn.request("POST", "/write", body=b"secure v=1\n", headers=AUTH)
    assert conn.getresponse().status == 204
    conn.close()
    assert table_rows(daemon, "secure").num_rows == 1  # type: ignore[union-attr]
    plain = http.client.HTTPConnection(daemon.http_addr, timeout=30)
    with pytest.raises((ConnectionError, http.client.HTTPException)):
        plain.request("GET", "/ping")
        plain.getresponse()


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (multiprocessing's resource tracker left out)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == pid and b"resource_tracker" not in cmdline:
            found.append(int(stat.parent.name))
    return found


def test_parse_workers_exit_with_a_killed_daemon(daemon_factory) -> None:  # type: ignore[no-untyped-def]
    daemon = daemon_factory()
    assert daemon.proc is not None
    workers = children(daemon.proc.pid)
    assert len(workers) == 2, workers  # engine.parse_workers
    daemon.kill()
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in workers):
        assert time.monotonic() < deadline, "parse workers outlived their daemon"
        time.sleep(0.05)


def test_a_parse_worker_killed_is_replaced(daemon_factory) -> None:  # type: ignore[no-untyped-def]
    import os
    import signal as signals

    daemon = daemon_factory("[engine]\nparse_workers = 1\n")
    assert write(daemon, b"pw v=1\n")[0] == 204
    assert daemon.proc is not None
    workers = children(daemon.proc.pid)
    assert len(workers) == 1, workers
    os.kill(workers[0], signals.SIGKILL)
    time.sleep(0.5)
    status, error = write(daemon, b"pw v=2\n")
    assert status == 500 and "parser process died" in error["message"], error
    assert write(daemon, b"pw v=3\n")[0] == 204  # a new worker
    assert sorted(table_rows(daemon, "pw").column("v").to_pylist()) == [1.0, 3.0]  # type: ignore[union-attr]


def test_one_daemon_per_data_root(daemon_factory) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    daemon = daemon_factory()
    second = subprocess.run(
        [sys.executable, "-m", "streamwrite", "serve", "--config", str(daemon.config),
         "--http-listen", "127.0.0.1:0", "--flight-listen", ""],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert second.returncode == 2 and "Another daemon serves the data root" in second.stderr
    assert write(daemon, b"still v=1\n")[0] == 204
