"""Compact protocol decoding (see :mod:`streamwrite.format.thrift` for the byte layout).

Private to :mod:`streamwrite.format.thrift`. Hot paths read single-byte varints inline and let
``IndexError`` / ``struct.error`` signal truncation; :func:`decode_struct` turns every failure
into a :class:`~streamwrite.errors.FormatError` or :class:`~streamwrite.errors.LimitError`
naming the struct, the field and the offset.
"""

from __future__ import annotations

import struct
from typing import Any

from streamwrite.errors import FormatError, LimitError
from streamwrite.format.thrift.plan import (
    CT_BINARY,
    CT_BOOLEAN_FALSE,
    CT_BOOLEAN_TRUE,
    CT_BYTE,
    CT_DOUBLE,
    CT_I16,
    CT_I64,
    CT_LIST,
    CT_MAP,
    CT_SET,
    CT_STRUCT,
    K_BINARY,
    K_BOOL,
    K_DOUBLE,
    K_ENUM,
    K_FALSE,
    K_INT,
    K_LIST,
    K_STRING,
    K_STRUCT,
    K_TRUE,
    Plan,
    ThriftLimits,
    where,
)

_DOUBLE = struct.Struct("<d")


class MalformedError(Exception):
    """Raised by the low-level readers; the struct decoder adds where it happened."""


class LimitExceededError(Exception):
    """A limit was exceeded; the struct decoder adds where it happened."""


class Ctx:
    """Per-call decoding state: the limits and the offset messages are relative to."""

    __slots__ = ("base", "max_container_size", "max_depth", "max_string_size")

    def __init__(self, limits: ThriftLimits, base: int) -> None:
        self.base = base
        self.max_depth = limits.max_depth
        self.max_string_size = limits.max_string_size
        self.max_container_size = limits.max_container_size


Buf = bytes | memoryview


def decode(plan: Plan, buf: Buf, offset: int, limits: ThriftLimits) -> tuple[Any, int]:
    """Decodes the struct of ``plan`` at ``buf[offset]``; returns it and the offset past it."""
    return decode_struct(plan, buf, offset, 1, Ctx(limits, offset))


def _varint_tail(buf: Buf, pos: int, first: int, bits: int) -> tuple[int, int]:
    """Finishes an unsigned varint whose first byte ``first`` (>= 0x80) was already read."""
    result = first & 0x7F
    shift = 7
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift >= 70:
            raise MalformedError("a varint is longer than 10 bytes")
    if result >> bits:
        raise MalformedError(f"a varint does not fit {bits} bits")
    return result, pos


