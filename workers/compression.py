"""Page compression codecs (Parquet format, section 7.1 "Compression").

Every codec except the deprecated ``LZ4`` feeds the raw page bytes (levels + values, or the
dictionary) to the library as-is, with no framing or padding; the sizes needed to allocate
buffers live in the ``PageHeader`` (``compressed_page_size``, ``uncompressed_page_size``).

========================  ======================================  ================================
codec                     byte format                             library
========================  ======================================  ================================
UNCOMPRESSED (0)          the bytes themselves                    -
SNAPPY (1)                raw Snappy block (no stream framing)    ``cramjam.snappy.*_raw``
GZIP (2)                  RFC 1952 gzip member(s), not zlib       ``cramjam.gzip`` / ``zlib``
LZO (3)                   -                                       unsupported
BROTLI (4)                RFC 7932 stream                         ``cramjam.brotli``
LZ4 (5, deprecated)       see below                               ``cramjam.lz4`` (read only)
ZSTD (6)                  RFC 8478 frame(s)                       ``zstandard``
LZ4_RAW (7)               one LZ4 *block*, no size prefix         ``cramjam.lz4.*_block``
========================  ======================================  ================================

The deprecated ``LZ4`` codec is read the way parquet-cpp reads it: first as Hadoop framing, a
sequence of::

    frame := decompressed_size:u32 BE | compressed_size:u32 BE | lz4_block[compressed_size]

whose blocks must fill the input exactly and decompress to their declared sizes; failing that
as one raw LZ4 block (older parquet-cpp); failing that as an LZ4 frame (``04 22 4D 18`` magic).
We never write it (:class:`~streamwrite.errors.UnsupportedError`): use ``LZ4_RAW``.

Safety rules for :func:`decompress`: the declared ``uncompressed_size`` is checked against
``max_size`` before any work, output buffers are never larger than ``uncompressed_size`` (+1
byte for the streaming gzip/zstd paths), so a decompression bomb cannot allocate more than the
limit; output of any other size is a :class:`~streamwrite.errors.FormatError`, and so is any
exception a codec library raises.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable

import cramjam
import zstandard

from streamwrite.errors import ConfigError, FormatError, LimitError, UnsupportedError
from streamwrite.format.enums import CompressionCodec

__all__ = [
    "DEFAULT_BROTLI_LEVEL",
    "DEFAULT_GZIP_LEVEL",
    "DEFAULT_ZSTD_LEVEL",
    "compress",
    "decompress",
]

DEFAULT_ZSTD_LEVEL = 1
"""zstd level when none is given (pyarrow's default; ~226-377 MB/s per core here)."""
DEFAULT_GZIP_LEVEL = 6
"""gzip level when none is given (zlib's default)."""
DEFAULT_BROTLI_LEVEL = 8
"""Brotli level when none is given (Arrow's default; cramjam's own default of 11 is very slow)."""

_HADOOP_PREFIX_SIZE = 8
_BytesLike = bytes | bytearray | memoryview


_ZSTD = threading.local()
"""Per-thread zstd contexts: a context is not thread-safe (sharing one across the threads of
a table's ingest and compaction corrupted output and crashed the interpreter)."""


def _zstd_compressor(level: int) -> zstandard.ZstdCompressor:
    compressors: dict[int, zstandard.ZstdCompressor] = _ZSTD.__dict__.setdefault("c", {})
    compressor = compressors.get(level)
    if compressor is None:
        compressor = compressors[level] = zstandard.ZstdCompressor(level=level)
    return compressor


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    decompressor: zstandard.ZstdDecompressor | None = _ZSTD.__dict__.get("d")
    if decompressor is None:
        decompressor = _ZSTD.d = zstandard.ZstdDecompressor()
    return decompressor


def compress(
    codec: CompressionCodec, data: bytes | bytearray | memoryview, level: int | None = None
) -> bytes:
    """Compress one page body with ``codec``.

    Args:
        codec: The page's codec.
        data: The uncompressed page bytes (levels and values, or a dictionary).
        level: Codec level; ``None`` picks the module default (zstd 1, gzip 6, brotli 8, LZ4_RAW
            the fast mode). Ignored by UNCOMPRESSED and SNAPPY. For LZ4_RAW a level selects the
            LZ4 HC mode.

    Returns:
        The compressed bytes, without any framing.

    Raises:
        UnsupportedError: For ``LZO`` and the deprecated Hadoop-framed ``LZ4``.
        ConfigError: If ``codec`` is not a known codec or ``level`` is out of range.
    """
    try:
        if codec == CompressionCodec.UNCOMPRESSED:
            return bytes(data)
        if codec == CompressionCodec.SNAPPY:
            return bytes(cramjam.snappy.compress_raw(data))
        if codec == CompressionCodec.GZIP:
            return bytes(
                cramjam.gzip.compress(data, level=DEFAULT_GZIP_LEVEL if level is None else level)
            )
        if codec == CompressionCodec.BROTLI:
            return bytes(
                cramjam.brotli.compress(
                    data, level=DEFAULT_BROTLI_LEVEL if level is None else level
                )
            )
        if codec == CompressionCodec.ZSTD:
            cctx = _zstd_compressor(DEFAULT_ZSTD_LEVEL if level is None else level)
            return bytes(cctx.compress(data))
        if codec == CompressionCodec.LZ4_RAW:
            if level is None:
                return bytes(cramjam.lz4.compress_block(data, store_size=False))
            return bytes(
                cramjam.lz4.compress_block(
                    data, mode="high_compression", compression=level, store_size=False
                )
            )
    except (cramjam.CompressionError, zstandard.ZstdError, ValueError, OverflowError) as exc:
        raise ConfigError(
            f"Compressing with {_name(codec)} at level {level!r} failed: {exc}."
        ) from exc
    if codec in (CompressionCodec.LZ4, CompressionCodec.LZO):
        raise UnsupportedError(
            f"Writing the {_name(codec)} codec is not supported; "
            "use LZ4_RAW, which every current reader supports, instead."
        )
    raise ConfigError(f"Unknown compression codec {codec!r}.")


def decompress(
    codec: CompressionCodec,
    data: bytes | bytearray | memoryview,
    uncompressed_size: int,
    *,
    max_size: int,
) -> bytes:
    """Decompress one page body, checking its size.

    Args:
        codec: The codec named in the column chunk metadata.
        data: The compressed page bytes.
        uncompressed_size: ``uncompressed_page_size`` from the page header.
        max_size: Largest decompressed page we accept (bytes).

    Returns:
        Exactly ``uncompressed_size`` bytes.

    Raises:
        LimitError: If ``uncompressed_size`` exceeds ``max_size`` (checked before any work).
        FormatError: If the data is not valid for ``codec`` or decompresses to another size.
        UnsupportedError: For ``LZO``.
    """
    if uncompressed_size > max_size:
        raise LimitError(
            f"A {_name(codec)} page declares {uncompressed_size} uncompressed bytes, "
            f"more than the limit of {max_size} bytes."
        )
    if uncompressed_size < 0:
        raise FormatError(
            f"A {_name(codec)} page declares a negative uncompressed size ({uncompressed_size})."
        )
    if codec == CompressionCodec.UNCOMPRESSED:
        if len(data) != uncompressed_size:
            raise _size_error(codec, len(data), uncompressed_size)
        return bytes(data)
    if codec == CompressionCodec.LZO:
        raise UnsupportedError("Reading the LZO codec is not supported.")
    try:
        if codec == CompressionCodec.GZIP:
            return _gunzip(data, uncompressed_size)
        if codec == CompressionCodec.ZSTD:
            return _unzstd(data, uncompressed_size)
        if codec == CompressionCodec.LZ4:
            return _unlz4_hadoop(data, uncompressed_size)
        if codec == CompressionCodec.SNAPPY:
            declared = cramjam.snappy.decompress_raw_len(data)
            if declared != uncompressed_size:
                raise _size_error(codec, declared, uncompressed_size)
            return _into(cramjam.snappy.decompress_raw_into, codec, data, uncompressed_size)
        if codec == CompressionCodec.BROTLI:
            return _into(cramjam.brotli.decompress_into, codec, data, uncompressed_size)
        if codec == CompressionCodec.LZ4_RAW:
            return _into(cramjam.lz4.decompress_block_into, codec, data, uncompressed_size)
    except FormatError:
        raise
    except (cramjam.DecompressionError, zstandard.ZstdError, zlib.error, ValueError) as exc:
        raise FormatError(f"The {_name(codec)} page data is corrupt: {exc}.") from exc
    raise FormatError(f"Unknown compression codec {codec!r} in column metadata.")


def _name(codec: CompressionCodec | int) -> str:
    try:
        return CompressionCodec(codec).name
    except ValueError:
        return f"codec {int(codec)}"


def _size_error(codec: CompressionCodec, actual: int, expected: int) -> FormatError:
    return FormatError(
        f"A {_name(codec)} page decompresses to {actual} bytes, "
        f"but its header declares {expected} bytes."
    )


def _into(
    func: Callable[[_BytesLike, bytearray], int],
    codec: CompressionCodec,
    data: _BytesLike,
    size: int,
) -> bytes:
    """Run a cramjam ``*_into`` function with an exact-size output buffer (bounded)."""
    out = bytearray(size)
    try:
        written = int(func(data, out))
    except cramjam.DecompressionError as exc:
        raise FormatError(
            f"The {_name(codec)} page data is corrupt or decompresses to more than the "
            f"{size} bytes its header declares: {exc}."
        ) from exc
    if written != size:
        raise _size_error(codec, written, size)
    return bytes(out)


def _gunzip(data: _BytesLike, size: int) -> bytes:
    """Decompress one or more concatenated gzip members, never producing more than size+1 bytes."""
    out = bytearray()
    rest = bytes(data)
    while True:
        dobj = zlib.decompressobj(wbits=31)
        pending = rest
        while True:
            out += dobj.decompress(pending, size + 1 - len(out))
            if len(out) > size:
                raise FormatError(
                    f"A GZIP page decompresses to more than the {size} bytes its header declares."
                )
            pending = dobj.unconsumed_tail
            if dobj.eof or not pending:
                break
        if not dobj.eof:
            raise FormatError("A GZIP page ends inside a gzip member (truncated data).")
        rest = dobj.unused_data
        if not rest:
            break
    if len(out) != size:
        raise _size_error(CompressionCodec.GZIP, len(out), size)
    return bytes(out)


def _unzstd(data: _BytesLike, size: int) -> bytes:
    dctx = _zstd_decompressor()
    if zstandard.frame_content_size(data) == size:
        # Fast path: one frame whose header states the right size.
        try:
            out = dctx.decompress(data, allow_extra_data=False)
        except zstandard.ZstdError:
            pass  # several frames, or corrupt: the bounded path below decides
        else:
            if len(out) != size:
                raise _size_error(CompressionCodec.ZSTD, len(out), size)
            return bytes(out)
    parts: list[bytes] = []
    total = 0
    with dctx.stream_reader(data, read_across_frames=True) as reader:
        while total <= size:
            chunk = reader.read(size + 1 - total)
            if not chunk:
                break
            parts.append(chunk)
            total += len(chunk)
    if total != size:
        raise FormatError(
            f"A ZSTD page decompresses to {'more than ' if total > size else ''}{total} bytes, "
            f"but its header declares {size} bytes."
        )
    return b"".join(parts)


def _unlz4_hadoop(data: _BytesLike, size: int) -> bytes:
    """Deprecated LZ4: Hadoop framing, else one raw block, else an LZ4 frame (as parquet-cpp)."""
    out = _try_hadoop_frames(memoryview(data).cast("B"), size)
    if out is not None:
        return out
    try:
        return _into(cramjam.lz4.decompress_block_into, CompressionCodec.LZ4, data, size)
    except FormatError:
        pass
    try:
        return _into(cramjam.lz4.decompress_into, CompressionCodec.LZ4, data, size)
    except FormatError as exc:
        raise FormatError(
            f"The LZ4 page data is neither Hadoop-framed LZ4, a raw LZ4 block nor an LZ4 frame "
            f"of {size} bytes."
        ) from exc


def _try_hadoop_frames(view: memoryview, size: int) -> bytes | None:
    out = bytearray(size)
    pos = 0
    filled = 0
    if len(view) < _HADOOP_PREFIX_SIZE:
        return None
    while len(view) - pos >= _HADOOP_PREFIX_SIZE:
        frame_size = int.from_bytes(view[pos : pos + 4], "big")
        block_size = int.from_bytes(view[pos + 4 : pos + 8], "big")
        pos += _HADOOP_PREFIX_SIZE
        if block_size > len(view) - pos or frame_size > size - filled:
            return None
        target = memoryview(out)[filled : filled + frame_size]
        try:
            written = cramjam.lz4.decompress_block_into(view[pos : pos + block_size], target)
        except cramjam.DecompressionError:
            return None
        if written != frame_size:
            return None
        pos += block_size
        filled += frame_size
    if pos != len(view) or filled != size:
        return None
    return bytes(out)
