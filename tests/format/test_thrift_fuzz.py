"""Hypothesis tests of the Thrift codec: round trips of every struct, fuzzed input."""

from __future__ import annotations

import dataclasses
import io
import math
import struct
from functools import cache
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamwrite.errors import FormatError, LimitError
from streamwrite.format import structs as t
from streamwrite.format.thrift.codec import (
    FieldSpec,
    Serialized,
    ThriftLimits,
    TType,
    _encode_struct,
    _fast_encoder,
    deserialize,
    get_plan,
    serialize,
)

STRUCTS = [
    cls
    for cls in (getattr(t, name) for name in t.__all__)
    if isinstance(cls, type) and dataclasses.is_dataclass(cls)
]
UNIONS = {
    t.LogicalType,
    t.TimeUnit,
    t.ColumnOrder,
    t.BloomFilterAlgorithm,
    t.BloomFilterHash,
    t.BloomFilterCompression,
    t.EncryptionAlgorithm,
    t.ColumnCryptoMetaData,
}
SCALARS: dict[str, st.SearchStrategy[Any]] = {
    "bool": st.booleans(),
    "i8": st.integers(-(2**7), 2**7 - 1),
    "i16": st.integers(-(2**15), 2**15 - 1),
    "i32": st.integers(-(2**31), 2**31 - 1),
    "i64": st.integers(-(2**63), 2**63 - 1),
    "double": st.floats(allow_nan=False),
    "binary": st.binary(max_size=20),
    "string": st.text(max_size=10),
}


def value_strategy(ttype: TType) -> st.SearchStrategy[Any]:
    if ttype.elem is not None:
        return st.lists(value_strategy(ttype.elem), max_size=4)
    if ttype.struct is not None:
        return st.deferred(lambda: struct_strategy(ttype.struct))  # type: ignore[arg-type]
    if ttype.enum is not None:
        # known members and values a newer writer might use
        return st.sampled_from(list(ttype.enum)) | st.integers(-(2**31), 2**31 - 1)
    return SCALARS[ttype.name]


@cache
def struct_strategy(cls: type) -> st.SearchStrategy[Any]:
    """Random instances of a struct: required fields set, others maybe; unions one member."""
    fields = {f.name: f.metadata["thrift"] for f in dataclasses.fields(cls)}
    if cls in UNIONS:
        return st.one_of(
            [st.builds(cls, **{name: value_strategy(spec.ttype)}) for name, spec in fields.items()]
        )
    kwargs = {}
    for name, spec in fields.items():
        assert isinstance(spec, FieldSpec)
        strategy = value_strategy(spec.ttype)
        kwargs[name] = strategy if spec.required else st.none() | strategy
    return st.builds(cls, **kwargs)


def test_every_struct_is_covered() -> None:
    assert len(STRUCTS) >= 60
    for cls in STRUCTS:
        for f in dataclasses.fields(cls):
            assert isinstance(f.metadata["thrift"], FieldSpec), (cls, f.name)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_round_trip_every_struct(data: st.DataObject) -> None:
    for cls in STRUCTS:
        obj = data.draw(struct_strategy(cls), label=cls.__name__)
        encoded = serialize(obj)
        decoded, end = deserialize(cls, encoded)
        assert decoded == obj
        assert end == len(encoded)
        assert serialize(decoded) == encoded


@settings(max_examples=200, deadline=None)
@given(
    struct_strategy(t.Statistics)
    | struct_strategy(t.PageHeader)
    | struct_strategy(t.KeyValue)
    | struct_strategy(t.SchemaElement)
)
def test_round_trip_common_structs(obj: Any) -> None:
    decoded, _ = deserialize(type(obj), serialize(obj))
    assert decoded == obj


@settings(max_examples=100, deadline=None)
@given(st.builds(t.SchemaElement, name=st.text(), logicalType=struct_strategy(t.LogicalType)))
def test_round_trip_schema_element_with_logical_type(element: t.SchemaElement) -> None:
    assert deserialize(t.SchemaElement, serialize(element))[0] == element


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(allow_nan=True), max_size=20))
def test_bounding_box_doubles_bit_exact(values: list[float]) -> None:
    for value in values:
        box = t.BoundingBox(xmin=value, xmax=0.0, ymin=-0.0, ymax=math.inf)
        encoded = serialize(box)
        decoded, _ = deserialize(t.BoundingBox, encoded)
        assert serialize(decoded) == encoded


# --------------------------------------------------------------------------- fuzzing


@cache
def real_footer() -> bytes:
    rows = 50
    table = pa.table(
        {
            "i": pa.array(range(rows), pa.int64()),
            "s": [f"v{i % 5}" for i in range(rows)],
            "f": [i / 3 for i in range(rows)],
            "ts": pa.array(range(rows), pa.timestamp("ms", tz="UTC")),
            "l": [[i] for i in range(rows)],
        }
    )
    out = io.BytesIO()
    pq.write_table(table, out, row_group_size=20, write_page_index=True)
    data = out.getvalue()
    (length,) = struct.unpack("<I", data[-8:-4])
    return data[-8 - length : -8]


SMALL_LIMITS = ThriftLimits(max_string_size=1000, max_container_size=1000, max_depth=16)


def decode_or_fail_cleanly(cls: type, data: bytes, limits: ThriftLimits) -> None:
    try:
        obj, end = deserialize(cls, data, limits=limits)
    except (FormatError, LimitError):
        return
    assert 0 < end <= len(data)
    assert isinstance(obj, cls)


