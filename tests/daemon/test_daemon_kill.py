"""SIGKILL the daemon under load from real questdb clients, restart it, repeat: every
acknowledged row is present exactly once, client retries included.

Four sender threads each write numbered batches (a batch is one request of one table; the
rows carry ``(sender, batch, i)``). The client retries by itself while the daemon is down
(``retry_timeout``); when it gives up, the thread sends the same batch again with a new
Sender (the same bytes), as an application would. A batch is acknowledged when ``flush()``
returns. Each kill waits for a write acknowledged since the restart, then lands at a random
moment: while requests are parsed, appended, committed or answered. After the last restart:
every acknowledged batch is present once and whole, no batch is present twice or in part.
Kills: ``STREAMWRITE_DAEMON_KILLS`` (CI 8).
"""

from __future__ import annotations

import os
import random
import socket
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

import streamwrite
from tests.daemon._support import TOKEN, Daemon, write_config

questdb = pytest.importorskip("questdb")

KILLS = int(os.environ.get("STREAMWRITE_DAEMON_KILLS", "8"))
NUM_SENDERS = 4
ROWS_PER_BATCH = 500
BASE_NS = 1_700_000_000_000_000_000


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Sender(threading.Thread):
    """One client: batches 0, 1, 2... each retried until acknowledged (or stopped)."""

    def __init__(self, number: int, addr: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.number = number
        self.addr = addr
        self.stop = stop
        self.acked: list[int] = []
        self.sent: set[int] = set()
        self.errors: list[str] = []

    def run(self) -> None:
        from questdb import Sender as QSender
        from questdb import TimestampNanos

        conf = (
            f"http::addr={self.addr};token={TOKEN};protocol_version=2;retry_timeout=3000;"
            "request_timeout=5000;auto_flush=off;"
        )
        batch = 0
        while not self.stop.is_set():
            try:
                with QSender.from_conf(conf) as sender:
                    while not self.stop.is_set():
                        for i in range(ROWS_PER_BATCH):
                            sender.row(
                                f"kill_{self.number % 2}",
                                symbols={"sender": str(self.number)},
                                columns={"batch": batch, "i": i, "v": batch * 0.5},
                                at=TimestampNanos(BASE_NS + (batch * ROWS_PER_BATCH + i) * 1000),
                            )
                        self.sent.add(batch)
                        sender.flush()
                        self.acked.append(batch)
                        batch += 1
            except Exception as exc:  # down past retry_timeout: the same batch again
                self.errors.append(f"{type(exc).__name__}: {str(exc)[:300]}")
                time.sleep(0.05)


@pytest.mark.timeout(3600)
@pytest.mark.filterwarnings("ignore:questdb.Sender. Detected a burst of reconnections")
def test_sigkill_under_load(tmp_path: Path) -> None:
    port = free_port()
    config = write_config(
        tmp_path / "daemon.toml",
        tmp_path / "data",
        "[engine]\ncompaction_interval_seconds = 2.0\n",
    )
    rng = random.Random(int(os.environ.get("STREAMWRITE_DAEMON_KILL_SEED", "0")) or None)
    daemon = Daemon(config, http_listen=f"127.0.0.1:{port}")  # clients keep their address
    stop = threading.Event()
    senders = [Sender(n, f"127.0.0.1:{port}", stop) for n in range(NUM_SENDERS)]

    daemon.start()
    for sender in senders:
        sender.start()
    try:
        for _ in range(KILLS):
            # Each kill lands under load: after the restart, wait for a new acknowledgement.
            before = sum(len(sender.acked) for sender in senders)
            deadline = time.monotonic() + 30
            while sum(len(sender.acked) for sender in senders) == before:
                assert time.monotonic() < deadline, (
                    f"no write acknowledged after a restart; the daemon's log ends "
                    f"{daemon.logs[-8:]}; the senders' errors end "
                    f"{[sender.errors[-3:] for sender in senders]}"
                )
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 0.8))
            daemon.kill()
            time.sleep(rng.uniform(0.0, 0.3))
            daemon.start()
        time.sleep(2.0)  # the last batches sent are retried and acknowledged
    finally:
        stop.set()
        for sender in senders:
            sender.join(30)
        daemon.kill()
    tables = {}
    for name in ("kill_0", "kill_1"):
        path = tmp_path / "data" / name
        if (path / "_txn").exists():
            tables[name] = streamwrite.read_table(path).select(["sender", "batch", "i"])
    counts: Counter[tuple[int, int]] = Counter()
    rows_per: Counter[tuple[int, int]] = Counter()
    for table in tables.values():
        for sender_id, batch, i in zip(
            table.column("sender").to_pylist(), table.column("batch").to_pylist(),
            table.column("i").to_pylist(), strict=True,
        ):  # fmt: skip
            rows_per[(int(sender_id), batch)] += 1
            counts[(int(sender_id), batch, i)] += 1  # type: ignore[index]
    duplicated = [key for key, n in counts.items() if n > 1]
    assert not duplicated, f"{len(duplicated)} rows present twice, e.g. {duplicated[:3]}"
    partial = [key for key, n in rows_per.items() if n != ROWS_PER_BATCH]
    assert not partial, f"batches present in part: {partial[:3]}"
    num_acked = 0
    for sender in senders:
        missing = [b for b in sender.acked if (sender.number, b) not in rows_per]
        assert not missing, f"sender {sender.number}: acknowledged batches lost: {missing[:5]}"
        num_acked += len(sender.acked)
        unknown = [key for key in rows_per if key[0] == sender.number and key[1] not in sender.sent]
        assert not unknown
    print(f"{KILLS} kills, {num_acked} batches acknowledged, {sum(rows_per.values())} rows")
