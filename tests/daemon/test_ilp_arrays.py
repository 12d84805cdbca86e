"""ILP protocol-2 arrays (``name==`` 0x0E elem ndims shape data): the real ``questdb`` client's
bytes, every daemon parse path (splitter, vectorised groups, per-line reference) agreeing on
payloads full of delimiter bytes, the Arrow types (n-d -> n nested lists), the first line fixing
a column's type, and the limits (line errors naming the right line, never a crash)."""

from __future__ import annotations

import os
import random
import struct
import warnings

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamwrite.daemon.errors import BadRequestError
from streamwrite.daemon.ilp import parse_body, to_arrow
from streamwrite.daemon.ilp_reference import parse_body_reference
from streamwrite.daemon.ilp_types import array_type, nested_lists
from tests.daemon._ilp_support import NOW_NS, array_bytes, check_same, feed_pieces

EXAMPLES = int(os.environ.get("STREAMWRITE_ILP_FUZZ_EXAMPLES", "150"))
GOOD = b"trades,sym=a price=1.5,qty=3i 1700000000000000000\n" * 12
F64 = pa.list_(pa.float64())
F64_2D = pa.list_(F64)
I64 = pa.list_(pa.int64())


def table_of(body: bytes, schema: pa.Schema | None = None) -> pa.Table:
    check_same(body)
    table, _ = to_arrow(parse_body(body, now_ns=NOW_NS), schema)
    return table


def client_buffer() -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from questdb.ingress import Buffer
    return Buffer(protocol_version=2)


def test_questdb_client_bytes_are_the_documented_grammar_and_parse() -> None:
    pytest.importorskip("questdb")
    from questdb import TimestampNanos

    buf = client_buffer()
    rows = []
    for i in range(20):  # more lines than a vectorised group needs
        x = np.arange(i % 4, dtype=np.float64) * 1.5
        m = np.arange(6, dtype=np.float64).reshape(2, 3) + i
        cube = np.full((2, 1, 2), float(i))
        rows.append((x, m, cube))
        buf.row(  # type: ignore[attr-defined]
            "t",
            symbols={"s": "a"},
            columns={"x": x, "m": m, "cube": cube, "n": i},
            at=TimestampNanos(1000 + i),
        )
    body = bytes(buf)  # type: ignore[call-overload]
    first = body.split(b" ", 1)[1]
    x0, m0 = rows[0][0], rows[0][1]
    assert first.startswith(
        b"x==\x0e\x0a\x01" + struct.pack("<I", 0)
        + b",m==\x0e\x0a\x02" + struct.pack("<2I", 2, 3) + m0.astype("<f8").tobytes()
    )  # fmt: skip
    assert len(x0) == 0
    table = table_of(body)
    assert table.schema.field("x").type == F64
    assert table.schema.field("m").type == F64_2D
    assert table.schema.field("cube").type == pa.list_(F64_2D)
    assert table.column("x").to_pylist() == [r[0].tolist() for r in rows]
    assert table.column("m").to_pylist() == [r[1].tolist() for r in rows]
    assert table.column("cube").to_pylist() == [r[2].tolist() for r in rows]
    assert table.column("n").to_pylist() == list(range(20))
    # A non-contiguous view and an empty second dimension are sent row-major, as numpy reads.
    buf = client_buffer()
    strided = np.arange(12, dtype=np.float64).reshape(3, 4)[:, ::2]
    buf.row("t", columns={"v": strided, "e": np.zeros((3, 0))}, at=TimestampNanos(1))  # type: ignore[attr-defined]
    table = table_of(bytes(buf))  # type: ignore[call-overload]
    assert table.column("v").to_pylist() == [strided.tolist()]
    assert table.column("e").to_pylist() == [[[], [], []]]


