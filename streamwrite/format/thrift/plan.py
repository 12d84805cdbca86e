"""Thrift struct declarations and the per-class plans the codec compiles from them.

Private to :mod:`streamwrite.format.thrift`, which re-exports the public names (``TType``, the
type constants, ``tfield``, ``thrift_union``, ``ThriftLimits``). A plan lists, once per class,
each field's id, wire type and value kind, so encoding and decoding do no reflection per call.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from operator import attrgetter
from typing import Any, Final, TypeVar

from streamwrite.errors import ConfigError

_T = TypeVar("_T")

# Compact protocol wire types.
CT_BOOLEAN_TRUE: Final = 1
CT_BOOLEAN_FALSE: Final = 2
CT_BYTE: Final = 3
CT_I16: Final = 4
CT_I32: Final = 5
CT_I64: Final = 6
CT_DOUBLE: Final = 7
CT_BINARY: Final = 8
CT_LIST: Final = 9
CT_SET: Final = 10
CT_MAP: Final = 11
CT_STRUCT: Final = 12

# Value kinds of a TType (what the codec does with the value).
K_BOOL: Final = 0
K_I8: Final = 1
K_INT: Final = 2  # i16, i32, i64: zigzag varint
K_ENUM: Final = 3  # i32 converted to an IntEnum member when known
K_DOUBLE: Final = 4
K_BINARY: Final = 5
K_STRING: Final = 6
K_STRUCT: Final = 7
K_LIST: Final = 8
# Decode-only kinds: a bool field's value is its header's wire type.
K_TRUE: Final = 9
K_FALSE: Final = 10

_MiB: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class TType:
    """A Thrift type as the codec needs it.

    Attributes:
        kind: What the codec does with the value (private ``K_*`` constant).
        wire: Compact protocol wire type (for ``bool``, the element wire type 1).
        name: Thrift spelling, for messages (``"i32"``, ``"list<i64>"``).
        bits: Width of an integer type.
        enum: IntEnum class of an enum type.
        struct: Dataclass of a struct or union type.
        elem: Element type of a list.
    """

    kind: int
    wire: int
    name: str
    bits: int = 0
    enum: type[IntEnum] | None = None
    struct: type | None = None
    elem: TType | None = None


BOOL: Final = TType(K_BOOL, CT_BOOLEAN_TRUE, "bool")
I8: Final = TType(K_I8, CT_BYTE, "i8", bits=8)
I16: Final = TType(K_INT, CT_I16, "i16", bits=16)
I32: Final = TType(K_INT, CT_I32, "i32", bits=32)
I64: Final = TType(K_INT, CT_I64, "i64", bits=64)
DOUBLE: Final = TType(K_DOUBLE, CT_DOUBLE, "double")
BINARY: Final = TType(K_BINARY, CT_BINARY, "binary")
STRING: Final = TType(K_STRING, CT_BINARY, "string")


def enum_of(enum: type[IntEnum]) -> TType:
    """Returns the type of an enum field (an i32 on the wire) holding members of ``enum``."""
    return TType(K_ENUM, CT_I32, enum.__name__, bits=32, enum=enum)


def struct_of(cls: type) -> TType:
    """Returns the type of a field holding a struct or union dataclass ``cls``."""
    return TType(K_STRUCT, CT_STRUCT, cls.__name__, struct=cls)


def list_of(elem: TType) -> TType:
    """Returns the type of a ``list<elem>`` field (held as a Python list)."""
    return TType(K_LIST, CT_LIST, f"list<{elem.name}>", elem=elem)


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """Thrift declaration of one dataclass field, stored in its ``metadata["thrift"]``."""

    fid: int
    ttype: TType
    required: bool


def tfield(fid: int, ttype: TType, *, required: bool = False) -> Any:
    """Declares a Thrift struct field: a dataclass field defaulting to ``None``.

    Args:
        fid: Thrift field id (1..32767).
        ttype: Thrift type, e.g. ``I64`` or ``list_of(struct_of(KeyValue))``.
        required: Whether ``parquet.thrift`` marks the field ``required``.

    Returns:
        A ``dataclasses.field`` to assign to the annotated attribute.
    """
    return dataclasses.field(default=None, metadata={"thrift": FieldSpec(fid, ttype, required)})


_UNIONS: set[type] = set()


def thrift_union(cls: type[_T]) -> type[_T]:
    """Class decorator (outermost) marking a struct dataclass as a Thrift union.

    Returns:
        ``cls`` itself.
    """
    _UNIONS.add(cls)
    return cls


@dataclass(frozen=True)
class ThriftLimits:
    """Safety limits for decoding untrusted Thrift bytes.

    Attributes:
        max_string_size: Largest binary or string value, in bytes.
        max_container_size: Largest number of elements in one list, set or map.
        max_depth: Deepest nesting of structs and containers (the outer struct is level 1).
    """

    max_string_size: int = 100 * _MiB
    max_container_size: int = 10_000_000
    max_depth: int = 64

    def __post_init__(self) -> None:
        for name in ("max_string_size", "max_container_size", "max_depth"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"ThriftLimits.{name} must be a positive int, got {value!r}.")


DEFAULT_LIMITS: Final = ThriftLimits()


class Plan:
    """Everything the codec needs about one struct class, computed once."""

    __slots__ = ("cls", "decode_table", "encode_fields", "getter", "is_union", "name", "required")

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.name = cls.__name__
        self.is_union = cls in _UNIONS
        # key (fid << 4 | wire) -> (attribute name, kind, aux); a bool field has two keys.
        self.decode_table: dict[int, tuple[str, int, Any]] = {}
        # (attribute name, fid, wire, kind, aux, required), ascending fid.
        self.encode_fields: tuple[tuple[str, int, int, int, Any, bool], ...] = ()
        self.getter: Callable[[Any], tuple[Any, ...]] = _no_fields
        self.required: tuple[tuple[str, int], ...] = ()


def _no_fields(obj: Any) -> tuple[Any, ...]:
    return ()


_PLANS: dict[type, Plan] = {}  # complete plans only, read without the lock
_BUILDING: dict[type, Plan] = {}  # plans being compiled (under _LOCK), published together
_LOCK = threading.RLock()


def get_plan(cls: type) -> Plan:
    """Returns the compiled plan of a struct class, compiling it (thread-safely) once.

    Raises:
        ConfigError: ``cls`` is not a struct dataclass whose fields are all :func:`tfield`.
    """
    plan = _PLANS.get(cls)
    if plan is None:
        with _LOCK:
            plan = _PLANS.get(cls) or _BUILDING.get(cls)
            if plan is None:
                outermost = not _BUILDING
                try:
                    plan = _compile(cls)
                except BaseException:
                    if outermost:
                        _BUILDING.clear()
                    raise
                if outermost:
                    _PLANS.update(_BUILDING)
                    _BUILDING.clear()
    return plan


def _aux(ttype: TType) -> Any:
    """The per-kind helper data of a type, shared by the encode and decode plans."""
    kind = ttype.kind
    if kind == K_INT:
        return 1 << (ttype.bits - 1)
    if kind == K_ENUM:
        assert ttype.enum is not None
        return {int(member): member for member in ttype.enum}
    if kind == K_STRUCT:
        assert ttype.struct is not None
        return get_plan(ttype.struct)
    if kind == K_LIST:
        elem = ttype.elem
        assert elem is not None
        if elem.kind == K_LIST:
            raise ConfigError("Nested lists are not used by parquet.thrift and not supported.")
        return (elem.kind, elem.wire, _aux(elem), elem.name)
    return None


def _compile(cls: type) -> Plan:
    if not (dataclasses.is_dataclass(cls) and isinstance(cls, type)):
        raise ConfigError(f"{cls!r} is not a Thrift struct dataclass.")
    plan = Plan(cls)
    _BUILDING[cls] = plan  # registered first, so a self-referencing struct terminates
    specs: list[tuple[str, FieldSpec]] = []
    for f in dataclasses.fields(cls):
        spec = f.metadata.get("thrift")
        if not isinstance(spec, FieldSpec):
            raise ConfigError(f"{cls.__name__}.{f.name} is not declared with tfield().")
        if not 1 <= spec.fid <= 0x7FFF:
            raise ConfigError(f"{cls.__name__}.{f.name} has field id {spec.fid}.")
        specs.append((f.name, spec))
    specs.sort(key=lambda item: item[1].fid)
    if len({spec.fid for _, spec in specs}) != len(specs):
        raise ConfigError(f"{cls.__name__} declares a field id twice.")
    encode = []
    for name, spec in specs:
        kind, wire, aux = spec.ttype.kind, spec.ttype.wire, _aux(spec.ttype)
        encode.append((name, spec.fid, wire, kind, aux, spec.required))
        if kind == K_BOOL:
            plan.decode_table[spec.fid << 4 | CT_BOOLEAN_TRUE] = (name, K_TRUE, None)
            plan.decode_table[spec.fid << 4 | CT_BOOLEAN_FALSE] = (name, K_FALSE, None)
        else:
            plan.decode_table[spec.fid << 4 | wire] = (name, kind, aux)
    plan.encode_fields = tuple(encode)
    names = [name for name, _ in specs]
    if len(names) == 1:
        only = attrgetter(names[0])
        plan.getter = lambda obj: (only(obj),)
    elif names:
        plan.getter = attrgetter(*names)
    plan.required = tuple((name, spec.fid) for name, spec in specs if spec.required)
    return plan


def where(plan: Plan, name: str) -> str:
    """Names a field for an error message: ``Struct.field`` or ``Struct (field header)``."""
    return f"{plan.name}.{name}" if name else f"{plan.name} (field header)"
