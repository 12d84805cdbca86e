"""Arrays end to end: the real ``questdb`` client sends numpy arrays (protocol 2, negotiated
through ``/settings``) to a real ``streamwrite serve``; the table reads back with
``streamwrite.read_table``. Flight ``DoPut`` batches with list, struct and map columns go
through the daemon unchanged.

Both need streamwrite to write and read nested columns (issue 15, other branches): until
they land, the table write fails (``UnsupportedError ... flat schemas only`` on the old main,
"expects Arrow type double, got list" once the nested schema mapping landed) and the tests are
``xfail(strict=True)`` on a probe that writes and reads a list column with streamwrite itself:
once the probe passes they run as normal tests and must pass."""

from __future__ import annotations

import json
import urllib.request

import numpy as np
import pyarrow as pa
import pyarrow.flight as fl
import pytest

import streamwrite
from tests.daemon._flight_support import SCHEMA, FlightDaemon, make_batch, put
from tests.daemon._support import TOKEN, Daemon

questdb = pytest.importorskip("questdb")


BASE_NS = 1_700_000_000_000_000_000


def test_settings_advertise_protocol_2(daemon_factory) -> None:  # type: ignore[no-untyped-def]
    daemon: Daemon = daemon_factory()
    with urllib.request.urlopen(f"http://{daemon.http_addr}/settings") as response:
        config = json.loads(response.read())["config"]
    assert config["line.proto.support.versions"] == [1, 2]


def test_questdb_client_arrays_round_trip(daemon_factory) -> None:  # type: ignore[no-untyped-def]
    from questdb import Sender, TimestampNanos

    daemon: Daemon = daemon_factory()
    rng = np.random.default_rng(3)
    sent = []
    conf = f"http::addr={daemon.http_addr};token={TOKEN};retry_timeout=0;"
    with Sender.from_conf(conf) as sender:
        assert sender.protocol_version == 2
        for i in range(300):
            bids = rng.normal(size=(2, i % 5))  # ragged across lines, some empty
            columns: dict[str, object] = {"bids": bids, "n": i}
            if i % 7:
                columns["curve"] = rng.normal(size=i % 3)
            sent.append((bids, columns.get("curve")))
            sender.row(
                "book",
                symbols={"sym": f"S{i % 3}"},
                columns=columns,
                at=TimestampNanos(BASE_NS + i),
            )
        sender.flush()
    table = streamwrite.read_table(daemon.config.parent / "data" / "book").sort_by("n")
    assert table.schema.field("bids").type == pa.list_(pa.list_(pa.float64()))
    assert table.schema.field("curve").type == pa.list_(pa.float64())
    assert table.column("bids").to_pylist() == [b.tolist() for b, _ in sent]
    assert table.column("curve").to_pylist() == [None if c is None else c.tolist() for _, c in sent]


def readme_arrays(addr: str, token: str) -> None:
    """The README's arrays snippet, as written (address and token substituted)."""
    import numpy as np
    from questdb import Sender, TimestampNanos

    with Sender.from_conf(f"http::addr={addr};token={token};") as sender:  # protocol 2
        sender.row(
            "book",
            symbols={"sym": "ETH-USD"},
            columns={
                "bids": np.array([[2615.5, 2615.4], [1.25, 3.0]]),  # list<list<float64>>
                "curve": np.linspace(0.0, 1.0, 5),  # list<float64>
                "mid": 2615.45,
            },
            at=TimestampNanos.now(),
        )
        sender.flush()


def test_readme_arrays_snippet(daemon_factory) -> None:  # type: ignore[no-untyped-def]
    daemon: Daemon = daemon_factory()
    readme_arrays(daemon.http_addr, TOKEN)
    table = streamwrite.read_table(daemon.config.parent / "data" / "book")
    assert table.column("bids").to_pylist() == [[[2615.5, 2615.4], [1.25, 3.0]]]
    assert table.column("curve").to_pylist() == [[0.0, 0.25, 0.5, 0.75, 1.0]]
    assert table.schema.field("bids").type == pa.list_(pa.list_(pa.float64()))


def nested_batch(start: int, num_rows: int) -> pa.RecordBatch:
    base = make_batch(start, num_rows)
    ids = range(start, start + num_rows)
    return pa.record_batch(
        [
            *base.columns,
            pa.array(
                [[float(i)] * (i % 3) if i % 4 else None for i in ids], pa.list_(pa.float64())
            ),
            pa.array(
                [{"a": i, "b": f"x{i}"} for i in ids],
                pa.struct([("a", pa.int64()), ("b", pa.string())]),
            ),
            pa.array([[(f"k{i}", i)] for i in ids], pa.map_(pa.string(), pa.int64())),
        ],
        names=[*SCHEMA.names, "l", "s", "m"],
    )


def test_a_type_the_writer_refuses_is_a_bad_request_not_an_internal_error(
    flight_daemon: FlightDaemon,
) -> None:
    """Creating a table from columns the writer cannot store is the request's fault: the
    client gets the writer's reason as a bad request (not a retryable internal error), and no
    table is left behind."""
    batch = make_batch(0, 3)
    union = pa.UnionArray.from_sparse(
        pa.array([0, 1, 0], pa.int8()), [pa.array([1, 2, 3]), pa.array(["a", "b", "c"])]
    )
    batch = batch.append_column("u", union)
    with pytest.raises(fl.FlightServerError, match=r"table: odd; cannot create it: .*union"):
        put(flight_daemon, "odd", [(batch, None)], schema=batch.schema)
    assert not flight_daemon.exists("odd")


def test_flight_do_put_nested_columns(flight_daemon: FlightDaemon) -> None:
    batches = [nested_batch(i * 20, 20) for i in range(3)]
    acks = put(flight_daemon, "nested", [(b, None) for b in batches], schema=batches[0].schema)
    assert [a["rows"] for a in acks] == [20, 20, 20]
    got = flight_daemon.read_back("nested").sort_by("timestamp")
    want = pa.Table.from_batches(batches)
    assert got.schema.field("l").type == want.schema.field("l").type
    assert got.select(want.schema.names).to_pylist() == want.to_pylist()


def test_conform_gives_nested_rows_the_table_field_names() -> None:
    from streamwrite.daemon.service import conform

    element = pa.list_(pa.field("element", pa.int64()))
    rows = pa.table({"l": pa.array([[1, 2], None], element), "m": pa.array([{"x": 1}, None])})
    schema = pa.schema([pa.field("l", pa.list_(pa.int64())), pa.field("m", rows.schema[1].type)])
    table, new = conform(rows, schema)
    assert new == []
    assert str(table.column("l").type) == "list<item: int64>"
    assert table.column("l").to_pylist() == [[1, 2], None]
    assert table.column("m").to_pylist() == [{"x": 1}, None]