def test_int64_arrays_ragged_lines_and_absent_fields() -> None:
    values = [np.arange(k, dtype=np.int64) * -(2**40) for k in (3, 0, 1, 5)] * 4
    lines = [b"t x=" + array_bytes(v, 6) + b",k=%di" % i for i, v in enumerate(values)]
    lines.insert(5, b"t k=99i")  # no array: a null list
    table = table_of(b"\n".join(lines) + b"\n")
    assert table.schema.field("x").type == I64
    expected: list[object] = [v.tolist() for v in values]
    expected.insert(5, None)
    assert table.column("x").to_pylist() == expected


def test_nan_payloads_and_extremes_are_kept_bit_exact() -> None:
    raw = np.array([0x7FF0000000000001, 0xFFF8000000000ABC, 0x8000000000000000, 1], np.uint64)
    doubles = raw.view("<f8")
    body = b"".join(b"t a=" + array_bytes(doubles) + b"\n" for _ in range(10))
    (batch,) = parse_body(body, now_ns=0)
    got = batch.columns["a"].parts[0].values.flatten().to_numpy(zero_copy_only=False)
    assert got.view(np.uint64).tolist() == raw.tolist() * 10


# Bytes that end lines, delimit tokens, escape, quote or start binary values.
NASTY = b'\n\r ,=\\"#==\x10==\x0e\x0a\x01'


def nasty_array(rng: random.Random, ndims: int) -> np.ndarray:
    # (3, 3, 3, 0) would make more nested lists than its value has bytes: refused.
    shape = tuple(rng.randint(0 if ndims < 4 else 1, 3) for _ in range(ndims))
    count = int(np.prod(shape))
    raw = bytes(rng.choice(NASTY) for _ in range(8 * count))
    return np.frombuffer(raw, "<f8").reshape(shape)


def test_payloads_full_of_delimiters_split_the_same_everywhere() -> None:
    rng = random.Random(11)
    lines = []
    for i in range(60):
        a, b = nasty_array(rng, 1), nasty_array(rng, 2)
        lines.append(b"t,s=x a=" + array_bytes(a) + b',s2="q",b=' + array_bytes(b) + b" %dn" % i)
    for ending in (b"\n", b"\r\n", b"\r"):
        body = ending.join(lines) + ending
        status, rows = check_same(body)
        assert status == "ok" and len(rows[0]) == 60
        pieces = feed_pieces(body, [])
        assert pieces[0] == "ok"
        cuts = [rng.randrange(len(body) + 1) for _ in range(40)]
        for cut in cuts:
            assert feed_pieces(body, [cut]) == pieces
        assert feed_pieces(body, cuts[:6]) == pieces


def test_array_header_fed_byte_by_byte() -> None:
    body = (
        b"t a="
        + array_bytes(np.arange(4.0).reshape(2, 2))
        + b" 5\nt a="
        + array_bytes(np.arange(3.0))
        + b" 6\n"
    )
    whole = feed_pieces(body, [])
    assert whole[0] == "ok"
    assert feed_pieces(body, list(range(len(body) + 1))) == whole


def test_type_is_fixed_by_the_first_line() -> None:
    one = b"t a=" + array_bytes(np.ones(2)) + b"\n"
    two = b"t a=" + array_bytes(np.ones((2, 2))) + b"\n"
    ints = b"t a=" + array_bytes(np.ones(2, np.int64), 6) + b"\n"
    for body, line, message in [
        (one * 10 + two, 11, "protocol type: DOUBLE[][] to column type: DOUBLE[]"),
        (two + one * 10, 2, "protocol type: DOUBLE[] to column type: DOUBLE[][]"),
        (one * 3 + ints * 9, 4, "protocol type: LONG[] to column type: DOUBLE[]"),
        (one + b"t a=1.5\n", 2, "protocol type: FLOAT to column type: DOUBLE[]"),
        (b"t a=1.5\n" + one, 2, "protocol type: DOUBLE[] to column type: DOUBLE"),
        (b"t,a=x b=1\n" + one * 9, 2, "protocol type: DOUBLE[] to column type: SYMBOL"),
    ]:
        with pytest.raises(BadRequestError) as info:
            table_of(body)
        assert info.value.line == line, body
        assert str(info.value) == f"table: t, column: a; cast error from {message}"


