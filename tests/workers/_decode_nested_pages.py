"""Chunks of nested leaves built from levels and values for decoding tests (tests only).

A :class:`Chunk` holds levels per entry and the values of the defined entries; :func:`build`
writes it as ``[dictionary page] data page*`` cut at given entries with the page builders of
``workers.page`` (v1 RLE levels), a DATA_PAGE_V2 with repetition levels, or v1 pages with
deprecated BIT_PACKED levels, plain or dictionary values, compressed, encrypted.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from hypothesis import strategies as st

from streamwrite.crypto.decryption import ChunkDecryptor
from streamwrite.format import structs as t
from streamwrite.format.aad import ModuleType
from streamwrite.format.enums import CompressionCodec, Encoding, PageType, Type
from streamwrite.format.thrift.codec import serialize
from workers.cipher import Algorithm, ModuleCipher
from workers.compression import compress
from workers.decode import DecodedChunk, decode_chunk
from workers.encoding.dictionary import dictionary_encode, encode_dictionary_indices
from workers.encoding.plain import encode_plain
from workers.encoding.rle_hybrid import encode_levels_v1, encode_rle_hybrid
from workers.encodings import encode_values
from workers.page import BuiltPage, ChunkCrypto, build_data_page_v1, build_dictionary_page
from workers.values import BinaryValues

EXAMPLES = int(os.environ.get("STREAMWRITE_DECODE_NESTED_EXAMPLES", "150"))
LIMIT = 1 << 20
OFFSET = 1000  # where the chunk "starts" in its file (error offsets)
CODECS = (CompressionCodec.UNCOMPRESSED, CompressionCodec.SNAPPY, CompressionCodec.ZSTD)


# --- reference encoders (tests only) ----------------------------------------------------------


def bit_packed_reference(levels: list[int], width: int) -> bytes:
    """Deprecated BIT_PACKED, per value: bits MSB first, values MSB first."""
    bits = "".join(format(level, f"0{width}b") for level in levels) if width else ""
    bits += "0" * (-len(bits) % 8)
    return bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8))


@dataclass(frozen=True)
class Chunk:
    """A chunk's content: levels per entry and the values of the defined entries."""

    def_levels: npt.NDArray[np.uint8]
    rep_levels: npt.NDArray[np.uint8]
    values: npt.NDArray[np.int64] | list[bytes]
    max_def: int
    max_rep: int

    @property
    def defined(self) -> npt.NDArray[np.bool_]:
        return self.def_levels == self.max_def

    def physical(self, lo: int, hi: int) -> Any:
        """Values of entries ``[lo, hi)`` in the workers' in-memory form."""
        first = int(np.count_nonzero(self.defined[:lo]))
        last = first + int(np.count_nonzero(self.defined[lo:hi]))
        part = self.values[first:last]
        if isinstance(part, list):
            offsets = np.zeros(len(part) + 1, dtype=np.int64)
            offsets[1:] = np.cumsum([len(v) for v in part])
            data = np.frombuffer(b"".join(part), dtype=np.uint8)
            return BinaryValues(offsets, data)
        return part


@st.composite
def chunks(draw: st.DrawFn, max_rep_range: tuple[int, int] = (1, 4)) -> Chunk:
    max_rep = draw(st.integers(*max_rep_range))
    max_def = draw(st.integers(max_rep, max_rep + 3))
    num = draw(st.integers(1, 300))
    rep = np.array(draw(st.lists(st.integers(0, max_rep), min_size=num, max_size=num)), np.uint8)
    rep[0] = 0
    # skew toward defined entries so pages carry values
    defs = draw(st.lists(st.integers(0, max_def + 2), min_size=num, max_size=num))
    def_levels = np.minimum(np.array(defs, dtype=np.uint8), max_def)
    count = int(np.count_nonzero(def_levels == max_def))
    values: npt.NDArray[np.int64] | list[bytes]
    if draw(st.booleans()):
        values = np.array(draw(st.lists(st.integers(-5, 5), min_size=count, max_size=count)))
        values = values.astype(np.int64)
    else:
        words = st.binary(max_size=6)
        values = draw(st.lists(words, min_size=count, max_size=count))
    return Chunk(def_levels, rep, values, max_def, max_rep)


