"""Probing a column's split block bloom filters with filter literals (``might_contain``).

Where a chunk's filter is (parquet-format BloomFilter.md; ``workers.bloom`` for the bitset)::

    ColumnMetaData.bloom_filter_offset [bloom_filter_length]
    plaintext:  BloomFilterHeader (Thrift compact) bitset[numBytes]
    encrypted:  module(BLOOM_FILTER_HEADER) module(BLOOM_FILTER_BITSET)
                module := length (u32 LE) nonce(12) ciphertext tag(16)        (AES-GCM)

A literal is hashed as the value the column stores (the "type coercion before hashing" trap):
it is converted to its physical value exactly as the writer converts the column's values
(``int8`` -> INT32, ``date64`` -> INT32 days, decimals at the column's physical width, strings
as UTF-8 bytes), and the filter is consulted only when that conversion is exact, i.e. the
physical value converts back to the literal. Never consulted (the answer is "might contain"):
a null literal; NaN (payloads differ, and Arrow's ``is_in`` matches any NaN); a float zero
(``-0.0 == 0.0`` but they hash differently); a decimal stored as BYTE_ARRAY (its byte length is
the writer's choice); BOOLEAN and INT96 columns; a filter with another algorithm, hash or
compression than SPLIT_BLOCK / XXHASH / UNCOMPRESSED; a chunk without a filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from streamwrite.arrow.assembly import from_physical
from streamwrite.arrow.schema import ColumnSpec
from streamwrite.arrow.values import to_physical
from streamwrite.crypto.decryption import ChunkDecryptor
from streamwrite.errors import CorruptFileError, FormatError, LimitError, StreamwriteError
from streamwrite.format import structs as t
from streamwrite.format.aad import ModuleType
from streamwrite.format.enums import Type
from streamwrite.format.thrift.codec import deserialize
from streamwrite.reader.statistics import value_spec
from workers.bloom import BLOOM_MAX_BYTES, SplitBlockBloomFilter, hash_values
from workers.decode import KERNEL_ERRORS

__all__ = ["BloomProbe", "literal_hashes"]

_MAX_HEADER_SIZE = 64
"""A plaintext BloomFilterHeader is about 15 bytes; read this much to decode it."""


class ChunkReader(Protocol):
    """What a probe reads of a :class:`streamwrite.ParquetFile` (it satisfies this)."""

    @property
    def footer_offset(self) -> int: ...
    def read_bytes(self, offset: int, size: int) -> memoryview: ...
    def _column_metadata(self, i: int, column: int) -> t.ColumnMetaData: ...
    def _chunk_decryptor(self, i: int, column: int) -> ChunkDecryptor | None: ...


def literal_hashes(
    literals: pa.Array, spec: ColumnSpec
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    """XXH64 of each literal's physical value, and which literals may be probed.

    Args:
        literals: Values of the column's value type (or castable to it exactly).
        spec: The column.

    Returns:
        ``(hashes, usable)``, one entry per literal; ``hashes`` is meaningless where
        ``usable`` is False (module docstring).
    """
    n = len(literals)
    none = np.zeros(n, dtype=np.bool_)
    zeros = np.zeros(n, dtype=np.uint64)
    vspec = value_spec(spec)
    dtype = vspec.field.type
    physical = spec.physical_type
    if n == 0 or physical in (Type.BOOLEAN, Type.INT96):
        return zeros, none
    if pa.types.is_decimal(dtype) and physical == Type.BYTE_ARRAY:
        return zeros, none
    try:
        if literals.type != dtype:
            literals = literals.cast(dtype)  # safe cast: raises rather than lose a value
        column = to_physical(literals, vspec)
        back = from_physical(column.values, column.def_levels, n, vspec)
    except (StreamwriteError, pa.ArrowException, *KERNEL_ERRORS):
        return zeros, none
    if pa.types.is_float16(dtype):
        back, literals = back.cast(pa.float32()), literals.cast(pa.float32())
    same = pc.fill_null(pc.equal(back, literals), False)  # null and NaN literals: False
    if pa.types.is_floating(literals.type):
        same = pc.and_(same, pc.fill_null(pc.not_equal(literals, 0), False))
    usable = np.asarray(same.to_numpy(zero_copy_only=False), dtype=np.bool_)
    valid = np.ones(n, dtype=np.bool_)
    if column.def_levels is not None:
        valid = column.def_levels.astype(np.bool_)
    hashes = zeros.copy()
    hashes[valid] = hash_values(column.values, physical)
    return hashes, usable & valid


class BloomProbe:
    """``might_contain`` of one column over some row groups (:class:`ColumnStats`).

    Filters are read on first use and kept; ``bytes_read`` counts the bytes read.
    """

    def __init__(self, pf: ChunkReader, spec: ColumnSpec, row_groups: Sequence[int]) -> None:
        self._pf = pf
        self._spec = spec
        self._row_groups = list(row_groups)
        self._filters: dict[int, SplitBlockBloomFilter | None] = {}
        self.bytes_read = 0

    def has_filters(self) -> bool:
        """Whether any of the row groups has a filter for the column (footer only)."""
        return any(
            self._pf._column_metadata(i, self._spec.index).bloom_filter_offset is not None
            for i in self._row_groups
        )

    def __call__(self, literals: pa.Array) -> npt.NDArray[np.bool_]:
        """An (N, L) bool array: False where literal ``j`` is surely not in row group ``i``.

        Raises:
            CorruptFileError: A filter's header or bitset is damaged.
            EncryptionError: An encrypted filter does not decrypt.
        """
        result = np.ones((len(self._row_groups), len(literals)), dtype=np.bool_)
        hashes, usable = literal_hashes(literals, self._spec)
        if not usable.any():
            return result
        for k, i in enumerate(self._row_groups):
            bloom = self._filter(i)
            if bloom is not None:
                result[k, usable] = bloom.check_hashes(hashes[usable])
        return result

    def _filter(self, i: int) -> SplitBlockBloomFilter | None:
        if i not in self._filters:
            self._filters[i] = self._read(i)
        return self._filters[i]

    def _read(self, i: int) -> SplitBlockBloomFilter | None:
        meta = self._pf._column_metadata(i, self._spec.index)
        offset = meta.bloom_filter_offset
        if offset is None:
            return None
        where = f"The bloom filter of column {self._spec.name!r} in row group {i}"
        if not 4 <= offset < self._pf.footer_offset:
            raise CorruptFileError(f"{where} lies outside the data of the file.", offset)
        cipher = self._pf._chunk_decryptor(i, self._spec.index)
        try:
            if cipher is None:
                header, bitset = self._plain(offset, meta.bloom_filter_length)
            else:
                header, bitset = self._encrypted(offset, cipher)
        except (FormatError, LimitError) as exc:
            raise CorruptFileError(f"{where} does not decode: {exc}", offset) from exc
        if (
            header.algorithm is None
            or header.algorithm.BLOCK is None
            or header.hash is None
            or header.hash.XXHASH is None
            or header.compression is None
            or header.compression.UNCOMPRESSED is None
        ):
            return None  # a kind of filter we do not know: it proves nothing
        try:
            return SplitBlockBloomFilter.from_bitset(bitset)
        except FormatError as exc:
            raise CorruptFileError(f"{where}: {exc}", offset) from exc

    def _plain(self, offset: int, length: int | None) -> tuple[t.BloomFilterHeader, bytes]:
        available = self._pf.footer_offset - offset
        head = self._pf.read_bytes(offset, min(available, length or _MAX_HEADER_SIZE))
        header, end = deserialize(t.BloomFilterHeader, head)
        size = header.numBytes
        if size is None or not 0 < size <= BLOOM_MAX_BYTES or end + size > available:
            raise FormatError(f"its bitset of {size} bytes does not fit in the file.")
        if length is not None and end + size > length:
            raise FormatError(f"its {end + size} bytes pass bloom_filter_length {length}.")
        self.bytes_read += end + size
        return header, bytes(self._pf.read_bytes(offset + end, size))

    def _module(self, offset: int, module: ModuleType, cipher: ChunkDecryptor) -> tuple[bytes, int]:
        available = self._pf.footer_offset - offset
        if available < 4:
            raise FormatError(f"its {module.name} module runs past the data of the file.")
        size = 4 + int.from_bytes(self._pf.read_bytes(offset, 4), "little")
        if size > min(available, BLOOM_MAX_BYTES + 64):
            raise FormatError(f"its {module.name} module of {size} bytes does not fit.")
        self.bytes_read += size
        plain, _ = cipher.decrypt(module, self._pf.read_bytes(offset, size))
        return plain, size

    def _encrypted(self, offset: int, cipher: ChunkDecryptor) -> tuple[t.BloomFilterHeader, bytes]:
        plain, used = self._module(offset, ModuleType.BLOOM_FILTER_HEADER, cipher)
        header, _ = deserialize(t.BloomFilterHeader, plain)  # zero padding may follow
        bitset, _ = self._module(offset + used, ModuleType.BLOOM_FILTER_BITSET, cipher)
        if header.numBytes != len(bitset):
            raise FormatError(
                f"its header says {header.numBytes} bytes, its bitset has {len(bitset)}."
            )
        return header, bitset
