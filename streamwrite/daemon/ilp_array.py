"""Protocol-2 array tokens in the vectorised ILP path (:mod:`.ilp_fast`), a group at a time.

A token is the field value after ``name=``: ``=`` 0x0E elem ndims shape data (layout and
limits: :mod:`.ilp_types`). Its *class code* (a byte of the shape-group key) carries the element
type and ndims, so every row of a group has both; shapes differ by row. A group's rows are
read with one shape gather (``rows x ndims`` u32) and one gather of every element (an 8-byte
window at each element's position), wrapped in nested list offsets (:func:`.nested_lists`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from streamwrite.daemon.ilp_types import (
    ARRAY_ELEMENT_SIZE,
    ARRAY_ELEMENTS,
    MAX_ARRAY_DIMS,
    MAX_ARRAY_ELEMENTS,
    nested_lists,
)

__all__ = ["MIN_ARRAY_CODE", "array_code", "array_tokens"]

MIN_ARRAY_CODE = 64
"""Array class codes are ``64 + 32 * (elem is int64) + ndims - 1`` (64..127)."""
_I64_CODES = 32
_ELEM_I64, _ELEM_F64 = 6, 10


def array_code(buf: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Returns the class code of each token at ``starts`` read as an array header, 0 where its
    element type or ndims is invalid (``buf`` is padded: a short token reads zeros)."""
    elem, ndims = buf[starts + 2], buf[starts + 3].astype(np.int64)
    valid = ((elem == _ELEM_F64) | (elem == _ELEM_I64)) & (ndims >= 1) & (ndims <= MAX_ARRAY_DIMS)
    codes = MIN_ARRAY_CODE + _I64_CODES * (elem == _ELEM_I64) + ndims - 1
    return np.where(valid, codes, 0)


def array_tokens(
    buf: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    code: int,
) -> tuple[pa.Array, npt.NDArray[np.bool_]]:
    """Returns the arrays of tokens of one class ``code`` and which rows are valid.

    A row is valid when its token holds exactly the elements its shape claims, within the
    limits of :func:`.ilp_reference._read_array` (which words the errors of the others); an
    invalid row's value is an empty list.
    """
    elem = _ELEM_I64 if code - MIN_ARRAY_CODE >= _I64_CODES else _ELEM_F64
    ndims = (code - MIN_ARRAY_CODE) % _I64_CODES + 1
    head_size = 4 + 4 * ndims
    lengths = ends - starts
    last = len(buf) - 1
    byte_index = starts[:, None] + 4 + np.arange(4 * ndims)[None, :]
    raw = buf[np.minimum(byte_index, last)].reshape(len(starts), ndims, 4).astype(np.int64)
    shapes = raw[:, :, 0] | raw[:, :, 1] << 8 | raw[:, :, 2] << 16 | raw[:, :, 3] << 24
    # Products in float64 first: exact below 2**53, and anything larger is refused.
    sizes = np.cumprod(shapes.astype(np.float64), axis=1)
    num_elements_f = sizes[:, -1]
    num_lists_f = sizes[:, :-1].sum(axis=1)
    value_size_f = 3.0 + 4 * ndims + ARRAY_ELEMENT_SIZE * num_elements_f
    valid = (
        (lengths >= head_size)
        & (num_elements_f <= MAX_ARRAY_ELEMENTS)
        & (num_lists_f <= value_size_f)
        & (lengths == head_size + ARRAY_ELEMENT_SIZE * num_elements_f)
    )
    shapes[~valid] = 0
    num_elements = np.where(valid, num_elements_f, 0).astype(np.int64)
    # One gather of every element: an 8-byte window at each element's position.
    before = np.zeros(len(starts), dtype=np.int64)
    np.cumsum(num_elements[:-1], out=before[1:])
    index = np.repeat(starts + head_size - ARRAY_ELEMENT_SIZE * before, num_elements)
    index += ARRAY_ELEMENT_SIZE * np.arange(len(index), dtype=np.int64)
    windows = np.lib.stride_tricks.sliding_window_view(buf, ARRAY_ELEMENT_SIZE)
    flat = windows[index].view(ARRAY_ELEMENTS[elem][0]).reshape(-1)
    return nested_lists(elem, shapes, flat), valid