@st.composite
def cuts(draw: st.DrawFn, chunk: Chunk, at_records: bool) -> list[int]:
    """Page boundaries ``[0, ..., n]``: at record starts, or anywhere."""
    n = chunk.rep_levels.shape[0]
    if at_records:
        candidates = [int(i) for i in np.flatnonzero(chunk.rep_levels == 0) if i > 0]
    else:
        candidates = list(range(1, n))
    chosen = draw(st.lists(st.sampled_from(candidates), max_size=6)) if candidates else []
    return [0, *sorted(set(chosen)), n]


@dataclass(frozen=True)
class Layout:
    v2: bool
    codec: CompressionCodec
    dictionary: bool
    bit_packed: bool  # v1 only
    encrypted: bool
    v2_levels_plaintext: bool = False


def _v2_page(
    rep: bytes,
    defs: bytes,
    values: bytes,
    num_values: int,
    num_nulls: int,
    num_rows: int,
    encoding: Encoding,
    codec: CompressionCodec,
    crypto: ChunkCrypto | None,
    ordinal: int,
) -> bytes:
    """A DATA_PAGE_V2 with repetition levels (the layout of ``build_data_page_v2``)."""
    compressed = compress(codec, values, None) if codec != CompressionCodec.UNCOMPRESSED else values
    levels = rep + defs
    if crypto is None:
        body = levels + compressed
    elif crypto.v2_levels_plaintext:
        body = levels + crypto.encrypt(ModuleType.DATA_PAGE, compressed, ordinal)
    else:
        body = crypto.encrypt(ModuleType.DATA_PAGE, levels + compressed, ordinal)
    header = serialize(
        t.PageHeader(
            type=PageType.DATA_PAGE_V2,
            uncompressed_page_size=len(levels) + len(values),
            compressed_page_size=len(body),
            data_page_header_v2=t.DataPageHeaderV2(
                num_values=num_values,
                num_nulls=num_nulls,
                num_rows=num_rows,
                encoding=encoding,
                definition_levels_byte_length=len(defs),
                repetition_levels_byte_length=len(rep),
                is_compressed=codec != CompressionCodec.UNCOMPRESSED,
            ),
        )
    )
    if crypto is not None:
        header = crypto.encrypt(ModuleType.DATA_PAGE_HEADER, header, ordinal)
    return header + body


def _bit_packed_v1_page(
    rep: bytes, defs: bytes, values: bytes, num_values: int, encoding: Encoding
) -> bytes:
    raw = rep + defs + values
    header = serialize(
        t.PageHeader(
            type=PageType.DATA_PAGE,
            uncompressed_page_size=len(raw),
            compressed_page_size=len(raw),
            data_page_header=t.DataPageHeader(
                num_values=num_values,
                encoding=encoding,
                definition_level_encoding=Encoding.BIT_PACKED,
                repetition_level_encoding=Encoding.BIT_PACKED,
            ),
        )
    )
    return header + raw


@dataclass(frozen=True)
class Built:
    data: bytes
    meta: t.ColumnMetaData
    dictionary_size: int  # bytes of the dictionary page (0: none)
    pages: list[tuple[int, int, int, int]]  # (offset in data, size, first record, records)
    cipher: ChunkDecryptor | None


