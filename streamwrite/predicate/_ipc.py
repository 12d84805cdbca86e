"""The schema custom_metadata of an Arrow IPC file, in order and with duplicate keys.

pyarrow serialises a ``pyarrow.compute.Expression`` (``Expression.__reduce__``) as an Arrow IPC
*file* whose schema's ``custom_metadata`` lists the call tree in pre-order with repeated keys
(``call``, ``field_ref``, ``literal``, ``options``, ``end``). ``Schema.metadata`` is a dict and
loses both, so this module reads the file footer's flatbuffer itself. Layout (Arrow columnar
format, "IPC File Format"; ``File.fbs``, ``Schema.fbs``)::

    file     = "ARROW1" pad2 <stream> footer:flatbuffer footer_size:int32le "ARROW1"
    flatbuf  = root:uoffset32 ...            (a uoffset is relative to where it is stored)
    table    = vtable_rel:soffset32 fields   (vtable at table - vtable_rel)
    vtable   = vtable_size:u16 table_size:u16 field_offset:u16*   (0 = field absent)
    Footer   = {0: version:short, 1: schema:Schema, 2: dictionaries, 3: recordBatches, ...}
    Schema   = {0: endianness, 1: fields, 2: custom_metadata:[KeyValue], 3: features}
    KeyValue = {0: key:string, 1: value:string}
    vector   = length:u32 element*           (a table element is a uoffset32)
    string   = length:u32 bytes NUL

Every offset is bounds-checked; a malformed buffer raises ConfigError (it came from the
caller's filter argument).
"""

from __future__ import annotations

import struct

from streamwrite.errors import ConfigError

__all__ = ["schema_metadata_pairs"]

_MAGIC = b"ARROW1"


def _bad(what: str) -> ConfigError:
    return ConfigError(
        f"The serialized pyarrow.compute.Expression is not a valid Arrow IPC file: {what}."
    )


class _Flatbuffer:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def u32(self, pos: int) -> int:
        if pos < 0 or pos + 4 > len(self.data):
            raise _bad(f"offset {pos} is outside the {len(self.data)}-byte footer")
        return int(struct.unpack_from("<I", self.data, pos)[0])

    def u16(self, pos: int) -> int:
        if pos < 0 or pos + 2 > len(self.data):
            raise _bad(f"offset {pos} is outside the {len(self.data)}-byte footer")
        return int(struct.unpack_from("<H", self.data, pos)[0])

    def field(self, table: int, index: int) -> int | None:
        """The absolute position of field ``index`` of the table at ``table`` (None: absent)."""
        self.u32(table)
        vtable = table - int(struct.unpack_from("<i", self.data, table)[0])
        vtable_size = self.u16(vtable)
        if 4 + 2 * index + 2 > vtable_size:
            return None
        rel = self.u16(vtable + 4 + 2 * index)
        return None if rel == 0 else table + rel

    def deref(self, pos: int) -> int:
        return pos + self.u32(pos)

    def string(self, pos: int) -> bytes:
        start = self.deref(pos)
        length = self.u32(start)
        if start + 4 + length > len(self.data):
            raise _bad(f"a string of {length} bytes at {start} runs past the footer")
        return self.data[start + 4 : start + 4 + length]


def schema_metadata_pairs(buffer: bytes) -> list[tuple[str, str]]:
    """The schema's custom_metadata of the Arrow IPC file ``buffer``, in order.

    Returns:
        ``[(key, value), ...]`` exactly as stored, duplicates included.

    Raises:
        ConfigError: ``buffer`` is not an Arrow IPC file, or its footer is malformed.
    """
    if len(buffer) < 18 or buffer[:6] != _MAGIC or buffer[-6:] != _MAGIC:
        raise _bad("the ARROW1 magic is missing")
    (footer_size,) = struct.unpack_from("<i", buffer, len(buffer) - 10)
    start = len(buffer) - 10 - footer_size
    if footer_size <= 0 or start < 8:
        raise _bad(f"the footer size {footer_size} does not fit the {len(buffer)}-byte file")
    fb = _Flatbuffer(bytes(buffer[start : len(buffer) - 10]))
    footer = fb.deref(0)
    schema_field = fb.field(footer, 1)
    if schema_field is None:
        raise _bad("the footer has no schema")
    schema = fb.deref(schema_field)
    metadata_field = fb.field(schema, 2)
    if metadata_field is None:
        return []
    vector = fb.deref(metadata_field)
    count = fb.u32(vector)
    if vector + 4 + 4 * count > len(fb.data):
        raise _bad(f"a vector of {count} key/values runs past the footer")
    pairs = []
    for i in range(count):
        entry = fb.deref(vector + 4 + 4 * i)
        key_field, value_field = fb.field(entry, 0), fb.field(entry, 1)
        key = b"" if key_field is None else fb.string(key_field)
        value = b"" if value_field is None else fb.string(value_field)
        try:
            pairs.append((key.decode(), value.decode()))
        except UnicodeDecodeError as exc:
            raise _bad(f"key/value {i} is not UTF-8") from exc
    return pairs
