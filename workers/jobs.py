"""Picklable jobs and :func:`run_job`, the only entry point of the process pool.

Public as the executor contract (with ``streamwrite.format.chunk.EncodedChunk``): an
``streamwrite.Executor`` of the user's own receives a :data:`Job`, runs it with
:func:`run_job` in any process and returns the result unchanged. The names ``Job`` and
``run_job`` are the contract; the job classes' fields are the package's own.

A job is a frozen dataclass holding numpy arrays (which pickle with out-of-band buffers) and
settings; ``run_job(job)`` returns the job's result. The inline executor calls the same function
in-process, so pool and inline output are byte-identical. Two kinds:

- :class:`EncodeChunkJob`: encode one column chunk from its values (writers, tables);
- :class:`MergeChunkJob`: decode column chunks of existing files (their bytes travel in the
  job) and encode their rows, or a row range of them, as one chunk (compaction: the decoding
  runs in the worker too, and no Arrow array is built on the way).

The job of an encrypted column chunk also carries its :class:`~workers.chunk.ChunkCrypto` (the
column's ``ModuleCipher``, which pickles, and the row group and column ordinals), so pages and
bloom filters are encrypted in the worker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from streamwrite.errors import CorruptFileError
from streamwrite.format import structs as t
from streamwrite.format.chunk import EncodedChunk
from streamwrite.format.enums import Type
from workers.chunk import ChunkCrypto, ChunkSettings, encode_chunk
from workers.decode import decode_chunk
from workers.value_ops import concat_values, gather_dictionary, merge_dictionaries
from workers.values import BinaryValues

__all__ = [
    "EncodeChunkJob",
    "Job",
    "MergeChunkJob",
    "SourceChunk",
    "run_job",
    "take_records",
]


@dataclass(frozen=True, slots=True)
class EncodeChunkJob:
    """Encode one column chunk (see :func:`workers.chunk.encode_chunk`)."""

    settings: ChunkSettings
    values: Any
    def_levels: npt.NDArray[np.uint8] | None
    num_rows: int
    crypto: ChunkCrypto | None = None
    rep_levels: npt.NDArray[np.uint8] | None = None
    """One repetition level per level entry of a nested leaf (None when max_rep is 0)."""

    def run(self) -> EncodedChunk:
        """Returns: the encoded chunk."""
        return encode_chunk(
            self.settings,
            self.values,
            self.def_levels,
            self.num_rows,
            self.crypto,
            rep_levels=self.rep_levels,
        )


@dataclass(frozen=True, slots=True)
class SourceChunk:
    """An unencrypted column chunk of an existing file and the rows of it to take."""

    data: bytes | memoryview
    """The chunk's pages (a view into the pool's shared memory in a worker)."""
    start: int
    """Absolute file offset of ``data`` (error messages)."""
    meta: t.ColumnMetaData
    num_rows: int
    row_start: int
    row_stop: int
    dictionary_first: bool
    where: str


_MERGED_DICTIONARY_TYPES = (Type.BYTE_ARRAY,)
"""Types whose source dictionaries a merge unifies (hashing strings is what it saves; for
integers, hashing the values costs about what merging the dictionaries does; floats would
need NaN payloads and signed zeros handled)."""


def take_records(
    values: Any,
    def_levels: npt.NDArray[np.uint8] | None,
    rep_levels: npt.NDArray[np.uint8] | None,
    num_rows: int,
    row_start: int,
    row_stop: int,
    max_definition_level: int,
) -> tuple[Any, npt.NDArray[np.uint8] | None, npt.NDArray[np.uint8] | None]:
    """The values and levels of records ``[row_start, row_stop)`` of a decoded chunk.

    A record is a level entry with repetition level 0 and the entries after it up to the next
    one (a row of a flat column).

    Returns:
        ``(values, def_levels, rep_levels)`` of those records (levels None as given).
    """
    if row_start == 0 and row_stop == num_rows:
        return values, def_levels, rep_levels
    entry_start, entry_stop = row_start, row_stop
    if rep_levels is not None:
        starts = np.flatnonzero(rep_levels == 0)
        entry_start = int(starts[row_start]) if row_start < num_rows else rep_levels.shape[0]
        entry_stop = int(starts[row_stop]) if row_stop < num_rows else rep_levels.shape[0]
        rep_levels = rep_levels[entry_start:entry_stop]
    if def_levels is None:
        first, last = entry_start, entry_stop
    else:
        defined = def_levels == max_definition_level
        first = int(np.count_nonzero(defined[:entry_start]))
        last = first + int(np.count_nonzero(defined[entry_start:entry_stop]))
        def_levels = def_levels[entry_start:entry_stop]
    if isinstance(values, BinaryValues):
        return BinaryValues(values.offsets[first : last + 1], values.data), def_levels, rep_levels
    return values[first:last], def_levels, rep_levels


@dataclass(frozen=True, slots=True)
class MergeChunkJob:
    """Decode ``sources`` (consecutive row ranges of one column) and encode them as one chunk
    with ``settings`` (see :func:`workers.decode.decode_chunk`,
    :func:`workers.chunk.encode_chunk`)."""

    settings: ChunkSettings
    sources: tuple[SourceChunk, ...]
    verify_checksums: bool
    max_decompressed_page_size: int
    crypto: ChunkCrypto | None = None

    def run(self, between: Callable[[], None] | None = None) -> EncodedChunk:
        """Decode the sources, then encode; ``between`` (if given) is called before each
        source and before the encoding (the inline executor waits there while urgent jobs
        run; it never changes the result).

        Returns:
            The encoded chunk.

        Raises:
            CorruptFileError, LimitError, UnsupportedError: as decoding a source raises.
        """
        settings = self.settings
        max_level = settings.max_definition_level
        max_rep = settings.max_repetition_level
        keep_dictionary = (
            settings.column.use_dictionary and settings.physical_type in _MERGED_DICTIONARY_TYPES
        )
        values, levels, rep_levels, dictionaries = [], [], [], []
        for source in self.sources:
            if between is not None:
                between()
            decoded = decode_chunk(
                source.data,
                source.start,
                source.meta,
                type_length=settings.type_length,
                max_definition_level=max_level,
                verify_checksums=self.verify_checksums,
                max_decompressed_page_size=self.max_decompressed_page_size,
                where=source.where,
                dictionary_first=source.dictionary_first,
                keep_dictionary=keep_dictionary,
                max_repetition_level=max_rep,
            )
            if decoded.num_rows != source.num_rows:
                raise CorruptFileError(
                    f"{source.where} has {decoded.num_rows} rows, its row group {source.num_rows}.",
                    source.start,
                )
            # row ranges are records: a nested leaf's records keep all their level entries
            part_values, part_levels, part_rep = take_records(
                decoded.values,
                decoded.def_levels,
                decoded.rep_levels,
                decoded.num_rows,
                source.row_start,
                source.row_stop,
                max_level,
            )
            values.append(part_values)
            dictionaries.append(decoded.dictionary)
            if part_levels is not None:
                levels.append(part_levels)
            if part_rep is not None:
                rep_levels.append(part_rep)
        num_rows = sum(source.row_stop - source.row_start for source in self.sources)
        if between is not None:
            between()
        merged = None
        if dictionaries and all(d is not None for d in dictionaries):
            # every source dictionary-encoded: values are indices; no value is hashed again
            merged = merge_dictionaries(
                list(zip(dictionaries, values, strict=True)),
                settings.physical_type,
                settings.type_length,
            )
            column_values = gather_dictionary(*merged)
        else:
            column_values = concat_values(
                [
                    v if d is None else gather_dictionary(d, v)
                    for d, v in zip(dictionaries, values, strict=True)
                ],
                settings.physical_type,
                settings.type_length,
            )
        return encode_chunk(
            settings,
            column_values,
            np.concatenate(levels) if max_level else None,
            num_rows,
            self.crypto,
            merged,
            np.concatenate(rep_levels) if max_rep else None,
        )


Job = EncodeChunkJob | MergeChunkJob
"""Any job :func:`run_job` runs."""


def run_job(job: Job) -> EncodedChunk:
    """Run one job and return its result (called in a worker process or inline)."""
    return job.run()
