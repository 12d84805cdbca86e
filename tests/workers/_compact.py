"""A minimal Thrift compact reader for tests: reads top-level i32 fields, skips the rest.

Independent of streamwrite.format on purpose, so kernel tests do not depend on our codec.
"""

from __future__ import annotations


def skip_value(buf: bytes, pos: int, wire: int) -> int:
    """Skip one Thrift compact value of ``wire`` type (test helper)."""

    def varint(p: int) -> tuple[int, int]:
        shift = value = 0
        while True:
            b = buf[p]
            p += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value, p

    if wire in (1, 2):
        return pos
    if wire == 3:
        return pos + 1
    if wire in (4, 5, 6):
        return varint(pos)[1]
    if wire == 7:
        return pos + 8
    if wire == 8:
        n, pos = varint(pos)
        return pos + n
    if wire in (9, 10):
        head = buf[pos]
        pos += 1
        n = head >> 4
        if n == 15:
            n, pos = varint(pos)
        for _ in range(n):
            pos = skip_value(buf, pos, head & 0x0F)
        return pos
    assert wire == 12
    _, pos = read_struct(buf, pos)
    return pos


def read_struct(buf: bytes, pos: int) -> tuple[dict[int, int], int]:
    """Read a compact struct; returns its top-level i32 fields and the end position."""
    fields: dict[int, int] = {}
    fid = 0
    while True:
        head = buf[pos]
        pos += 1
        if head == 0:
            return fields, pos
        delta, wire = head >> 4, head & 0x0F
        if delta:
            fid += delta
        else:
            raise AssertionError("long-form field ids are not used in page headers")
        if wire == 5:
            shift = value = 0
            while True:
                b = buf[pos]
                pos += 1
                value |= (b & 0x7F) << shift
                shift += 7
                if b < 0x80:
                    break
            fields[fid] = (value >> 1) ^ -(value & 1)
        else:
            pos = skip_value(buf, pos, wire)