def _read_uvarint(buf: Buf, pos: int, bits: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    return _varint_tail(buf, pos + 1, b, bits)


def _read_size(buf: Buf, pos: int, ctx: Ctx, what: str, limit: int) -> tuple[int, int]:
    """Reads a varint length and checks it against ``limit`` and the remaining bytes."""
    size, pos = _read_uvarint(buf, pos, 32)
    if size > len(buf) - pos:
        raise MalformedError(f"the {what} {size} exceeds the {len(buf) - pos} bytes that remain")
    if size > limit:
        raise LimitExceededError(f"the {what} {size} exceeds the limit of {limit}")
    return size, pos


def decode_struct(plan: Plan, buf: Buf, pos: int, depth: int, ctx: Ctx) -> tuple[Any, int]:
    if depth > ctx.max_depth:
        raise LimitError(
            f"Thrift struct {plan.name} at byte {pos - ctx.base} is nested deeper than "
            f"{ctx.max_depth} levels."
        )
    table = plan.decode_table
    kw: dict[str, Any] = {}
    last = 0
    fid = 0
    name = ""
    here = pos
    try:
        while True:
            here = pos
            name = ""
            b = buf[pos]
            pos += 1
            if b == 0:
                break
            wire = b & 15
            if b >> 4:
                fid = last + (b >> 4)
            else:
                u, pos = _read_uvarint(buf, pos, 16)
                fid = (u >> 1) ^ -(u & 1)
            last = fid
            spec = table.get(fid << 4 | wire)
            if spec is None:
                name = f"<unknown field {fid}>"
                pos = _skip_field(buf, pos, wire, depth, ctx)
                continue
            name, kind, aux = spec
            if kind == K_INT:
                b = buf[pos]
                pos += 1
                if b >= 0x80:
                    b, pos = _varint_tail(buf, pos, b, aux.bit_length())
                kw[name] = (b >> 1) ^ -(b & 1)
            elif kind == K_STRUCT:
                kw[name], pos = decode_struct(aux, buf, pos, depth + 1, ctx)
            elif kind == K_LIST:
                kw[name], pos = _decode_list(aux, buf, pos, depth + 1, ctx)
            elif kind == K_ENUM:
                b = buf[pos]
                pos += 1
                if b >= 0x80:
                    b, pos = _varint_tail(buf, pos, b, 32)
                b = (b >> 1) ^ -(b & 1)
                kw[name] = aux.get(b, b)
            elif kind in (K_BINARY, K_STRING):
                size, pos = _read_size(buf, pos, ctx, "string length", ctx.max_string_size)
                raw = buf[pos : pos + size]
                pos += size
                kw[name] = bytes(raw) if kind == K_BINARY else str(raw, "utf-8")
            elif kind == K_TRUE:
                kw[name] = True
            elif kind == K_FALSE:
                kw[name] = False
            elif kind == K_DOUBLE:
                (kw[name],) = _DOUBLE.unpack_from(buf, pos)
                pos += 8
            else:  # K_I8
                b = buf[pos]
                pos += 1
                kw[name] = b - 256 if b > 127 else b
    except (IndexError, struct.error):
        raise FormatError(
            f"The Thrift message is truncated: it ends inside {where(plan, name)}, which "
            f"starts at byte {here - ctx.base}."
        ) from None
    except MalformedError as exc:
        raise FormatError(
            f"Malformed Thrift in {where(plan, name)} at byte {here - ctx.base}: {exc}."
        ) from None
    except LimitExceededError as exc:
        raise LimitError(
            f"Thrift limit exceeded in {where(plan, name)} at byte {here - ctx.base}: {exc}."
        ) from None
    except UnicodeDecodeError as exc:
        raise FormatError(
            f"{where(plan, name)} at byte {here - ctx.base} is not valid UTF-8 ({exc.reason})."
        ) from None
    for rname, rfid in plan.required:
        if rname not in kw:
            raise FormatError(
                f"Required field {plan.name}.{rname} (id {rfid}) is missing from the Thrift "
                f"struct ending at byte {pos - ctx.base}."
            )
    if plan.is_union and len(kw) > 1:
        raise FormatError(
            f"Thrift union {plan.name} ending at byte {pos - ctx.base} has {len(kw)} members "
            f"set ({', '.join(sorted(kw))}); a union has exactly one."
        )
    return plan.cls(**kw), pos


def _decode_list(
    aux: tuple[int, int, Any, str], buf: Buf, pos: int, depth: int, ctx: Ctx
) -> tuple[list[Any], int]:
    if depth > ctx.max_depth:
        raise LimitExceededError(f"containers are nested deeper than {ctx.max_depth} levels")
    kind, wire, eaux, ename = aux
    b = buf[pos]
    pos += 1
    size = b >> 4
    elem_wire = b & 15
    if size == 15:
        size, pos = _read_size(buf, pos, ctx, "list size", ctx.max_container_size)
    if size == 0:
        return [], pos
    if elem_wire != wire and not (wire == CT_BOOLEAN_TRUE and elem_wire == CT_BOOLEAN_FALSE):
        raise MalformedError(f"list elements have wire type {elem_wire}, expected {ename}")
    out: list[Any] = []
    append = out.append
    if kind in (K_INT, K_ENUM):
        bits = eaux.bit_length() if kind == K_INT else 32
        for _ in range(size):
            b = buf[pos]
            pos += 1
            if b >= 0x80:
                b, pos = _varint_tail(buf, pos, b, bits)
            append((b >> 1) ^ -(b & 1))
        if kind == K_ENUM:
            get = eaux.get
            out = [get(v, v) for v in out]
    elif kind == K_STRUCT:
        for _ in range(size):
            obj, pos = decode_struct(eaux, buf, pos, depth + 1, ctx)
            append(obj)
    elif kind in (K_BINARY, K_STRING):
        limit = ctx.max_string_size
        for _ in range(size):
            n, pos = _read_size(buf, pos, ctx, "string length", limit)
            raw = buf[pos : pos + n]
            pos += n
            append(bytes(raw) if kind == K_BINARY else str(raw, "utf-8"))
    elif kind == K_BOOL:
        for _ in range(size):
            b = buf[pos]
            pos += 1
            if b == 1:
                append(True)
            elif b == 2 or b == 0:
                append(False)
            else:
                raise MalformedError(f"a bool list element is the byte {b}, not 0, 1 or 2")
    elif kind == K_DOUBLE:
        if 8 * size > len(buf) - pos:
            raise IndexError
        out = list(struct.unpack_from(f"<{size}d", buf, pos))
        pos += 8 * size
    else:  # K_I8
        for _ in range(size):
            b = buf[pos]
            pos += 1
            append(b - 256 if b > 127 else b)
    return out, pos


def _skip_field(buf: Buf, pos: int, wire: int, depth: int, ctx: Ctx) -> int:
    """Skips a field value of any wire type; returns the offset past it."""
    if wire in (CT_BOOLEAN_TRUE, CT_BOOLEAN_FALSE):
        return pos  # the value is in the field header
    return _skip_value(buf, pos, wire, depth + 1, ctx)


def _skip_value(buf: Buf, pos: int, wire: int, depth: int, ctx: Ctx) -> int:
    """Skips a value (or container element) of type ``wire`` at nesting level ``depth``."""
    if CT_I16 <= wire <= CT_I64:
        return _read_uvarint(buf, pos, 64)[1]
    if wire == CT_BINARY:
        size, pos = _read_size(buf, pos, ctx, "string length", ctx.max_string_size)
        return pos + size
    if wire == CT_STRUCT:
        if depth > ctx.max_depth:
            raise LimitExceededError(f"structs are nested deeper than {ctx.max_depth} levels")
        while True:
            b = buf[pos]
            pos += 1
            if b == 0:
                return pos
            if not b >> 4:
                pos = _read_uvarint(buf, pos, 16)[1]
            pos = _skip_field(buf, pos, b & 15, depth, ctx)
    if wire == CT_BYTE or wire in (CT_BOOLEAN_TRUE, CT_BOOLEAN_FALSE):
        buf[pos]  # raises IndexError when truncated
        return pos + 1
    if wire == CT_DOUBLE:
        if len(buf) - pos < 8:
            raise IndexError
        return pos + 8
    if wire in (CT_LIST, CT_SET, CT_MAP):
        if depth > ctx.max_depth:
            raise LimitExceededError(f"containers are nested deeper than {ctx.max_depth} levels")
        limit = ctx.max_container_size
        if wire == CT_MAP:
            size, pos = _read_size(buf, pos, ctx, "map size", limit)
            if size == 0:
                return pos
            b = buf[pos]
            pos += 1
            wires = (b >> 4, b & 15) * size
        else:
            b = buf[pos]
            pos += 1
            size = b >> 4
            if size == 15:
                size, pos = _read_size(buf, pos, ctx, "list size", limit)
            wires = (b & 15,) * size
        for elem_wire in wires:
            pos = _skip_value(buf, pos, elem_wire, depth + 1, ctx)
        return pos
    raise MalformedError(f"wire type {wire} does not exist")