def build(chunk: Chunk, bounds: list[int], layout: Layout) -> Built:
    """The chunk's bytes: ``[dictionary page] data page*`` cut at ``bounds``."""
    physical = Type.INT64 if isinstance(chunk.values, np.ndarray) else Type.BYTE_ARRAY
    crypto = decryptor = None
    if layout.encrypted:
        cipher = ModuleCipher(bytes(range(16)), b"file-aad-for-decode", Algorithm.AES_GCM_V1)
        crypto = ChunkCrypto(cipher, 3, 5, v2_levels_plaintext=layout.v2_levels_plaintext)
        decryptor = ChunkDecryptor(cipher, 3, 5, "Column 'x' of row group 3")
    out = bytearray()
    dictionary = indices = None
    if layout.dictionary:
        dictionary, indices = dictionary_encode(chunk.physical(0, len(chunk.def_levels)), physical)
        page = build_dictionary_page(
            values=encode_plain(dictionary, physical),
            num_values=len(dictionary),
            codec=layout.codec,
            compression_level=None,
            write_crc=True,
            crypto=crypto,
        )
        out += page.data
    dictionary_size = len(out)
    rep_width, def_width = chunk.max_rep.bit_length(), chunk.max_def.bit_length()
    pages = []
    record = 0
    for ordinal, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        reps, defs = chunk.rep_levels[lo:hi], chunk.def_levels[lo:hi]
        first = int(np.count_nonzero(chunk.defined[:lo]))
        count = int(np.count_nonzero(chunk.defined[lo:hi]))
        if indices is not None and dictionary is not None:
            encoding = Encoding.RLE_DICTIONARY
            values = encode_dictionary_indices(indices[first : first + count], len(dictionary))
        else:
            encoding = Encoding.PLAIN
            values = encode_values(chunk.physical(lo, hi), physical, Encoding.PLAIN)
        records = int(np.count_nonzero(reps == 0))
        data: bytes
        if layout.v2:
            data = _v2_page(
                encode_rle_hybrid(reps, rep_width),
                encode_rle_hybrid(defs, def_width),
                values,
                hi - lo,
                hi - lo - count,
                records,
                encoding,
                layout.codec,
                crypto,
                ordinal,
            )
        elif layout.bit_packed:
            data = _bit_packed_v1_page(
                bit_packed_reference(reps.tolist(), rep_width),
                bit_packed_reference(defs.tolist(), def_width),
                values,
                hi - lo,
                encoding,
            )
        else:
            built: BuiltPage = build_data_page_v1(
                levels=encode_levels_v1(reps, rep_width) + encode_levels_v1(defs, def_width),
                values=values,
                num_values=hi - lo,
                encoding=encoding,
                codec=layout.codec,
                compression_level=None,
                write_crc=True,
                crypto=crypto,
                page_ordinal=ordinal,
            )
            data = built.data
        pages.append((len(out), len(data), record, records))
        record += records
        out += data
    meta = t.ColumnMetaData(
        type=physical,
        path_in_schema=["x", "list", "element"],
        codec=CompressionCodec.UNCOMPRESSED if layout.bit_packed else layout.codec,
        num_values=len(chunk.def_levels),
    )
    return Built(bytes(out), meta, dictionary_size, pages, decryptor)


def decode(built: Built, chunk: Chunk, **kwargs: Any) -> DecodedChunk:
    return decode_chunk(
        built.data,
        OFFSET,
        built.meta,
        type_length=None,
        max_definition_level=chunk.max_def,
        max_repetition_level=chunk.max_rep,
        verify_checksums=True,
        max_decompressed_page_size=LIMIT,
        cipher=built.cipher,
        dictionary_first=built.dictionary_size > 0,
        **kwargs,
    )


def as_list(values: Any) -> list[Any]:
    if isinstance(values, BinaryValues):
        return [bytes(values.data[a:b]) for a, b in itertools.pairwise(values.offsets)]
    return list(np.asarray(values).tolist())


def assert_decoded(decoded: DecodedChunk, chunk: Chunk, lo: int, hi: int) -> None:
    """``decoded`` holds exactly entries ``[lo, hi)`` of ``chunk``."""
    assert decoded.def_levels is not None and decoded.rep_levels is not None
    assert decoded.def_levels.dtype == np.uint8 and decoded.rep_levels.dtype == np.uint8
    assert decoded.def_levels.tolist() == chunk.def_levels[lo:hi].tolist()
    assert decoded.rep_levels.tolist() == chunk.rep_levels[lo:hi].tolist()
    assert as_list(decoded.values) == as_list(chunk.physical(lo, hi))
    assert decoded.num_rows == int(np.count_nonzero(chunk.rep_levels[lo:hi] == 0))
    assert decoded.num_levels == hi - lo


layouts = st.builds(
    Layout,
    v2=st.booleans(),
    codec=st.sampled_from(CODECS),
    dictionary=st.booleans(),
    bit_packed=st.booleans(),
    encrypted=st.booleans(),
    v2_levels_plaintext=st.booleans(),
).map(
    lambda layout: Layout(
        layout.v2,
        CompressionCodec.UNCOMPRESSED if layout.bit_packed and not layout.v2 else layout.codec,
        layout.dictionary,
        layout.bit_packed and not layout.v2,
        layout.encrypted and not (layout.bit_packed and not layout.v2),
        layout.v2_levels_plaintext and layout.v2,
    )
)