def test_into_an_existing_schema() -> None:
    body = b"t a=" + array_bytes(np.arange(3.0)) + b",b=1i\n"
    schema = pa.schema([pa.field("a", pa.large_list(pa.float64())), pa.field("c", F64)])
    table, new = to_arrow(parse_body(body, now_ns=0), schema)
    assert table.schema.field("a").type == pa.large_list(pa.float64())
    assert table.column("a").to_pylist() == [[0.0, 1.0, 2.0]]
    assert table.column("c").to_pylist() == [None]
    assert [f.name for f in new] == ["b", "timestamp"]
    for column_type, name in [
        (pa.list_(pa.float32()), "FLOAT[]"),
        (F64_2D, "DOUBLE[][]"),
        (pa.float64(), "DOUBLE"),
        (pa.struct([("x", pa.float64())]), "STRUCT<X: DOUBLE>"),
    ]:
        with pytest.raises(BadRequestError) as info:
            to_arrow(parse_body(body, now_ns=0), pa.schema([pa.field("a", column_type)]))
        assert str(info.value).endswith(f"DOUBLE[] to column type: {name}")
    with pytest.raises(BadRequestError, match="FLOAT to column type: DOUBLE\\[\\]"):
        to_arrow(parse_body(b"t a=1\n", now_ns=0), pa.schema([pa.field("a", F64)]))


def header(elem: int, shape: tuple[int, ...]) -> bytes:
    return b"==\x0e" + bytes([elem, len(shape)]) + struct.pack(f"<{len(shape)}I", *shape)


LIMIT_CASES = [
    (  # the product overflows 64 bits
        b"t a" + header(10, (0xFFFFFFFF,) * 3) + b"\x00" * 8,
        "ARRAY_TOO_LARGE: field 'a' has an array of shape [4294967295, 4294967295, 4294967295]",
    ),
    (
        b"t a" + header(6, (1 << 16, 1 << 15)) + b"\x00" * 8,
        "ARRAY_TOO_LARGE: field 'a' has an array of shape [65536, 32768], 2147483648 elements; "
        "at most 2147483647 are accepted.",
    ),
    (  # 2**28 empty lists out of an 11-byte value
        b"t a" + header(10, (1 << 28, 0)),
        "ARRAY_TOO_LARGE: field 'a' has an array of shape [268435456, 0], which makes 268435456 "
        "nested lists out of a value of 11 bytes; at most one per byte is accepted.",
    ),
    (
        b"t a" + header(10, (4,)) + b"\x00" * 31,
        "Could not parse entire line, field value is invalid. Field: a; the array of shape [4] "
        "needs 32 bytes of elements and the line has 31.",
    ),
    (
        b"t a" + header(10, (1 << 20,)) + b"\x00" * 16,
        "Could not parse entire line, field value is invalid. Field: a; the array of shape "
        "[1048576] needs 8388608 bytes of elements and the line has 16.",
    ),
    (b"t a" + header(10, (2,))[:-2], "Could not parse entire line, field value is invalid."),
    (b"t a==\x0e\x0a", "Could not parse entire line, field value is invalid. Field: a"),
    (
        b"t a" + header(10, (1,)) + b"\x00" * 8 + b"x,b=1",
        "Could not parse entire line, field value is invalid. Field: a",
    ),
    (
        b"t,a" + header(10, (1,)) + b"\x00" * 8 + b" b=1",
        "Could not parse entire line. Symbol value is missing: a",
    ),
]


