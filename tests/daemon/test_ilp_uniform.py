"""The uniform-layout fast path (``streamwrite.daemon.ilp_uniform``): on bodies whose lines
share one layout it must give exactly the reference parser's rows, and on anything else it must
step aside (the general path then gives the reference's rows or error).

``STREAMWRITE_ILP_FUZZ_EXAMPLES`` sets the number of examples (CI default 150)."""

from __future__ import annotations

import os
import random
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamwrite.daemon.ilp_uniform import MIN_LINES, parse_uniform
from tests.daemon._ilp_support import check_same, feed_pieces, lines, templates

EXAMPLES = int(os.environ.get("STREAMWRITE_ILP_FUZZ_EXAMPLES", "150"))
SETTINGS = settings(
    max_examples=max(20, EXAMPLES // 3),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def questdb_v2(num_lines: int, rng: random.Random) -> bytes:
    """What the questdb client sends under protocol 2 (binary doubles, ``n`` timestamps)."""
    out = bytearray()
    for i in range(num_lines):
        price = struct.pack("<d", rng.choice([rng.uniform(-1e6, 1e6), 10.0, 2.5e-300]))
        out += b"trades,sym=S%d,side=%s price==\x10%s,qty=%di,ok=%s %dn\n" % (
            i % 7, rng.choice([b"buy", b"sell"]), price, rng.randint(-(2**40), 2**40),
            rng.choice([b"t", b"false"]), 1_700_000_000_000_000_000 + i,
        )  # fmt: skip
    return bytes(out)


def test_client_bodies_take_the_fast_path_and_equal_the_reference() -> None:
    rng = random.Random(5)
    for _ in range(20):
        body = questdb_v2(rng.randint(MIN_LINES, 400), rng)
        assert parse_uniform(body, first_line=1, factor_ns=1, now_ns=0) is not None
        check_same(body)
        text = body.replace(b"==\x10", b"=1.5,x=").split(b"\n")  # not uniform: steps aside
        assert parse_uniform(b"\n".join(text), first_line=1, factor_ns=1, now_ns=0) is None


@SETTINGS
@given(templates(), st.data(), st.booleans(), st.sampled_from(["n", "us", "s"]))
def test_uniform_bodies_equal_the_reference(template, data, final_newline, precision) -> None:  # type: ignore[no-untyped-def]
    num_lines = data.draw(st.integers(MIN_LINES, MIN_LINES + 40))
    body = b"\n".join(data.draw(lines(template)) for _ in range(num_lines))
    check_same(body + (b"\n" if final_newline else b""), precision=precision)


@SETTINGS
@given(templates(), templates(), st.data())
def test_one_odd_line_equals_the_reference(template, other, data) -> None:  # type: ignore[no-untyped-def]
    num_lines = data.draw(st.integers(MIN_LINES, MIN_LINES + 20))
    body = [data.draw(lines(template)) for _ in range(num_lines)]
    body[data.draw(st.integers(0, num_lines - 1))] = data.draw(lines(other))
    check_same(b"\n".join(body) + b"\n")


def test_feeding_a_uniform_body_in_pieces_equals_one_feed() -> None:
    rng = random.Random(11)
    body = questdb_v2(300, rng)
    whole = feed_pieces(body, [])
    assert whole[0] == "ok"
    for _ in range(40):
        cuts = rng.sample(range(len(body) + 1), rng.randint(1, 4))
        assert feed_pieces(body, cuts) == whole
    # A piece ending in a payload byte that is "\n" is not taken for a line end.
    lines = [b"t v==\x10" + struct.pack("<d", 1.0)[:7] + b"\n" + b" %dn\n" % i for i in range(80)]
    tricky = b"".join(lines)
    payload_end = len(b"t v==\x10") + 8  # the piece ends with the payload's "\n"
    assert feed_pieces(tricky, [payload_end]) == feed_pieces(tricky, [])
    assert feed_pieces(tricky, [])[0] == check_same(tricky)[0] == "ok"
