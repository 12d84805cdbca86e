"""Byte-exact vectors: the client bytes of spec section 1.3, and bodies built by the real clients
(``questdb`` Buffer under protocol 1 and 2, ``influxdb-client`` Point) when they are installed."""

from __future__ import annotations

import math
import struct
import warnings

import numpy as np
import pyarrow as pa
import pytest

from streamwrite.daemon.ilp import Kind, parse_body, to_arrow
from tests.daemon._ilp_support import NOW_NS, canon, check_same

PRICE = struct.pack("<d", 2615.54)
SPEC_V2 = (
    b"trades,sym=ETH-USD,side=sell price==\x10"
    + PRICE
    + b',qty=3i,ok=t,note="a \\"q\\" b\\\\c,d e=f",ts2=1000t 1700000000000000000n\n'
)
SPEC_V1 = (
    b'trades,sym=ETH-USD,side=sell price=2615.54,qty=3i,ok=t,note="a \\"q\\" b\\\\c,d e=f",'
    b"ts2=1000t 1700000000000000000\n"
)
EXPECTED_ROW = {
    "sym": (Kind.TAG, "ETH-USD"),
    "side": (Kind.TAG, "sell"),
    "price": (Kind.FLOAT, ("f", PRICE)),
    "qty": (Kind.INT, 3),
    "ok": (Kind.BOOL, True),
    "note": (Kind.STRING, 'a "q" b\\c,d e=f'),
    "ts2": (Kind.TS_T, 1000),
}


@pytest.mark.parametrize("body", [SPEC_V1, SPEC_V2], ids=["v1", "v2"])
def test_spec_client_bytes(body: bytes) -> None:
    check_same(body)
    rows = canon(parse_body(body * 20, now_ns=NOW_NS))  # 20 lines: the vectorised path
    assert len(rows) == 20
    for line in range(1, 21):
        assert rows[line] == ("trades", 1_700_000_000_000_000_000, EXPECTED_ROW)
    table, new = to_arrow(parse_body(body, now_ns=NOW_NS), None)
    assert new == []
    assert table.schema == pa.schema(
        [
            pa.field("sym", pa.dictionary(pa.int32(), pa.utf8())),
            pa.field("side", pa.dictionary(pa.int32(), pa.utf8())),
            pa.field("price", pa.float64()),
            pa.field("qty", pa.int64()),
            pa.field("ok", pa.bool_()),
            pa.field("note", pa.utf8()),
            pa.field("ts2", pa.timestamp("us", tz="UTC")),
            pa.field("timestamp", pa.timestamp("us", tz="UTC"), nullable=False),
        ]
    )
    assert table.column("timestamp").cast(pa.int64()).to_pylist() == [1_700_000_000_000_000]


def test_binary_double_payload_with_delimiter_bytes() -> None:
    # Every delimiter byte inside the 8 payload bytes, 20 lines (vectorised) and 1 (per line).
    payload = b'\n\r\\" ,=#'
    (value,) = struct.unpack("<d", payload)
    body = b"t f==\x10" + payload + b",g==\x10" + b"==\x10\n\\\n\r\r" + b" 5\n"
    for n in (1, 20):
        check_same(body * n)
        rows = canon(parse_body(body * n, now_ns=NOW_NS))
        assert len(rows) == n
        f = rows[n][2]["f"]
        assert f[0] == Kind.FLOAT and f[1] == ("f", struct.pack("<d", value))


def _questdb_bodies(protocol_version: int) -> bytes:
    ingress = pytest.importorskip("questdb.ingress")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        buf = ingress.Buffer(protocol_version=protocol_version)
    for i in range(30):
        buf.row(
            "trades",
            symbols={"sym": "ETH-USD", "side": "sell" if i % 2 else "buy"},
            columns={
                "price": 2615.54 + i / 7,
                "qty": 3 + i,
                "ok": i % 3 == 0,
                "note": f'a "q" b\\c,d e=f\nx\ry {i}',
                "ts2": ingress.TimestampMicros(1000 + i),
                "nan": math.nan,
                "inf": -math.inf,
            },
            at=ingress.TimestampNanos(1_700_000_000_000_000_000 + i),
        )
    buf.row(
        "t a", symbols={"s k": "v a,=\\\n"}, columns={"f x": 1.5}, at=ingress.TimestampMicros(17)
    )
    buf.row("t a", symbols={"s k": "w"}, columns={"f x": 2.5}, at=ingress.ServerTimestamp)
    return bytes(buf)