@settings(max_examples=300, deadline=1000)
@given(
    st.sampled_from([t.FileMetaData, t.PageHeader, t.ColumnIndex, t.OffsetIndex, t.KeyValue]),
    st.binary(max_size=300),
)
def test_random_bytes(cls: type, data: bytes) -> None:
    decode_or_fail_cleanly(cls, data, SMALL_LIMITS)


@settings(max_examples=300, deadline=1000)
@given(st.data())
def test_mutated_footer(data: st.DataObject) -> None:
    footer = bytearray(real_footer())
    for _ in range(data.draw(st.integers(1, 8), label="mutations")):
        pos = data.draw(st.integers(0, len(footer) - 1), label="position")
        action = data.draw(st.sampled_from(["flip", "set", "insert", "delete"]), label="action")
        if action == "flip":
            footer[pos] ^= 1 << data.draw(st.integers(0, 7))
        elif action == "set":
            footer[pos] = data.draw(st.integers(0, 255))
        elif action == "insert":
            footer[pos:pos] = data.draw(st.binary(min_size=1, max_size=12))
        else:
            del footer[pos : pos + data.draw(st.integers(1, 12))]
    cut = data.draw(st.integers(0, len(footer)), label="truncate at")
    decode_or_fail_cleanly(t.FileMetaData, bytes(footer[:cut]), SMALL_LIMITS)
    decode_or_fail_cleanly(t.FileMetaData, bytes(footer), ThriftLimits())


@settings(max_examples=50, deadline=1000)
@given(st.integers(17, 3000), st.sampled_from(["struct", "list", "map"]))
def test_deep_nesting_hits_limit(depth: int, kind: str) -> None:
    # a chain of nested structs / lists / maps in an unknown struct field (id 9) of KeyValue
    prefix, unit = {
        "struct": (b"", b"\x1c"),  # field header: delta 1, struct
        "list": (b"\x19", b"\x19"),  # field header, then list headers: 1 element of list
        "map": (b"\x1b", b"\x01\x3b\x00"),  # field header, then map<i8, map> of size 1
    }[kind]
    data = bytes.fromhex("18016b 8c") + prefix + unit * depth
    try:
        deserialize(t.KeyValue, data, limits=SMALL_LIMITS)
    except LimitError:
        return
    raise AssertionError("expected LimitError")


@settings(max_examples=100, deadline=1000)
@given(st.integers(16, 2**32 - 1), st.sampled_from(["string", "list", "known list"]))
def test_huge_declared_sizes(size: int, what: str) -> None:
    varint = bytearray()
    n = size
    while n > 0x7F:
        varint.append(n & 0x7F | 0x80)
        n >>= 7
    varint.append(n)
    if what == "string":
        data = b"\x18" + bytes(varint) + b"abc"
        cls: type = t.KeyValue
    elif what == "list":
        data = bytes.fromhex("18016b") + b"\x89\xf8" + bytes(varint) + b"\x00"
        cls = t.KeyValue
    else:
        data = b"\x19\xfc" + bytes(varint) + b"\x00\x00"
        cls = t.OffsetIndex
    try:
        deserialize(cls, data, limits=SMALL_LIMITS)
    except (FormatError, LimitError):
        return
    raise AssertionError("expected an error")


# --- the generated encoders against the plan-driven one -----------------------------------------


def _plan_bytes(obj: Any) -> bytes | None:
    """The plan-driven encoder's bytes of ``obj``, or None where it refuses it."""
    out = bytearray()
    try:
        _encode_struct(get_plan(type(obj)), obj, out)
    except FormatError:
        return None
    return bytes(out)


def _generated_bytes(obj: Any) -> bytes | None:
    """The generated encoder's bytes of ``obj``, or None where it gives up."""
    out = bytearray()
    try:
        _fast_encoder(type(obj))(obj, out)
    except Exception:
        return None
    return bytes(out)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_generated_encoders_write_the_plan_encoders_bytes(data: st.DataObject) -> None:
    for cls in STRUCTS:
        obj = data.draw(struct_strategy(cls), label=cls.__name__)
        assert _generated_bytes(obj) == _plan_bytes(obj) is not None


ODD_VALUES = (
    st.none()
    | st.integers(-(2**70), 2**70)
    | st.booleans()
    | st.floats()
    | st.text(max_size=3)
    | st.binary(max_size=3)
    | st.lists(st.integers(-(2**40), 2**40) | st.booleans() | st.binary(max_size=2), max_size=3)
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_generated_encoders_never_write_what_the_plan_encoder_refuses(data: st.DataObject) -> None:
    # One field set to anything: where the generated encoder writes bytes, they are the plan
    # encoder's; where it gives up, serialize raises what the plan encoder raises.
    cls = data.draw(st.sampled_from(STRUCTS))
    obj = data.draw(struct_strategy(cls))
    fields = dataclasses.fields(cls)
    if fields:
        field = data.draw(st.sampled_from(fields))
        setattr(obj, field.name, data.draw(ODD_VALUES))
    generated, planned = _generated_bytes(obj), _plan_bytes(obj)
    if generated is not None:
        assert generated == planned
    if planned is None:
        with pytest.raises(FormatError):
            serialize(obj)
    else:
        assert serialize(obj) == planned


def test_generated_encoders_copy_serialized_members_verbatim() -> None:
    column = t.ColumnChunk(file_offset=4, meta_data=None)
    group = t.RowGroup(columns=[column], total_byte_size=10, num_rows=3)
    encoded = Serialized.of(group)
    doubled = encoded + encoded
    meta = t.FileMetaData(version=2, schema=[], num_rows=6, row_groups=[doubled])
    plain = t.FileMetaData(version=2, schema=[], num_rows=6, row_groups=[group, group])
    assert serialize(meta) == serialize(plain) == _plan_bytes(plain)
