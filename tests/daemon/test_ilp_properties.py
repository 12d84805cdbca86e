"""Property tests: the vectorised ILP parser equals the per-line reference on generated bodies,
feeding a body in pieces equals one feed, and fuzzed input only ever raises BadRequestError.

``STREAMWRITE_ILP_FUZZ_EXAMPLES`` sets the number of examples per test (CI default 150)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.daemon._ilp_support import bodies, check_same, feed_pieces

EXAMPLES = int(os.environ.get("STREAMWRITE_ILP_FUZZ_EXAMPLES", "150"))
CORPUS = Path(__file__).parent / "ilp_corpus"
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=5000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=False,
)


@SETTINGS
@given(bodies(), st.sampled_from(["n", "us", "ms", "s", "h"]))
def test_fast_parser_equals_reference_on_generated_bodies(body: bytes, precision: str) -> None:
    check_same(body, precision=precision)


@SETTINGS
@given(bodies(), st.data())
def test_feed_in_pieces_equals_one_feed(body: bytes, data: st.DataObject) -> None:
    whole = feed_pieces(body, [])
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=6))
    assert feed_pieces(body, cuts) == whole
    assert whole[0] == check_same(body)[0]


def test_feed_split_at_every_position_equals_one_feed() -> None:
    rng = random.Random(7)
    body = (
        b"trades,sym=ETH-USD,side=sell price==\x10\x0a\x5c\x22\x2c\x20\x3d\x0d\x40,qty=3i 17n\r\n"
        b'm\\ x,t\\ k=v\\=a s="q\\"\\\\ \\\nz",b=t\r# c\n\nm f=1.5 12\n'
    ) * 2
    whole = feed_pieces(body, [])
    assert whole[0] == "ok" and len(whole[1]) == 6
    for cut in range(len(body) + 1):
        assert feed_pieces(body, [cut]) == whole, cut
    for _ in range(50):
        assert feed_pieces(body, rng.sample(range(len(body) + 1), 5)) == whole


@SETTINGS
@given(st.binary(max_size=300))
def test_random_bytes_only_raise_bad_request(body: bytes) -> None:
    check_same(body)


@SETTINGS
@given(bodies(), st.data())
def test_mutated_and_truncated_bodies_only_raise_bad_request(
    body: bytes, data: st.DataObject
) -> None:
    mutated = bytearray(body)
    for _ in range(data.draw(st.integers(1, 4))):
        if not mutated:
            break
        i = data.draw(st.integers(0, len(mutated) - 1))
        op = data.draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        if op == "flip":
            mutated[i] = data.draw(
                st.sampled_from([*b'\n\r\\"=, #\x10\x0e\x00\xff\x06\x20', mutated[i] ^ 0x20])
            )
        elif op == "insert":
            mutated[i:i] = data.draw(
                st.sampled_from(
                    [b"\\", b"==\x10", b'"', b"\n", b" ", b"=", b"==\x0e", b"==\x0e\x0a\x01"]
                )
            )
        elif op == "delete":
            del mutated[i]
        else:
            del mutated[i:]
    check_same(bytes(mutated))


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.ilp")), ids=lambda p: p.name)
def test_corpus_of_truncated_and_mutated_requests(path: Path) -> None:
    body = path.read_bytes()
    outcome = check_same(body)
    pieces = feed_pieces(body, [len(body) // 3, len(body) // 2])
    assert pieces[0] == outcome[0]


def test_large_line_fed_byte_by_byte_is_linear() -> None:
    # A 200 kB line of escaped line ends fed in 1 kB pieces: each feed scans only its bytes.
    body = b'm s="' + b"\\\n" * 100_000 + b'" 1\n'
    pieces = [len(body) * k // 200 for k in range(1, 200)]
    status, rows = feed_pieces(body, pieces)
    assert status == "ok" and rows[1][2]["s"] == (4, "\n" * 100_000)
