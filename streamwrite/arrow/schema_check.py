"""Cross-checks of a footer's Parquet schema against the other records of the same schema.

A flipped bit in a footer's schema can decode into another valid schema (a column ``symbol``
read as ``cymbol``, a STRING annotation lost so that strings read as binary, OPTIONAL turned
into REQUIRED). Two records of the schema sit beside it and are checked against it:

* ``ARROW:schema`` (key/value metadata, any file that has it): the same top-level names in the
  same order, nullability matching the repetition (nullable = OPTIONAL, not nullable =
  REQUIRED; null-typed and REPEATED fields are not compared), and each leaf's Parquet type
  reading back as an Arrow type consistent with the stored one, as pyarrow maps them:
  dictionaries compare by value type, extension types by storage (``arrow.json`` and
  ``arrow.uuid`` as themselves), string / large / view types alike, date64 as date32, time32
  as time32(ms), durations as int64, decimals by precision and scale, timestamps by whether
  they have a time zone (when a ``logicalType`` says so; NANOS only for a stored ns unit,
  pyarrow coerces to ms or us but never to ns) and from INT96 by nothing more; uint32 also as
  INT64 (format version 1.0); nested types as groups, checked inside the same way: a
  struct's children by name, count and order, the element of a three-level LIST
  (list, large_list, fixed_size_list) and the key and value of a MAP without their names
  (Arrow's ``item`` is Parquet's ``element``); legacy list and map forms are not looked into.
  A nested column is named by its dotted Parquet path (``s.a``, ``l.list.element``).
* the ``_pm`` column descriptors of a live file: the same leaf count and, per leaf, name (the
  dotted ``path_in_schema`` of a nested leaf), physical type, fixed byte length, repetition and
  max definition and repetition levels.

A mismatch is a :class:`~streamwrite.errors.CorruptFileError` naming the column and both sides.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from streamwrite.arrow.schema import ARROW_SCHEMA_KEY, decode_arrow_schema
from streamwrite.arrow.schema_read import _infer_type
from streamwrite.errors import CorruptFileError, FormatError, StreamwriteError
from streamwrite.format.enums import FieldRepetitionType, Type
from streamwrite.format.sidecar.codec import SidecarHeader
from streamwrite.format.structs import KeyValue, SchemaElement

__all__ = ["check_arrow_schema", "check_sidecar_columns", "leaf_elements"]

_Kind = tuple[object, ...]
_GROUP: _Kind = ("group",)
_PHYSICAL_TYPES = frozenset(int(t) for t in Type)
_REPETITION_NAMES: dict[int | None, str] = {0: "REQUIRED", 1: "OPTIONAL", 2: "REPEATED"}


def _kind(dtype: pa.DataType) -> _Kind | None:
    """What a Parquet leaf must read back as for an Arrow type (None: not compared)."""
    types = pa.types
    if types.is_dictionary(dtype):
        return _kind(dtype.value_type)
    if isinstance(dtype, pa.BaseExtensionType):
        if dtype.extension_name in ("arrow.json", "arrow.uuid"):
            return (dtype.extension_name,)
        return _kind(dtype.storage_type)
    if types.is_null(dtype) or types.is_boolean(dtype) or types.is_date(dtype):
        return ("date",) if types.is_date(dtype) else (str(dtype),)
    if types.is_integer(dtype):
        return ("int", dtype.bit_width, types.is_signed_integer(dtype))
    if types.is_duration(dtype):
        return ("int", 64, True)
    if types.is_floating(dtype):
        return ("float", dtype.bit_width)
    if types.is_decimal(dtype):
        return ("decimal", dtype.precision, dtype.scale)
    if types.is_time32(dtype) or types.is_time64(dtype):
        return ("time", dtype.bit_width)
    if types.is_timestamp(dtype):
        return ("timestamp", dtype.tz is not None)
    if types.is_string(dtype) or types.is_large_string(dtype) or types.is_string_view(dtype):
        return ("string",)
    if types.is_binary(dtype) or types.is_large_binary(dtype) or types.is_binary_view(dtype):
        return ("binary",)
    if types.is_fixed_size_binary(dtype):
        return ("fsb", dtype.byte_width)
    if types.is_nested(dtype):
        return _GROUP
    return None


def _consistent(stored: pa.DataType, want: _Kind, element: SchemaElement) -> str | None:
    """None if the leaf ``element`` reads back consistently with ``stored``, else what it
    reads as."""
    if element.type not in _PHYSICAL_TYPES:
        return None  # not a valid leaf: reported where the schema is read
    try:
        inferred = _infer_type(0, element)
    except StreamwriteError:
        return None  # an annotation streamwrite cannot read: reported where it is read
    if _unit(inferred) == "ns" and _unit(stored) != "ns" and element.type != Type.INT96:
        return str(inferred)  # pyarrow coerces timestamps to ms or us, never to ns
    got = _kind(inferred)
    if got == want or want == ("null",):
        return None
    timestamps = want[0] == "timestamp" and got is not None and got[0] == "timestamp"
    if timestamps and (element.type == Type.INT96 or element.logicalType is None):
        return None  # INT96 and converted types do not record the time zone
    if pa.types.is_uint32(stored) and got == ("int", 64, True):
        return None  # Parquet format version 1.0 has no UINT_32: pyarrow writes INT64
    return str(inferred)


def _unit(dtype: pa.DataType) -> str | None:
    if pa.types.is_dictionary(dtype):
        return _unit(dtype.value_type)
    if pa.types.is_timestamp(dtype) or pa.types.is_time(dtype):
        return str(dtype.unit)
    return None


_Node = tuple[SchemaElement, list["_Node"]]


def _tree(elements: Sequence[SchemaElement]) -> list[_Node] | None:
    """The root's children as (element, children) trees, or None if the element list is
    malformed (reported where the schema is read)."""
    root: list[_Node] = []
    # (children still to read, where they go) of the open groups, the root first
    stack: list[tuple[int, list[_Node]]] = [(max(elements[0].num_children or 0, 0), root)]
    at = 1
    while stack:
        left, into = stack.pop()
        if left == 0:
            continue
        stack.append((left - 1, into))
        if at >= len(elements):
            return None
        node: _Node = (elements[at], [])
        into.append(node)
        if elements[at].num_children:
            stack.append((max(elements[at].num_children or 0, 0), node[1]))
        at += 1
    return root if at == len(elements) else None


def _describe(element: SchemaElement) -> str:
    if element.num_children:
        return f"a group of {element.num_children}"
    physical = "no type" if element.type is None else _type_name(element.type)
    logical = "" if element.logicalType is None else f" {element.logicalType}"
    return f"{physical}{logical}"


def _type_name(physical: int) -> str:
    try:
        return Type(physical).name
    except ValueError:
        return f"type {physical}"


def check_arrow_schema(
    elements: Sequence[SchemaElement],
    key_value_metadata: Sequence[KeyValue] | None,
    footer_offset: int,
) -> None:
    """Check the footer's schema against its ``ARROW:schema`` entry (if it has one).

    Raises:
        CorruptFileError: ``ARROW:schema`` does not decode, or it and the Parquet schema
            differ in column count, a name, a nullability or a type (the message names the
            column and both sides).
    """
    value = next((kv.value for kv in key_value_metadata or [] if kv.key == ARROW_SCHEMA_KEY), None)
    if value is None or not elements:
        return
    try:
        stored = decode_arrow_schema(value)
    except FormatError as exc:
        raise CorruptFileError(str(exc), footer_offset) from exc
    tops = _tree(elements)
    if tops is None:
        return
    if len(tops) != len(stored):
        raise CorruptFileError(
            f"The Parquet schema has {len(tops)} top-level columns "
            f"{[e.name for e, _ in tops]} but ARROW:schema has {len(stored)} {stored.names}.",
            footer_offset,
        )
    for index, (field, node) in enumerate(zip(stored, tops, strict=True)):
        name = node[0].name
        if field.name != name:
            raise CorruptFileError(
                f"Column {index} is named {name!r} in the Parquet schema but {field.name!r} "
                "in ARROW:schema.",
                footer_offset,
            )
        _check_field(name or "", field, node, footer_offset)


def _check_field(path: str, field: pa.Field, node: _Node, footer_offset: int) -> None:
    """Check the Parquet node at dotted ``path`` against its ARROW:schema ``field`` (names
    compared by the caller), then its children."""
    element, children = node
    repetition = element.repetition_type
    if repetition == FieldRepetitionType.REPEATED:
        return  # a legacy repeated field: ARROW:schema holds a list
    if repetition in (FieldRepetitionType.REQUIRED, FieldRepetitionType.OPTIONAL) and not (
        pa.types.is_null(field.type)
    ):
        optional = repetition == FieldRepetitionType.OPTIONAL
        if field.nullable != optional:
            raise CorruptFileError(
                f"Column {path!r} is {'OPTIONAL' if optional else 'REQUIRED'} in the Parquet "
                f"schema but {'nullable' if field.nullable else 'not nullable'} in ARROW:schema.",
                footer_offset,
            )
    want = _kind(field.type)
    if want is None:
        return
    is_group = bool(element.num_children)
    if is_group != (want == _GROUP):
        reads_as: str | None = "a group" if is_group else "a single column"
    else:
        reads_as = None if is_group else _consistent(field.type, want, element)
    if reads_as is not None:
        raise CorruptFileError(
            f"Column {path!r} is {_describe(element)} in the Parquet schema, which reads as "
            f"{reads_as}, but {field.type} in ARROW:schema.",
            footer_offset,
        )
    if is_group:
        for child_path, child_field, child in _pairs(path, field, children, footer_offset):
            _check_field(child_path, child_field, child, footer_offset)


def _pairs(
    path: str, field: pa.Field, children: list[_Node], footer_offset: int
) -> list[tuple[str, pa.Field, _Node]]:
    """The children of the group at ``path`` with the Arrow fields they stand for: a struct's
    children by name; the element of a three-level LIST and the key and value of a MAP (their
    Parquet names are not compared: Arrow calls them ``item``, ``key``, ``value``). A legacy
    list or map form is not compared inside."""
    dtype = field.type
    while isinstance(dtype, pa.BaseExtensionType) or pa.types.is_dictionary(dtype):
        dtype = dtype.storage_type if isinstance(dtype, pa.BaseExtensionType) else dtype.value_type
    if pa.types.is_struct(dtype):
        if len(children) != dtype.num_fields:
            raise CorruptFileError(
                f"Column {path!r} has {len(children)} children "
                f"{[e.name for e, _ in children]} in the Parquet schema but {dtype.num_fields} "
                f"{[f.name for f in dtype]} in ARROW:schema.",
                footer_offset,
            )
        pairs = []
        for child_field, (child, grandchildren) in zip(dtype, children, strict=True):
            child_path = f"{path}.{child.name}"
            if child.name != child_field.name:
                raise CorruptFileError(
                    f"Column {child_path!r} is named {child.name!r} in the Parquet schema but "
                    f"{child_field.name!r} in ARROW:schema.",
                    footer_offset,
                )
            pairs.append((child_path, child_field, (child, grandchildren)))
        return pairs
    if len(children) != 1:
        return []
    repeated, inner = children[0]
    if repeated.repetition_type != FieldRepetitionType.REPEATED:
        return []
    base = f"{path}.{repeated.name}"
    is_list = pa.types.is_list(dtype) or pa.types.is_large_list(dtype)
    if (is_list or pa.types.is_fixed_size_list(dtype)) and len(inner) == 1:
        if repeated.name in ("array", f"{path.rsplit('.', 1)[-1]}_tuple"):
            return []  # the legacy two-level form: the repeated group is the element
        return [(f"{base}.{inner[0][0].name}", dtype.value_field, inner[0])]
    if pa.types.is_map(dtype) and len(inner) == 2:
        return [
            (f"{base}.{inner[0][0].name}", dtype.key_field, inner[0]),
            (f"{base}.{inner[1][0].name}", dtype.item_field, inner[1]),
        ]
    return []


def check_sidecar_columns(
    elements: Sequence[SchemaElement], header: SidecarHeader, footer_offset: int
) -> None:
    """Check a live file's footer schema against the column descriptors of its ``_pm``.

    Raises:
        CorruptFileError: a different column count, or a column whose name, physical type,
            fixed byte length, repetition or max definition level differs.
    """
    leaves = leaf_elements(elements)
    columns = header.columns
    if leaves is None or len(leaves) != len(columns):
        names = [e.name for e in elements[1:]] if leaves is None else [leaf[0] for leaf in leaves]
        raise CorruptFileError(
            f"The Parquet schema has columns {names} but _pm describes "
            f"{[c.name for c in columns]}.",
            footer_offset,
        )
    for (name, leaf, max_def, max_rep), column in zip(leaves, columns, strict=True):
        repetition = leaf.repetition_type
        parquet = (name, leaf.type, leaf.type_length or 0, repetition, max_def, max_rep)
        sidecar = (
            column.name,
            column.physical_type,
            column.fixed_byte_len,
            column.repetition,
            column.max_def_level,
            column.max_rep_level,
        )
        if parquet != sidecar:
            raise CorruptFileError(
                f"Column {column.name!r} differs between the Parquet schema and _pm: "
                f"{_column_text(*parquet)} in the footer, {_column_text(*sidecar)} in _pm.",
                footer_offset,
            )


def leaf_elements(
    elements: Sequence[SchemaElement],
) -> list[tuple[str, SchemaElement, int, int]] | None:
    """The leaves of a footer's schema: (dotted path, element, max definition level, max
    repetition level) each, depth first; None if the element tree is malformed.

    Levels as parquet-format defines them: each OPTIONAL or REPEATED element on the path adds
    a definition level, each REPEATED one a repetition level.
    """
    leaves: list[tuple[str, SchemaElement, int, int]] = []
    # (children left, path, def, rep) of the open groups, the root first
    stack: list[tuple[int, tuple[str, ...], int, int]] = (
        [(max(elements[0].num_children or 0, 0), (), 0, 0)] if elements else []
    )
    at = 1
    while stack:
        left, path, max_def, max_rep = stack.pop()
        if left == 0:
            continue
        stack.append((left - 1, path, max_def, max_rep))
        if at >= len(elements):
            return None
        element = elements[at]
        at += 1
        repetition = element.repetition_type
        child_def = max_def + int(repetition != FieldRepetitionType.REQUIRED)
        child_rep = max_rep + int(repetition == FieldRepetitionType.REPEATED)
        child_path = (*path, element.name or "")
        if element.num_children:
            stack.append((element.num_children, child_path, child_def, child_rep))
        else:
            leaves.append((".".join(child_path), element, child_def, child_rep))
    return leaves if at == len(elements) else None


def _column_text(
    name: str | None,
    physical: int | None,
    length: int,
    repetition: int | None,
    max_def: int,
    max_rep: int,
) -> str:
    physical_name = "no type" if physical is None else _type_name(physical)
    repetition_name = _REPETITION_NAMES.get(repetition, f"repetition {repetition}")
    return (
        f"{name!r} {physical_name} (fixed length {length}) {repetition_name}, "
        f"max definition level {max_def}, max repetition level {max_rep}"
    )
