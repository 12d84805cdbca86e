"""Thrift compact protocol codec for the Parquet metadata structs.

Implements the subset of the Apache Thrift *compact protocol* that ``parquet.thrift`` uses
(thrift ``doc/specs/thrift-compact-protocol.md``; Parquet format spec, section "Metadata")::

    message      := struct
    struct       := field* STOP                   STOP := 0x00
    field        := header value                  (a bool field has no value: it is in the header)
    header       := (delta << 4) | wire           1 <= delta <= 15, delta = id - previous id
                  | wire  zigzag-varint(i16 id)   long form, any other id
    wire         := 1 BOOL_TRUE | 2 BOOL_FALSE | 3 I8 | 4 I16 | 5 I32 | 6 I64 | 7 DOUBLE
                  | 8 BINARY | 9 LIST | 10 SET | 11 MAP | 12 STRUCT
    i16|i32|i64  := varint(zigzag(n))             zigzag(n) = (n << 1) ^ (n >> 63)
    varint       := 7 bits per byte, low group first, 0x80 = more bytes follow (at most 10)
    i8           := 1 byte, two's complement
    double       := 8 bytes IEEE 754, little endian
    binary       := varint(length) byte*length    (a string is UTF-8 binary)
    list | set   := (size << 4) | elem            size < 15
                  | 0xF0 | elem  varint(size)     size >= 15
                    then size elements; a bool element is 1 byte: 1 true, 2 false (0 read as false)
    map          := 0x00                          empty
                  | varint(size) (key << 4 | val) (key value)*size
    union        := struct with exactly one field set
    enum         := i32

Structs are ``@dataclass(slots=True, kw_only=True)`` classes whose fields are declared with
:func:`tfield` (field id, :class:`TType`, required flag) next to the attribute; unions are also
marked with :func:`thrift_union`. The codec compiles a per-class plan once and caches it. Fields
are written in ascending id order, as the C++ and Java Thrift libraries do, so re-encoding a
footer written by them reproduces its bytes. Unknown field ids are skipped on decode; malformed
input raises :class:`~streamwrite.errors.FormatError`, input over a :class:`ThriftLimits` limit
raises :class:`~streamwrite.errors.LimitError`.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from streamwrite.errors import FormatError
from streamwrite.format.thrift.decode import MalformedError, decode
from streamwrite.format.thrift.plan import (
    BINARY,
    BOOL,
    CT_BOOLEAN_FALSE,
    CT_BOOLEAN_TRUE,
    DEFAULT_LIMITS,
    DOUBLE,
    I8,
    I16,
    I32,
    I64,
    K_BINARY,
    K_BOOL,
    K_DOUBLE,
    K_ENUM,
    K_I8,
    K_INT,
    K_LIST,
    K_STRING,
    K_STRUCT,
    STRING,
    FieldSpec,
    Plan,
    ThriftLimits,
    TType,
    enum_of,
    get_plan,
    list_of,
    struct_of,
    tfield,
    thrift_union,
    where,
)

__all__ = [
    "Serialized",
    "BINARY",
    "BOOL",
    "DEFAULT_LIMITS",
    "DOUBLE",
    "I8",
    "I16",
    "I32",
    "I64",
    "STRING",
    "FieldSpec",
    "TType",
    "ThriftLimits",
    "deserialize",
    "enum_of",
    "list_of",
    "serialize",
    "serialize_into",
    "struct_of",
    "tfield",
    "thrift_union",
]

_T = TypeVar("_T")
_DOUBLE = struct.Struct("<d")


def deserialize(
    cls: type[_T],
    buf: bytes | bytearray | memoryview,
    offset: int = 0,
    *,
    limits: ThriftLimits = DEFAULT_LIMITS,
) -> tuple[_T, int]:
    """Decodes one compact-protocol struct of type ``cls`` starting at ``buf[offset]``.

    Args:
        cls: Struct dataclass to decode (e.g. ``FileMetaData``).
        buf: Bytes holding the message; it may continue past the struct.
        offset: Where the struct starts in ``buf``.
        limits: Safety limits for untrusted input.

    Returns:
        The decoded object and the offset just past its last byte.

    Raises:
        FormatError: The bytes are not a valid ``cls`` (truncated, bad varint or wire type, a
            required field missing, invalid UTF-8...). Offsets in the message are relative to
            ``offset``.
        LimitError: A string, container or nesting depth exceeds ``limits``.
        ConfigError: ``cls`` is not a Thrift struct dataclass.
    """
    plan = get_plan(cls)
    data = buf if isinstance(buf, bytes) else memoryview(buf).cast("B")
    if not 0 <= offset <= len(data):
        raise FormatError(f"Offset {offset} is outside the {len(data)}-byte buffer.")
    obj, end = decode(plan, data, offset, limits)
    return obj, end


@dataclass(frozen=True, slots=True)
class Serialized:
    """``count`` structs of class ``cls`` already encoded back to back as ``data``, written
    verbatim where a ``cls`` is expected (a struct field when ``count`` is 1, or list
    elements). Lets a footer reuse the bytes of the row groups earlier footers listed, so its
    cost grows with the new row groups only."""

    cls: type
    data: bytes
    count: int = 1

    @classmethod
    def of(cls, obj: object) -> Serialized:
        """Encode ``obj`` once; returns the wrapper."""
        return cls(type(obj), serialize(obj))

    def __add__(self, other: Serialized) -> Serialized:
        """The elements of ``self`` followed by those of ``other`` (same class)."""
        if other.cls is not self.cls:
            raise TypeError(f"Cannot join encoded {self.cls.__name__} and {other.cls.__name__}.")
        return Serialized(self.cls, self.data + other.data, self.count + other.count)


def serialize(obj: object) -> bytes:
    """Encodes a struct dataclass instance with the compact protocol.

    Returns:
        The encoded bytes.

    Raises:
        FormatError: A required field is ``None``, a union does not have exactly one member
            set, or a value does not fit its Thrift type.
        ConfigError: ``obj`` is not a Thrift struct dataclass instance.
    """
    out = bytearray()
    serialize_into(obj, out)
    return bytes(out)


def serialize_into(obj: object, out: bytearray) -> None:
    """Appends the compact-protocol encoding of ``obj`` to ``out``.

    The struct's generated encoder (:func:`_fast_encoder`) writes it; any value that encoder
    does not take as it is (a missing required field, a value out of range or of another type)
    makes it give up, and the plan-driven encoder writes the struct instead, or raises the
    precise error. On error ``out`` is left as it was.

    Raises:
        FormatError: As :func:`serialize`.
        ConfigError: As :func:`serialize`.
    """
    start = len(out)
    try:
        _fast_encoder(type(obj))(obj, out)
        return
    except Exception:
        del out[start:]
    try:
        _encode_struct(get_plan(type(obj)), obj, out)
    except BaseException:
        del out[start:]
        raise


# --- generated encoders ------------------------------------------------------------------------
# One straight-line function per struct class, compiled once from its plan: the same bytes as
# _encode_struct (fields in ascending id order, the same header and value forms), without the
# per-field dispatch. It checks everything that decides the bytes (None in a required field,
# integer ranges, bool identity, struct classes) and raises _GiveUpError, or lets a TypeError or
# AttributeError escape, for anything else: serialize_into then runs _encode_struct, which
# raises the documented error. Lists of structs are generated too; other lists take
# _encode_list.


class _GiveUpError(Exception):
    """A value the generated encoder does not write itself."""


_FAST: dict[type, Callable[[Any, bytearray], None]] = {}
_FAST_LOCK = threading.RLock()


def _fast_encoder(cls: type) -> Callable[[Any, bytearray], None]:
    encoder = _FAST.get(cls)
    if encoder is None:
        with _FAST_LOCK:
            encoder = _FAST.get(cls)
            if encoder is None:
                encoders = _compile_encoders(cls)
                _FAST.update(encoders)
                encoder = encoders[cls]
    return encoder


def _compile_encoders(root: type) -> dict[type, Callable[[Any, bytearray], None]]:
    """Generate the encoders of ``root`` and of every struct class it reaches."""
    namespace: dict[str, Any] = {
        "_GiveUpError": _GiveUpError,
        "_Serialized": Serialized,
        "_wv": _write_varint,
        "_wb": _write_binary,
        "_el": _encode_list,
        "_pack_double": _DOUBLE.pack,
    }
    names: dict[type, str] = {}
    pending = [get_plan(root)]
    sources = []
    while pending:
        plan = pending.pop()
        if plan.cls in names:
            continue
        names[plan.cls] = f"_enc_{len(names)}"
        namespace[f"_cls_{len(names) - 1}"] = plan.cls
        for field in plan.encode_fields:
            kind, aux = field[3], field[4]
            if kind == K_STRUCT:
                pending.append(aux)
            elif kind == K_LIST and aux[0] == K_STRUCT:
                pending.append(aux[2])
        sources.append(plan)
    code = "\n".join(_encoder_source(plan, names, namespace) for plan in sources)
    exec(compile(code, "<thrift encoders>", "exec"), namespace)
    return {cls: namespace[name] for cls, name in names.items() if cls not in _FAST}


def _encoder_source(plan: Plan, names: dict[type, str], namespace: dict[str, Any]) -> str:
    lines = [f"def {names[plan.cls]}(obj, out):"]
    if plan.is_union:
        attrs = ", ".join(f"obj.{f[0]}" for f in plan.encode_fields)
        lines.append(f"    if sum(v is not None for v in ({attrs},)) != 1: raise _GiveUpError")
    lines.append("    last = 0")
    for name, fid, wire, kind, aux, required in plan.encode_fields:
        lines.append(f"    v = obj.{name}")
        body: list[str] = []
        if kind == K_BOOL:
            body += [
                f"if v is True: w = {CT_BOOLEAN_TRUE}",
                f"elif v is False: w = {CT_BOOLEAN_FALSE}",
                "else: raise _GiveUpError",
                f"d = {fid} - last",
                "if d <= 15: out.append(d << 4 | w)",
                f"else: out.append(w); _wv(out, {fid << 1})",
            ]
        else:
            body += [
                f"d = {fid} - last",
                f"if d <= 15: out.append(d << 4 | {wire})",
                f"else: out.append({wire}); _wv(out, {fid << 1})",
            ]
        if kind in (K_INT, K_ENUM):
            bound = 0x80000000 if kind == K_ENUM else aux
            body += [
                f"if not {-bound} <= v < {bound}: raise _GiveUpError",
                "v = (v << 1) ^ (v >> 63)",
                "if v < 0x80: out.append(v)",
                "else: _wv(out, v)",
            ]
        elif kind == K_STRUCT:
            cls_name = f"_cls_{list(names).index(aux.cls)}"
            body += [
                f"if type(v) is _Serialized and v.cls is {cls_name} and v.count == 1: "
                "out += v.data",
                f"elif isinstance(v, {cls_name}): {names[aux.cls]}(v, out)",
                "else: raise _GiveUpError",
            ]
        elif kind == K_LIST and aux[0] == K_STRUCT:
            cls_name = f"_cls_{list(names).index(aux[2].cls)}"
            body += [
                "if not isinstance(v, (list, tuple)): raise _GiveUpError",
                "n = len(v) + sum(x.count - 1 for x in v if type(x) is _Serialized)",
                f"if n < 15: out.append(n << 4 | {aux[1]})",
                f"else: out.append({0xF0 | aux[1]}); _wv(out, n)",
                "for x in v:",
                f"    if type(x) is _Serialized and x.cls is {cls_name}: out += x.data",
                f"    elif isinstance(x, {cls_name}): {names[aux[2].cls]}(x, out)",
                "    else: raise _GiveUpError",
            ]
        elif kind == K_LIST and aux[0] in (K_INT, K_ENUM, K_BOOL, K_BINARY, K_STRING):
            ekind, ewire, eaux = aux[0], aux[1], aux[2]
            body += [
                "if not isinstance(v, (list, tuple)): raise _GiveUpError",
                "n = len(v)",
                f"if n < 15: out.append(n << 4 | {ewire})",
                f"else: out.append({0xF0 | ewire}); _wv(out, n)",
                "for x in v:",
            ]
            if ekind in (K_INT, K_ENUM):
                bound = 0x80000000 if ekind == K_ENUM else eaux
                body += [
                    f"    if not {-bound} <= x < {bound}: raise _GiveUpError",
                    "    x = (x << 1) ^ (x >> 63)",
                    "    if x < 0x80: out.append(x)",
                    "    else: _wv(out, x)",
                ]
            elif ekind == K_BOOL:
                body += [
                    f"    if x is True: out.append({CT_BOOLEAN_TRUE})",
                    f"    elif x is False: out.append({CT_BOOLEAN_FALSE})",
                    "    else: raise _GiveUpError",
                ]
            elif ekind == K_BINARY:
                body.append("    _wb(out, x)")
            else:
                body += ["    raw = x.encode('utf-8')", "    _wv(out, len(raw))", "    out += raw"]
        elif kind == K_LIST:
            namespace[f"_aux_{names[plan.cls]}_{fid}"] = aux
            body.append(f"_el(_aux_{names[plan.cls]}_{fid}, v, out)")
        elif kind == K_STRING:
            body += ["raw = v.encode('utf-8')", "_wv(out, len(raw))", "out += raw"]
        elif kind == K_BINARY:
            body.append("_wb(out, v)")
        elif kind == K_DOUBLE:
            body.append("out += _pack_double(v)")
        elif kind == K_I8:
            body += ["if not -128 <= v < 128: raise _GiveUpError", "out.append(v & 0xFF)"]
        body.append(f"last = {fid}")
        if required:
            lines.append("    if v is None: raise _GiveUpError")
            lines += [f"    {line}" for line in body]
        else:
            lines.append("    if v is not None:")
            lines += [f"        {line}" for line in body]
    lines.append("    out.append(0)")
    return "\n".join(lines) + "\n"


def _write_varint(out: bytearray, n: int) -> None:
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _encode_struct(plan: Plan, obj: Any, out: bytearray) -> None:
    name = ""
    try:
        values = plan.getter(obj)
        if plan.is_union and sum(v is not None for v in values) != 1:
            set_names = [
                f[0] for f, v in zip(plan.encode_fields, values, strict=True) if v is not None
            ]
            raise FormatError(
                f"Thrift union {plan.name} must have exactly one member set, "
                f"got {len(set_names)} ({', '.join(set_names) or 'none'})."
            )
        last = 0
        for (name, fid, wire, kind, aux, required), v in zip(
            plan.encode_fields, values, strict=True
        ):
            if v is None:
                if required:
                    raise FormatError(f"Required field {plan.name}.{name} (id {fid}) is None.")
                continue
            if kind == K_BOOL:
                if v is True:
                    wire = CT_BOOLEAN_TRUE
                elif v is False:
                    wire = CT_BOOLEAN_FALSE
                else:
                    raise MalformedError(f"{v!r} is not a bool")
            delta = fid - last
            if delta <= 15:  # fields are in ascending id order, so delta >= 1
                out.append(delta << 4 | wire)
            else:
                out.append(wire)
                _write_varint(out, fid << 1)
            last = fid
            if kind in (K_INT, K_ENUM):
                if kind == K_ENUM:
                    aux = 0x80000000
                if not -aux <= v < aux:
                    raise MalformedError(f"{v!r} is out of range")
                v = (v << 1) ^ (v >> 63)
                if v < 0x80:
                    out.append(v)
                else:
                    _write_varint(out, v)
            elif kind == K_STRUCT:
                if type(v) is Serialized and v.cls is aux.cls and v.count == 1:
                    out += v.data
                elif not isinstance(v, aux.cls):
                    raise MalformedError(f"{type(v).__name__} is not a {aux.name}")
                else:
                    _encode_struct(aux, v, out)
            elif kind == K_LIST:
                _encode_list(aux, v, out)
            elif kind == K_STRING:
                raw = v.encode("utf-8")
                _write_varint(out, len(raw))
                out += raw
            elif kind == K_BINARY:
                _write_binary(out, v)
            elif kind == K_DOUBLE:
                out += _DOUBLE.pack(v)
            elif kind == K_I8:
                if not -128 <= v < 128:
                    raise MalformedError(f"{v!r} is out of range")
                out.append(v & 0xFF)
        out.append(0)
    except FormatError:
        raise
    except (
        MalformedError,
        TypeError,
        ValueError,
        AttributeError,
        OverflowError,
        struct.error,
    ) as exc:
        raise FormatError(f"Cannot encode {where(plan, name)}: {exc}.") from None


def _write_binary(out: bytearray, v: Any) -> None:
    if not isinstance(v, bytes | bytearray | memoryview):
        raise MalformedError(f"{type(v).__name__} is not bytes")
    if type(v) is memoryview:
        v = v.tobytes()
    _write_varint(out, len(v))
    out += v


def _encode_list(aux: tuple[int, int, Any, str], v: Any, out: bytearray) -> None:
    kind, wire, eaux, ename = aux
    if not isinstance(v, list | tuple):
        raise MalformedError(f"{type(v).__name__} is not a list")
    size = len(v)
    if kind == K_STRUCT:
        size += sum(x.count - 1 for x in v if type(x) is Serialized)
    if size < 15:
        out.append(size << 4 | wire)
    else:
        out.append(0xF0 | wire)
        _write_varint(out, size)
    if kind in (K_INT, K_ENUM):
        bound = 0x80000000 if kind == K_ENUM else eaux
        for x in v:
            if not -bound <= x < bound:
                raise MalformedError(f"list element {x!r} is out of range for {ename}")
            x = (x << 1) ^ (x >> 63)
            if x < 0x80:
                out.append(x)
            else:
                _write_varint(out, x)
    elif kind == K_STRUCT:
        cls = eaux.cls
        for x in v:
            if type(x) is Serialized and x.cls is cls:
                out += x.data
            elif not isinstance(x, cls):
                raise MalformedError(f"list element {type(x).__name__} is not a {ename}")
            else:
                _encode_struct(eaux, x, out)
    elif kind == K_STRING:
        for x in v:
            raw = x.encode("utf-8")
            _write_varint(out, len(raw))
            out += raw
    elif kind == K_BINARY:
        for x in v:
            _write_binary(out, x)
    elif kind == K_BOOL:
        for x in v:
            if x is not True and x is not False:
                raise MalformedError(f"list element {x!r} is not a bool")
            out.append(CT_BOOLEAN_TRUE if x else CT_BOOLEAN_FALSE)
    elif kind == K_DOUBLE:
        out += struct.pack(f"<{size}d", *v)
    else:  # K_I8
        for x in v:
            if not -128 <= x < 128:
                raise MalformedError(f"list element {x!r} is out of range for i8")
            out.append(x & 0xFF)
