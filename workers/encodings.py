"""One entry point per direction over the value encodings in :mod:`workers.encoding`.

Which encoding applies to which physical type (parquet-format ``Encodings.md``)::

    PLAIN                    every type
    RLE                      BOOLEAN values (4-byte length prefix + RLE/bit-packed hybrid)
    DELTA_BINARY_PACKED      INT32, INT64
    DELTA_LENGTH_BYTE_ARRAY  BYTE_ARRAY
    DELTA_BYTE_ARRAY         BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY
    BYTE_STREAM_SPLIT        FLOAT, DOUBLE, INT32, INT64, FIXED_LEN_BYTE_ARRAY
    RLE_DICTIONARY           indices into a PLAIN dictionary page (see workers.encoding.dictionary)

Dictionary indices are handled by the chunk writer and the page decoder, not here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from streamwrite.errors import ConfigError, FormatError, UnsupportedError
from streamwrite.format.enums import Encoding, Type
from workers.encoding.byte_stream_split import (
    decode_byte_stream_split,
    encode_byte_stream_split,
)
from workers.encoding.delta_binary_packed import (
    decode_delta_binary_packed,
    encode_delta_binary_packed,
)
from workers.encoding.delta_byte_array import decode_delta_byte_array, encode_delta_byte_array
from workers.encoding.delta_length_byte_array import (
    decode_delta_length_byte_array,
    encode_delta_length_byte_array,
)
from workers.encoding.plain import decode_plain, encode_plain
from workers.encoding.rle_hybrid import decode_boolean_rle, encode_boolean_rle
from workers.values import count_values

__all__ = ["VALUE_ENCODINGS", "check_encoding", "decode_values", "encode_values"]

VALUE_ENCODINGS: dict[Encoding, frozenset[Type]] = {
    Encoding.PLAIN: frozenset(Type),
    Encoding.RLE: frozenset({Type.BOOLEAN}),
    Encoding.DELTA_BINARY_PACKED: frozenset({Type.INT32, Type.INT64}),
    Encoding.DELTA_LENGTH_BYTE_ARRAY: frozenset({Type.BYTE_ARRAY}),
    Encoding.DELTA_BYTE_ARRAY: frozenset({Type.BYTE_ARRAY, Type.FIXED_LEN_BYTE_ARRAY}),
    Encoding.BYTE_STREAM_SPLIT: frozenset(
        {Type.FLOAT, Type.DOUBLE, Type.INT32, Type.INT64, Type.FIXED_LEN_BYTE_ARRAY}
    ),
}

_INT_DTYPES: dict[Type, np.dtype[Any]] = {
    Type.INT32: np.dtype(np.int32),
    Type.INT64: np.dtype(np.int64),
}


def check_encoding(encoding: Encoding, physical_type: Type, column: str) -> None:
    """Raise :class:`ConfigError` unless ``encoding`` can encode values of ``physical_type``."""
    allowed = VALUE_ENCODINGS.get(encoding)
    if allowed is None or physical_type not in allowed:
        raise ConfigError(
            f"Encoding {encoding.name} cannot encode column {column!r} of physical type "
            f"{physical_type.name}."
        )


def encode_values(values: Any, physical_type: Type, encoding: Encoding) -> bytes:
    """Encode non-null ``values`` (in the :mod:`workers.values` form) with ``encoding``.

    Returns:
        The encoded bytes of a data page's value section.
    """
    if encoding == Encoding.PLAIN:
        return encode_plain(values, physical_type)
    if encoding == Encoding.RLE:
        return encode_boolean_rle(values)
    if encoding == Encoding.DELTA_BINARY_PACKED:
        return encode_delta_binary_packed(values)
    if encoding == Encoding.DELTA_LENGTH_BYTE_ARRAY:
        return encode_delta_length_byte_array(values)
    if encoding == Encoding.DELTA_BYTE_ARRAY:
        return encode_delta_byte_array(values)
    if encoding == Encoding.BYTE_STREAM_SPLIT:
        return encode_byte_stream_split(values)
    raise ConfigError(f"Encoding {encoding!r} is not a value encoding streamwrite writes.")


def decode_values(
    buf: bytes | memoryview,
    physical_type: Type,
    encoding: int,
    num_values: int,
    type_length: int | None,
) -> Any:
    """Decode exactly ``num_values`` values of a data page's value section.

    Returns:
        The values in the :mod:`workers.values` form.

    Raises:
        FormatError: malformed bytes, or an encoding not valid for the type.
        UnsupportedError: a deprecated encoding streamwrite does not read.
    """
    known = encoding in Encoding._value2member_map_
    allowed = VALUE_ENCODINGS.get(Encoding(encoding)) if known else None
    if allowed is None:
        if encoding == Encoding.BIT_PACKED:
            raise UnsupportedError("BIT_PACKED is only valid for levels, not for values.")
        raise FormatError(f"Unknown or non-value encoding {encoding} in a data page.")
    if physical_type not in allowed:
        raise FormatError(
            f"Encoding {Encoding(encoding).name} is not valid for physical type "
            f"{physical_type.name}."
        )
    values: Any
    if encoding == Encoding.PLAIN:
        values, _ = decode_plain(buf, physical_type, num_values, type_length)
    elif encoding == Encoding.RLE:
        values, _ = decode_boolean_rle(buf, num_values)
    elif encoding == Encoding.DELTA_BINARY_PACKED:
        values, _ = decode_delta_binary_packed(buf, _INT_DTYPES[physical_type], num_values)
    elif encoding == Encoding.DELTA_LENGTH_BYTE_ARRAY:
        values, _ = decode_delta_length_byte_array(buf, num_values)
    elif encoding == Encoding.DELTA_BYTE_ARRAY:
        ftl = type_length if physical_type == Type.FIXED_LEN_BYTE_ARRAY else None
        values, _ = decode_delta_byte_array(buf, num_values, ftl)
    else:
        values, _ = decode_byte_stream_split(buf, physical_type, num_values, type_length)
    count = count_values(values)
    if count != num_values:
        raise FormatError(f"Page holds {count} values where its header promises {num_values}.")
    return values