@pytest.mark.parametrize("protocol_version", [1, 2])
def test_questdb_client_buffer(protocol_version: int) -> None:
    body = _questdb_bodies(protocol_version)
    if protocol_version == 2:
        assert b"price==\x10" in body and b"000n\n" in body
    check_same(body)
    batches = parse_body(body, now_ns=NOW_NS)
    rows = canon(batches)
    assert [b.table for b in batches] == ["trades", "t a"]
    for i in range(30):
        table, ts, cols = rows[i + 1]
        assert (table, ts) == ("trades", 1_700_000_000_000_000_000 + i)
        assert cols["side"] == (Kind.TAG, "sell" if i % 2 else "buy")
        assert cols["price"] == (Kind.FLOAT, ("f", struct.pack("<d", 2615.54 + i / 7)))
        assert cols["qty"] == (Kind.INT, 3 + i)
        assert cols["ok"] == (Kind.BOOL, i % 3 == 0)
        assert cols["note"] == (Kind.STRING, f'a "q" b\\c,d e=f\nx\ry {i}')
        assert cols["ts2"] == (Kind.TS_T, 1000 + i)
        assert math.isnan(struct.unpack("<d", cols["nan"][1][1])[0])
        assert cols["inf"][1] == ("f", struct.pack("<d", -math.inf))
    assert rows[31] == (
        "t a",
        17_000,
        {"s k": (Kind.TAG, "v a,=\\\n"), "f x": (Kind.FLOAT, ("f", struct.pack("<d", 1.5)))},
    )
    assert rows[32] == (
        "t a",
        NOW_NS,
        {"s k": (Kind.TAG, "w"), "f x": (Kind.FLOAT, ("f", struct.pack("<d", 2.5)))},
    )


def test_influxdb_client_points() -> None:
    client = pytest.importorskip("influxdb_client")
    points = [
        client.Point("m e")
        .tag("t k=", "v a,=")
        .field("f", 1.5)
        .field("i", 3 + n)
        .field("s", 'a"b\\c')
        .field("b", n % 2 == 0)
        .time(1_700_000_000_000_000_000 + n)
        for n in range(12)
    ]
    body = "\n".join(p.to_line_protocol() for p in points).encode()  # as the write API joins them
    assert body.startswith(
        b'm\\ e,t\\ k\\==v\\ a\\,\\= b=true,f=1.5,i=3i,s="a\\"b\\\\c" 1700000000000000000\n'
    )
    check_same(body)
    rows = canon(parse_body(body, now_ns=NOW_NS, precision="ns"))
    assert rows[12] == (
        "m e",
        1_700_000_000_000_000_011,
        {
            "t k=": (Kind.TAG, "v a,="),
            "b": (Kind.BOOL, False),
            "f": (Kind.FLOAT, ("f", struct.pack("<d", 1.5))),
            "i": (Kind.INT, 14),
            "s": (Kind.STRING, 'a"b\\c'),
        },
    )


@pytest.mark.parametrize(
    ("precision", "token", "expected_ns"),
    [
        ("n", b"17", 17),
        ("ns", b"17", 17),
        ("u", b"17", 17_000),
        ("us", b"17", 17_000),
        ("ms", b"17", 17_000_000),
        ("s", b"17", 17 * 10**9),
        ("m", b"2", 120 * 10**9),
        ("h", b"1", 3600 * 10**9),
        ("s", b"17n", 17),
        ("s", b"17t", 17_000),
        ("n", b"17m", 17_000_000),
    ],
)
def test_precision_and_timestamp_suffix(precision: str, token: bytes, expected_ns: int) -> None:
    for n in (1, 10):
        body = b"t f=1i " + token + b"\n"
        batches = parse_body(body * n, precision=precision, now_ns=NOW_NS)
        assert batches[0].timestamp_ns.tolist() == [expected_ns] * n
        check_same(body * n, precision=precision)


def test_line_ends_comments_and_missing_final_newline() -> None:
    body = b"# comment\r\n\r\nt f=1i 5\r\nt f=2i 6\rt f=3i 7\n\nt f=4i 8"
    batches = parse_body(body, now_ns=NOW_NS)
    assert batches[0].line_numbers.tolist() == [3, 4, 5, 7]
    assert np.array_equal(batches[0].timestamp_ns, [5, 6, 7, 8])
    check_same(body)