@pytest.mark.parametrize(("line", "message"), LIMIT_CASES, ids=range(len(LIMIT_CASES)))
def test_limits_are_line_errors(line: bytes, message: str) -> None:
    # A value claiming more bytes than the body has runs to its end: the line is the last one.
    truncated = "needs" in message or line[-1:] == b"\x0a"
    bodies = [(line, 1), (GOOD + line, 13)]
    if not truncated:
        bodies += [(GOOD + line + b"\n" + GOOD, 13), (GOOD + (line + b"\n") * 10, 13)]
    for body, number in bodies:
        with pytest.raises(BadRequestError) as info:
            parse_body(body, now_ns=NOW_NS)
        assert info.value.line == number, body
        assert str(info.value).startswith(message), str(info.value)
        assert info.value.status == 400
        check_same(body)
        assert feed_pieces(body, [len(body) // 2])[1][0] == number


def test_a_claim_past_the_body_swallows_the_lines_after_it() -> None:
    """Like QuestDB (which waits for the claimed bytes), the array's line runs to the end of
    the body: the error names it, not a later line."""
    body = GOOD + b"t a" + header(10, (1000,)) + b"\x00" * 8 + b"\n" + GOOD
    with pytest.raises(BadRequestError, match="needs 8000 bytes") as info:
        parse_body(body, now_ns=0)
    assert info.value.line == 13
    check_same(body)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from([6, 10]),
    st.integers(1, 4).flatmap(
        lambda ndims: st.lists(st.tuples(*[st.integers(0, 3)] * ndims), min_size=1, max_size=6)
    ),
    st.randoms(use_true_random=False),
)
def test_nested_lists_equal_numpy_tolist(
    elem: int, shapes: list[tuple[int, ...]], rng: random.Random
) -> None:
    ndims = len(shapes[0])
    dtype = "<f8" if elem == 10 else "<i8"
    arrays = [np.frombuffer(rng.randbytes(8 * int(np.prod(s))), dtype).reshape(s) for s in shapes]
    flat = np.concatenate([a.ravel() for a in arrays])
    got = nested_lists(elem, np.array(shapes, dtype=np.int64), flat)
    got.validate(full=True)
    assert got.type == array_type(elem, ndims)
    # Structure and bits (NaN != NaN): the same offsets over the int64 view of the bytes.
    as_ints = nested_lists(6, np.array(shapes, dtype=np.int64), flat.view("<i8"))
    assert as_ints.equals(pa.array([a.view("<i8").tolist() for a in arrays], array_type(6, ndims)))
    leaf = got
    for _ in range(ndims):
        leaf = leaf.flatten()
    assert leaf.to_numpy(zero_copy_only=False).view("<i8").tolist() == flat.view("<i8").tolist()


def test_reference_reads_the_same_arrays_as_numpy() -> None:
    rng = random.Random(5)
    arrays = [nasty_array(rng, rng.randint(1, 4)) for _ in range(30)]
    body = b"".join(b"t%d a=" % a.ndim + array_bytes(a) + b"\n" for a in arrays)
    by_table = {b.table: b for b in parse_body_reference(body, now_ns=0)}
    for ndims in range(1, 5):
        want = [a for a in arrays if a.ndim == ndims]
        if not want:
            continue
        (part,) = by_table[f"t{ndims}"].columns["a"].parts
        assert part.values.type == array_type(10, ndims)
        leaf = part.values
        for _ in range(ndims):
            leaf = leaf.flatten()
        bits = leaf.to_numpy(zero_copy_only=False).view("<u8")
        assert bits.tolist() == np.concatenate([a.ravel() for a in want]).view("<u8").tolist()
        assert [exact(v) for v in part.values.to_pylist()] == [exact(a.tolist()) for a in want]


def exact(value: object) -> object:
    """Nested lists with each float as its 8 bytes (NaN payloads compare)."""
    if isinstance(value, list):
        return tuple(exact(v) for v in value)
    return struct.pack("<d", value) if isinstance(value, float) else value
