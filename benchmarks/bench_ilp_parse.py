"""ILP parser benchmark: the daemon's vectorised parser against the per-line reference, same run.

Bodies of ``--lines`` lines (10k by default) in the shapes the real clients send (the bytes
match ``questdb.Buffer`` and ``influxdb_client.Point`` output; see
tests/daemon/test_ilp_vectors.py):

- **questdb v2**: ``trades,sym=ETH-USD,side=sell price==\\x10<f64 LE>,qty=3i 1700000000000000000n``
  (protocol 2: every float is a binary double, the timestamp carries its ``n`` suffix);
- **questdb v1**: the same as text (``price=2615.54``, no suffix);
- **influx**: ``cpu,host=server01,region=us-west idle=12i,msg="fine",ok=true,usage=0.64 17..``;
- **influx, escaped**: tag values with an escaped space (every line takes the per-line path: the
  price of the fallback);
- **questdb v2 arrays**: ``book,sym=ETH-USD bids==\\x0e<2x10 f64>,asks==\\x0e<2x10 f64>,n=3i
  17..n`` (``Sender.row`` with 2-d float64 numpy arrays; 2 x 20 doubles a line).

Each body is parsed by ``parse_body`` (vectorised) and ``parse_body_reference`` (pure Python,
per line) alternately, best of ``--repeat``; lines/s, MB/s and the speed-up are printed with the
machine's load average (the machine is shared: read the ratio). ``to_arrow`` (typing to a new
table) is timed on the same batches. Run from the repository root::

    .venv/bin/python benchmarks/bench_ilp_parse.py
    .venv/bin/python benchmarks/bench_ilp_parse.py --quick
"""

from __future__ import annotations

import random
import struct
import sys
from collections.abc import Callable

from _common import MB, Report, bench_parser, best_of, load_average, markdown_table, verdict

from streamwrite.daemon.ilp import parse_body, to_arrow
from streamwrite.daemon.ilp_reference import parse_body_reference

NOW_NS = 1_700_000_000_000_000_000


def questdb_v2(num_lines: int, rng: random.Random) -> bytes:
    """Returns a protocol-2 body as the questdb client writes it (binary doubles, ``n`` suffix)."""
    out = bytearray()
    for i in range(num_lines):
        side = b"sell" if i % 3 else b"buy"
        price = struct.pack("<d", 2615.54 + rng.random() * 100)
        out += b"trades,sym=ETH-USD,side=" + side + b" price==\x10" + price
        out += b",qty=%di %dn\n" % (rng.randrange(1, 1000), NOW_NS + i * 1000)
    return bytes(out)


def questdb_v1(num_lines: int, rng: random.Random) -> bytes:
    """Returns the protocol-1 text of the same rows."""
    out = bytearray()
    for i in range(num_lines):
        side = b"sell" if i % 3 else b"buy"
        price = repr(round(2615.54 + rng.random() * 100, 2)).encode()
        out += b"trades,sym=ETH-USD,side=" + side + b" price=" + price
        out += b",qty=%di %d\n" % (rng.randrange(1, 1000), NOW_NS + i * 1000)
    return bytes(out)


def influx(num_lines: int, rng: random.Random, escaped: bool = False) -> bytes:
    """Returns influxdb-client ``Point`` lines (joined by LF, no final LF)."""
    lines = []
    host = b"server\\ 01" if escaped else b"server01"
    for i in range(num_lines):
        usage = repr(round(rng.random(), 4)).encode()
        lines.append(
            b"cpu,host="
            + host
            + b',region=us-west idle=%di,msg="fine",ok=true,usage=%s %d'
            % (rng.randrange(100), usage, NOW_NS + i)
        )
    return b"\n".join(lines)


def questdb_arrays(num_lines: int, rng: random.Random) -> bytes:
    """Returns protocol-2 lines with two 2 x 10 float64 arrays each (an order book's levels)."""
    header = b"\x0e\x0a\x02" + struct.pack("<2I", 2, 10)
    out = bytearray()
    for i in range(num_lines):
        bids = struct.pack("<20d", *(rng.random() for _ in range(20)))
        asks = struct.pack("<20d", *(rng.random() for _ in range(20)))
        out += b"book,sym=ETH-USD bids==" + header + bids + b",asks==" + header + asks
        out += b",n=%di %dn\n" % (i, NOW_NS + i * 1000)
    return bytes(out)


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--lines", type=int, default=10_000, help="lines per body (default 10k)")
    parser.add_argument("--repeat", type=int, default=7, help="best of N (default 7)")
    args = parser.parse_args(argv)
    num_lines = 1_000 if args.quick else args.lines
    repeat = 2 if args.quick else args.repeat
    report = Report("ilp_parse", args, [f"- lines per body: {num_lines:,}; best of {repeat}"])
    rng = random.Random(13)
    bodies: list[tuple[str, bytes]] = [
        ("questdb v2", questdb_v2(num_lines, rng)),
        ("questdb v1", questdb_v1(num_lines, rng)),
        ("influx", influx(num_lines, rng)),
        ("influx, escaped", influx(num_lines, rng, escaped=True)),
        ("questdb v2 arrays", questdb_arrays(num_lines, rng)),
    ]
    rows = []
    verdicts = []
    for name, body in bodies:
        fast: Callable[[], object] = lambda b=body: parse_body(b, now_ns=NOW_NS)  # noqa: E731
        ref: Callable[[], object] = lambda b=body: parse_body_reference(b, now_ns=NOW_NS)  # noqa: E731
        fast_s = ref_s = float("inf")
        batches = None
        for _ in range(repeat):  # interleaved, so a noisy spell hits both alike
            t, batches = best_of(fast, 1)
            fast_s = min(fast_s, t)
            ref_s = min(ref_s, best_of(ref, 1)[0])
        assert isinstance(batches, list)
        arrow_s, _ = best_of(lambda bs=batches: to_arrow(bs, None), repeat)
        rows.append(
            [
                name,
                f"{len(body) / MB:.2f}",
                f"{num_lines / fast_s / 1e6:.2f}",
                f"{len(body) / fast_s / MB:.0f}",
                f"{num_lines / ref_s / 1e6:.2f}",
                f"{ref_s / fast_s:.1f}x",
                f"{num_lines / arrow_s / 1e6:.2f}",
            ]
        )
        if name == "questdb v2":
            verdicts.append(
                verdict(
                    "questdb v2 parse >= 3M lines/s",
                    f"{num_lines / fast_s / 1e6:.2f}M",
                    num_lines / fast_s >= 3e6,
                )
            )
    print(f"- load average: {load_average()}\n")
    print(
        markdown_table(
            [
                "body",
                "MB",
                "Mlines/s",
                "MB/s",
                "reference Mlines/s",
                "speed-up",
                "to_arrow Mrows/s",
            ],
            rows,
        )
    )
    print()
    return report.finish(verdicts)


if __name__ == "__main__":
    sys.exit(main())
